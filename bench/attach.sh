#!/usr/bin/env bash
# Collection on a running process: time from `collector enable` (the target
# stopped at a breakpoint, its four worker threads spinning... stopped) to the
# first clock event written by the collector it loads with an injected dlopen.
#
# Usage: bench/attach.sh [RUNS] [INTERVAL]
#   RUNS      runs, the median is reported (default 7)
#   INTERVAL  `collector profile timer` value (default 1m = 1 ms)
# Env:   RDBX=path/to/rdbx (default: target/release/rdbx, built first)
#
# How: a driver starts rdbx with commands on a pipe, stops the target in
# bench/programs/attach_spin.c's ready() (its four threads already spinning
# on the CPU), reads CLOCK_MONOTONIC, sends `collector enable` and `cont`, and
# after the run takes the earliest clock event timestamp of the experiment
# (CLOCK_MONOTONIC too). The figure includes loading the library (dlopen),
# starting the clocks of every thread, resuming, and the first profiling
# interval of CPU time. Goal: <= 100 ms.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
RUNS=${1:-7}
INTERVAL=${2:-1m}
if [[ -z "${RDBX:-}" ]]; then
    (cd "$ROOT" && cargo build --release --quiet --bin rdbx)
    RDBX=$ROOT/target/release/rdbx
fi
[[ -x "$RDBX" ]] || { echo "no rdbx at $RDBX" >&2; exit 1; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/rdbx-attach.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
gcc -O2 -g -pthread "$ROOT/bench/programs/attach_spin.c" -o "$WORK/attach_spin"

python3 - "$RDBX" "$WORK" "$RUNS" "$INTERVAL" <<'PY'
import os, statistics, struct, subprocess, sys, threading, time

rdbx, work, runs, interval = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
BLOCK, MAGIC, HEADER, EVENT = 65536, 0x31425852, 32, 24

def first_event_ns(profile):
    first = None
    with open(profile, "rb") as f:
        data = f.read()
    for at in range(0, len(data) - HEADER + 1, BLOCK):
        magic, kind, header, tid, committed = struct.unpack_from("<IHHII", data, at)
        if magic != MAGIC or kind != 1:
            continue
        for e in range(at + header, at + header + committed, EVENT):
            (ts,) = struct.unpack_from("<Q", data, e)
            first = ts if first is None else min(first, ts)
    return first

def one_run(n):
    name = f"a{n}.er"
    p = subprocess.Popen([rdbx, f"{work}/attach_spin", "0.3"], cwd=work, text=True,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    seen, ready = [], threading.Event()
    def reader():
        for line in p.stdout:
            seen.append(line)
            if "stopped in ready" in line:
                ready.set()
    threading.Thread(target=reader, daemon=True).start()
    def send(cmd):
        p.stdin.write(cmd + "\n"); p.stdin.flush()
    send(f"collector profile timer {interval}")
    send(f"collector store filename {name}")
    send("stop in ready")
    send("run")
    if not ready.wait(30):
        p.kill(); sys.exit("the target did not stop in ready():\n" + "".join(seen))
    time.sleep(0.05)  # let rdbx print its prompt and wait for input
    t0 = time.monotonic_ns()
    send("collector enable")
    send("cont")
    send("quit")
    p.wait(60)
    first = first_event_ns(os.path.join(work, name, "profile"))
    if first is None:
        sys.exit("no clock event in the experiment:\n" + "".join(seen))
    return (first - t0) / 1e6

times = [one_run(n) for n in range(runs)]
print("enable -> first clock event (ms): " + " ".join(f"{t:.1f}" for t in times))
print(f"median: {statistics.median(times):.1f} ms over {runs} runs (goal <= 100 ms)")
PY
