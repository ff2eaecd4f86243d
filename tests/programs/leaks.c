/* Leaks of every class by construction, checked at checkpoint() by rdbx's
 * showleaks and, under valgrind, by memcheck's leak check at the same point
 * (VALGRIND_DO_LEAK_CHECK, a no-op elsewhere).
 *   definitely lost: 3 x 40 bytes (pointers overwritten)
 *   indirectly lost: a lost list head (24) -> 2 nodes (24 each)
 *   possibly lost:   one 64-byte block only pointed into (global + 16)
 *   still reachable: a global list of 5 x 32, a global to a 100-byte block
 * Pointers live in globals only, so main's frame holds none at the
 * checkpoint. At later_checkpoint: 2 x 56 more lost, and the 100-byte
 * block too (its global cleared). */
#include <stdio.h>
#include <stdlib.h>
#include <valgrind/memcheck.h>

struct node {
    struct node *next;
    long value;
    long pad;
};

struct node *list;
void *kept;
char *inside;
void *volatile scratch;

__attribute__((noinline)) void checkpoint(void)
{
    VALGRIND_DO_LEAK_CHECK;
}

__attribute__((noinline)) void lose_plain(void)
{
    for (int i = 0; i < 3; i++)
        scratch = malloc(40);
    scratch = 0;
}

__attribute__((noinline)) void lose_list(void)
{
    struct node *head = malloc(sizeof *head);
    head->next = malloc(sizeof *head);
    head->next->next = malloc(sizeof *head);
    head->next->next->next = 0;
    scratch = head;
    scratch = 0;
}

__attribute__((noinline)) void keep_interior(void)
{
    inside = (char *)malloc(64) + 16;
}

__attribute__((noinline)) void keep_reachable(void)
{
    for (int i = 0; i < 5; i++) {
        struct node *n = malloc(32);
        n->next = list;
        n->value = i;
        list = n;
    }
    kept = malloc(100);
}

__attribute__((noinline)) void clear_registers(void)
{
    /* Calls that leave no block address in a callee-saved register. */
    scratch = malloc(8);
    free((void *)scratch);
    scratch = 0;
}

/* After the checkpoint: two more blocks lost, and the 100-byte block
 * kept so far lost too. */
__attribute__((noinline)) void lose_more(void)
{
    for (int i = 0; i < 2; i++)
        scratch = malloc(56);
    scratch = 0;
    kept = 0;
}

__attribute__((noinline)) void later_checkpoint(void)
{
    scratch = 0;
}

int main(void)
{
    lose_plain();
    lose_list();
    keep_interior();
    keep_reachable();
    clear_registers();
    checkpoint();
    lose_more();
    clear_registers();
    later_checkpoint();
    puts("done");
    return 0;
}
