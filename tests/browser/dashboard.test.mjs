// The dashboard in a real browser: playwright-core drives Debian's chromium (headless) against
// the tailguard that dashboard_test.sh started. Run through dashboard_test.sh, which sets:
//   TG_URL        the gateway, e.g. http://127.0.0.1:40123 (the page and the API)
//   TG_TOKEN      its api_token
//   TG_ARTIFACTS  where screenshots go
//   TG_SPIKE_AT   when the latency spike was injected (RFC 3339)
//   TG_RULE       the rule the spike fires
//   TG_IMPORTED   1 when recorded history was imported (checks the 1 d / 7 d overlays)
//   TG_PAGE_URL   optional: where the page is served when not by tailguard (web/dev-server.mjs)
//   TG_HOOK_URL   the tg_test_upstream that received the notifications (its /test/requests)
//   TG_TAILGUARD  the tailguard binary, TG_STORE its store file (for `tailguard report`)
//   CHROMIUM      default /usr/bin/chromium
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { mkdtempSync, mkdirSync, rmSync, readFileSync } from 'node:fs';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { pathToFileURL } from 'node:url';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const require = createRequire(new URL('../../web/package.json', import.meta.url));
const { chromium } = require('playwright-core');

const api = process.env.TG_URL;
const pageUrl = process.env.TG_PAGE_URL || api;
const token = process.env.TG_TOKEN;
const artifacts = process.env.TG_ARTIFACTS || join(tmpdir(), 'tailguard-browser-artifacts');
const spikeAt = Date.parse(process.env.TG_SPIKE_AT || '1970-01-01T00:00:00Z');
const rule = process.env.TG_RULE || 'fraud_slow';
const imported = process.env.TG_IMPORTED === '1';
const hookUrl = process.env.TG_HOOK_URL;
const tailguardBin = process.env.TG_TAILGUARD;
const storeFile = process.env.TG_STORE;
assert.ok(api, 'TG_URL is required (run tests/browser/dashboard_test.sh)');
mkdirSync(artifacts, { recursive: true });

let context;
let userDataDir;
const consoleErrors = [];

async function apiGet(path) {
  const res = await fetch(`${api}${path}`);
  assert.equal(res.status, 200, `GET ${path}: ${res.status} ${await res.clone().text()}`);
  return res.json();
}

// Polls fn (async, returns a truthy value when done) every 200 ms for up to ms.
async function eventually(what, fn, ms = 20000) {
  const end = Date.now() + ms;
  let last;
  while (Date.now() < end) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (e) {
      last = e;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`timed out waiting for ${what}${last ? `: ${last.message}` : ''}`);
}

async function newPage() {
  const page = await context.newPage();
  page.on('console', (m) => {
    if (m.type() === 'error') consoleErrors.push(`${page.url()}: ${m.text()}`);
  });
  page.on('pageerror', (e) => consoleErrors.push(`${page.url()}: uncaught ${e.message}`));
  page.setDefaultTimeout(20000);
  return page;
}

// Runs fn(page) on a new page; on failure keeps a screenshot NAME-failed.png of where it stood.
async function withPage(name, fn) {
  const page = await newPage();
  try {
    await fn(page);
  } catch (e) {
    await page.screenshot({ path: join(artifacts, `${name}-failed.png`), fullPage: true }).catch(() => {});
    throw e;
  } finally {
    await page.close();
  }
}

async function shot(page, name) {
  await page.screenshot({ path: join(artifacts, `${name}.png`), fullPage: true });
}

async function firingEpisode() {
  const a = await apiGet('/api/v1/alerts');
  assert.ok(Array.isArray(a.episodes), 'GET /api/v1/alerts has no episodes: is the store configured?');
  return a.episodes.find((e) => e.rule === rule && e.state === 'alert');
}

before(async () => {
  userDataDir = mkdtempSync(join(tmpdir(), 'tg-chromium-'));
  context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    viewport: { width: 1440, height: 900 },
    timezoneId: 'UTC',
  });
});

