/* Page faults and context switches whose number per function is known by
 * construction, each measured by the program itself with getrusage
 * (RUSAGE_THREAD) around the call, for tests/counters.rs:
 *
 *   touch_table   writes one byte in each page of the global big_table
 *   touch_heap    the same in a block malloc'ed (mmapped: fresh pages) before
 *   touch_member  the same in the member `pages` of the global struct big_struct
 *   touch_stack   the same in its own local array, on a fresh thread's stack
 *   switcher      sleeps 100 times (at least one switch off the CPU each)
 *
 * stderr gets `measure NAME FAULTS SWITCHES`, `object NAME ADDRESS SIZE` (what
 * the function touched) and `frame touch_stack CFA` (its canonical frame
 * address, where DWARF's frame base is); stdout only `counters_known done`.
 *
 * Modes (argv[1]):
 *   (none)   all of the above
 *   fork     the same in a forked child (the parent only waits)
 *   exec     execs itself (execv) with an argument the kernel reads from a
 *            file page this process never touched: the kernel takes a page
 *            fault inside execve, before the old image's perf events go away
 *   execl    the same with execl (variadic)
 *   attach   prints `ready` and waits for a line on stdin (the collector is
 *            loaded meanwhile); a thread that existed before (`worker`) runs
 *            touch_member, and touch_stack's thread waits 200 ms first, so
 *            the collector's watcher has found it; with a second argument
 *            `execv` or `execl`, then execs as `exec` does
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PAGE 4096
#define TABLE_PAGES 3000
#define HEAP_PAGES 3000
#define MEMBER_PAGES 2000
#define STACK_PAGES 2000

char big_table[TABLE_PAGES * PAGE] __attribute__((aligned(PAGE)));

struct holder {
    long before;
    char pages[MEMBER_PAGES * PAGE];
    long after;
};
struct holder big_struct __attribute__((aligned(PAGE)));

struct usage {
    long faults;
    long switches;
};

static struct usage usage_now(void) {
    struct rusage u;
    getrusage(RUSAGE_THREAD, &u);
    struct usage out = {u.ru_minflt + u.ru_majflt, u.ru_nvcsw + u.ru_nivcsw};
    return out;
}

static void report(const char *name, struct usage before) {
    struct usage after = usage_now();
    fprintf(stderr, "measure %s %ld %ld\n", name, after.faults - before.faults,
            after.switches - before.switches);
}

__attribute__((noinline)) void touch_table(void) {
    for (long i = 0; i < TABLE_PAGES; i++)
        big_table[i * PAGE] = 1;
}

__attribute__((noinline)) void touch_heap(char *block) {
    for (long i = 0; i < HEAP_PAGES; i++)
        block[i * PAGE] = 1;
}

__attribute__((noinline)) void touch_member(void) {
    for (long i = 0; i < MEMBER_PAGES; i++)
        big_struct.pages[i * PAGE] = 1;
}

/* Where touch_stack's array and frame were, printed after the measure. */
static void *stack_local, *stack_cfa;

__attribute__((noinline)) void touch_stack(void) {
    volatile char local[STACK_PAGES * PAGE];
    for (long i = 0; i < STACK_PAGES; i++)
        local[i * PAGE] = 1;
    stack_local = (void *)local;
    stack_cfa = __builtin_dwarf_cfa();
}

__attribute__((noinline)) void switcher(void) {
    struct timespec nap = {0, 200000};
    for (int i = 0; i < 100; i++)
        nanosleep(&nap, NULL);
}

static int attached;

static void *stack_thread(void *unused) {
    (void)unused;
    if (attached)
        usleep(200000);
    struct usage before = usage_now();
    touch_stack();
    report("touch_stack", before);
    fprintf(stderr, "object touch_stack %p %ld\n", stack_local, (long)STACK_PAGES * PAGE);
    fprintf(stderr, "frame touch_stack %p\n", stack_cfa);
    return NULL;
}

