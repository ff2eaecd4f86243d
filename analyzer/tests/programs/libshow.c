/* A small shared library: exported functions calling each other and a
 * static one (nameless once the library is stripped). */
static __attribute__((noinline)) int lib_secret(int x)
{
    int s = 0;
    for (int i = 0; i < x; i++)
        s += i * x;
    return s;
}

int lib_inner(int x) { return lib_secret(x) + 1; }
int lib_outer(int x) { return lib_inner(x) * 2; }
int lib_call(int (*callback)(int), int x) { return callback(x) + lib_inner(x); }
