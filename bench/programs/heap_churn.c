/* Heap tracing cost: PAIRS malloc/free pairs (default 2 million), each made
 * at the bottom of a call chain 10 to 30 frames deep (the depth cycles, so
 * stacks repeat as in real programs). The blocks are passed to an opaque
 * function so the compiler cannot drop the pairs. Prints the pairs made and
 * the wall time of the loop, in ns per pair. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

void *volatile sink;
/* Read after each recursive call: keeps the compiler from turning the
 * recursion into a loop (the stacks must really be deep). */
volatile long salt = 1;

__attribute__((noinline)) static void use(void *p) { sink = p; }

__attribute__((noinline)) static long descend(int levels, size_t size)
{
    if (levels > 0)
        return descend(levels - 1, size) + salt;
    void *p = malloc(size);
    use(p);
    free(p);
    return 0;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    long pairs = argc > 1 ? atol(argv[1]) : 2000000;
    long total = 0;
    double start = now();
    for (long i = 0; i < pairs; i++)
        total += descend(8 + (int)(i % 21), 16 + (size_t)(i & 63));
    double elapsed = now() - start;
    printf("%ld pairs, %.1f ns per pair (%ld)\n", pairs, elapsed * 1e9 / pairs, total);
    return 0;
}
