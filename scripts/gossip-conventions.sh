#!/usr/bin/env bash
# CCG at N = 65536, L = 2, O = 1 under both readings of where the gossip
# phase ends (`--gossip-phase-end drained|at-t`), T = 32 + k for k = 0, 4,
# 8, 12, 16, 24: the rows of docs/reproduction.md's table beside flogsim.
# Correction messages are the CCG run's less the GOS run's (same seeds,
# hence the same gossip phase). One JSON line per run in
# results/gossip-conventions.jsonl, the table on stdout.
#
#   scripts/gossip-conventions.sh [RUNS] [THREADS]     # 200 runs: ~6 min on one thread
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-200}
threads=${2:-$(nproc)}
cargo build --release --quiet
bin=target/release/corrected
mkdir -p results
out=results/gossip-conventions.jsonl
: > "$out"
for k in 0 4 8 12 16 24; do
  for end in drained at-t; do
    for correction in ccg none; do
      "$bin" sim --algorithm gossip --correction "$correction" --gossip-time $((32 + k)) \
        --gossip-phase-end "$end" --procs 65536 --latency 2 --overhead 1 --runs "$runs" \
        --seed 1 --threads "$threads" --json >> "$out"
    done
  done
done
python3 - "$out" <<'PY'
import json, sys
by = {}
for line in open(sys.argv[1]):
    r = json.loads(line)
    by[(r["gossip_time"], r["gossip_phase_end"], r["correction"])] = r
print("| T | phase end | coloring | quiescence | gossip msgs / process | correction msgs / process | g-nodes |")
print("| ---: | --- | ---: | ---: | ---: | ---: | ---: |")
for t, end in sorted({(t, e) for t, e, _ in by}, key=lambda k: (k[0], k[1] != "drained")):
    c, n = by[(t, end, "ccg")], by[(t, end, "none")]
    gossip = n["messages_per_process"]["mean"]
    correction = c["messages_per_process"]["mean"] - gossip
    print(f"| {t} | `{end}` | {c['latency_ticks']['mean']:.2f} | {c['quiescence_ticks']['mean']:.2f} "
          f"| {gossip:.3f} | {correction:.3f} | {c['gossip_colored']['mean']:.0f} |")
PY
