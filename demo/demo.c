/* The demo program of README.md: counts primes below a limit, with a
 * helper that recurses, so a short scripted rdbx session can show
 * breakpoints, a backtrace, stepping and printing. */
#include <stdio.h>
#include <stdlib.h>

static int is_prime(int n)
{
    if (n < 2)
        return 0;
    for (int d = 2; d * d <= n; d++)
        if (n % d == 0)
            return 0;
    return 1;
}

int count_primes(int below)
{
    if (below <= 2)
        return 0;
    return count_primes(below - 1) + is_prime(below - 1);
}

int main(int argc, char **argv)
{
    int limit = argc > 1 ? atoi(argv[1]) : 30;
    int found = count_primes(limit);
    printf("%d primes below %d\n", found, limit);
    return 0;
}
