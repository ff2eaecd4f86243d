/* Functions for injected calls (rdbx's call_function), and a program
 * whose exit status or terminating signal is chosen on the command line:
 *   callee              calls tick(0..4), exits 0 if counter == 10
 *   callee exit N       exits with status N
 *   callee kill SIG     raises SIG
 *   callee spin SECONDS burns CPU for SECONDS, then exits 0 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int counter;

long add2(long a, long b) { return a * 10 + b; }

long add6(long a, long b, long c, long d, long e, long f)
{
    return a + 2 * b + 3 * c + 4 * d + 5 * e + 6 * f;
}

long length(const char *text) { return (long)strlen(text); }

long crash(long address) { return *(volatile long *)address; }

static volatile int handled;
static void on_signal(int sig) { (void)sig; handled++; }

/* Raises SIG with a handler installed; how many times the handler ran. */
long raise_and_count(long sig)
{
    handled = 0;
    signal((int)sig, on_signal);
    raise((int)sig);
    signal((int)sig, SIG_DFL);
    return handled;
}

void tick(int i)
{
    counter += i; /* MARK:tick */
}

/* Counts its own CPU time, not wall time: on a loaded machine it still
 * burns exactly SECONDS of CPU (what profiling tests count on). */
static void spin(double seconds)
{
    struct timespec start, now;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &start);
    volatile unsigned long x = 0;
    do {
        for (int i = 0; i < 100000; i++)
            x += i;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
    } while ((now.tv_sec - start.tv_sec) + (now.tv_nsec - start.tv_nsec) / 1e9 < seconds);
}

int main(int argc, char **argv)
{
    if (argc > 2 && strcmp(argv[1], "exit") == 0)
        return atoi(argv[2]);
    if (argc > 2 && strcmp(argv[1], "kill") == 0) {
        raise(atoi(argv[2]));
        return 99;
    }
    if (argc > 2 && strcmp(argv[1], "spin") == 0) {
        spin(atof(argv[2]));
        return 0;
    }
    for (int i = 0; i < 5; i++)
        tick(i);
    printf("counter=%d\n", counter);
    return counter == 10 ? 0 : 1;
}
