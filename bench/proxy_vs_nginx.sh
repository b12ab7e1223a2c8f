#!/usr/bin/env bash
# Side-by-side proxy benchmark: `tailguard serve` against nginx as a reverse proxy in front of the
# same nginx upstream (requests/s at saturation), then the latency tailguard adds at half of its
# maximum load, with what the nginx proxy adds at the same pacing as the reference. Prints FIGURE
# lines (DESIGN.md, Conventions); takes about a minute.
#
# Usage: bench/proxy_vs_nginx.sh BUILD_DIR     (tailguard is BUILD_DIR/apps/tailguard/tailguard)
# Environment (all optional):
#   C=32               wrk connections for the throughput runs
#   D=5                seconds per wrk run
#   ROUNDS=5           runs per target; the targets alternate and each reports its median
#   PACED_DELAY_MS=10  think time per connection in the paced latency runs (see below)
#   PROXY_UNDER_TEST=nginx  a second nginx proxy stands in for tailguard: tests this script
#                      while `tailguard serve` does not exist (the ratio should be near 1.0)
#   NGINX=/usr/sbin/nginx  WRK=wrk
#
# Pacing: wrk is closed-loop, so the latency runs pace it with a Lua delay(): after every answer a
# connection waits a random whole number of milliseconds, uniform in [0, 2 * PACED_DELAY_MS]
# (mean PACED_DELAY_MS; random so that the connections do not fire in lock-step bursts). With N
# connections the rate is about N / (PACED_DELAY_MS + latency); the script takes
# N = rate * PACED_DELAY_MS / 1000 for a rate of half of the proxy's measured maximum, so the
# achieved rate is a little lower (by latency / delay, a few %), alike for both targets. wrk does
# not correct for coordinated omission; at half load queues are short and the error is small.
set -euo pipefail

build=${1:?usage: bench/proxy_vs_nginx.sh BUILD_DIR}
C=${C:-32}
D=${D:-5}
ROUNDS=${ROUNDS:-5}
PACED_DELAY_MS=${PACED_DELAY_MS:-10}
PROXY_UNDER_TEST=${PROXY_UNDER_TEST:-tailguard}
NGINX=${NGINX:-/usr/sbin/nginx}
WRK=${WRK:-wrk}
here=$(cd "$(dirname "$0")" && pwd)
tailguard=$build/apps/tailguard/tailguard

die() {
  echo "proxy_vs_nginx: error: $*" >&2
  exit 1
}

for tool in "$NGINX" "$WRK" curl awk sed; do
  command -v "$tool" >/dev/null || die "'$tool' is not installed"
done
case $PROXY_UNDER_TEST in
  tailguard)
    [ -x "$tailguard" ] || die "no tailguard binary at $tailguard (build it first)"
    if ! "$tailguard" --help 2>/dev/null | grep -qE '^[[:space:]]+serve([[:space:]]|$)'; then
      die "$tailguard has no 'serve' sub-command yet, so there is no proxy to measure." \
        "(PROXY_UNDER_TEST=nginx runs the script with nginx in its place.)"
    fi
    put_name="tailguard"
    ;;
  nginx) put_name="nginx#2 (stand-in for tailguard)" ;;
  *) die "PROXY_UNDER_TEST must be tailguard or nginx, not '$PROXY_UNDER_TEST'" ;;
esac

tmp=$(mktemp -d "${TMPDIR:-/tmp}/tg-proxy-bench.XXXXXX")
pids=()
cleanup() {
  local pid
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Free loopback ports, from the kernel (port 0), all different.
free_port() {
  local helper=$build/tests/integration/tg_test_upstream
  if [ -x "$helper" ]; then
    "$helper" --free-port
  else
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
  fi
}
ports=()
while [ "${#ports[@]}" -lt 3 ]; do
  p=$(free_port)
  case " ${ports[*]} " in *" $p "*) ;; *) ports+=("$p") ;; esac
done
upstream_port=${ports[0]} nginx_port=${ports[1]} put_port=${ports[2]}

user_line=
[ "$(id -u)" = 0 ] && user_line="user root;"  # workers keep access to the 0700 temp dir

# start_nginx NAME TEMPLATE PORT [UPSTREAM_PORT]
start_nginx() {
  local name=$1 template=$2 port=$3 upstream=${4:-}
  mkdir -p "$tmp/$name.tmp"
  sed -e "s|@NAME@|$name|g" -e "s|@PREFIX@|$tmp|g" -e "s|@PORT@|$port|g" \
    -e "s|@UPSTREAM_PORT@|$upstream|g" -e "s|@USER_LINE@|$user_line|g" \
    "$here/nginx/$template" >"$tmp/$name.conf"
  "$NGINX" -p "$tmp/" -e "$tmp/$name.error.log" -c "$tmp/$name.conf" >"$tmp/$name.log" 2>&1 &
  pids+=($!)
}

