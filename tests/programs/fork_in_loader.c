/* Forks while another thread is inside dl_iterate_phdr, holding the
 * dynamic loader's lock; the child's copy of that lock stays held forever.
 * The collector must start the child's experiment without it (a child
 * that asked the loader would hang).
 * Used by: collector_cli.rs. */
#define _GNU_SOURCE
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile int inside;

static int hold(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)info, (void)size, (void)data;
    inside = 1;
    sleep(1); /* the loader's lock is held all along */
    return 1;
}

static void *holder(void *arg)
{
    dl_iterate_phdr(hold, NULL);
    return arg;
}

int main(void)
{
    pthread_t thread;
    pthread_create(&thread, NULL, holder, NULL);
    while (!inside)
        usleep(1000);
    pid_t pid = fork();
    if (pid == 0) {
        printf("child ok\n");
        fflush(stdout);
        _exit(0);
    }
    int status;
    waitpid(pid, &status, 0);
    printf("parent ok %d\n", WEXITSTATUS(status));
    pthread_join(thread, NULL);
    return 0;
}
