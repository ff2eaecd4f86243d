/* How fast fresh anonymous memory is first written, in huge pages and in
 * small ones: the cost the analyzer pays for every page of its tables.
 *
 * For each of small pages, huge pages (MADV_HUGEPAGE) and huge pages again
 * in the same place just freed: maps MIB MiB, writes a byte per 4 KiB
 * page, prints the seconds and GB/s, unmaps. Run it after the machine sat
 * idle for a while (bench/first_touch.sh sleeps first): in a VM whose guest
 * hands free memory back to the host, the first touch of a huge page then
 * waits for the host to fault in its 2 MiB.
 *
 * usage: first_touch MIB */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static int touch(size_t bytes, int advice, const char *what)
{
    char *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    madvise(p, bytes, advice);
    double start = now();
    for (size_t at = 0; at < bytes; at += 4096)
        p[at] = 1;
    double seconds = now() - start;
    printf("%-22s %6zu MiB  %.3f s  %6.2f GB/s\n", what, bytes >> 20, seconds,
           bytes / seconds / 1e9);
    munmap(p, bytes);
    return 0;
}

int main(int argc, char **argv)
{
    size_t bytes = (size_t)atol(argc > 1 ? argv[1] : "512") << 20;
    return touch(bytes, MADV_NOHUGEPAGE, "small pages")
        || touch(bytes, MADV_HUGEPAGE, "huge pages")
        || touch(bytes, MADV_HUGEPAGE, "huge pages, reused");
}