/* touch_stack on a thread of its own: a fresh stack, big enough. */
static void run_touch_stack(void) {
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, (STACK_PAGES + 512) * PAGE);
    pthread_t thread;
    if (pthread_create(&thread, &attr, stack_thread, NULL) != 0) {
        perror("pthread_create");
        exit(1);
    }
    pthread_join(thread, NULL);
}

static void run_touch_member(void) {
    struct usage before = usage_now();
    touch_member();
    report("touch_member", before);
}

static void run_main_thread_functions(void) {
    fprintf(stderr, "object touch_table %p %ld\n", (void *)big_table, (long)sizeof big_table);
    struct usage before = usage_now();
    touch_table();
    report("touch_table", before);

    char *block = malloc(HEAP_PAGES * PAGE);
    if (!block) {
        perror("malloc");
        exit(1);
    }
    fprintf(stderr, "object touch_heap %p %ld\n", (void *)block, (long)HEAP_PAGES * PAGE);
    before = usage_now();
    touch_heap(block);
    report("touch_heap", before);

    before = usage_now();
    switcher();
    report("switcher", before);
}

static void member_object(void) {
    fprintf(stderr, "object touch_member %p %ld\n", (void *)big_struct.pages,
            (long)sizeof big_struct.pages);
}

static void run_all(void) {
    run_main_thread_functions();
    member_object();
    run_touch_member();
    run_touch_stack();
}

/* ---- exec ---------------------------------------------------------------- */

static int run_exec(const char *self, int variadic) {
    char path[] = "/tmp/counters_known_argXXXXXX";
    int fd = mkstemp(path);
    if (fd < 0 || write(fd, "exec-done", 10) != 10) {
        perror("argument file");
        return 1;
    }
    /* Mapped, never read: the kernel faults the page in while execve
     * copies the argument, in kernel mode. */
    char *argument = mmap(NULL, PAGE, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    unlink(path);
    if (argument == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    char *args[] = {(char *)self, argument, NULL};
    fflush(NULL);
    if (variadic)
        execl(self, self, argument, (char *)NULL);
    else
        execv(self, args);
    perror("exec");
    return 1;
}

/* ---- attach --------------------------------------------------------------- */

static pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cond = PTHREAD_COND_INITIALIZER;
static int gate_open;

static void *worker(void *unused) {
    (void)unused;
    pthread_mutex_lock(&gate_lock);
    while (!gate_open)
        pthread_cond_wait(&gate_cond, &gate_lock);
    pthread_mutex_unlock(&gate_lock);
    run_touch_member();
    return NULL;
}

static void run_attached(void) {
    attached = 1;
    pthread_t existing;
    pthread_create(&existing, NULL, worker, NULL);
    printf("ready\n");
    fflush(stdout);
    char line[64];
    if (!fgets(line, sizeof line, stdin))
        exit(1);
    run_main_thread_functions();
    member_object();
    pthread_mutex_lock(&gate_lock);
    gate_open = 1;
    pthread_cond_signal(&gate_cond);
    pthread_mutex_unlock(&gate_lock);
    pthread_join(existing, NULL);
    run_touch_stack();
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    if (strcmp(mode, "exec-done") == 0) {
        run_main_thread_functions();
    } else if (strcmp(mode, "exec") == 0 || strcmp(mode, "execl") == 0) {
        return run_exec(argv[0], strcmp(mode, "execl") == 0);
    } else if (strcmp(mode, "fork") == 0) {
        fflush(NULL);
        pid_t child = fork();
        if (child == 0) {
            run_all();
            printf("counters_known done\n");
            return 0;
        }
        int status = 0;
        waitpid(child, &status, 0);
        return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
    } else if (strcmp(mode, "attach") == 0) {
        run_attached();
        if (argc > 2)
            return run_exec(argv[0], strcmp(argv[2], "execl") == 0);
    } else {
        run_all();
    }
    printf("counters_known done\n");
    return 0;
}
