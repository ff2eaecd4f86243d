/* Globals, locals and parameters of base types for print.
 * Used by: startup.rs / stack.rs print tests (values compared with gdb's print). */
#include <stdio.h>

int g_int = -42;
unsigned g_unsigned = 4000000000u;
long g_long = -1234567890123L;
char g_char = 'a';
double g_double = 2.5;
float g_float = -1.25f;
_Bool g_bool = 1;
int *g_ptr = &g_int;
double g_pi = 3.14159;
unsigned char g_uchar = 200;
short g_short = -300;

int show(int i, unsigned u, long l, char c, double d, float f, _Bool b, int *p)
{
    int local_sum = i + (int)u; /* MARK:show_body */
    return local_sum + (int)l + c + (int)d + (int)f + b + (p != 0);
}

int main(void)
{
    setvbuf(stdout, NULL, _IONBF, 0);
    int li = 7;
    unsigned lu = 3000000000u;
    long ll = 9876543210L;
    char lc = 'Z';
    double ld = -0.5;
    float lf = 0.75f;
    _Bool lb = 0;
    int *lp = &li;
    int a = 3, b = 4;
    int r = show(li, lu, ll, lc, ld, lf, lb, lp); /* MARK:main_call_show */
    printf("types r=%d a+b=%d\n", r, a + b);
    return 0;
}
