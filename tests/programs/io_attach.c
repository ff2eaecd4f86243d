/* For tests/io.rs: a program the collector is loaded into while it runs.
 * It makes a directory, writes file "before" there (not traced: nothing is
 * loaded yet), prints "ready DIR", waits for a line on stdin (rdbx attaches,
 * enables the collector with I/O tracing and detaches meanwhile), then in
 * after_attach writes file "after" (open, 4 writes of 32 bytes, close),
 * reads it back with one read, prints "done" with write(1), and removes
 * both files and the directory. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[64], before[128], after[128];

static void write_file(const char *path, int writes) {
    int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644);
    char chunk[32];
    memset(chunk, 'x', sizeof chunk);
    for (int i = 0; i < writes; i++) {
        write(fd, chunk, sizeof chunk);
    }
    close(fd);
}

__attribute__((noinline)) static void after_attach(void) {
    write_file(after, 4);
    int fd = open(after, O_RDONLY);
    char buf[256];
    ssize_t n = read(fd, buf, sizeof buf);
    close(fd);
    char line[32];
    int len = snprintf(line, sizeof line, "read %zd\ndone\n", n);
    write(1, line, (size_t)len);
}

int main(void) {
    strcpy(dir, "/tmp/rdbx-io-attach-XXXXXX");
    if (!mkdtemp(dir)) {
        return 1;
    }
    snprintf(before, sizeof before, "%s/before", dir);
    snprintf(after, sizeof after, "%s/after", dir);
    write_file(before, 2);
    char line[16];
    printf("ready %s\n", dir);
    fflush(stdout);
    if (!fgets(line, sizeof line, stdin)) {
        return 1;
    }
    after_attach();
    unlink(before);
    unlink(after);
    rmdir(dir);
    return 0;
}
