#!/usr/bin/env python3
"""Per-event CPU cost of profiling-clock building blocks at 1 kHz per thread.

Builds bench/programs/clock_cost.c and syscall_cost.c, runs every
configuration ROUNDS times interleaved (the VM is noisy), and prints the
medians: CPU s (user+sys of the process), events, overhead against `none`,
and microseconds of CPU per event = (CPU - CPU none) / events.

usage: python3 bench/clock_cost.py [WORK_ROUNDS [ROUNDS [CONFIGS]]]
  CONFIGS: comma-separated "MODE[ HANDLER]" (see clock_cost.c)
"""
import os, statistics, subprocess, sys, tempfile

here = os.path.dirname(os.path.abspath(__file__))
work_rounds = sys.argv[1] if len(sys.argv) > 1 else "1000"
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 9
default = ("none,perf_count,perf_sig_refresh,perf_sig_enable,perf_sig_refresh1,task_sig,"
           "sigtrap,sigtrap full,perf_sig_refresh full,posix_timer,itimer_prof")
configs = [c.split() for c in (sys.argv[3] if len(sys.argv) > 3 else default).split(",")]

tmp = tempfile.mkdtemp()
exe = os.path.join(tmp, "clock_cost")
subprocess.run(["gcc", "-O2", "-pthread", os.path.join(here, "programs/clock_cost.c"), "-o", exe], check=True)
calls = os.path.join(tmp, "syscall_cost")
subprocess.run(["gcc", "-O2", os.path.join(here, "programs/syscall_cost.c"), "-o", calls], check=True)

results = {" ".join(c): [] for c in configs}
for _ in range(rounds):
    for c in configs:
        handler = c[1] if len(c) > 1 else "empty"
        out = subprocess.run([exe, c[0], handler, work_rounds], capture_output=True, text=True, check=True).stdout.split()
        results[" ".join(c)].append((float(out[2]), float(out[3]), int(out[5])))

base = statistics.median(r[0] for r in results[" ".join(configs[0])])
print(f"{work_rounds} work rounds per thread, {rounds} interleaved runs each, medians")
print(f"{'config':26} {'CPU s':>7} {'sys s':>6} {'events':>7} {'overhead':>9} {'us/event':>9}")
for name, runs in results.items():
    cpu = statistics.median(r[0] for r in runs)
    sys_s = statistics.median(r[1] for r in runs)
    events = statistics.median(r[2] for r in runs)
    per = (cpu - base) / events * 1e6 if events else 0.0
    print(f"{name:26} {cpu:7.3f} {sys_s:6.3f} {events:7.0f} {100 * (cpu / base - 1):8.2f}% {per:9.1f}")
print()
print(subprocess.run([calls], capture_output=True, text=True).stdout)
