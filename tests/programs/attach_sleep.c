/* Sleeps 1.5 s in nanosleep (attach/detach test) and prints how long it
   slept, rounded to tenths of a second, then "done". */
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

int main(void) {
    double start = now();
    printf("ready\n");
    fflush(stdout);
    struct timespec d = {1, 500000000};
    nanosleep(&d, NULL); /* MARK:sleep */
    printf("elapsed %.3f\n", now() - start);
    printf("done\n");
    return 0;
}
