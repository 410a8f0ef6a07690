#!/usr/bin/env bash
# Allgather and reduce-scatter against Open MPI's, side by side in one run:
# examples/timing.rs (threads, f = 1) against scripts/mpi/timing.c
# (MPI_Allgather, MPI_Reduce_scatter_block), back to back, each block of
# BYTES bytes of f64, the slowest rank's mean per call, rounds interleaved
# (odd rounds Open MPI first), medians and ratios at the end.
#
#   ROUNDS=3 PROCS="2 8" SIZES="8 1048576" scripts/vs-openmpi-gather.sh
#
# Setup as scripts/vs-openmpi.sh (scripts/mpi/side-by-side.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${ROUNDS:-3} procs=${PROCS:-"2 8"} sizes=${SIZES:-"8 1048576"}
# shellcheck source=scripts/mpi/side-by-side.sh
. scripts/mpi/side-by-side.sh
results=$(mktemp)
iters() { # P BYTES
  if [ "$2" -le 4096 ]; then [ "$1" -le 2 ] && echo 20000 || echo 5000
  else [ "$1" -le 2 ] && echo 200 || echo 40; fi
}
ompi() { ompi_run "$1" "$2" b2b "$(iters "$1" "$3")" "$3"; } # P OP BYTES
mine() { BYTES=$3 "$ours" "$2" "$1" 1 b2b "$(iters "$1" "$3")"; }
for round in $(seq "$rounds"); do
  echo "== round $round, raw ping-pong (one way) $("$ours" pingpong) ns"
  for p in $procs; do
    for bytes in $sizes; do
      for op in allgather reducescatter; do
        a() { v=$(ompi "$p" "$op" "$bytes"); echo "$op $p $bytes ompi $v" | tee -a "$results"; }
        b() { v=$(mine "$p" "$op" "$bytes"); echo "$op $p $bytes ours $v" | tee -a "$results"; }
        if (( round % 2 )); then a; b; else b; a; fi
      done
    done
  done
done
echo
echo "| collective | P | bytes per block | Open MPI us | corrected f=1 us | ratio |"
echo "| --- | --- | --- | --- | --- | --- |"
python3 - "$results" <<'PY'
import sys, statistics
rows = [l.split() for l in open(sys.argv[1])]
keys = []
for r in rows:
    if tuple(r[:3]) not in keys: keys.append(tuple(r[:3]))
for k in keys:
    o = statistics.median(float(r[4]) for r in rows if tuple(r[:3]) == k and r[3] == "ompi")
    m = statistics.median(float(r[4]) for r in rows if tuple(r[:3]) == k and r[3] == "ours")
    print(f"| {k[0]} | {k[1]} | {k[2]} | {o:.3f} | {m:.3f} | {m / o:.2f} |")
PY
rm -f "$results"
