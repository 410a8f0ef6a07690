/* Open MPI's MPI_Iallreduce in flight while each process computes, timed
 * the way examples/overlap.rs times ours, for scripts/vs-openmpi-overlap.sh:
 * like timed with like, in one run.
 *
 *   mpirun ... overlap ITERS BYTES COMPUTE_US SLICES
 *
 * prints, for the slowest rank, the mean microseconds of: an MPI_Allreduce
 * of BYTES bytes of doubles (MPI_SUM); COMPUTE_US of computation
 * (floating-point work until the clock says COMPUTE_US have passed); a
 * step of the computation then MPI_Allreduce ("serial"); a step of
 * MPI_Iallreduce, the computation in SLICES slices with an MPI_Test after
 * each, then MPI_Wait ("overlap"). The loops are timed in BLOCKS blocks
 * taken in turn, as on our side. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define BLOCKS 10

static volatile double sink;

/* Floating-point work until d seconds have passed on the clock. */
static void compute(double d) {
    double start = MPI_Wtime(), acc = 1.0;
    while (MPI_Wtime() - start < d) {
        for (int i = 0; i < 64; i++) {
            acc = acc * 1.0000001 + 1e-9;
            sink = acc;
        }
    }
}

static double *x, *y;
static int n;

static void blocking(void) { MPI_Allreduce(x, y, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD); }

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (argc != 5) {
        if (rank == 0) fprintf(stderr, "usage: overlap ITERS BYTES COMPUTE_US SLICES\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    long iters = atol(argv[1]);
    n = (int)(atol(argv[2]) / 8);
    if (n < 1) n = 1;
    double work = atof(argv[3]) * 1e-6;
    int slices = atoi(argv[4]);
    if (slices < 1) slices = 1;
    x = calloc((size_t)n, sizeof(double));
    y = calloc((size_t)n, sizeof(double));
    for (int i = 0; i < n; i++) x[i] = rank;
    for (int i = 0; i < 10; i++) blocking();
    double t[4] = {0, 0, 0, 0};
    long per_block = iters / BLOCKS;
    for (int b = 0; b < BLOCKS; b++) {
        for (int loop = 0; loop < 4; loop++) {
            MPI_Barrier(MPI_COMM_WORLD);
            double start = MPI_Wtime();
            for (long i = 0; i < per_block; i++) {
                if (loop == 0) {
                    blocking();
                } else if (loop == 1) {
                    compute(work);
                } else if (loop == 2) {
                    compute(work);
                    blocking();
                } else {
                    MPI_Request req;
                    int done = 0;
                    MPI_Iallreduce(x, y, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &req);
                    for (int s = 0; s < slices; s++) {
                        compute(work / slices);
                        MPI_Test(&req, &done, MPI_STATUS_IGNORE);
                    }
                    MPI_Wait(&req, MPI_STATUS_IGNORE);
                }
            }
            t[loop] += MPI_Wtime() - start;
        }
    }
    double mean[4], slowest[4];
    for (int i = 0; i < 4; i++) mean[i] = t[i] / (double)(per_block * BLOCKS) * 1e6;
    MPI_Reduce(mean, slowest, 4, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("%.3f %.3f %.3f %.3f\n", slowest[0], slowest[1], slowest[2], slowest[3]);
    MPI_Finalize();
    return 0;
}
