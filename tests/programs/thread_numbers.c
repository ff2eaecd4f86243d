/* Three workers, then a late thread: the debugger's t@N and the analyzer's
 * thread numbers must name the same threads (tests/thread_numbers.rs).
 *
 * main spins, creates worker 1, 2, 3 (each spins, prints its tid and waits
 * at a barrier), calls all_started() once all three have spun, releases
 * them, then creates the late thread, which spins and calls late_started().
 * Lines: "worker N tid T" (in any order), "late tid T", "done".
 * usage: thread_numbers [wait]   With `wait`, main prints "waiting" and
 * reads one byte from stdin after creating the workers (a test attaches
 * meanwhile). */
#include <pthread.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define NWORKERS 3

static pthread_barrier_t started, released;
static volatile double sink;

static double thread_cpu(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void spin(double seconds)
{
    double start = thread_cpu(), x = 1.0;
    while (thread_cpu() - start < seconds) {
        for (int i = 0; i < 20000; i++)
            x = x * 1.0000001 + 0.5;
        sink = x;
    }
}

static long tid(void) { return (long)syscall(SYS_gettid); }

static void *worker(void *arg)
{
    long n = (long)arg;
    spin(0.03 * n);
    printf("worker %ld tid %ld\n", n, tid());
    pthread_barrier_wait(&started);
    pthread_barrier_wait(&released);
    return NULL;
}

/* The test stops here: the workers exist and have spun. */
__attribute__((noinline)) void all_started(void) { __asm__ volatile("" ::: "memory"); }

/* And here, in the late thread. */
__attribute__((noinline)) void late_started(void) { __asm__ volatile("" ::: "memory"); }

static void *late(void *arg)
{
    (void)arg;
    spin(0.05);
    printf("late tid %ld\n", tid());
    late_started();
    return NULL;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IONBF, 0);
    pthread_t workers[NWORKERS], late_thread;
    pthread_barrier_init(&started, NULL, NWORKERS + 1);
    pthread_barrier_init(&released, NULL, NWORKERS + 1);
    spin(0.05);
    for (long n = 1; n <= NWORKERS; n++)
        pthread_create(&workers[n - 1], NULL, worker, (void *)n);
    if (argc > 1) {
        char byte;
        printf("waiting\n");
        if (read(0, &byte, 1) != 1)
            return 1;
    }
    pthread_barrier_wait(&started);
    all_started();
    pthread_barrier_wait(&released);
    pthread_create(&late_thread, NULL, late, NULL);
    for (int n = 0; n < NWORKERS; n++)
        pthread_join(workers[n], NULL);
    pthread_join(late_thread, NULL);
    printf("done\n");
    return 0;
}
