// Overview: every series with its current P50/P99, QPS, error rate and alert state, worst first.
import { h, setChildren } from '../dom.js';
import { get } from '../api.js';
import { ms, rate, percent, score } from '../format.js';
import { stateBadge, seriesLabel, seriesLink, emptyState, changed } from './common.js';

const RANK = { alert: 3, pre_alert: 2, normal: 1 };
const SEVERITY = { emergency: 3, critical: 2, warning: 1 };

// Worst first: alert state, then severity, then anomaly score, then P99; series that are only in
// the store (not live) last.
export function worstFirst(a, b) {
  const live = (x) => (x.live === false ? 0 : 1);
  return live(b) - live(a)
    || (RANK[b.alert_state] || 0) - (RANK[a.alert_state] || 0)
    || (SEVERITY[b.severity] || 0) - (SEVERITY[a.severity] || 0)
    || (b.anomaly_score || 0) - (a.anomaly_score || 0)
    || (b.p99 || 0) - (a.p99 || 0)
    || String(a.key).localeCompare(String(b.key));
}

export function overviewView({ app }) {
  const local = { filter: '', stage: 'all' };
  const cache = {};
  const summary = h('p', { class: 'summary', role: 'status' });
  const filter = h('input', {
    id: 'ov-filter', type: 'search', placeholder: 'model, route, stage…', autocomplete: 'off',
    oninput: () => { local.filter = filter.value.trim().toLowerCase(); draw(); },
  });
  const stage = h('select', { id: 'ov-stage', onchange: () => { local.stage = stage.value; draw(); } },
    h('option', { value: 'all' }, 'all stages'));
  const tbody = h('tbody');
  const table = h('table', { class: 'grid overview', id: 'overview-table' },
    h('caption', { class: 'sr-only' }, 'Series, worst first'),
    h('thead', null, h('tr', null,
      h('th', { scope: 'col' }, 'State'),
      h('th', { scope: 'col' }, 'Series'),
      h('th', { scope: 'col', class: 'num' }, 'P50'),
      h('th', { scope: 'col', class: 'num' }, 'P99'),
      h('th', { scope: 'col', class: 'num', title: 'The P99 this series is expected to have now (forecast)' }, 'Baseline P99'),
      h('th', { scope: 'col', class: 'num', title: 'Requests per second over the last 10 s' }, 'QPS'),
      h('th', { scope: 'col', class: 'num' }, 'Errors'),
      h('th', { scope: 'col', class: 'num', title: 'Anomaly score, 0 (normal) to 1' }, 'Anomaly'))),
    tbody);
  const body = h('div', { class: 'table-wrap' }, table);
  const el = h('div', { class: 'view view-overview' },
    h('div', { class: 'toolbar' },
      h('h1', null, 'Overview'),
      summary,
      h('div', { class: 'filters' },
        h('label', { for: 'ov-filter' }, 'Filter'), filter,
        h('label', { for: 'ov-stage' }, 'Stage'), stage)),
    body);

  let series = null;

  function draw() {
    if (!series) return;
    const stages = [...new Set(series.map((s) => s.labels?.stage).filter(Boolean))].sort();
    if (changed(cache, 'stages', stages)) {
      setChildren(stage, h('option', { value: 'all' }, 'all stages'),
        stages.map((s) => h('option', { value: s, selected: s === local.stage }, s)));
    }
    const rows = series.filter((s) =>
      (local.stage === 'all' || s.labels?.stage === local.stage)
      && (!local.filter || String(s.key).toLowerCase().includes(local.filter)));
    const alerting = series.filter((s) => s.alert_state === 'alert').length;
    const pre = series.filter((s) => s.alert_state === 'pre_alert').length;
    setChildren(summary,
      `${series.length} series`,
      alerting ? h('span', { class: 'count-alert' }, ` · ${alerting} alerting`) : null,
      pre ? h('span', { class: 'count-pre' }, ` · ${pre} pre-alert`) : null,
      rows.length !== series.length ? ` · ${rows.length} shown` : null);
    if (!series.length) {
      setChildren(tbody, h('tr', null, h('td', { colspan: 8 },
        emptyState('No series yet: tailguard has not measured a request.',
          'Send traffic through the gateway (or import recorded history with `tailguard import`); series appear within a second.'))));
      return;
    }
    if (!rows.length) {
      setChildren(tbody, h('tr', null, h('td', { colspan: 8 }, emptyState('No series match the filter.'))));
      return;
    }
    setChildren(tbody, rows.map((s) => {
      const st = s.live === false ? 'stored' : (s.alert_state || 'normal');
      return h('tr', { class: `row-${st}`, dataset: { id: s.id } },
        h('td', null, stateBadge(st, s.severity)),
        h('td', null, seriesLink(app.state, s.id, seriesLabel(s.labels, s.key))),
        h('td', { class: 'num' }, ms(s.p50)),
        h('td', { class: 'num strong' }, ms(s.p99)),
        h('td', { class: 'num muted' }, ms(s.baseline_p99)),
        h('td', { class: 'num' }, rate(s.rate)),
        h('td', { class: `num${s.error_ratio > 0.01 ? ' bad' : ''}` }, percent(s.error_ratio)),
        h('td', { class: 'num' }, scoreBar(s.anomaly_score)));
    }));
  }

  return {
    el,
    title: () => 'Overview',
    async refresh() {
      const data = await get('/api/v1/series', { sort: 'worst' });
      const list = (data.series || []).slice().sort(worstFirst);
      window.__tailguard.data.series = list;
      if (!changed(cache, 'series', list)) return;
      series = list;
      draw();
    },
  };
}

function scoreBar(s) {
  const v = Number.isFinite(s) ? Math.max(0, Math.min(1, s)) : 0;
  const cls = v >= 0.5 ? 'hi' : v >= 0.2 ? 'mid' : 'lo';
  return h('span', { class: 'score', title: `anomaly score ${score(s)}` },
    h('span', { class: `score-bar ${cls}`, 'aria-hidden': 'true' }, h('span', { style: { width: `${v * 100}%` } })),
    score(s));
}
