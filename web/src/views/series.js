// Series view: heatmap, percentiles against 1 d / 7 d ago, forecast band, anomaly score, the
// event timeline and the slowest sampled requests of one series.
import { h, setChildren } from '../dom.js';
import { get } from '../api.js';
import { ms, msAxis, rate, percent, score, age, statValue, unitOf } from '../format.js';
import { breakdown } from '../stages.js';
import { timeWindow, stepsFor } from '../state.js';
import { chartIn, baseOptions, timeAxis, colors, tooltipTitle } from '../charts.js';
import {
  stateBadge, seriesLabel, seriesLink, panel, emptyState, errorState, timeEl, changed,
} from './common.js';
import { worstFirst } from '../rank.js';

const DAY = 86400;
const OVERLAY_EVERY_MS = 60000;

export function seriesView({ app, navigate }) {
  const cache = {};
  // How the shown series' values read (format.js unitOf): latencies unless it says otherwise.
  let unit = unitOf(null);
  let overlays = { key: '', at: 0, d1: null, d7: null };
  const el = h('div', { class: 'view view-series' });
  const head = h('div', { class: 'series-head' });
  const stats = h('div', { class: 'stats', role: 'group', 'aria-label': 'Current statistics (last 10 s)' });
  const mk = (id, label) => {
    const div = h('div', { class: 'chart', id, role: 'img', 'aria-label': label });
    return div;
  };
  const heatEl = mk('chart-heatmap', 'Latency heatmap: time by latency bucket');
  const pctEl = mk('chart-percentiles', 'P50, P90, P99 and P99.9 with 1 day and 7 days ago');
  const fcEl = mk('chart-forecast', 'Holt-Winters forecast and band against the actual P99');
  const scoreEl = mk('chart-score', 'Anomaly score');
  const notes = {
    heat: h('div', { class: 'panel-note' }),
    pct: h('div', { class: 'panel-note' }),
    fc: h('div', { class: 'panel-note' }),
    score: h('div', { class: 'panel-note' }),
    timeline: h('div', { class: 'panel-note' }),
    samples: h('div', { class: 'panel-note' }),
  };
  const timeline = h('div', { class: 'timeline', id: 'timeline' });
  const samples = h('div', { class: 'samples', id: 'samples' });
  const body = h('div', { class: 'series-body' },
    panel('Latency heatmap', notes.heat, heatEl),
    panel('Percentiles (dashed: 1 day and 7 days ago)', notes.pct, pctEl),
    h('div', { class: 'two' },
      panel('Forecast against actual P99', notes.fc, fcEl),
      panel('Anomaly score and events', notes.score, scoreEl)),
    panel('Event timeline', notes.timeline, timeline),
    panel('Slowest sampled requests', notes.samples, samples));
  const picker = h('div', { class: 'picker' });
  el.append(head, stats, body, picker);

  function showPicker(list) {
    body.hidden = true;
    stats.hidden = true;
    setChildren(head, h('h1', null, 'Series'));
    if (!list.length) {
      setChildren(picker, emptyState('No series yet.', 'Send traffic through the gateway; series appear within a second.'));
      return;
    }
    setChildren(picker,
      h('p', null, app.state.id ? `No series with id ${app.state.id}. Pick one:` : 'Pick a series:'),
      h('ul', { class: 'pick-list' }, list.map((s) =>
        h('li', null, stateBadge(s.live === false ? 'stored' : s.alert_state, s.severity), ' ',
          seriesLink(app.state, s.id, seriesLabel(s.labels, s.key)), ' ',
          h('span', { class: 'muted' }, `P99 ${unitOf(s).fmt(s.p99)}`)))));
  }

  function drawHead(s) {
    if (!changed(cache, 'head', [s.id, s.key, s.alert_state, s.severity, s.live])) return;
    setChildren(head,
      h('h1', null, seriesLabel(s.labels, s.key)),
      h('div', { class: 'head-side' },
        stateBadge(s.live === false ? 'stored' : s.alert_state, s.severity),
        h('code', { class: 'muted key', title: 'series id' }, s.id)));
  }

  function drawStats(s) {
    const card = (label, value, cls, title) =>
      h('div', { class: `stat ${cls || ''}`, title: title || null }, h('div', { class: 'stat-label' }, label), h('div', { class: 'stat-value' }, value));
    const above = s.baseline_p99 > 0 && s.p99 > s.baseline_p99 * 1.1;
    const u = unitOf(s);
    setChildren(stats,
      card('P50', u.fmt(s.p50)),
      card('P90', u.fmt(s.p90)),
      card('P99', u.fmt(s.p99), above ? 'bad' : 'key'),
      card('P99.9', u.fmt(s.p999)),
      card('Baseline P99', u.fmt(s.baseline_p99), 'muted', 'forecast of the P99 for now'),
      card(u.latency ? 'QPS' : 'Values/s', rate(s.rate), '',
        u.latency ? 'requests per second, last 10 s' : 'values recorded per second, last 10 s'),
      card('Errors', percent(s.error_ratio), s.error_ratio > 0.01 ? 'bad' : ''),
      card('Anomaly', score(s.anomaly_score), s.anomaly_score >= 0.5 ? 'bad' : ''));
  }

  async function section(note, fn) {
    try {
      await fn();
      note.replaceChildren();
      note.hidden = true;
    } catch (e) {
      // An empty window is not an error: say so plainly, with what would fill it.
      setChildren(note, e?.empty ? emptyState(e.message, e.hint) : errorState(e));
      note.hidden = false;
    }
  }

  async function refresh() {
    const s = app.state;
    const listData = await get('/api/v1/series', { sort: 'worst' });
    const list = (listData.series || []).slice().sort(worstFirst);
    const current = list.find((x) => x.id === s.id);
    if (!current) {
      showPicker(list);
      return;
    }
    picker.replaceChildren();
    body.hidden = false;
    stats.hidden = false;
    unit = unitOf(current);
    drawHead(current);
    drawStats(current);
    const win = timeWindow(s, app.skewMs);
    const { step, heatStep } = stepsFor(s, win.seconds);
    const id = encodeURIComponent(s.id);
    const overlayKey = `${s.id}|${win.from}|${win.to}|${step}`;
    const needOverlays = overlays.key !== overlayKey || Date.now() - overlays.at > OVERLAY_EVERY_MS;

    const historyP = get(`/api/v1/series/${id}/history`, { from: win.from, to: win.to, step });
    const overlayP = needOverlays
      ? Promise.all([DAY, 7 * DAY].map((by) =>
        get(`/api/v1/series/${id}/history`, { ...win.shifted(by), step }).catch(() => null)))
      : null;
    // Heatmaps are of latencies; a size or a count shows its percentiles.
    const heatP = unit.latency
      ? get(`/api/v1/series/${id}/heatmap`, { from: win.from, to: win.to, step: heatStep })
      : null;
    const eventsP = get('/api/v1/events', { series: s.id, since: win.from, limit: 1000 });
    const samplesP = get('/api/v1/samples', {
      series: s.id, route: current.labels?.route, limit: 100, within: `${Math.min(win.seconds, 7 * DAY)}s`,
    });

    let history = null;
    let events = [];
    await section(notes.pct, async () => {
      history = await historyP;
      if (overlayP) {
        const [d1, d7] = await overlayP;
        overlays = { key: overlayKey, at: Date.now(), d1, d7 };
      }
    });
    await section(notes.timeline, async () => {
      const data = await eventsP;
      events = (data.events || []).filter((e) => !e.series_id || e.series_id === s.id)
        .filter((e) => Date.parse(e.time) >= win.fromMs - 1000);
      window.__tailguard.data.events = events;
      drawTimeline(events);
    });
    if (history) {
      window.__tailguard.data.history = history;
      drawPercentiles(history, overlays, win, events);
      await section(notes.fc, async () => drawForecast(history, win));
      await section(notes.score, async () => drawScore(history, win, events));
    }
    await section(notes.heat, async () => {
      if (!heatP) {
        chartIn(heatEl).clear();
        heatEl.dataset.cells = '0';
        throw Object.assign(new Error(`This series measures ${unit.unit}: heatmaps are of latencies.`), {
          empty: true, hint: 'Its percentiles are below.',
        });
      }
      drawHeatmap(await heatP);
    });
    await section(notes.samples, async () => drawSamples(await samplesP, current));
  }

  function points(history) {
    return (history?.points || []).map((p) => ({ ...p, t: Date.parse(p.time) }));
  }
  // The plotted value: milliseconds for a latency, the unit itself for sizes and counts.
  // Latencies on a log axis (no zeros there); sizes and counts on a linear one from 0, where a
  // gauge at 0 shows.
  const plotted = (v) => (v === null || v === undefined || !Number.isFinite(v) || (v <= 0 && unit.latency) ? null : v * unit.scale);

  function drawPercentiles(history, ov, win, events) {
    const pts = points(history);
    const line = (name, key, color, data, extra = {}) => ({
      name, type: 'line', showSymbol: false, connectNulls: false, sampling: 'lttb',
      lineStyle: { width: extra.width || 1.6, color, type: extra.dash ? 'dashed' : 'solid', opacity: extra.opacity || 1 },
      itemStyle: { color },
      emphasis: { disabled: true },
      data: data.map((p) => [p.t + (extra.shift || 0), plotted(p[key])]),
      ...extra.series,
    });
    const series = [
      line('P50', 'p50', colors.p50, pts),
      line('P90', 'p90', colors.p90, pts),
      line('P99', 'p99', colors.p99, pts, { width: 2.2 }),
      line('P99.9', 'p999', colors.p999, pts),
    ];
    const selected = {};
    for (const [label, data, by] of [['1d ago', ov.d1, DAY], ['7d ago', ov.d7, 7 * DAY]]) {
      const op = points(data);
      if (!op.some((p) => p.count > 0)) continue;
      for (const [n, k, c] of [['P50', 'p50', colors.p50], ['P90', 'p90', colors.p90], ['P99', 'p99', colors.p99], ['P99.9', 'p999', colors.p999]]) {
        const name = `${n} ${label}`;
        series.push(line(name, k, c, op, { dash: true, shift: by * 1000, opacity: label === '1d ago' ? 0.75 : 0.45, width: 1.2 }));
        selected[name] = n === 'P50' || n === 'P99';
      }
    }
    const noData = !pts.some((p) => p.count > 0);
    const alertMarks = events.filter((e) => e.type === 'alert' && ['fire', 'resolve'].includes(e.kind));
    if (alertMarks.length) {
      series.push({
        name: 'alert transitions', type: 'line', data: [], silent: true,
        markLine: {
          symbol: 'none', silent: true,
          label: { show: true, formatter: (p) => p.name, color: colors.muted, fontSize: 10, position: 'insideEndTop' },
          data: alertMarks.map((e) => ({
            name: e.kind, xAxis: Date.parse(e.time),
            lineStyle: { color: e.kind === 'fire' ? colors.alert : colors.ok, type: 'dotted', width: 1.5 },
          })),
        },
      });
    }
    const chart = chartIn(pctEl);
    chart.setOption({
      ...baseOptions(),
      legend: { ...baseOptions().legend, selected, type: 'scroll', right: 8, data: series.filter((x) => x.name !== 'alert transitions').map((x) => x.name) },
      tooltip: { ...baseOptions().tooltip, formatter: (ps) => tooltipLines(ps, (v) => unit.fmt(v / unit.scale)) },
      xAxis: timeAxis(win.fromMs, win.toMs),
      yAxis: {
        ...(unit.latency
          ? { type: 'log', logBase: 10, min: (v) => logFloor(v.min), max: (v) => logCeil(v.max) }
          : { type: 'value', min: 0 }),
        name: unit.axisName, nameTextStyle: { color: colors.muted },
        axisLabel: { color: colors.muted, formatter: unit.axis },
        splitLine: { lineStyle: { color: colors.grid } },
        axisLine: { show: false },
      },
      series,
      graphic: undefined,
    }, { notMerge: true });
    pctEl.dataset.points = String(pts.filter((p) => p.count > 0).length);
    pctEl.dataset.overlays = String(series.filter((x) => / ago$/.test(x.name)).length);
    window.__tailguard.data.overlays = Number(pctEl.dataset.overlays);
    setChildren(notes.pct, noData ? emptyState('No requests in this window.') : null);
    notes.pct.hidden = !noData;
  }

  function drawForecast(history, win) {
    const pts = points(history);
    const has = pts.some((p) => Number.isFinite(p.forecast));
    fcEl.dataset.points = String(pts.filter((p) => Number.isFinite(p.forecast)).length);
    const chart = chartIn(fcEl);
    const k = unit.scale;
    const lower = pts.map((p) => [p.t, Number.isFinite(p.forecast_lower) ? Math.max(0, p.forecast_lower * k) : null]);
    const width = pts.map((p) => [p.t, Number.isFinite(p.forecast_upper) && Number.isFinite(p.forecast_lower)
      ? Math.max(0, (p.forecast_upper - Math.max(0, p.forecast_lower)) * k) : null]);
    const breaches = pts.filter((p) => Number.isFinite(p.forecast_upper) && p.p99 > p.forecast_upper)
      .map((p) => [p.t, p.p99 * k]);
    const f = unit.fmt;
    chart.setOption({
      ...baseOptions(),
      tooltip: {
        ...baseOptions().tooltip,
        formatter: (ps) => {
          const t = ps[0]?.value?.[0];
          const p = pts.find((x) => x.t === t);
          if (!p) return '';
          return `${tooltipTitle(t)}<br>P99 <b>${f(p.p99)}</b><br>forecast ${f(p.forecast)}<br>band ${f(p.forecast_lower)} – ${f(p.forecast_upper)}`;
        },
      },
      legend: { ...baseOptions().legend, data: ['P99', 'forecast', 'band', 'outside band'] },
      xAxis: timeAxis(win.fromMs, win.toMs),
      yAxis: {
        type: 'value', name: unit.axisName, scale: true, nameTextStyle: { color: colors.muted },
        axisLabel: { color: colors.muted, formatter: (v) => unit.axis(v) },
        splitLine: { lineStyle: { color: colors.grid } },
      },
      series: [
        { name: 'band-base', type: 'line', stack: 'band', data: lower, showSymbol: false, lineStyle: { opacity: 0 }, silent: true, tooltip: { show: false } },
        {
          name: 'band', type: 'line', stack: 'band', data: width, showSymbol: false, silent: true,
          lineStyle: { opacity: 0 }, areaStyle: { color: colors.forecast, opacity: 0.18 }, itemStyle: { color: colors.forecast },
        },
        { name: 'forecast', type: 'line', data: pts.map((p) => [p.t, plotted(p.forecast)]), showSymbol: false, lineStyle: { type: 'dashed', color: colors.forecast, width: 1.5 }, itemStyle: { color: colors.forecast } },
        { name: 'P99', type: 'line', data: pts.map((p) => [p.t, plotted(p.p99)]), showSymbol: false, lineStyle: { color: colors.p99, width: 2 }, itemStyle: { color: colors.p99 } },
        { name: 'outside band', type: 'scatter', data: breaches, symbolSize: 6, itemStyle: { color: colors.alert } },
      ],
    }, { notMerge: true });
    if (!has) throw Object.assign(new Error('No forecast in this window yet (the forecaster needs a few minutes of data).'), { describe() { return this.message; } });
  }

  function drawScore(history, win, events) {
    const pts = points(history);
    const typeColor = { anomaly: colors.anomaly, alert: colors.alert, notification: colors.p50, muted: colors.muted };
    const marks = events.map((e) => ({
      value: [Date.parse(e.time), 1.05], name: `${e.type} ${e.kind || ''}`.trim(), event: e,
      itemStyle: { color: e.type === 'alert' && (e.kind === 'resolve' || e.kind === 'cancel') ? colors.ok : (typeColor[e.type] || colors.muted) },
    }));
    const chart = chartIn(scoreEl);
    chart.setOption({
      ...baseOptions(),
      tooltip: {
        ...baseOptions().tooltip,
        formatter: (ps) => {
          const list = Array.isArray(ps) ? ps : [ps];
          const t = list[0]?.value?.[0];
          const rows = list.map((p) => (p.seriesName === 'events'
            ? `${escapeHtml(`${p.data.event.type} ${p.data.event.kind || ''}`)}: ${escapeHtml(p.data.event.message || '')}`
            : `anomaly score <b>${score(p.value[1])}</b>`));
          return `${tooltipTitle(t)}<br>${rows.join('<br>')}`;
        },
      },
      legend: { show: false },
      xAxis: timeAxis(win.fromMs, win.toMs),
      yAxis: {
        type: 'value', min: 0, max: 1.1, interval: 0.25,
        axisLabel: { color: colors.muted, formatter: (v) => (v <= 1 ? v.toFixed(2) : '') },
        splitLine: { lineStyle: { color: colors.grid } },
      },
      series: [
        {
          name: 'anomaly score', type: 'line', showSymbol: false, data: pts.map((p) => [p.t, Number.isFinite(p.anomaly_score) ? p.anomaly_score : null]),
          lineStyle: { color: colors.score, width: 1.6 }, itemStyle: { color: colors.score },
          areaStyle: { color: colors.score, opacity: 0.12 },
          markLine: {
            symbol: 'none', silent: true, data: [{ yAxis: 0.5 }],
            lineStyle: { color: colors.alert, type: 'dashed', opacity: 0.6 },
            label: { formatter: '0.5', color: colors.muted, position: 'insideEndTop' },
          },
        },
        { name: 'events', type: 'scatter', data: marks, symbol: 'diamond', symbolSize: 10, tooltip: { trigger: 'item' } },
      ],
    }, { notMerge: true });
    scoreEl.dataset.events = String(marks.length);
  }

  function drawHeatmap(data) {
    const bounds = data.bounds || [];
    const times = (data.times || []).map((t) => Date.parse(t));
    const cells = data.cells || [];
    heatEl.dataset.cells = String(cells.length);
    heatEl.dataset.rows = String(Math.max(0, bounds.length - 1));
    heatEl.dataset.columns = String(times.length);
    window.__tailguard.data.heatmap = data;
    if (!cells.length) {
      chartIn(heatEl).clear();
      throw Object.assign(new Error('No latency buckets in this window.'), {
        empty: true,
        hint: 'The heatmap fills in from live traffic; imported history (tailguard import) has percentiles only.',
      });
    }
    const rows = bounds.length - 1;
    const rowLabels = [];
    const labelled = new Set();
    for (let r = 0; r < rows; r++) {
      const lo = bounds[r] * 1000, hi = bounds[r + 1] * 1000;
      // Label the row holding a power of ten (and 2x, 5x when there are few decades).
      const decade = Math.pow(10, Math.ceil(Math.log10(lo)));
      let label = '';
      for (const m of [1, 2, 5]) {
        const v = decade * m;
        if (v > lo && v <= hi && (m === 1 || rows < 30)) { label = msAxis(v); break; }
        const v2 = decade / 10 * m;
        if (v2 > lo && v2 <= hi && (m === 1 || rows < 30)) { label = msAxis(v2); break; }
      }
      rowLabels.push(label);
      if (label) labelled.add(r);
    }
    let max = 1;
    const counts = cells.map((c) => c[2]).sort((a, b) => a - b);
    if (counts.length) max = Math.max(1, counts[Math.floor(counts.length * 0.98)]);
    const chart = chartIn(heatEl, 'heatmap');
    chart.setOption({
      animation: false,
      textStyle: { color: colors.text, fontFamily: 'inherit' },
      grid: { left: 64, right: 80, top: 12, bottom: 28 },
      tooltip: {
        backgroundColor: '#161b22', borderColor: colors.axis, textStyle: { color: colors.text, fontSize: 12 },
        formatter: (p) => {
          const [c, r, n] = p.value;
          const end = times[c];
          const stepMs = (data.step_seconds || 0) * 1000;
          return `${tooltipTitle(end)}${stepMs ? ` <span style="color:${colors.muted}">(${age(end - stepMs, end)} column)</span>` : ''}<br>`
            + `${ms(bounds[r])} – ${ms(bounds[r + 1])}: <b>${n}</b> requests`;
        },
      },
      xAxis: {
        type: 'category', data: times, axisLine: { lineStyle: { color: colors.axis } },
        axisLabel: { color: colors.muted, hideOverlap: true, formatter: (v) => axisTime(Number(v), win(times)) },
        axisTick: { show: false }, splitArea: { show: false },
      },
      yAxis: {
        type: 'category', data: rowLabels,
        axisLabel: { color: colors.muted, interval: (i) => labelled.has(i) },
        axisTick: { alignWithLabel: true, interval: (i) => labelled.has(i) },
        axisLine: { lineStyle: { color: colors.axis } },
      },
      visualMap: {
        type: 'continuous', min: 0, max, calculable: false, orient: 'vertical', right: 4, top: 12, bottom: 28,
        itemWidth: 12, text: [`${max}+`, '0'], textStyle: { color: colors.muted, fontSize: 11 },
        inRange: { color: ['#0d1b2a', '#1f4e79', '#2a9d8f', '#e9c46a', '#f4a261', '#e76f51'] },
      },
      series: [{ type: 'heatmap', data: cells, progressive: 0, emphasis: { itemStyle: { borderColor: '#fff', borderWidth: 1 } } }],
    }, { notMerge: true });
  }

  function drawTimeline(events) {
    if (!changed(cache, 'events', events.map((e) => e.id))) return;
    timeline.dataset.count = String(events.length);
    if (!events.length) {
      setChildren(timeline, emptyState('No anomalies or alert transitions in this window.'));
      return;
    }
    const list = events.slice().reverse().slice(0, 200);
    setChildren(timeline, h('ol', { class: 'events' }, list.map((e) =>
      h('li', { class: `event type-${e.type} kind-${e.kind || ''}`, dataset: { time: e.time, type: e.type, kind: e.kind || '' } },
        timeEl(e.time),
        h('span', { class: `tag tag-${e.type}` }, e.type === 'alert' ? (e.kind || 'alert').replace('_', '-') : e.type),
        e.severity ? h('span', { class: `sev sev-${e.severity}` }, e.severity) : null,
        e.rule ? h('span', { class: 'rule' }, e.rule) : null,
        h('span', { class: 'msg', title: e.message || '' }, e.message || ''),
        Number.isFinite(e.value) && Number.isFinite(e.threshold)
          ? h('span', { class: 'muted vt' }, `${statValue(e.statistic, e.value, e.unit)} > ${statValue(e.statistic, e.threshold, e.unit)}`) : null))),
    events.length > 200 ? h('p', { class: 'muted' }, `${events.length - 200} older events not shown.`) : null);
  }

  function drawSamples(data, current) {
    let list = data.samples || [];
    // Without the server's series filter: keep the requests of this series' route, model, version.
    const l = current.labels || {};
    list = list.filter((x) => (!l.route || !x.route || x.route === l.route)
      && (!l.model || !x.model || x.model === l.model)
      && (!l.version || !x.version || x.version === l.version || (x.version === 'default' && !l.version)));
    list = list.sort((a, b) => (b.total || 0) - (a.total || 0)).slice(0, 20);
    if (!changed(cache, 'samples', list)) return;
    samples.dataset.count = String(list.length);
    if (!list.length) {
      setChildren(samples, emptyState('No sampled requests in this window.',
        'The sampler keeps every request under 10/s, about 1 % above 100/s, and always the slow and failed ones.'));
      return;
    }
    const stageNames = [];
    for (const s of list) for (const k of Object.keys(s.stages || {})) if (!stageNames.includes(k)) stageNames.push(k);
    const parts = (s) => breakdown(s);
    const legendStages = [...new Set(list.flatMap((s) => parts(s).map((p) => p.name)))];
    setChildren(samples,
      h('div', { class: 'stage-legend', 'aria-hidden': 'true' }, legendStages.map((n) =>
        h('span', null, h('i', { style: { background: stageColor(n) } }), n))),
      h('table', { class: 'grid samples-table' },
        h('thead', null, h('tr', null,
          h('th', { scope: 'col' }, 'Start'),
          h('th', { scope: 'col', class: 'num' }, 'Total'),
          h('th', { scope: 'col' }, 'Stages'),
          h('th', { scope: 'col', class: 'num' }, 'Status'),
          h('th', { scope: 'col', class: 'num' }, 'Input size'),
          h('th', { scope: 'col' }, 'Kept because'),
          h('th', { scope: 'col' }, 'Trace id'))),
        h('tbody', null, list.map((s) => {
          const p = parts(s);
          const max = list[0].total || s.total || 1;
          const desc = p.map((x) => `${x.name} ${ms(x.seconds)}`).join(', ');
          return h('tr', { class: s.failed ? 'row-failed' : null },
            h('td', null, timeEl(s.start)),
            h('td', { class: 'num strong' }, ms(s.total)),
            h('td', { class: 'stage-cell' },
              h('div', { class: 'stage-bar', style: { width: `${Math.max(4, (s.total / max) * 100)}%` }, title: desc, role: 'img', 'aria-label': desc },
                p.map((x) => h('span', { style: { width: `${(x.seconds / (s.total || 1)) * 100}%`, background: stageColor(x.name) } })))),
            h('td', { class: `num${s.failed ? ' bad' : ''}` }, s.status ?? '–'),
            h('td', { class: 'num' }, s.input_size ?? '–'),
            h('td', { class: 'muted' }, s.reason || ''),
            h('td', null, s.trace_id ? h('code', { class: 'trace' }, s.trace_id) : '–'));
        }))));
  }

  function update() {
    cache.head = null;
    cache.events = null;
    cache.samples = null;
  }

  return {
    el,
    title: () => 'Series',
    refresh,
    update,
    destroy() {},
  };
}

