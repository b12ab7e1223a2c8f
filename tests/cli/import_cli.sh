#!/bin/sh
# `tailguard import`: good files (a series column, --series with unit suffixes, NAB's
# timestamp,value) land in the store, each row at the end of its minute, and re-importing
# replaces; --dry-run writes nothing; every bad input (times outside the store's retention or in
# the future included) names file:line and the field, exits 2 and leaves the store as it was.
# Times are relative to now, as the retention check is.
# Usage: import_cli.sh TAILGUARD WORKDIR
set -u
tailguard=$1
dir=$2
rm -rf "$dir"
mkdir -p "$dir"
. "$(dirname "$0")/lib.sh"
db="$dir/history.db"
key='tailguard_request_duration_seconds{model="risk",route="/v2",stage="total",version="1"}'
# Its id: FNV-1a 64 of the key.
id=58ead45b4e2cda28
# A minute boundary two hours ago, and times after it.
now=$(date +%s)
m=$((now / 60 * 60 - 7200))
at() { date -u -d "@$1" '+%Y-%m-%d %H:%M:%S'; }
atu() { echo "$(at "$1") UTC"; }  # how people are shown times (docs/times.md)

# A file with a series column: two series, latencies in seconds; unsorted rows are fine. The
# rows describe the minutes [m, m+1) and [m+1, m+2): they cover m to m+2.
cat >"$dir/two.csv" <<CSV
time,series,count,p50,p99,max
$(at $((m + 60))),"tailguard_request_duration_seconds{version=""1"",model=""risk"",route=""/v2"",stage=""total""}",600,0.020,0.080,0.210
$(at $m),"tailguard_request_duration_seconds{model=""risk"",route=""/v2"",stage=""total"",version=""1""}",610,0.021,0.081,0.200
$(date -u -d "@$((m + 30))" '+%Y-%m-%dT%H:%M:%SZ'),"tailguard_request_duration_seconds{model=""rank"",stage=""total""}",50,0.005,,0.010
CSV
expect 0 "would import 2 series, 3 points from $(atu $m) to $(atu $((m + 120)))" \
  "$tailguard" import "$dir/two.csv" --store "$db" --dry-run
[ -f "$db" ] && fail "--dry-run created the store"
# A store path that does not exist is refused (a typo would make a store no gateway reads),
# unless --create asks for a new one.
expect 2 "no store at $db: give the path of an existing store .*--create" \
  "$tailguard" import "$dir/two.csv" --store "$db"
[ -f "$db" ] && fail "a refused import created the store"
expect 0 "imported 2 series, 3 points .* into $db" "$tailguard" import "$dir/two.csv" --store "$db" --create
expect 0 "$id  $key  2 points" "$tailguard" import "$dir/two.csv" --store "$db"
expect 0 "(3 minutes replaced)" "$tailguard" import "$dir/two.csv" --store "$db"
expect 0 "/?view=series&id=" "$tailguard" import "$dir/two.csv" --store "$db"
expect 0 "\"url\": \"/?view=series&id=$id\"" "$tailguard" import "$dir/two.csv" --store "$db" --json
# Each row is stored at the end of its minute, where the gateway stores the minute it measured.
if command -v sqlite3 >/dev/null; then
  stored=$(sqlite3 "$db" "SELECT group_concat(m.time / 1000000000, ' ') FROM series_minutes m JOIN series s ON s.seq = m.series_seq WHERE s.id = '$id' ORDER BY m.time")
  [ "$stored" = "$((m + 60)) $((m + 120))" ] || fail "stored at $stored, expected $((m + 60)) $((m + 120))"
fi

# One series named on the command line, latencies in milliseconds by column suffix.
cat >"$dir/ms.csv" <<CSV
timestamp,p50_ms,p90_ms,p99_ms,p999_ms,mean_ms,count
$((m + 120)),20,40,80,120,25,100
$((m + 180)),21,41,81,121,26,100
CSV
expect 0 "imported 1 series, 2 points from $(atu $((m + 120))) to $(atu $((m + 240)))" \
  "$tailguard" import "$dir/ms.csv" --store "$db" --series "$key"

