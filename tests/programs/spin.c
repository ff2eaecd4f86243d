/* Runs until interrupted: a busy loop the user stops with Ctrl-C.
 * Used by: signals.rs (Ctrl-C stops the running program and returns to the prompt). */
#include <stdio.h>

volatile unsigned long spins;

int main(void)
{
    setvbuf(stdout, NULL, _IONBF, 0);
    printf("spinning\n");
    for (;;)
        spins++; /* MARK:spin_loop */
    return 0;
}
