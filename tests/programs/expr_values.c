/* Values for the expression tests (tests/expressions.rs). */
#include <stdlib.h>
#include <string.h>

struct point {
    int x;
    int y;
};

struct node {
    int v;
    struct node *next;
    const char *name;
};

union number {
    int i;
    float f;
    unsigned char bytes[4];
};

enum flags { F_A = 1, F_B = 2, F_C = 4 };
enum color { RED, GREEN, BLUE };

typedef struct point point_t;
typedef long mylong;

struct holder {
    struct point pts[3];
    struct point *pp;
    union number n;
    enum flags fl;
    char label[8];
};

struct ops {
    int (*fn)(int);
    unsigned ready : 1;
    int level : 3;
    unsigned mode : 4;
};

static int twice(int v) { return 2 * v; }

__thread int tls_counter = 7;
__thread long tls_big = 1234567890123L;

struct point gpoint = {3, 4};
int garr[5] = {10, 20, 30, 40, 50};

static void stop_here(void) {}

int main(void)
{
    struct point p = {1, 2};
    struct point *pp = &p;
    struct point **ppp = &pp;
    struct node c = {3, NULL, "third"};
    struct node b = {2, &c, "second"};
    struct node a = {1, &b, "first"};
    c.next = &a; /* a cycle */
    struct node *list = &a;
    struct node bad = {9, (struct node *)8, (const char *)16};
    union number num;
    num.i = 0x41424344;
    struct holder h = {{{1, 2}, {3, 4}, {5, 6}}, &p, {0}, F_A | F_C, "lbl"};
    h.n.f = 1.5f;
    int x = 42;
    int *ip = &x;
    char c1 = 'A';
    double d = 2.5;
    void *vp = &p;
    point_t pt = {7, 8};
    mylong ml = -5;
    enum flags fl1 = F_B;
    enum flags fl2 = F_A | F_C;
    enum flags fl3 = F_A | 8;
    enum flags fl0 = 0;
    enum color col = BLUE;
    int arr[4] = {5, 6, 7, 8};
    int *ap = arr;
    struct ops ops = {twice, 1, -3, 9};
    struct ops *opsp = &ops;
    tls_counter++;
    stop_here(); /* MARK:stop */
    return x + p.x + a.v + (int)d + arr[0] + pt.x + (int)ml + fl1 + fl2 + fl3 + fl0 + col
           + c1 + *ip + (vp != 0) + (ppp != 0) + (list != 0) + bad.v + num.i + h.fl + *ap
           + opsp->fn(1);
}
