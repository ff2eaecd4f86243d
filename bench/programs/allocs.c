#include <stdlib.h>
#include <stdio.h>
/* 10M allocations over a handful of call paths, so the heap experiment has
   one event per allocation. */
static void *__attribute__((noinline)) leaf(size_t n) { return malloc(n); }
static void *__attribute__((noinline)) mid_a(size_t n) { return leaf(n); }
static void *__attribute__((noinline)) mid_b(size_t n) { return n & 1 ? leaf(n) : malloc(n); }
int main(int argc, char **argv) {
    long count = argc > 1 ? atol(argv[1]) : 10000000;
    long sum = 0;
    for (long i = 0; i < count; i++) {
        void *p = (i % 3) ? mid_a(16 + (i & 63)) : mid_b(16 + (i & 63));
        sum += (long)(p != 0);
        free(p);
    }
    printf("%ld\n", sum);
    return 0;
}
