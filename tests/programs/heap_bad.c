/* Bad uses of the heap, each as the program does it: `double` frees a
 * block twice (glibc aborts the program), `limit` makes many events for a
 * small data limit, `sleep` allocates then sleeps (to be killed). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void *volatile keep;

int main(int argc, char **argv)
{
    const char *what = argc > 1 ? argv[1] : "";
    if (strcmp(what, "double") == 0) {
        void *p = malloc(40);
        keep = p;
        free(p);
        free(p);
    } else if (strcmp(what, "limit") == 0) {
        for (int i = 0; i < 400000; i++) {
            void *p = malloc(24);
            keep = p;
            free(p);
        }
    } else if (strcmp(what, "sleep") == 0) {
        for (int i = 0; i < 1000; i++)
            keep = malloc(64);
        printf("allocated\n");
        fflush(stdout);
        sleep(60);
    }
    printf("done\n");
    return 0;
}
