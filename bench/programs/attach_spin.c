/* bench/attach.sh: four threads spinning on the CPU; main stops in ready()
 * (where `collector enable` is issued) and then lets them spin for SECONDS
 * of wall time before it ends the run. Usage: attach_spin [SECONDS] */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#define NWORKERS 4

static atomic_int done;

static void *spin(void *arg)
{
    (void)arg;
    volatile unsigned long x = 0;
    while (!atomic_load(&done))
        for (int i = 0; i < 10000; i++)
            x += (unsigned long)i * i;
    return NULL;
}

__attribute__((noinline)) void ready(void)
{
    __asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 0.3;
    pthread_t tids[NWORKERS];
    for (int i = 0; i < NWORKERS; i++)
        pthread_create(&tids[i], NULL, spin, NULL);
    struct timespec settle = {0, 20 * 1000 * 1000};
    nanosleep(&settle, NULL);
    ready();
    struct timespec run = {(time_t)seconds, (long)((seconds - (time_t)seconds) * 1e9)};
    nanosleep(&run, NULL);
    atomic_store(&done, 1);
    for (int i = 0; i < NWORKERS; i++)
        pthread_join(tids[i], NULL);
    return 0;
}
