#!/bin/sh
# How fast the dashboard paints with a day of history for 50 series: imports a day of per-minute
# points of 50 series (tailguard import), starts `tailguard serve` on that store and loads the
# overview and a series' 24-hour view in Debian's chromium (playwright-core), 5 times each
# (fresh browser context every time, so nothing is cached), and prints the medians:
#   FIGURE dashboard_first_paint_ms          first contentful paint of the overview
#   FIGURE dashboard_overview_ready_ms       the overview's table holds all 50 series
#   FIGURE dashboard_series_24h_ready_ms     a series' 24-hour charts are drawn with their points
# Usage: bench/dashboard_paint.sh BUILD_DIR   (make bench runs it)
set -eu
build=${1:?usage: dashboard_paint.sh BUILD_DIR}
root=$(cd "$(dirname "$0")/.." && pwd)
tailguard=$(cd "$build" && pwd)/apps/tailguard/tailguard
[ -x "$tailguard" ] || { echo "dashboard_paint: build $tailguard first (make build)" >&2; exit 1; }
[ -x /usr/bin/chromium ] || { echo "dashboard_paint: needs chromium (scripts/install-deps)" >&2; exit 1; }
dir=$(mktemp -d)
pid=
cleanup() { [ -z "$pid" ] || kill "$pid" 2>/dev/null || true; rm -rf "$dir"; }
trap cleanup EXIT INT TERM

now=$(date +%s)
awk -v now="$now" 'BEGIN {
  q = "\"\""
  print "time,series,count,p50,p90,p99,p999,mean,max"
  start = now - 86400; start -= start % 60
  for (s = 0; s < 50; s++) {
    key = sprintf("\"tailguard_request_duration_seconds{model=%smodel-%02d%s,route=%sr%02d%s,stage=%stotal%s,version=%s1%s}\"", q, s, q, q, s, q, q, q, q, q)
    base = 0.005 + s * 0.001
    for (t = start; t < now - 60; t += 60) {
      d = 1 + 0.3 * sin((t % 86400) / 86400 * 6.2832) + 0.05 * sin(t / 600 + s)
      printf "%d,%s,%d,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f\n", t, key, 600,
        base * d, 1.4 * base * d, 2 * base * d, 3 * base * d, 1.1 * base * d, 4 * base * d
    }
  }
}' >"$dir/history.csv"
"$tailguard" import "$dir/history.csv" --store "$dir/tailguard.db" --create >"$dir/import.log" 2>&1 ||
  { cat "$dir/import.log"; exit 1; }
echo "imported $(($(wc -l <"$dir/history.csv") - 1)) points of 50 series"

cat >"$dir/gateway.yaml" <<YAML
listen: 127.0.0.1:0
threads: 1
store: {path: tailguard.db}
routes:
  - {name: none, prefix: /none/, upstream: "127.0.0.1:9"}
YAML
"$tailguard" serve --config "$dir/gateway.yaml" >"$dir/gateway.log" 2>&1 &
pid=$!
i=0
until grep -q "listening on" "$dir/gateway.log"; do
  i=$((i + 1)); [ "$i" -le 100 ] || { cat "$dir/gateway.log"; exit 1; }; sleep 0.1
done
gw=$(sed -n 's/.*listening on \([0-9.:]*\).*/\1/p' "$dir/gateway.log")
TG_URL="http://$gw" node "$root/bench/dashboard_paint.mjs"
