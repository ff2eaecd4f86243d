/* Data objects of every kind for the data-object views' tests: a global
 * array, a global structure with a scalar member, padding and an array
 * member, an array of structures, a scalar, a function with a large local
 * array and a local structure, and a heap block. It prints where each one
 * is (and, for the locals, the frame that holds them and a pc in it), so
 * that the tests place synthetic counter events at known data objects
 * without trusting the DWARF reader under test. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

struct record {
    int count;       /* 4 bytes of padding follow */
    double scale;
    int grid[64][64];
};

struct point {
    double x;
    double y;
};

/* Types the descriptors spell: derived, typedef'd, unions, enumerations,
 * bitfields. */
struct node {
    int value;
    struct node *next;
};
typedef struct {
    int a;
    int b;
} pair_t;
union value {
    int i;
    double d;
};
enum color { RED, GREEN };
struct flags {
    unsigned a : 3;
    unsigned b : 5;
};

const int limit = 5;
struct node *head;
pair_t pair;
size_t total_bytes;
union value val;
enum color shade;
struct flags fl;

int big_table[1000];
struct record rec;
long counter;
struct point points[16];

/* Receives the address of a caller's local: the caller's frame holds it.
 * Prints the address, the caller's frame (its rbp: the CFA is 16 above)
 * and the return address into the caller. */
__attribute__((noinline)) void observe(const char *what, void *address, void *frame)
{
    printf("%s %p %p %p\n", what, address, frame, __builtin_return_address(0));
}

__attribute__((noinline)) long work(int n)
{
    static int calls;
    double buffer[512];
    struct point local = { 1.5, 2.5 };
    int i;
    calls++;
    for (i = 0; i < 512; i++)
        buffer[i] = i * n;
    observe("buffer[100]", &buffer[100], __builtin_frame_address(0));
    observe("local.y", &local.y, __builtin_frame_address(0));
    observe("i", &i, __builtin_frame_address(0));
    return (long)(buffer[n & 511] + local.y + points[n & 15].x) + calls;
}

__attribute__((noinline)) int *make_grid(int n)
{
    int *grid = malloc(n * sizeof *grid);
    for (int i = 0; i < n; i++)
        grid[i] = i;
    return grid;
}

int main(void)
{
    printf("main %p\n", (void *)main);
    printf("rec.count %p\n", (void *)&rec.count);
    printf("rec.scale %p\n", (void *)&rec.scale);
    printf("rec.grid[3][5] %p\n", (void *)&rec.grid[3][5]);
    printf("points[5].y %p\n", (void *)&points[5].y);
    printf("literal %p\n", (void *)"a string literal");
    int *grid = make_grid(1024);
    printf("grid[10] %p\n", (void *)&grid[10]);
    counter = work(7) + grid[10] + big_table[counter & 7] + rec.grid[1][1];
    total_bytes = limit + pair.b + val.i + shade + fl.b + (head != NULL);
    printf("counter %ld %zu\n", counter, total_bytes);
    free(grid);
    return 0;
}
