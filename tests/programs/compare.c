/* Two runs of this program differ in one function's work, for compare
 * mode: `steady` does the same work in every run, `scaled` FACTOR times
 * as much (FACTOR is the first argument, default 1). Each function
 * measures its own thread CPU time and prints it, so a test can check the
 * ratios the analyzer shows against what the program measured.
 *
 * usage: compare [FACTOR [ROUNDS]]   (ROUNDS of work per unit, default 2000)
 * Output lines: "cpu FUNCTION SECONDS".
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile double sink;

static double thread_cpu(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A fixed amount of arithmetic: the work, not the time, is what a run
 * chooses. */
static inline __attribute__((always_inline)) void work(long rounds) {
    double x = 1.0;
    for (long r = 0; r < rounds; r++) {
        for (int i = 0; i < 100000; i++) x = x * 1.0000001 + 0.5;
        sink = x;
    }
}

__attribute__((noinline)) void steady(long rounds) {
    double start = thread_cpu();
    work(rounds);
    printf("cpu steady %.6f\n", thread_cpu() - start);
}

__attribute__((noinline)) void scaled(long rounds) {
    double start = thread_cpu();
    work(rounds);
    printf("cpu scaled %.6f\n", thread_cpu() - start);
}

int main(int argc, char **argv) {
    long factor = argc > 1 ? atol(argv[1]) : 1;
    long rounds = argc > 2 ? atol(argv[2]) : 2000;
    steady(rounds);
    scaled(rounds * factor);
    fflush(stdout);
    return 0;
}
