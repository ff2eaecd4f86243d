/* For tests/sync.rs: joins of threads known by construction. The main
 * thread creates a thread that sleeps 20, 30, then 40 ms and joins each
 * before creating the next, so glibc gives each the pthread_t of the one
 * before (the stack of a joined thread is reused); then two threads at
 * once, sleeping 25 and 15 ms, joined in that order. Each thread says its
 * kernel thread id before it sleeps; the main thread measures each
 * pthread_join itself (clock_gettime around it) and says on stderr:
 *
 *   join TID PTHREAD NS
 *
 * (the joined thread's tid, its pthread_t, the nanoseconds of the join).
 * stdout: "done". */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

struct sleeper {
    long ms;
    volatile pid_t tid;
};

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void *sleep_a_while(void *arg) {
    struct sleeper *s = arg;
    s->tid = gettid();
    struct timespec ts = {0, s->ms * 1000000};
    while (nanosleep(&ts, &ts) != 0) {
    }
    return NULL;
}

__attribute__((noinline)) static void join_one(pthread_t thread, struct sleeper *s) {
    uint64_t start = now_ns();
    pthread_join(thread, NULL);
    uint64_t took = now_ns() - start;
    fprintf(stderr, "join %d %#lx %llu\n", (int)s->tid, (unsigned long)thread,
            (unsigned long long)took);
}

__attribute__((noinline)) static void one_after_another(void) {
    long sleeps[] = {20, 30, 40};
    for (int i = 0; i < 3; i++) {
        struct sleeper s = {sleeps[i], 0};
        pthread_t thread;
        pthread_create(&thread, NULL, sleep_a_while, &s);
        join_one(thread, &s);
    }
}

__attribute__((noinline)) static void two_at_once(void) {
    struct sleeper first = {25, 0}, second = {15, 0};
    pthread_t a, b;
    pthread_create(&a, NULL, sleep_a_while, &first);
    pthread_create(&b, NULL, sleep_a_while, &second);
    join_one(a, &first);
    join_one(b, &second);
}

int main(void) {
    one_after_another();
    two_at_once();
    printf("done\n");
    return 0;
}
