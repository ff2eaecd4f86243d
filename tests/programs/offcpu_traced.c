/* Switches off the CPU for a few seconds, for a tracer to attach to in
 * the middle: main naps 2 ms, then passes a byte to a worker thread
 * through a pipe and waits for it to come back through another, 1500
 * times. Prints `pid PID` on stderr first, and one deterministic line on
 * stdout at the end (what the rounds passed back and forth). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define ROUNDS 1500
#define NAP_NS 2000000L

static int to_worker[2], to_main[2];

static void transfer(int from, int to) {
    char byte;
    ssize_t n;
    while ((n = read(from, &byte, 1)) < 0 && errno == EINTR) {
    }
    if (n != 1)
        abort();
    byte++;
    if (write(to, &byte, 1) != 1)
        abort();
}

static void *worker(void *unused) {
    (void)unused;
    for (int i = 0; i < ROUNDS; i++)
        transfer(to_worker[0], to_main[1]);
    return NULL;
}

int main(void) {
    if (pipe(to_worker) != 0 || pipe(to_main) != 0)
        return 1;
    fprintf(stderr, "pid %d\n", (int)getpid());
    pthread_t thread;
    pthread_create(&thread, NULL, worker, NULL);
    unsigned total = 0;
    for (int i = 0; i < ROUNDS; i++) {
        struct timespec ts = {0, NAP_NS};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
        }
        char byte = (char)(i % 100);
        if (write(to_worker[1], &byte, 1) != 1)
            return 1;
        while (read(to_main[0], &byte, 1) != 1) {
        }
        total += (unsigned char)byte;
    }
    pthread_join(thread, NULL);
    printf("offcpu_traced done: %d rounds, %u\n", ROUNDS, total);
    return 0;
}
