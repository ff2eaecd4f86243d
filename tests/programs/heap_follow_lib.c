/* The library heap_follow.c loads after attach (-shared -fPIC): its own
 * GOT entries of malloc, redirected by the collector's watcher. */
#include <stdlib.h>

typedef void *(*malloc_fn)(size_t);

void *volatile library_keep;

/* The library's address of malloc (its GOT entry). */
malloc_fn library_malloc(void)
{
    return malloc;
}

void library_allocate(void)
{
    for (int i = 0; i < 9; i++)
        library_keep = malloc(300);
}
