/* Collection started on a running process (tests/live_collect.rs).
 * Four CPU-bound workers are created and wait at a barrier; main then calls
 * ready() (where the test stops and runs `collector enable`) and joins the
 * barrier. Each worker spins for SECONDS of its own CPU time and prints the
 * CPU it used after the barrier; a fifth thread, created after ready(),
 * does the same over its whole life. Lines:
 *   "cpu TID SECONDS"        (the thread's own measurement, to stderr)
 *   "worker N sum X"         (deterministic, to stdout)
 * Usage: live_threads [SECONDS [wait]]   (default 0.3). With `wait`, main
 * prints "waiting" and reads one byte from stdin before ready(): the test
 * attaches to the running process and starts collection meanwhile. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define NWORKERS 4

static pthread_barrier_t barrier;
static double seconds = 0.3;

static double thread_cpu(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Spins for `seconds` of this thread's CPU; returns a checksum that does
 * not depend on how long that took. */
static unsigned long spin(int id)
{
    double start = thread_cpu();
    double before = start;
    unsigned long sum = 0;
    volatile unsigned long x = 0;
    while (thread_cpu() - start < seconds) {
        for (int i = 0; i < 20000; i++)
            x += (unsigned long)i * i;
    }
    for (int i = 0; i <= id; i++)
        sum += (unsigned long)i * 1000 + 7;
    fprintf(stderr, "cpu %ld %.6f\n", (long)syscall(SYS_gettid), thread_cpu() - before);
    return sum;
}

static void *worker(void *arg)
{
    int id = (int)(long)arg;
    if (id < NWORKERS)
        pthread_barrier_wait(&barrier);
    unsigned long sum = spin(id);
    printf("worker %d sum %lu\n", id, sum);
    return NULL;
}

/* The test stops here: the workers exist and wait at the barrier. */
__attribute__((noinline)) void ready(void)
{
    __asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IONBF, 0);
    setvbuf(stderr, NULL, _IONBF, 0);
    if (argc > 1)
        seconds = atof(argv[1]);
    pthread_t tids[NWORKERS + 1];
    pthread_barrier_init(&barrier, NULL, NWORKERS + 1);
    for (long i = 0; i < NWORKERS; i++)
        pthread_create(&tids[i], NULL, worker, (void *)i);
    /* Give the workers time to reach the barrier (they block in futex). */
    struct timespec pause = {0, 20 * 1000 * 1000};
    nanosleep(&pause, NULL);
    if (argc > 2) {
        char byte;
        printf("waiting\n");
        if (read(0, &byte, 1) != 1)
            return 1;
    }
    ready();
    pthread_barrier_wait(&barrier);
    /* A thread born after `collector enable`: found by the watcher. */
    pthread_create(&tids[NWORKERS], NULL, worker, (void *)(long)NWORKERS);
    for (int i = 0; i <= NWORKERS; i++)
        pthread_join(tids[i], NULL);
    printf("done\n");
    return 0;
}
