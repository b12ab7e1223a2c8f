#!/bin/sh
# Smoke test of tg_test_upstream: starts it on a free port, exercises each control once through
# curl, and stops it. Usage: test_upstream_smoke.sh PATH/TO/tg_test_upstream
set -eu
bin=${1:?usage: test_upstream_smoke.sh TG_TEST_UPSTREAM}
dir=$(mktemp -d)
pid=
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; fi
  rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
fail() {
  echo "FAIL: $*"
  echo "--- server stderr"; cat "$dir/err" 2>/dev/null || true
  exit 1
}

"$bin" --listen 127.0.0.1:0 >"$dir/out" 2>"$dir/err" &
pid=$!
i=0
until grep -q '^listening on ' "$dir/out"; do
  i=$((i + 1))
  [ "$i" -le 100 ] || fail "no 'listening on' line after 10 s"
  kill -0 "$pid" 2>/dev/null || fail "server exited"
  sleep 0.1
done
addr=$(sed -n 's/^listening on //p' "$dir/out")
url="http://$addr"
echo "server at $url"

# A delayed answer takes at least the delay; five in parallel are served together.
t=$(curl -fsS -o /dev/null -w '%{time_total}' -H 'X-Test-Delay-Ms: 200' "$url/delayed")
awk -v t="$t" 'BEGIN { exit !(t >= 0.2) }' || fail "delayed answer came after $t s"
start=$(date +%s%N)
jobs_=
for n in 1 2 3 4 5; do
  curl -fsS -o /dev/null -H 'X-Test-Delay-Ms: 500' "$url/parallel/$n" &
  jobs_="$jobs_ $!"
done
for j in $jobs_; do wait "$j" || fail "parallel request failed"; done
elapsed_ms=$((($(date +%s%N) - start) / 1000000))
[ "$elapsed_ms" -lt 2000 ] || fail "5 parallel 500 ms requests took $elapsed_ms ms"
echo "delay: ok (${t}s; 5 parallel in ${elapsed_ms} ms)"

code=$(curl -sS -o /dev/null -w '%{http_code}' -H 'X-Test-Status: 503' "$url/status")
[ "$code" = 503 ] || fail "X-Test-Status: 503 gave $code"
echo "status: ok"

curl -fsSN -X POST -H 'Content-Type: application/json' -H 'X-Test-Tokens: 3' \
  -d '{"model": "m", "stream": true}' "$url/v1/chat/completions" >"$dir/stream"
[ "$(grep -c '^data: {"choices"' "$dir/stream")" = 3 ] || fail "stream: $(cat "$dir/stream")"
[ "$(grep '^data: ' "$dir/stream" | tail -1)" = 'data: [DONE]' ] || fail "stream has no [DONE]"
echo "stream: ok"

if curl -sS -o /dev/null -H 'X-Test-Action: reset' "$url/reset" 2>/dev/null; then
  fail "X-Test-Action: reset answered"
fi
echo "reset: ok"

curl -fsS "$url/test/requests" >"$dir/requests"
grep -q '"target":"/v1/chat/completions"' "$dir/requests" || fail "not recorded: $(cat "$dir/requests")"
grep -q '"x-test-status":"503"' "$dir/requests" || fail "headers not recorded"
grep -q '"body":"{\\"model\\": \\"m\\", \\"stream\\": true}"' "$dir/requests" ||
  fail "body not recorded"
echo "recording: ok"

# A hanging request does not keep the server from stopping.
curl -sS -o /dev/null -H 'X-Test-Action: hang' "$url/hang" 2>/dev/null &
hang=$!
sleep 0.2
kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
pid=
[ "$rc" = 0 ] || fail "server exited with $rc on SIGTERM"
wait "$hang" || true
echo "test_upstream smoke: ok"
