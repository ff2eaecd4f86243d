/* Arrays, artificial arrays and bitfields for tests/expr_arrays.rs:
 * multi-dimensional arrays in a structure reached through a pointer, a heap
 * block only a pointer knows the length of, and bitfields of mixed widths
 * and signedness (after the first in a word, past the first 16 bytes, one
 * crossing a 32-bit storage unit, a structure of them passed in registers).
 * At the end the program prints sums of its values, so a run that goes on
 * after the debugger's prints and assignments shows whether they changed
 * anything they should not. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

struct point {
    int x;
    int y;
};

struct record {
    int id;
    int grid[2][3];
    short cube[2][2][2];
    char names[3][6];
    struct point pts[2][2];
};

enum mode { OFF, ON, AUTO };

struct flags {
    unsigned flag : 1;
    unsigned level : 3;
    int delta : 5;
    unsigned wide : 20;
    unsigned span : 12; /* bits 29..40: crosses the first 32-bit unit */
    signed char tiny : 2;
    unsigned long long big : 40;
    long sbig : 33;
    enum mode mode : 2;
    _Bool ok : 1;
};

/* Bitfields that start after 16 bytes of other members. */
struct late {
    long pad[2];
    unsigned flag : 1;
    unsigned level : 3;
    int neg : 4;
    unsigned top : 24;
};

/* Small enough to be passed in two registers: at -O2 use_small's
 * parameter is pieces of rdi and rsi. */
struct small {
    unsigned a : 3;
    int b : 7;
    unsigned c : 22;
    long d : 40;
};

int table[6] = {10, 20, 30, 40, 50, 60};
/* With an argument the program waits for a debugger to attach and set
 * this before it goes on. */
volatile int released;
const char *words[3] = {"alpha", "beta", "gamma"};

__attribute__((noinline)) static struct flags make_flags(int seed)
{
    struct flags f = {1, 2, -3, 12345, 0xabc, -1, 0x12345678ffULL, -4294967296L, AUTO, 1};
    f.level += seed - 1;
    return f;
}

__attribute__((noinline)) static struct small make_small(int seed)
{
    struct small s = {5, -20, 1234567, -77};
    s.a += seed - 1;
    return s;
}

__attribute__((noinline)) static long use_small(struct small s)
{
    return s.a + s.b + s.c + s.d;
}

__attribute__((noinline)) static void stop_here(struct record *r, struct flags *f)
{
    __asm__ volatile("" : : "r"(r), "r"(f) : "memory");
}

int main(int argc, char **argv)
{
    if (argc > 1) {
        printf("ready\n");
        fflush(stdout);
        while (!released)
            usleep(1000);
    }
    struct record rec = {
        7,
        {{1, 2, 3}, {4, 5, 6}},
        {{{1, 2}, {3, 4}}, {{5, 6}, {7, 8}}},
        {"ab", "cde", "fghij"},
        {{{1, 2}, {3, 4}}, {{5, 6}, {7, 8}}},
    };
    struct record *r = &rec;
    struct flags bits = make_flags(argc);
    struct late late = {{-1, -2}, 1, 2, -3, 0xabcdef};
    int n = 5;
    int *heap = malloc(n * sizeof *heap);
    for (int i = 0; i < n; i++)
        heap[i] = (i + 1) * (i + 1);
    int *p = table;
    struct small packed = make_small(argc);
    stop_here(r, &bits); /* MARK:stop */
    long sum = 0;
    for (int i = 0; i < n; i++)
        sum += heap[i];
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++)
            sum += r->grid[i][j];
    sum += bits.level + bits.delta + late.level + late.neg + p[1];
    printf("sum %ld\n", sum);
    printf("small %ld\n", use_small(packed));
    free(heap);
    return 0;
}
