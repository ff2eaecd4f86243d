/* One function under versioned names, as glibc exports clock_gettime
 * (clock_gettime@GLIBC_2.2.5 and the default clock_gettime@@GLIBC_2.17),
 * and under internal aliases (__measure, __measure_impl).
 * Build: gcc -shared -fPIC -Wl,--version-script=versioned.map */
int __measure_impl(int n)
{
    int s = 0;
    for (int i = 0; i < n; i++)
        s += i * n;
    return s;
}
__asm__(".symver __measure_impl, measure@VERS_1");
__asm__(".symver __measure_impl, measure@@VERS_2");
int __measure(int n) __attribute__((alias("__measure_impl")));

/* A second function, so that the library has more than one. */
int other(int n) { return __measure_impl(n) + 1; }
