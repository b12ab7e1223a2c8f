# Shared by the integration scripts that start real servers: sourced, not run.
# Sets $dir (a temporary directory, removed on exit), $pids (background servers, killed on exit)
# and $traffic (a background load loop, killed on exit), and defines:
#   need TOOL...                     fails unless every tool is installed
#   fail MESSAGE                     prints it and the tail of every $dir/*.log, exits 1
#   wait_until WHAT SECONDS CMD...   polls CMD every 0.1 s until it succeeds, or fails
#   listening LOG                    true once LOG has a "listening on" line
#   start_upstream BIN               starts tg_test_upstream on a free loopback port; sets $up
#   start_prometheus TARGET          starts Debian's prometheus scraping TARGET every second on a
#                                    free port (found with $upstream --free-port); sets $port and
#                                    $prometheus_url, and returns once it is ready
need() {
  for tool in "$@"; do
    command -v "$tool" >/dev/null || { echo "FAIL: $tool not installed (scripts/install-deps)"; exit 1; }
  done
}
dir=$(mktemp -d)
pids=
traffic=
cleanup() {
  [ -z "$traffic" ] || kill "$traffic" 2>/dev/null || true
  for p in $pids; do kill "$p" 2>/dev/null || true; done
  for p in $pids; do wait "$p" 2>/dev/null || true; done
  rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
fail() {
  echo "FAIL: $*"
  for f in "$dir"/*.log; do echo "--- $f"; tail -30 "$f"; done
  exit 1
}
wait_until() {
  what=$1; shift
  limit=$1; shift
  i=0
  until "$@" >/dev/null 2>&1; do
    i=$((i + 1)); [ "$i" -le $((limit * 10)) ] || fail "timed out after ${limit}s waiting for $what"
    sleep 0.1
  done
}
listening() { grep -q 'listening on ' "$1"; }
start_upstream() {
  "$1" --listen 127.0.0.1:0 >"$dir/upstream.log" 2>&1 &
  pids="$pids $!"
  wait_until "the upstream" 30 listening "$dir/upstream.log"
  up=$(sed -n 's/^listening on //p' "$dir/upstream.log")
}
start_prometheus() {
  port=$("$upstream" --free-port)
  cat >"$dir/prometheus.yml" <<YAML
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: tailguard
    static_configs:
      - targets: ["$1"]
YAML
  prometheus --config.file="$dir/prometheus.yml" --storage.tsdb.path="$dir/tsdb" \
    --web.listen-address="127.0.0.1:$port" >"$dir/prometheus.log" 2>&1 &
  pids="$pids $!"
  prometheus_url="http://127.0.0.1:$port"
  wait_until "Prometheus to be ready" 60 curl -sf "$prometheus_url/-/ready"
}