after(async () => {
  await context?.close();
  if (userDataDir) rmSync(userDataDir, { recursive: true, force: true });
});

test('the assets are served by tailguard', async () => {
  for (const [path, type] of [['/', 'text/html'], ['/assets/app.js', 'javascript'], ['/assets/app.css', 'text/css'], ['/assets/favicon.svg', 'image/svg']]) {
    const res = await fetch(`${pageUrl}${path}`);
    assert.equal(res.status, 200, `GET ${path}`);
    assert.match(res.headers.get('content-type') || '', new RegExp(type), `GET ${path} content type`);
  }
});

test('overview lists every series, worst first', async () => {
  await withPage('overview', async (page) => {
    await page.goto(`${pageUrl}/?view=overview&range=15m`);
    await page.waitForSelector('#overview-table tbody tr[data-id]');
    // How fast is a benchmark's question (bench/dashboard_paint.sh, 50 series with a day of
    // history); here only that the page painted at all.
    const fcp = await page.evaluate(() =>
      performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? null);
    assert.ok(fcp !== null, 'the page never painted');
    // Every series the API lists has its row (the page polls: wait until it has caught up).
    const { series } = await apiGet('/api/v1/series?sort=worst');
    assert.ok(series.length >= 2, 'the gateway has series');
    await eventually('a row for every series', async () => {
      const ids = await page.$$eval('#overview-table tbody tr[data-id]', (rows) => rows.map((r) => r.dataset.id));
      return series.every((s) => ids.includes(s.id));
    });
    // Worst first: the alerting fraud total is at the top, with the alert colour.
    const first = await page.$eval('#overview-table tbody tr[data-id]', (r) => ({ cls: r.className, text: r.textContent }));
    assert.match(first.cls, /row-alert/, `first row ${first.text}`);
    assert.match(first.text, /risk-control/);
    assert.match(first.text, /ms/, 'latencies shown with units');
    if (imported) {
      const stored = await page.$('#overview-table tbody tr.row-stored');
      assert.ok(stored, 'the imported series that is not live is listed (greyed)');
    }
    await shot(page, 'overview');
  });
});

let fraudId;

test('series view: heatmap cells, percentile lines, forecast, timeline with the spike, samples', async () => {
  const { series } = await apiGet('/api/v1/series');
  const fraud = series.find((s) => s.labels.route === 'fraud' && s.labels.stage === 'total');
  assert.ok(fraud, 'the fraud total series');
  fraudId = fraud.id;
  await withPage('series', async (page) => {
    await page.goto(`${pageUrl}/?view=series&id=${fraudId}&range=15m`);
    await page.waitForFunction(() => Number(document.querySelector('#chart-heatmap')?.dataset.cells) > 0);
    const heat = await page.$eval('#chart-heatmap', (el) => ({ ...el.dataset }));
    assert.ok(Number(heat.rows) > 1, `heatmap rows ${heat.rows}`);
    // The page drew what the API has.
    const apiHeat = await apiGet(`/api/v1/series/${fraudId}/heatmap?from=now-900s&to=now&step=10s`);
    assert.ok(apiHeat.cells.length > 0, 'the API heatmap has cells');
    // A canvas was painted for each chart.
    for (const id of ['chart-heatmap', 'chart-percentiles', 'chart-forecast', 'chart-score']) {
      assert.ok(await page.$(`#${id} canvas`), `#${id} has a canvas`);
    }
    await page.waitForFunction(() => Number(document.querySelector('#chart-percentiles')?.dataset.points) > 0);
    // The spike: an alert transition or an anomaly of this series at or after the injection.
    await page.waitForFunction((t) => [...document.querySelectorAll('#timeline li.event')]
      .some((li) => Date.parse(li.dataset.time) >= t - 1000), spikeAt);
    const kinds = await page.$$eval('#timeline li.event', (lis) => lis.map((li) => `${li.dataset.type}:${li.dataset.kind}`));
    assert.ok(kinds.some((k) => /^alert:(pre_alert|fire)$/.test(k) || k.startsWith('anomaly')), `timeline ${kinds}`);
    // Markers of the same events on the anomaly chart.
    assert.ok(Number(await page.$eval('#chart-score', (el) => el.dataset.events)) > 0, 'event markers on the chart');
    // Slow samples of this route with their stage bars.
    await page.waitForSelector('#samples .stage-bar span');
    // Units and local times with UTC on hover.
    const title = await page.$eval('#timeline time', (t) => t.getAttribute('title'));
    assert.match(title, /UTC$/);
    if (imported) {
      await page.waitForFunction(() => Number(window.__tailguard?.data?.overlays) > 0);
    }
    await shot(page, 'series');
  });
});

