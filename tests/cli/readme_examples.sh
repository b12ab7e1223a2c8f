#!/bin/sh
# The README's examples, run as a new user pastes them (regression, issue 16: several failed as
# pasted). Each command below is first looked up in README.md, verbatim: an example edited in
# the README without this test fails here, and so does one that stops working. The figures the
# README shows for `replay` are compared with what the command prints now.
# Run in a scratch copy of examples/ and tests/data/, with `tailguard` on PATH; the example
# gateway's upstream ports and its listen port are moved to free ones (the only change), and the
# commands' localhost:8080 with them.
# Usage: readme_examples.sh TAILGUARD TG_TEST_UPSTREAM WORKDIR
set -u
[ -n "${TG_DEBUG:-}" ] && set -x
tailguard=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
upstream=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
work=$3
root=$(cd "$(dirname "$0")/../.." && pwd)
readme="$root/README.md"
. "$root/tests/integration/harness.sh"
. "$root/tests/cli/lib.sh"
need curl node
rm -rf "$work"; mkdir -p "$work/bin" "$work/tests"
cp -r "$root/examples" "$work/examples"
cp -r "$root/tests/data" "$work/tests/data"
ln -s "$tailguard" "$work/bin/tailguard"
PATH="$work/bin:$PATH"
cd "$work" || exit 1

# in_readme TEXT: the text is in the README, character for character.
in_readme() { grep -qF -- "$1" "$readme" || fail "not in README.md (edit both): $1"; }
# run_example COMMAND: in the README, then run by the shell; exit 0 required. Output in $out.
run_example() {
  in_readme "$1"
  shown=$(printf '%s' "$1" | sed "s/localhost:8080/localhost:$port/g; s/127.0.0.1:8080/127.0.0.1:$port/g")
  out=$(sh -c "$shown" 2>&1); rc=$?
  [ "$rc" -eq 0 ] || fail "README example exited $rc: $1: $out"
}

# --- Offline commands. ---
port=8080
run_example 'tailguard selftest-record --threads 2 --requests 20000'
printf '%s\n' "$out" | grep -q '^total  *40000 ' || fail "selftest-record: no total row: $out"

# replay: the summary line the README shows is the one printed now.
run_example 'tailguard replay tests/data/requests.csv --resolution 10s'
summary=$(printf '%s\n' "$out" | tail -1)
in_readme "$summary"
first=$(printf '%s\n' "$out" | head -1)
in_readme "$first"

run_example 'tailguard backtest --data tests/data/p99_shift.csv --windows tests/data/p99_shift.windows.csv'
printf '%s\n' "$out" | grep -q 'windows, 1 detected' || fail "backtest: $out"

# --- The gateway: examples/gateway.yaml on free ports, a tg_test_upstream as every upstream. ---
start_upstream "$upstream"
port=$("$upstream" --free-port)
# (The two vLLM replicas become one upstream under two names: a route may not list one twice.)
sed -i "s/127.0.0.1:8080/127.0.0.1:$port/; s/127.0.0.1:800[01]/$up/g; s/127.0.0.1:9000/$up/g
        s/127.0.0.1:8002/localhost:${up##*:}/" examples/gateway.yaml
in_readme 'tailguard serve --config examples/gateway.yaml'
tailguard serve --config examples/gateway.yaml >"$dir/serve.log" 2>&1 &
pids="$pids $!"
wait_until "tailguard serve" 30 curl -sf "http://127.0.0.1:$port/readyz"

run_example "curl -s localhost:8080/v2/models/risk/infer -d '{\"inputs\":[{\"name\":\"x\",\"datatype\":\"FP32\",\"shape\":[1,4],\"data\":[1,2,3,4]}]}'"
# The latency histograms are exposed from the analysis loop's first tick (1 s) on.
has_total() { curl -s "http://127.0.0.1:$port/metrics" | grep -q 'stage="total"'; }
wait_until "the first tick" 10 has_total
run_example "curl -s localhost:8080/metrics | grep 'stage=\"total\"'"
printf '%s\n' "$out" | grep -q 'model="risk"' || fail "metrics: no risk series: $out"
# The braces are not a curl glob with -g (without it curl refuses the URL).
run_example "curl -sg 'localhost:8080/api/v1/series?match={stage=\"total\"}'"
printf '%s\n' "$out" | grep -q '"series"' || fail "series API: $out"
run_example 'curl -s localhost:8080/api/v1/samples?limit=5'
printf '%s\n' "$out" | grep -q '"samples"' || fail "samples API: $out"

# The load scenario against the example gateway: answers from the model route, not 405s from
# the dashboard at / (regression: 86 % were 405).
run_example 'tailguard loadgen http://127.0.0.1:8080/v2/models/risk/infer --scenario examples/scenario.yaml --json > report.json'
node -e '
  const r = JSON.parse(require("fs").readFileSync("report.json", "utf8"));
  const q = r.requests, ok = q.responses["2xx"];
  if (!(q.completed > 0 && ok / q.completed > 0.99)) { console.error(JSON.stringify(q)); process.exit(1); }
' 2>&1 || fail "loadgen scenario: not 2xx: $(head -c 2000 report.json)"

# The store commands against the example gateway's store (examples/tailguard.db, next to the
# configuration), as the README writes them.
run_example 'tailguard alerts --config examples/gateway.yaml list   # active alerts; --all for ended ones'
run_example 'tailguard alerts --config examples/gateway.yaml silence add --match '"'"'{model="rank"}'"'"' --duration 2h --comment "planned deploy"'
printf '%s\n' "$out" | grep -q '^silence 1: ' || fail "silence add: $out"
run_example 'tailguard alerts --config examples/gateway.yaml outbox --state pending   # still to be delivered'
run_example 'tailguard diagnose --cases examples/diagnose --out ranking.csv'
sed -n 2p ranking.csv | grep -q '^demo-1,1,risk/stage_feature_fetch_p99_s,.*,dependency,cause,' ||
  fail "diagnose --cases: rank 1 is not the feature fetch: $(sed -n 2p ranking.csv)"
run_example 'tailguard diagnose --slices examples/diagnose/latency_by_label.csv --at 1700000600 --out slices.csv'
in_readme "$(sed -n 2p slices.csv)"
echo "readme examples: ok"
