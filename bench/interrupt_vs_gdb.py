#!/usr/bin/env python3
"""Ctrl-C latency, rdbx against gdb in the same run: each debugger is
attached to tests/programs/ctrlc.c (5 threads, in a session of its own),
told to continue, and sent SIGINT N times at random moments; the time from
the SIGINT until every thread of the program is in a tracing stop is
measured by polling /proc. Prints the median and maximum of each and the
ratio of medians.

Usage: bench/interrupt_vs_gdb.py [N]   (default 50; needs target/release/rdbx)
"""
import os, random, signal, statistics, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
N = int(sys.argv[1]) if len(sys.argv) > 1 else 50


def states(pid):
    out = []
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            stat = open(f"/proc/{pid}/task/{tid}/stat").read()
        except OSError:
            continue
        out.append(stat.rsplit(")", 1)[1].split()[0])
    return out


def wait_for(pred, what, timeout=10):
    end = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > end:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.0001)


def measure(argv, pid, cont, rng):
    dbg = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, text=True, start_new_session=True)
    wait_for(lambda: states(pid) and all(s == "t" for s in states(pid)), "the attach")
    latencies = []
    for _ in range(N):
        dbg.stdin.write(cont + "\n")
        dbg.stdin.flush()
        wait_for(lambda: any(s != "t" for s in states(pid)), "the program to run")
        time.sleep(rng.uniform(0, 0.02))
        sent = time.monotonic()
        os.kill(dbg.pid, signal.SIGINT)
        wait_for(lambda: all(s == "t" for s in states(pid)), "every thread to stop")
        latencies.append(time.monotonic() - sent)
        time.sleep(0.01)
    dbg.stdin.write("detach\nquit\n")
    dbg.stdin.flush()
    dbg.wait(timeout=10)
    return latencies


def main():
    work = tempfile.mkdtemp()
    program = os.path.join(work, "ctrlc")
    subprocess.run(["gcc", "-g", "-O0", "-pthread", "ctrlc.c", "-o", program],
                   cwd=os.path.join(ROOT, "tests/programs"), check=True)
    target = subprocess.Popen([program], stdout=subprocess.PIPE, text=True, start_new_session=True)
    assert target.stdout.readline().strip() == "ready"
    rng = random.Random(42)
    rdbx = os.path.join(ROOT, "target/release/rdbx")
    results = {
        "rdbx": measure([rdbx, "-p", str(target.pid)], target.pid, "cont", rng),
        "gdb": measure(["gdb", "-q", "-nx", "-p", str(target.pid)], target.pid, "continue", rng),
    }
    target.kill()
    for name, values in results.items():
        print(f"{name:5} median {statistics.median(values) * 1000:7.2f} ms   "
              f"max {max(values) * 1000:7.2f} ms   ({len(values)} interrupts)")
    ratio = statistics.median(results["rdbx"]) / statistics.median(results["gdb"])
    print(f"rdbx/gdb median latency: {ratio:.3f}")


main()
