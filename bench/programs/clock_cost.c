/* Per-event cost of the building blocks of a 1 ms per-thread profiling
 * clock: two CPU-bound threads doing fixed work, each with the clock under
 * test (bench/clock_cost.py runs it; bench/RESULTS.md has the figures).
 * usage: clock_cost MODE HANDLER ROUNDS
 *  MODE: none | perf_count (cpu-clock, 1 ms sample_period, no signal) |
 *        perf_count_k (same, counting kernel mode too) |
 *        perf_ring (same, samples into a ring buffer that never wakes) |
 *        perf_sig_refresh (F_SETSIG SIGPROF + F_SETOWN_EX, IOC_REFRESH 2^30) |
 *        perf_sig_enable (same, IOC_ENABLE, no overflow limit) |
 *        perf_sig_refresh1 (same, IOC_REFRESH 1 from every handler call) |
 *        perf_sig_k (perf_sig_enable counting kernel mode too) |
 *        task_sig (perf_sig_enable with task-clock) |
 *        posix_timer (timer_create CLOCK_THREAD_CPUTIME_ID, SIGEV_THREAD_ID, 1 ms) |
 *        itimer_prof (setitimer ITIMER_PROF 1 ms) |
 *        sigtrap (cpu-clock with sigtrap=1 remove_on_exec=1) | sigtrap_k
 *  HANDLER: empty | full (gettid + clock_gettime thread CPU + monotonic +
 *           sched_getcpu, as the collector's) | cpu (thread CPU clock only) |
 *           mono (monotonic + sched_getcpu) | read (read(2) of the perf count)
 * prints: MODE HANDLER cpu_s sys_s wall_s events
 */
#define _GNU_SOURCE
#include <linux/perf_event.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

static const char *mode, *hmode;
static long iters;
static volatile double sink;
static _Atomic long events;
static __thread int my_fd = -1;
static __thread long my_events;
static __thread unsigned long long acc;

static void handler(int sig, siginfo_t *si, void *uc) {
    (void)sig; (void)si; (void)uc;
    my_events++;
    if (hmode[0] == 'f') {
        struct timespec ts;
        acc += syscall(SYS_gettid);
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts); acc += ts.tv_nsec;
        clock_gettime(CLOCK_MONOTONIC, &ts); acc += ts.tv_nsec;
        acc += sched_getcpu();
    } else if (hmode[0] == 'c') {
        struct timespec ts;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts); acc += ts.tv_nsec;
    } else if (hmode[0] == 'm') {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts); acc += ts.tv_nsec;
        acc += sched_getcpu();
    } else if (hmode[0] == 'r') {
        unsigned long long v;
        if (read(my_fd, &v, 8) == 8) acc += v;
    }
    if (!strcmp(mode, "perf_sig_refresh1")) ioctl(my_fd, PERF_EVENT_IOC_REFRESH, 1);
}

static int open_perf(int cfg, int exclude_kernel, int sigtrap, int ring) {
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.type = PERF_TYPE_SOFTWARE;
    a.size = sizeof a;
    a.config = cfg;
    a.sample_period = 1000000;
    a.disabled = 1;
    a.exclude_kernel = exclude_kernel;
    a.exclude_hv = exclude_kernel;
    a.wakeup_events = 1;
    if (ring) { a.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID; a.wakeup_events = 1000000; }
    if (sigtrap) { a.sigtrap = 1; a.remove_on_exec = 1; a.sig_data = 0x1234; }
    int fd = syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd < 0) { perror("perf_event_open"); exit(1); }
    return fd;
}

static void route(int fd) {
    struct f_owner_ex o = { F_OWNER_TID, (pid_t)syscall(SYS_gettid) };
    fcntl(fd, F_SETFL, O_ASYNC);
    fcntl(fd, F_SETSIG, SIGPROF);
    fcntl(fd, F_SETOWN_EX, &o);
}

static void arm(void) {
    if (!strcmp(mode, "none") || !strcmp(mode, "itimer_prof")) return;
    if (!strcmp(mode, "posix_timer")) {
        struct sigevent ev; memset(&ev, 0, sizeof ev);
        ev.sigev_notify = SIGEV_THREAD_ID; ev.sigev_signo = SIGPROF;
        ev._sigev_un._tid = syscall(SYS_gettid);
        timer_t t;
        if (timer_create(CLOCK_THREAD_CPUTIME_ID, &ev, &t)) { perror("timer_create"); exit(1); }
        struct itimerspec s = { {0, 1000000}, {0, 1000000} };
        timer_settime(t, 0, &s, NULL);
        return;
    }
    int task = !strcmp(mode, "task_sig");
    int k = strstr(mode, "_k") != NULL;
    int st = !strncmp(mode, "sigtrap", 7);
    int ring = !strcmp(mode, "perf_ring");
    my_fd = open_perf(task ? PERF_COUNT_SW_TASK_CLOCK : PERF_COUNT_SW_CPU_CLOCK, !k, st, ring);
    if (ring) {
        if (mmap(NULL, 9 * 4096, PROT_READ | PROT_WRITE, MAP_SHARED, my_fd, 0) == MAP_FAILED) { perror("mmap"); exit(1); }
    }
    if (!strncmp(mode, "perf_sig", 8) || task) route(my_fd);
    if (!strncmp(mode, "perf_sig_refresh", 16) && strcmp(mode, "perf_sig_refresh1")) ioctl(my_fd, PERF_EVENT_IOC_REFRESH, 1 << 30);
    else if (!strcmp(mode, "perf_sig_refresh1")) ioctl(my_fd, PERF_EVENT_IOC_REFRESH, 1);
    else ioctl(my_fd, PERF_EVENT_IOC_ENABLE, 0);
}

static double work(void) {
    double x = 1.0;
    for (int i = 0; i < 1000000; i++) x = x * 1.0000001 + 0.5;
    return x;
}

static void *thread_main(void *arg) {
    (void)arg;
    arm();
    for (long r = 0; r < iters; r++) sink = work();
    if (my_fd >= 0 && !strncmp(mode, "perf_count", 10)) {
        unsigned long long v; if (read(my_fd, &v, 8) == 8) my_events = v / 1000000;
    }
    events += my_events;
    return NULL;
}

int main(int argc, char **argv) {
    mode = argc > 1 ? argv[1] : "none";
    hmode = argc > 2 ? argv[2] : "empty";
    iters = argc > 3 ? atol(argv[3]) : 1500;
    struct sigaction sa; memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = handler; sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigaction(SIGPROF, &sa, NULL);
    sigaction(SIGTRAP, &sa, NULL);
    if (!strcmp(mode, "itimer_prof")) {
        struct itimerval it = { {0, 1000}, {0, 1000} };
        setitimer(ITIMER_PROF, &it, NULL);
    }
    struct timespec w0, w1;
    clock_gettime(CLOCK_MONOTONIC, &w0);
    pthread_t a, b;
    pthread_create(&a, NULL, thread_main, NULL);
    pthread_create(&b, NULL, thread_main, NULL);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    clock_gettime(CLOCK_MONOTONIC, &w1);
    struct rusage ru; getrusage(RUSAGE_SELF, &ru);
    double cpu = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
    double sys = ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
    printf("%s %s %.4f %.4f %.4f %ld\n", mode, hmode, cpu, sys, (w1.tv_sec - w0.tv_sec) + (w1.tv_nsec - w0.tv_nsec) / 1e9, (long)events);
    return 0;
}
