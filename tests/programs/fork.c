/* fork(): the child prints and exits with code 7 after calling common_work();
 * the parent calls common_work() too, waits for the child and prints its status.
 * A breakpoint in common_work must stop only the parent; the child (not traced)
 * must not die of SIGTRAP from an inherited breakpoint.
 * Used by: process.rs (fork: child runs free, parent continues, no leftovers). */
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

volatile int work_done;

int common_work(int who)
{
    work_done += who; /* MARK:common_work_body */
    return work_done;
}

int main(void)
{
    setvbuf(stdout, NULL, _IONBF, 0);
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        return 1;
    }
    if (pid == 0) {
        common_work(2);
        printf("child %d running\n", (int)getpid());
        exit(7);
    }
    common_work(1); /* MARK:parent_work */
    int status = 0;
    waitpid(pid, &status, 0);
    if (WIFEXITED(status))
        printf("parent: child %d exited with %d\n", (int)pid, WEXITSTATUS(status));
    else if (WIFSIGNALED(status))
        printf("parent: child %d killed by signal %d\n", (int)pid, WTERMSIG(status));
    else
        printf("parent: child %d status 0x%x\n", (int)pid, status);
    return 0;
}
