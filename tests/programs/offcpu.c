/* Off-CPU profiling test program: four functions whose time off the CPU
 * the program measures itself (CLOCK_MONOTONIC and the thread's CPU clock
 * around each wait) and prints on stderr as
 *   measure FUNCTION WALL_NS CPU_NS
 * - sleeper: nanosleep, 10 x 20 ms;
 * - pipe_reader: a blocking read of a pipe that a helper thread writes
 *   20 ms later, 10 times;
 * - mutex_waiter: pthread_mutex_lock of a mutex a helper thread holds for
 *   20 ms (a futex wait), 10 times;
 * - spinner: about 200 ms of pure CPU work (its off-CPU time is whatever
 *   preemption the machine imposes, measured the same way).
 * stdout gets one deterministic line. With the argument `attach` it first
 * prints `ready` and waits for a line on stdin. */
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define ROUNDS 10
#define WAIT_NS 20000000L

static uint64_t now_ns(clockid_t clock) {
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

struct measure {
    uint64_t wall, cpu;
};

static void begin(uint64_t *wall, uint64_t *cpu) {
    *wall = now_ns(CLOCK_MONOTONIC);
    *cpu = now_ns(CLOCK_THREAD_CPUTIME_ID);
}

static void end(struct measure *m, uint64_t wall, uint64_t cpu) {
    m->cpu += now_ns(CLOCK_THREAD_CPUTIME_ID) - cpu;
    m->wall += now_ns(CLOCK_MONOTONIC) - wall;
}

static void pause_20ms(void) {
    struct timespec ts = {0, WAIT_NS};
    nanosleep(&ts, NULL);
}

__attribute__((noinline)) void sleeper(struct measure *m) {
    for (int i = 0; i < ROUNDS; i++) {
        uint64_t wall, cpu;
        begin(&wall, &cpu);
        pause_20ms();
        end(m, wall, cpu);
    }
}

static int pipe_fds[2];
static sem_t go_write, go_hold, holding, released;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static void *writer(void *unused) {
    (void)unused;
    for (int i = 0; i < ROUNDS; i++) {
        sem_wait(&go_write);
        pause_20ms();
        char byte = 'x';
        if (write(pipe_fds[1], &byte, 1) != 1)
            abort();
    }
    return NULL;
}

__attribute__((noinline)) void pipe_reader(struct measure *m) {
    for (int i = 0; i < ROUNDS; i++) {
        char byte;
        sem_post(&go_write);
        uint64_t wall, cpu;
        begin(&wall, &cpu);
        if (read(pipe_fds[0], &byte, 1) != 1)
            abort();
        end(m, wall, cpu);
    }
}

static void *holder(void *unused) {
    (void)unused;
    for (int i = 0; i < ROUNDS; i++) {
        sem_wait(&go_hold);
        pthread_mutex_lock(&lock);
        sem_post(&holding);
        pause_20ms();
        pthread_mutex_unlock(&lock);
    }
    return NULL;
}

/* The handshake waits are not mutex_waiter's: they happen in its caller. */
static void handshake(void) {
    sem_post(&go_hold);
    sem_wait(&holding);
}

__attribute__((noinline)) void mutex_waiter(struct measure *m) {
    uint64_t wall, cpu;
    begin(&wall, &cpu);
    pthread_mutex_lock(&lock);
    end(m, wall, cpu);
    pthread_mutex_unlock(&lock);
}

static void mutex_rounds(struct measure *m) {
    for (int i = 0; i < ROUNDS; i++) {
        handshake();
        mutex_waiter(m);
    }
}

static volatile uint64_t sink;

__attribute__((noinline)) void spinner(struct measure *m) {
    uint64_t wall, cpu;
    begin(&wall, &cpu);
    uint64_t x = 1;
    while (now_ns(CLOCK_THREAD_CPUTIME_ID) - cpu < 200000000u) {
        for (int i = 0; i < 100000; i++)
            x = x * 6364136223846793005u + 1442695040888963407u;
        sink = x;
    }
    end(m, wall, cpu);
}

static void report(const char *name, struct measure *m) {
    fprintf(stderr, "measure %s %llu %llu\n", name, (unsigned long long)m->wall,
            (unsigned long long)m->cpu);
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "attach") == 0) {
        /* For a collector loaded by an attaching rdbx: wait for it. */
        char line[16];
        printf("ready\n");
        fflush(stdout);
        if (!fgets(line, sizeof line, stdin))
            return 1;
    }
    if (pipe(pipe_fds) != 0)
        return 1;
    sem_init(&go_write, 0, 0);
    sem_init(&go_hold, 0, 0);
    sem_init(&holding, 0, 0);
    pthread_t w, h;
    pthread_create(&w, NULL, writer, NULL);
    pthread_create(&h, NULL, holder, NULL);
    struct measure sleep_m = {0}, pipe_m = {0}, mutex_m = {0}, spin_m = {0};
    sleeper(&sleep_m);
    pipe_reader(&pipe_m);
    mutex_rounds(&mutex_m);
    spinner(&spin_m);
    pthread_join(w, NULL);
    pthread_join(h, NULL);
    report("sleeper", &sleep_m);
    report("pipe_reader", &pipe_m);
    report("mutex_waiter", &mutex_m);
    report("spinner", &spin_m);
    printf("offcpu done: %d rounds\n", ROUNDS);
    return 0;
}
