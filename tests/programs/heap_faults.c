/* Hard cases for heap tracing, each printing a result known by
 * construction (the same traced or not; tests/heap.rs runs both with a
 * time limit):
 *   storm  a SIGALRM every 50 us while the main thread mallocs, frees,
 *          mmaps and munmaps in a loop. Outside its malloc and free calls
 *          the handler mallocs and frees (so it lands in the mmap hooks
 *          too); inside them it mmaps and munmaps (so it lands in the
 *          malloc hooks, never in glibc's malloc, which is not reentrant:
 *          the program's own rule). The loop runs until the handler has
 *          done each at least 100 times.
 *   fork   four threads malloc and free and fork, ten children each;
 *          each child mallocs, checks and frees 100 blocks and exits
 *          (atexit handlers, destructors: the collector's stop).
 *   keys   40 threads whose pthread_key destructor frees the thread's
 *          block and mallocs another, set again for a second round that
 *          frees it. The key is made after the first thread (so after the
 *          collector's own key, whose destructor runs first).
 *   early  only what every mode does:
 * before any constructor (preinit_array: the collector's constructor has
 * not run) a block is malloc'ed, and a constructor(101) mallocs four;
 * main frees them all. */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

static void *preinit_block;
/* What a mode found, printed by main (stdio's buffer is main's block,
 * not the mode's). */
static char result[100];
static void *constructed[4];

__attribute__((noinline)) static void before_everything(int argc, char **argv, char **envp)
{
    (void)argc, (void)argv, (void)envp;
    preinit_block = malloc(64);
    memset(preinit_block, 1, 64);
}

__attribute__((used, section(".preinit_array"))) static void (*const preinit)(int, char **, char **) =
    before_everything;

__attribute__((constructor(101), noinline)) static void early_constructor(void)
{
    for (int i = 0; i < 4; i++) {
        constructed[i] = malloc(80);
        memset(constructed[i], 2, 80);
    }
}

/* ---- storm ---- */

static volatile sig_atomic_t in_malloc;
static volatile long handler_mallocs, handler_maps, broken;

__attribute__((noinline)) static void on_alarm(int signal)
{
    (void)signal;
    if (!in_malloc) {
        unsigned char *p = malloc(48);
        if (!p) {
            broken++;
            return;
        }
        memset(p, 0x5a, 48);
        if (p[47] != 0x5a)
            broken++;
        free(p);
        handler_mallocs++;
    } else {
        void *m = mmap(0, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED) {
            broken++;
            return;
        }
        munmap(m, 4096);
        handler_maps++;
    }
}

__attribute__((noinline)) static int storm(void)
{
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = on_alarm;
    action.sa_flags = SA_RESTART;
    sigaction(SIGALRM, &action, 0);
    struct itimerval every = {{0, 50}, {0, 50}};
    setitimer(ITIMER_REAL, &every, 0);
    long rounds = 0;
    while (handler_mallocs < 100 || handler_maps < 100) {
        size_t size = 16 + rounds % 200;
        in_malloc = 1;
        unsigned char *p = malloc(size);
        in_malloc = 0;
        if (!p)
            broken++;
        else {
            memset(p, (int)(rounds & 0xff), size);
            if (p[size - 1] != (unsigned char)(rounds & 0xff))
                broken++;
            in_malloc = 1;
            free(p);
            in_malloc = 0;
        }
        void *m = mmap(0, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED)
            broken++;
        else
            munmap(m, 8192);
        rounds++;
    }
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, 0);
    snprintf(result, sizeof result, "storm: %s\n", broken ? "broken" : "ok");
    return broken != 0;
}

/* ---- fork ---- */

__attribute__((noinline)) static int child_work(void)
{
    void *blocks[100];
    for (int i = 0; i < 100; i++) {
        blocks[i] = malloc(24 + i);
        if (!blocks[i])
            return 1;
        memset(blocks[i], i, 24 + i);
    }
    for (int i = 0; i < 100; i++) {
        if (((unsigned char *)blocks[i])[23 + i] != i)
            return 1;
        free(blocks[i]);
    }
    return 0;
}

/* Churns the heap and forks, ten times: the other threads do the same
 * meanwhile, so forks come while threads malloc and while other threads
 * fork. Returns how many children exited 0. */
__attribute__((noinline)) static void *churn_and_fork(void *arg)
{
    unsigned n = (unsigned)(size_t)arg;
    long good = 0;
    for (int k = 0; k < 10; k++) {
        for (int i = 0; i < 1000; i++) {
            void *p = malloc(16 + n++ % 500);
            free(p);
        }
        pid_t pid = fork();
        if (pid == 0)
            exit(child_work());
        int status = 0;
        if (pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
            WEXITSTATUS(status) == 0)
            good++;
    }
    return (void *)good;
}

__attribute__((noinline)) static int forks(void)
{
    fflush(stdout);
    pthread_t threads[3];
    for (int i = 0; i < 3; i++)
        pthread_create(&threads[i], 0, churn_and_fork, (void *)(size_t)(i * 7));
    long good = (long)churn_and_fork(0);
    for (int i = 0; i < 3; i++) {
        void *children = 0;
        pthread_join(threads[i], &children);
        good += (long)children;
    }
    snprintf(result, sizeof result, "fork: %ld of 40 children exited 0\n", good);
    return good != 40;
}

/* ---- keys ---- */

static pthread_key_t key;
static atomic_int destructor_calls;

__attribute__((noinline)) static void key_destructor(void *value)
{
    atomic_fetch_add(&destructor_calls, 1);
    int second = *(int *)value;
    free(value);
    if (!second) {
        int *again = malloc(sizeof *again * 8);
        *again = 1;
        pthread_setspecific(key, again);
    }
}

__attribute__((noinline)) static void *keyed(void *arg)
{
    (void)arg;
    int *mine = malloc(sizeof *mine * 4);
    *mine = 0;
    pthread_setspecific(key, mine);
    return 0;
}

__attribute__((noinline)) static void *nothing(void *arg)
{
    return arg;
}

__attribute__((noinline)) static int keys(void)
{
    pthread_t first;
    pthread_create(&first, 0, nothing, 0);
    pthread_join(first, 0);
    pthread_key_create(&key, key_destructor);
    for (int i = 0; i < 40; i++) {
        pthread_t t;
        pthread_create(&t, 0, keyed, 0);
        pthread_join(t, 0);
    }
    snprintf(result, sizeof result, "keys: %d destructor calls\n", atomic_load(&destructor_calls));
    return atomic_load(&destructor_calls) != 80;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    int failed = 1;
    if (strcmp(mode, "storm") == 0)
        failed = storm();
    else if (strcmp(mode, "fork") == 0)
        failed = forks();
    else if (strcmp(mode, "keys") == 0)
        failed = keys();
    else if (strcmp(mode, "early") == 0)
        failed = 0;
    fputs(result, stdout);
    free(preinit_block);
    for (int i = 0; i < 4; i++)
        free(constructed[i]);
    printf("early: blocks freed\n");
    return failed;
}
