#!/bin/sh
# A real Alertmanager (Debian's prometheus-alertmanager) receives tailguard's alerts through its
# API v2 and routes them to a webhook receiver in the suite: the firing and the resolved
# notification arrive there with the alert's labels and annotations. `tailguard alerts` shows the
# alert and the delivery.
# Usage: alertmanager_delivery.sh TAILGUARD TG_TEST_UPSTREAM
set -eu
# A minimal KServe v2 request.
body='{"inputs":[{"name":"x","shape":[1],"datatype":"FP32","data":[1]}]}'
tailguard=${1:?usage: alertmanager_delivery.sh TAILGUARD TG_TEST_UPSTREAM}
upstream=${2:?usage: alertmanager_delivery.sh TAILGUARD TG_TEST_UPSTREAM}
. "$(dirname "$0")/harness.sh"
need prometheus-alertmanager curl jq

# The model server and, separately, the webhook receiver Alertmanager delivers to.
"$upstream" --listen 127.0.0.1:0 >"$dir/model.log" 2>&1 &
pids="$pids $!"
"$upstream" --listen 127.0.0.1:0 >"$dir/hook.log" 2>&1 &
pids="$pids $!"
wait_until "the model server" 30 listening "$dir/model.log"
wait_until "the webhook receiver" 30 listening "$dir/hook.log"
model=$(sed -n 's/^listening on //p' "$dir/model.log")
hook=$(sed -n 's/^listening on //p' "$dir/hook.log")

am_port=$("$upstream" --free-port)
cat >"$dir/alertmanager.yml" <<YAML
route:
  receiver: hook
  group_by: [alertname]
  group_wait: 1s
  group_interval: 1s
  repeat_interval: 1h
receivers:
  - name: hook
    webhook_configs:
      - url: http://$hook/am-hook
        send_resolved: true
YAML
prometheus-alertmanager --config.file="$dir/alertmanager.yml" --storage.path="$dir/am-data" \
  --web.listen-address="127.0.0.1:$am_port" --cluster.listen-address= \
  >"$dir/alertmanager.log" 2>&1 &
pids="$pids $!"
wait_until "Alertmanager to be ready" 30 curl -sf "http://127.0.0.1:$am_port/-/ready"

cat >"$dir/rules.yaml" <<YAML
route:
  receiver: am
  group_wait: 0s
  group_interval: 1s
receivers:
  - name: am
    alertmanager: {url: "http://127.0.0.1:$am_port"}
rules:
  - name: slow_requests
    select: '{stage="total"}'
    stat: p99
    above: 50ms
    severity: critical
    labels: {team: ml}
    annotations: {summary: "P99 above 50 ms"}
    debounce: {pre_alert_after: 1, alert_after: 0s, resolve_after: 2s}
YAML
cat >"$dir/gateway.yaml" <<YAML
listen: 127.0.0.1:0
threads: 1
rules_file: rules.yaml
store: {path: events.db}
routes:
  - name: rank
    prefix: /v2/
    upstream: $model
YAML
"$tailguard" serve --config "$dir/gateway.yaml" >"$dir/gateway.log" 2>&1 &
gateway_pid=$!
pids="$pids $gateway_pid"
wait_until "the gateway" 30 listening "$dir/gateway.log"
gw=$(sed -n 's/.*listening on \([0-9.:]*\).*/\1/p' "$dir/gateway.log")
echo "gateway at $gw, alertmanager at 127.0.0.1:$am_port, webhook receiver at $hook"

# Slow requests (100 ms) for a few seconds: the P99 breaches 50 ms and the alert fires.
(while :; do
   curl -s -o /dev/null -X POST -H 'X-Test-Delay-Ms: 100' "http://$gw/v2/models/rank/infer" -d "$body"
 done) &
traffic=$!
hook_has() {
  curl -sf "http://$hook/test/requests" |
    jq -e --arg s "$1" '[.[] | select(.target == "/am-hook") | .body | fromjson
                         | select(.status == $s)] | length > 0'
}
wait_until "a firing notification from Alertmanager" 60 hook_has firing
kill "$traffic"; wait "$traffic" 2>/dev/null || true; traffic=
echo "firing notification received"

curl -sf "http://$hook/test/requests" |
  jq -e '[.[] | select(.target == "/am-hook") | .body | fromjson | select(.status == "firing")][0]
         | .alerts[0] as $a
         | $a.labels.alertname == "slow_requests" and $a.labels.severity == "critical"
           and $a.labels.team == "ml" and $a.labels.model == "rank" and $a.labels.stage == "total"
           and $a.annotations.summary == "P99 above 50 ms"
           and ($a.generatorURL | startswith("http://"))' >/dev/null ||
  fail "the firing notification lacks the alert's labels: $(curl -s "http://$hook/test/requests")"

# Fast requests: the P99 falls under 50 ms, the alert resolves, and the resolution reaches the
# receiver. (No traffic would not resolve it: no data is not a recovery, docs/alerting.md.)
(while :; do
   curl -s -o /dev/null -X POST "http://$gw/v2/models/rank/infer" -d "$body"
 done) &
traffic=$!
wait_until "a resolved notification from Alertmanager" 90 hook_has resolved
kill "$traffic"; wait "$traffic" 2>/dev/null || true; traffic=
curl -sf "http://$hook/test/requests" |
  jq -e '[.[] | select(.target == "/am-hook") | .body | fromjson | select(.status == "resolved")][0]
         | .alerts[0].labels.alertname == "slow_requests" and .alerts[0].status == "resolved"' \
  >/dev/null || fail "the resolved notification is wrong: $(curl -s "http://$hook/test/requests")"
echo "resolved notification received"

# The event store has the alert and both deliveries.
"$tailguard" alerts --db "$dir/events.db" list --all >"$dir/list.txt" 2>&1 ||
  fail "tailguard alerts list: $(cat "$dir/list.txt")"
grep -q 'slow_requests' "$dir/list.txt" || fail "alerts list lacks the alert: $(cat "$dir/list.txt")"
grep -q 'resolved' "$dir/list.txt" || fail "alerts list does not show it resolved: $(cat "$dir/list.txt")"
"$tailguard" alerts --db "$dir/events.db" outbox --json >"$dir/outbox.json" 2>&1 ||
  fail "tailguard alerts outbox: $(cat "$dir/outbox.json")"
jq -e '[.[] | select(.receiver == "am" and .state == "delivered")] | length >= 2' \
  "$dir/outbox.json" >/dev/null || fail "the outbox does not show both deliveries: $(cat "$dir/outbox.json")"

kill -TERM "$gateway_pid"
wait "$gateway_pid" || fail "tailguard serve exited with $? on SIGTERM"
echo "alertmanager delivery: ok"
