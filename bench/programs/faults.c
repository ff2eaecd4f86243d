/* For bench/counters.sh: page faults by construction. Each round maps
 * PAGES fresh anonymous pages, writes one byte in each (one minor fault
 * per page), works a little on them, and unmaps them; the faults happen
 * FRAMES calls deep so that each recorded stack is a real walk. Prints
 * its own wall and CPU time and the faults getrusage saw:
 *   "wall W s cpu C s faults F"
 * usage: faults [ROUNDS [PAGES [FRAMES]]] */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>

static double seconds(clockid_t clock) {
    struct timespec ts;
    clock_gettime(clock, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static long faults_so_far(void) {
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    return usage.ru_minflt + usage.ru_majflt;
}

static volatile unsigned long sink;

__attribute__((noinline)) static void touch(long pages) {
    char *block = mmap(NULL, (size_t)pages * 4096, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (block == MAP_FAILED) {
        perror("mmap");
        exit(1);
    }
    for (long p = 0; p < pages; p++) {
        block[p * 4096] = (char)p;
    }
    /* Some work per page, as a program that uses what it touched. */
    unsigned long sum = 0;
    for (long p = 0; p < pages; p++) {
        for (int i = 0; i < 64; i++) {
            sum += (unsigned char)block[p * 4096 + i * 64] + (unsigned long)i;
        }
    }
    sink += sum;
    munmap(block, (size_t)pages * 4096);
}

__attribute__((noinline)) static void descend(int depth, long pages) {
    if (depth <= 0) {
        touch(pages);
        return;
    }
    descend(depth - 1, pages);
    sink++;
}

int main(int argc, char **argv) {
    long rounds = argc > 1 ? atol(argv[1]) : 400;
    long pages = argc > 2 ? atol(argv[2]) : 1024;
    int frames = argc > 3 ? atoi(argv[3]) : 15;
    long before = faults_so_far();
    double wall = seconds(CLOCK_MONOTONIC), cpu = seconds(CLOCK_PROCESS_CPUTIME_ID);
    for (long r = 0; r < rounds; r++) {
        descend(frames, pages);
    }
    wall = seconds(CLOCK_MONOTONIC) - wall;
    cpu = seconds(CLOCK_PROCESS_CPUTIME_ID) - cpu;
    printf("wall %.4f s cpu %.4f s faults %ld\n", wall, cpu, faults_so_far() - before);
    return 0;
}
