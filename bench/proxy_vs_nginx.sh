#!/usr/bin/env bash
# Side-by-side proxy benchmark: `tailguard serve` against nginx as a reverse proxy in front of the
# same nginx upstream. First requests/s at saturation (wrk, alternating); then the latency each
# adds to a request, against the upstream direct, at half of tailguard's maximum rate and at a
# light rate; and the gateway's resident memory idle and at half its maximum rate
# (serve_rss_idle_mb, serve_rss_loaded_mb). Prints FIGURE lines (DESIGN.md, Conventions); takes
# about four minutes.
#
# Usage: bench/proxy_vs_nginx.sh BUILD_DIR     (tailguard is BUILD_DIR/apps/tailguard/tailguard)
# Environment (all optional):
#   C=32               wrk connections for the throughput runs
#   D=5                seconds per run
#   ROUNDS=5           runs per target; the targets alternate and each reports its median
#   LIGHT_RATE=1000    req/s of the light-load latency runs (FIGURE ..._light); 0 skips them
#   LATENCY_CLIENT=loadgen  what paces the latency runs: loadgen (`tailguard loadgen`, open
#                      loop) or wrk (closed loop, paced by a Lua delay(); see below)
#   LATENCY_DISTRIBUTION=constant  loadgen's spacing of requests: constant or poisson
#   LOADGEN_C=64       loadgen connections (the most requests in flight)
#   PACED_DELAY_MS=10  wrk only: mean think time per connection after an answer
#   PROXY_UNDER_TEST=nginx  a second nginx proxy stands in for tailguard: tests this script
#                      while `tailguard serve` does not exist (the ratio should be near 1.0)
#   NGINX=/usr/sbin/nginx  WRK=wrk
#
# Latency runs: wrk is closed-loop, and its Lua delay() counts whole milliseconds, so at tens of
# thousands of requests a second the paced connections fire in bursts of rate/1000 requests on
# each millisecond tick. What wrk then measures is mostly the wait behind the rest of the burst:
# the direct P50 was about 300 or about 500 us from round to round on a 2-core machine where one
# request takes 15 us, and the added latency moved with it. `tailguard loadgen` sends each request
# at its own time (constant spacing: one every 29 us at 34 k/s) and measures from that intended
# time, like wrk2, so the difference between the direct and the proxied run is what the proxy
# adds. All three targets are measured the same way in each round. On a machine with few cores
# the generator, the upstream and the proxy compete for them at half load (loadgen takes about
# one core at 34 k/s); the light-load runs show what a hop costs without that.
set -euo pipefail

build=${1:?usage: bench/proxy_vs_nginx.sh BUILD_DIR}
C=${C:-32}
D=${D:-5}
ROUNDS=${ROUNDS:-5}
LIGHT_RATE=${LIGHT_RATE:-1000}
LATENCY_CLIENT=${LATENCY_CLIENT:-loadgen}
LATENCY_DISTRIBUTION=${LATENCY_DISTRIBUTION:-constant}
LOADGEN_C=${LOADGEN_C:-64}
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

for tool in "$NGINX" "$WRK" curl awk sed jq; do
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

[[ $LIGHT_RATE =~ ^[0-9]+$ ]] || die "LIGHT_RATE must be a whole number of req/s, not '$LIGHT_RATE'"
case $LATENCY_CLIENT in
  loadgen)
    "$tailguard" --help 2>/dev/null | grep -qE '^[[:space:]]+loadgen([[:space:]]|$)' ||
      die "LATENCY_CLIENT=loadgen needs $tailguard with its 'loadgen' sub-command" \
        "(build it, or set LATENCY_CLIENT=wrk)"
    case $LATENCY_DISTRIBUTION in
      constant | poisson) ;;
      *) die "LATENCY_DISTRIBUTION must be constant or poisson, not '$LATENCY_DISTRIBUTION'" ;;
    esac
    ;;
  wrk) ;;
  *) die "LATENCY_CLIENT must be loadgen or wrk, not '$LATENCY_CLIENT'" ;;
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
put_pid=${pids[-1]}