# NAB's layout: value is P99, here in microseconds. The current minute is accepted.
printf 'timestamp,value\n%s,80000\n%s,\n' "$(at $((m + 240)))" "$(at "$now")" >"$dir/nab.csv"
expect 0 "imported 1 series, 2 points" \
  "$tailguard" import "$dir/nab.csv" --store "$db" --series "$key" --unit us

# The store path and the retention from a gateway configuration: 40 days keep a 36-day-old row.
old=$(at $((now - 36 * 86400)))
printf 'time,p99\n%s,0.1\n' "$old" >"$dir/old.csv"
printf 'store: {path: gw.db, history_retention: 40d}\nroutes: [{prefix: /, upstream: "127.0.0.1:9"}]\n' >"$dir/gateway.yaml"
expect 0 "into $dir/gw.db" "$tailguard" import "$dir/nab.csv" --config "$dir/gateway.yaml" --series "$key"
expect 0 "imported 1 series, 1 points" "$tailguard" import "$dir/old.csv" --config "$dir/gateway.yaml" --series "$key"
printf 'store: {path: gw.db, history_retention: 1h}\nroutes: [{prefix: /, upstream: "127.0.0.1:9"}]\n' >"$dir/short.yaml"
expect 2 "old.csv:2: time: $old is older than the store's history_retention of 1h; accepted are times from .* (raise store.history_retention in $dir/short.yaml)" \
  "$tailguard" import "$dir/old.csv" --config "$dir/short.yaml" --series "$key"

# Errors: exit 2, the file, line and field named, and the store unchanged.
before=$(cksum <"$db")
bad() {  # bad NAME CONTENT PATTERN [ARGS...]
  name=$1; content=$2; pattern=$3; shift 3
  printf "$content" >"$dir/$name.csv"
  expect 2 "$pattern" "$tailguard" import "$dir/$name.csv" --store "$db" "$@"
}
t0=$(at $m)
t1=$(at $((m + 60)))
bad noseries 'time,p99\n'"$t0"',0.1\n' "noseries.csv:1: no series column"
bad badkey 'time,p99\n'"$t0"',0.1\n' "--series: .*" --series 'model="x"}'
bad notime 'when,p99\n'"$t0"',0.1\n' 'notime.csv:1: column "when" is not one of'
bad p95 'time,p95\n'"$t0"',0.1\n' 'p95.csv:1: column "p95" is not one of' --series "$key"
bad twice 'time,p99,p99_ms\nx,1,2\n' 'twice.csv:1: columns "p99" and "p99_ms" hold the same statistic' --series "$key"
bad nostat 'time,series\n'"$t0"',m\n' 'nostat.csv:1: no statistic column'
bad both 'time,series,p99\n'"$t0"',m,0.1\n' 'both.csv:1: the file has a series column; --series is for files without' --series "$key"
bad badtime 'time,p99\n'"$t0"',0.1\nyesterday,0.2\n' 'badtime.csv:3: time: .*yesterday' --series "$key"
bad badvalue 'time,p99\n'"$t0"',0.1\n'"$t1"',fast\n' 'badvalue.csv:3: p99: expected a non-negative number, got "fast"' --series "$key"
bad negative 'time,p99\n'"$t0"',-1\n' 'negative.csv:2: p99: expected a non-negative number' --series "$key"
bad fraction 'time,count\n'"$t0"',1.5\n' 'fraction.csv:2: count: expected a whole number' --series "$key"
bad dup 'time,p99\n'"$(at $((m + 10)))"',0.1\n'"$(at $((m + 50)))"',0.2\n' 'dup.csv:3: time: a second row for .* in the minute of '"$t0"' UTC (the first is line 2)' --series "$key"
bad regex 'time,series,p99\n'"$t0"',"m{a=~""x""}",0.1\n' 'regex.csv:2: series: label a: a series key has only = matchers'
bad nometric 'time,series,p99\n'"$t0"',"{a=""x""}",0.1\n' 'nometric.csv:2: series: needs a metric name'
bad ragged 'time,p99\n'"$t0"',0.1,7\n' 'ragged.csv:2' --series "$key"
bad empty 'time,p99\n' 'empty.csv: no data rows' --series "$key"
bad unit 'time,p99\n'"$t0"',0.1\n' '--unit: expected s, ms or us, got "h"' --series "$key" --unit h
# Outside what the store keeps: the gateway would prune it unseen, or it would stay forever.
bad tooold 'time,p99\n'"$t0"',0.1\n'"$old"',0.2\n' "tooold.csv:3: time: $old is older than the store's history_retention of 35d; accepted are times from .* to before .* UTC (set store.history_retention in the gateway config and pass --config)" --series "$key"
future=$(at $((now + 86400)))
bad future 'time,p99\n'"$t0"',0.1\n'"$future"',0.2\n' "future.csv:3: time: $future is in the future; accepted are times from .* to before .* UTC" --series "$key"
expect 2 "/nonexistent.csv" "$tailguard" import /nonexistent.csv --store "$db" --series "$key"
expect 2 "give --store or --config, not both" \
  "$tailguard" import "$dir/nab.csv" --store "$db" --config "$dir/gateway.yaml" --series "$key"
