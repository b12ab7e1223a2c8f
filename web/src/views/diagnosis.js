// Diagnosis of one alert episode (?view=diagnosis&alert=ID): the quadrant and the one-line
// finding, what changed near the onset, the ranked causes each with its sparkline against its
// baseline band, the symptoms kept apart, the alerted model's per-layer heatmap and its
// input-size drift, and how the diagnosis developed (fire, escalations, rechecks).
import { h, setChildren } from '../dom.js';
import { get } from '../api.js';
import { unitOf, percent, parseKey } from '../format.js';
import { chartIn, baseOptions, timeAxis, colors, tooltipTitle } from '../charts.js';
import {
  stateBadge, seriesLabel, seriesLink, panel, emptyState, errorState, timeEl, changed,
} from './common.js';
import { layerMatrix, inputDrift, episodeWindow, stepFor } from '../diagnosis.js';
import { stateUrl } from '../state.js';

export const QUADRANT_NAMES = {
  hardware: 'Hardware', traffic: 'Traffic', dependency: 'Dependency', model: 'Model', unknown: 'Unknown',
};

export function quadrantBadge(q) {
  const name = QUADRANT_NAMES[q] || q || 'Unknown';
  return h('span', { class: `badge quadrant quadrant-${q || 'unknown'}`, dataset: { quadrant: q || 'unknown' } }, name);
}

// "+12s", "-4s", from seconds.
function relative(s) {
  if (!Number.isFinite(s)) return '–';
  const r = Math.round(s);
  return `${r >= 0 ? '+' : '−'}${Math.abs(r)}s`;
}

