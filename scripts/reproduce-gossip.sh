#!/usr/bin/env bash
# Reproduces Figures 3 and 5 of the Corrected Gossip paper (Hoefler et al.,
# IPDPS 2017) with `corrected sim --algorithm gossip`: OCG's and CCG's total
# time against the gossip time T, N = n = 1024, L = O = 1, the simulated
# maximum over RUNS runs against Eq. 3 / Eq. 4 (delta = 6.93e-7), writing
# one JSON line per point to results/gossip-fig35.jsonl and the markdown
# table of docs/reproduction.md to stdout.
#
#   scripts/reproduce-gossip.sh [RUNS] [THREADS]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-10000}
threads=${2:-$(nproc)}
cargo build --release --quiet
bin=target/release/corrected
mkdir -p results
out=results/gossip-fig35.jsonl
: > "$out"
for t in $(seq 16 34); do
  for correction in ocg ccg; do
    "$bin" sim --algorithm gossip --correction "$correction" --gossip-time "$t" \
      --procs 1024 --latency 1 --overhead 1 --runs "$runs" --seed 1 --threads "$threads" \
      --json >> "$out"
  done
done
python3 - "$out" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
by = {}
for r in rows:
    kind = r["correction"].split(":")[0]
    by[(r["gossip_time"], kind)] = r
ts = sorted({t for t, _ in by})
print("| T | OCG C | OCG Eq. 3 | OCG max latency | OCG incomplete runs | CCG Eq. 4 | CCG max latency | CCG max quiescence |")
print("| --- | --- | --- | --- | --- | --- | --- | --- |")
for t in ts:
    o, c = by[(t, "ocg")], by[(t, "ccg")]
    print(f"| {t} | {o['correction'].split(':')[1]} | {o['estimated_latency_ticks']} | {o['latency_ticks']['max']:.0f} | {o['incomplete_runs']} "
          f"| {c['estimated_latency_ticks']} | {c['latency_ticks']['max']:.0f} | {c['quiescence_ticks']['max']:.0f} |")
PY
