/* MPI tracing cost, for bench/mpi.sh: 2 ranks.
 *
 *   ping-pong  rank 0 MPI_Send's 8 bytes to rank 1 and MPI_Recv's them
 *              back, ROUNDS times (rank 1 the other way round): the time
 *              of a round trip, in which 4 MPI calls are on the critical
 *              path (each rank's send and receive)
 *   iprobe     each rank calls MPI_Iprobe (a traced call that never
 *              waits) PROBES times: its own cost per call
 *
 * Each is timed by rank 0 as the best of 3 rounds of a third of the
 * count, after a warm-up, in wall time and (the probes) in the thread's
 * CPU time too (time spent waiting for the disk, or for the CPU on a
 * loaded machine, is not in it), and printed as
 *   `pingpong N round trips: R ns per round trip, iprobe M calls: P ns per
 *   call, C cpu ns per call`.
 * usage: mpirun -np 2 mpi_pingpong [ROUNDS [PROBES]] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double clock_ns(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static double now_ns(void) { return clock_ns(CLOCK_MONOTONIC); }

static void round_trips(int rank, long n)
{
    char message[8] = {0};
    for (long i = 0; i < n; i++) {
        if (rank == 0) {
            MPI_Send(message, 8, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
            MPI_Recv(message, 8, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(message, 8, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(message, 8, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
        }
    }
}

static void probes(long n)
{
    int flag;
    for (long i = 0; i < n; i++)
        MPI_Iprobe(MPI_ANY_SOURCE, 99, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
}

/* Best of 3 rounds of n/3: wall ns per unit, and the thread's CPU ns per
 * unit in `cpu`. */
static double best_of_three(int rank, long n, void (*work)(int, long), double *cpu)
{
    double best = 1e300, best_cpu = 1e300;
    for (int round = 0; round < 3; round++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double start = now_ns(), cpu_start = clock_ns(CLOCK_THREAD_CPUTIME_ID);
        work(rank, n / 3);
        double spent = (now_ns() - start) / (n / 3);
        double used = (clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu_start) / (n / 3);
        if (spent < best)
            best = spent;
        if (used < best_cpu)
            best_cpu = used;
    }
    *cpu = best_cpu;
    return best;
}

static void probe_work(int rank, long n)
{
    (void)rank;
    probes(n);
}

int main(int argc, char **argv)
{
    long rounds = argc > 1 ? atol(argv[1]) : 300000;
    long calls = argc > 2 ? atol(argv[2]) : 3000000;
    int rank;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    double trip_cpu, probe_cpu;
    round_trips(rank, 1000);
    double trip = best_of_three(rank, rounds, round_trips, &trip_cpu);
    probes(1000);
    double probe = best_of_three(rank, calls, probe_work, &probe_cpu);
    if (rank == 0)
        printf("pingpong %ld round trips: %.1f ns per round trip, iprobe %ld calls: %.1f ns per "
               "call, %.1f cpu ns per call\n",
               rounds / 3 * 3, trip, calls / 3 * 3, probe, probe_cpu);
    MPI_Finalize();
    return 0;
}
