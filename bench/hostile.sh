#!/usr/bin/env bash
# Hostile input (issue 15), measured:
# 1. The hostile-client suite (tests/integration/hostile_suite.sh), longer than in the tests and
#    with its bar: the good client's P99 under attack within 2x of its quiet P99, the median of
#    ROUNDS rounds (default 9) of SECONDS (default 10) each.
#      FIGURE hostile_good_p99_ratio
# 2. A label flood: FLOOD (default 10000) requests whose model names are FLOOD_BYTES (1 MiB) of
#    random letters, then /metrics' size and the gateway's RSS, before and after.
#      FIGURE label_flood_metrics_bytes_before / _after, label_flood_rss_mb_before / _after
# Usage: bench/hostile.sh BUILD_DIR
set -euo pipefail
build=${1:?usage: bench/hostile.sh BUILD_DIR}
root=$(cd "$(dirname "$0")/.." && pwd)
tailguard=$build/apps/tailguard/tailguard
upstream=$build/tests/integration/tg_test_upstream
hostile=$build/tests/integration/tg_hostile
for f in "$tailguard" "$upstream" "$hostile"; do
  [ -x "$f" ] || { echo "bench/hostile.sh: $f is missing: build the release preset" >&2; exit 1; }
done

suite_status=0
HOSTILE_ENFORCE_RATIO=1 sh "$root/tests/integration/hostile_suite.sh" "$tailguard" "$upstream" \
  "$hostile" "${SECONDS_PER_RUN:-10}" "${RATE:-300}" "${ROUNDS:-9}" || suite_status=$?

tmp=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
"$upstream" --listen 127.0.0.1:0 --max-recorded-body 4096 >"$tmp/upstream.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do grep -q 'listening on' "$tmp/upstream.log" && break; sleep 0.1; done
up=$(sed -n 's/^listening on //p' "$tmp/upstream.log")
port=$("$upstream" --free-port)
cat >"$tmp/gateway.yaml" <<YAML
listen: 127.0.0.1:$port
store: {path: ""}
routes:
  - {name: llm, prefix: /llm/, protocol: openai, upstream: "$up"}
YAML
"$tailguard" serve --config "$tmp/gateway.yaml" >"$tmp/gateway.log" 2>&1 &
gateway=$!
pids+=($gateway)
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.1; done
rss() { awk '/^VmRSS/ { printf "%.1f", $2 / 1024 }' "/proc/$gateway/status"; }
"$hostile" --port "$port" --upstream-port "${up##*:}" --flood 20 --flood-bytes 1048576 >/dev/null
metrics_before=$(curl -sf "http://127.0.0.1:$port/metrics" | wc -c)
rss_before=$(rss)
echo "label flood: ${FLOOD:-10000} requests with random model names of ${FLOOD_BYTES:-1048576} bytes"
"$hostile" --port "$port" --upstream-port "${up##*:}" --flood "${FLOOD:-10000}" \
  --flood-bytes "${FLOOD_BYTES:-1048576}"
metrics_after=$(curl -sf "http://127.0.0.1:$port/metrics" | wc -c)
rss_after=$(rss)
echo "FIGURE label_flood_metrics_bytes_before $metrics_before bytes"
echo "FIGURE label_flood_metrics_bytes_after $metrics_after bytes"
echo "FIGURE label_flood_rss_mb_before $rss_before MB"
echo "FIGURE label_flood_rss_mb_after $rss_after MB"
if [ "$suite_status" -ne 0 ]; then
  echo "bench/hostile.sh: the hostile suite failed (above)" >&2
  exit "$suite_status"
fi
