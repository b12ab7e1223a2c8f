// The page's state lives in the query string, so every view can be shared as a URL:
//   /?view=overview|series|alerts|diagnosis&id=<series id>&alert=<alert id>&range=15m|1h|6h|24h|7d
//     &from=&to=
// from/to (RFC 3339 or Unix seconds) fix the window; without them the window ends now and the
// page updates live.

// Every view polls every 2 s: a 7-day history with its two overlays and heatmap costs the gateway
// about 30 ms (bench store, 2-core machine), so the live edge of a long range stays current too.
export const RANGES = {
  '15m': { seconds: 900, step: '10s', heatStep: '10s', poll: 2000 },
  '1h': { seconds: 3600, step: '30s', heatStep: '30s', poll: 2000 },
  '6h': { seconds: 21600, step: '2m', heatStep: '3m', poll: 2000 },
  '24h': { seconds: 86400, step: '5m', heatStep: '10m', poll: 2000 },
  '7d': { seconds: 604800, step: '30m', heatStep: '1h', poll: 2000 },
};
export const VIEWS = ['overview', 'series', 'alerts', 'diagnosis'];
export const DEFAULT_RANGE = '1h';

export function readState(search = location.search) {
  const q = new URLSearchParams(search);
  const view = VIEWS.includes(q.get('view')) ? q.get('view') : (q.get('id') ? 'series' : 'overview');
  const range = RANGES[q.get('range')] ? q.get('range') : DEFAULT_RANGE;
  return {
    view,
    id: q.get('id') || '',
    alert: q.get('alert') || '',
    range,
    from: q.get('from') || '',
    to: q.get('to') || '',
  };
}

export function stateUrl(state) {
  const q = new URLSearchParams();
  q.set('view', state.view);
  if (state.id && state.view === 'series') q.set('id', state.id);
  if (state.alert && state.view === 'diagnosis') q.set('alert', state.alert);
  if (state.range && state.range !== DEFAULT_RANGE) q.set('range', state.range);
  if (state.from) q.set('from', state.from);
  if (state.to) q.set('to', state.to);
  return `/?${q.toString()}`;
}

function parseTime(text) {
  if (/^\d+(\.\d+)?$/.test(text)) return Number(text) * 1000;
  const t = Date.parse(text);
  return Number.isNaN(t) ? null : t;
}

// The window in milliseconds since the epoch, and the query parameters that ask the API for it.
// A live window is asked for relative to the server's clock ("now-3600s"), so a skewed browser
// clock does not matter; serverSkewMs (server minus browser) places it on the charts.
export function timeWindow(state, serverSkewMs = 0) {
  const r = RANGES[state.range];
  const fixedFrom = state.from ? parseTime(state.from) : null;
  const fixedTo = state.to ? parseTime(state.to) : null;
  if (fixedFrom !== null || fixedTo !== null) {
    const toMs = fixedTo ?? Date.now() + serverSkewMs;
    const fromMs = fixedFrom ?? toMs - r.seconds * 1000;
    const seconds = Math.max(1, Math.round((toMs - fromMs) / 1000));
    return {
      live: false, fromMs, toMs, seconds,
      from: new Date(fromMs).toISOString(), to: new Date(toMs).toISOString(),
      shifted(by) {
        return { from: new Date(fromMs - by * 1000).toISOString(), to: new Date(toMs - by * 1000).toISOString() };
      },
    };
  }
  const toMs = Date.now() + serverSkewMs;
  return {
    live: true, fromMs: toMs - r.seconds * 1000, toMs, seconds: r.seconds,
    from: `now-${r.seconds}s`, to: 'now',
    shifted(by) {
      return { from: `now-${r.seconds + by}s`, to: `now-${by}s` };
    },
  };
}

// A step for a window of `seconds` when it is not one of the presets: about 300 points.
export function stepsFor(state, seconds) {
  const r = RANGES[state.range];
  if (!state.from && !state.to) return { step: r.step, heatStep: r.heatStep };
  const nice = [10, 30, 60, 120, 300, 600, 1800, 3600, 7200, 21600];
  const pick = (n) => `${nice.find((s) => seconds / s <= n) ?? 21600}s`;
  return { step: pick(400), heatStep: pick(160) };
}