test('a notification\'s dashboard link opens the series it names', async () => {
  assert.ok(hookUrl, 'TG_HOOK_URL is required (run tests/browser/dashboard_test.sh)');
  // The webhook payload the gateway sent when the rule fired (Alertmanager's shape).
  const alert = await eventually('a firing notification at the webhook', async () => {
    const res = await fetch(`${hookUrl}/test/requests`);
    const got = await res.json();
    for (const r of got) {
      if (r.method !== 'POST' || !r.body) continue;
      const a = JSON.parse(r.body).alerts?.find((x) => x.labels?.alertname === rule && x.status === 'firing');
      if (a) return a;
    }
    return null;
  }, 60000);
  const link = alert.generatorURL;
  assert.match(link, /^http:\/\/[^/]+\/\?view=series&id=[0-9a-f]{16}$/, `generatorURL ${link}`);
  const { series } = await apiGet('/api/v1/series');
  const named = series.find((s) => s.labels.route === alert.labels.route && s.labels.stage === alert.labels.stage
    && s.labels.model === alert.labels.model);
  assert.ok(named, `the alert's series ${JSON.stringify(alert.labels)} is listed`);
  await withPage('notification-link', async (page) => {
    // The link as sent, against the page's own origin (the same when tailguard serves the page).
    await page.goto(`${pageUrl}${new URL(link).pathname}${new URL(link).search}`);
    await page.waitForSelector('.view-series');
    const url = new URL(page.url());
    assert.equal(url.searchParams.get('view'), 'series', `the page opened ${page.url()}`);
    assert.equal(url.searchParams.get('id'), named.id);
    await page.waitForFunction((route) => document.querySelector('.view-series h1')?.textContent.includes(route), named.labels.route);
  });
});

test('series view keeps its state in the URL and the range picker changes it', async () => {
  await withPage('series-range', async (page) => {
    await page.goto(`${pageUrl}/?view=series&id=${fraudId}&range=15m`);
    await page.waitForFunction(() => Number(document.querySelector('#chart-heatmap')?.dataset.cells) > 0);
    await page.click('.ranges button[data-range="1h"]');
    await page.waitForFunction(() => new URL(location.href).searchParams.get('range') === null
      || new URL(location.href).searchParams.get('range') === '1h');
    assert.equal(await page.getAttribute('.ranges button[data-range="1h"]', 'aria-pressed'), 'true');
    await page.waitForFunction(() => Number(document.querySelector('#chart-heatmap')?.dataset.columns) > 60);
    if (imported) {
      await page.click('.ranges button[data-range="24h"]');
      await page.waitForFunction(() => new URL(location.href).searchParams.get('range') === '24h');
      await page.waitForFunction(() => Number(document.querySelector('#chart-percentiles')?.dataset.points) > 100);
      await shot(page, 'series-24h');
    }
  });
});

