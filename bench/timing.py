"""Whole runs timed for the benchmark scripts (bench/lib.sh puts this on
their PYTHONPATH): wall time, CPU time (user + system: steadier than wall
time on a shared machine) and peak RSS, and their medians over runs."""
import os
import statistics
import subprocess
import sys
import time


def measure(argv, cwd=None, keep=None):
    """Wall seconds, peak RSS (MiB) and CPU seconds of one run of `argv`;
    its output kept in the file `keep` when given, else discarded. A
    failed run ends the benchmark with its error output."""
    out = open(keep, "wb") if keep else subprocess.DEVNULL
    start = time.monotonic()
    proc = subprocess.Popen(argv, cwd=cwd, stdout=out, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - start
    err = proc.stderr.read().decode()
    if keep:
        out.close()
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{argv} failed: {err}")
    return wall, usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime


def median(results):
    """The medians of (wall, RSS, CPU) figures."""
    return tuple(statistics.median(r[i] for r in results) for i in range(3))


def median_of(runs, argv, cwd=None, keep=None):
    """`argv` measured `runs` times (the first run's output kept in
    `keep`): the medians. With COLD=seconds in the environment, each run
    waits that long first, so that it starts as a user's first run does:
    in a VM the memory the runs before freed has gone back to the host by
    then, and a fresh page costs the host's fault too (measured this way,
    not back to back, since it can change which design is faster)."""
    cold = float(os.environ.get("COLD", "0"))
    results = []
    for i in range(runs):
        if cold > 0:
            time.sleep(cold)
        results.append(measure(argv, cwd, keep if i == 0 else None))
    return median(results)
