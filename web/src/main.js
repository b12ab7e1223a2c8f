// tailguard dashboard: the app shell (header, range picker, live indicator, dialogs) and the
// poller that refreshes the current view. Views live in views/*.js.
import './style.css';
import { h, setChildren } from './dom.js';
import { get, setTokenPrompt, storedToken, storeToken, ApiError } from './api.js';
import { readState, stateUrl, RANGES, timeWindow } from './state.js';
import { localTime, utc } from './format.js';
import { disposeCharts } from './charts.js';
import { overviewView } from './views/overview.js';
import { seriesView } from './views/series.js';
import { alertsView } from './views/alerts.js';
import { diagnosisView } from './views/diagnosis.js';
import { askToken } from './dialogs.js';

const views = { overview: overviewView, series: seriesView, alerts: alertsView, diagnosis: diagnosisView };

const app = {
  state: readState(),
  info: null,
  skewMs: 0,          // server clock minus browser clock
  current: null,      // {name, view}
  timer: null,
  generation: 0,
  lastOk: null,
  lastError: null,
  activeAlerts: 0,
};
// For tests and debugging: the app's state and the views' data.
window.__tailguard = { app, data: {} };

const $ = (id) => document.getElementById(id);

function navigate(patch, { replace = false } = {}) {
  const next = { ...app.state, ...patch };
  const url = stateUrl(next);
  if (replace) history.replaceState(null, '', url);
  else history.pushState(null, '', url);
  app.state = readState(new URL(url, location.href).search);
  render();
}

