/* main steps up out of start_and_join while a thread it started hits a
 * breakpoint in worker_hit: the stop must name that thread.
 * Used by: real_control.rs (built by the test itself). */
#include <pthread.h>
#include <stdio.h>

volatile int hits;

__attribute__((noinline)) void worker_hit(int n)
{
    hits += n; /* MARK:worker_hit */
}

static void *worker(void *arg)
{
    (void)arg;
    worker_hit(1);
    return NULL;
}

__attribute__((noinline)) int start_and_join(void)
{
    pthread_t thread;
    pthread_create(&thread, NULL, worker, NULL);
    pthread_join(thread, NULL);
    return hits;
}

int main(void)
{
    setvbuf(stdout, NULL, _IONBF, 0);
    int r = start_and_join();
    printf("hits %d\n", r);
    return 0;
}
