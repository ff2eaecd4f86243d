/* For tests/sync.rs: a program the collector is loaded into while it runs.
 * It prints "ready MUTEX", waits for a line on stdin (rdbx attaches,
 * enables the collector with sync tracing and detaches meanwhile), then
 * waits 20 ms for a mutex a helper holds, in after_attach, and prints
 * what it measured ("waited NS") and "done". */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static atomic_int held;

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

static void *hold(void *arg) {
    (void)arg;
    pthread_mutex_lock(&mutex);
    atomic_store(&held, 1);
    sleep_us(20000);
    pthread_mutex_unlock(&mutex);
    return NULL;
}

__attribute__((noinline)) static uint64_t after_attach(void) {
    pthread_t thread;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_create(&thread, &attr, hold, NULL);
    while (!atomic_load(&held)) {
        sleep_us(100);
    }
    uint64_t start = now_ns();
    pthread_mutex_lock(&mutex);
    uint64_t waited = now_ns() - start;
    pthread_mutex_unlock(&mutex);
    return waited;
}

int main(void) {
    char line[16];
    printf("ready %p\n", (void *)&mutex);
    fflush(stdout);
    if (!fgets(line, sizeof line, stdin)) {
        return 1;
    }
    printf("waited %llu\n", (unsigned long long)after_attach());
    printf("done\n");
    return 0;
}
