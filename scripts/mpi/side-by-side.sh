# Sourced by scripts/vs-openmpi.sh and scripts/vs-openmpi-gather.sh: both
# timing programs built alike (Open MPI's with mpicc -O2, ours in the
# release-lto profile, one codegen unit and fat LTO, as a program using
# the library would be built for speed), and `ompi_run P ARGS...`, which
# runs Open MPI's on P processes with ob1 + vader: bound to cores where
# each process has one, oversubscribed and yielding where not.
if ! command -v mpicc >/dev/null || ! command -v mpirun >/dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq openmpi-bin libopenmpi-dev >/dev/null
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p target
mpicc -O2 -o target/mpi-timing scripts/mpi/timing.c
cargo build --profile release-lto --quiet --example timing
ours=target/release-lto/examples/timing
cores=$(nproc)
ompi_run() { # P ARGS...
  ompi_run_program target/mpi-timing "$@"
}
ompi_run_program() { # PROGRAM P ARGS...
  local program=$1 p=$2 bind="--bind-to core"
  shift 2
  [ "$p" -gt "$cores" ] && bind="--oversubscribe --bind-to none --mca mpi_yield_when_idle 1"
  # shellcheck disable=SC2086
  mpirun --allow-run-as-root -np "$p" $bind --mca pml ob1 --mca btl self,vader \
    "$program" "$@"
}
