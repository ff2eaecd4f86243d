/* dlopen()s the shared library named by argv[1] (built by the harness from
 * dllib.c as libdllib.so), looks up lib_func and calls it; prints the result.
 * Used by: breakpoints.rs (pending breakpoint set before run, hit after dlopen). */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IONBF, 0);
    if (argc < 2) {
        printf("usage: dlmain LIB\n");
        return 2;
    }
    void *handle = dlopen(argv[1], RTLD_NOW);
    if (!handle) {
        printf("dlopen failed: %s\n", dlerror());
        return 1;
    }
    int (*fn)(int) = (int (*)(int))dlsym(handle, "lib_func");
    if (!fn) {
        printf("dlsym failed\n");
        return 1;
    }
    printf("lib_func=%d\n", fn(20)); /* MARK:call_lib */
    return 0;
}
