#!/bin/sh
# A real Prometheus scrapes a real `tailguard serve`: /metrics passes `promtool check metrics`,
# and histogram_quantile() over the scraped buckets agrees with tailguard's own P99 within the
# resolution of the exported buckets.
# Usage: prometheus_scrape.sh TAILGUARD TG_TEST_UPSTREAM
set -eu
tailguard=${1:?usage: prometheus_scrape.sh TAILGUARD TG_TEST_UPSTREAM}
upstream=${2:?usage: prometheus_scrape.sh TAILGUARD TG_TEST_UPSTREAM}
. "$(cd "$(dirname "$0")" && pwd)/harness.sh"
need prometheus promtool curl

start_upstream "$upstream"

cat >"$dir/gateway.yaml" <<YAML
listen: 127.0.0.1:0
threads: 2
routes:
  - name: scrape
    prefix: /
    upstream: $up
YAML
"$tailguard" serve --config "$dir/gateway.yaml" >"$dir/gateway.log" 2>&1 &
gateway_pid=$!
pids="$pids $gateway_pid"
wait_until "tailguard serve" 30 listening "$dir/gateway.log"
gw=$(sed -n 's/.*listening on \([0-9.:]*\).*/\1/p' "$dir/gateway.log")
echo "gateway at $gw, upstream at $up"

# 180 requests of about 5 ms and 20 of about 40 ms: the P99 is in the slow tenth.
urls() {
  n=0
  while [ "$n" -lt "$1" ]; do printf 'url = "http://%s/r/%d"\noutput = "/dev/null"\n' "$gw" "$n"; n=$((n + 1)); done
}
urls 180 | curl -sS --no-progress-meter -Z --parallel-max 16 -K - -H 'X-Test-Delay-Ms: 5'
urls 20 | curl -sS --no-progress-meter -Z --parallel-max 16 -K - -H 'X-Test-Delay-Ms: 40'

# The live loop collects once a second: wait until tailguard has all 200.
own_stat() {
  curl -sS -G "http://$gw/api/v1/series" --data-urlencode 'cumulative=1' \
    --data-urlencode 'match={stage="total"}' |
    sed -n "s/.*\"cumulative\":{[^}]*\"$1\":\([0-9.e+-]*\)[,}].*/\1/p"
}
i=0
until [ "$(own_stat count)" = "200" ]; do
  i=$((i + 1)); [ "$i" -le 300 ] || fail "tailguard never counted 200 requests"; sleep 0.1
done

curl -sS "http://$gw/metrics" >"$dir/metrics.txt"
promtool check metrics <"$dir/metrics.txt" >"$dir/promtool.log" 2>&1 ||
  fail "promtool check metrics rejected /metrics: $(cat "$dir/promtool.log")"
echo "promtool check metrics: ok"

start_prometheus "$gw"

query() {
  curl -sS -G "$prometheus_url/api/v1/query" --data-urlencode "query=$1" 2>/dev/null |
    sed -n 's/.*"value":\[[^,]*,"\([^"]*\)"\].*/\1/p'
}
# Until a scrape has all 200 requests.
i=0
until [ "$(query 'sum(tailguard_request_duration_seconds_count{stage="total"})')" = "200" ]; do
  i=$((i + 1)); [ "$i" -le 300 ] || fail "Prometheus never scraped 200 requests"; sleep 0.1
done
prom=$(query 'histogram_quantile(0.99, sum by (le) (tailguard_request_duration_seconds_bucket{stage="total"}))')
own=$(own_stat p99)
[ -n "$prom" ] && [ -n "$own" ] || fail "no quantile: prometheus='$prom' tailguard='$own'"
# The exported bucket around Prometheus' estimate must hold tailguard's own P99 too.
bounds=$(sed -n 's/.*stage="total".*le="\([0-9.e+-]*\)"}.*/\1/p' "$dir/metrics.txt")
echo "P99: prometheus histogram_quantile $prom s, tailguard $own s"
echo "$bounds" | awk -v p="$prom" -v o="$own" '
  { le[NR] = $1 }
  END {
    lo = 0
    for (i = 1; i <= NR; i++) { if (p <= le[i]) { hi = le[i]; break } lo = le[i] }
    printf "bucket (%s, %s]\n", lo, hi
    exit !(o > lo && o <= hi)
  }' || fail "tailguard's P99 $own is outside Prometheus' bucket around $prom"

# SIGTERM drains and exits 0.
kill -TERM "$gateway_pid"
status=0
wait "$gateway_pid" || status=$?
[ "$status" -eq 0 ] || fail "tailguard serve exited $status on SIGTERM"
grep -q 'shut down cleanly' "$dir/gateway.log" || fail "no clean shutdown in the log"
echo "prometheus scrape: ok"
