/* A process that forks after `collector enable` (tests/live_collect.rs):
 * the test stops in ready(); then parent and child each spin for 0.1 s of
 * CPU and print one line. */
#include <stdio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double thread_cpu(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void spin(double seconds)
{
    double start = thread_cpu();
    volatile long x = 0;
    while (thread_cpu() - start < seconds)
        for (int i = 0; i < 10000; i++)
            x += i;
}

__attribute__((noinline)) void ready(void)
{
    __asm__ volatile("" ::: "memory");
}

int main(void)
{
    setvbuf(stdout, NULL, _IONBF, 0);
    ready();
    pid_t child = fork();
    if (child == 0) {
        spin(0.1);
        printf("child done\n");
        return 0;
    }
    spin(0.1);
    waitpid(child, NULL, 0);
    printf("parent done\n");
    return 0;
}
