#!/usr/bin/env bash
# Reproduces Figure 1, the table of Figure 7 and Figures 7a/7b of the
# Corrected Gossip paper (Hoefler et al., IPDPS 2017) with `corrected sim`
# (gossip: GOS, OCG, CCG and, once the CLI knows it, FCG; big: the binomial
# graph, simulated, with BIG's and BFB's analytic models beside it; the
# optimal tree), then draws the SVGs with `examples/gossip_figures.rs`.
#
#   scripts/reproduce-gossip-fig7.sh [all|fig1|table|scaling|figures]
#
# Environment (defaults: the full runs of docs/reproduction.md):
#   THREADS      worker threads                      (nproc)
#   RUNS_FIG1    runs of Figure 1's curve            (10000)
#   RUNS_TABLE   runs per cell of Figure 7's table   (100000)
#   SCALE_WORK   runs x N per point of 7a/7b: runs = clamp(SCALE_WORK / N,
#                SCALE_MIN, 100000)                  (4000000)
#   SCALE_MIN    fewest runs per point               (200)
#   SCALE_MAX_LOG2  largest N of 7a/7b is 2^this     (16)
#
# Writes results/gossip-fig1.jsonl, results/gossip-fig7-table.jsonl,
# results/gossip-fig7-scaling.jsonl, the markdown tables of all three to
# results/gossip-fig7.md (and stdout), and docs/figures/gossip-fig*.svg.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-all}
threads=${THREADS:-$(nproc)}
runs_fig1=${RUNS_FIG1:-10000}
runs_table=${RUNS_TABLE:-100000}
scale_work=${SCALE_WORK:-4000000}
scale_min=${SCALE_MIN:-200}
scale_max_log2=${SCALE_MAX_LOG2:-16}
cargo build --release --quiet
bin=target/release/corrected
mkdir -p results docs/figures

# `sim` with the paper's common options; the rest from the arguments.
sim() { "$bin" sim --seed 1 --threads "$threads" --json "$@"; }

# FCG (--correction fcg:1) is run where the CLI accepts it, skipped if not.
variants="none ocg ccg"
if "$bin" sim --algorithm gossip --correction fcg:1 --procs 16 --runs 1 --json >/dev/null 2>&1; then
  variants="$variants fcg:1"
else
  echo "FCG: corrected sim rejects --correction fcg:1, skipped" >&2
fi

# Adds "key": value pairs to every JSON line of stdin.
tag() { python3 -c '
import json, sys
extra = json.loads(sys.argv[1])
for line in sys.stdin:
    if line.strip():
        row = json.loads(line); row.update(extra); print(json.dumps(row, sort_keys=True))
' "$1"; }

time_it() { local s=$SECONDS; "$@"; echo "  $1 ${2:-}: $((SECONDS - s)) s" >&2; }

fig1() {
  # N = n = 1024, L = O = 1: GOS gossiping to T = 40, so that nothing stops
  # before t = 32; the curve of every run, Lemma 1 and Eq. 2 (δ = 0.01).
  sim --algorithm gossip --correction none --gossip-time 40 --procs 1024 \
    --latency 1 --overhead 1 --runs "$runs_fig1" --curve 32 \
  | python3 -c '
import json, sys
r = json.loads(sys.stdin.read())
for row in r["curve"]:
    row["runs"] = r["runs"]
    print(json.dumps(row, sort_keys=True))
' > results/gossip-fig1.jsonl
}

table() {
  # N = 4096, L = 2, O = 1; f = 0, and f = 3 nodes dead before the
  # operation, drawn per run (3/4096 is exactly 3 nodes).
  local out=results/gossip-fig7-table.jsonl
  : > "$out"
  for f in 0 3; do
    rate=$(python3 -c "print($f / 4096)")
    for c in $variants; do
      time_it sim --algorithm gossip --correction "$c" --procs 4096 --latency 2 --overhead 1 \
        --fault-rate "$rate" --runs "$runs_table" | tag "{\"f\": $f}" >> "$out" || true
    done
    time_it sim --algorithm big --procs 4096 --latency 2 --overhead 1 \
      --fault-rate "$rate" --runs "$runs_table" | tag "{\"f\": $f}" >> "$out" || true
  done
}

scaling() {
  # N = 16 .. 2^SCALE_MAX_LOG2, L = 2, O = 1; 7a fault-free (and the
  # optimal tree), 7b N/64 dead (none below N = 64).
  local out=results/gossip-fig7-scaling.jsonl
  : > "$out"
  for k in $(seq 4 "$scale_max_log2"); do
    n=$((1 << k))
    runs=$(( scale_work / n ))
    runs=$(( runs < scale_min ? scale_min : runs ))
    runs=$(( runs > 100000 ? 100000 : runs ))
    for fig in 7a 7b; do
      rate=0
      [ "$fig" = 7b ] && rate=0.015625
      for c in ocg ccg ${variants#none ocg ccg}; do
        sim --algorithm gossip --correction "$c" --procs "$n" --latency 2 --overhead 1 \
          --fault-rate "$rate" --runs "$runs" | tag "{\"figure\": \"$fig\"}" >> "$out" || true
      done
      sim --algorithm big --procs "$n" --latency 2 --overhead 1 \
        --fault-rate "$rate" --runs "$runs" | tag "{\"figure\": \"$fig\"}" >> "$out" || true
    done
    # The optimal tree without correction, fault-free: deterministic.
    sim --tree optimal --correction none --procs "$n" --latency 2 --overhead 1 --runs 1 \
      | tag '{"figure": "7a", "algorithm": "opt"}' >> "$out"
    echo "  N = $n: $runs runs per point, $SECONDS s so far" >&2
  done
}

tables() { python3 scripts/gossip_tables.py | tee results/gossip-fig7.md; }

figures() {
  cargo run --release --quiet --example gossip_figures
}

case "$mode" in
  fig1) time_it fig1 ;;
  table) time_it table ;;
  scaling) time_it scaling ;;
  figures) tables; figures ;;
  all) time_it fig1; time_it table; time_it scaling; tables; figures ;;
  *) echo "usage: $0 [all|fig1|table|scaling|figures]" >&2; exit 2 ;;
esac
