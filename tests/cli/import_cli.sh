#!/bin/sh
# `tailguard import`: good files (a series column, --series with unit suffixes, NAB's
# timestamp,value) land in the store and re-importing replaces; --dry-run writes nothing; every
# bad input names file:line and the field, exits 2 and leaves the store as it was.
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

# A file with a series column: two series, latencies in seconds; unsorted rows are fine.
cat >"$dir/two.csv" <<'CSV'
time,series,count,p50,p99,max
2026-03-02 10:01:00,"tailguard_request_duration_seconds{version=""1"",model=""risk"",route=""/v2"",stage=""total""}",600,0.020,0.080,0.210
2026-03-02 10:00:00,"tailguard_request_duration_seconds{model=""risk"",route=""/v2"",stage=""total"",version=""1""}",610,0.021,0.081,0.200
2026-03-02T10:00:30Z,"tailguard_request_duration_seconds{model=""rank"",stage=""total""}",50,0.005,,0.010
CSV
expect 0 "would import 2 series, 3 points from 2026-03-02 10:00:00 to 2026-03-02 10:01:00" \
  "$tailguard" import "$dir/two.csv" --store "$db" --dry-run
[ -f "$db" ] && fail "--dry-run created the store"
expect 0 "imported 2 series, 3 points .* into $db" "$tailguard" import "$dir/two.csv" --store "$db"
expect 0 "$id  $key  2 points" "$tailguard" import "$dir/two.csv" --store "$db"
expect 0 "(3 minutes replaced)" "$tailguard" import "$dir/two.csv" --store "$db"
expect 0 "/?view=series&id=" "$tailguard" import "$dir/two.csv" --store "$db"
expect 0 "\"url\": \"/?view=series&id=$id\"" "$tailguard" import "$dir/two.csv" --store "$db" --json

# One series named on the command line, latencies in milliseconds by column suffix.
cat >"$dir/ms.csv" <<'CSV'
timestamp,p50_ms,p90_ms,p99_ms,p999_ms,mean_ms,count
1772445720,20,40,80,120,25,100
1772445780,21,41,81,121,26,100
CSV
expect 0 "imported 1 series, 2 points from 2026-03-02 10:02:00 to 2026-03-02 10:03:00" \
  "$tailguard" import "$dir/ms.csv" --store "$db" --series "$key"

# NAB's layout: value is P99, here in microseconds.
printf 'timestamp,value\n2026-03-02 10:04:00,80000\n2026-03-02 10:05:00,\n' >"$dir/nab.csv"
expect 0 "imported 1 series, 2 points" \
  "$tailguard" import "$dir/nab.csv" --store "$db" --series "$key" --unit us

# The store path from a gateway configuration.
printf 'store: {path: gw.db}\nroutes: [{prefix: /, upstream: "127.0.0.1:9"}]\n' >"$dir/gateway.yaml"
expect 0 "into $dir/gw.db" "$tailguard" import "$dir/nab.csv" --config "$dir/gateway.yaml" --series "$key"

# Errors: exit 2, the file, line and field named, and the store unchanged.
before=$(cksum <"$db")
bad() {  # bad NAME CONTENT PATTERN [ARGS...]
  name=$1; content=$2; pattern=$3; shift 3
  printf "$content" >"$dir/$name.csv"
  expect 2 "$pattern" "$tailguard" import "$dir/$name.csv" --store "$db" "$@"
}
bad noseries 'time,p99\n2026-03-02 10:00:00,0.1\n' "noseries.csv:1: no series column"
bad badkey 'time,p99\n2026-03-02 10:00:00,0.1\n' "--series: .*" --series 'model="x"}'
bad notime 'when,p99\n2026-03-02 10:00:00,0.1\n' 'notime.csv:1: column "when" is not one of'
bad p95 'time,p95\n2026-03-02 10:00:00,0.1\n' 'p95.csv:1: column "p95" is not one of' --series "$key"
bad twice 'time,p99,p99_ms\nx,1,2\n' 'twice.csv:1: columns "p99" and "p99_ms" hold the same statistic' --series "$key"
bad nostat 'time,series\n2026-03-02 10:00:00,m\n' 'nostat.csv:1: no statistic column'
bad both 'time,series,p99\n2026-03-02 10:00:00,m,0.1\n' 'both.csv:1: the file has a series column; --series is for files without' --series "$key"
bad badtime 'time,p99\n2026-03-02 10:00:00,0.1\nyesterday,0.2\n' 'badtime.csv:3: time: .*yesterday' --series "$key"
bad badvalue 'time,p99\n2026-03-02 10:00:00,0.1\n2026-03-02 10:01:00,fast\n' 'badvalue.csv:3: p99: expected a non-negative number, got "fast"' --series "$key"
bad negative 'time,p99\n2026-03-02 10:00:00,-1\n' 'negative.csv:2: p99: expected a non-negative number' --series "$key"
bad fraction 'time,count\n2026-03-02 10:00:00,1.5\n' 'fraction.csv:2: count: expected a whole number' --series "$key"
bad dup 'time,p99\n2026-03-02 10:00:10,0.1\n2026-03-02 10:00:50,0.2\n' 'dup.csv:3: time: a second row for .* in the minute of 2026-03-02 10:00:00 (the first is line 2)' --series "$key"
bad regex 'time,series,p99\n2026-03-02 10:00:00,"m{a=~""x""}",0.1\n' 'regex.csv:2: series: label a: a series key has only = matchers'
bad nometric 'time,series,p99\n2026-03-02 10:00:00,"{a=""x""}",0.1\n' 'nometric.csv:2: series: needs a metric name'
bad ragged 'time,p99\n2026-03-02 10:00:00,0.1,7\n' 'ragged.csv:2' --series "$key"
bad empty 'time,p99\n' 'empty.csv: no data rows' --series "$key"
bad unit 'time,p99\n2026-03-02 10:00:00,0.1\n' '--unit: expected s, ms or us, got "h"' --series "$key" --unit h
expect 2 "/nonexistent.csv" "$tailguard" import /nonexistent.csv --store "$db" --series "$key"
expect 2 "give --store or --config, not both" \
  "$tailguard" import "$dir/nab.csv" --store "$db" --config "$dir/gateway.yaml" --series "$key"
[ "$(cksum <"$db")" = "$before" ] || fail "a rejected import changed the store"

# A store that cannot be opened is a runtime failure.
expect 1 "tailguard import: " "$tailguard" import "$dir/nab.csv" --store "$dir/no/such/dir/x.db" --series "$key"
echo "import cli: ok"
