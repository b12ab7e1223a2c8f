#!/bin/sh
# `tailguard diagnose`: a small case set (the culprit ranked first), a slice file (the culprit
# slice named), and the errors for a missing directory, bad rows and a missing --at.
# Usage: diagnose_cli.sh TAILGUARD
. "$(dirname "$0")/lib.sh"
tg=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
mkdir "$dir/cases"
printf 'case_id,alert_time\nc1,1000\n' >"$dir/cases/cases.csv"
{
  echo case_id,timestamp,series,value
  t=0
  while [ $t -lt 1300 ]; do
    if [ $t -lt 1000 ]; then a=$((10 + t % 3)); l=0.1; else a=95; l=0.9; fi
    echo "c1,$t,a/cpu,$a"
    echo "c1,$t,b/cpu,$((20 + t % 3))"
    echo "c1,$t,front/latency_p99_s,$l"
    t=$((t + 5))
  done
} | gzip >"$dir/cases/series.csv.gz"
expect 0 "1 cases, 780 points read, 1 cases ranked" "$tg" diagnose --cases "$dir/cases" --out "$dir/r.csv"
sed -n 2p "$dir/r.csv" | grep -q '^c1,1,a/cpu,.*,hardware,cause,0,a/cpu rose from' || fail "rank 1: $(sed -n 2p "$dir/r.csv")"
grep -q '^c1,2,front/latency_p99_s,.*,symptom,' "$dir/r.csv" || fail "the latency is a symptom: $(cat "$dir/r.csv")"

{
  echo timestamp,version,route,sum,count
  for t in 60 120 180 240; do
    for v in v1 v2; do
      for r in /a /b; do
        s=8
        [ $t = 240 ] && [ $v = v2 ] && [ $r = /b ] && s=40
        echo "$t,$v,$r,$((s + t % 7 / 3)),100"
      done
    done
  done
} >"$dir/s.csv"
expect 0 "1 slice(s) named" "$tg" diagnose --slices "$dir/s.csv" --at 240 --out "$dir/sl.csv"
sed -n 2p "$dir/sl.csv" | grep -q '^1,version=v2&route=/b,1.0000,1,' || fail "slice: $(cat "$dir/sl.csv")"

expect 2 "nowhere/cases.csv: not found" "$tg" diagnose --cases "$dir/nowhere" --out "$dir/x.csv"
printf 'case_id,alert_time\nc1,later\n' >"$dir/cases/cases.csv"
expect 2 "cases.csv:2: alert_time: 'later' is not integer unix seconds" "$tg" diagnose --cases "$dir/cases" --out "$dir/x.csv"
expect 2 "needs --at T" "$tg" diagnose --slices "$dir/s.csv" --out "$dir/x.csv"
expect 2 "no requests at --at 999" "$tg" diagnose --slices "$dir/s.csv" --at 999 --out "$dir/x.csv"
expect 2 "give --cases DIR or --slices FILE" "$tg" diagnose --out "$dir/x.csv"
[ ! -e "$dir/x.csv" ] || fail "a failed run wrote its output"
echo PASS