# Resident memory of the proxy under test (a proxy-only gateway, one route): idle once it has
# answered and ticked, and the most seen while it serves half its maximum rate (below).
rss_mb() { awk '/^VmRSS:/ { printf "%.1f", $2 / 1024 }' "/proc/$1/status" 2>/dev/null; }
sleep 2
idle_rss=$(rss_mb "$put_pid")
torch_mapped=$(grep -c 'libtorch' "/proc/$put_pid/maps" 2>/dev/null || true)
echo "$put_name: idle resident ${idle_rss} MB; libtorch mappings: ${torch_mapped:-0}"
echo "FIGURE serve_rss_idle_mb $idle_rss MB"

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

[ "$PROXY_UNDER_TEST" = nginx ] &&
  echo "NOTE: PROXY_UNDER_TEST=nginx: these figures compare nginx with itself, not tailguard"
echo "FIGURE proxy_rps_ratio_vs_nginx $ratio x"

# Added latency: direct, through the proxy under test and through the nginx proxy (the
# reference) at the same rate, alternating; first at half of the proxy's maximum rate, then at
# LIGHT_RATE.
if [ "$LATENCY_CLIENT" = loadgen ]; then
  client_name="tailguard loadgen, open loop, $LATENCY_DISTRIBUTION spacing, -c$LOADGEN_C"
  # measure URL RATE: one run; sets lat_p50, lat_p99 (us) and lat_rate (req/s achieved).
  measure() {
    local out=$tmp/loadgen.json values
    "$tailguard" loadgen "$1" --rate "$2" --duration "${D}s" -c "$LOADGEN_C" \
      --distribution "$LATENCY_DISTRIBUTION" --json -q >"$out" 2>"$tmp/loadgen.err" ||
      { cat "$tmp/loadgen.err" "$out" >&2; die "tailguard loadgen failed against $1"; }
    values=$(jq -r '[.requests.errors.total, .requests.dropped, .abandoned,
      .latency_seconds.p50 * 1e6, .latency_seconds.p99 * 1e6, .achieved_rate,
      .intended_rate] | map(tostring) | join(" ")' "$out") ||
      { cat "$out" >&2; die "cannot read loadgen's report (above)"; }
    local errors dropped abandoned intended
    read -r errors dropped abandoned lat_p50 lat_p99 lat_rate intended <<<"$values"
    if [ "$errors" != 0 ] || [ "$dropped" != 0 ] || [ "$abandoned" != 0 ]; then
      cat "$out" >&2
      die "against $1: $errors errors, $dropped dropped, $abandoned abandoned (loadgen's" \
        "report above); the run does not count"
    fi
    lat_p50=$(awk -v v="$lat_p50" 'BEGIN { printf "%.1f", v }')
    lat_p99=$(awk -v v="$lat_p99" 'BEGIN { printf "%.1f", v }')
    lat_rate=$(awk -v v="$lat_rate" 'BEGIN { printf "%.0f", v }')
    # Requests that went out late wait in the generator's queue, and that wait is in their
    # latency: a generator short of CPU makes every target look slow alike.
    if awk -v a="$lat_rate" -v i="$intended" 'BEGIN { exit !(a < 0.98 * i) }'; then
      echo "WARNING: against $1 loadgen sent $lat_rate req/s of the $intended intended" >&2
    fi
  }
else
  client_name="wrk, paced by a Lua delay() of ${PACED_DELAY_MS} ms on average"
  # wrk is closed-loop: after every answer a connection waits a random whole number of
  # milliseconds, uniform in [0, 2 * PACED_DELAY_MS]; N connections give about
  # N / (PACED_DELAY_MS + latency) req/s.
  cat >"$tmp/pace.lua" <<EOF
function delay()
  return math.random(0, 2 * $PACED_DELAY_MS)
end
EOF
  measure() {
    local conns
    conns=$(awk -v r="$2" -v d="$PACED_DELAY_MS" 'BEGIN {
      c = int(r * d / 1000 + 0.5); if (c < 1) c = 1; if (c > 1000) c = 1000; print c }')
    run_wrk "$tmp/wrk.txt" "$conns" "$1" -s "$tmp/pace.lua"
    lat_p50=$(latency_us "$tmp/wrk.txt" 50) lat_p99=$(latency_us "$tmp/wrk.txt" 99)
    lat_rate=$(rps_of "$tmp/wrk.txt")
    [[ $lat_p50 =~ ^[0-9.]+$ && $lat_p99 =~ ^[0-9.]+$ ]] ||
      { cat "$tmp/wrk.txt" >&2; die "cannot read wrk's latency percentiles (above)"; }
  }
