#!/usr/bin/env bash
# The comparison of docs/comparison.md, simulator part:
# broadcasts (the corrected tree, checked-sync and optimized:4; corrected
# gossip, CCG and FCG; FTCO; the ack tree; the plain tree) and reductions
# (up-correction reduce and allreduce, f = 1 and 3, against FTCO reduce and
# allreduce), on L = 2, o = 1, the binomial tree, root 0, and the same
# faults for every algorithm (run i of every row draws them from seed
# SEED + i with FaultPlan::draw, which never kills the root): 0, 1, 10, 100
# ranks dead before the operation, 1 and 3 dying during it (up-correction
# only on the cases with at most 3 failed ranks, its largest budget; FTCO
# on all). `examples/compare.rs` runs and reports; this script only
# chooses sizes.
#
#   scripts/compare.sh [all|run|report]
#
# Environment:
#   RUNS_1K    runs per row at P = 1024   (3000)
#   RUNS_64K   runs per row at P = 65536  (200)
#   THREADS    worker threads             (1: the sizes above are for one core)
#   SEED       seed of run 0              (1)
#   QUICK=1    RUNS_1K=100, RUNS_64K=3 (under a minute), into
#              target/comparison-quick.{jsonl,md} only (no figures, the doc
#              left as it is): a smoke test that fails on any violation
#
# Writes results/comparison.jsonl (one JSON line per P, fault case and
# algorithm), results/comparison.md (the tables, also on stdout),
# docs/figures/compare-*.svg, and (unless QUICK) the tables into
# docs/comparison.md between its compare:tables markers, and the
# side-by-side latency tables between its compare:summary and
# compare:reduce-summary markers.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-all}
if [ "${QUICK:-0}" = 1 ]; then
  runs_1k=${RUNS_1K:-100}
  runs_64k=${RUNS_64K:-3}
else
  runs_1k=${RUNS_1K:-3000}
  runs_64k=${RUNS_64K:-200}
fi
threads=${THREADS:-1}
results=results/comparison.jsonl
[ "${QUICK:-0}" = 1 ] && results=target/comparison-quick.jsonl
seed=${SEED:-1}
cargo build --release --quiet --example compare
compare=target/release/examples/compare
mkdir -p results

run() {
  local out=$results
  : > "$out"
  for sizes in "1024 $runs_1k" "65536 $runs_64k"; do
    set -- $sizes
    local start=$SECONDS
    "$compare" run --procs "$1" --runs "$2" --seed "$seed" --threads "$threads" >> "$out"
    echo "P = $1, $2 runs per row: $((SECONDS - start)) s" >&2
  done
}

report() {
  if [ "${QUICK:-0}" = 1 ]; then
    "$compare" report --results "$results" --no-figures
  else
    "$compare" report --doc docs/comparison.md
  fi
  # Every simulator checks its algorithm's guarantees: none may fail.
  if grep -v '"violations":0[,}]' "$results"; then
    echo "compare.sh: violations in the rows above" >&2
    exit 1
  fi
}

case "$mode" in
  run) run ;;
  report) report ;;
  all) start=$SECONDS; run; report; echo "compare.sh: $((SECONDS - start)) s" >&2 ;;
  *) echo "usage: $0 [all|run|report]" >&2; exit 2 ;;
esac
