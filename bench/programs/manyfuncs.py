"""Writes manyfuncs.c: 400 small functions calling one another, a real
symbol and line table for the synthetic experiments of bench/analyzer.sh
and bench/heap_analysis.sh to symbolize their stacks in.

usage: python3 bench/programs/manyfuncs.py OUT.c
"""
import sys

n = 400
with open(sys.argv[1], "w") as f:
    f.write("#include <stdio.h>\nvolatile long sink;\n")
    for i in range(n):
        f.write(f"long f{i}(long x);\n")
    for i in range(n):
        f.write(f"long f{i}(long x)\n{{\n    long y = x * {i + 3};\n    if (x > 0)\n"
                f"        y += f{(i * 7 + 1) % n}(x - 1);\n    sink += y;\n    return y ^ {i};\n}}\n")
    f.write("int main(int argc, char **argv)\n{\n    (void)argv;\n"
            "    printf(\"%ld\\n\", f0(argc));\n    return 0;\n}\n")
