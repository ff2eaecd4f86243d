/* An MPI program for 4 ranks whose messages are known by construction,
 * and which measures its own time in MPI calls.
 *
 *   ring      rank r MPI_Send's ring_bytes(r) bytes to r+1 (tag 10+r) and
 *             MPI_Recv's from r-1 into a buffer larger than any message
 *   all       rank r MPI_Isend's pair_ints(r, s) ints to every other rank s
 *             (tag 20) and MPI_Irecv's from each (the one from r+2 with
 *             MPI_ANY_SOURCE, posted last), then MPI_Waitall with
 *             MPI_STATUSES_IGNORE
 *   many      rank 1 MPI_Isend's MANY messages of 8, 16, ... 8*MANY bytes to
 *             rank 0 (tags 0..MANY-1), which MPI_Irecv's them all; both
 *             MPI_Waitall with MPI_STATUSES_IGNORE (more requests than the
 *             collector keeps on its stack)
 *   late      rank 1 sleeps LATE_MS before sending 8 bytes to rank 0, whose
 *             MPI_Recv waits; rank 2 sleeps LATE_MS before MPI_Ssend'ing 64
 *             bytes to rank 3, whose MPI_Irecv + MPI_Wait waits
 *   shift     rank r MPI_Sendrecv's 256 bytes to r+1 from r-1 (tag 30)
 *   coll      MPI_Barrier, MPI_Bcast of 1000 doubles from rank 2,
 *             MPI_Allreduce of 16 ints, MPI_Reduce of 8 doubles to rank 0,
 *             MPI_Gather of 4 ints to rank 1, MPI_Alltoall of 2 ints
 *
 * Each MPI call is timed with CLOCK_MONOTONIC around it; at the end each
 * rank prints `time RANK FUNCTION NS CALLS` per function it called.
 * With the argument `hang`, rank 3 prints `sleeping PID` after the
 * collectives and sleeps 60 s (to be killed); the others finish.
 * Without MPI tracing in the collector this is an ordinary MPI program.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define RANKS 4
#define LATE_MS 200
#define MANY 40

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* The program's own measure of its MPI calls, per function. */
#define FUNCTIONS 16
static const char *names[FUNCTIONS];
static long long spent[FUNCTIONS];
static int calls[FUNCTIONS];

static void count(const char *name, long long ns)
{
    for (int i = 0; i < FUNCTIONS; i++) {
        if (!names[i] || strcmp(names[i], name) == 0) {
            names[i] = name;
            spent[i] += ns;
            calls[i]++;
            return;
        }
    }
}

#define TIMED(name, call)                                                      \
    do {                                                                       \
        long long t0_ = now_ns();                                              \
        int rc_ = (call);                                                      \
        count(name, now_ns() - t0_);                                           \
        if (rc_ != MPI_SUCCESS) {                                              \
            fprintf(stderr, "%s failed\n", name);                              \
            exit(1);                                                           \
        }                                                                      \
    } while (0)

static int ring_bytes(int r) { return (r + 1) * 1000; }
static int pair_ints(int r, int s) { return 100 * (r + 1) + 10 * (s + 1); }