const STAGE_COLORS = {
  gateway: '#8b949e', feature_fetch: '#a371f7', preprocess: '#58a6ff', inference: '#f0883e',
  postprocess: '#3fb950', queue: '#d29922', 'upstream (other)': '#30506e', upstream: '#388bfd',
};
const extra = ['#db61a2', '#2a9d8f', '#e9c46a', '#79c0ff', '#ffa198'];
function stageColor(name) {
  if (STAGE_COLORS[name]) return STAGE_COLORS[name];
  let hsh = 0;
  for (const c of name) hsh = (hsh * 31 + c.charCodeAt(0)) >>> 0;
  return extra[hsh % extra.length];
}

function win(times) {
  return times.length ? times[times.length - 1] - times[0] : 0;
}

function axisTime(t, spanMs) {
  const d = new Date(t);
  const two = (n) => String(n).padStart(2, '0');
  if (spanMs > 2 * DAY * 1000) return `${d.getMonth() + 1}/${d.getDate()} ${two(d.getHours())}:00`;
  if (spanMs > 3600 * 1000) return `${two(d.getHours())}:${two(d.getMinutes())}`;
  return `${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}`;
}

// Log axis bounds at 1-2-5 steps around the data, tighter than whole decades.
function logFloor(v) {
  if (!(v > 0)) return undefined;
  const d = Math.pow(10, Math.floor(Math.log10(v)));
  return [5, 2, 1].map((m) => m * d).find((x) => x <= v) ?? d;
}
function logCeil(v) {
  if (!(v > 0)) return undefined;
  const d = Math.pow(10, Math.floor(Math.log10(v)));
  return [1, 2, 5, 10].map((m) => m * d).find((x) => x >= v) ?? 10 * d;
}

function tooltipLines(ps, fmt) {
  const list = (Array.isArray(ps) ? ps : [ps]).filter((p) => p.value && p.value[1] !== null && p.seriesName !== 'alert transitions');
  if (!list.length) return '';
  const t = list[0].value[0];
  return `${tooltipTitle(t)}<br>${list.map((p) => `${p.marker}${p.seriesName} <b>${fmt(p.value[1])}</b>`).join('<br>')}`;
}

function escapeHtml(s) {
  return String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);
}