fi
# added NAME SUFFIX PROXIED... -- DIRECT...: the median over rounds of each round's difference
# from that round's direct run, so that drift between rounds on a shared machine cancels.
added() {
  local name=$1 suffix=$2 proxied=() direct=() diffs=() i
  shift 2
  while [ "$1" != -- ]; do proxied+=("$1"); shift; done
  shift
  direct=("$@")
  for i in "${!proxied[@]}"; do
    diffs+=("$(awk -v a="${proxied[$i]}" -v b="${direct[$i]}" 'BEGIN { print a - b }')")
  done
  echo "$name$suffix by round: ${diffs[*]} us"
  printf 'FIGURE %s%s %.1f us\n' "$name" "$suffix" "$(median "${diffs[@]}")"
}
# latency_runs RATE WHAT SUFFIX: ROUNDS rounds of the three targets, then the FIGURE lines.
latency_runs() {
  local rate=$1 what=$2 suffix=$3 r line
  local direct_p50=() direct_p99=() put_p50=() put_p99=() ref_p50=() ref_p99=()
  echo "latency at $rate req/s ($what): $client_name"
  for r in $(seq "$ROUNDS"); do
    measure "$direct_url" "$rate"
    direct_p50+=("$lat_p50") direct_p99+=("$lat_p99")
    line="round $r/$ROUNDS: direct p50 $lat_p50 us p99 $lat_p99 us ($lat_rate req/s)"
    measure "$put_url" "$rate"
    put_p50+=("$lat_p50") put_p99+=("$lat_p99")
    line="$line; $put_name p50 $lat_p50 us p99 $lat_p99 us ($lat_rate req/s)"
    measure "$nginx_url" "$rate"
    ref_p50+=("$lat_p50") ref_p99+=("$lat_p99")
    echo "$line; nginx proxy p50 $lat_p50 us p99 $lat_p99 us ($lat_rate req/s)"
  done
  echo "direct: median p50 $(median "${direct_p50[@]}") us, p99 $(median "${direct_p99[@]}") us"
  echo "$put_name: median p50 $(median "${put_p50[@]}") us, p99 $(median "${put_p99[@]}") us"
  echo "nginx proxy: median p50 $(median "${ref_p50[@]}") us, p99 $(median "${ref_p99[@]}") us"
  added proxy_added_p50_us "$suffix" "${put_p50[@]}" -- "${direct_p50[@]}"
  added proxy_added_p99_us "$suffix" "${put_p99[@]}" -- "${direct_p99[@]}"
  added nginx_added_p50_us "$suffix" "${ref_p50[@]}" -- "${direct_p50[@]}"
  added nginx_added_p99_us "$suffix" "${ref_p99[@]}" -- "${direct_p99[@]}"
}
# The most resident memory seen every 0.2 s while the half-rate runs go on.
( peak=0
  while kill -0 "$put_pid" 2>/dev/null; do
    r=$(rss_mb "$put_pid")
    peak=$(awk -v a="$peak" -v b="${r:-0}" 'BEGIN { print (b > a) ? b : a }')
    echo "$peak" >"$tmp/rss_peak"
    sleep 0.2
  done ) &
rss_sampler=$!
latency_runs "$(awk -v max="$put_med" 'BEGIN { printf "%.0f", max / 2 }')" \
  "half of $put_name's max" ""
kill "$rss_sampler" 2>/dev/null || true
wait "$rss_sampler" 2>/dev/null || true
echo "FIGURE serve_rss_loaded_mb $(cat "$tmp/rss_peak" 2>/dev/null || echo 0) MB"
if [ "$LIGHT_RATE" -gt 0 ]; then
  latency_runs "$LIGHT_RATE" "light load: what a hop costs when nothing contends" _light
fi
