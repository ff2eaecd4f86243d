/* Synchronization the sync-wait hooks must not change: locks taken in a
 * signal handler that interrupts a traced lock, a PTHREAD_PROCESS_SHARED
 * mutex contended by a forked child, a robust mutex whose owner died
 * (EOWNERDEAD, then pthread_mutex_consistent), a thread cancelled while
 * blocked in pthread_cond_wait (its cleanup handler runs), and a threshold
 * of waits that do block. Prints what it saw; the output must be the same
 * traced and untraced. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t handler_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t busy_lock = PTHREAD_MUTEX_INITIALIZER;
static volatile sig_atomic_t handled;

static void on_alarm(int sig) {
    (void)sig;
    /* Not async-signal-safe by the book, done by real programs all the
     * same: the handler may run inside the hooks of the interrupted lock. */
    pthread_mutex_lock(&handler_lock);
    handled++;
    pthread_mutex_unlock(&handler_lock);
}

static void sleep_ms(long ms) {
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&t, &t) != 0 && errno == EINTR) {
    }
}

/* Locks and unlocks busy_lock in a loop while SIGALRM fires every 200 µs. */
static void signal_storm(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval every = {{0, 200}, {0, 200}};
    setitimer(ITIMER_REAL, &every, NULL);
    long rounds = 0;
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    do {
        for (int i = 0; i < 1000; i++) {
            pthread_mutex_lock(&busy_lock);
            rounds++;
            pthread_mutex_unlock(&busy_lock);
        }
        clock_gettime(CLOCK_MONOTONIC, &now);
    } while ((now.tv_sec - start.tv_sec) * 1000000000L + (now.tv_nsec - start.tv_nsec) <
             300000000L);
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    printf("signal storm: locked %s, handler ran %s\n", rounds > 0 ? "yes" : "no",
           handled > 0 ? "yes" : "no");
}

/* Parent and child contend for a process-shared mutex in shared memory:
 * the child holds it 50 ms, the parent then waits for it. */
static void process_shared(void) {
    pthread_mutex_t *shared = mmap(NULL, sizeof *shared, PROT_READ | PROT_WRITE,
                                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
    pthread_mutex_init(shared, &attr);
    int ready[2];
    if (pipe(ready) != 0)
        exit(2);
    pid_t child = fork();
    if (child == 0) {
        pthread_mutex_lock(shared);
        if (write(ready[1], "x", 1) != 1)
            _exit(3);
        sleep_ms(50);
        pthread_mutex_unlock(shared);
        _exit(0);
    }
    char byte;
    if (read(ready[0], &byte, 1) != 1)
        exit(4);
    int rc = pthread_mutex_lock(shared);
    pthread_mutex_unlock(shared);
    int status = 0;
    waitpid(child, &status, 0);
    printf("process shared: lock rc=%d, child exit=%d\n", rc, WEXITSTATUS(status));
}

static pthread_mutex_t robust;

static void *die_holding(void *arg) {
    (void)arg;
    pthread_mutex_lock(&robust);
    return NULL; /* ends holding the robust mutex */
}

/* The owner of a robust mutex ends while holding it: the next lock
 * returns EOWNERDEAD and the mutex is made consistent. */
static void owner_dies(void) {
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
    pthread_mutex_init(&robust, &attr);
    pthread_t t;
    pthread_create(&t, NULL, die_holding, NULL);
    pthread_join(t, NULL);
    int rc = pthread_mutex_lock(&robust);
    int consistent = rc == EOWNERDEAD ? pthread_mutex_consistent(&robust) : -1;
    pthread_mutex_unlock(&robust);
    int again = pthread_mutex_lock(&robust);
    pthread_mutex_unlock(&robust);
    printf("owner dies: lock rc=%s, consistent rc=%d, next lock rc=%d\n",
           rc == EOWNERDEAD ? "EOWNERDEAD" : "other", consistent, again);
}

static pthread_mutex_t cond_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t never = PTHREAD_COND_INITIALIZER;
static int cleaned_up;

static void unlock_on_cancel(void *arg) {
    (void)arg;
    cleaned_up++;
    pthread_mutex_unlock(&cond_lock);
}

static void *wait_forever(void *arg) {
    (void)arg;
    pthread_mutex_lock(&cond_lock);
    pthread_cleanup_push(unlock_on_cancel, NULL);
    for (;;)
        pthread_cond_wait(&never, &cond_lock);
    pthread_cleanup_pop(0);
    return NULL;
}

/* A thread blocked in a condition wait is cancelled: its cleanup handler
 * runs and it ends PTHREAD_CANCELED. */
static void cancel_in_wait(void) {
    pthread_t t;
    pthread_create(&t, NULL, wait_forever, NULL);
    sleep_ms(50);
    pthread_cancel(t);
    void *result = NULL;
    pthread_join(t, &result);
    int relock = pthread_mutex_trylock(&cond_lock);
    if (relock == 0)
        pthread_mutex_unlock(&cond_lock);
    printf("cancel in wait: %s, cleanup ran %d time(s), lock free again: %s\n",
           result == PTHREAD_CANCELED ? "cancelled" : "not cancelled", cleaned_up,
           relock == 0 ? "yes" : "no");
}

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    signal_storm();
    process_shared();
    owner_dies();
    cancel_in_wait();
    return 0;
}
