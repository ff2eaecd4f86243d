/* The "gprof fallacy": cheap_caller makes a million calls of work() that
 * cost almost nothing, expensive_caller makes a hundred that cost almost
 * everything. Attribution by call counts (gprof) would give work()'s time to
 * cheap_caller; attribution from call stacks must give it to
 * expensive_caller. Prints each caller's own thread CPU time:
 * "cpu NAME SECONDS". usage: fallacy [ITERATIONS_PER_EXPENSIVE_CALL] */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile double sink;

static double thread_cpu(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline, noipa)) void work(long n) {
    double x = 1.0;
    for (long i = 0; i < n; i++) x = x * 1.0000001 + 0.5;
    sink = x;
}

__attribute__((noinline, noipa)) void cheap_caller(void) {
    for (int i = 0; i < 1000000; i++) work(4);
}

__attribute__((noinline, noipa)) void expensive_caller(long n) {
    for (int i = 0; i < 100; i++) work(n);
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 2000000;
    double t0 = thread_cpu();
    cheap_caller();
    double t1 = thread_cpu();
    expensive_caller(n);
    double t2 = thread_cpu();
    printf("cpu cheap_caller %.6f\ncpu expensive_caller %.6f\n", t1 - t0, t2 - t1);
    return 0;
}
