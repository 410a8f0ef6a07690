#!/usr/bin/env bash
# Our MPI engine against Open MPI's own collectives, side by side in one run.
#
#   scripts/vs-openmpi-mpi.sh          # ROUNDS=3 PROCS="2 8" SIZES="8 1024 65536 1048576" OPS="allreduce bcast"
#
# Contenders, the same processes and launcher flags for both:
#   allreduce: MPI_Allreduce (doubles, MPI_SUM) against ours over the MPI
#              engine (corrected::mpi::MpiComm) with f = 0 and f = 1 (from
#              64 KiB through the node's shared memory, src/mpi/shm.rs),
#              and from 64 KiB f = 1 without it (SHM=0: by blocks from
#              512 KiB, else by messages);
#   bcast:     MPI_Bcast from rank 0 against ours (checked correction, f = 1);
#   reduce:    MPI_Reduce to rank 0 against ours (f = 0 and f = 1; from
#              64 KiB through the node's shared memory), with OPS naming it;
#   hier:      ours as a node team, HIER="2x4" (2 processes of 4 threads,
#              corrected::mpi::NodeTeam, f = 1 between processes, each
#              process bound to its share of the cores) against Open MPI
#              with as many processes (8), unbound as above.
# Both sides are timed by the same loop (scripts/mpi/timing.c and
# examples/mpi_timing.rs, which shares examples/common/timed.rs with the
# thread timing): 100 warm-up calls, then ITERS calls back to back after one
# barrier (b2b), each process timing its whole loop; the number is the
# slowest process's mean per call. Open MPI 4.1 from Debian's packages,
# ob1 + vader; P <= cores: one process per core (--bind-to core); more:
# --oversubscribe --bind-to none with mpi_yield_when_idle 1. Each round runs
# every contender once per (P, size, collective), Open MPI first in odd
# rounds, ours first in even ones, with the raw two-thread ping-pong (one
# way) printed at the start and end of the round. The table at the end
# gives medians over rounds and ratios ours / Open MPI.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${ROUNDS:-3}
procs=${PROCS:-"2 8"}
sizes=${SIZES:-"8 1024 65536 1048576"}
ops=${OPS:-"allreduce bcast"}
hier=${HIER:-"2x4"}
if ! command -v mpicc >/dev/null || ! command -v mpirun >/dev/null || ! dpkg -s libclang-dev >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq openmpi-bin libopenmpi-dev libclang-dev clang >/dev/null
fi
mkdir -p target
mpicc -O2 -o target/mpi-timing scripts/mpi/timing.c
cargo build --release --quiet --example timing
cargo build --release --quiet --features mpi --example mpi_timing
ours=target/release/examples/mpi_timing
cores=$(nproc)
results=$(mktemp)

iters() { # P BYTES
  local n
  case $2 in 8) n=20000 ;; 1024) n=10000 ;; 65536) n=1000 ;; *) n=100 ;; esac
  [ "$1" -gt "$cores" ] && n=$((n / 10))
  echo "$n"
}
launch() { # P PROGRAM ARGS...
  local p=$1 bind="--bind-to core"
  shift
  [ "$p" -gt "$cores" ] && bind="--oversubscribe --bind-to none --mca mpi_yield_when_idle 1"
  # A node team pins its threads to the cores its process may use: each
  # process gets its own share of the cores (PE of them), as one process per
  # node or socket would have, not all of them (two unbound teams pin
  # their threads to the same cores and compete: docs/mpi.md).
  [ -n "${PE:-}" ] && bind="--map-by slot:PE=$PE --bind-to core"
  # shellcheck disable=SC2086
  mpirun --allow-run-as-root -np "$p" $bind --mca pml ob1 --mca btl self,vader "$@"
}
floor() { echo "   raw ping-pong (one way) $1: $(target/release/examples/timing pingpong) ns"; }
record() { echo "$*" >> "$results"; }

for round in $(seq "$rounds"); do
  echo "== round $round"
  floor start
  for p in $procs; do
    for bytes in $sizes; do
      for op in $ops; do
        n=$(iters "$p" "$bytes")
        run_ompi() { local v; v=$(launch "$p" target/mpi-timing "$op" b2b "$n" "$bytes"); record "$op $p $bytes ompi $v"; echo "   $op P=$p ${bytes}B open-mpi $v us"; }
        run_ours() {
          local fs="0 1" v
          [ "$op" = bcast ] && fs=1
          for f in $fs; do
            v=$(launch "$p" "$ours" "$op" b2b "$n" "$bytes" "$f"); record "$op $p $bytes f$f $v"; echo "   $op P=$p ${bytes}B corrected-mpi-f$f $v us"
          done
          # The same without the node's shared memory (large allreduces by
          # blocks or by messages, as before it), in the same round.
          if [ "$op" != bcast ] && [ "$bytes" -ge 65536 ]; then
            v=$(SHM=0 launch "$p" -x SHM "$ours" "$op" b2b "$n" "$bytes" 1); record "$op $p $bytes f1noshm $v"; echo "   $op P=$p ${bytes}B corrected-mpi-f1-no-shared-memory $v us"
          fi
        }
        if (( round % 2 )); then run_ompi; run_ours; else run_ours; run_ompi; fi
      done
    done
  done
  for h in $hier; do
    hp=${h%x*} ht=${h#*x} total=$(( ${h%x*} * ${h#*x} ))
    for bytes in $sizes; do
      for op in $ops; do
        n=$(iters "$total" "$bytes")
        run_ompi() { local v; v=$(launch "$total" target/mpi-timing "$op" b2b "$n" "$bytes"); record "$op $h $bytes ompi $v"; echo "   $op ${h} (Open MPI: $total processes) ${bytes}B open-mpi $v us"; }
        pe=$(( cores / hp ))
        run_ours() {
          local v
          if (( pe >= 1 )); then v=$(PE=$pe launch "$hp" "$ours" "$op" b2b "$n" "$bytes" 1 "$ht"); else v=$(launch "$hp" "$ours" "$op" b2b "$n" "$bytes" 1 "$ht"); fi
          record "$op $h $bytes f1 $v"; echo "   $op ${h} ${bytes}B corrected-node-team-f1 $v us"
        }
        if (( round % 2 )); then run_ompi; run_ours; else run_ours; run_ompi; fi
      done
    done
  done
  floor end
done

echo
echo "Medians over $rounds rounds (us per call, back to back; ratio = corrected / Open MPI):"
echo
echo "| collective | P | bytes | Open MPI | corrected f=0 | ratio | corrected f=1 | ratio | f=1, no shared memory | ratio |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
python3 - "$results" "$procs $hier" "$sizes" "$ops" <<'PY'
import sys, statistics
rows = [l.split() for l in open(sys.argv[1])]
def med(op, p, b, who):
    v = [float(r[4]) for r in rows if r[:4] == [op, p, b, who]]
    return statistics.median(v) if v else None
for op in sys.argv[4].split():
    for p in sys.argv[2].split():
        for b in sys.argv[3].split():
            o = med(op, p, b, "ompi")
            if o is None:
                continue
            cells = []
            for f in ("f0", "f1", "f1noshm"):
                m = med(op, p, b, f)
                cells += ["-", "-"] if m is None else [f"{m:.3f}", f"{m / o:.2f}"]
            print(f"| {op} | {p} | {b} | {o:.3f} | " + " | ".join(cells) + " |")
PY
rm -f "$results"
