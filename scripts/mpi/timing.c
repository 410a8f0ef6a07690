/* Times one Open MPI collective the way examples/timing.rs times ours, for
 * scripts/vs-openmpi.sh: like timed with like, in one run.
 *
 *   mpirun ... timing OP MODE ITERS [BYTES]
 *
 * prints the slowest rank's mean time per call in microseconds. OP is
 * allreduce (MPI_Allreduce of one double, MPI_SUM) or bcast (MPI_Bcast of
 * one double from rank 0); MODE b2b (ITERS calls back to back after one
 * barrier, each rank timing the whole loop) or lone (ITERS times a barrier
 * then the call, minus ITERS barriers alone, each loop timed whole by each
 * rank). BYTES (default 8, a multiple of 8) makes the value that many
 * bytes of doubles (scripts/vs-openmpi-mpi.sh). 100 warm-up calls first, as
 * on our side. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double *x, *y;
static int n = 1;

static void call(int bcast, int rank) {
    (void)rank;
    if (bcast)
        MPI_Bcast(x, n, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    else
        MPI_Allreduce(x, y, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (argc != 4 && argc != 5) {
        if (rank == 0) fprintf(stderr, "usage: timing allreduce|bcast b2b|lone ITERS [BYTES]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int bcast = strcmp(argv[1], "bcast") == 0;
    int lone = strcmp(argv[2], "lone") == 0;
    long iters = atol(argv[3]);
    if (argc == 5 && atol(argv[4]) >= 8) n = (int)(atol(argv[4]) / 8);
    x = calloc(n, sizeof(double));
    y = calloc(n, sizeof(double));
    for (int i = 0; i < n; i++) x[i] = rank;
    for (long i = 0; i < (iters < 100 ? iters : 100); i++) call(bcast, rank);
    MPI_Barrier(MPI_COMM_WORLD);
    double t = MPI_Wtime();
    for (long i = 0; i < iters; i++) {
        if (lone) MPI_Barrier(MPI_COMM_WORLD);
        call(bcast, rank);
    }
    double total = MPI_Wtime() - t;
    if (lone) {
        MPI_Barrier(MPI_COMM_WORLD);
        t = MPI_Wtime();
        for (long i = 0; i < iters; i++) MPI_Barrier(MPI_COMM_WORLD);
        total -= MPI_Wtime() - t;
        if (total < 0) total = 0;
    }
    double mean = total / iters * 1e6, slowest = 0;
    MPI_Reduce(&mean, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("%.3f\n", slowest);
    MPI_Finalize();
    return 0;
}
