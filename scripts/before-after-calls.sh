#!/usr/bin/env bash
# Two builds of the crate timed in one run, interleaved (the order flips
# every round), like timed with like: the cases a change of the call path
# must not slow down. Each checkout must have built
#   cargo build --release --bin corrected
#   cargo build --release --features mpi --example timing --example mpi_timing
#   scripts/before-after-calls.sh BEFORE_CHECKOUT AFTER_CHECKOUT [ROUNDS]
# Threads: the slowest rank's mean µs per 8-byte allreduce (f = 1, back to
# back, examples/timing.rs) at P = 2 and 8, and the median µs of a 1 MiB
# allreduce at P = 8 (`corrected run`, its p50). MPI processes: the
# slowest process's mean µs per 8-byte allreduce (f = 1, back to back,
# examples/mpi_timing.rs) at P = 2 and 8 (oversubscribed past the cores,
# launched as scripts/mpi/before-after.sh launches). The raw two-thread
# ping-pong (one way) is printed each round: two-rank numbers follow it.
set -euo pipefail
before=$1 after=$2 rounds=${3:-5}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
launch() { # P CMD...
  local p=$1; shift
  local bind="--bind-to core"
  [ "$p" -gt "$(nproc)" ] && bind="--oversubscribe --bind-to none --mca mpi_yield_when_idle 1"
  # shellcheck disable=SC2086
  mpirun -np "$p" $bind --mca pml ob1 --mca btl self,vader "$@" 2>/dev/null
}
case_of() { # DIR CASE
  local dir=$1
  case $2 in
    thr2) "$dir/target/release/examples/timing" allreduce 2 1 b2b 200000 ;;
    thr8) "$dir/target/release/examples/timing" allreduce 8 1 b2b 20000 ;;
    thr8-1MiB) "$dir/target/release/corrected" run --ranks 8 --op allreduce --bytes 1048576 \
      --iters 300 --json | sed -E 's/.*"p50":([0-9.]+).*/\1/' | awk '{printf "%.1f\n", $1 / 1000}' ;;
    mpi2) launch 2 "$dir/target/release/examples/mpi_timing" allreduce b2b 100000 8 1 ;;
    mpi8) launch 8 "$dir/target/release/examples/mpi_timing" allreduce b2b 5000 8 1 ;;
  esac
}
cases=(thr2 thr8 thr8-1MiB mpi2 mpi8)
for round in $(seq "$rounds"); do
  echo "== round $round, raw ping-pong $("$after/target/release/examples/timing" pingpong) ns"
  if (( round % 2 )); then order=("$before" "$after"); else order=("$after" "$before"); fi
  for c in "${cases[@]}"; do
    line="$c"
    for dir in "${order[@]}"; do
      line="$line $(basename "$dir") $(case_of "$dir" "$c")"
    done
    echo "$line"
  done
done
