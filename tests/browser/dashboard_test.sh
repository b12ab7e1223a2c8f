#!/bin/sh
# Browser test of the dashboard: a real `tailguard serve` on loopback (store, API token, rules
# that fire within seconds) with recorded history imported, steady traffic and then an injected
# latency spike; then tests/browser/dashboard.test.mjs drives Debian's chromium through
# playwright-core: every view renders, the heatmap has cells, the spike is on the timeline,
# acknowledging without the token is refused and with it works, a silence is created and expired,
# the alert's diagnosis names the feature stage (a dependency) with a sparkline against its baseline,
# and `tailguard report` of the alert renders in Chromium.
# Screenshots of every view go to $TG_BROWSER_ARTIFACTS (default: build/<preset>/browser-artifacts,
# next to the tailguard binary's build tree).
# Usage: dashboard_test.sh TAILGUARD TG_TEST_UPSTREAM
set -eu
tailguard=${1:?usage: dashboard_test.sh TAILGUARD TG_TEST_UPSTREAM}
upstream=${2:?usage: dashboard_test.sh TAILGUARD TG_TEST_UPSTREAM}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
tailguard=$(cd "$(dirname "$tailguard")" && pwd)/$(basename "$tailguard")
. "$root/tests/integration/harness.sh"
need curl node awk
chromium=${CHROMIUM:-/usr/bin/chromium}
[ -x "$chromium" ] || { echo "FAIL: $chromium not installed (apt-get install chromium; scripts/install-deps)"; exit 1; }
[ -d "$root/web/node_modules/playwright-core" ] ||
  { echo "FAIL: web/node_modules/playwright-core missing: run (cd web && npm ci)"; exit 1; }
# build/<preset>/apps/tailguard/tailguard -> build/<preset>/browser-artifacts
artifacts=${TG_BROWSER_ARTIFACTS:-$(cd "$(dirname "$tailguard")/../.." && pwd)/browser-artifacts}
mkdir -p "$artifacts"
rm -f "$artifacts"/*.png  # a passing run leaves no screenshot of an earlier failure
token=${TG_TEST_TOKEN:-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')}

start_upstream "$upstream"
# A second tg_test_upstream receives the notifications (webhook), recorded for the page test to
# follow their dashboard links.
"$upstream" --listen 127.0.0.1:0 >"$dir/hook.log" 2>&1 &
pids="$pids $!"
wait_until "the webhook receiver" 30 listening "$dir/hook.log"
hook=$(sed -n 's/^listening on //p' "$dir/hook.log")

# fraud_slow fires a few seconds after the fraud route's P99 passes 40 ms: the spike below makes
# it 80 ms. The built-in relative tiers watch every total too.
cat >"$dir/rules.yaml" <<YAML
defaults:
  debounce: {pre_alert_after: 2, alert_after: 3s, resolve_after: 5m}
route:
  receiver: hook
  group_wait: 0s
receivers:
  - name: hook
    webhook: {url: "http://$hook/hook"}
rules:
  - name: fraud_slow
    select: 'tailguard_request_duration_seconds{route="fraud", stage="total"}'
    above: 40ms
    severity: critical
YAML
cat >"$dir/gateway.yaml" <<YAML
listen: 127.0.0.1:0
threads: 2
tick: 1s
rules_file: rules.yaml
api_token: $token
store:
  path: tailguard.db
routes:
  - name: fraud
    prefix: /fraud/
    protocol: http
    upstream: "$up"
    model: risk-control
    version: "2025-11"
  - name: triton
    prefix: /v2/
    protocol: kserve
    upstream: "$up"
YAML

# Recorded history: a week and a day of per-minute points of the fraud route (so the 1 d and
# 7 d overlays have data) and of a model that is not live any more (listed greyed).
# The format of `tailguard import` (docs/import.md): time (Unix seconds), the series key
# (RFC 4180 quoted), statistics in seconds.
gen_history_csv() {
  now=$(date +%s)
  awk -v now="$now" 'BEGIN {
    q = "\"\""
    fraud = "\"tailguard_request_duration_seconds{model=" q "risk-control" q ",route=" q "fraud" q ",stage=" q "total" q ",version=" q "2025-11" q "}\""
    legacy = "\"tailguard_request_duration_seconds{model=" q "legacy-ranker" q ",route=" q "rank" q ",stage=" q "total" q ",version=" q "1" q "}\""
    print "time,series,count,p50,p90,p99,p999,mean,max"
    start = now - 8 * 86400; start -= start % 60
    for (t = start; t < now - 120; t += 60) {
      # A daily cycle: slower in the (UTC) afternoon.
      d = 1 + 0.3 * sin((t % 86400) / 86400 * 6.2832)
      printf "%d,%s,%d,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f\n", t, fraud, 1200,
        0.006 * d, 0.008 * d, 0.012 * d, 0.016 * d, 0.0065 * d, 0.02 * d
      if (t > now - 86400)
        printf "%d,%s,%d,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f\n", t, legacy, 300,
          0.02 * d, 0.03 * d, 0.05 * d, 0.07 * d, 0.022 * d, 0.09 * d
    }
  }'
}
gen_history_csv >"$dir/history.csv"
"$tailguard" import "$dir/history.csv" --store "$dir/tailguard.db" --create >"$dir/import.log" 2>&1 ||
  fail "tailguard import failed: $(tail -5 "$dir/import.log")"
echo "imported $(wc -l <"$dir/history.csv") history rows"
imported=1

"$tailguard" serve --config "$dir/gateway.yaml" >"$dir/gateway.log" 2>&1 &
pids="$pids $!"
wait_until "tailguard serve" 30 listening "$dir/gateway.log"
gw=$(sed -n 's/.*listening on \([0-9.:]*\).*/\1/p' "$dir/gateway.log")
wait_until "tailguard to be ready" 30 curl -sf "http://$gw/readyz"
echo "tailguard at $gw, upstream at $up"

