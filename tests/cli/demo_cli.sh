#!/bin/sh
# `tailguard demo`, shortened: the gateway serves the demo models, the scenario runs end to end,
# and the injected incident (much wider inputs to the text classifier) raises an alert on the
# text model's total latency. Bad flags and scenario files are refused with exit code 2.
# Usage: demo_cli.sh TAILGUARD WORKDIR
set -u
tailguard=$1
dir=$2
rm -rf "$dir"
mkdir -p "$dir"
. "$(dirname "$0")/lib.sh"

expect 2 "duration: expected at least 10s" "$tailguard" demo --duration 1s
expect 2 "nope/risk_mlp_v1.pt is missing" "$tailguard" demo --models "$dir/nope"
printf 'phases:\n  - {name: a, duration: 10s}\n  - {name: b, duratoin: 5s}\n' >"$dir/bad.yaml"
expect 2 "bad.yaml:3: phases\[1\].duratoin: unknown field" "$tailguard" demo --scenario "$dir/bad.yaml"
printf 'phases:\n  - {name: a, duration: 10s, text_rate: -1}\n' >"$dir/neg.yaml"
expect 2 "neg.yaml:2: phases\[0\].text_rate: expected 0 to 100000" "$tailguard" demo --scenario "$dir/neg.yaml"

# The run: the default scenario scaled to 40 s, on a free port, with a private redis-server as
# the feature store (scripts/install-deps installs it).
"$tailguard" demo --duration 40s --listen 127.0.0.1:0 --feature-store redis --json \
  --store "$dir/demo.db" >"$dir/demo.log" 2>&1
code=$?
[ "$code" -eq 0 ] || { cat "$dir/demo.log"; fail "demo exited $code"; }
summary=$(tail -1 "$dir/demo.log")
echo "$summary" | jq -e '.interrupted == false' >/dev/null || fail "interrupted: $summary"
echo "$summary" | jq -e '.feature_store | startswith("redis 127.0.0.1:")' >/dev/null ||
  fail "not on redis: $summary"
echo "$summary" | jq -e '.load.text.requests > 500 and .load.risk.requests > 1500' >/dev/null ||
  { cat "$dir/demo.log"; fail "too few requests: $summary"; }
echo "$summary" | jq -e '.incidents[0].phase == "wide_inputs" and .incidents[0].detected' >/dev/null ||
  { cat "$dir/demo.log"; fail "the wide-inputs incident was not detected: $summary"; }
echo "$summary" | jq -e '.incidents[0].series | contains("model=\"text\"")' >/dev/null ||
  fail "detected on the wrong series: $summary"
grep -q "^FIGURE demo_detect_seconds" "$dir/demo.log" || fail "no FIGURE line"
grep -q "phase wide_inputs: injecting" "$dir/demo.log" || fail "no phase line"

# --store keeps the alerts: `tailguard report` of the first one writes both files from it; its
# errors say what is wrong with exit code 2.
id=$("$tailguard" alerts list --all --json --db "$dir/demo.db" | jq -r 'map(.id) | min')
[ -n "$id" ] && [ "$id" != null ] || fail "no alert kept in $dir/demo.db"
"$tailguard" report "$id" --db "$dir/demo.db" --out "$dir/reports" >"$dir/report.log" 2>&1 ||
  { cat "$dir/report.log"; fail "tailguard report $id failed"; }
grep -q "wrote .*alert-$id.html" "$dir/report.log" || fail "report: $(cat "$dir/report.log")"
grep -q "<h1 id=\"title\">Incident report · Alert #$id · p99_vs_baseline" "$dir/reports/alert-$id.html" ||
  fail "alert-$id.html has no title"
grep -qF '| pre\_alert | normal → pre\_alert' "$dir/reports/alert-$id.md" ||
  fail "alert-$id.md has no timeline"
expect 2 "no alert #9999 in .*demo.db: .tailguard alerts list --all" \
  "$tailguard" report 9999 --db "$dir/demo.db"
expect 2 "no event store at .*nope.db" "$tailguard" report 1 --db "$dir/nope.db"
expect 2 "--format \"pdf\": expected html, md or html,md" "$tailguard" report 1 --db "$dir/demo.db" --format pdf
expect 2 "--before \"soon\": expected a duration" "$tailguard" report 1 --db "$dir/demo.db" --before soon
echo "demo cli: ok ($(grep '^FIGURE' "$dir/demo.log"))"
