// Formatting of latencies, rates, ratios and times for people.

// A latency in seconds as "840 µs", "610 µs", "12.3 ms", "1.25 s"; "–" when missing.
export function ms(seconds) {
  if (seconds === null || seconds === undefined || !Number.isFinite(seconds)) return '–';
  const m = seconds * 1000;
  if (m === 0) return '0 ms';
  // Three significant digits, trailing zeros of the fraction dropped, never those of the integer
  // part (610 stays 610); 999.5 µs rounds to 1000 µs, shown as 1.00 ms.
  if (m < 1) {
    const us = Number((m * 1000).toPrecision(3));
    return us >= 1000 ? '1.00 ms' : `${us} µs`;
  }
  if (m < 1000) return `${m < 10 ? m.toFixed(2) : m < 100 ? m.toFixed(1) : m.toFixed(0)} ms`;
  return `${(m / 1000).toFixed(m < 10000 ? 2 : 1)} s`;
}

// An axis label for a latency in milliseconds: "1 ms", "10 ms", "0.1 ms", "1 s".
export function msAxis(milliseconds) {
  if (!Number.isFinite(milliseconds)) return '';
  if (milliseconds === 0) return '0';
  if (milliseconds >= 1000) return `${trim(milliseconds / 1000)} s`;
  if (milliseconds < 1) return `${trim(milliseconds * 1000)} µs`;
  return `${trim(milliseconds)} ms`;
}

function trim(v) {
  return String(Number(v.toPrecision(3)));
}

// A size in bytes with three significant digits in a binary unit: "512 B", "1.50 KiB", "12.3 MiB".
export function bytes(n) {
  return scaled(n, 1024, ['B', 'KiB', 'MiB', 'GiB', 'TiB'], ' ');
}

// A count with three significant digits: "7", "2.50", "1.50k", "12.3M".
export function count(n) {
  return scaled(n, 1000, ['', 'k', 'M', 'G', 'T'], '');
}

function scaled(n, step, units, sep) {
  if (n === null || n === undefined || !Number.isFinite(n)) return '–';
  let v = n;
  let i = 0;
  while (Math.abs(v) >= step && i < units.length - 1) {
    v /= step;
    i++;
  }
  const whole = i === 0 && Number.isInteger(v);
  const text = whole || Math.abs(v) >= 100 ? v.toFixed(0) : v.toFixed(Math.abs(v) >= 10 ? 1 : 2);
  return `${text}${units[i] ? sep + units[i] : ''}`;
}

// How the values of a series show, by the unit the API gives it ("seconds", "bytes", "count";
// latencies when absent): `fmt` writes a value in that unit; charts plot value * `scale` on an
// axis called `axisName`, labelled by `axis`; `what` names what a heatmap or a count holds.
export function unitOf(series) {
  switch (series?.unit) {
    case 'bytes':
      return { unit: 'bytes', fmt: bytes, scale: 1, axis: bytes, axisName: 'bytes', latency: false };
    case 'count':
      return { unit: 'count', fmt: count, scale: 1, axis: count, axisName: '', latency: false };
    default:
      return { unit: 'seconds', fmt: ms, scale: 1000, axis: msAxis, axisName: 'ms', latency: true };
  }
}

export function rate(perSecond) {
  if (perSecond === null || perSecond === undefined || !Number.isFinite(perSecond)) return '–';
  if (perSecond >= 100) return perSecond.toFixed(0);
  if (perSecond >= 10) return perSecond.toFixed(1);
  return perSecond.toFixed(2);
}

export function percent(ratio) {
  if (ratio === null || ratio === undefined || !Number.isFinite(ratio)) return '–';
  const p = ratio * 100;
  if (p === 0) return '0 %';
  if (p < 0.1) return '<0.1 %';
  return `${p < 10 ? p.toFixed(1) : p.toFixed(0)} %`;
}

export function score(s) {
  if (s === null || s === undefined || !Number.isFinite(s)) return '–';
  return s.toFixed(2);
}

// A value of an alert rule's statistic in that statistic's unit: percentiles (p50, p90, p99,
// p99.9) in the series' `unit` (latencies as ms(), "bytes", "count"; latencies when absent),
// "rate" in req/s, "error_ratio" in %, "anomaly_score" as a bare number.
export function statValue(statistic, v, unit) {
  switch (statistic) {
    case 'rate': return v === null || v === undefined || !Number.isFinite(v) ? '–' : `${rate(v)} ${!unit || unit === 'seconds' ? 'req/s' : '/s'}`;
    case 'error_ratio': return percent(v);
    case 'anomaly_score': return score(v);
    default: return unitOf({ unit }).fmt(v);
  }
}

// Times for people show their date and zone (docs/times.md): the browser's zone here, UTC on
// hover. "Dec 2, 14:03:07 GMT+8".
const dateTimeFmt = new Intl.DateTimeFormat(undefined, {
  month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', second: '2-digit',
  hour12: false, timeZoneName: 'short',
});

function toDate(t) {
  if (t instanceof Date) return t;
  if (typeof t === 'number') return new Date(t);
  return new Date(t);
}

// Local time with its date and zone: "Dec 2, 14:03:07 GMT+8" ("Dec 2, 14:03:07 UTC" in UTC).
export function localTime(t) {
  if (t === null || t === undefined) return '–';
  const d = toDate(t);
  if (Number.isNaN(d.getTime())) return String(t);
  return dateTimeFmt.format(d);
}

// The UTC form shown on hover.
export function utc(t) {
  if (t === null || t === undefined) return '';
  const d = toDate(t);
  if (Number.isNaN(d.getTime())) return '';
  return `${d.toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z').replace('Z', ' UTC')}`;
}

// "3m 12s ago", "2h 5m", "4d 3h".
export function age(from, to = Date.now()) {
  const s = Math.max(0, Math.round((toDate(to) - toDate(from)) / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${s % 60}s`;
  if (s < 86400) return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
  return `${Math.floor(s / 86400)}d ${Math.floor((s % 86400) / 3600)}h`;
}

// Labels of a series as "model=risk route=fraud stage=total", in a stable order.
const labelOrder = ['model', 'version', 'route', 'stage'];
export function labelPairs(labels) {
  const keys = Object.keys(labels || {}).sort((a, b) => {
    const ia = labelOrder.indexOf(a), ib = labelOrder.indexOf(b);
    return (ia < 0 ? 99 : ia) - (ib < 0 ? 99 : ib) || a.localeCompare(b);
  });
  return keys.map((k) => [k, labels[k]]);
}

// Parses `metric{a="b",c="d"}` into {metric, labels}.
export function parseKey(key) {
  const m = /^([^{]*)\{(.*)\}$/.exec(key || '');
  if (!m) return { metric: key || '', labels: {} };
  const labels = {};
  const re = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;
  let x;
  while ((x = re.exec(m[2])) !== null) labels[x[1]] = x[2].replace(/\\(.)/g, (_, c) => (c === 'n' ? '\n' : c));
  return { metric: m[1], labels };
}

// A Prometheus selector matching exactly these labels: {model="risk",stage="total"}.
export function selector(labels) {
  const parts = labelPairs(labels).map(([k, v]) =>
    `${k}="${String(v).replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`);
  return `{${parts.join(',')}}`;
}