test('alerts view: the firing alert, acknowledge refused without the token, then with it', async () => {
  const episode = await eventually('the fraud_slow episode in the store', firingEpisode);
  await withPage('alerts-ack', async (page) => {
    await page.goto(`${pageUrl}/?view=alerts`);
    const row = `#episodes tr[data-episode="${episode.id}"]`;
    await page.waitForSelector(row);
    await page.waitForSelector(`#active-alerts tr.row-alert`);
    await shot(page, 'alerts');

    // No token in this fresh browser: the POST answers 401, the page asks for the token; cancel.
    await page.click(`${row} button.ack`);
    await page.waitForSelector('#ack-dialog');
    await page.fill('#ack-dialog input[name="by"]', 'oncall-bot');
    await page.fill('#ack-dialog textarea[name="comment"]', 'browser test');
    await page.click('#ack-dialog button[type="submit"]');
    await page.waitForSelector('#token-dialog');
    await shot(page, 'token-prompt');
    await page.click('#token-dialog button[value="cancel"]');
    await page.waitForSelector('#action-status[data-kind="error"]:not([hidden])');
    const refused = await page.textContent('#action-status');
    assert.match(refused, /refused|401|token/i, refused);
    await shot(page, 'ack-refused');
    assert.equal((await firingEpisode())?.acked_by ?? null, null, 'not acknowledged after the refusal');

    // A wrong token is refused too.
    await page.click(`${row} button.ack`);
    await page.waitForSelector('#ack-dialog');
    await page.click('#ack-dialog button[type="submit"]');
    await page.waitForSelector('#token-dialog');
    await page.fill('#token-dialog input[name="token"]', 'not-the-token');
    await page.click('#token-dialog button[type="submit"]');
    await page.waitForFunction(() => /401|token/i.test(document.querySelector('#action-status[data-kind="error"]')?.textContent || '')
      && !document.querySelector('#token-dialog'));
    assert.equal(await page.evaluate(() => localStorage.getItem('tailguard.apiToken')), null, 'a refused token is not kept');

    // With the token: acknowledged, and the token is kept for the next action.
    await page.click(`${row} button.ack`);
    await page.waitForSelector('#ack-dialog');
    assert.equal(await page.inputValue('#ack-dialog input[name="by"]'), 'oncall-bot', 'the name is remembered');
    await page.fill('#ack-dialog textarea[name="comment"]', 'looking into it');
    await page.click('#ack-dialog button[type="submit"]');
    await page.waitForSelector('#token-dialog');
    await page.fill('#token-dialog input[name="token"]', token);
    await page.click('#token-dialog button[type="submit"]');
    await page.waitForSelector('#action-status[data-kind="ok"]');
    const acked = await eventually('the episode acknowledged in the API', async () => {
      const { episodes } = await apiGet('/api/v1/alerts');
      return episodes.find((e) => e.id === episode.id && e.acked_by);
    });
    assert.equal(acked.acked_by, 'oncall-bot');
    assert.equal(acked.ack_comment, 'looking into it');
    assert.equal(await page.evaluate(() => localStorage.getItem('tailguard.apiToken')), token);
    await page.waitForSelector(`${row}.acked`);
    await shot(page, 'acked');
  });
});

test('alerts view: silence with matchers from the alert, then expire it', async () => {
  // The same browser profile: the token is stored.
  await withPage('alerts-silence', async (page) => {
    await page.goto(`${pageUrl}/?view=alerts`);
    const { episodes } = await apiGet('/api/v1/alerts');
    const episode = episodes.find((e) => e.rule === rule);
    const row = `#episodes tr[data-episode="${episode.id}"]`;
    await page.waitForSelector(row);
    await page.click(`${row} button.silence`);
    await page.waitForSelector('#silence-dialog');
    const matchers = await page.inputValue('#silence-dialog input[name="matchers"]');
    assert.match(matchers, /model="risk-control"/);
    assert.match(matchers, /route="fraud"/);
    await page.selectOption('#silence-dialog select[name="duration"]', '2h');
    await page.fill('#silence-dialog textarea[name="comment"]', 'browser test silence');
    await shot(page, 'silence-form');
    await page.click('#silence-dialog button[type="submit"]');
    await page.waitForSelector('#action-status[data-kind="ok"]');
    const silence = await eventually('the silence in the API', async () => {
      const { silences } = await apiGet('/api/v1/silences');
      return silences.find((s) => s.comment === 'browser test silence' && s.active);
    });
    assert.equal(silence.matchers, matchers);
    assert.equal(silence.created_by, 'oncall-bot');
    const hours = (Date.parse(silence.ends_at) - Date.parse(silence.starts_at)) / 3600e3;
    assert.ok(Math.abs(hours - 2) < 0.01, `a 2 h silence, got ${hours} h`);
    const srow = `#silences tr[data-silence="${silence.id}"]`;
    await page.waitForSelector(srow);
    await shot(page, 'silenced');
    await page.click(`${srow} button`);
    await eventually('the silence expired in the API', async () => {
      const { silences } = await apiGet('/api/v1/silences?expired=true');
      return silences.find((s) => s.id === silence.id && !s.active);
    });
    await page.waitForSelector(srow, { state: 'detached' });
  });
});

