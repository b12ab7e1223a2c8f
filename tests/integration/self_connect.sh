#!/bin/sh
# Issue 15, finding 9: an upstream whose port is in the ephemeral range, with nothing listening,
# can be "connected" to by a TCP simultaneous open of the gateway's socket with itself; the
# gateway then talked to itself and held the port the upstream restarts on. It now refuses such
# a connection (tailguard_upstream_connections_dropped_total{reason="self"}) and backs off.
#
# Runs in a network namespace of its own (unshare -rn: its own loopback and its own
# ip_local_port_range, narrowed to 101 ports around the upstream's, so that a self-connection
# comes within a few hundred connects), and skips (exit 77) where namespaces are not allowed.
# Usage: self_connect.sh TAILGUARD TG_TEST_UPSTREAM
set -u
# Each part runs in a namespace of its own, so that no socket of the first (in TIME_WAIT, say)
# is left on the port for the second.
if [ -z "${TG_NETNS_PART:-}" ]; then
  command -v unshare >/dev/null || { echo "SKIP: unshare is not installed"; exit 77; }
  unshare -rn true 2>/dev/null || { echo "SKIP: no user and network namespaces here"; exit 77; }
  TG_NETNS_PART=1 unshare -rn sh "$0" "$@" || exit 1
  TG_NETNS_PART=2 unshare -rn sh "$0" "$@" || exit 1
  echo "self connect: ok"
  exit 0
fi
tailguard=$1
upstream=$2
. "$(dirname "$0")/harness.sh"
need curl ip
ip link set lo up || fail "cannot bring up the namespace's loopback"
echo "40000 40100" >/proc/sys/net/ipv4/ip_local_port_range ||
  fail "cannot narrow ip_local_port_range in the namespace"
up_port=40050
gw_port=18080

serve() {  # serve MAX_FAILS: the gateway in front of 127.0.0.1:$up_port
  cat >"$dir/gateway.yaml" <<YAML
listen: 127.0.0.1:$gw_port
threads: 2
store: {path: ""}
health: {max_fails: $1}
routes:
  - {name: up, prefix: /, upstream: "127.0.0.1:$up_port"}
YAML
  "$tailguard" serve --config "$dir/gateway.yaml" >"$dir/gateway.log" 2>&1 &
  gateway=$!
  pids="$pids $gateway"
  # From a port outside the ephemeral range: curl closes first, and its socket's TIME_WAIT
  # (without SO_REUSEADDR) on the upstream's port would keep the upstream from binding it for a
  # minute (what failed a CI run, about one run in a hundred).
  wait_until "the gateway" 30 curl -sf --local-port 32000-32999 "http://127.0.0.1:$gw_port/healthz"
}
self_count() {
  curl -sf --local-port 32000-32999 "http://127.0.0.1:$gw_port/metrics" |
    sed -n 's/^tailguard_upstream_connections_dropped_total{reason="self"} //p'
}

if [ "$TG_NETNS_PART" = 1 ]; then
# 1. With passive health off, every request connects: within a few hundred connects one picks
# the upstream's own port as its local port and meets itself. Each is refused, and each request
# gets a 502 without the gateway reading its own request back as an answer.
serve 0
seen=0
i=0
while [ "$i" -lt 3000 ] && [ "$seen" = 0 ]; do
  "$tailguard" loadgen "http://127.0.0.1:$gw_port/x" --rate 2000 --duration 1s -c 4 --json -q \
    >"$dir/loadgen.json" 2>/dev/null || fail "loadgen failed"
  seen=$(self_count)
  i=$((i + 2000))
done
[ "${seen:-0}" != 0 ] || fail "no self-connection in $i connects (the test could not provoke one)"
echo "self-connections refused: $seen"
  exit 0

fi

# 2. The upstream comes up on its port (nothing of the gateway's holds it: each self-connection
# was aborted at once, leaving no TIME_WAIT on the port) and requests reach it within the
# gateway's next probe.
# The test's own clients connect from ports outside the ephemeral range, so that only the
# gateway's connects can take the upstream's port.
serve 3
get() { curl -s --local-port 30000-30999 "http://127.0.0.1:$gw_port$1"; }
i=0
while [ "$i" -lt 200 ]; do get /down >/dev/null; i=$((i + 1)); done
bound=0
for attempt in 1 2 3; do
  get /down >/dev/null
  "$upstream" --listen "127.0.0.1:$up_port" >"$dir/upstream.log" 2>&1 &
  up_pid=$!
  wait_until "the upstream to start or fail" 10 sh -c "[ -s '$dir/upstream.log' ]"
  if listening "$dir/upstream.log"; then
    bound=$attempt
    pids="$pids $up_pid"
    break
  fi
  sleep 0.2
done
[ "$bound" != 0 ] || fail "the upstream could not bind its port: $(cat "$dir/upstream.log")"
wait_until "requests to reach the upstream" 15 sh -c "curl -sf --local-port 31000-31999 \
  http://127.0.0.1:$gw_port/after | grep -q '\"ok\":true'"
echo "the upstream bound its port at attempt $bound and answers through the gateway"
