#!/usr/bin/env bash
# corrected against Open MPI, side by side in one run.
#
#   scripts/vs-openmpi.sh            # ROUNDS=3 PROCS="2 4 8 16 32 64"
#   ROUNDS=5 PROCS="2 8" scripts/vs-openmpi.sh
#   MODES=b2b OPS=bcast ROUNDS=5 PROCS="2 4 16" scripts/vs-openmpi.sh   # a part
#
# Contenders, 8 bytes each:
#   allreduce: MPI_Allreduce (one double, MPI_SUM) against ours with f = 0
#              and f = 1 (`examples/timing.rs`);
#   bcast:     MPI_Bcast from rank 0 against ours (checked correction, f = 1).
# Where ranks outnumber cores, ours with f = 1 also runs with the tree
# allreduce (ALLREDUCE=tree: the default there is the star), the broadcast
# on the binomial tree (TREE=binomial: the default there is the flat tree;
# both in the "tree" column) and with helping off (HELP=0, see
# examples/timing.rs), the builds' earlier choices, in the same run.
# Both sides are timed the same way (scripts/mpi/timing.c mirrors
# examples/timing.rs): 100 warm-up calls, then
#   b2b:  ITERS calls back to back after one barrier, each rank timing its
#         whole loop;
#   lone: ITERS times a barrier then the call, minus ITERS barriers alone
#         (each rank times the two loops in 10 blocks taken in turn, so
#         that the host's drift within a run cancels): what one call adds to a
#         barrier-separated step, whatever skew the barrier leaves (each
#         side's own barrier: a faster barrier leaves less of the step for
#         the call to hide in, docs/benchmarks.md);
#   step: ITERS times a barrier then the call, the whole step timed (each
#         side's own barrier, nothing subtracted): what a barrier-separated
#         program sees per step, which a lone figure, the difference of two
#         loops, can hide in either side's barrier;
#   fenced: as lone, with the same fence on both sides instead of each
#         library's barrier (a sense-reversing barrier waiting with
#         sched_yield: scripts/mpi/timing.c in shared memory between
#         processes, examples/common/fence.rs between threads, which also
#         calls our progress while it waits), so both calls start from
#         the same skew;
# and the number is the slowest rank's mean per call. Open MPI 4.1 from
# Debian's packages, ob1 + vader, its timing program built with mpicc -O2;
# ours with the profile release-lto (Cargo.toml). P <= cores: one rank per
# core (both sides pinned); P > cores: --oversubscribe --bind-to none,
# mpi_yield_when_idle 1.
# Each round runs every contender once per (P, mode, collective), Open MPI
# first in odd rounds and ours first in even ones, with the raw two-thread
# ping-pong (one way) printed at the start and end of the round. The table
# at the end gives medians over rounds and ratios ours / Open MPI.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${ROUNDS:-3}
procs=${PROCS:-"2 4 8 16 32 64"}
modes=${MODES:-"b2b lone step fenced"}
ops=${OPS:-"allreduce bcast"}
# shellcheck source=scripts/mpi/side-by-side.sh
. scripts/mpi/side-by-side.sh
results=$(mktemp)

iters() { # P MODE
  local n
  case $1 in 2) n=100000 ;; 4|8) n=20000 ;; 16) n=5000 ;; 32) n=2000 ;; *) n=1000 ;; esac
  [ "$2" != b2b ] && n=$((n / 4))
  echo "$n"
}
ompi() { ompi_run "$1" "$2" "$3" "$(iters "$1" "$3")"; } # P OP MODE
mine() { # P OP F MODE
  "$ours" "$2" "$1" "$3" "$4" "$(iters "$1" "$4")"
}
floor() { echo "   raw ping-pong (one way) $1: $("$ours" pingpong) ns"; }
record() { echo "$*" >> "$results"; }

for round in $(seq "$rounds"); do
  echo "== round $round"
  floor start
  for p in $procs; do
    for mode in $modes; do
      for op in $ops; do
        run_ompi() { local v; v=$(ompi "$p" "$op" "$mode"); record "$op $mode $p ompi $v"; echo "   $op $mode P=$p open-mpi $v us"; }
        run_ours() {
          local fs="0 1" v
          [ "$op" = bcast ] && fs=1
          for f in $fs; do
            v=$(mine "$p" "$op" "$f" "$mode"); record "$op $mode $p f$f $v"; echo "   $op $mode P=$p corrected-f$f $v us"
          done
          if [ "$p" -gt "$cores" ]; then
            if [ "$op" = allreduce ]; then
              v=$(ALLREDUCE=tree mine "$p" "$op" 1 "$mode"); record "$op $mode $p f1-tree $v"; echo "   $op $mode P=$p corrected-f1-tree $v us"
            else
              v=$(TREE=binomial mine "$p" "$op" 1 "$mode"); record "$op $mode $p f1-tree $v"; echo "   $op $mode P=$p corrected-f1-binomial $v us"
            fi
            v=$(HELP=0 mine "$p" "$op" 1 "$mode"); record "$op $mode $p f1-nohelp $v"; echo "   $op $mode P=$p corrected-f1-helping-off $v us"
          fi
        }
        if (( round % 2 )); then run_ompi; run_ours; else run_ours; run_ompi; fi
      done
    done
  done
  floor end
done

echo
echo "Medians over $rounds rounds (us per call; ratio = corrected / Open MPI):"
echo
echo "| collective | mode | P | Open MPI | corrected f=0 | ratio | corrected f=1 | ratio | f=1, tree | ratio | f=1, helping off | ratio |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
python3 - "$results" "$procs" <<'PY'
import sys, statistics
rows = [l.split() for l in open(sys.argv[1])]
procs = sys.argv[2].split()
def med(op, mode, p, who):
    v = [float(r[4]) for r in rows if r[:4] == [op, mode, p, who]]
    return statistics.median(v) if v else None
for op in ("allreduce", "bcast"):
    for mode in ("b2b", "lone", "step", "fenced"):
        for p in procs:
            o = med(op, mode, p, "ompi")
            if o is None:
                continue
            cells = []
            for f in ("f0", "f1", "f1-tree", "f1-nohelp"):
                m = med(op, mode, p, f)
                cells += ["-", "-"] if m is None else [f"{m:.3f}", f"{m / o:.2f}"]
            print(f"| {op} | {mode} | {p} | {o:.3f} | " + " | ".join(cells) + " |")
PY
rm -f "$results"
