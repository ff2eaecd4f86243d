/* A function `hit` called N times (N = argv[1], default 10); prints the sum of
 * the arguments and exits with code 3.
 * Used by: breakpoints.rs (-count, -if, -temp, when, status/delete/clear),
 *          process.rs (exit code line, rerun, kill), bench/breakpoints.sh. */
#include <stdio.h>
#include <stdlib.h>

long total;

int hit(int i)
{
    total += i; /* MARK:hit_body */
    return i;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IONBF, 0);
    int n = argc > 1 ? atoi(argv[1]) : 10;
    for (int i = 1; i <= n; i++) {
        hit(i); /* MARK:loop_call */
    }
    printf("sum=%ld\n", total); /* MARK:after_loop */
    return 3;
}
