/* Recursion: fact and fib.
 * Used by: stack.rs (where vs gdb bt at depth N, up/down/frame, -O0 and -O2),
 *          breakpoints.rs (stop in fact, -if, status, line with no code),
 *          startup.rs (list, dis, regs, loadobjects), bad_input.rs.
 * Prints fact(6) and fib(10); exit code 0. */
#include <stdio.h>

int fact(int n)
{
    if (n <= 1)
        return 1; /* MARK:fact_base */
    return n * fact(n - 1); /* MARK:fact_rec */
}

/* MARK:blank_before_fib (this comment line and the next blank line have no code) */

int fib(int n)
{
    if (n < 2)
        return n; /* MARK:fib_base */
    return fib(n - 1) + fib(n - 2);
}

int main(void)
{
    setvbuf(stdout, NULL, _IONBF, 0);
    int f = fact(6); /* MARK:main_fact */
    /* MARK:comment_in_main (no code on this line) */
    int g = fib(10);
    printf("fact=%d fib=%d\n", f, g);
    return 0;
}
