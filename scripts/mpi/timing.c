/* Times one Open MPI collective the way examples/timing.rs times ours, for
 * scripts/vs-openmpi.sh: like timed with like, in one run.
 *
 *   mpirun ... timing OP MODE ITERS [BYTES]
 *
 * prints the slowest rank's mean time per call in microseconds. OP is
 * allreduce (MPI_Allreduce of one double, MPI_SUM), bcast (MPI_Bcast of
 * one double from rank 0), reduce (MPI_Reduce to rank 0, MPI_SUM), allgather
 * (MPI_Allgather, a block per process) or reducescatter
 * (MPI_Reduce_scatter_block, MPI_SUM, a block per process); MODE b2b (ITERS calls back to back after one
 * barrier, each rank timing the whole loop) or lone (ITERS times a barrier
 * then the call, minus ITERS barriers alone, the two loops timed by each
 * rank in LONE_BLOCKS blocks taken in turn, as examples/common/timed.rs
 * does) or fenced (as lone, with a fence of our own instead of MPI_Barrier:
 * the sense-reversing barrier in shared memory below, the same code as
 * examples/common/fence.rs, so that both sides' calls start from the same
 * skew; see scripts/vs-openmpi.sh) or step (ITERS times a barrier then the
 * call, the whole step timed, nothing subtracted). BYTES (default 8, a multiple of 8) makes the value (the block) that many
 * bytes of doubles (scripts/vs-openmpi-mpi.sh). 100 warm-up calls first, as
 * on our side. */
#include <mpi.h>
#include <fcntl.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Blocks each loop of MODE lone and fenced is cut into (LONE_BLOCKS in
 * examples/common/timed.rs). */
#define LONE_BLOCKS 10

/* The fence of MODE fenced: a sense-reversing barrier of P processes in a
 * shared page, waiting with sched_yield; examples/common/fence.rs is the
 * same for threads. The last to arrive resets the count, then moves the
 * generation on; the others wait for the generation to move. */
struct fence {
    _Atomic long arrived;
    char pad[120];
    _Atomic long generation;
};
static struct fence *fence;
static int procs;

static void fence_wait(void) {
    long g = atomic_load(&fence->generation);
    if (atomic_fetch_add(&fence->arrived, 1) == procs - 1) {
        atomic_store(&fence->arrived, 0);
        atomic_store(&fence->generation, g + 1);
    } else {
        while (atomic_load(&fence->generation) == g) sched_yield();
    }
}

/* Maps the fence, created by rank 0 under a name it tells the others. */
static void fence_open(int rank) {
    char name[64];
    int pid = getpid();
    MPI_Bcast(&pid, 1, MPI_INT, 0, MPI_COMM_WORLD);
    snprintf(name, sizeof name, "/corrected-fence-%d", pid);
    int fd = -1;
    if (rank == 0) {
        fd = shm_open(name, O_CREAT | O_RDWR, 0600);
        if (fd < 0 || ftruncate(fd, sizeof(struct fence)) != 0) MPI_Abort(MPI_COMM_WORLD, 3);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank != 0) fd = shm_open(name, O_RDWR, 0600);
    if (fd < 0) MPI_Abort(MPI_COMM_WORLD, 3);
    fence = mmap(NULL, sizeof(struct fence), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (fence == MAP_FAILED) MPI_Abort(MPI_COMM_WORLD, 3);
    close(fd);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) shm_unlink(name);
}

static void step_barrier(int fenced) {
    if (fenced)
        fence_wait();
    else
        MPI_Barrier(MPI_COMM_WORLD);
}

static double *x, *y;
static int n = 1;

enum op { ALLREDUCE, BCAST, REDUCE, ALLGATHER, REDUCE_SCATTER };

static void call(enum op op, int rank) {
    (void)rank;
    if (op == BCAST)
        MPI_Bcast(x, n, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    else if (op == REDUCE)
        MPI_Reduce(x, y, n, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    else if (op == ALLGATHER)
        MPI_Allgather(x, n, MPI_DOUBLE, y, n, MPI_DOUBLE, MPI_COMM_WORLD);
    else if (op == REDUCE_SCATTER)
        MPI_Reduce_scatter_block(x, y, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    else
        MPI_Allreduce(x, y, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (argc != 4 && argc != 5) {
        if (rank == 0) fprintf(stderr, "usage: timing allreduce|bcast|reduce|allgather|reducescatter b2b|lone|fenced|step ITERS [BYTES]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    enum op bcast = strcmp(argv[1], "bcast") == 0           ? BCAST
                    : strcmp(argv[1], "reduce") == 0        ? REDUCE
                    : strcmp(argv[1], "allgather") == 0     ? ALLGATHER
                    : strcmp(argv[1], "reducescatter") == 0 ? REDUCE_SCATTER
                                                            : ALLREDUCE;
    int fenced = strcmp(argv[2], "fenced") == 0;
    int step = strcmp(argv[2], "step") == 0;
    int lone = fenced || step || strcmp(argv[2], "lone") == 0;
    MPI_Comm_size(MPI_COMM_WORLD, &procs);
    if (fenced) fence_open(rank);
    long iters = atol(argv[3]);
    if (argc == 5 && atol(argv[4]) >= 8) n = (int)(atol(argv[4]) / 8);
    /* An allgather's result and a reduce-scatter's input are one block
     * per process. */
    size_t whole = (size_t)n * procs;
    x = calloc(bcast == REDUCE_SCATTER ? whole : (size_t)n, sizeof(double));
    y = calloc(bcast == ALLGATHER ? whole : (size_t)n, sizeof(double));
    for (int i = 0; i < n; i++) x[i] = rank;
    for (long i = 0; i < (iters < 100 ? iters : 100); i++) call(bcast, rank);
    MPI_Barrier(MPI_COMM_WORLD);
    double total = 0;
    if (!lone) {
        double t = MPI_Wtime();
        for (long i = 0; i < iters; i++) call(bcast, rank);
        total = MPI_Wtime() - t;
    } else {
        /* Blocks of each loop taken in turn: the host's speed drifts within
         * a run, and two loops timed one after the other would put that
         * drift into their difference. */
        double alone = 0;
        for (long b = 0; b < LONE_BLOCKS; b++) {
            long n = iters / LONE_BLOCKS + (b < iters % LONE_BLOCKS);
            step_barrier(fenced);
            double t = MPI_Wtime();
            for (long i = 0; i < n; i++) {
                step_barrier(fenced);
                call(bcast, rank);
            }
            total += MPI_Wtime() - t;
            if (step) continue;
            step_barrier(fenced);
            t = MPI_Wtime();
            for (long i = 0; i < n; i++) step_barrier(fenced);
            alone += MPI_Wtime() - t;
        }
        if (rank == 0 && getenv("PARTS"))
            fprintf(stderr, "rank 0: barrier + call %.3f us, barrier alone %.3f us\n",
                    total / iters * 1e6, alone / iters * 1e6);
        if (!step) total -= alone;
        if (total < 0) total = 0;
    }
    double mean = total / iters * 1e6, slowest = 0;
    MPI_Reduce(&mean, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("%.3f\n", slowest);
    MPI_Finalize();
    return 0;
}
