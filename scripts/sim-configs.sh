#!/usr/bin/env bash
# The 15 simulator configurations (5 corrections x 3 trees, 4096 ranks,
# 200 runs, 2 % faults) whose JSON must not change when the simulator or
# the cores are refactored. Writes one file per configuration
# into DIR, without the wall-clock field `sims_per_second`.
#   scripts/sim-configs.sh BINARY DIR
# Compare two builds: run it for each, then `diff -r DIR1 DIR2`.
set -euo pipefail
bin=$1 dir=$2
mkdir -p "$dir"
for tree in binomial lame:2 kary:4; do
  for correction in opportunistic:2 optimized:2 checked checked-sync delayed:4; do
    name="${tree/:/}-${correction/:/}"
    "$bin" sim --procs 4096 --tree "$tree" --correction "$correction" \
      --fault-rate 0.02 --runs 200 --json \
      | sed -E 's/"sims_per_second":[0-9.eE+-]+,?//' > "$dir/$name.json"
  done
done
