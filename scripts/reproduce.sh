#!/usr/bin/env bash
# Reproduces Table 1, Section 4.3's opportunistic figures and Figure 6 of the
# Corrected Trees paper with `corrected sim`, writing one JSON line per
# configuration to results/, then renders the tables of docs/reproduction.md
# with scripts/tables.py.
#
#   scripts/reproduce.sh [RUNS_PER_TREE] [THREADS]
#
# RUNS_PER_TREE (default 2500) runs per tree and fault rate; four trees make
# 10^4 runs per fault rate, aggregated as in the paper's Table 1.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-2500}
threads=${2:-$(nproc)}
cargo build --release --quiet
bin=target/release/corrected
mkdir -p results
trees="binomial lame:2 kary:4 optimal"

: > results/table1.jsonl
for rate in 0.0001 0.001 0.01 0.02 0.04; do
  for tree in $trees; do
    "$bin" sim --procs 65536 --tree "$tree" --correction checked-sync --latency 2 --overhead 1 \
      --fault-rate "$rate" --runs "$runs" --seed 1 --threads "$threads" --json >> results/table1.jsonl
  done
done

: > results/opportunistic.jsonl
for rate in 0.01 0.04; do
  for correction in opportunistic:4 optimized:4 relaying:4 forwarding:4; do
    for tree in $trees; do
      "$bin" sim --procs 65536 --tree "$tree" --correction "$correction" --latency 2 --overhead 1 \
        --fault-rate "$rate" --runs "$runs" --seed 1 --threads "$threads" --json >> results/opportunistic.jsonl
    done
  done
done

: > results/figure6.jsonl
for procs in 1024 4096 16384 65536; do
  for tree in $trees; do
    for correction in checked-sync optimized:4 opportunistic:4 none; do
      "$bin" sim --procs "$procs" --tree "$tree" --correction "$correction" --latency 2 --overhead 1 \
        --runs 1 --seed 1 --threads 1 --json >> results/figure6.jsonl
    done
  done
done

python3 scripts/tables.py results > results/tables.md
echo "tables written to results/tables.md"
