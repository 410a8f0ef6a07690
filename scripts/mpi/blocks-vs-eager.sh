#!/usr/bin/env bash
# A large allreduce between processes by blocks (the default from
# `BLOCKS_MIN_BYTES`) against the eager star in the same build, next to
# Open MPI's MPI_Allreduce, interleaved in one run (docs/mpi.md, "Why
# 512 KiB").
#   scripts/mpi/blocks-vs-eager.sh [P BYTES ITERS ROUNDS]
# defaults: P=8 BYTES=1048576 ITERS=60 ROUNDS=3. Each round runs Open
# MPI's (scripts/mpi/timing.c), ours with ALLREDUCE=auto (blocks) and with
# ALLREDUCE=star (eager; the pair exchange at 2 processes), f = 1, back to
# back, launched alike; the raw two-thread ping-pong (one way) is printed
# before and after. Prints each side's slowest rank's mean µs per call.
set -euo pipefail
p=${1:-8} bytes=${2:-1048576} iters=${3:-60} rounds=${4:-3}
here="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$here"
cargo build --release --quiet --features mpi --example mpi_timing --example timing
mpicc -O2 -o target/mpi-timing scripts/mpi/timing.c
bind="--bind-to core"
[ "$p" -gt "$(nproc)" ] && bind="--oversubscribe --bind-to none --mca mpi_yield_when_idle 1"
launch() {
  # shellcheck disable=SC2086
  mpirun --allow-run-as-root -np "$p" $bind --mca pml ob1 --mca btl self,vader "$@" 2>/dev/null
}
ours() { launch -x ALLREDUCE="$1" target/release/examples/mpi_timing allreduce b2b "$iters" "$bytes" 1; }
floor() { echo "raw ping-pong (one way): $(target/release/examples/timing pingpong) ns"; }
floor
for round in $(seq "$rounds"); do
  ompi=$(launch target/mpi-timing allreduce b2b "$iters" "$bytes")
  blocks=$(ours auto)
  star=$(ours star)
  echo "round $round: allreduce P=$p ${bytes}B us per call: open-mpi $ompi  blocks $blocks  eager $star"
done
floor
