#!/bin/bash
# Byte-identity check of the finite-sum engine between two source trees: one run of each of the 44
# configuration classes of the FedPAGE paper table (bench_finite_sum.py --cases classes), ROUNDS rounds
# and SEEDS seeds each; cmp of every metrics.csv.
#   benchmarks/check_finite_sum_identity.sh /path/to/base/src src [ROUNDS=300] [SEEDS=2] [PYTHON]
# Run from a directory with config/ and data/prepared/{a9a,w8a}.npz (the worktree).
set -euo pipefail
base=$(realpath "$1"); new=$(realpath "$2"); rounds=${3:-300}; seeds=${4:-2}; py=${5:-python}
bench=$(dirname "$(realpath "$0")")/bench_finite_sum.py
out=$(mktemp -d)
for side in base new; do
  src=$base; [ $side = new ] && src=$new
  PYTHONPATH=$src $py "$bench" --cases classes --rounds "$rounds" --seeds "$seeds" --out "$out/$side" > "$out/$side.log"
done
n=0; bad=0
for f in "$out"/base/*.csv; do
  n=$((n + 1))
  cmp -s "$f" "$out/new/$(basename "$f")" || { echo "DIFFER $(basename "$f")"; bad=$((bad + 1)); }
done
echo "$n runs ($rounds rounds, $seeds seeds): $bad differ (outputs in $out)"
[ $bad -eq 0 ]
