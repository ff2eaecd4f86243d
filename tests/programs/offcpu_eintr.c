/* Waits with no retry loop across a debugger stop. Three threads each
 * make one 1.5 s wait a stop must not cut short: nap_sleeper a relative
 * nanosleep (restarted through the kernel's restart block), poll_sleeper
 * a poll with a timeout (the same), select_sleeper a select with a
 * timeout (restarted with the time left, written back to its timeval).
 * Main then calls hold_here, where rdbx stops the process for a while
 * (every thread is interrupted in its wait). Each thread prints what its
 * wait returned and how long it took, then makes five 20 ms naps in
 * later_naps (switches after the stop, which off-CPU profiling must still
 * record), timed with CLOCK_MONOTONIC and its CPU clock. On stderr:
 *   slept FUNCTION RETURN ERRNO WALL_NS
 *   measure FUNCTION WALL_NS CPU_NS
 *   held HOLD_NS
 * and on stdout one deterministic line. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/select.h>
#include <time.h>

#define WAIT_S 1
#define WAIT_EXTRA_NS 500000000L
#define WAIT_NS (WAIT_S * 1000000000L + WAIT_EXTRA_NS)
#define SETTLE_NS 200000000L
#define NAPS 5
#define NAP_NS 20000000L

static uint64_t now_ns(clockid_t clock) {
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static sem_t waiting;
static pthread_mutex_t report_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t naps_wall, naps_cpu;

static void slept(const char *name, int ret, int err, uint64_t start) {
    uint64_t wall = now_ns(CLOCK_MONOTONIC) - start;
    fprintf(stderr, "slept %s %d %d %llu\n", name, ret, err, (unsigned long long)wall);
}

__attribute__((noinline)) void nap_sleeper(void) {
    struct timespec ts = {WAIT_S, WAIT_EXTRA_NS};
    uint64_t start = now_ns(CLOCK_MONOTONIC);
    sem_post(&waiting);
    int ret = nanosleep(&ts, NULL);
    slept("nap_sleeper", ret, ret ? errno : 0, start);
}

__attribute__((noinline)) void poll_sleeper(void) {
    uint64_t start = now_ns(CLOCK_MONOTONIC);
    sem_post(&waiting);
    int ret = poll(NULL, 0, WAIT_NS / 1000000L);
    slept("poll_sleeper", ret, ret < 0 ? errno : 0, start);
}

__attribute__((noinline)) void select_sleeper(void) {
    struct timeval tv = {WAIT_S, WAIT_EXTRA_NS / 1000L};
    uint64_t start = now_ns(CLOCK_MONOTONIC);
    sem_post(&waiting);
    int ret = select(0, NULL, NULL, NULL, &tv);
    slept("select_sleeper", ret, ret < 0 ? errno : 0, start);
}

/* Naps with a retry loop: the switches after the stop. */
__attribute__((noinline)) void later_naps(void) {
    uint64_t wall = now_ns(CLOCK_MONOTONIC), cpu = now_ns(CLOCK_THREAD_CPUTIME_ID);
    for (int i = 0; i < NAPS; i++) {
        struct timespec ts = {0, NAP_NS};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
        }
    }
    cpu = now_ns(CLOCK_THREAD_CPUTIME_ID) - cpu;
    wall = now_ns(CLOCK_MONOTONIC) - wall;
    pthread_mutex_lock(&report_lock);
    naps_wall += wall;
    naps_cpu += cpu;
    pthread_mutex_unlock(&report_lock);
}

static void *run(void *function) {
    ((void (*)(void))function)();
    later_naps();
    return NULL;
}

/* rdbx stops here. */
__attribute__((noinline)) void hold_here(void) {
    __asm__ volatile("" ::: "memory");
}

int main(void) {
    sem_init(&waiting, 0, 0);
    void (*functions[3])(void) = {nap_sleeper, poll_sleeper, select_sleeper};
    pthread_t threads[3];
    for (int i = 0; i < 3; i++)
        pthread_create(&threads[i], NULL, run, (void *)functions[i]);
    for (int i = 0; i < 3; i++)
        sem_wait(&waiting);
    /* From sem_post to the wait itself. */
    struct timespec settle = {0, SETTLE_NS};
    while (nanosleep(&settle, &settle) != 0 && errno == EINTR) {
    }
    uint64_t start = now_ns(CLOCK_MONOTONIC);
    hold_here();
    uint64_t held = now_ns(CLOCK_MONOTONIC) - start;
    for (int i = 0; i < 3; i++)
        pthread_join(threads[i], NULL);
    fprintf(stderr, "measure later_naps %llu %llu\n", (unsigned long long)naps_wall,
            (unsigned long long)naps_cpu);
    fprintf(stderr, "held %llu\n", (unsigned long long)held);
    printf("offcpu_eintr done\n");
    return 0;
}
