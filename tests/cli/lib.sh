# Helpers for the command-line test scripts (sourced, POSIX sh).
fail() { echo "FAIL: $*"; exit 1; }
# Runs the command; its output must match the pattern and its exit code must be $1.
expect() {
  code=$1; pattern=$2; shift 2
  out=$("$@" 2>&1); got=$?
  [ "$got" -eq "$code" ] || fail "$* exited $got (expected $code): $out"
  printf '%s\n' "$out" | grep -q -- "$pattern" || fail "$* printed '$out', expected /$pattern/"
}
