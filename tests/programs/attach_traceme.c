/* Forks a child that asks to be traced by this process (PTRACE_TRACEME)
   and stops; prints the child's pid, then waits for a line on stdin,
   kills the child and exits. */
#include <signal.h>
#include <stdio.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void) {
    pid_t child = fork();
    if (child == 0) {
        ptrace(PTRACE_TRACEME, 0, 0, 0);
        raise(SIGSTOP);
        for (;;)
            pause();
    }
    int status;
    waitpid(child, &status, 0);
    printf("child %d\n", (int)child);
    fflush(stdout);
    char buf[64];
    if (read(0, buf, sizeof buf) < 0)
        return 1;
    kill(child, SIGKILL);
    waitpid(child, &status, 0);
    printf("bye\n");
    return 0;
}
