#!/usr/bin/env bash
# Instructions per call of one collective between 2 ranks on threads, at
# each rank, counted by callgrind (the thread engine's side of
# scripts/mpi/instructions.sh).
#
#   scripts/instructions.sh [OP [N1 N2]]   # bcast 20000 120000
#
# examples/timing.rs runs OP's loop back to back (2 ranks, f = 1) under
# `valgrind --tool=callgrind --separate-threads=yes` twice, N1 and N2
# calls; each rank's thread's cost per call is the difference of the two
# runs' exclusive counts over N2 - N1, polling left out
# (scripts/per_call_instructions.py). Callgrind runs one thread at a time,
# so who runs ahead differs from a real run: the work figure is the one to
# read. Deterministic for a given build.
set -euo pipefail
cd "$(dirname "$0")/.."
op=${1:-bcast} n1=${2:-20000} n2=${3:-120000}
cargo build --release --quiet --example timing
out=$(mktemp -d)
for n in "$n1" "$n2"; do
  valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$out/$n" \
    "${CARGO_TARGET_DIR:-target}/release/examples/timing" "$op" 2 1 b2b "$n" > /dev/null 2>&1
done
echo "$op, 2 ranks on threads, instructions per call (callgrind, $n1 and $n2 calls):"
# Thread 01 is the program's main thread; the ranks are 02 (rank 0) and 03.
for t in 02 03; do
  scripts/per_call_instructions.py "$out/$n1-$t" "$out/$n2-$t" $((n2 - n1)) "rank $((10#$t - 2))"
done
rm -rf "$out"
