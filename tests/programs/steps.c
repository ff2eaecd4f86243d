/* Straight-line code, calls and a loop for step / next / finish, compared
 * with gdb doing the same sequence at -O0 and -O2.
 * Used by: stepping.rs. */
#include <stdio.h>

volatile int acc;

__attribute__((noinline)) int add(int a, int b)
{
    acc += a; /* MARK:add_first */
    acc += b;
    return a + b;
}

__attribute__((noinline)) int twice(int x)
{
    int r = add(x, x); /* MARK:twice_first */
    acc += r;
    return r;
}

int main(void)
{
    setvbuf(stdout, NULL, _IONBF, 0);
    int x = 1; /* MARK:main_first */
    acc = x;
    int y = add(x, 2); /* MARK:main_add */
    int z = twice(y);
    for (int i = 0; i < 3; i++)
        acc += i;
    printf("steps %d %d %d\n", x, y, z);
    return 0;
}
