/* Loaded by live_lock.c: its constructor runs with the loader's lock held
 * and never returns. */
#include <time.h>

__attribute__((constructor)) static void block_forever(void)
{
    struct timespec second = {1, 0};
    for (;;)
        nanosleep(&second, NULL);
}