export function diagnosisView({ app }) {
  const cache = {};
  const head = h('div', { class: 'series-head', id: 'diag-head' });
  const summary = h('div', { class: 'diag-summary', id: 'diag-summary' });
  const causes = h('div', { id: 'diag-causes' });
  const symptoms = h('div', { id: 'diag-symptoms' });
  const changes = h('div', { id: 'diag-changes' });
  const layersNote = h('div', { class: 'panel-note' });
  const layersEl = h('div', { class: 'chart', id: 'chart-layers', role: 'img', 'aria-label': 'Per-layer P99 against each layer\'s baseline, by time' });
  const inputNote = h('div', { class: 'panel-note' });
  const inputEl = h('div', { class: 'chart', id: 'chart-input', role: 'img', 'aria-label': 'Input size P50 and P99 against the baseline' });
  const historyEl = h('div', { id: 'diag-history' });
  const body = h('div', { class: 'series-body' },
    summary,
    panel('Ranked causes', causes),
    h('div', { class: 'two' },
      panel('Symptoms (moved with the incident, not its cause)', symptoms),
      panel('What changed before the alert', changes)),
    panel('Per-layer timings (P99 over each layer\'s baseline)', layersNote, layersEl),
    panel('Input size', inputNote, inputEl),
    panel('How the diagnosis developed', historyEl));
  const none = h('div');
  const el = h('div', { class: 'view view-diagnosis' }, head, none, body);

  function drawHead(alert) {
    if (!changed(cache, 'head', alert)) return;
    const labels = alert.labels || parseKey(alert.series).labels;
    setChildren(head,
      h('h1', null, `Alert #${alert.id} · `, alert.rule, ' on ',
        seriesLink(app.state, alert.series_id, seriesLabel(labels, alert.series))),
      h('div', { class: 'head-side' },
        stateBadge(alert.state, alert.severity), ' started ', timeEl(alert.started_at),
        alert.ended_at ? [' · ended ', timeEl(alert.ended_at)] : null,
        ' ', h('a', { href: stateUrl({ ...app.state, view: 'alerts' }), 'data-nav': '' }, 'all alerts')));
  }

  function drawSummary(d) {
    if (!changed(cache, 'summary', d)) return;
    if (!d) {
      setChildren(summary, emptyState('No diagnosis yet.',
        'A diagnosis is made when an alert fires or escalates; pre-alerts have none.'));
      return;
    }
    setChildren(summary,
      h('div', { class: 'diag-line' }, quadrantBadge(d.quadrant), ' ', h('span', { class: 'diag-text', id: 'diag-text' }, d.summary)),
      h('p', { class: 'muted' }, d.contention
        ? `Contention: the cause is on ${d.contention}, whose load took the CPUs this route shares. `
        : null,
      `Diagnosed at `, timeEl(d.time), ` from ${d.series_considered} signals in ${(d.seconds * 1e3).toFixed(1)} ms.`));
  }

  function sparkline(div, c) {
    const u = unitOf({ unit: c.unit });
    const k = u.scale;
    const pts = (c.points || []).map(([t, v]) => [t, Number.isFinite(v) ? v * k : null]);
    div.dataset.points = String(pts.length);
    const b = c.baseline || {};
    const chart = chartIn(div, `spark-${c.rank}`);
    chart.setOption({
      animation: false,
      grid: { left: 2, right: 2, top: 4, bottom: 4 },
      xAxis: { type: 'value', show: false, min: (v) => Math.min(v.min, -60), max: 0 },
      yAxis: { type: 'value', show: false, scale: true },
      tooltip: {
        trigger: 'axis', backgroundColor: '#161b22', borderColor: colors.axis,
        textStyle: { color: colors.text, fontSize: 11 },
        formatter: (ps) => `${relative(ps[0].value[0])}: <b>${u.fmt(ps[0].value[1] / k)}</b>`,
      },
      series: [{
        type: 'line', showSymbol: false, data: pts,
        lineStyle: { width: 1.4, color: c.kind === 'cause' ? colors.p99 : colors.muted },
        markArea: Number.isFinite(b.q1) && Number.isFinite(b.q3) ? {
          silent: true, itemStyle: { color: 'rgba(88,166,255,0.18)' },
          data: [[{ yAxis: b.q1 * k }, { yAxis: b.q3 * k }]],
        } : undefined,
        markLine: {
          silent: true, symbol: 'none', label: { show: false },
          data: [
            ...(Number.isFinite(b.median) ? [{ yAxis: b.median * k, lineStyle: { color: colors.p50, type: 'dashed', width: 1 } }] : []),
            { xAxis: 0, lineStyle: { color: colors.alert, type: 'dotted', width: 1 } },
          ],
        },
      }],
    }, { notMerge: true });
  }

  function drawCauses(d) {
    if (!changed(cache, 'causes', d?.causes)) return;
    const list = d?.causes || [];
    if (!list.length) {
      setChildren(causes, emptyState('No cause ranked: no signal had a baseline before the onset.'));
      return;
    }
    const sparks = [];
    setChildren(causes, h('table', { class: 'grid causes' },
      h('thead', null, h('tr', null, ['#', 'Quadrant', 'Signal', 'Baseline (median, IQR)', 'Peak', 'Onset', 'Score', 'Explains', 'Confidence', 'Last 10 min']
        .map((t, i) => h('th', { scope: 'col', class: i >= 3 && i <= 8 ? 'num' : null }, t)))),
      h('tbody', null, list.map((c) => {
        const u = unitOf({ unit: c.unit });
        const b = c.baseline || {};
        const spark = h('div', { class: 'spark', role: 'img', 'aria-label': `${c.series} over the last ten minutes against its baseline` });
        sparks.push([spark, c]);
        const onsetS = (Date.parse(c.onset) - Date.parse(d.time)) / 1000;
        const { labels } = parseKey(c.series);
        return [
          h('tr', { class: `cause-${c.kind}`, dataset: { rank: c.rank, quadrant: c.quadrant, series: c.series } },
            h('td', { class: 'muted' }, String(c.rank)),
            h('td', null, quadrantBadge(c.quadrant)),
            h('td', null, h('div', { class: 'metric' }, parseKey(c.series).metric),
              seriesLink(app.state, c.series_id, seriesLabel(labels, c.series))),
            h('td', { class: 'num' }, u.fmt(b.median), h('span', { class: 'muted' }, ` [${u.fmt(b.q1)}–${u.fmt(b.q3)}]`)),
            h('td', { class: 'num strong' }, u.fmt(c.peak)),
            h('td', { class: 'num' }, relative(onsetS)),
            h('td', { class: 'num', title: 'IQRs beyond the baseline' }, Number.isFinite(c.score) ? c.score.toFixed(1) : '–'),
            h('td', { class: 'num', title: 'Share of the alerted latency\'s rise this stage accounts for' }, Number.isFinite(c.explained) ? percent(c.explained) : '–'),
            h('td', { class: 'num' }, percent(c.confidence)),
            h('td', { class: 'spark-cell' }, spark)),
          h('tr', { class: 'rationale' }, h('td'), h('td', { colspan: 9, class: 'muted' }, c.rationale)),
        ];
      }))));
    for (const [div, c] of sparks) sparkline(div, c);
  }

  function drawSymptoms(d) {
    if (!changed(cache, 'symptoms', [d?.symptoms, d?.changes])) return;
    const sy = d?.symptoms || [];
    setChildren(symptoms, sy.length
      ? h('ul', { class: 'plain' }, sy.map((s) => h('li', null, h('code', null, s))))
      : emptyState('No symptom moved beyond its baseline.'));
    const ch = d?.changes || [];
    setChildren(changes, ch.length
      ? h('ul', { class: 'plain' }, ch.map((c) => h('li', { dataset: { quadrant: c.quadrant } },
        timeEl(c.time), ' ', quadrantBadge(c.quadrant), ' ', h('strong', null, c.subject), ': ', c.what)))
      : emptyState('No model version, graph, configuration or restart changed in the two minutes before the alert.'));
  }

  function drawHistory(all) {
    if (!changed(cache, 'history', all)) return;
    setChildren(historyEl, all.length
      ? h('ol', { class: 'plain diag-history' }, all.map((d) => h('li', null, timeEl(d.time), ' ', quadrantBadge(d.quadrant), ' ', d.summary)))
      : emptyState('No diagnosis yet.'));
  }

  // The alerted model's (else route's) series of one metric, with their histories over the
  // episode's window.
  async function histories(alert, metric, extra, win) {
    const labels = alert.labels || parseKey(alert.series).labels;
    const scope = labels.model ? `model="${labels.model}"` : labels.route ? `route="${labels.route}"` : null;
    if (!scope) return { scope: null, list: [] };
    const { series } = await get('/api/v1/series', { match: `${metric}{${scope}${extra}}` });
    const step = stepFor(win.fromMs, win.toMs);
    const from = new Date(win.fromMs).toISOString();
    const to = new Date(win.toMs).toISOString();
    const list = await Promise.all((series || []).map(async (s) => {
      const hist = await get(`/api/v1/series/${encodeURIComponent(s.id)}/history`, { from, to, step });
      return { s, points: (hist.points || []).map((p) => ({ ...p, t: Date.parse(p.time) })) };
    }));
    return { scope, list };
  }

  async function drawLayers(alert, onsetMs, win) {
    const { scope, list } = await histories(alert, 'tailguard_request_duration_seconds', ',stage=~"layer_.*"', win);
    const m = layerMatrix(list.map(({ s, points }) => ({ name: s.labels.stage.replace(/^layer_/, ''), points })), onsetMs);
    layersEl.dataset.layers = String(m.names.length);
    layersEl.dataset.cells = String(m.cells.length);
    window.__tailguard.data.layers = m;
    if (!m.names.length) {
      chartIn(layersEl).clear();
      layersEl.hidden = true;
      throw Object.assign(new Error(scope
        ? `No per-layer timings for ${scope}.`
        : 'The alerted series names no model or route.'), {
        empty: true,
        hint: 'The built-in backend times each layer when the model sets profile_layers (docs/models.md); a model behind an upstream has none.',
      });
    }
    layersEl.hidden = false;
    layersEl.style.height = `${Math.max(160, 40 + m.names.length * 18)}px`;
    const chart = chartIn(layersEl, 'layers');
    chart.setOption({
      ...baseOptions(),
      grid: { left: 140, right: 90, top: 10, bottom: 28 },
      tooltip: {
        ...baseOptions().tooltip, trigger: 'item',
        formatter: (p) => `${tooltipTitle(m.times[p.value[0]])}<br>${m.names[p.value[1]]}: <b>${unitOf(null).fmt(p.value[3])}</b> (${p.value[2].toFixed(2)}× its baseline)`,
      },
      xAxis: {
        type: 'category', data: m.times, axisLabel: { color: colors.muted, formatter: (t) => new Date(Number(t)).toLocaleTimeString() },
        axisLine: { lineStyle: { color: colors.axis } },
      },
      yAxis: { type: 'category', data: m.names, axisLabel: { color: colors.text, fontSize: 11 } },
      visualMap: {
        type: 'continuous', min: 0.5, max: 4, dimension: 2, calculable: false, orient: 'vertical', right: 4, top: 'center',
        text: ['4×', '0.5×'], textStyle: { color: colors.muted },
        inRange: { color: ['#0d419d', '#161b22', '#9e6a03', '#f0883e', '#f85149'] },
      },
      series: [{ type: 'heatmap', data: m.cells, progressive: 0 }],
    }, { notMerge: true });
    if (m.worst) layersEl.dataset.worst = m.worst.name;
  }

  async function drawInput(alert, onsetMs, win) {
    const { scope, list } = await histories(alert, 'tailguard_request_input_size', '', win);
    inputEl.dataset.series = String(list.length);
    if (!list.length) {
      chartIn(inputEl).clear();
      inputEl.hidden = true;
      throw Object.assign(new Error(scope ? `No input sizes recorded for ${scope}.` : 'The alerted series names no model or route.'), {
        empty: true, hint: 'The gateway records the input size of KServe, OpenAI and built-in-backend requests.',
      });
    }
    inputEl.hidden = false;
    const series = [];
    const drifts = [];
    const palette = [colors.p99, colors.p50, colors.p90, colors.forecast];
    list.forEach(({ s, points }, i) => {
      const drift = inputDrift(points, onsetMs);
      drifts.push({ series: s.key, ...drift });
      const name = list.length > 1 ? `${s.labels.route || s.labels.model} ` : '';
      const color = palette[i % palette.length];
      series.push({
        name: `${name}P99`, type: 'line', showSymbol: false, data: points.map((p) => [p.t, p.p99]),
        lineStyle: { width: 2, color }, itemStyle: { color },
        markArea: drift ? { silent: true, itemStyle: { color: 'rgba(88,166,255,0.12)' }, data: [[{ yAxis: drift.baseline_p50 }, { yAxis: drift.baseline_p99 }]] } : undefined,
      });
      series.push({
        name: `${name}P50`, type: 'line', showSymbol: false, data: points.map((p) => [p.t, p.p50]),
        lineStyle: { width: 1.2, color, type: 'dashed' }, itemStyle: { color },
      });
    });
    series.push({
      name: 'onset', type: 'line', data: [], silent: true,
      markLine: { symbol: 'none', silent: true, label: { show: false }, data: [{ xAxis: onsetMs, lineStyle: { color: colors.alert, type: 'dotted' } }] },
    });
    window.__tailguard.data.inputDrift = drifts;
    const worst = drifts.reduce((w, d) => (d.ratio_p50 > (w?.ratio_p50 || 0) ? d : w), null);
    inputEl.dataset.ratio = worst ? worst.ratio_p50.toFixed(2) : '';
    chartIn(inputEl, 'input').setOption({
      ...baseOptions(),
      legend: { ...baseOptions().legend, data: series.filter((x) => x.name !== 'onset').map((x) => x.name) },
      xAxis: timeAxis(win.fromMs, win.toMs),
      yAxis: { type: 'value', min: 0, axisLabel: { color: colors.muted }, splitLine: { lineStyle: { color: colors.grid } } },
      series,
    }, { notMerge: true });
    setChildren(inputNote, worst && Number.isFinite(worst.ratio_p50)
      ? h('p', { class: 'muted', id: 'input-drift' },
        `Median input ${worst.peak_p50.toFixed(0)} against a baseline of ${worst.baseline_p50.toFixed(0)} (${worst.ratio_p50.toFixed(1)}×); `,
        `P99 ${worst.peak_p99.toFixed(0)} against ${worst.baseline_p99.toFixed(0)}. The band is the baseline's P50 to P99.`)
      : null);
    inputNote.hidden = false;
  }

  async function section(note, fn) {
    try {
      await fn();
    } catch (e) {
      setChildren(note, e?.empty ? emptyState(e.message, e.hint) : errorState(e));
      note.hidden = false;
    }
  }

  async function refresh() {
    const id = app.state.alert;
    if (!id) {
      setChildren(head, h('h1', null, 'Diagnosis'));
      body.hidden = true;
      setChildren(none, emptyState('No alert chosen.', 'Open a diagnosis from the Alerts view.'));
      return;
    }
    const data = await get(`/api/v1/alerts/${encodeURIComponent(id)}/diagnosis`);
    window.__tailguard.data.diagnosis = data;
    const alert = data.alert;
    const d = data.diagnosis;
    drawHead(alert);
    drawSummary(d);
    drawCauses(d);
    drawSymptoms(d);
    drawHistory(data.diagnoses || []);
    // The charts' window and the baseline's end: the episode's start (the breach).
    const win = episodeWindow(alert, Date.now() + app.skewMs);
    const onsetMs = Date.parse(alert.started_at);
    const chartsKey = JSON.stringify([alert.id, alert.ended_at, Math.floor(win.toMs / 10000)]);
    if (cache.charts === chartsKey) return;
    cache.charts = chartsKey;
    layersNote.hidden = true;
    inputNote.hidden = true;
    await section(layersNote, () => drawLayers(alert, onsetMs, win));
    await section(inputNote, () => drawInput(alert, onsetMs, win));
  }

  return { el, title: () => `Diagnosis of alert #${app.state.alert || ''}`, refresh };
}
