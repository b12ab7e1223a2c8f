#!/bin/sh
# scripts/check-layering against small trees of its own: a clean tree passes; a back-edge, an
# include of Boost below src/server and a stale exception each fail, naming the file and line.
# Usage: layering_test.sh CHECK_LAYERING
set -u
check=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
tree() {  # a fresh tree: common, metrics and detect, each including what it may
  rm -rf "$dir/t" && mkdir -p "$dir/t/src/common" "$dir/t/src/metrics" "$dir/t/src/detect" \
    "$dir/t/src/server" "$dir/t/include/tailguard" "$dir/t/scripts"
  printf '#include <string>\n' >"$dir/t/src/common/a.h"
  printf '#include "common/a.h"\n#include "absl/status/status.h"\n' >"$dir/t/src/metrics/b.h"
  printf '#include "metrics/b.h"\n#include "tailguard/clock.h"\n' >"$dir/t/src/detect/c.cc"
  printf '#include "detect/c.h"\n#include "boost/beast/http.hpp"\n' >"$dir/t/src/server/d.cc"
  printf '#include "tailguard/clock.h"\n' >"$dir/t/include/tailguard/registry.h"
  : >"$dir/t/include/tailguard/clock.h"
}
run() { "$check" "$dir/t" >"$dir/out" 2>&1; echo $? >"$dir/rc"; }

tree; run
[ "$(cat "$dir/rc")" = 0 ] || fail "a clean tree was refused: $(cat "$dir/out")"

tree; printf '#include "detect/c.h"\n' >>"$dir/t/src/common/a.h"; run
[ "$(cat "$dir/rc")" = 1 ] || fail "common including detect passed: $(cat "$dir/out")"
grep -q 'src/common/a.h:2: common includes detect' "$dir/out" || fail "no file and line: $(cat "$dir/out")"

tree; printf '#include "tailguard/registry.h"\n' >"$dir/t/src/common/e.h"; run
[ "$(cat "$dir/rc")" = 1 ] || fail "common including a metrics public header passed"
grep -q 'common includes metrics ("tailguard/registry.h")' "$dir/out" || fail "$(cat "$dir/out")"

tree; printf '#include "boost/asio.hpp"\n' >>"$dir/t/src/metrics/b.h"; run
[ "$(cat "$dir/rc")" = 1 ] || fail "Boost in src/metrics passed"
grep -q 'src/metrics/b.h:3: includes <boost/asio.hpp>' "$dir/out" || fail "$(cat "$dir/out")"

tree; printf '#include "detect/c.h"\n' >>"$dir/t/src/common/a.h"
echo "common detect src/common/a.h  # being removed" >"$dir/t/scripts/layering-exceptions"; run
[ "$(cat "$dir/rc")" = 0 ] || fail "a listed exception was refused: $(cat "$dir/out")"

tree; echo "common detect src/common/a.h" >"$dir/t/scripts/layering-exceptions"; run
[ "$(cat "$dir/rc")" = 1 ] || fail "a stale exception passed"
grep -q "no longer occurs" "$dir/out" || fail "$(cat "$dir/out")"

tree; mkdir -p "$dir/t/src/newlayer"; : >"$dir/t/src/newlayer/x.h"; run
[ "$(cat "$dir/rc")" = 1 ] || fail "a layer DESIGN.md does not draw passed"
echo "layering check: ok"
