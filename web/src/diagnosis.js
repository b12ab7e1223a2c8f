// The diagnosis panel's arithmetic: pure functions, tested with node --test
// (tests/web/diagnosis.test.mjs).

// The median of the finite numbers in xs; null when there are none.
export function median(xs) {
  const v = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (!v.length) return null;
  const m = v.length >> 1;
  return v.length % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

// The per-layer heatmap: one row per layer, one column per time step, each cell the layer's P99
// over its own baseline (the median P99 before `onsetMs`), so a layer that doubled reads 2
// whatever its size: a 20 us layer and a 5 ms one share one colour scale. `layers` is
// [{name, points: [{t, p99}]}] with the same times in each (the history endpoint's steps).
// Returns {times, names, cells: [[column, row, ratio, p99]], worst: {name, ratio} | null}.
// Layers without a baseline (no point before the onset) are left out: nothing to compare.
export function layerMatrix(layers, onsetMs) {
  const times = [...new Set(layers.flatMap((l) => l.points.map((p) => p.t)))].sort((a, b) => a - b);
  const column = new Map(times.map((t, i) => [t, i]));
  const rows = [];
  for (const l of layers) {
    const base = median(l.points.filter((p) => p.t < onsetMs).map((p) => p.p99));
    if (!(base > 0)) continue;
    const cells = [];
    let peak = 0;
    for (const p of l.points) {
      if (!Number.isFinite(p.p99)) continue;
      const ratio = p.p99 / base;
      cells.push([column.get(p.t), ratio, p.p99]);
      if (p.t >= onsetMs) peak = Math.max(peak, ratio);
    }
    rows.push({ name: l.name, base, cells, peak });
  }
  // The layer that moved most on top (ECharts draws the first category at the bottom).
  rows.sort((a, b) => a.peak - b.peak || b.name.localeCompare(a.name));
  const cells = [];
  rows.forEach((r, row) => {
    for (const [col, ratio, p99] of r.cells) cells.push([col, row, ratio, p99]);
  });
  const top = rows[rows.length - 1];
  return {
    times, names: rows.map((r) => r.name), cells,
    worst: top ? { name: top.name, ratio: top.peak } : null,
  };
}

// The input-size drift of a model: its baseline (the medians of P50 and P99 before the onset) and
// the largest P50 and P99 since, with their ratios. `points` are the history endpoint's
// [{t, p50, p99}]. null when there is no baseline.
export function inputDrift(points, onsetMs) {
  const before = points.filter((p) => p.t < onsetMs);
  const after = points.filter((p) => p.t >= onsetMs);
  const b50 = median(before.map((p) => p.p50));
  const b99 = median(before.map((p) => p.p99));
  if (!(b50 > 0) || !(b99 > 0)) return null;
  const peak = (k) => after.reduce((m, p) => (Number.isFinite(p[k]) ? Math.max(m, p[k]) : m), 0);
  const p50 = peak('p50');
  const p99 = peak('p99');
  return { baseline_p50: b50, baseline_p99: b99, peak_p50: p50, peak_p99: p99, ratio_p50: p50 / b50, ratio_p99: p99 / b99 };
}

// The window the panel's charts cover for an episode: ten minutes before it started (the
// baseline the diagnosis used is in there) to five minutes after it ended, or now.
export function episodeWindow(episode, nowMs) {
  const start = Date.parse(episode.started_at);
  const end = episode.ended_at ? Math.min(nowMs, Date.parse(episode.ended_at) + 300e3) : nowMs;
  const fromMs = (Number.isFinite(start) ? start : nowMs) - 600e3;
  return { fromMs, toMs: Math.max(end, fromMs + 60e3) };
}

// A history step for a window: about 120 columns, in whole seconds, at least 1 s.
export function stepFor(fromMs, toMs) {
  return `${Math.max(1, Math.round((toMs - fromMs) / 1000 / 120))}s`;
}
