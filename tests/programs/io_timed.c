/* For tests/io.rs: I/O whose time the program measures itself, in each of
 * gprofng's classes. Usage: io_timed DIR.
 *
 *   do_reads:  3 reads of a pipe, each blocked until a helper writes 20 ms
 *              later, and the read of 0 bytes once the helper closed it.
 *   do_writes: 256 KiB written into a pipe (4 pipe buffers) that a helper
 *              drains from 20 ms on, as many calls as it takes; 8 writes
 *              of 64 KiB to DIR/data.
 *   do_others: open, fsync and close of DIR/data; an open of the fifo
 *              DIR/fifo blocked until a helper opens its other end 20 ms
 *              later, and its close.
 *   do_errors: a read of a descriptor never opened, a write to a
 *              descriptor opened read-only, an open of DIR/missing/none, a
 *              close of a descriptor never opened, a seek on a pipe, and a
 *              read of a pipe interrupted by a signal (EINTR) 20 ms later.
 *
 * Every traced call the program makes is timed with CLOCK_MONOTONIC around
 * it and counted in its class, or as an error when it failed; the helpers
 * make raw system calls, which are not traced. On stderr, per function
 * and class: "io FUNCTION CLASS NS CALLS" (CLASS read, write, other or
 * error). On stdout: "done". */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

enum { READ, WRITE, OTHER, ERROR, CLASSES };
static const char *class_names[CLASSES] = {"read", "write", "other", "error"};

struct measure {
    const char *function;
    uint64_t ns[CLASSES];
    uint64_t calls[CLASSES];
};

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Times CALL (made from the function itself, so that it is the caller the
 * collector sees) into `m`: in CLASS, or as an error when it returned < 0. */
#define TIMED(m, class, result, call)                                          \
    do {                                                                       \
        uint64_t start_ = now_ns();                                            \
        result = (call);                                                       \
        uint64_t took_ = now_ns() - start_;                                    \
        int in_ = (result) < 0 ? ERROR : (class);                              \
        (m)->ns[in_] += took_;                                                 \
        (m)->calls[in_] += 1;                                                  \
    } while (0)

static void report(const struct measure *m) {
    for (int c = 0; c < CLASSES; c++) {
        fprintf(stderr, "io %s %s %llu %llu\n", m->function, class_names[c],
                (unsigned long long)m->ns[c], (unsigned long long)m->calls[c]);
    }
}

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

/* ---- helpers: raw system calls only ---- */

static void *feed_pipe(void *arg) {
    int fd = *(int *)arg;
    for (int i = 0; i < 3; i++) {
        sleep_ms(20);
        syscall(SYS_write, fd, "chunk", 5);
    }
    sleep_ms(20);
    syscall(SYS_close, fd);
    return NULL;
}

static void *drain_pipe(void *arg) {
    int fd = *(int *)arg;
    static char sink[65536];
    sleep_ms(20);
    while (syscall(SYS_read, fd, sink, sizeof sink) > 0) {
    }
    return NULL;
}

static char fifo_path[4096];

static void *open_fifo_later(void *arg) {
    (void)arg;
    sleep_ms(20);
    long fd = syscall(SYS_openat, AT_FDCWD, fifo_path, O_WRONLY);
    syscall(SYS_close, fd);
    return NULL;
}

static atomic_int interrupted;

static void on_signal(int sig) { (void)sig; }

static void *interrupt_later(void *arg) {
    pthread_t reader = *(pthread_t *)arg;
    /* Again until the read has returned: a signal that came before the
     * read began interrupted nothing. */
    while (!atomic_load(&interrupted)) {
        sleep_ms(20);
        pthread_kill(reader, SIGUSR1);
    }
    return NULL;
}

/* ---- the timed calls ---- */

