/* For tests/io.rs: file I/O known by construction. Usage: io_known DIR.
 * In DIR it writes file a (8 write()s of 100 bytes, fsync, close), reads it
 * back (4 preads of 100 bytes, lseek, a readv of 300 + 100, a dup whose
 * reads take the last 400 bytes and then 0 at the end of the file, a dup2
 * to descriptor 100), writes file b with stdio (fwrite of 3 x 50 bytes,
 * fputs of 5, fflush, fclose) and reads it back (fread of 150, fgets of 5,
 * fseek, fgets of 155, fgets at the end), copies 200 bytes of a to c with
 * sendfile and 100 more with copy_file_range, fails to open and to fopen a
 * missing file, and a second thread writes file d (3 writes of 64 bytes).
 * On stdout: "puts line" (puts, fflush) and "done" (write(1)). On stderr:
 * "fd NAME N" for each descriptor it had, "copy_file_range N" (its result). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/uio.h>
#include <unistd.h>

#define CHUNK 100
#define CHUNKS 8

static char path_a[4096], path_b[4096], path_c[4096], path_d[4096], path_missing[4096];

static void say_fd(const char *name, int fd) { fprintf(stderr, "fd %s %d\n", name, fd); }

__attribute__((noinline)) void write_a(void) {
    int fd = open(path_a, O_CREAT | O_TRUNC | O_WRONLY, 0644);
    char chunk[CHUNK];
    memset(chunk, 'a', sizeof chunk);
    for (int i = 0; i < CHUNKS; i++) {
        write(fd, chunk, CHUNK);
    }
    fsync(fd);
    close(fd);
    say_fd("write_a", fd);
}

__attribute__((noinline)) void read_a(void) {
    int fd = open(path_a, O_RDONLY);
    char buf[CHUNK * 4];
    for (int i = 0; i < 4; i++) {
        pread(fd, buf, CHUNK, (off_t)i * CHUNK);
    }
    lseek(fd, 0, SEEK_SET);
    struct iovec iov[2] = {{buf, 300}, {buf + 300, 100}};
    readv(fd, iov, 2);
    int copy = dup(fd);
    read(copy, buf, sizeof buf);
    read(copy, buf, CHUNK);
    int high = dup2(fd, 100);
    close(high);
    close(copy);
    close(fd);
    say_fd("read_a", fd);
    say_fd("read_a_dup", copy);
    say_fd("read_a_dup2", high);
}

__attribute__((noinline)) void stdio_b(void) {
    FILE *f = fopen(path_b, "w");
    char records[150];
    memset(records, 'b', sizeof records);
    fwrite(records, 50, 3, f);
    fputs("line\n", f);
    fflush(f);
    say_fd("stdio_b_w", fileno(f));
    fclose(f);
    f = fopen(path_b, "r");
    say_fd("stdio_b_r", fileno(f));
    char line[256];
    fread(line, 1, 150, f);
    fgets(line, sizeof line, f);
    fseek(f, 0, SEEK_SET);
    fgets(line, sizeof line, f);
    fgets(line, sizeof line, f);
    fclose(f);
}

__attribute__((noinline)) void copy_c(void) {
    int to = open(path_c, O_CREAT | O_TRUNC | O_WRONLY, 0644);
    int from = open(path_a, O_RDONLY);
    sendfile(to, from, NULL, 200);
    loff_t at = 200;
    ssize_t copied = copy_file_range(from, &at, to, NULL, 100, 0);
    close(from);
    close(to);
    say_fd("copy_c_to", to);
    say_fd("copy_c_from", from);
    fprintf(stderr, "copy_file_range %zd\n", copied);
}

__attribute__((noinline)) void open_missing(void) {
    int fd = open(path_missing, O_RDONLY);
    FILE *f = fopen(path_missing, "r");
    fprintf(stderr, "missing %d %d\n", fd, f == NULL);
}

__attribute__((noinline)) static void *write_d(void *arg) {
    (void)arg;
    int fd = open(path_d, O_CREAT | O_TRUNC | O_WRONLY, 0644);
    char chunk[64];
    memset(chunk, 'd', sizeof chunk);
    for (int i = 0; i < 3; i++) {
        write(fd, chunk, sizeof chunk);
    }
    close(fd);
    say_fd("write_d", fd);
    return NULL;
}

__attribute__((noinline)) void say_done(void) {
    puts("puts line");
    fflush(stdout);
    write(1, "done\n", 5);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: io_known DIR\n");
        return 2;
    }
    snprintf(path_a, sizeof path_a, "%s/a", argv[1]);
    snprintf(path_b, sizeof path_b, "%s/b", argv[1]);
    snprintf(path_c, sizeof path_c, "%s/c", argv[1]);
    snprintf(path_d, sizeof path_d, "%s/d", argv[1]);
    snprintf(path_missing, sizeof path_missing, "%s/missing/none", argv[1]);
    write_a();
    read_a();
    stdio_b();
    copy_c();
    open_missing();
    pthread_t thread;
    pthread_create(&thread, NULL, write_d, NULL);
    pthread_join(thread, NULL);
    say_done();
    return 0;
}
