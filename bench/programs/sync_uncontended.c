/* Uncontended pthread_mutex_lock/unlock pairs (no other thread ever holds
 * the mutex): what sync wait tracing costs a program that never waits.
 * Prints its own ns per pair, best of 5 rounds of PAIRS pairs. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <time.h>

static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static volatile unsigned long sink;

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int main(int argc, char **argv) {
    long pairs = argc > 1 ? atol(argv[1]) : 10000000;
    double best = 1e30;
    for (int round = 0; round < 5; round++) {
        uint64_t start = now_ns();
        for (long i = 0; i < pairs; i++) {
            pthread_mutex_lock(&mutex);
            sink += (unsigned long)i;
            pthread_mutex_unlock(&mutex);
        }
        double ns = (double)(now_ns() - start) / (double)pairs;
        if (ns < best) {
            best = ns;
        }
    }
    printf("%ld pairs, %.2f ns per pair\n", pairs, best);
    return 0;
}