# Percentiles out of order (columns swapped, a unit mixed up).
bad order 'time,p50,p99\n'"$t0"',0.02,0.012\n' "order.csv:2: p50 (0.02) is above p99 (0.012): a minute's percentiles rise from p50 to max" --series "$key"
bad meanmax 'time,mean,max\n'"$t0"',0.3,0.2\n' "meanmax.csv:2: mean (0.3) is above max (0.2)" --series "$key"
# Every bad row is named, not only the first: three here, then the count.
bad many 'time,p99\n'"$t0"',x\n'"$t1"',-1\nnever,0.1\n' 'many.csv:2: p99: expected a non-negative number, got "x"' --series "$key"
for want in 'many.csv:3: p99: expected a non-negative number, got "-1"' 'many.csv:4: time:' \
  '3 bad rows; nothing was changed'; do
  printf '%s\n' "$out" | grep -q -- "$want" || fail "not in the report: $want: $out"
done
printf 'time,p99\n' >"$dir/lots.csv"
i=0; while [ $i -lt 25 ]; do echo "bad$i,0.1" >>"$dir/lots.csv"; i=$((i + 1)); done
expect 2 "and 5 more bad rows (25 in all)" "$tailguard" import "$dir/lots.csv" --store "$db" --series "$key"
[ "$(cksum <"$db")" = "$before" ] || fail "a rejected import changed the store"

# NAB's data is from 2014, far outside the retention: --shift-to-now moves it to the present,
# the last row in the minute that just ended, the spacing kept.
printf 'timestamp,value\n2014-02-14 14:30:00,20\n2014-02-14 14:35:00,25\n2014-02-14 14:40:00,30\n' >"$dir/nab2014.csv"
bad nab2014 "$(cat "$dir/nab2014.csv")\n" "is older than the store's history_retention" --series "$key" --unit ms
expect 0 '"points": 3' \
  "$tailguard" import "$dir/nab2014.csv" --store "$db" --series "$key" --unit ms --shift-to-now --json
to=$(date -u -d "$(printf '%s\n' "$out" | sed -n 's/^  "to": "\(.*\)",*$/\1/p')" +%s)
from=$(date -u -d "$(printf '%s\n' "$out" | sed -n 's/^  "from": "\(.*\)",*$/\1/p')" +%s)
[ $((to - from)) -eq 660 ] || fail "shifted span $from..$to is not the file's 11 minutes: $out"
late=$(( $(date +%s) - to ))
[ "$late" -ge 0 ] && [ "$late" -le 120 ] || fail "the shifted last minute ends ${late}s before now: $out"

# A store that cannot be made is a runtime failure.
expect 1 "tailguard import: " "$tailguard" import "$dir/nab.csv" --store "$dir/no/such/dir/x.db" --create --series "$key"
echo "import cli: ok"
