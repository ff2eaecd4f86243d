/* Waits for a line on stdin, then forks: the child prints and exits 3,
   the parent waits for it and prints the child's status. */
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void) {
    char buf[64];
    printf("ready\n");
    fflush(stdout);
    if (read(0, buf, sizeof buf) < 0)
        return 1;
    pid_t child = fork();
    if (child == 0) {
        printf("child running\n");
        fflush(stdout);
        _exit(3);
    }
    int status = 0;
    waitpid(child, &status, 0);
    printf("parent: child exited %d\n", WEXITSTATUS(status)); /* MARK:after_wait */
    return 0;
}
