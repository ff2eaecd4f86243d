/* main (compiled with -g) calls nd_compute() from nodebug_lib.c, which the
 * harness compiles WITHOUT -g and links in.
 * Used by: stepping.rs (`step` over a call to a function without debug info
 *          ends on the next line of main), stack.rs (where inside nd_compute). */
#include <stdio.h>

int nd_compute(int x);

int main(void)
{
    setvbuf(stdout, NULL, _IONBF, 0);
    int a = 5;
    int b = nd_compute(a); /* MARK:call_nodebug */
    int c = b + 1; /* MARK:after_nodebug */
    printf("nodebug c=%d\n", c);
    return 0;
}
