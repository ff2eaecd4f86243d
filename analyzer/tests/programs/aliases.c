/* One piece of code under three names: its own, a strong alias and a weak
 * alias. Compiled without -g, so only the ELF symbols name it. */
int compute(int n) { return n * 3 + 1; }
int alias_compute(int n) __attribute__((alias("compute")));
int weak_compute(int n) __attribute__((weak, alias("compute")));
int main(int argc, char **argv)
{
    (void)argv;
    return weak_compute(argc) + alias_compute(argc);
}
