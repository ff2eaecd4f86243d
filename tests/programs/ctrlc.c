/* A service that blocks the ways services do, for Ctrl-C tests: one
 * thread waits on a condition variable (futex), one in nanosleep, one in
 * read on a pipe nobody writes, one burns CPU (for the profiler's
 * signals), and the main thread calls blocking_call(), 50 ms in
 * nanosleep, in a loop.
 * Used by: interrupt.rs. */
#include <pthread.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t never = PTHREAD_COND_INITIALIZER;
static int pipe_fds[2];
volatile long calls;
volatile unsigned long spins;

static void *in_futex(void *arg)
{
    pthread_mutex_lock(&lock);
    for (;;)
        pthread_cond_wait(&never, &lock);
    return arg;
}

static void *in_nanosleep(void *arg)
{
    for (;;) {
        struct timespec t = {1000, 0};
        nanosleep(&t, NULL);
    }
    return arg;
}

static void *in_read(void *arg)
{
    char c;
    for (;;)
        if (read(pipe_fds[0], &c, 1) < 0)
            break;
    return arg;
}

static void *busy(void *arg)
{
    for (;;)
        spins++;
    return arg;
}

void blocking_call(void)
{
    struct timespec t = {0, 50 * 1000 * 1000}; /* MARK:blocking_body */
    nanosleep(&t, NULL);
}

int main(void)
{
    pthread_t thread;
    if (pipe(pipe_fds) != 0)
        return 1;
    pthread_create(&thread, NULL, in_futex, NULL);
    pthread_create(&thread, NULL, in_nanosleep, NULL);
    pthread_create(&thread, NULL, in_read, NULL);
    pthread_create(&thread, NULL, busy, NULL);
    printf("ready\n");
    fflush(stdout);
    for (;;) {
        blocking_call(); /* MARK:call_blocking */
        calls++;
    }
}
