/* Frames and variables under optimization (built at -O0 and -O2 by
   tests/inspect_o2.rs): locals that live in callee-saved registers across
   calls, a recursion whose arguments are used after the recursive call, and
   variables whose location list ends partway through their function. */
#include <stdio.h>
#include <stdlib.h>

struct node {
    int key;
    struct node *next;
};

volatile int sink;

__attribute__((noinline)) int leaf(int depth, int salt)
{
    int mixed = depth * 7 + salt;
    sink = mixed;
    return mixed + 1;
}

/* keep and scaled are needed after the call to leaf: at -O2 they live in
   callee-saved registers, which only CFI can restore in outer frames. */
__attribute__((noinline)) long middle(long a, long b)
{
    long keep = a * 3 + 1;
    long scaled = b ^ 0x55;
    long r = leaf((int)a, (int)b);
    return r + keep * scaled;
}

__attribute__((noinline)) long recurse(int depth, long acc, struct node *list)
{
    if (depth == 0)
        return middle(acc, list ? list->key : -1) + 1; /* not a tail call */
    long here = acc * 2 + depth;
    long below = recurse(depth - 1, here, list ? list->next : NULL); /* MARK:call */
    /* xor, not +: gcc would turn a sum into a loop with an accumulator */
    return (below ^ here) + depth;
}

/* `count` is dead after its last use: at -O2 its location list stops
   before the call, so gdb says <optimized out> in the caller's frame. */
__attribute__((noinline)) long outer(int count, struct node *list)
{
    long total = 0;
    for (int i = 0; i < count; i++) {
        long t = recurse(3, i + 10, list);
        total += t * (i + 1);
    }
    return total;
}

int main(int argc, char **argv)
{
    struct node nodes[4];
    for (int i = 0; i < 4; i++) {
        nodes[i].key = 100 + i;
        nodes[i].next = i < 3 ? &nodes[i + 1] : NULL;
    }
    int count = argc > 1 ? atoi(argv[1]) : 2;
    printf("%ld\n", outer(count, &nodes[0]));
    return 0;
}
