#!/usr/bin/env bash
# Analyzer speed and memory on a large experiment, against gprofng's.
#
# rdbx: an experiment of EVENTS clock events (default 10 million) over
# STACKS distinct stacks (default 5,000) of 3 to MAX_DEPTH frames (default
# 30), shaped SHAPE (independent: every frame drawn at random, the default;
# nested: stacks along one wandering call path, sharing their outer frames),
# written by analyzer/examples/synth_experiment.rs through the experiment
# crate's writer. Its stacks are real return addresses of a 400-function C
# program, so symbolization (functions, lines) is real. Each of COMMANDS
# (default `functions callers-callees lines`) is a whole
# `rdbx analyze -c CMD EXPT` run (load + symbolize + aggregate + print), timed
# RUNS times (default 5); the figures are medians of wall time, CPU time
# (user + system: steadier than wall time on a shared machine) and peak RSS.
#
# RDBX=path measures that rdbx binary instead of this tree's release build
# (to compare builds on one experiment); WORK=dir keeps the experiment there
# and reuses it when it exists (it takes a while to write at 1M stacks).
#
# gprofng: `gprofng display text -functions` on a heap-tracing experiment of
# bench/programs/allocs.c making the same number of allocations (one event
# each; gprofng's clock profiling loses most ticks on this glibc, heap
# tracing does not). Skipped when gprofng is not installed or GPROFNG=0.
#
# usage: bash bench/analyzer.sh [EVENTS]      (RUNS=N to change the run count)
# e.g.   STACKS=1000000 MAX_DEPTH=200 SHAPE=nested \
#        COMMANDS="functions callers-callees calltree lines" bash bench/analyzer.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/bench/lib.sh"
events=${1:-10000000}
runs=${RUNS:-5}
stacks=${STACKS:-5000}
max_depth=${MAX_DEPTH:-30}
shape=${SHAPE:-independent}
commands=${COMMANDS:-functions callers-callees lines}
bench_work

bench_build

bench_manyfuncs "$work"
synth_er="$work/synth-$events-$stacks-$max_depth-$shape.er"
if [ ! -d "$synth_er" ]; then
    "$synth" --events "$events" --stacks "$stacks" --max-depth "$max_depth" --shape "$shape" \
        --threads 4 "$work/manyfuncs" "$synth_er"
fi

have_gprofng=0
if [ "${GPROFNG:-1}" = 1 ] && command -v gprofng >/dev/null; then
    have_gprofng=1
    if [ ! -d "$work/heap.er" ]; then
        gcc -O1 -g "$root/bench/programs/allocs.c" -o "$work/allocs"
        echo "recording gprofng heap experiment ($events allocations; takes about a minute per 10M)..." >&2
        gprofng collect app -p off -H on -O "$work/heap.er" "$work/allocs" "$events" >/dev/null 2>&1
    fi
fi

python3 - "$work" "$rdbx" "$runs" "$have_gprofng" "$events" "$synth_er" "$commands" <<'PY'
import os, sys
from timing import median_of
work, rdbx, runs, have_gprofng, events = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == "1", int(sys.argv[5])
synth, commands = sys.argv[6], sys.argv[7].split()

rows = []
for command in commands:
    wall, rss, cpu = median_of(runs, [rdbx, "analyze", "-c", command, synth])
    rows.append((f"rdbx analyze -c {command}", wall, rss, cpu))
if have_gprofng:
    wall, rss, cpu = median_of(runs, ["gprofng", "display", "text", "-functions", os.path.join(work, "heap.er")])
    rows.append(("gprofng display text -functions (heap)", wall, rss, cpu))

print(f"{os.path.basename(synth)}: {events} events, median of {runs} runs")
print(f"{'command':<42} {'wall s':>8} {'CPU s':>8} {'peak MiB':>9} {'vs gprofng':>10}")
gprofng_wall = rows[-1][1] if have_gprofng else None
for name, wall, rss, cpu in rows:
    ratio = f"{gprofng_wall / wall:.1f}x" if gprofng_wall and not name.startswith("gprofng") else ""
    print(f"{name:<42} {wall:>8.3f} {cpu:>8.3f} {rss:>9.0f} {ratio:>10}")
PY
