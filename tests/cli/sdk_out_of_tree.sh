#!/bin/sh
# The SDK embeds (issue 17): configure this source tree with -DTAILGUARD_BUILD_SERVER=OFF (only
# the SDK's own dependencies: no Boost, libcurl, SQLite, LibTorch, CLI11 or Node), build and
# install it, then build examples/ on its own against the installed package
# (find_package(tailguard 0.1), tailguard::sdk) and run the example: it records, analyses in
# process and renders /metrics.
# Usage: sdk_out_of_tree.sh WORKDIR
set -eu
work=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
fail() { echo "FAIL: $*"; exit 1; }
rm -rf "$work"
mkdir -p "$work"

# lib/, not a distribution's lib64/: the checks below look there.
cmake -S "$root" -B "$work/sdk" -G Ninja -DTAILGUARD_BUILD_SERVER=OFF -DCMAKE_INSTALL_LIBDIR=lib \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=g++ >"$work/sdk-configure.log" 2>&1 ||
  { cat "$work/sdk-configure.log"; fail "the SDK alone does not configure"; }
# What the server needs was not even looked for.
# (SQLite is found through pkg-config, src/store/CMakeLists.txt: pkgcfg_lib_SQLITE3_sqlite3.)
for dep in Boost_DIR Torch_DIR CURL_INCLUDE_DIR CLI11_DIR TAILGUARD_NODE pkgcfg_lib_SQLITE3_sqlite3; do
  ! grep -q "^$dep:" "$work/sdk/CMakeCache.txt" || fail "the SDK-only configure looked for $dep"
done
cmake --build "$work/sdk" -j 2 >"$work/sdk-build.log" 2>&1 ||
  { tail -n 40 "$work/sdk-build.log"; fail "the SDK alone does not build"; }
cmake --install "$work/sdk" --prefix "$work/prefix" >"$work/install.log" 2>&1 ||
  { cat "$work/install.log"; fail "the SDK does not install"; }
[ -f "$work/prefix/include/tailguard/analyzer.h" ] || fail "no public headers installed"
[ -f "$work/prefix/lib/cmake/tailguard/tailguardConfig.cmake" ] || fail "no package config"
[ "$(ls "$work/prefix/include")" = tailguard ] || fail "more than include/tailguard/ installed"

# An embedding project of its own: only the installed prefix, not this tree's targets.
cmake -S "$root/examples" -B "$work/consumer" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_COMPILER=g++ -DCMAKE_PREFIX_PATH="$work/prefix" >"$work/consumer.log" 2>&1 ||
  { cat "$work/consumer.log"; fail "find_package(tailguard) failed"; }
cmake --build "$work/consumer" >>"$work/consumer.log" 2>&1 ||
  { cat "$work/consumer.log"; fail "the example does not build against the installed SDK"; }
out=$("$work/consumer/embed_example") || fail "the example failed: $out"
version=$(sed -n 's/^#define TAILGUARD_VERSION_STRING "\(.*\)"$/\1/p' "$root/include/tailguard/version.h")
echo "$out" | grep -q "^tailguard SDK $version$" || fail "no version line in: $out"
echo "$out" | grep -q '^total .* n=[1-9]' || fail "nothing recorded: $out"
echo "$out" | grep -q '^input_size .* n=[1-9][0-9]* *p50=100$' || fail "no input sizes: $out"
echo "$out" | grep -q '^in_flight .*samples=[1-9].* now=0$' || fail "no gauge: $out"
echo "$out" | grep -q '^/metrics: [1-9][0-9]* bytes, [1-9][0-9]* series analysed' ||
  fail "no exposition or analysis: $out"
echo "sdk out of tree: ok"
