#!/bin/sh
# examples/grafana-dashboard.json against a real Prometheus (Debian's prometheus) scraping a real
# `tailguard serve` with traffic: every panel's and annotation's expression, with the template
# variables substituted, runs without error through /api/v1/query, the request panels return data,
# and every template variable's label_values() query finds values.
# Usage: grafana_queries.sh TAILGUARD TG_TEST_UPSTREAM
set -eu
tailguard=${1:?usage: grafana_queries.sh TAILGUARD TG_TEST_UPSTREAM}
upstream=${2:?usage: grafana_queries.sh TAILGUARD TG_TEST_UPSTREAM}
here=$(cd "$(dirname "$0")" && pwd)
dashboard=$here/../../examples/grafana-dashboard.json
. "$here/harness.sh"
need prometheus curl node

start_upstream "$upstream"

# A store (the outbox and notification metrics) and a rule that fires on the slow route.
cat >"$dir/rules.yaml" <<YAML
defaults:
  debounce: {pre_alert_after: 2, alert_after: 2s, resolve_after: 5m}
rules:
  - name: slow_route
    select: 'tailguard_request_duration_seconds{route="slow", stage="total"}'
    above: 20ms
YAML
cat >"$dir/gateway.yaml" <<YAML
listen: 127.0.0.1:0
threads: 2
rules_file: rules.yaml
store:
  path: tailguard.db
routes:
  - name: fraud
    prefix: /fraud/
    upstream: "$up"
    model: risk-control
  - name: slow
    prefix: /slow/
    upstream: "$up"
    model: ranker
YAML
"$tailguard" serve --config "$dir/gateway.yaml" >"$dir/gateway.log" 2>&1 &
pids="$pids $!"
wait_until "tailguard serve" 30 listening "$dir/gateway.log"
gw=$(sed -n 's/.*listening on \([0-9.:]*\).*/\1/p' "$dir/gateway.log")
echo "gateway at $gw, upstream at $up"

# Traffic: a fast route with a few 500s and a slow one, with Server-Timing stages.
"$tailguard" loadgen "http://$gw/fraud/score" --rate 30 --duration 10m -q \
  -H 'X-Test-Delay-Ms:3' -H 'X-Test-Server-Timing:feature;dur=1, infer;dur=1.5' >"$dir/load-fast.log" 2>&1 &
pids="$pids $!"
"$tailguard" loadgen "http://$gw/slow/x" --rate 10 --duration 10m -q -H 'X-Test-Delay-Ms:30' \
  >"$dir/load-slow.log" 2>&1 &
traffic=$!
"$tailguard" loadgen "http://$gw/fraud/score" --rate 2 --duration 10m -q -H 'X-Test-Status:500' \
  >"$dir/load-errors.log" 2>&1 &
pids="$pids $!"

start_prometheus "$gw"
prom=$prometheus_url

# Until the rates over the panels' interval have data for both routes and the alert has fired.
has_value() {
  curl -sf -G "$prom/api/v1/query" --data-urlencode "query=$1" | grep -q '"value":\['
}
wait_until "scraped request rates" 60 has_value \
  'count(sum by (route) (rate(tailguard_request_duration_seconds_bucket{stage="total"}[15s]))) == 2'
wait_until "the alert in the scrape" 60 has_value 'tailguard_alerts_active{state="alert"} > 0'
wait_until "failures in the scrape" 60 has_value 'rate(tailguard_request_failures_total[15s]) > 0'

cat >"$dir/check.mjs" <<'JS'
// Runs every query of the dashboard against Prometheus.
import { readFileSync } from 'node:fs';
const [prom, file] = process.argv.slice(2);
const dash = JSON.parse(readFileSync(file, 'utf8'));
const vars = { job: '.*', model: '.*', route: '.*', stage: 'total', __rate_interval: '15s', __interval: '15s' };
const subst = (e) => e.replace(/\$\{?(\w+)\}?/g, (m, v) => {
  if (!(v in vars)) throw new Error(`unknown variable ${m} in ${e}`);
  return vars[v];
});
let failed = 0;
const fail = (m) => { console.log(`FAIL: ${m}`); failed++; };
async function query(expr) {
  const res = await fetch(`${prom}/api/v1/query?${new URLSearchParams({ query: expr })}`);
  return res.json();
}
const targets = [];
for (const p of dash.panels) {
  for (const t of p.targets || []) targets.push({ where: `panel "${p.title}" ${t.refId}`, expr: t.expr });
  for (const sub of p.panels || []) for (const t of sub.targets || []) targets.push({ where: `panel "${sub.title}" ${t.refId}`, expr: t.expr });
}
for (const a of dash.annotations?.list || []) if (a.expr) targets.push({ where: `annotation "${a.name}"`, expr: a.expr });
if (targets.length < 20) fail(`only ${targets.length} targets in ${file}`);
for (const t of targets) {
  const expr = subst(t.expr);
  const r = await query(expr);
  if (r.status !== 'success') { fail(`${t.where}: ${r.errorType}: ${r.error}\n  ${expr}`); continue; }
  const n = r.data.result.length;
  // Every panel on the requests must show data with traffic flowing.
  const needsData = /tailguard_request(s_total|_duration_seconds|_failures_total)/.test(expr);
  if (needsData && n === 0) fail(`${t.where}: no data\n  ${expr}`);
  else console.log(`ok ${String(n).padStart(3)} series  ${t.where}`);
}
// Template variables: label_values(selector, label) finds values.
for (const v of dash.templating.list) {
  if (v.type !== 'query') continue;
  const q = typeof v.query === 'string' ? v.query : v.query.query;
  const m = /^label_values\((.*),\s*(\w+)\)$/.exec(q);
  if (!m) { fail(`variable ${v.name}: not label_values(): ${q}`); continue; }
  const res = await fetch(`${prom}/api/v1/label/${m[2]}/values?${new URLSearchParams({ 'match[]': subst(m[1]) })}`);
  const r = await res.json();
  if (r.status !== 'success') fail(`variable ${v.name}: ${r.error}`);
  else if (!r.data.length) fail(`variable ${v.name}: no values for ${q}`);
  else console.log(`ok variable ${v.name}: ${r.data.join(', ')}`);
}
if (dash.schemaVersion < 36) fail(`schemaVersion ${dash.schemaVersion}`);
if (!dash.templating.list.some((v) => v.name === 'DS_PROMETHEUS' && v.type === 'datasource')) fail('no DS_PROMETHEUS variable');
process.exit(failed ? 1 : 0);
JS
node "$dir/check.mjs" "$prom" "$dashboard" || fail "dashboard queries failed"
echo "grafana queries: ok"
