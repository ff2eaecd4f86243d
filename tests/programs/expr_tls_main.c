/* __thread variables of the executable, of a library it links and of one
 * it dlopen's (argv[1]), set differently in two threads, for
 * tests/expressions.rs: stop_here stops first in the second thread, then
 * in the main one. */
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>

__thread int exe_tls = 100;
void lib_set(int value);
static void (*dl_set)(int);

void stop_here(void)
{
}

static void *worker(void *arg)
{
    (void)arg;
    exe_tls = 200;
    lib_set(2);
    dl_set(22);
    stop_here();
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    void *dl = dlopen(argv[1], RTLD_NOW);
    if (dl == NULL)
        return 1;
    dl_set = (void (*)(int))dlsym(dl, "dl_set");
    exe_tls = 101;
    lib_set(1);
    dl_set(11);
    pthread_t thread;
    pthread_create(&thread, NULL, worker, NULL);
    pthread_join(thread, NULL);
    stop_here();
    return 0;
}
