#!/usr/bin/env bash
# Instructions per call of one collective between 2 MPI processes, ours
# against Open MPI's, at each rank, counted by callgrind.
#
#   scripts/mpi/instructions.sh [OP [BYTES [N1 N2]]]   # bcast 8 2000 12000
#
# Each program runs its loop (scripts/mpi/timing.c, examples/mpi_timing.rs:
# OP b2b N BYTES, ours with f = 1) under `valgrind --tool=callgrind` twice,
# N1 and N2 calls; a rank's cost per call is the difference of the two
# runs' exclusive counts over N2 - N1, so start-up and the end cancel. The
# work column leaves out the functions that only poll for what has not
# come (MPI's progress engine, our transport's spin and block, the clock,
# sched_yield): how often a rank polls depends on who runs ahead, not on
# what a call costs. Deterministic for a given build: no timing involved.
set -euo pipefail
cd "$(dirname "$0")/../.."
op=${1:-bcast} bytes=${2:-8} n1=${3:-2000} n2=${4:-12000}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p target
mpicc -O2 -o target/mpi-timing scripts/mpi/timing.c
cargo build --release --quiet --features mpi --example mpi_timing
out=$(mktemp -d)
run() { # NAME N PROGRAM ARGS...
  local name=$1 n=$2
  shift 2
  mpirun --allow-run-as-root -np 2 --bind-to core --mca pml ob1 --mca btl self,vader \
    valgrind --tool=callgrind --callgrind-out-file="$out/$name.$n.r%q{OMPI_COMM_WORLD_RANK}" \
    "$@" > /dev/null 2>&1
}
for n in "$n1" "$n2"; do
  run ours "$n" "${CARGO_TARGET_DIR:-target}/release/examples/mpi_timing" "$op" b2b "$n" "$bytes" 1
  run ompi "$n" target/mpi-timing "$op" b2b "$n" "$bytes"
done
echo "$op of $bytes bytes, 2 processes, instructions per call (callgrind, $n1 and $n2 calls):"
for name in ours ompi; do
  for r in 0 1; do
    scripts/per_call_instructions.py "$out/$name.$n1.r$r" "$out/$name.$n2.r$r" $((n2 - n1)) "$name rank $r"
  done
done
rm -rf "$out"
