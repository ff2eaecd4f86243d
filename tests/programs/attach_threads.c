/* Four worker threads, each counting to a bound a few times over, and
   calling tick() once a round, until the main thread says stop (after
   "stop" arrives on stdin). Prints each thread's rounds > 0 at the end. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define THREADS 4
static volatile int stop;
static long rounds[THREADS];

void tick(int who) { /* MARK:tick */
    rounds[who]++;
}

static void *worker(void *arg) {
    int who = (int)(long)arg;
    while (!stop) {
        for (volatile long i = 0; i < 100000; i++)
            ;
        tick(who);
        usleep(1000);
    }
    return NULL;
}

int main(void) {
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    printf("ready\n");
    fflush(stdout);
    char buf[64];
    ssize_t n = read(0, buf, sizeof buf); /* waits for the test */
    (void)n;
    stop = 1;
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < THREADS; i++)
        printf("thread %d ran: %s\n", i, rounds[i] > 0 ? "yes" : "no");
    return 0;
}
