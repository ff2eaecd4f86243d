/* Two threads ping-pong one byte through two pipes ROUNDS times (default
 * 200000), each doing WORK steps of arithmetic (default 1000) before it
 * sends: `pingpong [ROUNDS [WORK]]`. Each round trip blocks each thread once in read, so the
 * program does about two context switches per round trip. Prints its
 * wall time, its CPU time (user + system, all threads) and the context
 * switches it made (getrusage), and the rate. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static int ping[2], pong[2];
static long rounds = 200000;
/* A little work per message, so that the rate is about 100k switches a
 * second on a small machine rather than whatever the pipes allow. */
static long work = 1000;
static volatile unsigned long sink;

static void busy(void) {
    unsigned long x = sink;
    for (long i = 0; i < work; i++)
        x = x * 6364136223846793005u + 1442695040888963407u;
    sink = x;
}

static void *responder(void *unused) {
    (void)unused;
    char byte;
    for (long i = 0; i < rounds; i++) {
        if (read(ping[0], &byte, 1) != 1)
            abort();
        busy();
        if (write(pong[1], &byte, 1) != 1)
            abort();
    }
    return NULL;
}

static double seconds(struct timeval tv) { return tv.tv_sec + tv.tv_usec / 1e6; }

int main(int argc, char **argv) {
    if (argc > 1)
        rounds = atol(argv[1]);
    if (argc > 2)
        work = atol(argv[2]);
    if (pipe(ping) != 0 || pipe(pong) != 0)
        return 1;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pthread_t t;
    pthread_create(&t, NULL, responder, NULL);
    char byte = 'x';
    for (long i = 0; i < rounds; i++) {
        busy();
        if (write(ping[1], &byte, 1) != 1 || read(pong[0], &byte, 1) != 1)
            abort();
    }
    pthread_join(t, NULL);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double wall = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
    double cpu = seconds(ru.ru_utime) + seconds(ru.ru_stime);
    long switches = ru.ru_nvcsw + ru.ru_nivcsw;
    printf("wall %.3f s cpu %.3f s switches %ld rate %.0f/s\n", wall, cpu, switches,
           switches / wall);
    return 0;
}
