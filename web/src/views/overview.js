// Overview: every series with its current P50/P99, how far it is from its baseline, QPS, error
// rate and alert state, worst first; a model's per-layer series folded into one row.
import { h, setChildren } from '../dom.js';
import { get } from '../api.js';
import { rate, percent, score, unitOf } from '../format.js';
import { stateBadge, seriesLabel, seriesLink, emptyState, changed } from './common.js';
import { worstFirst, deviation, overviewRows, isLayer } from '../rank.js';

export function overviewView({ app }) {
  const local = { filter: '', stage: 'all', open: new Set() };
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
      h('th', { scope: 'col', class: 'num', title: 'P99 divided by the baseline P99: how far the series is from normal. Rows are ranked by it after the alert state.' }, 'vs baseline'),
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
    const stages = [...new Set(series.filter((s) => !isLayer(s)).map((s) => s.labels?.stage).filter(Boolean))].sort();
    if (series.some(isLayer)) stages.push('layers');
    if (changed(cache, 'stages', stages)) {
      setChildren(stage, h('option', { value: 'all' }, 'all stages'),
        stages.map((s) => h('option', { value: s, selected: s === local.stage }, s)));
    }
    const shown = series.filter((s) =>
      (local.stage === 'all' || s.labels?.stage === local.stage || (local.stage === 'layers' && isLayer(s)))
      && (!local.filter || String(s.key).toLowerCase().includes(local.filter)));
    const rows = overviewRows(shown);
    const alerting = series.filter((s) => s.alert_state === 'alert' || s.alert_state === 'no_data').length;
    const pre = series.filter((s) => s.alert_state === 'pre_alert').length;
    setChildren(summary,
      `${series.length} series`,
      alerting ? h('span', { class: 'count-alert' }, ` · ${alerting} alerting`) : null,
      pre ? h('span', { class: 'count-pre' }, ` · ${pre} pre-alert`) : null,
      shown.length !== series.length ? ` · ${shown.length} shown` : null);
    if (!series.length) {
      setChildren(tbody, h('tr', null, h('td', { colspan: 9 },
        emptyState('No series yet: tailguard has not measured a request.',
          'Send traffic through the gateway (or import recorded history with `tailguard import`); series appear within a second.'))));
      return;
    }
    if (!rows.length) {
      setChildren(tbody, h('tr', null, h('td', { colspan: 9 }, emptyState('No series match the filter.'))));
      return;
    }
    setChildren(tbody, rows.flatMap((r) => {
      if (r.series) return [seriesRow(r.series, false)];
      const g = r.group;
      const open = local.open.has(g.key);
      const worst = g.members[0];
      const st = worst.live === false ? 'stored' : (worst.alert_state || 'normal');
      const toggle = h('button', {
        type: 'button', class: 'link group-toggle', 'aria-expanded': String(open),
        onclick: () => { if (open) local.open.delete(g.key); else local.open.add(g.key); draw(); },
      }, `${open ? '▾' : '▸'} ${g.members.length} layer series`);
      const head = h('tr', { class: `row-${st} group-row`, dataset: { group: g.key } },
        h('td', null, stateBadge(st, worst.severity)),
        h('td', null, seriesLabel(g.labels, ''), ' ', toggle,
          h('span', { class: 'muted' }, ` · slowest vs baseline: ${worst.labels?.stage}`)),
        ...statCells(worst));
      return open ? [head, ...g.members.map((s) => seriesRow(s, true))] : [head];
    }));
  }

  function seriesRow(s, member) {
    const st = s.live === false ? 'stored' : (s.alert_state || 'normal');
    return h('tr', { class: `row-${st}${member ? ' group-member' : ''}`, dataset: { id: s.id } },
      h('td', null, stateBadge(st, s.severity)),
      h('td', null, seriesLink(app.state, s.id, seriesLabel(s.labels, s.key))),
      ...statCells(s));
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

// The statistics columns of a row: P50, P99, baseline, vs baseline, QPS, errors, anomaly.
function statCells(s) {
  return [
    h('td', { class: 'num' }, unitOf(s).fmt(s.p50)),
    h('td', { class: 'num strong' }, unitOf(s).fmt(s.p99)),
    h('td', { class: 'num muted' }, unitOf(s).fmt(s.baseline_p99)),
    deviationCell(s),
    h('td', { class: 'num' }, rate(s.rate)),
    h('td', { class: `num${s.error_ratio > 0.01 ? ' bad' : ''}` }, percent(s.error_ratio)),
    h('td', { class: 'num' }, scoreBar(s.anomaly_score)),
  ];
}

// "30×" for a P99 thirty times its baseline, "0.5×" for half of it; red from 2x, whether or not
// a rule covers the series.
function deviationCell(s) {
  const d = deviation(s);
  if (d === null) return h('td', { class: 'num muted' }, '–');
  const text = d >= 10 ? `${d.toFixed(0)}×` : `${d.toFixed(d >= 1 ? 1 : 2)}×`;
  const cls = d >= 2 ? ' bad' : d >= 1.5 ? ' warn' : '';
  return h('td', { class: `num dev${cls}`, title: `P99 ${unitOf(s).fmt(s.p99)} against a baseline of ${unitOf(s).fmt(s.baseline_p99)}` }, text);
}

function scoreBar(s) {
  const v = Number.isFinite(s) ? Math.max(0, Math.min(1, s)) : 0;
  const cls = v >= 0.5 ? 'hi' : v >= 0.2 ? 'mid' : 'lo';
  return h('span', { class: 'score', title: `anomaly score ${score(s)}` },
    h('span', { class: `score-bar ${cls}`, 'aria-hidden': 'true' }, h('span', { style: { width: `${v * 100}%` } })),
    score(s));
}
