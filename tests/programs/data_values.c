/* Values for the data-inspection commands (print formats, display,
 * examine, dump, info args, whatis).
 * Used by: data_commands.rs (compared with gdb where easy). */
#include <stdio.h>

struct point {
    int x;
    int y;
};

struct record {
    char tag;
    short small;
    long big;
    struct point where;
    int counts[3];
    _Bool flag;
};

int g_counter = 0;
int g_arr[4] = {1, 2, -3, 4};
long g_longs[2] = {-1, 0x1122334455667788L};
char g_text[] = "hello";
char g_more[] = "world";
unsigned char g_bytes[8] = {0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4};
double g_doubles[2] = {1.5, -2.25};
struct point g_pt = {3, -4};
struct record g_rec = {'a', -2, 1L << 40, {3, -4}, {7, 8, 9}, 1};
int (*g_fn)(int, struct point);

int work(int n, struct point p)
{
    int square = n * n; /* MARK:work_body */
    int sum = square + p.x + p.y;
    g_counter += sum; /* MARK:work_update */
    return sum;
}

int main(void)
{
    struct point origin = {1, 2};
    int total = 0;
    g_fn = work;
    for (int i = 0; i < 3; i++) {
        total += work(i, origin); /* MARK:main_loop */
    }
    printf("total=%d counter=%d\n", total, g_counter);
    return 0;
}
