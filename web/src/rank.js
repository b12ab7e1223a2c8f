// How the overview orders and groups its rows: pure functions, tested with node --test
// (tests/web/rank_test.mjs).

const RANK = { alert: 3, no_data: 3, pre_alert: 2, normal: 1 };
const SEVERITY = { emergency: 3, critical: 2, warning: 1 };

// How far a series' P99 is from its baseline (the P99 the forecast expects now), as a ratio:
// 20 for a P99 twenty times its baseline, 0.5 for half of it; null when either is unknown.
export function deviation(s) {
  const p = s?.p99, b = s?.baseline_p99;
  if (!Number.isFinite(p) || !Number.isFinite(b) || b <= 0) return null;
  return p / b;
}

// Distance from normal on a log scale, so that 10x above and 10x below weigh the same: a
// stage whose P99 collapsed is as suspicious as one that exploded.
function distance(s) {
  const d = deviation(s);
  return d === null || d <= 0 ? 0 : Math.abs(Math.log(d));
}

// Worst first: live series before those only in the store, then alert state, then severity,
// then the distance from the baseline (a stage at 30x its baseline comes before a healthy row,
// whether or not a rule covers it), then the anomaly score, then a latency's P99 (sizes and
// counts do not compare with seconds: they come after the latencies there).
export function worstFirst(a, b) {
  const live = (x) => (x.live === false ? 0 : 1);
  const latencyP99 = (x) => (!x.unit || x.unit === 'seconds' ? (x.p99 || 0) : -1);
  return live(b) - live(a)
    || (RANK[b.alert_state] || 0) - (RANK[a.alert_state] || 0)
    || (SEVERITY[b.severity] || 0) - (SEVERITY[a.severity] || 0)
    || distance(b) - distance(a)
    || (b.anomaly_score || 0) - (a.anomaly_score || 0)
    || latencyP99(b) - latencyP99(a)
    || String(a.key).localeCompare(String(b.key));
}

export function isLayer(s) {
  return String(s?.labels?.stage || '').startsWith('layer_');
}

// The rows of the overview: every series but the per-layer ones, and one group row per model
// (its labels but the stage) holding that model's layer series, worst first. A group stands
// for its worst member when ranked. Returns [{series} | {group: {key, labels, members}}].
export function overviewRows(series) {
  const groups = new Map();
  const rows = [];
  for (const s of series) {
    if (!isLayer(s)) {
      rows.push({ series: s, rank: s });
      continue;
    }
    const labels = { ...(s.labels || {}) };
    delete labels.stage;
    const key = JSON.stringify(Object.entries(labels).sort());
    let g = groups.get(key);
    if (!g) {
      g = { key: `layers:${key}`, labels, members: [] };
      groups.set(key, g);
      rows.push({ group: g });
    }
    g.members.push(s);
  }
  for (const r of rows) {
    if (!r.group) continue;
    r.group.members.sort(worstFirst);
    r.rank = r.group.members[0];
  }
  rows.sort((a, b) => worstFirst(a.rank, b.rank));
  return rows;
}
