// The browser half of bench/dashboard_paint.sh: TG_URL is a tailguard serving 50 series with a
// day of stored history. Prints FIGURE lines (medians of 5 cold loads each).
import { createRequire } from 'node:module';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const require = createRequire(new URL('../web/package.json', import.meta.url));
const { chromium } = require('playwright-core');
const url = process.env.TG_URL;
const runs = Number(process.env.RUNS || 5);

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const series = (await (await fetch(`${url}/api/v1/series`)).json()).series;
if (series.length < 50) throw new Error(`expected 50 series, the API lists ${series.length}`);
const target = series[0].id;

const userDataDir = mkdtempSync(join(tmpdir(), 'tg-bench-chromium-'));
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
const paint = [], overview = [], day = [];
try {
  for (let i = 0; i < runs; i++) {
    // A fresh context: no cache, as a first visit.
    const context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
    const page = await context.newPage();
    page.setDefaultTimeout(30000);
    await page.goto(`${url}/?view=overview`);
    await page.waitForFunction(() => document.querySelectorAll('#overview-table tbody tr[data-id]').length >= 50);
    const t = await page.evaluate(() => ({
      ready: performance.now(),
      fcp: performance.getEntriesByName('first-contentful-paint')[0]?.startTime,
    }));
    paint.push(t.fcp);
    overview.push(t.ready);
    await context.close();

    const context2 = await browser.newContext({ viewport: { width: 1440, height: 900 } });
    const page2 = await context2.newPage();
    page2.setDefaultTimeout(30000);
    await page2.goto(`${url}/?view=series&id=${target}&range=24h`);
    await page2.waitForFunction(() => Number(document.querySelector('#chart-percentiles')?.dataset.points) > 200);
    day.push(await page2.evaluate(() => performance.now()));
    await context2.close();
  }
} finally {
  await browser.close();
  rmSync(userDataDir, { recursive: true, force: true });
}
console.log(`FIGURE dashboard_first_paint_ms ${Math.round(median(paint))} ms`);
console.log(`FIGURE dashboard_overview_ready_ms ${Math.round(median(overview))} ms`);
console.log(`FIGURE dashboard_series_24h_ready_ms ${Math.round(median(day))} ms`);
