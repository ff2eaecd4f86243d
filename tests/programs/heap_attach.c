/* Heap tracing after attach: allocates a block, says "ready" and waits for
 * a line on stdin (rdbx attaches and enables meanwhile), then frees the
 * early block (allocated before tracing), leaks 7 x 200 bytes in
 * after_attach, makes and frees 500 x 48 bytes in churn, and runs 2 threads
 * that each make and free 100 x 16 bytes and keep their last block.
 * Prints "done". */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

void *volatile keep;

__attribute__((noinline)) void after_attach(void)
{
    for (int i = 0; i < 7; i++)
        keep = malloc(200);
}

__attribute__((noinline)) void churn(void)
{
    for (int i = 0; i < 500; i++) {
        void *p = malloc(48);
        keep = p;
        free(p);
    }
}

__attribute__((noinline)) void *work(void *arg)
{
    void *last = 0;
    for (int i = 0; i < 100; i++) {
        free(last);
        last = malloc(16);
    }
    return last;
}

int main(void)
{
    void *early = malloc(123);
    printf("ready\n");
    fflush(stdout);
    char line[16];
    if (!fgets(line, sizeof line, stdin))
        return 1;
    free(early);
    after_attach();
    churn();
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], 0, work, 0);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], 0);
    printf("done\n");
    return 0;
}
