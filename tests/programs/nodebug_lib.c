/* Compiled WITHOUT debug info by the harness; linked into nodebug_main. */
volatile int nd_state;

int nd_compute(int x)
{
    int acc = 0;
    for (int i = 0; i < x; i++)
        acc += i * x + nd_state;
    nd_state = acc;
    return acc;
}
