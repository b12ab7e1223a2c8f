#!/bin/sh
# Nothing lost: a webhook receiver is down while 12 alerts fire, tailguard is killed (SIGKILL) with
# the notifications still pending and started again on the same event store, then the receiver
# comes up. Every notification in the store reaches the receiver, exactly once by idempotency
# key; the restarted tailguard neither fires the active alerts again nor forgets them (they
# resolve, and the resolutions are delivered too).
# Usage: outbox_kill_restart.sh TAILGUARD TG_TEST_UPSTREAM
set -eu
# A minimal KServe v2 request.
body='{"inputs":[{"name":"x","shape":[1],"datatype":"FP32","data":[1]}]}'
tailguard=${1:?usage: outbox_kill_restart.sh TAILGUARD TG_TEST_UPSTREAM}
upstream=${2:?usage: outbox_kill_restart.sh TAILGUARD TG_TEST_UPSTREAM}
. "$(dirname "$0")/harness.sh"
need curl jq
models=12
alerts() { "$tailguard" alerts --db "$dir/events.db" "$@"; }
# Outbox rows as JSON.
outbox() { alerts outbox --limit 100000 --json; }
count_state() { outbox | jq --arg s "$1" '[.[] | select(.state == $s)] | length'; }
at_least() { [ "$("$@")" -ge "$target" ]; }
# Requests to $models models, each model's rate above 0.5/s, until killed: one alert per model.
start_traffic() {
  (while :; do
     i=0
     while [ "$i" -lt "$models" ]; do
       curl -s -o /dev/null -X POST "http://$gw/v2/models/m$i/infer" -d "$body" || true
       i=$((i + 1))
     done
     sleep 0.1
   done) &
  traffic=$!
}

"$upstream" --listen 127.0.0.1:0 >"$dir/model.log" 2>&1 &
pids="$pids $!"
wait_until "the model server" 30 listening "$dir/model.log"
model=$(sed -n 's/^listening on //p' "$dir/model.log")
hook_port=$("$upstream" --free-port)  # nothing listens there yet: the receiver is down

cat >"$dir/rules.yaml" <<YAML
route:
  receiver: hook
  group_by: ['...']          # one notification per alert
  group_wait: 0s
  group_interval: 1s
receivers:
  - name: hook
    webhook: {url: "http://127.0.0.1:$hook_port/hook"}
rules:
  - name: busy_model
    select: '{stage="total"}'
    stat: rate
    above: 0.5
    severity: warning
    debounce: {pre_alert_after: 1, alert_after: 0s, resolve_after: 2s}
YAML
cat >"$dir/gateway.yaml" <<YAML
listen: 127.0.0.1:0
threads: 1
rules_file: rules.yaml
store: {path: events.db}
delivery: {initial_backoff: 200ms, max_backoff: 1s}
routes:
  - name: infer
    prefix: /v2/
    upstream: $model
YAML
start_gateway() {
  "$tailguard" serve --config "$dir/gateway.yaml" >"$dir/gateway$1.log" 2>&1 &
  gateway_pid=$!
  pids="$pids $gateway_pid"
  wait_until "the gateway" 30 listening "$dir/gateway$1.log"
  gw=$(sed -n 's/.*listening on \([0-9.:]*\).*/\1/p' "$dir/gateway$1.log")
}
start_gateway 1
echo "gateway at $gw; receiver port $hook_port (down)"

# Traffic to $models models keeps each one's rate above 0.5/s: one alert per model.
start_traffic

# Every alert has fired and its notification waits in the outbox, tried at least once.
target=$models
wait_until "$models pending notifications" 60 at_least count_state pending
# A receiver that is down gets one probe per backoff (the others wait behind it, untried).
tried() { outbox | jq '[.[] | select(.state == "pending" and .attempts >= 1)] | length'; }
target=1
wait_until "failed attempts against the down receiver" 30 at_least tried
fired_before=$(alerts list --json | jq '[.[] | select(.state == "alert")] | length')
[ "$fired_before" -eq "$models" ] || fail "expected $models active alerts before the kill, got $fired_before"

# SIGKILL in the middle, then the same store again. The traffic goes on (to the new address).
kill -KILL "$gateway_pid"
wait "$gateway_pid" 2>/dev/null || true
kill "$traffic"; wait "$traffic" 2>/dev/null || true
start_gateway 2
grep -q "alert state restored: $models active alert" "$dir/gateway2.log" ||
  fail "the restarted gateway did not restore the $models active alerts"
start_traffic
# A few ticks of the restarted engine with the alerts still breaching.
ticks() { curl -sf "http://$gw/metrics" | sed -n 's/^tailguard_analysis_ticks_total //p'; }
target=3
wait_until "3 ticks of the restarted gateway" 30 at_least ticks

# The receiver comes up on the port the notifications are addressed to.
"$upstream" --listen "127.0.0.1:$hook_port" >"$dir/hook.log" 2>&1 &
pids="$pids $!"
wait_until "the receiver" 30 listening "$dir/hook.log"
received() {
  curl -sf "http://127.0.0.1:$hook_port/test/requests" |
    jq '[.[] | select(.target == "/hook") | .headers["idempotency-key"]] | unique | length'
}
target=$models
wait_until "the $models firing notifications at the receiver" 60 at_least received

# Stop the traffic: the alerts resolve, and the resolutions are delivered as well.
kill "$traffic"; wait "$traffic" 2>/dev/null || true; traffic=
target=$((models * 2))
wait_until "the resolved notifications at the receiver" 90 at_least received
nothing_pending() { [ "$(count_state pending)" -eq 0 ]; }
wait_until "an empty outbox" 30 nothing_pending

# Exactly once by idempotency key: every key in the store arrived, and nothing else did.
outbox | jq -r '.[].idempotency_key' | sort >"$dir/stored.txt"
curl -sf "http://127.0.0.1:$hook_port/test/requests" |
  jq -r '.[] | select(.target == "/hook") | .headers["idempotency-key"]' | sort >"$dir/arrived.txt"
sort -u "$dir/arrived.txt" >"$dir/arrived-unique.txt"
cmp -s "$dir/stored.txt" "$dir/arrived-unique.txt" ||
  fail "stored and delivered keys differ: $(diff "$dir/stored.txt" "$dir/arrived-unique.txt")"
stored=$(wc -l <"$dir/stored.txt")
arrived=$(wc -l <"$dir/arrived.txt")
[ "$stored" -eq $((models * 2)) ] || fail "expected $((models * 2)) notifications in the store, got $stored"
restarted_fires=$(alerts list --all --json | jq '[.[] | select(.state == "alert" or .state == "resolved")] | length')
[ "$restarted_fires" -eq "$models" ] || fail "expected $models alert episodes, got $restarted_fires"
fires=$(alerts list --all --json | jq '[.[] | select(.fired_at != null)] | length')
[ "$fires" -eq "$models" ] || fail "expected $models alerts (one per model), got $fires: a restart fired again"
echo "stored $stored notifications, $arrived requests arrived, $(wc -l <"$dir/arrived-unique.txt") distinct keys"

kill -TERM "$gateway_pid"
wait "$gateway_pid" || fail "tailguard serve exited with $? on SIGTERM"
echo "outbox kill restart: ok"
