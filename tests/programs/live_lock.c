/* A thread that holds the dynamic loader's lock forever: it dlopens
 * argv[1], whose constructor never returns (tests/live_collect.rs). An
 * injected dlopen from another thread would wait for that lock for ever;
 * rdbx must give up after its call timeout and leave the program as it
 * was. main stops in ready() and then finishes normally. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static const char *library;

static void *loader(void *arg)
{
    (void)arg;
    dlopen(library, RTLD_NOW); /* never returns */
    return NULL;
}

__attribute__((noinline)) void ready(void)
{
    __asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    library = argv[1];
    pthread_t thread;
    pthread_create(&thread, NULL, loader, NULL);
    /* Let the loader thread get into the constructor. */
    struct timespec pause = {0, 200 * 1000 * 1000};
    nanosleep(&pause, NULL);
    ready();
    printf("done\n");
    fflush(stdout);
    _exit(0);
}