test('diagnosis view: from the alert, the feature stage (a dependency) ranked first with its sparkline', async () => {
  const episode = await eventually('the fraud_slow episode in the store', firingEpisode);
  const api = await eventually('the episode\'s diagnosis', async () => (await apiGet(`/api/v1/alerts/${episode.id}/diagnosis`)).diagnosis);
  await withPage('diagnosis', async (page) => {
    await page.goto(`${pageUrl}/?view=alerts`);
    const link = `#episodes tr[data-episode="${episode.id}"] a.diagnosis`;
    await page.waitForSelector(link);
    await page.click(link);
    await page.waitForSelector('#diag-text');
    assert.match(page.url(), new RegExp(`view=diagnosis.*alert=${episode.id}|alert=${episode.id}.*view=diagnosis`));
    const text = (await page.textContent('#diag-text')).trim();
    assert.equal(text, api.summary, 'the page shows the stored finding');
    assert.equal(await page.getAttribute('#diag-summary .quadrant', 'data-quadrant'), api.quadrant);
    // The injected spike made the feature stage 70 ms: it is the cause, in the dependency quadrant.
    await page.waitForSelector('#diag-causes tr[data-rank="1"]');
    const top = await page.$eval('#diag-causes tr[data-rank="1"]', (tr) => ({ ...tr.dataset }));
    assert.equal(top.quadrant, 'dependency', `top cause ${top.series}`);
    assert.match(top.series, /stage="feature_fetch"/, `top cause ${top.series}`);
    assert.equal(api.quadrant, 'dependency', `diagnosis ${api.summary}`);
    // Its sparkline is drawn (a canvas) from the stored points, against the baseline band.
    await page.waitForSelector('#diag-causes tr[data-rank="1"] .spark canvas');
    const points = Number(await page.getAttribute('#diag-causes tr[data-rank="1"] .spark', 'data-points'));
    // (5 s buckets, the worst of each: this test's ~20 s of history before the alert makes 3-6.)
    assert.ok(points >= 3, `sparkline points ${points}`);
    assert.equal(points, api.causes[0].points.length, 'one sparkline point per stored point');
    // Values read in their signal's unit: latencies in ms or s, the rest (rates, millicores) bare.
    const peaks = await page.$$eval('#diag-causes tr[data-rank]', (rows) => rows.map((tr) => [tr.dataset.series, tr.querySelector('td.strong').textContent]));
    for (const [series, peak] of peaks) {
      const latency = /^[a-z_]+_seconds\{/.test(series);
      assert.equal(/\d\s*m?s$/.test(peak), latency, `${series} peak reads ${peak}`);
    }
    // The symptoms panel and the changes panel render (empty states say so), and nothing in the
    // page is an error.
    await page.waitForSelector('#diag-symptoms :is(ul, .empty)');
    await page.waitForSelector('#diag-changes :is(ul, .empty)');
    assert.equal(await page.$$eval('.view-diagnosis .error-box', (e) => e.length), 0, 'no error state');
    await shot(page, 'diagnosis');
  });
});

test('incident report: `tailguard report` writes a self-contained page that renders its charts, and Markdown', async (t) => {
  if (!tailguardBin || !storeFile) return t.skip('TG_TAILGUARD and TG_STORE not set');
  const episode = await eventually('the fraud_slow episode in the store', firingEpisode);
  await eventually('the episode\'s diagnosis', async () => (await apiGet(`/api/v1/alerts/${episode.id}/diagnosis`)).diagnosis);
  const out = mkdtempSync(join(tmpdir(), 'tg-report-'));
  try {
    const { stdout } = await promisify(execFile)(tailguardBin, ['report', String(episode.id), '--db', storeFile, '--out', out]);
    assert.match(stdout, new RegExp(`wrote .*alert-${episode.id}\\.html`), stdout);
    await withPage('report', async (page) => {
      const requests = [];
      page.on('request', (r) => requests.push(r.url()));
      await page.goto(pathToFileURL(join(out, `alert-${episode.id}.html`)).href);
      assert.match(await page.title(), new RegExp(`Alert #${episode.id} · ${rule} on `));
      assert.deepEqual(requests.filter((u) => !u.startsWith('file:')), [], 'the report fetches nothing');
      // The finding and the top cause: the feature stage, a dependency.
      assert.equal(await page.getAttribute('#finding .badge', 'data-quadrant'), 'dependency');
      const top = await page.$eval('#causes tr[data-rank="1"]', (tr) => ({ quadrant: tr.dataset.quadrant, text: tr.textContent }));
      assert.equal(top.quadrant, 'dependency');
      assert.match(top.text, /stage="feature_fetch"/);
      // The alerted series' chart (imported and live minutes) and one sparkline per cause, laid out.
      const chart = await page.$eval('#series-chart svg', (svg) => ({ w: svg.getBoundingClientRect().width, lines: svg.querySelectorAll('path.line').length }));
      assert.ok(chart.w > 300 && chart.lines >= 2, `series chart ${JSON.stringify(chart)}`);
      const causes = await page.$$eval('#causes tr[data-rank]', (rows) => rows.length);
      const sparks = await page.$$eval('#causes tr[data-rank] svg path.line', (p) => p.length);
      assert.equal(sparks, causes, 'a sparkline per cause');
      // The timeline has the alert's transitions and the diagnosis; the notification is an action.
      const kinds = await page.$$eval('#timeline tr[data-kind]', (rows) => rows.map((r) => r.dataset.kind));
      for (const k of ['pre_alert', 'fire', 'diagnosis']) assert.ok(kinds.includes(k), `timeline ${kinds}`);
      await shot(page, 'report');
    });
    const md = readFileSync(join(out, `alert-${episode.id}.md`), 'utf8');
    assert.match(md, /^# Incident report: alert #\d+/);
    assert.match(md, /\n\| 1 \| Dependency \| `tailguard_request_duration_seconds\{[^`]*stage="feature_fetch"/);
    assert.match(md, /## Timeline\n\n\| Time \(UTC\)/);
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
});

test('API errors are shown in the page', async () => {
  await withPage('api-error', async (page) => {
    await page.goto(`${pageUrl}/?view=series&id=0000000000000000`);
    // An unknown id: the page offers the known series instead of failing silently.
    await page.waitForSelector('.pick-list li');
    // The server goes away: the banner says so and the live indicator turns to error.
    await page.route('**/api/v1/**', (route) => route.fulfill({
      status: 500, contentType: 'application/json',
      body: JSON.stringify({ error: { code: 'store', message: 'injected failure' } }),
    }));
    await page.waitForSelector('#banner:not([hidden])', { timeout: 10000 });
    assert.match(await page.textContent('#banner'), /injected failure/);
    assert.equal(await page.getAttribute('#live', 'data-state'), 'error');
    await shot(page, 'api-error');
  });
});

test('no errors in the browser console', () => {
  // The refused acknowledgements (401) and the injected 500s log failed requests; anything else
  // (a 404 of an endpoint, an exception) is a bug.
  const real = consoleErrors.filter((e) => !/status of (401|500)|injected failure/.test(e));
  assert.deepEqual(real, []);
});
