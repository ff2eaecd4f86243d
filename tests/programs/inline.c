/* Inlined static functions (meant for -O2): main -> outer_inl -> inner_inl,
 * both always_inline; inner_inl calls the out-of-line sink().
 * Used by: stack.rs (where shows inlined frames like gdb's bt). */
#include <stdio.h>

volatile int seed = 3;
volatile int sunk;

__attribute__((noinline)) void sink(int v)
{
    sunk = v; /* MARK:sink_body */
}

static inline __attribute__((always_inline)) int inner_inl(int x)
{
    int y = x * x + seed;
    sink(y); /* MARK:inner_sink_call */
    return y + 1;
}

static inline __attribute__((always_inline)) int outer_inl(int x)
{
    int z = inner_inl(x + 1); /* MARK:outer_calls_inner */
    return z * 2;
}

int main(void)
{
    setvbuf(stdout, NULL, _IONBF, 0);
    int r = outer_inl(seed); /* MARK:main_calls_outer */
    printf("inline r=%d sunk=%d\n", r, sunk);
    return 0;
}
