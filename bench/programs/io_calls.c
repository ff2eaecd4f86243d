/* File I/O calls that do not wait: what I/O tracing costs per call.
 * Usage: io_calls CALLS. Makes a 64 KiB file in $TMPDIR (or /tmp), reads
 * it once (so it is in the page cache), then times CALLS preads of 64 bytes
 * from it and CALLS writes of 64 bytes to /dev/null, and prints its own ns
 * per call of each, best of 3 rounds of CALLS/3 calls. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

__attribute__((noinline)) static double preads(int fd, long calls) {
    char buf[64];
    uint64_t start = now_ns();
    for (long i = 0; i < calls; i++) {
        sink += (unsigned long)pread(fd, buf, sizeof buf, (off_t)((i * 64) & 65535));
    }
    return (double)(now_ns() - start) / (double)calls;
}

__attribute__((noinline)) static double writes(int fd, long calls) {
    char buf[64];
    memset(buf, 'w', sizeof buf);
    uint64_t start = now_ns();
    for (long i = 0; i < calls; i++) {
        sink += (unsigned long)write(fd, buf, sizeof buf);
    }
    return (double)(now_ns() - start) / (double)calls;
}

static double best(double (*each)(int, long), int fd, long calls) {
    double least = 1e30;
    for (int round = 0; round < 3; round++) {
        double ns = each(fd, calls / 3);
        if (ns < least) {
            least = ns;
        }
    }
    return least;
}

int main(int argc, char **argv) {
    long calls = argc > 1 ? atol(argv[1]) : 1000000;
    const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    char path[4096];
    snprintf(path, sizeof path, "%s/io_calls.%d", tmp, (int)getpid());
    int fd = open(path, O_CREAT | O_TRUNC | O_RDWR, 0600);
    if (fd < 0) {
        perror(path);
        return 1;
    }
    static char block[65536];
    memset(block, 'r', sizeof block);
    if (write(fd, block, sizeof block) != (ssize_t)sizeof block ||
        pread(fd, block, sizeof block, 0) != (ssize_t)sizeof block) {
        perror("fill");
        return 1;
    }
    unlink(path);
    int null = open("/dev/null", O_WRONLY);
    double read_ns = best(preads, fd, calls);
    double write_ns = best(writes, null, calls);
    close(null);
    close(fd);
    printf("%ld calls: pread %.1f ns per call, write %.1f ns per call\n", calls, read_ns, write_ns);
    return 0;
}