start_tailguard() {
  cat >"$tmp/tailguard.yaml" <<EOF
listen: 127.0.0.1:$put_port
# The dashboard would answer GET / itself (before the routes).
dashboard: false
# Nothing to keep: no event store file.
store: {path: ""}
routes:
  - name: bench
    prefix: /
    upstream: 127.0.0.1:$upstream_port
EOF
  "$tailguard" serve --config "$tmp/tailguard.yaml" --threads 1 >"$tmp/tailguard.log" 2>&1 &
  pids+=($!)
}

# wait_up NAME PORT PID LOG...: until GET / answers "ok" (the upstream's body), or 15 s.
wait_up() {
  local name=$1 port=$2 pid=$3
  shift 3
  local deadline=$((SECONDS + 15)) body
  while :; do
    body=$(curl -sS --max-time 1 "http://127.0.0.1:$port/" 2>/dev/null || true)
    [ "$body" = ok ] && return 0
    if ! kill -0 "$pid" 2>/dev/null || [ "$SECONDS" -ge "$deadline" ]; then
      echo "proxy_vs_nginx: error: $name did not come up on 127.0.0.1:$port" \
        "(last answer: '${body:-none}'); its log:" >&2
      local log
      for log in "$@"; do [ -f "$log" ] && sed 's/^/  | /' "$log" >&2; done
      exit 1
    fi
    sleep 0.1
  done
}

echo "== proxy_vs_nginx: wrk -t1 -c$C -d${D}s x $ROUNDS rounds; upstream nginx on :$upstream_port"
start_nginx upstream upstream.conf.in "$upstream_port"
wait_up "nginx upstream" "$upstream_port" "${pids[-1]}" "$tmp/upstream.log" \
  "$tmp/upstream.error.log"
start_nginx proxy proxy.conf.in "$nginx_port" "$upstream_port"
wait_up "nginx proxy" "$nginx_port" "${pids[-1]}" "$tmp/proxy.log" "$tmp/proxy.error.log"
if [ "$PROXY_UNDER_TEST" = nginx ]; then
  start_nginx put proxy.conf.in "$put_port" "$upstream_port"
  wait_up "$put_name" "$put_port" "${pids[-1]}" "$tmp/put.log" "$tmp/put.error.log"
else
  start_tailguard
  wait_up "tailguard serve" "$put_port" "${pids[-1]}" "$tmp/tailguard.log"
fi
echo "up: nginx proxy on :$nginx_port, $put_name on :$put_port"

# run_wrk OUT CONNECTIONS URL [wrk args...]: one run; fails on errors or non-2xx answers.
run_wrk() {
  local out=$1 conns=$2 url=$3
  shift 3
  "$WRK" -t1 -c"$conns" -d"${D}s" --latency "$@" "$url" >"$out" 2>&1 ||
    { cat "$out" >&2; die "wrk failed against $url"; }
  if grep -qE '^ *(Non-2xx|Socket errors)' "$out"; then
    cat "$out" >&2
    die "errors against $url (see wrk's output above); the run does not count"
  fi
}
rps_of() { awk '/^Requests\/sec:/ { print $2 }' "$1"; }
# latency_us FILE PERCENT: wrk's --latency line in microseconds (wrk prints us, ms, s or m).
latency_us() {
  awk -v p="$2%" '$1 == p {
    v = $2
    if (v ~ /us$/) { sub(/us$/, "", v); print v + 0 }
    else if (v ~ /ms$/) { sub(/ms$/, "", v); print v * 1e3 }
    else if (v ~ /s$/) { sub(/s$/, "", v); print v * 1e6 }
    else if (v ~ /m$/) { sub(/m$/, "", v); print v * 6e7 }
  }' "$1"
}
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END {
  if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

nginx_url=http://127.0.0.1:$nginx_port/
put_url=http://127.0.0.1:$put_port/
direct_url=http://127.0.0.1:$upstream_port/

# Throughput: saturate each proxy in turn, alternating so drift on a shared machine hits both.
echo "warm-up: 1 s each"
D=1 run_wrk "$tmp/warm.txt" "$C" "$nginx_url"
D=1 run_wrk "$tmp/warm.txt" "$C" "$put_url"
nginx_rps=() put_rps=()
for r in $(seq "$ROUNDS"); do
  run_wrk "$tmp/wrk.txt" "$C" "$nginx_url"
  nginx_rps+=("$(rps_of "$tmp/wrk.txt")")
  run_wrk "$tmp/wrk.txt" "$C" "$put_url"
  put_rps+=("$(rps_of "$tmp/wrk.txt")")
  echo "round $r/$ROUNDS: nginx proxy ${nginx_rps[-1]} req/s, $put_name ${put_rps[-1]} req/s"
done
nginx_med=$(median "${nginx_rps[@]}")
put_med=$(median "${put_rps[@]}")
ratio=$(awk -v a="$put_med" -v b="$nginx_med" 'BEGIN { printf "%.3f", a / b }')
echo "nginx proxy: median $nginx_med req/s (${nginx_rps[*]})"
echo "$put_name: median $put_med req/s (${put_rps[*]})"

# Added latency at half of the proxy's maximum load, direct and proxied at the same pacing.
read -r rate paced_c <<<"$(awk -v max="$put_med" -v d="$PACED_DELAY_MS" 'BEGIN {
  rate = max / 2; c = int(rate * d / 1000 + 0.5); if (c < 1) c = 1; if (c > 1000) c = 1000
  printf "%.0f %d\n", rate, c }')"
