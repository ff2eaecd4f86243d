#!/usr/bin/env bash
# Collector overhead, recorded CPU and disk use, side by side with gprofng and perf.
#
# Target: bench/programs/deep_threads.c at -O2 (two threads, stacks about 30
# frames deep, fixed work). Each configuration runs RUNS times (default 5),
# interleaved; the figure is the median CPU time (user+sys of the whole
# process tree, from getrusage(RUSAGE_CHILDREN)) and its ratio to the run
# without collection. "recorded" is the CPU time the tool's profile holds.
#
# usage: bash bench/collector.sh [ROUNDS]     (RUNS=N to change the run count)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
rounds=${1:-1500}
runs=${RUNS:-5}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cargo build --release -q --manifest-path "$root/Cargo.toml" --bin rdbx
cargo build --release -q --manifest-path "$root/Cargo.toml" -p analyzer --example expt_stats
rdbx="$root/target/release/rdbx"
stats="$root/target/release/examples/expt_stats"
gcc -O2 -g -pthread "$root/bench/programs/deep_threads.c" -o "$work/deep"

python3 - "$work" "$rdbx" "$stats" "$rounds" "$runs" <<'PY'
import os, re, resource, shutil, statistics, subprocess, sys
work, rdbx, stats, rounds, runs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
target = [os.path.join(work, "deep"), rounds]
have_gprofng = shutil.which("gprofng") is not None
have_perf = shutil.which("perf") is not None

def configs():
    yield "none", lambda d: target
    yield "rdbx collect -p on (10 ms)", lambda d: [rdbx, "collect", "-d", d, "-o", "r.er", "-p", "on"] + target
    yield "rdbx collect -p hi (1 ms)", lambda d: [rdbx, "collect", "-d", d, "-o", "r.er", "-p", "hi"] + target
    if have_gprofng:
        yield "gprofng collect app -p on", lambda d: ["gprofng", "collect", "app", "-O", f"{d}/g.er", "-p", "on"] + target
        yield "gprofng collect app -p hi", lambda d: ["gprofng", "collect", "app", "-O", f"{d}/g.er", "-p", "hi"] + target
    if have_perf:
        yield "perf record -e cpu-clock -g (4 kHz)", lambda d: ["perf", "record", "-q", "-e", "cpu-clock", "-g", "-o", f"{d}/perf.data"] + target
        yield "perf record -e cpu-clock -g -F 100", lambda d: ["perf", "record", "-q", "-e", "cpu-clock", "-F", "100", "-g", "-o", f"{d}/perf.data"] + target

def cpu_of(argv, d):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, cwd=d)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)

def recorded(name, d):
    if name.startswith("rdbx"):
        out = subprocess.run([stats, f"{d}/r.er"], capture_output=True, text=True).stdout
        fields = dict(kv.split("=") for kv in out.split())
        return float(fields["cpu_s"]), fields
    if name.startswith("gprofng"):
        out = subprocess.run(["gprofng", "display", "text", "-functions", f"{d}/g.er"], capture_output=True, text=True).stdout
        m = re.search(r"^\s*([\d.]+)\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+<Total>", out, re.M)
        return (float(m.group(1)) if m else 0.0), {}
    if name.startswith("perf"):
        out = subprocess.run(["perf", "report", "-i", f"{d}/perf.data", "--stdio", "--header-only"], capture_output=True, text=True).stdout
        out2 = subprocess.run(["perf", "script", "-i", f"{d}/perf.data", "-F", "period"], capture_output=True, text=True).stdout
        total = sum(int(x) for x in out2.split() if x.isdigit())
        return total / 1e9, {}
    return None, {}

names = [n for n, _ in configs()]
cpu = {n: [] for n in names}
rec = {n: [] for n in names}
extra = {n: [] for n in names}
for i in range(runs):
    for name, make in configs():
        d = os.path.join(work, f"run{i}-{names.index(name)}")
        os.makedirs(d)
        cpu[name].append(cpu_of(make(d), d))
        r, fields = recorded(name, d)
        if r is not None:
            rec[name].append(r)
        if fields:
            extra[name].append(fields)
        shutil.rmtree(d)

base = statistics.median(cpu["none"])
print(f"target: deep_threads {rounds} (2 threads, ~30 frames), {runs} runs each, medians")
print(f"{'configuration':40} {'CPU s':>7} {'ratio':>7} {'recorded s':>11} {'recorded/actual':>16}")
for name in names:
    c = statistics.median(cpu[name])
    line = f"{name:40} {c:7.3f} {c / base:7.3f}"
    if rec[name]:
        r = statistics.median(rec[name])
        line += f" {r:11.3f} {r / base:16.3f}"
    print(line)
for name in names:
    if extra[name]:
        ev = statistics.median(int(f["events"]) for f in extra[name])
        rb = statistics.median(int(f["record_bytes"]) / max(1, int(f["events"])) for f in extra[name])
        db = statistics.median(int(f["disk_bytes"]) / max(1, int(f["events"])) for f in extra[name])
        print(f"{name}: {ev:.0f} events, {rb:.1f} record bytes/event, {db:.1f} disk bytes/event")
PY
