/* Shared library loaded at run time by dlmain.c (-shared -fPIC -g).
 * Used by: breakpoints.rs (pending breakpoint in lib_func). */
int lib_counter;

int lib_func(int x)
{
    lib_counter += x; /* MARK:lib_body */
    return x * 2 + 1;
}
