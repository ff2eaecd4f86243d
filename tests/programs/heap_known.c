/* Allocations known by construction, for heap-tracing tests.
 *   leaky     10 x malloc(100), never freed                  (leaks: 10, 1000 bytes)
 *   churn     1000 x malloc(64) + free                       (no leak)
 *   grow      calloc(4, 256), realloc to 4096, free           (no leak)
 *   aligned   posix_memalign 64 x 200, aligned_alloc 64 x 128, memalign 32 x 48, all freed
 *   mapped    mmap 64 KiB anonymous, munmap                   (no leak)
 *   edges     free(NULL), realloc(NULL, 24) leaked, realloc(p, 0)
 *   workers   THREADS threads x 500 malloc(32) + free, each keeps its last block (THREADS leaks)
 * Prints "done" at the end. With an argument "fork", a child repeats leaky. */
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define THREADS 4

void *volatile keep;

__attribute__((noinline)) void *make(size_t n) { return malloc(n); }

__attribute__((noinline)) void leaky(void)
{
    for (int i = 0; i < 10; i++)
        keep = make(100);
}

__attribute__((noinline)) void churn(void)
{
    for (int i = 0; i < 1000; i++) {
        void *p = make(64);
        keep = p;
        free(p);
    }
}

__attribute__((noinline)) void grow(void)
{
    char *p = calloc(4, 256);
    keep = p;
    p = realloc(p, 4096);
    keep = p;
    free(p);
}

__attribute__((noinline)) void aligned(void)
{
    void *a = 0;
    if (posix_memalign(&a, 64, 200) == 0)
        free(a);
    void *b = aligned_alloc(64, 128);
    keep = b;
    free(b);
    void *c = memalign(32, 48);
    keep = c;
    free(c);
}

__attribute__((noinline)) void mapped(void)
{
    void *m = mmap(0, 65536, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    keep = m;
    munmap(m, 65536);
}

__attribute__((noinline)) void edges(void)
{
    free(NULL);
    keep = realloc(NULL, 24);
    void *p = malloc(40);
    keep = realloc(p, 0);
}

__attribute__((noinline)) void *work(void *arg)
{
    void *last = 0;
    for (int i = 0; i < 500; i++) {
        free(last);
        last = malloc(32);
    }
    return last;
}

__attribute__((noinline)) void workers(void)
{
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        pthread_create(&t[i], 0, work, 0);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], 0);
}

int main(int argc, char **argv)
{
    leaky();
    churn();
    grow();
    aligned();
    mapped();
    edges();
    workers();
    if (argc > 1 && strcmp(argv[1], "fork") == 0) {
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) {
            leaky();
            _exit(0);
        }
        waitpid(pid, 0, 0);
    }
    puts("done");
    return 0;
}
