/* A CPU-bound program that measures its own thread CPU time per function
 * (clock_gettime(CLOCK_THREAD_CPUTIME_ID)) and prints it, so tests can
 * compare what the collector recorded with the truth.
 *
 * usage: phases MODE [SECONDS]
 *   two-phases   main runs phase_one then phase_two (a breakpoint on
 *                phase_two splits them)
 *   threads      two threads: worker_a and worker_b, plus main_work
 *   early-thread a thread starts before collection (`rdbx` enables the
 *                collector on a running process) -- same as threads
 *   libc         sort_work: qsort with a comparator (-O2, no frame
 *                pointers, stacks through libc)
 *   fork         parent_work, then fork: child_work in the child
 *   exec         main_work then execs itself with "two-phases"
 *   pause        phase_one, collector_pause, paused_work, collector_resume,
 *                phase_two (through collector_api.h)
 *   forever      spin in phase_one until killed
 *   deep N       recursion N deep, spinning at the bottom
 *   own-sigprof  the program profiles itself with setitimer(ITIMER_PROF) and
 *                its own SIGPROF handler, and blocks SIGPROF for a while;
 *                prints "own_sigprof COUNT"
 *   signals      paused_work, raise(SIGUSR1), phase_one, raise(SIGUSR2),
 *                phase_two (for rdbx collect -y USR1 -l USR2)
 *
 * Output lines: "cpu FUNCTION SECONDS", and "total SECONDS" (process CPU
 * from getrusage at the end).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <sys/time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "collector_api.h"

static double seconds = 0.6;
static volatile double sink;

static double thread_cpu(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The spin lives in each function's own body (a macro, not a call), so
 * the function's exclusive time is its inclusive time. */
#define SPIN(name, duration)                                                  \
    do {                                                                      \
        double start_ = thread_cpu(), x_ = 1.0;                               \
        while (thread_cpu() - start_ < (duration)) {                          \
            for (int i_ = 0; i_ < 20000; i_++) x_ = x_ * 1.0000001 + 0.5;     \
            sink = x_;                                                        \
        }                                                                     \
        printf("cpu %s %.6f\n", name, thread_cpu() - start_);                 \
        fflush(stdout);                                                       \
    } while (0)

__attribute__((noinline)) void phase_one(void) { SPIN("phase_one", seconds); }
__attribute__((noinline)) void phase_two(void) { SPIN("phase_two", seconds); }
__attribute__((noinline)) void paused_work(void) { SPIN("paused_work", seconds); }
__attribute__((noinline)) void main_work(void) { SPIN("main_work", seconds); }
__attribute__((noinline)) void parent_work(void) { SPIN("parent_work", seconds); }
__attribute__((noinline)) void child_work(void) { SPIN("child_work", seconds); }

__attribute__((noinline)) void *worker_a(void *arg) {
    (void)arg;
    SPIN("worker_a", seconds);
    return NULL;
}
__attribute__((noinline)) void *worker_b(void *arg) {
    (void)arg;
    SPIN("worker_b", seconds * 1.5);
    return NULL;
}

static int compare(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

__attribute__((noinline)) void sort_work(void) {
    enum { N = 200000 };
    static double data[N];
    double start = thread_cpu();
    unsigned seed = 1;
    while (thread_cpu() - start < seconds) {
        for (int i = 0; i < N; i++) {
            seed = seed * 1103515245 + 12345;
            data[i] = seed;
        }
        qsort(data, N, sizeof data[0], compare);
    }
    printf("cpu sort_work %.6f\n", thread_cpu() - start);
}

__attribute__((noinline, noipa)) int deep(int n) {
    if (n <= 1) {
        SPIN("deep_bottom", seconds);
        return 1;
    }
    int below = deep(n - 1);
    sink = below; /* work after the call: gcc cannot turn it into a loop */
    return below + 1;
}

static volatile sig_atomic_t own_ticks;
static void on_own_sigprof(int signal) {
    (void)signal;
    own_ticks++;
}

static void own_sigprof(void) {
    struct sigaction action = {0}, old;
    action.sa_handler = on_own_sigprof;
    sigaction(SIGPROF, &action, NULL);
    sigaction(SIGPROF, NULL, &old);
    if (old.sa_handler != on_own_sigprof) {
        printf("sigaction does not return our handler\n");
        exit(3);
    }
    struct itimerval timer = {{0, 10000}, {0, 10000}};
    setitimer(ITIMER_PROF, &timer, NULL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGPROF);
    sigprocmask(SIG_BLOCK, &set, NULL);
    phase_one();
    sigprocmask(SIG_UNBLOCK, &set, NULL);
    phase_two();
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_PROF, &off, NULL);
    printf("own_sigprof %d\n", (int)own_ticks);
}

static void print_total(void) {
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    double total = usage.ru_utime.tv_sec + usage.ru_utime.tv_usec / 1e6 +
                   usage.ru_stime.tv_sec + usage.ru_stime.tv_usec / 1e6;
    printf("total %.6f\n", total);
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "two-phases";
    if (argc > 2) seconds = atof(argv[2]);
    if (!strcmp(mode, "two-phases")) {
        phase_one();
        phase_two();
    } else if (!strcmp(mode, "threads") || !strcmp(mode, "early-thread")) {
        pthread_t a, b;
        pthread_create(&a, NULL, worker_a, NULL);
        pthread_create(&b, NULL, worker_b, NULL);
        main_work();
        pthread_join(a, NULL);
        pthread_join(b, NULL);
    } else if (!strcmp(mode, "libc")) {
        sort_work();
    } else if (!strcmp(mode, "fork")) {
        parent_work();
        pid_t child = fork();
        if (child == 0) {
            child_work();
            print_total();
            exit(0);
        }
        int status;
        waitpid(child, &status, 0);
    } else if (!strcmp(mode, "exec")) {
        main_work();
        fflush(stdout);
        char arg[32];
        snprintf(arg, sizeof arg, "%g", seconds);
        execl("/proc/self/exe", argv[0], "two-phases", arg, (char *)NULL);
        perror("execl");
        return 1;
    } else if (!strcmp(mode, "pause")) {
        phase_one();
        collector_pause();
        paused_work();
        collector_resume();
        phase_two();
    } else if (!strcmp(mode, "forever")) {
        printf("ready\n");
        fflush(stdout);
        for (;;) phase_one();
    } else if (!strcmp(mode, "deep")) {
        int n = argc > 3 ? atoi(argv[3]) : 300;
        deep(n);
    } else if (!strcmp(mode, "own-sigprof")) {
        own_sigprof();
    } else if (!strcmp(mode, "signals")) {
        paused_work();
        raise(SIGUSR1);
        phase_one();
        raise(SIGUSR2);
        phase_two();
    } else {
        fprintf(stderr, "unknown mode %s\n", mode);
        return 2;
    }
    print_total();
    return 0;
}
