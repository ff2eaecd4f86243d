/* Heap tracing of a library loaded after attach: says "ready" and waits
 * for a line on stdin (rdbx attaches and enables meanwhile), then dlopens
 * libheap_follow.so (beside the program), waits until the collector has
 * redirected the library's entry of malloc (its address of malloc is then
 * the program's own, the collector's hook), and has it allocate 9 x 300
 * bytes, called from after_load. Prints "done", or "not followed" when
 * the entry is still libc's after 10 s. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef void *(*malloc_fn)(size_t);

/* The program's own address of malloc: its GOT entry, the hook's once
 * the collector redirected it. */
malloc_fn volatile program_malloc;

__attribute__((noinline)) void after_load(void (*allocate)(void))
{
    allocate();
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

int main(void)
{
    printf("ready\n");
    fflush(stdout);
    char line[16];
    if (!fgets(line, sizeof line, stdin))
        return 1;
    char path[4096];
    ssize_t n = readlink("/proc/self/exe", path, sizeof path - 32);
    if (n <= 0)
        return 1;
    path[n] = 0;
    strcpy(strrchr(path, '/') + 1, "libheap_follow.so");
    void *library = dlopen(path, RTLD_NOW);
    if (!library) {
        printf("dlopen failed: %s\n", dlerror());
        return 1;
    }
    malloc_fn (*library_malloc)(void) = (malloc_fn(*)(void))dlsym(library, "library_malloc");
    void (*allocate)(void) = (void (*)(void))dlsym(library, "library_allocate");
    if (!library_malloc || !allocate)
        return 1;
    program_malloc = malloc;
    double give_up = now() + 10;
    while (library_malloc() != program_malloc) {
        if (now() > give_up) {
            printf("not followed\n");
            return 1;
        }
        usleep(1000);
    }
    after_load(allocate);
    printf("done\n");
    return 0;
}