__attribute__((noinline)) void do_reads(void) {
    struct measure m = {"do_reads"};
    int fds[2];
    pipe(fds);
    pthread_t helper;
    pthread_create(&helper, NULL, feed_pipe, &fds[1]);
    char buf[16];
    ssize_t got;
    do {
        TIMED(&m, READ, got, read(fds[0], buf, sizeof buf));
    } while (got > 0);
    pthread_join(helper, NULL);
    syscall(SYS_close, fds[0]);
    report(&m);
}

__attribute__((noinline)) void do_writes(const char *dir) {
    struct measure m = {"do_writes"};
    int fds[2];
    pipe(fds);
    pthread_t helper;
    pthread_create(&helper, NULL, drain_pipe, &fds[0]);
    static char block[256 * 1024];
    memset(block, 'w', sizeof block);
    size_t done = 0;
    while (done < sizeof block) {
        ssize_t put;
        TIMED(&m, WRITE, put, write(fds[1], block + done, sizeof block - done));
        if (put < 0) {
            break;
        }
        done += (size_t)put;
    }
    syscall(SYS_close, fds[1]);
    pthread_join(helper, NULL);
    char path[4200];
    snprintf(path, sizeof path, "%s/data", dir);
    int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_CREAT | O_TRUNC | O_WRONLY, 0644);
    for (int i = 0; i < 8; i++) {
        ssize_t put;
        TIMED(&m, WRITE, put, write(fd, block, 64 * 1024));
    }
    syscall(SYS_close, fd);
    report(&m);
}

__attribute__((noinline)) void do_others(const char *dir) {
    struct measure m = {"do_others"};
    char path[4200];
    snprintf(path, sizeof path, "%s/data", dir);
    int fd, rc;
    TIMED(&m, OTHER, fd, open(path, O_WRONLY));
    TIMED(&m, OTHER, rc, fsync(fd));
    TIMED(&m, OTHER, rc, close(fd));
    pthread_t helper;
    pthread_create(&helper, NULL, open_fifo_later, NULL);
    TIMED(&m, OTHER, fd, open(fifo_path, O_RDONLY));
    pthread_join(helper, NULL);
    TIMED(&m, OTHER, rc, close(fd));
    report(&m);
}

__attribute__((noinline)) void do_errors(const char *dir) {
    struct measure m = {"do_errors"};
    char buf[16];
    char path[4200];
    ssize_t got;
    int fd, rc;
    off_t at;
    TIMED(&m, READ, got, read(1000, buf, sizeof buf));
    snprintf(path, sizeof path, "%s/data", dir);
    int read_only = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY);
    TIMED(&m, WRITE, got, write(read_only, buf, sizeof buf));
    syscall(SYS_close, read_only);
    snprintf(path, sizeof path, "%s/missing/none", dir);
    TIMED(&m, OTHER, fd, open(path, O_RDONLY));
    TIMED(&m, OTHER, rc, close(1000));
    int fds[2];
    pipe(fds);
    TIMED(&m, OTHER, at, lseek(fds[0], 0, SEEK_SET));
    /* No SA_RESTART: the read returns -1 with EINTR. */
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = on_signal;
    sigaction(SIGUSR1, &action, NULL);
    pthread_t self = pthread_self(), helper;
    pthread_create(&helper, NULL, interrupt_later, &self);
    do {
        TIMED(&m, READ, got, read(fds[0], buf, sizeof buf));
    } while (got >= 0);
    int err = errno;
    atomic_store(&interrupted, 1);
    pthread_join(helper, NULL);
    syscall(SYS_close, fds[0]);
    syscall(SYS_close, fds[1]);
    if (err != EINTR) {
        fprintf(stderr, "the read failed with errno %d, not EINTR\n", err);
    }
    report(&m);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: io_timed DIR\n");
        return 2;
    }
    snprintf(fifo_path, sizeof fifo_path, "%s/fifo", argv[1]);
    if (mkfifo(fifo_path, 0600) != 0) {
        perror("mkfifo");
        return 1;
    }
    do_reads();
    do_writes(argv[1]);
    do_others(argv[1]);
    do_errors(argv[1]);
    printf("done\n");
    return 0;
}