static void ring(int rank)
{
    static char out[8192], in[8192];
    int next = (rank + 1) % RANKS, prev = (rank + RANKS - 1) % RANKS;
    memset(out, rank, sizeof out);
    if (rank % 2 == 0) {
        TIMED("MPI_Send", MPI_Send(out, ring_bytes(rank), MPI_BYTE, next, 10 + rank, MPI_COMM_WORLD));
        TIMED("MPI_Recv", MPI_Recv(in, sizeof in, MPI_BYTE, prev, MPI_ANY_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    } else {
        TIMED("MPI_Recv", MPI_Recv(in, sizeof in, MPI_BYTE, prev, MPI_ANY_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        TIMED("MPI_Send", MPI_Send(out, ring_bytes(rank), MPI_BYTE, next, 10 + rank, MPI_COMM_WORLD));
    }
}

static void all(int rank)
{
    static int out[RANKS][1024], in[RANKS][1024];
    MPI_Request requests[2 * RANKS];
    int n = 0, any = (rank + 2) % RANKS;
    /* The wildcard receive last: messages match the receives in the order
     * they were posted, so it can only get the one from `any`. */
    for (int s = 0; s < RANKS; s++) {
        if (s == rank || s == any)
            continue;
        TIMED("MPI_Irecv", MPI_Irecv(in[s], 1024, MPI_INT, s, 20, MPI_COMM_WORLD, &requests[n++]));
    }
    TIMED("MPI_Irecv", MPI_Irecv(in[any], 1024, MPI_INT, MPI_ANY_SOURCE, 20, MPI_COMM_WORLD, &requests[n++]));
    for (int s = 0; s < RANKS; s++) {
        if (s == rank)
            continue;
        TIMED("MPI_Isend", MPI_Isend(out[s], pair_ints(rank, s), MPI_INT, s, 20, MPI_COMM_WORLD, &requests[n++]));
    }
    TIMED("MPI_Waitall", MPI_Waitall(n, requests, MPI_STATUSES_IGNORE));
}

static void many(int rank)
{
    static char buf[MANY][8 * MANY];
    MPI_Request requests[MANY];
    if (rank > 1)
        return;
    for (int k = 0; k < MANY; k++) {
        if (rank == 0)
            TIMED("MPI_Irecv", MPI_Irecv(buf[k], 8 * MANY, MPI_BYTE, 1, k, MPI_COMM_WORLD, &requests[k]));
        else
            TIMED("MPI_Isend", MPI_Isend(buf[k], 8 * (k + 1), MPI_BYTE, 0, k, MPI_COMM_WORLD, &requests[k]));
    }
    TIMED("MPI_Waitall", MPI_Waitall(MANY, requests, MPI_STATUSES_IGNORE));
}

static void late(int rank)
{
    static char buf[64];
    MPI_Request request;
    switch (rank) {
    case 0:
        TIMED("MPI_Recv", MPI_Recv(buf, 64, MPI_BYTE, 1, 40, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        break;
    case 1:
        usleep(LATE_MS * 1000);
        TIMED("MPI_Send", MPI_Send(buf, 8, MPI_BYTE, 0, 40, MPI_COMM_WORLD));
        break;
    case 2:
        usleep(LATE_MS * 1000);
        TIMED("MPI_Ssend", MPI_Ssend(buf, 64, MPI_BYTE, 3, 41, MPI_COMM_WORLD));
        break;
    case 3:
        TIMED("MPI_Irecv", MPI_Irecv(buf, 64, MPI_BYTE, 2, 41, MPI_COMM_WORLD, &request));
        TIMED("MPI_Wait", MPI_Wait(&request, MPI_STATUS_IGNORE));
        break;
    }
}

static void shift(int rank)
{
    static char out[256], in[256];
    MPI_Status status;
    int next = (rank + 1) % RANKS, prev = (rank + RANKS - 1) % RANKS;
    TIMED("MPI_Sendrecv", MPI_Sendrecv(out, 256, MPI_BYTE, next, 30, in, 256, MPI_BYTE, prev, 30, MPI_COMM_WORLD, &status));
}

static void coll(int rank)
{
    static double doubles[1000], reduced[8];
    static int ints[16], sums[16], gathered[4 * RANKS], mine[4], spread[2 * RANKS], got[2 * RANKS];
    TIMED("MPI_Barrier", MPI_Barrier(MPI_COMM_WORLD));
    TIMED("MPI_Bcast", MPI_Bcast(doubles, 1000, MPI_DOUBLE, 2, MPI_COMM_WORLD));
    TIMED("MPI_Allreduce", MPI_Allreduce(ints, sums, 16, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    TIMED("MPI_Reduce", MPI_Reduce(doubles, reduced, 8, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD));
    TIMED("MPI_Gather", MPI_Gather(mine, 4, MPI_INT, gathered, 4, MPI_INT, 1, MPI_COMM_WORLD));
    TIMED("MPI_Alltoall", MPI_Alltoall(spread, 2, MPI_INT, got, 2, MPI_INT, MPI_COMM_WORLD));
    (void)rank;
}

int main(int argc, char **argv)
{
    int hang = argc > 1 && strcmp(argv[1], "hang") == 0;
    int rank, size;
    TIMED("MPI_Init", MPI_Init(&argc, &argv));
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != RANKS) {
        fprintf(stderr, "run with %d ranks\n", RANKS);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    ring(rank);
    all(rank);
    many(rank);
    late(rank);
    shift(rank);
    coll(rank);
    if (hang && rank == 3) {
        printf("sleeping %d\n", (int)getpid());
        fflush(stdout);
        sleep(60);
    }
    TIMED("MPI_Finalize", MPI_Finalize());
    for (int i = 0; i < FUNCTIONS && names[i]; i++)
        printf("time %d %s %lld %d\n", rank, names[i], spent[i], calls[i]);
    fflush(stdout);
    return 0;
}
