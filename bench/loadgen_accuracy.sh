#!/usr/bin/env bash
# How exactly `tailguard loadgen` measures P99: against tg_test_upstream answering every request
# after a fixed delay (DELAY_MS, 20 ms), at RATE (5000) requests per second. Prints FIGURE lines
# (DESIGN.md, Conventions); takes about a minute.
#
# The truth. Every request takes the fixed delay plus the loopback overhead: the client's and
# the server's CPU time, the kernel round trip, and how late the server's timer fires. A constant
# added to every latency shifts every percentile by that constant, so the true P99 at DELAY_MS is
# DELAY_MS + the P99 of the overhead alone, which a run with no delay measures at the same rate
# and connections (FIGURE loadgen_loopback_p99_us). The error is
#   (P99 measured - (DELAY_MS + overhead P99)) / (DELAY_MS + overhead P99)
# and includes the histogram's resolution (values are reported as their bucket's midpoint, within
# 0.79 %). Both runs are repeated ROUNDS times, alternating, and the medians are compared.
#
# Usage: bench/loadgen_accuracy.sh BUILD_DIR
# Environment (all optional): RATE=5000 DELAY_MS=20 DURATION=10s CONNECTIONS=400 ROUNDS=3
#   UPSTREAM_THREADS=2
set -euo pipefail

build=${1:?usage: bench/loadgen_accuracy.sh BUILD_DIR}
RATE=${RATE:-5000}
DELAY_MS=${DELAY_MS:-20}
DURATION=${DURATION:-10s}
CONNECTIONS=${CONNECTIONS:-400}
ROUNDS=${ROUNDS:-3}
UPSTREAM_THREADS=${UPSTREAM_THREADS:-2}
tailguard=$build/apps/tailguard/tailguard
upstream=$build/tests/integration/tg_test_upstream

die() {
  echo "loadgen_accuracy: error: $*" >&2
  exit 1
}
[ -x "$tailguard" ] || die "no tailguard binary at $tailguard (build it first)"
[ -x "$upstream" ] || die "no tg_test_upstream at $upstream (build the tests first)"
command -v python3 >/dev/null || die "python3 is needed to read the JSON reports"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/tg-loadgen-bench.XXXXXX")
pid=
cleanup() {
  if [ -n "$pid" ]; then kill -TERM "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

"$upstream" --listen 127.0.0.1:0 --threads "$UPSTREAM_THREADS" >"$tmp/upstream.log" 2>&1 &
pid=$!
for _ in $(seq 100); do
  grep -q '^listening on ' "$tmp/upstream.log" 2>/dev/null && break
  kill -0 "$pid" 2>/dev/null || die "tg_test_upstream exited: $(cat "$tmp/upstream.log")"
  sleep 0.1
done
url="http://$(sed -n 's/^listening on //p' "$tmp/upstream.log")/bench"
[ "$url" != "http:///bench" ] || die "tg_test_upstream did not start"

# run DELAY_MS OUT: one run; prints "p99_ns achieved_rate errors dropped".
run() {
  "$tailguard" loadgen "$url" --rate "$RATE" --duration "$DURATION" --connections "$CONNECTIONS" \
    -H "X-Test-Delay-Ms: $1" --json --quiet >"$2" || die "tailguard loadgen failed (see above)"
  python3 - "$2" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print(round(r["latency_seconds"]["p99"] * 1e9), r["achieved_rate"],
      r["requests"]["errors"]["total"], r["requests"]["dropped"])
PY
}
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END {
  if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo "== loadgen_accuracy: $RATE req/s for $DURATION on $CONNECTIONS connections, upstream delay" \
  "$DELAY_MS ms vs 0 ms, $ROUNDS round(s)"
base=() delayed=() rates=()
for r in $(seq "$ROUNDS"); do
  read -r p99 rate errors dropped <<<"$(run 0 "$tmp/base.json")"
  [ "$errors" = 0 ] && [ "$dropped" = 0 ] || die "errors ($errors) or drops ($dropped) in the no-delay run"
  base+=("$p99")
  read -r p99 rate errors dropped <<<"$(run "$DELAY_MS" "$tmp/delayed.json")"
  [ "$errors" = 0 ] && [ "$dropped" = 0 ] || die "errors ($errors) or drops ($dropped) in the delayed run"
  delayed+=("$p99")
  rates+=("$rate")
  echo "round $r/$ROUNDS: overhead p99 ${base[-1]} ns; p99 at $DELAY_MS ms ${delayed[-1]} ns;" \
    "achieved $rate req/s"
done
b=$(median "${base[@]}")
d=$(median "${delayed[@]}")
rate=$(median "${rates[@]}")
awk -v b="$b" -v d="$d" -v delay="$DELAY_MS" -v rate="$rate" -v want="$RATE" 'BEGIN {
  truth = delay * 1e6 + b
  printf "truth: %.3f ms (delay %d ms + overhead p99 %.1f us); measured p99 %.3f ms\n",
    truth / 1e6, delay, b / 1e3, d / 1e6
  printf "FIGURE loadgen_p99_error_pct %.2f %%\n", (d - truth) / truth * 100
  printf "FIGURE loadgen_loopback_p99_us %.1f us\n", b / 1e3
  printf "FIGURE loadgen_rate_error_pct %.2f %%\n", (rate - want) / want * 100
}'
