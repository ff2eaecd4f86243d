/* A program that must outlive its debugger: three workers each call
 * step() 20 times, 50 ms apart, while the main thread counts SIGUSR1s.
 * It prints "total 1140 usr1 N" and exits with 3 when nothing disturbed
 * it: a breakpoint left in step() would kill it with SIGTRAP, a lost
 * signal would show in N.
 * Used by: survival.rs. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

static volatile sig_atomic_t usr1;

static void on_usr1(int sig)
{
    (void)sig;
    usr1++;
}

int step(int i)
{
    return 2 * i; /* MARK:step_body */
}

static void *worker(void *arg)
{
    long sum = 0;
    for (int i = 0; i < 20; i++) {
        sum += step(i);
        usleep(50 * 1000);
    }
    return (void *)sum;
}

int main(void)
{
    pthread_t threads[3];
    signal(SIGUSR1, on_usr1);
    printf("ready\n");
    fflush(stdout);
    for (int i = 0; i < 3; i++)
        pthread_create(&threads[i], NULL, worker, NULL);
    long total = 0;
    for (int i = 0; i < 3; i++) {
        void *sum;
        pthread_join(threads[i], &sum);
        total += (long)sum;
    }
    /* A signal sent just before the end still counts. */
    usleep(100 * 1000);
    printf("total %ld usr1 %d\n", total, (int)usr1);
    return 3;
}
