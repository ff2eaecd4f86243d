/* Synchronization waits known by construction, for tests/sync.rs: the
 * main thread waits in each function of the pthread wait family for a
 * helper that holds the object for a fixed time, measures each call
 * itself (clock_gettime around it) and says on stderr what it measured:
 *
 *   wait OP OBJECT NS CALLERS
 *
 * CALLERS: the function making the call, then its caller when that one is
 * shared, joined by '/'.
 * Helpers are detached and the main thread follows them with atomics and
 * nanosleep, so the only calls of the wait family are the ones listed
 * (and the uncontended lock/unlock loop, which must not be recorded).
 * stdout has only what does not vary from run to run. */
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdint.h>
#include <time.h>

static pthread_mutex_t held_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t short_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t quiet_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t cond_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static pthread_rwlock_t rwlock = PTHREAD_RWLOCK_INITIALIZER;
static pthread_barrier_t barrier;
static sem_t sem;

static atomic_int held;
static atomic_int ready;

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sleep_us(long us) {
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

static void until_held(void) {
    while (!atomic_load(&held)) {
        sleep_us(100);
    }
}

static void report(const char *op, const void *object, uint64_t ns, const char *caller) {
    fprintf(stderr, "wait %s %p %llu %s\n", op, object, (unsigned long long)ns, caller);
}

static void detached(void *(*run)(void *), void *arg) {
    pthread_attr_t attr;
    pthread_t thread;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_create(&thread, &attr, run, arg);
    pthread_attr_destroy(&attr);
}

/* Holds the mutex it is given for `hold_us` microseconds. */
struct hold {
    pthread_mutex_t *mutex;
    long hold_us;
};

static void *hold_mutex(void *arg) {
    struct hold *h = arg;
    pthread_mutex_lock(h->mutex);
    atomic_store(&held, 1);
    sleep_us(h->hold_us);
    pthread_mutex_unlock(h->mutex);
    return NULL;
}

__attribute__((noinline)) static void wait_mutex(pthread_mutex_t *mutex, long hold_us, const char *caller) {
    struct hold h = {mutex, hold_us};
    atomic_store(&held, 0);
    detached(hold_mutex, &h);
    until_held();
    uint64_t start = now_ns();
    pthread_mutex_lock(mutex);
    report("mutex_lock", mutex, now_ns() - start, caller);
    pthread_mutex_unlock(mutex);
}

__attribute__((noinline)) static void mutex_waiter(void) {
    wait_mutex(&held_mutex, 20000, "wait_mutex/mutex_waiter");
}

__attribute__((noinline)) static void short_waiter(void) {
    wait_mutex(&short_mutex, 300, "wait_mutex/short_waiter");
}

static void *signal_later(void *arg) {
    (void)arg;
    sleep_us(30000);
    pthread_mutex_lock(&cond_mutex);
    atomic_store(&ready, 1);
    pthread_cond_signal(&cond);
    pthread_mutex_unlock(&cond_mutex);
    return NULL;
}

__attribute__((noinline)) static void cond_waiter(void) {
    pthread_mutex_lock(&cond_mutex);
    detached(signal_later, NULL);
    while (!atomic_load(&ready)) {
        uint64_t start = now_ns();
        pthread_cond_wait(&cond, &cond_mutex);
        report("cond_wait", &cond, now_ns() - start, "cond_waiter");
    }
    pthread_mutex_unlock(&cond_mutex);
}

static void *sleep_40ms(void *arg) {
    (void)arg;
    sleep_us(40000);
    return NULL;
}

__attribute__((noinline)) static void join_waiter(void) {
    pthread_t thread;
    pthread_create(&thread, NULL, sleep_40ms, NULL);
    uint64_t start = now_ns();
    pthread_join(thread, NULL);
    report("join", (void *)thread, now_ns() - start, "join_waiter");
}

static void *post_later(void *arg) {
    (void)arg;
    sleep_us(10000);
    sem_post(&sem);
    return NULL;
}

__attribute__((noinline)) static void sem_waiter(void) {
    detached(post_later, NULL);
    uint64_t start = now_ns();
    sem_wait(&sem);
    report("sem_wait", &sem, now_ns() - start, "sem_waiter");
}

static void *read_for_15ms(void *arg) {
    (void)arg;
    pthread_rwlock_rdlock(&rwlock);
    atomic_store(&held, 1);
    sleep_us(15000);
    pthread_rwlock_unlock(&rwlock);
    return NULL;
}

__attribute__((noinline)) static void rwlock_writer(void) {
    atomic_store(&held, 0);
    detached(read_for_15ms, NULL);
    until_held();
    uint64_t start = now_ns();
    pthread_rwlock_wrlock(&rwlock);
    report("rwlock_wrlock", &rwlock, now_ns() - start, "rwlock_writer");
    pthread_rwlock_unlock(&rwlock);
}

static void *arrive_later(void *arg) {
    (void)arg;
    sleep_us(12000);
    uint64_t start = now_ns();
    pthread_barrier_wait(&barrier);
    report("barrier_wait", &barrier, now_ns() - start, "arrive_later");
    atomic_store(&ready, 2);
    return NULL;
}

__attribute__((noinline)) static void barrier_waiter(void) {
    detached(arrive_later, NULL);
    uint64_t start = now_ns();
    pthread_barrier_wait(&barrier);
    report("barrier_wait", &barrier, now_ns() - start, "barrier_waiter");
    /* The helper reports before it ends. */
    while (atomic_load(&ready) != 2) {
        sleep_us(100);
    }
}

__attribute__((noinline)) static unsigned long uncontended(void) {
    unsigned long sum = 0;
    for (int i = 0; i < 100000; i++) {
        pthread_mutex_lock(&quiet_mutex);
        sum += (unsigned long)i;
        pthread_mutex_unlock(&quiet_mutex);
    }
    return sum;
}

int main(void) {
    sem_init(&sem, 0, 0);
    pthread_barrier_init(&barrier, NULL, 2);
    fprintf(stderr, "object quiet_mutex %p\n", (void *)&quiet_mutex);
    mutex_waiter();
    short_waiter();
    cond_waiter();
    join_waiter();
    sem_waiter();
    rwlock_writer();
    barrier_waiter();
    printf("uncontended sum %lu\n", uncontended());
    printf("done\n");
    return 0;
}
