#!/bin/sh
# replay --nab writes scores for the NAB corpus; backtest of those files must give the same
# standard-profile result as backtest running the detector itself.
# Usage: nab_roundtrip.sh TAILGUARD NAB_DIR OUT_DIR
set -eu
tg=$1; nab=$2; out=$3
rm -rf "$out"
"$tg" replay --nab "$nab/data" "$out" -q
from_files=$("$tg" backtest --scores "$out" --windows "$nab/windows.json" 2>/dev/null | grep '^standard ')
direct=$("$tg" backtest --nab "$nab/data" 2>/dev/null | grep '^standard ')
echo "from replay files: $from_files"
echo "direct:            $direct"
test -n "$direct"
test "$from_files" = "$direct"
echo "nab roundtrip: same"
