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
# Regressions (issue 16): bad data that replay took silently.
printf 'timestamp,value\n2026-01-01 00:00:00,1\n2026-01-01 00:01:00,-4\n' > negative.csv
expect negative-p99 'negative.csv:3: value: "-4" is not a P99 in ms' "$tg" replay negative.csv -q
printf 'timestamp,value\n2026-01-01 00:00:00,1e308\n' > huge.csv
expect huge-p99 'huge.csv:2: value: "1e308" is not a P99 in ms' "$tg" replay huge.csv -q
printf 'timestamp,value\n2026-01-01 00:00:00,1\n2026-01-01 00:00:00,2\n' > dup.csv
expect duplicate-time "dup.csv:3: timestamp: 2026-01-01 00:00:00 repeats line 2" "$tg" replay dup.csv -q
printf 'timestamp,value,label\n2026-01-01 00:00:00,1,0\n' > extra.csv
expect unknown-column 'extra.csv:1: column "label": not a column of a P99 series' "$tg" replay extra.csv -q
printf 'timestamp,latency_ms,feature_fetch\n2026-01-01T00:00:00Z,5,2\n' > nounit.csv
expect stage-without-unit "nounit.csv:1: column \"feature_fetch\": a stage column's name ends in _ms, its unit (feature_fetch_ms" \
  "$tg" replay nounit.csv -q
printf 'timestamp,latency_ms,Host\n2026-01-01T00:00:00Z,5,a\n' > host.csv
expect request-log-unknown-column 'host.csv:1: column "Host": not a column of a request log' "$tg" replay host.csv -q
# Every bad row is named, then the count; nothing is replayed (no scores file).
printf 'timestamp,value\n2026-01-01 00:00:00,x\n2026-01-01 00:01:00,-1\nlater,3\n' > many.csv
expect many-bad-rows "3 bad rows; nothing was changed" "$tg" replay many.csv -q
out=$("$tg" replay many.csv -q 2>&1)
for want in 'many.csv:2: value' 'many.csv:3: value' 'many.csv:4: timestamp'; do
  printf '%s' "$out" | grep -qF -- "$want" || { echo "FAIL many-bad-rows: no $want in: $out"; failures=$((failures + 1)); }
done
[ ! -e many.scores.csv ] || { echo "FAIL many-bad-rows: a scores file was written"; failures=$((failures + 1)); }
printf 'timestamp,latency_ms,status\nnever,1,200\n2026-01-01T00:00:00Z,-3,200\n2026-01-01T00:00:01Z,4,999\n' > manylog.csv
expect many-bad-requests "3 bad rows; nothing was changed" "$tg" replay manylog.csv -q
# backtest: a fixed threshold outside the scores' range [0, 1] scored 0 without a word.
printf 'timestamp,value\n2026-01-01 00:00:00,1\n' > one_series.csv
expect threshold-range 'expected an anomaly score from 0 to 1 (e.g. 0.5), got "2"' \
  "$tg" backtest --data one_series.csv --threshold 2
if [ "$failures" -eq 0 ]; then echo "replay bad inputs: all rejected"; fi
exit "$failures"
