#!/bin/sh
# Bad inputs to `tailguard replay` end with exit 2 and a message naming what is wrong, never a
# crash, a hang or a silent result. Regressions from a review of the replay path.
# Usage: replay_bad_inputs.sh TAILGUARD WORK_DIR
set -u
tg=$1; dir=$2
rm -rf "$dir"; mkdir -p "$dir"; cd "$dir" || exit 1
failures=0
expect() {  # expect NAME MESSAGE_PART COMMAND...
  name=$1; want=$2; shift 2
  out=$(timeout 20 "$@" 2>&1); rc=$?
  if [ "$rc" -ne 2 ] || ! printf '%s' "$out" | grep -qF -- "$want"; then
    echo "FAIL $name: exit $rc, output: $out"; failures=$((failures + 1))
  else
    echo "ok   $name"
  fi
}
printf 'timestamp,value\n2026-01-01 00:00:00,1\n2026-01-01 00:01:00,inf\n' > inf.csv
expect infinite-value "inf.csv:3: value" "$tg" replay inf.csv -q
printf 'timestamp,value\n2026-01-01 00:01:00,1\n2026-01-01 00:00:00,2\n' > backwards.csv
expect backwards "backwards.csv:3: timestamp" "$tg" replay backwards.csv -q
printf 'timestamp,value\n' > header_only.csv
expect header-only "no data rows" "$tg" replay header_only.csv -q
printf 'timestamp,latency_ms\n2026-01-01T00:00:00Z,5\n' > one.csv
expect tiny-resolution "--resolution" "$tg" replay one.csv --resolution 0.0000001ms -q
expect huge-resolution "--resolution" "$tg" replay one.csv --resolution 99999999999999999999h -q
printf 'timestamp,latency_ms\n0,5\n8999999999,5\n' > span.csv
expect huge-span "steps of" "$tg" replay span.csv --resolution 1s -q
printf 'timestamp,latency_ms\n2026-01-01T00:00:00Z,1e30\n' > big.csv
expect huge-latency "big.csv:2: latency_ms" "$tg" replay big.csv -q
printf 'timestamp,latency_ms,status\n2026-01-01T00:00:00Z,5,abc\n' > status.csv
expect bad-status "status.csv:2: status" "$tg" replay status.csv -q
if [ "$failures" -eq 0 ]; then echo "replay bad inputs: all rejected"; fi
exit "$failures"
