#!/usr/bin/env bash
# An allreduce in flight while every rank computes, against Open MPI's
# MPI_Iallreduce, side by side in one run: examples/overlap.rs (threads,
# team defaults, f = 1) against scripts/mpi/overlap.c, each printing the
# slowest rank's mean µs of a blocking allreduce, the computation alone,
# computation then blocking allreduce ("serial"), and an immediate
# allreduce started, the computation in SLICES slices with a test after
# each, then the wait ("overlap"). The computation lasts COMPUTE_US, by
# default Open MPI's own blocking allreduce of the round (measured first),
# the same on both sides. Rounds interleaved (odd rounds Open MPI first),
# medians and ratios at the end.
#
#   ROUNDS=3 PROCS="2 8" BYTES=1048576 SLICES=8 scripts/vs-openmpi-overlap.sh
#
# MPI=1 runs ours between processes instead (examples/mpi_overlap.rs,
# MpiComm with f = 1, launched as Open MPI's side is).
#
# Setup as scripts/vs-openmpi.sh (scripts/mpi/side-by-side.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${ROUNDS:-3} procs=${PROCS:-"2 8"} bytes=${BYTES:-1048576} slices=${SLICES:-8}
# shellcheck source=scripts/mpi/side-by-side.sh
. scripts/mpi/side-by-side.sh
mpicc -O2 -o target/mpi-overlap scripts/mpi/overlap.c
cargo build --profile release-lto --quiet --example overlap
overlap=target/release-lto/examples/overlap
if [ "${MPI:-0}" = 1 ]; then
  cargo build --profile release-lto --quiet --features mpi --example mpi_overlap
fi
results=$(mktemp)
iters() { [ "$1" -le 2 ] && echo 200 || echo 50; } # P
for round in $(seq "$rounds"); do
  echo "== round $round, raw ping-pong (one way) $("$ours" pingpong) ns"
  for p in $procs; do
    us=${COMPUTE_US:-$(ompi_run "$p" allreduce b2b "$(iters "$p")" "$bytes" | cut -d. -f1)}
    a() { v=$(ompi_run_program target/mpi-overlap "$p" "$(iters "$p")" "$bytes" "$us" "$slices")
          echo "$p $us ompi $v" | tee -a "$results"; }
    b() { if [ "${MPI:-0}" = 1 ]; then
            v=$(ompi_run_program target/release-lto/examples/mpi_overlap "$p" "$(iters "$p")" "$bytes" "$us" "$slices")
          else
            v=$("$overlap" "$p" "$(iters "$p")" "$bytes" "$us" "$slices")
          fi
          echo "$p $us ours $v" | tee -a "$results"; }
    if (( round % 2 )); then a; b; else b; a; fi
  done
done
echo
echo "| P | compute us | side | allreduce us | serial us | overlap us | overlap / serial |"
echo "| --- | --- | --- | --- | --- | --- | --- |"
python3 - "$results" <<'PY'
import sys, statistics
rows = [l.split() for l in open(sys.argv[1])]
for p in sorted({r[0] for r in rows}, key=int):
    for side in ("ompi", "ours"):
        mine = [r for r in rows if r[0] == p and r[2] == side]
        med = lambda i: statistics.median(float(r[i]) for r in mine)
        us = statistics.median(float(r[1]) for r in mine)
        name = "Open MPI" if side == "ompi" else "corrected"
        print(f"| {p} | {us:.0f} | {name} | {med(3):.1f} | {med(5):.1f} | {med(6):.1f} | {med(6) / med(5):.2f} |")
PY
rm -f "$results"
