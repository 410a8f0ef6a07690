/* What a two-process allreduce through shared memory could cost, next to
 * MPI_Allreduce in the same processes: the measurement that led to the MPI
 * engine's shared memory (src/mpi/shm.rs; docs/mpi.md, *Not built yet*,
 * has the numbers it gave).
 *
 *   mpicc -O3 -o target/shm-pair scripts/mpi/shm-pair.c
 *   mpirun --allow-run-as-root --mca pml ob1 --mca btl self,vader -np 2 \
 *          --bind-to core target/shm-pair BYTES ITERS
 *
 * prints the slowest process's mean time per call of both. The shared
 * memory side: each process copies its input into its own region of an
 * MPI shared window (two regions, by call parity), publishes the call's
 * number, waits for the peer's, sums both regions straight into its output
 * (in rank order), and marks the peer's region read. No fault tolerance:
 * it only measures the copies the MPI engine would keep (one in, one fold
 * out), against the kernel's cross-memory copy and ours today. */
#include <mpi.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int me, procs;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &procs);
  if (procs != 2 || argc < 3) {
    if (me == 0) fprintf(stderr, "shm-pair: 2 processes, BYTES ITERS\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  size_t n = (size_t)atol(argv[1]) / 8;
  int iters = atoi(argv[2]);
  double *in = malloc(n * 8), *out = malloc(n * 8);
  for (size_t i = 0; i < n; i++) in[i] = me + 1;
  /* A region: a line of flags (published call, call read), then n doubles. */
  size_t stride = 64 + n * 8;
  MPI_Win win;
  char *mine_base, *peer_base;
  MPI_Win_allocate_shared(2 * stride, 64, MPI_INFO_NULL, MPI_COMM_WORLD, &mine_base, &win);
  MPI_Aint size;
  int unit;
  MPI_Win_shared_query(win, 1 - me, &size, &unit, &peer_base);
  memset(mine_base, 0, 2 * stride);
  long seq = 0;
  for (int shm = 0; shm < 2; shm++) {
    for (int timed = 0; timed < 2; timed++) {
      int k = timed ? iters : 100;
      MPI_Barrier(MPI_COMM_WORLD);
      double t = MPI_Wtime();
      for (int it = 0; it < k; it++) {
        if (!shm) {
          MPI_Allreduce(in, out, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
          continue;
        }
        seq++;
        char *mine = mine_base + (seq & 1) * stride, *theirs = peer_base + (seq & 1) * stride;
        _Atomic long *published = (_Atomic long *)mine, *read = (_Atomic long *)(mine + 8);
        _Atomic long *peer_published = (_Atomic long *)theirs, *peer_read = (_Atomic long *)(theirs + 8);
        memcpy(mine + 64, in, n * 8);
        atomic_store_explicit(published, seq, memory_order_release);
        while (atomic_load_explicit(peer_published, memory_order_acquire) != seq)
          ;
        const double *a = (const double *)((me == 0 ? mine : theirs) + 64);
        const double *b = (const double *)((me == 0 ? theirs : mine) + 64);
        for (size_t i = 0; i < n; i++) out[i] = a[i] + b[i];
        atomic_store_explicit(read, seq, memory_order_release);
        /* Our region of this parity is written again two calls on: the
         * peer must have read it by then. */
        while (atomic_load_explicit(peer_read, memory_order_acquire) < seq)
          ;
      }
      t = MPI_Wtime() - t;
      double worst;
      MPI_Reduce(&t, &worst, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
      if (n > 0 && out[n - 1] != 3.0) {
        fprintf(stderr, "shm-pair: wrong sum %f\n", out[n - 1]);
        MPI_Abort(MPI_COMM_WORLD, 1);
      }
      if (timed && me == 0)
        printf("%s %zu bytes: %.2f us\n", shm ? "shared window" : "MPI_Allreduce", n * 8, worst / k * 1e6);
    }
  }
  MPI_Win_free(&win);
  free(in);
  free(out);
  MPI_Finalize();
  return 0;
}