# Steady traffic: the fraud route at about 8 ms, a KServe model at about 20 ms, with stage
# timings from the upstream's Server-Timing header. Open loop (tailguard loadgen).
body='{"inputs":[{"name":"x","shape":[1,4],"datatype":"FP32","data":[1,2,3,4]}]}'
load() { # URL RATE DELAY_MS LOG [FEATURE_MS]
  "$tailguard" loadgen "$1" --rate "$2" --duration 10m --distribution poisson -q \
    -H "X-Test-Delay-Ms:$3" -H "X-Test-Server-Timing:feature;dur=${5:-1.5}, infer;dur=3" \
    -H 'Content-Type:application/json' --body "$body" >"$dir/$4" 2>&1 &
}
load "http://$gw/fraud/score" 40 8 load-fraud.log
fraud_load=$!
load "http://$gw/v2/models/resnet50/infer" 15 20 load-resnet.log
traffic=$!
pids="$pids $fraud_load"

series_has() { curl -sf "http://$gw/api/v1/series" | grep -q "$1"; }
wait_until "the fraud series" 30 series_has '"route":"fraud","stage":"total"'
# A baseline before the spike: enough for the heatmap, the percentiles and the detectors.
sleep_until_requests() { # N: until the fraud total has counted N requests since the start
  i=0
  while :; do
    n=$(curl -sf -G "http://$gw/api/v1/series" --data-urlencode 'cumulative=1' \
      --data-urlencode 'match={route="fraud",stage="total"}' |
      sed -n 's/.*"cumulative":{"count":\([0-9]*\).*/\1/p')
    [ "${n:-0}" -ge "$1" ] && return 0
    i=$((i + 1)); [ "$i" -le 600 ] || fail "the fraud route never reached $1 requests"
    sleep 0.1
  done
}
sleep_until_requests 600

# The spike: the fraud upstream becomes 10x slower, and its feature stage (a dependency) is what
# took the time, so the diagnosis view has a cause to show.
spike_at=$(date -u +%Y-%m-%dT%H:%M:%SZ)
kill "$fraud_load" 2>/dev/null || true
load "http://$gw/fraud/score" 40 80 load-spike.log 70
pids="$pids $!"
echo "spike injected at $spike_at"

# True when `GET PATH` answers JSON for which the JavaScript expression EXPR (of `j`) is true.
api_true() {
  curl -sf "http://$gw$1" | node -e 'let s = ""; process.stdin.on("data", (d) => { s += d; }).on("end", () => {
    const j = JSON.parse(s); process.exit(eval(process.argv[1]) ? 0 : 1); });' "$2"
}
fired() { api_true /api/v1/alerts 'j.alerts.some((a) => a.rule === "fraud_slow" && a.state === "alert")'; }
wait_until "fraud_slow to fire" 60 fired
echo "fraud_slow fired"

# Development: serve a build output through web/dev-server.mjs when the binary does not embed
# the dashboard yet (TG_DASHBOARD_DIR=DIR; TG_DEV_MOCK=1 also fakes endpoints it lacks).
page_url="http://$gw"
api_url="http://$gw"
if [ -n "${TG_DASHBOARD_DIR:-}" ]; then
  dev_port=$("$upstream" --free-port)
  mock=; [ "${TG_DEV_MOCK:-0}" = 1 ] && mock=--mock
  node "$root/web/dev-server.mjs" --dir "$TG_DASHBOARD_DIR" --target "$gw" \
    --listen "127.0.0.1:$dev_port" $mock >"$dir/dev-server.log" 2>&1 &
  pids="$pids $!"
  wait_until "the dev server" 30 curl -sf "http://127.0.0.1:$dev_port/"
  page_url="http://127.0.0.1:$dev_port"
  [ -z "$mock" ] || api_url=$page_url
fi

status=0
TG_URL="$api_url" TG_PAGE_URL="$page_url" TG_HOOK_URL="http://$hook" TG_TOKEN="$token" TG_ARTIFACTS="$artifacts" TG_SPIKE_AT="$spike_at" \
  TG_IMPORTED="$imported" TG_RULE=fraud_slow CHROMIUM="$chromium" TG_TAILGUARD="$tailguard" TG_STORE="$dir/tailguard.db" \
  node --test --test-reporter=spec "$here/dashboard.test.mjs" >"$dir/node-test.log" 2>&1 || status=$?
cat "$dir/node-test.log"
cp "$dir/gateway.log" "$artifacts/gateway.log" 2>/dev/null || true
[ "$status" -eq 0 ] || fail "the browser test failed (screenshots in $artifacts)"
echo "screenshots in $artifacts"
echo "dashboard browser test: ok"
