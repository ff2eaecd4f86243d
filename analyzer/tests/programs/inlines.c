/* A helper always inlined into its caller (compiled -O2 -g). */
static inline __attribute__((always_inline)) int mix(int x)
{
    int s = 0;
    for (int i = 0; i < x; i++)
        s += (i * x) ^ (s >> 3);
    return s;
}

__attribute__((noinline)) int work(int n)
{
    int total = 0;
    for (int k = 0; k < n; k++)
        total += mix(k); /* CALL_SITE */
    return total;
}

int main(int argc, char **argv)
{
    (void)argv;
    int r = work(argc * 1000);
    return r & 0x7f;
}
