#!/bin/sh
# The hostile-client suite (issue 15): `tailguard serve` in front of tg_test_upstream, a
# well-behaved client at a steady rate (tailguard loadgen, open loop), first alone, then while
# tg_hostile runs every hostile case in rounds and holds slow connections from another address.
# The bar: no crash or hang, every hostile request answered as it should be (tg_hostile checks),
# the good client without an error, the upstream never handed a smuggled request, a clean
# SIGTERM, and then the figures:
#   FIGURE hostile_good_p99_ratio   the good client's P99 under attack over its quiet P99: the
#                                   median over ROUNDS rounds of a quiet run then an attacked one
# With HOSTILE_ENFORCE_RATIO=1 (bench/hostile.sh), a ratio over 2 fails the run; in the test
# suite it is reported only, since a shared 2-core machine is no place for a timing bar.
# Usage: hostile_suite.sh TAILGUARD TG_TEST_UPSTREAM TG_HOSTILE [SECONDS] [RATE] [ROUNDS]
set -u
tailguard=$1
upstream=$2
hostile=$3
seconds=${4:-8}
rate=${5:-300}
rounds=${6:-1}
. "$(dirname "$0")/harness.sh"
need curl jq awk

# The attacker's requests and the good client's go to upstreams of their own, so that the
# figure measures the gateway, not the test upstream's work on 1 MB bodies.
# Bodies are recorded by size only past 64 KiB: the upstream need not copy the attacker's.
"$upstream" --listen 127.0.0.1:0 --max-recorded-body 65536 >"$dir/upstream.log" 2>&1 &
pids="$pids $!"
wait_until "the upstream" 30 listening "$dir/upstream.log"
up=$(sed -n 's/^listening on //p' "$dir/upstream.log")
up_port=${up##*:}
"$upstream" --listen 127.0.0.1:0 >"$dir/good-upstream.log" 2>&1 &
pids="$pids $!"
wait_until "the good client's upstream" 30 listening "$dir/good-upstream.log"
good_up=$(sed -n 's/^listening on //p' "$dir/good-upstream.log")
port=$("$upstream" --free-port)
dead=$("$upstream" --free-port)
cat >"$dir/gateway.yaml" <<YAML
listen: 127.0.0.1:$port
threads: ${GATEWAY_THREADS:-2}
store: {path: ""}
timeouts: {header: 2s, shutdown: 5s}
limits: {max_connections_per_client: 64}
health: {max_fails: 1}
routes:
  - {name: dead, prefix: /dead/, upstream: "127.0.0.1:$dead"}
  - {name: good, prefix: /good/, upstream: "$good_up"}
  - {name: llm, prefix: /llm/, protocol: openai, upstream: "$up"}
  - {name: any, prefix: /, upstream: "$up"}
YAML
"$tailguard" serve --config "$dir/gateway.yaml" >"$dir/gateway.log" 2>&1 &
gateway=$!
pids="$pids $gateway"
wait_until "the gateway" 30 curl -sf "http://127.0.0.1:$port/healthz"
base="http://127.0.0.1:$port"

# good RUN: the well-behaved client for $seconds; sets p99_ms, checks it made no error.
good() {
  "$tailguard" loadgen "$base/good/v2/models/risk/infer" --rate "$rate" --duration "${seconds}s" \
    -c 16 --body '{"inputs":[{"name":"x","datatype":"FP32","shape":[1,4],"data":[1,2,3,4]}]}' \
    -H 'Content-Type: application/json' --json -q >"$dir/$1.json" 2>"$dir/$1.err" ||
    fail "loadgen ($1) failed: $(cat "$dir/$1.err")"
  values=$(jq -r '[.requests.errors.total, .requests.dropped, .abandoned,
    .latency_seconds.p99 * 1e3] | map(tostring) | join(" ")' "$dir/$1.json") ||
    fail "cannot read loadgen's report: $(cat "$dir/$1.json")"
  set -- $values
  [ "$1" = 0 ] && [ "$2" = 0 ] && [ "$3" = 0 ] ||
    fail "the good client saw $1 errors, $2 dropped, $3 abandoned: $(cat "$dir/$1.json")"
  p99_ms=$4
}

# Rounds of a quiet run then a run under attack, back to back, so that both see the same
# machine: the figure is the median of the rounds' ratios (a shared machine's noise moves both).
rss_before=$(awk '/^VmRSS/ {print $2}' "/proc/$gateway/status")
ratios=
round=1
while [ "$round" -le "$rounds" ]; do
  good "quiet$round"
  quiet_ms=$p99_ms
  "$hostile" --port "$port" --upstream-port "$up_port" --duration "$((seconds + 1))" \
    ${HOSTILE_ARGS:-} >"$dir/hostile$round.log" 2>&1 &
  attacker=$!
  good "attack$round"
  attack_ms=$p99_ms
  wait "$attacker"
  hostile_rc=$?
  cat "$dir/hostile$round.log"
  [ "$hostile_rc" -eq 0 ] || fail "tg_hostile found hostile requests answered wrongly (above)"
  r=$(awk -v a="$attack_ms" -v q="$quiet_ms" 'BEGIN { printf "%.3f", a / q }')
  echo "round $round: good client P99 $quiet_ms ms quiet, $attack_ms ms under attack: ${r}x"
  ratios="$ratios $r"
  round=$((round + 1))
done
kill -0 "$gateway" 2>/dev/null || fail "the gateway died"
curl -sf "$base/healthz" >/dev/null || fail "/healthz does not answer after the attack"
curl -sf "$base/metrics" >"$dir/metrics.txt" || fail "/metrics does not answer after the attack"
rss_after=$(awk '/^VmRSS/ {print $2}' "/proc/$gateway/status")
metrics_kb=$(( $(wc -c <"$dir/metrics.txt") / 1024 ))
grep -q 'tailguard_series_dropped_total{reason="label_too_long"} [1-9]' "$dir/metrics.txt" ||
  fail "no long label was counted"

# A clean stop within timeouts.shutdown (5 s) and the three seconds the docs allow beyond it.
kill -TERM "$gateway"
i=0
while kill -0 "$gateway" 2>/dev/null; do
  i=$((i + 1))
  [ "$i" -le 80 ] || fail "the gateway did not exit within 8 s of SIGTERM"
  sleep 0.1
done
wait "$gateway" || fail "the gateway exited with $? after SIGTERM"

ratio=$(echo $ratios | tr ' ' '\n' | sort -g | awk '{ v[NR] = $1 } END {
  printf "%.2f", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }')
echo "FIGURE hostile_good_p99_ratio $ratio x (median of $rounds rounds:$ratios)"
echo "FIGURE hostile_gateway_rss_growth_kb $((rss_after - rss_before)) KiB"
echo "FIGURE hostile_metrics_kb $metrics_kb KiB"
if [ "${HOSTILE_ENFORCE_RATIO:-0}" = 1 ]; then
  awk -v r="$ratio" 'BEGIN { exit !(r <= 2) }' ||
    fail "the good client's P99 under attack is ${ratio}x its quiet P99 (bar: 2x)"
fi
echo "hostile suite: ok (good client P99 under attack ${ratio}x the quiet one)"
