/* Two functions with locals, a structure reached by value and through a
 * pointer, and globals: displays kept to the function they were made in,
 * Tab completion of variables and members, steps cut short by a
 * breakpoint, Enter repeating a step.
 * Used by: session.rs (compared with gdb). */
#include <stdio.h>

struct pair {
    int left;
    int right;
    struct pair *next_pair;
};

int g_total;
struct pair g_pair = {5, 6, 0};

int scale(int factor, struct pair *pp)
{
    int scaled = factor * pp->left; /* MARK:scale_body */
    scaled += pp->right;
    g_total += scaled;
    return scaled;
}

int combine(int base)
{
    struct pair local_pair = {base, base + 1, &g_pair};
    int combined = scale(2, &local_pair); /* MARK:combine_call */
    combined += scale(3, local_pair.next_pair);
    return combined; /* MARK:combine_return */
}

int main(void)
{
    setvbuf(stdout, NULL, _IONBF, 0);
    int result = combine(1); /* MARK:main_first */
    result += combine(10);
    printf("result=%d total=%d\n", result, g_total);
    return 0;
}
