/* At -O2 gcc makes clones of four kinds out of these functions, each of
 * which spins for a time the program measures itself (thread CPU time):
 *   real_recurse.part.0     partial inlining: the likely early return is
 *                           inlined into the callers, the rest split out
 *   checked.cold            the path after a call to a cold function moves
 *                           to .text.unlikely
 *   scaled.isra.0           IPA-SRA: the struct pointer becomes the one
 *                           field used
 *   repeat.constprop.0      IPA-CP: always called with times = 4
 * Used by: tests/analyze.rs (each clone is a function row of its own).
 * usage: clones [SECONDS]   (default 0.3 per phase)
 * Output: "cpu PHASE SECONDS" for real_recurse, checked, scaled, repeat. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double seconds = 0.3;
static volatile double sink;

__attribute__((noinline)) double thread_cpu(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

#define SPIN(duration)                                                        \
    do {                                                                      \
        double start_ = thread_cpu(), x_ = 1.0;                               \
        while (thread_cpu() - start_ < (duration)) {                          \
            for (int i_ = 0; i_ < 20000; i_++) x_ = x_ * 1.0000001 + 0.5;     \
            sink = x_;                                                        \
        }                                                                     \
    } while (0)

/* Called from two places, the header cheap and likely: gcc splits it. The
 * recursive call is not a tail call (that would become a loop). */
static int levels = 3;
static int depth_seen;
static double level_seconds;
static void real_recurse(int n)
{
    if (__builtin_expect(n > levels, 1))
        return;
    SPIN(level_seconds);
    printf("depth %d\n", n);
    depth_seen++;
    real_recurse(n + 1);
    if (depth_seen % 7 == 0)
        puts("seven");
    if (depth_seen % 11 == 0)
        puts("eleven");
}

__attribute__((cold, noinline)) void complain(void) { fprintf(stderr, "negative\n"); }

__attribute__((noinline)) int checked(int v)
{
    if (v < 0) {
        complain();
        SPIN(seconds);
        return -v;
    }
    return v + 1;
}

struct big {
    double pad[8];
    double scale;
};

static __attribute__((noinline)) double scaled(struct big *b, int n)
{
    double x = b->scale + n;
    SPIN(seconds / 2);
    return x;
}

static __attribute__((noinline)) double repeat(double duration, int times)
{
    double r = 0;
    for (int i = 0; i < times; i++) {
        SPIN(duration / times);
        r += i;
    }
    return r;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IONBF, 0);
    if (argc > 1)
        seconds = atof(argv[1]);
    /* real_recurse(0) and (1) recurse to levels: 4 + 3 levels of SPIN. */
    level_seconds = seconds / 7;
    int one = argc > 1 ? 1 : argc;
    struct big b = {.scale = 2.0}, other = {.scale = one};
    double t0 = thread_cpu();
    for (int i = 0; i < one + 1; i++)
        real_recurse(i);
    real_recurse(levels + one);
    double t1 = thread_cpu();
    int c = checked(-one);
    double t2 = thread_cpu();
    double s = scaled(&b, one) + scaled(&other, one + 1);
    double t3 = thread_cpu();
    double p = repeat(seconds / 2, 4) + repeat(seconds / 2, 4);
    double t4 = thread_cpu();
    printf("cpu real_recurse %.6f\ncpu checked %.6f\ncpu scaled %.6f\ncpu repeat %.6f\n",
           t1 - t0, t2 - t1, t3 - t2, t4 - t3);
    return (depth_seen + c + (int)s + (int)p) == 12345;
}
