/* For tests/io.rs: I/O faults the tracing must not change. Usage: io_faults.
 * - pipe_closed_under_reader: a thread blocks in read() on a pipe's read
 *   end; once the main thread sees it in the read system call (its
 *   /proc/self/task/TID/syscall line, read by wait_blocked), it closes
 *   that descriptor and writes 12 bytes to the write end. The blocked read
 *   holds the pipe open (a close does not wake it), so it returns them.
 * - socket_closed_under_reader: the same on one end of a socketpair, then
 *   a shutdown(SHUT_WR) of the other end: the blocked read returns 0.
 * - read_unopened: a read of descriptor 1000, which nothing here opens
 *   (descriptors are handed out lowest first): -1, EBADF.
 * On stdout what each call returned. On stderr "fd NAME N" for each
 * descriptor it had. Exits 1 if a reader never blocks. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define UNOPENED 1000

struct reader {
    int fd;
    pid_t tid;
    sem_t started;
    ssize_t got;
    int error;
    char buf[64];
};

static void say_fd(const char *name, int fd) { fprintf(stderr, "fd %s %d\n", name, fd); }

static const char *error_name(int error) { return error ? strerrorname_np(error) : "0"; }

__attribute__((noinline)) static void *blocked_reader(void *arg) {
    struct reader *r = arg;
    r->tid = gettid();
    sem_post(&r->started);
    r->got = read(r->fd, r->buf, sizeof r->buf - 1);
    r->error = r->got < 0 ? errno : 0;
    if (r->got > 0)
        r->buf[r->got] = '\0';
    return NULL;
}

/* Whether thread `tid` is in read(fd, ...): the first two fields of its
 * syscall line are the call's number and first argument. */
__attribute__((noinline)) static int in_read(pid_t tid, int fd) {
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/self/task/%d/syscall", tid);
    int proc = open(path, O_RDONLY);
    if (proc < 0)
        return 0;
    ssize_t n = read(proc, line, sizeof line - 1);
    close(proc);
    if (n <= 0)
        return 0;
    line[n] = '\0';
    long number;
    unsigned long first;
    return sscanf(line, "%ld %lx", &number, &first) == 2 && number == SYS_read &&
           first == (unsigned long)fd;
}

/* Until the reader is blocked in its read (10 s at most: a loaded machine
 * may be slow to run it at all). */
__attribute__((noinline)) static void wait_blocked(struct reader *r) {
    sem_wait(&r->started);
    for (int i = 0; i < 10000; i++) {
        if (in_read(r->tid, r->fd))
            return;
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    fprintf(stderr, "the reader of fd %d never blocked\n", r->fd);
    exit(1);
}

static void start_reader(struct reader *r, pthread_t *thread, int fd) {
    memset(r, 0, sizeof *r);
    r->fd = fd;
    sem_init(&r->started, 0, 0);
    pthread_create(thread, NULL, blocked_reader, r);
}

static void report(const char *what, struct reader *r) {
    printf("%s: read returned %zd, errno %s, \"%s\"\n", what, r->got, error_name(r->error),
           r->buf);
}

__attribute__((noinline)) void pipe_closed_under_reader(void) {
    int ends[2];
    if (pipe(ends) != 0)
        exit(2);
    say_fd("pipe_read", ends[0]);
    say_fd("pipe_write", ends[1]);
    struct reader r;
    pthread_t thread;
    start_reader(&r, &thread, ends[0]);
    wait_blocked(&r);
    int closed = close(ends[0]);
    ssize_t written = write(ends[1], "after close!", 12);
    pthread_join(thread, NULL);
    close(ends[1]);
    printf("pipe: close returned %d, write returned %zd\n", closed, written);
    report("pipe", &r);
}

__attribute__((noinline)) void socket_closed_under_reader(void) {
    int ends[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, ends) != 0)
        exit(2);
    say_fd("socket_read", ends[0]);
    say_fd("socket_other", ends[1]);
    struct reader r;
    pthread_t thread;
    start_reader(&r, &thread, ends[0]);
    wait_blocked(&r);
    int closed = close(ends[0]);
    int shut = shutdown(ends[1], SHUT_WR);
    pthread_join(thread, NULL);
    close(ends[1]);
    printf("socket: close returned %d, shutdown returned %d\n", closed, shut);
    report("socket", &r);
}

__attribute__((noinline)) void read_unopened(void) {
    char byte;
    ssize_t got = read(UNOPENED, &byte, 1);
    printf("unopened: read returned %zd, errno %s\n", got, error_name(got < 0 ? errno : 0));
}

int main(void) {
    pipe_closed_under_reader();
    socket_closed_under_reader();
    read_unopened();
    return 0;
}
