/* Four worker threads that meet at a barrier (so all five threads exist when
 * the first worker reaches `work`) and then call work(id).
 * Used by: threads.rs (breakpoint in worker thread, threads list, where). */
#include <pthread.h>
#include <stdio.h>

#define NWORKERS 4

static pthread_barrier_t barrier;
static volatile int results[NWORKERS];

int work(int id)
{
    results[id] = id * 10; /* MARK:work_body */
    return id;
}

static void *worker(void *arg)
{
    int id = (int)(long)arg;
    pthread_barrier_wait(&barrier);
    work(id); /* MARK:worker_call */
    return NULL;
}

int main(void)
{
    setvbuf(stdout, NULL, _IONBF, 0);
    pthread_t tids[NWORKERS];
    pthread_barrier_init(&barrier, NULL, NWORKERS + 1);
    for (long i = 0; i < NWORKERS; i++)
        pthread_create(&tids[i], NULL, worker, (void *)i);
    pthread_barrier_wait(&barrier);
    for (int i = 0; i < NWORKERS; i++)
        pthread_join(tids[i], NULL); /* MARK:main_join */
    int sum = 0;
    for (int i = 0; i < NWORKERS; i++)
        sum += results[i];
    printf("threads done sum=%d\n", sum);
    return 0;
}
