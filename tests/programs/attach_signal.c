/* Blocks SIGUSR1, says ready, waits for a line on stdin, then unblocks
   SIGUSR1 and reports whether it was pending and delivered. With the
   argument "unblocked" it does not block it, and only reports whether its
   handler ran by the time the line arrived. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t got;

static void on_usr1(int sig) { got = sig; }

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "unblocked") == 0) {
        signal(SIGUSR1, on_usr1);
        printf("ready\n");
        fflush(stdout);
        char buf[64];
        if (read(0, buf, sizeof buf) < 0)
            return 1;
        printf("delivered: %s\n", got == SIGUSR1 ? "yes" : "no");
        return 0;
    }
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    signal(SIGUSR1, on_usr1);
    sigprocmask(SIG_BLOCK, &set, NULL);
    printf("ready\n");
    fflush(stdout);
    char buf[64];
    if (read(0, buf, sizeof buf) < 0)
        return 1;
    sigset_t pending;
    sigpending(&pending);
    printf("pending: %s\n", sigismember(&pending, SIGUSR1) ? "yes" : "no");
    sigprocmask(SIG_UNBLOCK, &set, NULL);
    printf("delivered: %s\n", got == SIGUSR1 ? "yes" : "no");
    return 0;
}
