/* Types for ptype / whatis and values for assign / set var.
 * Used by: data_commands.rs (ptype compared with gdb; assignments checked
 * by the program's own output). */
#include <stdio.h>

struct point {
    int x;
    int y;
};

typedef struct point point_t;
typedef int myint;

enum color { RED, GREEN, BLUE };
enum flags { F_A = 1, F_B = 2, F_C = 4 };
enum sparse { S_ZERO, S_TEN = 10, S_ELEVEN, S_NEG = -1 };

union number {
    int i;
    float f;
};

struct bits {
    unsigned int a : 3;
    unsigned int b : 5;
    int c : 4;
};

struct node {
    int value;
    struct node *next;
};

struct shape {
    enum color color;
    struct point corner;
    struct point *origin;
    union number n;
    int counts[3];
    char name[8];
    const char *label;
    int (*area)(int, int);
    struct {
        short lo;
        short hi;
    } range;
    double weight;
    myint tag;
};

int area(int w, int h) { return w * h; }

struct shape g_shape = {GREEN, {1, 2}, 0, {7}, {1, 2, 3}, "box", "label", area, {-2, 5}, 2.5, 9};
point_t g_pt = {3, 4};
myint g_myint = 5;
struct bits g_bits = {5, 17, -3};
struct node g_node = {1, 0};
int g_arr[20];
double g_double = 1.5;
char g_char = 'x';
enum color g_color = RED;
enum flags g_flags = F_A;
enum sparse g_sparse = S_TEN;
int (*g_fn)(void);
long g_long = -7;
int *g_ptr = 0;
float g_float = 0.5f;

int report(int step, int local)
{
    printf("step=%d local=%d g_myint=%d g_double=%g g_char=%c g_color=%d pt=%d,%d bits=%u,%u,%d long=%ld float=%g\n",
           step, local, g_myint, g_double, g_char, g_color, g_pt.x, g_pt.y,
           g_bits.a, g_bits.b, g_bits.c, g_long, g_float); /* MARK:report */
    fflush(stdout);
    return local;
}

int in_register(int seed)
{
    register int kept = seed * 3;
    return kept + 1; /* MARK:in_register */
}

int main(void)
{
    int local = 10;
    printf("in_register=%d\n", in_register(4));
    point_t *pp = &g_pt;
    g_node.next = &g_node;
    report(1, local); /* MARK:first */
    local = local + 1;
    report(2, local);
    return pp->x == 0;
}
