/* Signals. argv[1] selects the mode:
 *   usr1  (default) install a SIGUSR1 handler that calls handler_work(),
 *         raise SIGUSR1 from send_signal(), print "handled 1", exit 0.
 *   segv  write through a null pointer in crash() (death by SIGSEGV).
 *   abort call abort() from do_abort() (death by SIGABRT).
 *   segvh install a SIGSEGV handler that calls handler_work() and leaves with
 *         siglongjmp, then crash(); prints "recovered", exit 0.
 * Used by: signals.rs (handler where vs gdb bt, catch/ignore, signal stops,
 *          death by signal), process.rs. */
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static volatile int handled;
static sigjmp_buf recover;

int handler_work(int sig)
{
    handled += sig; /* MARK:handler_work_body */
    return handled;
}

static void on_usr1(int sig)
{
    handler_work(sig); /* MARK:on_usr1_call */
}

static void on_segv(int sig)
{
    handler_work(sig); /* MARK:on_segv_call */
    siglongjmp(recover, 1);
}

void send_signal(void)
{
    raise(SIGUSR1); /* MARK:raise_call */
}

void crash(void)
{
    volatile int *p = NULL;
    *p = 42; /* MARK:crash_store */
}

void do_abort(void)
{
    abort(); /* MARK:abort_call */
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IONBF, 0);
    const char *mode = argc > 1 ? argv[1] : "usr1";
    if (strcmp(mode, "segv") == 0) {
        crash();
    } else if (strcmp(mode, "abort") == 0) {
        do_abort();
    } else if (strcmp(mode, "segvh") == 0) {
        signal(SIGSEGV, on_segv);
        if (sigsetjmp(recover, 1) == 0)
            crash();
        printf("recovered %d\n", handled);
    } else {
        signal(SIGUSR1, on_usr1);
        send_signal();
        printf("handled %d\n", handled == SIGUSR1); /* MARK:after_send */
    }
    return 0;
}
