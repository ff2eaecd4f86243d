/* Target for tests/sigtrap.rs: runs under the preloaded collector at 1 ms.
 * It installs its own SIGTRAP handler, blocks every signal in a worker
 * thread, burns CPU in both threads and raises SIGTRAP itself three times.
 * Prints: "own_traps=N other_traps=N handler_kept=0|1 kernel_handler_is_ours=0|1"
 * (the last from the raw system call, which the collector does not see). */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h> /* syscall */

static volatile sig_atomic_t own_traps, other_traps;
static volatile double sink;

static void on_trap(int sig, siginfo_t *info, void *context)
{
    (void)sig; (void)context;
    if (info->si_code == SI_TKILL || info->si_code == SI_USER)
        own_traps++;
    else
        other_traps++;
}

/* The kernel's struct sigaction for rt_sigaction (x86-64). */
struct kernel_action {
    void *handler;
    unsigned long flags;
    void *restorer;
    unsigned long mask;
};

static void burn(double cpu_seconds)
{
    struct timespec start, now;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &start);
    double x = 1.0;
    do {
        for (int i = 0; i < 100000; i++) x = x * 1.0000001 + 0.5;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
    } while ((now.tv_sec - start.tv_sec) + (now.tv_nsec - start.tv_nsec) / 1e9 < cpu_seconds);
    sink = x;
}

static void *worker(void *arg)
{
    (void)arg;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, NULL);
    burn(0.15);
    return NULL;
}

int main(void)
{
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_sigaction = on_trap;
    action.sa_flags = SA_SIGINFO;
    sigaction(SIGTRAP, &action, NULL);
    pthread_t thread;
    pthread_create(&thread, NULL, worker, NULL);
    for (int i = 0; i < 3; i++) {
        burn(0.05);
        raise(SIGTRAP);
    }
    pthread_join(thread, NULL);
    struct sigaction now;
    sigaction(SIGTRAP, NULL, &now);
    struct kernel_action real;
    syscall(SYS_rt_sigaction, SIGTRAP, NULL, &real, 8);
    printf("own_traps=%d other_traps=%d handler_kept=%d kernel_handler_is_ours=%d\n",
           (int)own_traps, (int)other_traps, now.sa_sigaction == on_trap,
           real.handler == (void *)on_trap);
    return 0;
}
