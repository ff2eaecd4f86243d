/* Code the unwinder tests sample: built at test time with gcc -O2 -fomit-frame-pointer. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>

volatile long unwind_spin_sink;

static void spin(long iterations)
{
    for (long i = 0; i < iterations; i++)
        unwind_spin_sink += i;
}

/* qsort's comparator: slow, so most samples land under qsort. */
__attribute__((noinline)) int unwind_compare_ints(const void *a, const void *b)
{
    spin(300);
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

__attribute__((noinline)) long unwind_sort_outer(int count, int rounds)
{
    int *values = malloc(sizeof(int) * (size_t)count);
    long sum = 0;
    if (values == NULL)
        return -1;
    for (int round = 0; round < rounds; round++) {
        for (int i = 0; i < count; i++)
            values[i] = (int)(((long)i * 7919 + round) % count);
        qsort(values, (size_t)count, sizeof(int), unwind_compare_ints);
        sum += values[count / 2];
    }
    free(values);
    return sum;
}

/* SIGUSR1 handler: spins (SIGPROF samples it), then releases unwind_spin_until_usr1. */
static volatile sig_atomic_t usr1_done;
static long usr1_spin;

__attribute__((noinline)) void unwind_usr1_handler(int signal)
{
    (void)signal;
    spin(usr1_spin);
    usr1_done = 1;
}

int unwind_install_usr1(long handler_spin)
{
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = unwind_usr1_handler;
    action.sa_flags = SA_RESTART;
    sigemptyset(&action.sa_mask);
    usr1_spin = handler_spin;
    usr1_done = 0;
    return sigaction(SIGUSR1, &action, NULL);
}

__attribute__((noinline)) long unwind_spin_until_usr1(void)
{
    long loops = 0;
    while (!usr1_done) {
        unwind_spin_sink += loops;
        loops++;
    }
    return loops;
}

/* Recursion that keeps every frame (a volatile local read after the call). */
__attribute__((noinline, noipa)) long unwind_recurse(int depth, long leaf_spin)
{
    volatile char pad[16];
    long result;
    pad[0] = (char)depth;
    if (depth <= 1) {
        spin(leaf_spin);
        result = 1;
    } else {
        result = unwind_recurse(depth - 1, leaf_spin) + 1;
    }
    return result + pad[0];
}
