/* Waits across a debugger stop. Three threads block: held_sleeper sleeps
 * to a deadline 1.5 s away, held_reader reads a pipe, held_locker locks a
 * mutex main holds. Main then calls hold_here, where rdbx stops the
 * process for a while, and 200 ms after it returns lets the reader and
 * the locker go. Each thread measures its wait with CLOCK_MONOTONIC and
 * its CPU clock right around it (the handshake with main is outside the
 * functions: a preemption there is in neither measure), and main the call
 * of hold_here (the time rdbx held the process, plus the trap's and the
 * resume's own microseconds). On stderr:
 *   measure FUNCTION WALL_NS CPU_NS
 *   held HOLD_NS
 * and on stdout one deterministic line. */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define SLEEP_NS 1500000000L
#define SETTLE_NS 200000000L

static uint64_t now_ns(clockid_t clock) {
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

struct measure {
    uint64_t wall, cpu;
};

static sem_t blocking;
static int pipe_fds[2];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct measure sleep_m, read_m, lock_m;

static void begin(struct measure *m) {
    m->wall = now_ns(CLOCK_MONOTONIC);
    m->cpu = now_ns(CLOCK_THREAD_CPUTIME_ID);
}

static void end(struct measure *m) {
    m->cpu = now_ns(CLOCK_THREAD_CPUTIME_ID) - m->cpu;
    m->wall = now_ns(CLOCK_MONOTONIC) - m->wall;
}

static void nap(long ns) {
    struct timespec ts = {ns / 1000000000L, ns % 1000000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* To a deadline: a stop in the middle (the debugger's, a signal's) does
 * not make the sleep longer. */
__attribute__((noinline)) void held_sleeper(void) {
    begin(&sleep_m);
    struct timespec deadline;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_sec += SLEEP_NS / 1000000000L;
    deadline.tv_nsec += SLEEP_NS % 1000000000L;
    if (deadline.tv_nsec >= 1000000000L) {
        deadline.tv_sec++;
        deadline.tv_nsec -= 1000000000L;
    }
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &deadline, NULL) == EINTR) {
    }
    end(&sleep_m);
}

__attribute__((noinline)) void held_reader(void) {
    char byte;
    ssize_t n;
    begin(&read_m);
    while ((n = read(pipe_fds[0], &byte, 1)) < 0 && errno == EINTR) {
    }
    end(&read_m);
    if (n != 1)
        abort();
}

__attribute__((noinline)) void held_locker(void) {
    begin(&lock_m);
    pthread_mutex_lock(&lock);
    end(&lock_m);
    pthread_mutex_unlock(&lock);
}

static void *run(void *function) {
    sem_post(&blocking);
    ((void (*)(void))function)();
    return NULL;
}

/* rdbx stops here. */
__attribute__((noinline)) void hold_here(void) {
    __asm__ volatile("" ::: "memory");
}

static void report(const char *name, struct measure *m) {
    fprintf(stderr, "measure %s %llu %llu\n", name, (unsigned long long)m->wall,
            (unsigned long long)m->cpu);
}

int main(void) {
    if (pipe(pipe_fds) != 0)
        return 1;
    sem_init(&blocking, 0, 0);
    pthread_mutex_lock(&lock);
    pthread_t threads[3];
    void (*functions[3])(void) = {held_sleeper, held_reader, held_locker};
    for (int i = 0; i < 3; i++)
        pthread_create(&threads[i], NULL, run, (void *)functions[i]);
    for (int i = 0; i < 3; i++)
        sem_wait(&blocking);
    /* From sem_post to the wait itself. */
    nap(SETTLE_NS);
    uint64_t start = now_ns(CLOCK_MONOTONIC);
    hold_here();
    uint64_t held = now_ns(CLOCK_MONOTONIC) - start;
    nap(SETTLE_NS);
    char byte = 'x';
    if (write(pipe_fds[1], &byte, 1) != 1)
        return 1;
    pthread_mutex_unlock(&lock);
    for (int i = 0; i < 3; i++)
        pthread_join(threads[i], NULL);
    report("held_sleeper", &sleep_m);
    report("held_reader", &read_m);
    report("held_locker", &lock_m);
    fprintf(stderr, "held %llu\n", (unsigned long long)held);
    printf("offcpu_hold done\n");
    return 0;
}
