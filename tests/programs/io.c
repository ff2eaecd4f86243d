/* Prints its arguments, then every line read from stdin, then a summary.
 * Used by: process.rs (run ARGS, run < in > out, rerun, exec target).
 * Output: "argc=N", "argv[i]=..." lines, "stdin: LINE" lines, "lines=N". */
#include <stdio.h>
#include <string.h>

void print_args(int argc, char **argv)
{
    printf("argc=%d\n", argc); /* MARK:print_args_body */
    for (int i = 1; i < argc; i++)
        printf("argv[%d]=%s\n", i, argv[i]);
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IONBF, 0);
    print_args(argc, argv);
    char line[256];
    int n = 0;
    while (fgets(line, sizeof line, stdin)) {
        line[strcspn(line, "\n")] = 0;
        printf("stdin: %s\n", line);
        n++;
    }
    printf("lines=%d\n", n);
    return 0;
}
