# Shared by the integration scripts that start real servers: sourced, not run.
# Sets $dir (a temporary directory, removed on exit), $pids (background servers, killed on exit)
# and $traffic (a background load loop, killed on exit), and defines:
#   need TOOL...                     fails unless every tool is installed
#   fail MESSAGE                     prints it and the tail of every $dir/*.log, exits 1
#   wait_until WHAT SECONDS CMD...   polls CMD every 0.1 s until it succeeds, or fails
#   listening LOG                    true once LOG has a "listening on" line
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
