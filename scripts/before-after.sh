#!/usr/bin/env bash
# Two builds of the crate measured in one run, interleaved, like timed
# with like ("no slowdown" check): the two-rank allreduce (f = 1,
# unrecorded), the 8-rank checked broadcast (lined up, every call after a
# barrier) and the 64K-rank checked-sync simulation at 1 % faults.
#   scripts/before-after.sh BEFORE_CHECKOUT AFTER_CHECKOUT [ROUNDS]
# Each checkout builds in its own target dir. The raw two-thread ping-pong
# (one way) is printed before every round: the host moves the two vCPUs
# between cache clusters, and two-rank numbers follow it.
set -euo pipefail
before=$1 after=$2 rounds=${3:-3}
benches=(
  "allreduce|allreduce_unrecorded/f=1/2\$"
  "bcast|^bcast/checked/8\$"
  "sim|sim_64k/binomial_checked-sync_1pct"
)
bench() { # DIR BENCH FILTER
  (cd "$1" && cargo bench --quiet --bench "$2" -- --noplot "$3" 2>/dev/null \
    | grep -E '^[a-z_0-9/=.:-]+ +time:|^ +time:' | sed "s|^|$(basename "$1"): |")
}
for dir in "$before" "$after"; do (cd "$dir" && cargo bench --no-run --quiet); done
for round in $(seq "$rounds"); do
  echo "== round $round"
  bench "$after" mailbox 'pingpong/a_raw' | sed 's/^/floor /'
  for entry in "${benches[@]}"; do
    name=${entry%%|*} filter=${entry#*|}
    echo "-- $name $filter"
    if (( round % 2 )); then order=("$before" "$after"); else order=("$after" "$before"); fi
    for dir in "${order[@]}"; do bench "$dir" "$name" "$filter"; done
  done
done