cat >"$tmp/pace.lua" <<EOF
-- $paced_c connections, each waiting $PACED_DELAY_MS ms on average after an answer: ~$rate req/s.
function delay()
  return math.random(0, 2 * $PACED_DELAY_MS)
end
EOF
echo "latency at ~$rate req/s (half of $put_name's max): wrk -c$paced_c, mean delay ${PACED_DELAY_MS} ms"
# The nginx proxy at the same pacing is the reference: what a mature proxy adds on this machine.
direct_p50=() direct_p99=() put_p50=() put_p99=() ref_p50=() ref_p99=()
for r in $(seq "$ROUNDS"); do
  run_wrk "$tmp/wrk.txt" "$paced_c" "$direct_url" -s "$tmp/pace.lua"
  direct_p50+=("$(latency_us "$tmp/wrk.txt" 50)")
  direct_p99+=("$(latency_us "$tmp/wrk.txt" 99)")
  direct_rate=$(rps_of "$tmp/wrk.txt")
  run_wrk "$tmp/wrk.txt" "$paced_c" "$put_url" -s "$tmp/pace.lua"
  put_p50+=("$(latency_us "$tmp/wrk.txt" 50)")
  put_p99+=("$(latency_us "$tmp/wrk.txt" 99)")
  put_rate=$(rps_of "$tmp/wrk.txt")
  run_wrk "$tmp/wrk.txt" "$paced_c" "$nginx_url" -s "$tmp/pace.lua"
  ref_p50+=("$(latency_us "$tmp/wrk.txt" 50)")
  ref_p99+=("$(latency_us "$tmp/wrk.txt" 99)")
  echo "round $r/$ROUNDS: direct p50 ${direct_p50[-1]} us p99 ${direct_p99[-1]} us" \
    "($direct_rate req/s); $put_name p50 ${put_p50[-1]} us p99 ${put_p99[-1]} us" \
    "($put_rate req/s); nginx proxy p50 ${ref_p50[-1]} us p99 ${ref_p99[-1]} us" \
    "($(rps_of "$tmp/wrk.txt") req/s)"
done
d50=$(median "${direct_p50[@]}") d99=$(median "${direct_p99[@]}")
p50=$(median "${put_p50[@]}") p99=$(median "${put_p99[@]}")
r50=$(median "${ref_p50[@]}") r99=$(median "${ref_p99[@]}")
echo "direct: median p50 $d50 us, p99 $d99 us"
echo "$put_name: median p50 $p50 us, p99 $p99 us"
echo "nginx proxy: median p50 $r50 us, p99 $r99 us"

[ "$PROXY_UNDER_TEST" = nginx ] &&
  echo "NOTE: PROXY_UNDER_TEST=nginx: these figures compare nginx with itself, not tailguard"
echo "FIGURE proxy_rps_ratio_vs_nginx $ratio x"
# Added latency: the median over rounds of each round's difference from the direct run just
# before it, so that drift between rounds on a shared machine cancels out.
added() {  # added NAME PROXIED... -- DIRECT...
  local name=$1 proxied=() direct=() diffs=() i
  shift
  while [ "$1" != -- ]; do proxied+=("$1"); shift; done
  shift
  direct=("$@")
  for i in "${!proxied[@]}"; do
    diffs+=("$(awk -v a="${proxied[$i]}" -v b="${direct[$i]}" 'BEGIN { print a - b }')")
  done
  echo "$name by round: ${diffs[*]} us" >&2
  printf 'FIGURE %s %.1f us\n' "$name" "$(median "${diffs[@]}")"
}
added proxy_added_p50_us "${put_p50[@]}" -- "${direct_p50[@]}"
added proxy_added_p99_us "${put_p99[@]}" -- "${direct_p99[@]}"
added nginx_added_p50_us "${ref_p50[@]}" -- "${direct_p50[@]}"
added nginx_added_p99_us "${ref_p99[@]}" -- "${direct_p99[@]}"
