#!/usr/bin/env bash
# The offline diagnosis on the public root-cause sets, scored RCAEval's way (the ranked series'
# entities, each entity's first occurrence; AC@k = the true entity among the first k; Avg@5 =
# the mean of AC@1..AC@5). tailguard never reads truth.csv: only this script does, after it.
#   Sock Shop 1 (../shared/datasets/rca-sockshop1): at the true fault time and 60 s late.
#   Nezha Online Boutique (../shared/datasets/rca-nezha-ob): AS@1/3/5 (= AC@k).
# Prints FIGURE lines. Usage: bench/diagnose_rca.sh BUILD_DIR [DATASETS_DIR]
set -euo pipefail
build=${1:?usage: diagnose_rca.sh BUILD_DIR [DATASETS_DIR]}
root=$(cd "$(dirname "$0")/.." && pwd)
data=${2:-$root/../shared/datasets}
tg=$build/apps/tailguard/tailguard
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
[ -d "$data/rca-sockshop1" ] || { echo "diagnose_rca.sh: no $data/rca-sockshop1" >&2; exit 1; }

score() {  # score NAME TRUTH RANKING
  /usr/bin/python3 - "$@" <<'PY'
import collections, csv, sys
name, truth_path, ranking_path = sys.argv[1:4]
truth = {r["case_id"]: r for r in csv.DictReader(open(truth_path))}
ranked = collections.defaultdict(list)
for r in csv.DictReader(open(ranking_path)):
    ranked[r["case_id"]].append((int(r["rank"]), r["series"]))
hits = [0] * 5
for case, t in truth.items():
    entities = []
    for _, series in sorted(ranked.get(case, [])):
        e = series.split("/")[0]
        if e not in entities:
            entities.append(e)
    for k in range(5):
        hits[k] += t["root_cause_entity"] in entities[: k + 1]
ac = [h / len(truth) for h in hits]
print(f"FIGURE {name}_ac1 {ac[0]:.2f} ratio")
print(f"FIGURE {name}_ac3 {ac[2]:.2f} ratio")
print(f"FIGURE {name}_ac5 {ac[4]:.2f} ratio")
print(f"FIGURE {name}_avg5 {sum(ac) / 5:.2f} ratio")
PY
}

"$tg" diagnose --cases "$data/rca-sockshop1" --out "$out/ss.csv" -q
score rca_sockshop1 "$data/rca-sockshop1/truth.csv" "$out/ss.csv"
"$tg" diagnose --cases "$data/rca-sockshop1/late60" --out "$out/ss60.csv" -q
score rca_sockshop1_late60 "$data/rca-sockshop1/truth.csv" "$out/ss60.csv"
if [ -d "$data/rca-nezha-ob" ]; then
  start=$(date +%s%N)
  "$tg" diagnose --cases "$data/rca-nezha-ob" --out "$out/ob.csv" -q
  end=$(date +%s%N)
  score rca_nezha_ob "$data/rca-nezha-ob/truth.csv" "$out/ob.csv"
  ms=$(((end - start) / 1000000))
  printf 'FIGURE rca_nezha_ob_seconds %d.%03d s\n' $((ms / 1000)) $((ms % 1000))
fi
