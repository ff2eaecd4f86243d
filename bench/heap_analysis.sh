#!/usr/bin/env bash
# Speed and memory of the analyzer's heap-tracing listings on a large
# heap-tracing experiment.
#
# The experiment: EVENTS heap events (default 10 million) on STACKS distinct
# stacks (default 1,000,000) of 3 to MAX_DEPTH frames (default 200), shaped
# SHAPE (nested, the default: stacks along one wandering call path, sharing
# their outer frames as a real program's do; independent: every frame drawn
# at random), written by `analyzer/examples/synth_experiment.rs --heap`
# through the experiment crate's writer: allocations of spread sizes (malloc,
# calloc, memalign, realloc, a few mmaps), about half of them freed later by
# any of 4 threads, the rest leaked. Its stacks are real return addresses of
# the 400-function C program of bench/analyzer.sh, so symbolization
# (functions, lines) is real.
#
# Each of COMMANDS (default `leaks allocs heap`) is a whole
# `rdbx analyze -c CMD EXPT` run (load + replay + symbolize + group +
# print), and each of JSON_COMMANDS (default `leaks`) a whole
# `rdbx analyze --json -c CMD EXPT` run, timed RUNS times (default 3); the
# figures are medians of wall time, CPU time (user + system: steadier than
# wall time on a shared machine) and peak RSS.
#
# LIMIT=N runs each as `rdbx analyze -c "limit N" -c CMD EXPT`: the first N
# groups of `leaks` and `allocs` are shown (`heap` has no groups). At a
# million stacks the whole listings are gigabytes of text (about 2.8 GB for
# `leaks`, 3.2 GB for `allocs` on the default experiment), and as long as
# `rdbx analyze` builds a listing's JSON beside its text, tens of gigabytes
# of JSON values: run them whole (LIMIT unset) only on smaller experiments.
#
# COLD=seconds waits that long before each run (bench/timing.py), so that
# each starts as a user's first analysis does, with memory the host took
# back (in a VM, the runs back to back reuse pages the one before freed
# and can rank two designs the other way round).
#
# RDBX=path measures that rdbx binary instead of this tree's release build
# (to compare builds on one experiment); WORK=dir keeps the experiment there
# and reuses it when it exists (it takes a minute or two to write);
# OUTPUTS=dir also keeps each command's output there (CMD.txt, CMD.json)
# to compare builds' outputs.
#
# usage: bash bench/heap_analysis.sh [EVENTS]
# e.g.   WORK=/tmp/heapbench LIMIT=100 bash bench/heap_analysis.sh
#        STACKS=5000 MAX_DEPTH=30 SHAPE=independent bash bench/heap_analysis.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/bench/lib.sh"
events=${1:-10000000}
runs=${RUNS:-3}
stacks=${STACKS:-1000000}
max_depth=${MAX_DEPTH:-200}
shape=${SHAPE:-nested}
commands=${COMMANDS:-leaks allocs heap}
json_commands=${JSON_COMMANDS:-leaks}
limit=${LIMIT:-}
bench_work

bench_build
bench_manyfuncs "$work"
synth_er="$work/heap-$events-$stacks-$max_depth-$shape.er"
if [ ! -d "$synth_er" ]; then
    "$synth" --heap --events "$events" --stacks "$stacks" --max-depth "$max_depth" \
        --shape "$shape" --threads 4 "$work/manyfuncs" "$synth_er.tmp"
    mv "$synth_er.tmp" "$synth_er"
fi

python3 - "$rdbx" "$runs" "$events" "$synth_er" "$commands" "$json_commands" "${OUTPUTS:-}" "$limit" <<'PY'
import os, sys
from timing import median_of
rdbx, runs, events, synth = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
commands, json_commands, outputs = sys.argv[5].split(), sys.argv[6].split(), sys.argv[7]
limit = ["-c", f"limit {sys.argv[8]}"] if sys.argv[8] else []
shown_limit = f"-c 'limit {sys.argv[8]}' " if sys.argv[8] else ""

if outputs:
    os.makedirs(outputs, exist_ok=True)
rows = []
for command in commands:
    keep = os.path.join(outputs, f"{command}.txt") if outputs else None
    wall, rss, cpu = median_of(runs, [rdbx, "analyze", *limit, "-c", command, synth], keep=keep)
    rows.append((f"rdbx analyze {shown_limit}-c {command}", wall, rss, cpu))
for command in json_commands:
    keep = os.path.join(outputs, f"{command}.json") if outputs else None
    wall, rss, cpu = median_of(runs, [rdbx, "analyze", "--json", *limit, "-c", command, synth], keep=keep)
    rows.append((f"rdbx analyze --json {shown_limit}-c {command}", wall, rss, cpu))

print(f"{os.path.basename(synth)}: {events} heap events, median of {runs} runs")
print(f"{'command':<52} {'wall s':>8} {'CPU s':>8} {'peak MiB':>9}")
for name, wall, rss, cpu in rows:
    print(f"{name:<52} {wall:>8.3f} {cpu:>8.3f} {rss:>9.0f}")
PY
