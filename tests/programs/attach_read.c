/* Blocks in read() on stdin (a pipe in the test) and echoes what it got. */
#include <stdio.h>
#include <unistd.h>

int main(void) {
    char buf[256];
    printf("ready\n");
    fflush(stdout);
    ssize_t n = read(0, buf, sizeof buf - 1);
    if (n < 0) {
        perror("read");
        return 1;
    }
    buf[n] = 0;
    printf("got: %s\n", buf);
    return 0;
}
