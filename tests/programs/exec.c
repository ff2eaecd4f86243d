/* Prints "before exec" and execs argv[1] with the remaining arguments
 * (tests pass the io program, or /bin/true).
 * Used by: process.rs (exec reported, breakpoint in the new program hit). */
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IONBF, 0);
    if (argc < 2) {
        printf("usage: exec PROGRAM [ARGS]\n");
        return 2;
    }
    printf("before exec\n");
    execv(argv[1], argv + 1); /* MARK:execv_call */
    perror("execv");
    return 1;
}
