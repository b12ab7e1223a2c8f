#!/bin/sh
# `tailguard loadgen` end to end: usage and scenario errors exit 2 with a message saying what to
# fix; nothing listening exits 1; a real run against tg_test_upstream prints the table, the JSON
# report, and a histogram log with one line per interval.
# Usage: loadgen_cli.sh TAILGUARD TG_TEST_UPSTREAM EXAMPLE_SCENARIO
set -eu
tg=${1:?usage: loadgen_cli.sh TAILGUARD TG_TEST_UPSTREAM EXAMPLE_SCENARIO}
upstream_bin=${2:?}
example=${3:?}
. "$(dirname "$0")/../integration/harness.sh"

# expect_usage WHAT PATTERN ARGS...: exit code 2 and PATTERN (grep -E) in stderr.
expect_usage() {
  what=$1; pattern=$2; shift 2
  rc=0
  "$tg" loadgen "$@" >"$dir/out" 2>"$dir/err" || rc=$?
  [ "$rc" = 2 ] || fail "$what: exit $rc, expected 2: $(cat "$dir/err")"
  grep -Eq -- "$pattern" "$dir/err" || fail "$what: stderr lacks /$pattern/: $(cat "$dir/err")"
  echo "usage error ok: $what"
}

"$upstream_bin" --listen 127.0.0.1:0 >"$dir/upstream.log" 2>&1 &
pids="$pids $!"
wait_until "tg_test_upstream" 10 listening "$dir/upstream.log"
url="http://$(sed -n 's/^listening on //p' "$dir/upstream.log")"

expect_usage "bad URL" 'bad URL "http://127.0.0.1:notaport/".*expected http://HOST' \
  http://127.0.0.1:notaport/ --rate 10 --duration 1s
expect_usage "https" 'https is not supported' https://127.0.0.1/ --rate 10
expect_usage "negative rate" -- '--rate -5: must be more than 0' "$url/" --rate -5 --duration 1s
expect_usage "no rate" -- '--rate is required' "$url/"
expect_usage "bad duration" -- '--duration "soon"' "$url/" --rate 5 --duration soon
expect_usage "bad header" -- '--header "NoColon": expected NAME:VALUE' "$url/" --rate 5 -H NoColon
expect_usage "bad distribution" -- '--distribution' "$url/" --rate 5 --distribution gauss
expect_usage "missing body file" -- '--body @/nonexistent/b.json: cannot read' "$url/" --rate 5 \
  --body @/nonexistent/b.json
printf 'phases:\n  - duration: 1s\n    rat: 100\n' >"$dir/typo.yaml"
expect_usage "unknown scenario field" 'typo.yaml:3: phases\[0\]\.rat: unknown field; did you mean "rate"' \
  "$url/" --scenario "$dir/typo.yaml"
printf 'phases:\n  - duration: 1s\n    rate: -3\n' >"$dir/neg.yaml"
expect_usage "negative scenario rate" 'neg.yaml:3: phases\[0\]\.rate: must not be negative' \
  "$url/" --scenario "$dir/neg.yaml"
expect_usage "scenario and rate" -- '--rate cannot be combined with --scenario' "$url/" \
  --scenario "$example" --rate 5

# Nothing listening: a runtime failure.
dead=$("$upstream_bin" --free-port)
rc=0
"$tg" loadgen "http://127.0.0.1:$dead/" --rate 10 --duration 1s -q >"$dir/out" 2>"$dir/err" || rc=$?
[ "$rc" = 1 ] || fail "nothing listening: exit $rc, expected 1"
grep -q "cannot connect to http://127.0.0.1:$dead/" "$dir/err" || fail "nothing listening: $(cat "$dir/err")"
echo "runtime failure ok: nothing listening"

# A real run: the table.
"$tg" loadgen "$url/table" --rate 200 --duration 1s -q >"$dir/table" 2>"$dir/err" ||
  fail "table run failed: $(cat "$dir/err")"
grep -q '200 scheduled, 200 sent, 200 completed, 0 dropped' "$dir/table" || fail "table: $(cat "$dir/table")"
grep -Eq '^  p99\.99 ' "$dir/table" || fail "table has no p99.99: $(cat "$dir/table")"
echo "table ok"

# JSON and the histogram log; stderr is no terminal, so progress is plain lines (none in 2 s).
"$tg" loadgen "$url/json" --rate 300 --duration 2s --distribution poisson -m POST \
  -H 'Content-Type: application/json' --body '{"x": 1}' --json --histogram-log "$dir/h.log" \
  --interval 500ms >"$dir/report.json" 2>"$dir/err" || fail "json run failed: $(cat "$dir/err")"
grep -q '"latency_seconds"' "$dir/report.json" || fail "json: $(cat "$dir/report.json")"
grep -q '"p99_99"' "$dir/report.json" || fail "json has no p99_99"
grep -Eq '"2xx": [1-9][0-9]*' "$dir/report.json" || fail "json has no 2xx: $(cat "$dir/report.json")"
head -1 "$dir/h.log" | grep -q '^#tailguard-histogram-log 1$' || fail "log header: $(head -3 "$dir/h.log")"
lines=$(grep -cv '^#' "$dir/h.log")
[ "$lines" -ge 4 ] && [ "$lines" -le 6 ] || fail "histogram log has $lines intervals, expected 4-6"
echo "json and histogram log ok ($lines intervals)"

# The example scenario, cut short by SIGTERM (a background job of a script ignores SIGINT): it
# reports what completed and exits 0.
"$tg" loadgen "$url/" --scenario "$example" >"$dir/scenario.out" 2>"$dir/scenario.err" &
lg=$!
sleep 3
kill -TERM "$lg"
rc=0
wait "$lg" || rc=$?
[ "$rc" = 0 ] || fail "interrupted scenario run: exit $rc: $(cat "$dir/scenario.err")"
grep -q 'terminated: reporting what completed' "$dir/scenario.err" || fail "no interrupt note: $(cat "$dir/scenario.err")"
grep -q 'stopped early' "$dir/scenario.out" || fail "no 'stopped early': $(cat "$dir/scenario.out")"
grep -q 'warmup' "$dir/scenario.out" || fail "no phase table: $(cat "$dir/scenario.out")"
echo "interrupted scenario ok"
echo "loadgen cli: ok"
