#!/usr/bin/env bash
# The FTCO paper's Section 5.2 figures (docs/reproduction.md, "Reproducing
# the FTCO paper"): Figure 7, then Figures 8-9 with RUNS allreduces per
# point (1, 10 and 100 inactive nodes at random) on the multi-root tree
# with Figure 7's best K, one thread per size (the sizes run one after the
# other), then the SVGs and the table.
#
#   scripts/ftco-figures.sh                         # the full version: 10^4 runs, P = 1K..64K
#   RUNS=10000 SIZES="1024 2048 4096 8192" scripts/ftco-figures.sh
#
# The full version takes about 1.7 hours of one core on this 2-core
# machine (from the simulations/second measured in docs/reproduction.md);
# 64K alone about an hour (6-10 allreduces a second).
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-10000}
SIZES=${SIZES:-"1024 2048 4096 8192 16384 32768 65536"}
SEED=${SEED:-1}
OUT=results/ftco-fig89.jsonl
cargo build --release --example ftco_figures
bin=target/release/examples/ftco_figures
mkdir -p results
"$bin" fig7
for procs in $SIZES; do
    # Figure 7's best K of the multi-root tree at this P.
    k=$(python3 -c "import json,sys
for l in open('results/ftco-fig7.jsonl'):
    d = json.loads(l)
    if d['procs'] == $procs: print(d['multiroot_k'])")
    "$bin" fig89 --procs "$procs" --runs "$RUNS" --seed "$SEED" --k "$k" | tee -a "$OUT"
done
"$bin" report
