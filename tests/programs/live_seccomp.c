/* A process with a seccomp filter (one that allows everything, so it runs
 * normally): rdbx must refuse to inject a dlopen into it unless told to
 * (tests/live_collect.rs). */
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdio.h>
#include <sys/prctl.h>

__attribute__((noinline)) void ready(void)
{
    __asm__ volatile("" ::: "memory");
}

int main(void)
{
    struct sock_filter allow[] = {BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};
    struct sock_fprog filter = {1, allow};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &filter)) {
        perror("seccomp");
        return 1;
    }
    ready();
    printf("done\n");
    return 0;
}
