// How a sampled request's time divides into stages, for the stage bars.

// The stage bar: gateway, then the upstream's own stages (Server-Timing) in the order a request
// meets them (queue wait first), then the rest of the upstream time; the parts add up to the
// total. first_token and inter_token overlap the others and are not parts.
const INNER = ['queue', 'feature_fetch', 'preprocess', 'inference', 'postprocess'];
export function breakdown(s) {
  const st = s.stages || {};
  const out = [];
  if (st.gateway > 0) out.push({ name: 'gateway', seconds: st.gateway });
  let inner = 0;
  const innerNames = Object.keys(st).filter((k) => !['gateway', 'upstream', 'total', 'first_token', 'inter_token'].includes(k))
    .sort((a, b) => (INNER.indexOf(a) + 1 || 99) - (INNER.indexOf(b) + 1 || 99));
  for (const k of innerNames) {
    if (st[k] > 0) { out.push({ name: k, seconds: st[k] }); inner += st[k]; }
  }
  const up = st.upstream > 0 ? st.upstream : Math.max(0, (s.total || 0) - (st.gateway || 0));
  if (up - inner > 0) out.push({ name: innerNames.length ? 'upstream (other)' : 'upstream', seconds: up - inner });
  return out;
}
