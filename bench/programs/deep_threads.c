/* Benchmark target: two threads, each recursing about 30 frames deep and
 * doing a fixed amount of arithmetic at the bottom (fixed work, not fixed
 * time, so collection overhead shows up as extra CPU time).
 * usage: deep_threads [ROUNDS]   (default 400)
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static long rounds = 400;
static volatile double sink;

__attribute__((noinline)) static double work(void) {
    double x = 1.0;
    for (int i = 0; i < 1000000; i++) x = x * 1.0000001 + 0.5;
    return x;
}

__attribute__((noinline)) static double descend(int depth) {
    if (depth == 0) return work();
    double r = descend(depth - 1);
    sink = r;
    return r + 1;
}

static void *thread_main(void *arg) {
    (void)arg;
    for (long r = 0; r < rounds; r++) sink = descend(28);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc > 1) rounds = atol(argv[1]);
    pthread_t a, b;
    pthread_create(&a, NULL, thread_main, NULL);
    pthread_create(&b, NULL, thread_main, NULL);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    printf("%f\n", sink);
    return 0;
}
