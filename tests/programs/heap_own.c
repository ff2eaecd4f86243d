/* A program with its own allocator: malloc, free, calloc and realloc
 * defined in the executable (a bump allocator over a static arena), so
 * every call of the malloc family, the C library's own included, is the
 * program's and none reaches a preloaded library's. Prints what its
 * allocator counted in the main thread's work (a thread-local count: no
 * other thread's calls). */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

static _Alignas(16) unsigned char arena[8 << 20];
static size_t used;
static __thread unsigned long mallocs, frees;

/* Each block is preceded by its size, in 16 bytes kept for alignment.
 * No lock: the program has one thread; the collector's own memory is
 * not the program's malloc's. */
void *malloc(size_t size)
{
    size_t need = (size + 15) / 16 * 16 + 16;
    if (need < size || need > sizeof arena - used) {
        errno = ENOMEM;
        return NULL;
    }
    unsigned char *block = arena + used + 16;
    *(size_t *)(block - 16) = size;
    used += need;
    mallocs++;
    return block;
}

void free(void *block)
{
    if (block)
        frees++;
}

void *calloc(size_t count, size_t size)
{
    if (size && count > (size_t)-1 / size) {
        errno = ENOMEM;
        return NULL;
    }
    /* The arena starts zeroed and is never reused. */
    return malloc(count * size);
}

void *realloc(void *old, size_t size)
{
    void *block = malloc(size);
    if (block && old) {
        size_t had = *(size_t *)((unsigned char *)old - 16);
        memcpy(block, old, had < size ? had : size);
        free(old);
    }
    return block;
}

__attribute__((noinline)) static void work(void)
{
    for (int i = 0; i < 100; i++) {
        char *p = malloc(32);
        snprintf(p, 32, "%d", i);
        p = realloc(p, 64);
        free(p);
    }
}

int main(void)
{
    unsigned long made = mallocs, freed = frees;
    work();
    printf("own allocator: %lu mallocs, %lu frees in work\n", mallocs - made, frees - freed);
    return 0;
}