// Links inside the app navigate without reloading (ctrl/middle click still opens a tab).
document.addEventListener('click', (e) => {
  const a = e.target.closest('a[data-nav]');
  if (!a || e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
  e.preventDefault();
  app.state = readState(new URL(a.href, location.href).search);
  history.pushState(null, '', stateUrl(app.state));
  render();
});
window.addEventListener('popstate', () => {
  app.state = readState();
  render();
});

function renderHeader() {
  const s = app.state;
  for (const a of document.querySelectorAll('nav.views a')) {
    const view = a.dataset.view;
    a.href = stateUrl({ ...s, view });
    a.setAttribute('data-nav', '');
    if (view === s.view) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  for (const b of document.querySelectorAll('.ranges button')) {
    const on = b.dataset.range === s.range && !s.from && !s.to;
    b.setAttribute('aria-pressed', on ? 'true' : 'false');
  }
  const fixed = s.from || s.to;
  const pause = $('pause');
  pause.textContent = fixed ? 'Resume live' : 'Pause';
  pause.setAttribute('aria-pressed', fixed ? 'true' : 'false');
  pause.title = fixed
    ? 'Return to the live window ending now'
    : 'Freeze the window: the URL then names exactly this time range';
  const fixedLabel = $('fixed-range');
  if (fixed) {
    const w = timeWindow(s, app.skewMs);
    setChildren(fixedLabel, h('span', { title: `${utc(w.fromMs)} – ${utc(w.toMs)}` },
      `${localTime(w.fromMs)} – ${localTime(w.toMs)}`));
    fixedLabel.hidden = false;
  } else {
    fixedLabel.hidden = true;
  }
  const badge = $('alert-count');
  badge.textContent = app.activeAlerts ? String(app.activeAlerts) : '';
  badge.hidden = !app.activeAlerts;
  badge.setAttribute('aria-label', `${app.activeAlerts} active alerts`);
}

function setLive(kind, text, title) {
  const el = $('live');
  el.dataset.state = kind;
  setChildren(el, h('span', { class: 'dot', 'aria-hidden': 'true' }), text);
  el.title = title || '';
}

function updateLive() {
  const fixed = app.state.from || app.state.to;
  if (app.lastError) {
    setLive('error', 'Error', app.lastError);
  } else if (fixed) {
    setLive('paused', 'Paused', 'A fixed time range: not updating');
  } else if (document.hidden) {
    setLive('paused', 'Paused', 'The tab is hidden');
  } else if (app.lastOk) {
    const every = pollInterval() / 1000;
    setLive('live', `Live · ${every} s`, `Updated ${localTime(app.lastOk)} (${utc(app.lastOk)}), every ${every} s`);
  } else {
    setLive('loading', 'Loading…');
  }
}

function pollInterval() {
  if (app.current?.name === 'series') return RANGES[app.state.range].poll;
  return 2000;
}

// Shows or clears the page-wide error banner.
function showBanner(message) {
  const el = $('banner');
  if (message) {
    setChildren(el, h('strong', null, 'Cannot update: '), message);
    el.hidden = false;
  } else {
    el.hidden = true;
    el.replaceChildren();
  }
}

async function refresh() {
  const gen = app.generation;
  const cur = app.current;
  if (!cur) return;
  try {
    await cur.view.refresh();
    if (gen !== app.generation) return;
    app.lastOk = Date.now();
    app.lastError = null;
    showBanner(null);
  } catch (e) {
    if (gen !== app.generation) return;
    app.lastError = e instanceof ApiError ? e.describe() : String(e?.message || e);
    showBanner(app.lastError);
    console.error(e);
  }
  updateLive();
  schedule();
}

function schedule() {
  clearTimeout(app.timer);
  const fixed = app.state.from || app.state.to;
  if (fixed || document.hidden) return;
  app.timer = setTimeout(refresh, pollInterval());
}

document.addEventListener('visibilitychange', () => {
  updateLive();
  if (!document.hidden) {
    clearTimeout(app.timer);
    refresh();
  }
});

function render() {
  app.generation++;
  clearTimeout(app.timer);
  const main = $('main');
  const s = app.state;
  const same = app.current && app.current.name === s.view;
  if (same && app.current.view.update) {
    app.current.view.update(s);
  } else {
    app.current?.view.destroy?.();
    disposeCharts(main);
    const view = views[s.view]({ app, navigate, state: s });
    app.current = { name: s.view, view };
    setChildren(main, view.el);
  }
  document.title = `${app.current.view.title?.() || s.view} · tailguard`;
  renderHeader();
  updateLive();
  refresh();
}

// Alert count in the header, and server info (clock skew, token), refreshed in the background.
async function refreshInfo() {
  try {
    const info = await get('/api/v1/info');
    app.info = info;
    if (info.now) app.skewMs = Date.parse(info.now) - Date.now();
    $('version').textContent = info.version ? `v${info.version}` : '';
  } catch {
    // An older tailguard without /api/v1/info: no skew correction.
  }
}
async function refreshAlertCount() {
  try {
    const a = await get('/api/v1/alerts', { limit: 1 });
    app.activeAlerts = (a.alerts || []).filter((x) => x.state === 'alert' || x.state === 'no_data').length;
    updateTokenButton();
  } catch {
    // The banner shows errors of the view itself.
  }
  renderHeader();
  setTimeout(refreshAlertCount, 5000);
}

function setupHeader() {
  for (const b of document.querySelectorAll('.ranges button')) {
    b.addEventListener('click', () => navigate({ range: b.dataset.range, from: '', to: '' }));
  }
  $('pause').addEventListener('click', () => {
    const s = app.state;
    if (s.from || s.to) {
      navigate({ from: '', to: '' });
    } else {
      const w = timeWindow(s, app.skewMs);
      navigate({ from: new Date(w.fromMs).toISOString(), to: new Date(w.toMs).toISOString() });
    }
  });
  $('token-button').addEventListener('click', async () => {
    const t = await askToken(storedToken()
      ? 'Replace the stored API token (leave empty and save to forget it):'
      : 'The API token lets this browser acknowledge and silence alerts:', { allowEmpty: true });
    if (t !== null) storeToken(t);
    updateTokenButton();
  });
  updateTokenButton();
}

export function updateTokenButton() {
  const b = $('token-button');
  const has = !!storedToken();
  b.textContent = has ? 'Token ✓' : 'Token';
  b.title = has ? 'An API token is stored in this browser' : 'No API token stored: acknowledging and silencing will ask for it';
}

// A link that carries the API token in its fragment (tailguard demo prints one:
// http://127.0.0.1:8080/#token=...) stores it in this browser and leaves the address bar
// without it. The fragment never reaches the server or its logs.
function takeTokenFromLink() {
  const m = /(?:^#|&)token=([^&]*)/.exec(location.hash);
  if (!m) return;
  storeToken(decodeURIComponent(m[1]));
  history.replaceState(null, '', location.pathname + location.search);
}
takeTokenFromLink();

setTokenPrompt(async (message) => {
  const t = await askToken(message);
  updateTokenButton();
  return t;
});

setupHeader();
render();
refreshInfo();
refreshAlertCount();
setInterval(refreshInfo, 60000);
