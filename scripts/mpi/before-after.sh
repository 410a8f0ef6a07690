#!/usr/bin/env bash
# Two builds of the MPI engine measured in one run, interleaved, next to
# Open MPI's own collective (the A/B checks of docs/benchmarks.md).
#   scripts/mpi/before-after.sh BEFORE_CHECKOUT AFTER_CHECKOUT [P BYTES ITERS OP ROUNDS]
# defaults: P=2 BYTES=1048576 ITERS=200 OP=allreduce ROUNDS=3. Each round
# runs Open MPI's (scripts/mpi/timing.c), then BEFORE's and AFTER's
# examples/mpi_timing (f = 1), all b2b, launched alike (--bind-to core up to
# the core count, else oversubscribed with mpi_yield_when_idle); the raw
# two-thread ping-pong (one way) is printed before and after.
set -euo pipefail
before=$1 after=$2 p=${3:-2} bytes=${4:-1048576} iters=${5:-200} op=${6:-allreduce} rounds=${7:-3}
here="$(cd "$(dirname "$0")/../.." && pwd)"
for dir in "$before" "$after"; do
  (cd "$dir" && cargo build --release --quiet --features mpi --example mpi_timing --example timing)
done
mkdir -p "$here/target"
mpicc -O2 -o "$here/target/mpi-timing" "$here/scripts/mpi/timing.c"
bind="--bind-to core"
[ "$p" -gt "$(nproc)" ] && bind="--oversubscribe --bind-to none --mca mpi_yield_when_idle 1"
launch() {
  # shellcheck disable=SC2086
  mpirun --allow-run-as-root -np "$p" $bind --mca pml ob1 --mca btl self,vader "$@" 2>/dev/null
}
floor() { echo "raw ping-pong (one way): $("$after/target/release/examples/timing" pingpong) ns"; }
floor
for round in $(seq "$rounds"); do
  ompi=$(launch "$here/target/mpi-timing" "$op" b2b "$iters" "$bytes")
  b=$(launch "$before/target/release/examples/mpi_timing" "$op" b2b "$iters" "$bytes" 1)
  a=$(launch "$after/target/release/examples/mpi_timing" "$op" b2b "$iters" "$bytes" 1)
  echo "round $round: $op P=$p ${bytes}B us per call: open-mpi $ompi  before $b  after $a"
done
floor
