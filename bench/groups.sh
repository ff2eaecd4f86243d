#!/usr/bin/env bash
# Analysis of many experiments at once: a job of COUNT experiments (default
# 64) of EVENTS clock events each (default 1 million), listed in job.erg as
# an MPI job's ranks are, each written by analyzer/examples/synth_experiment.rs
# with its own pid and its own draw of events (--seed) over the same STACKS
# distinct stacks (default 5,000, 3 to 30 frames of a 400-function C
# program: runs of one program share their stacks), so symbolization is real.
#
# Each of COMMANDS (default `functions callers-callees lines calltree
# experiment_list`) is a whole `rdbx analyze -c CMD job.erg` run (read the
# group, load, symbolize, aggregate, print), and `compare ratio` of the
# first half of the ranks against the second (two groups of COUNT/2) with
# `functions` and a difference flame graph; each timed RUNS times (default
# 3). Figures: medians of wall time, CPU time (user + system) and peak RSS.
# Goal: every command at most 2 s and 2 GiB.
#
# WORK=dir keeps the experiments there and reuses them (writing 64 takes a
# minute); RDBX=path measures that rdbx binary instead of this tree's build.
#
# usage: bash bench/groups.sh [COUNT [EVENTS]]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/bench/lib.sh"
count=${1:-64}
events=${2:-1000000}
runs=${RUNS:-3}
stacks=${STACKS:-5000}
commands=${COMMANDS:-functions callers-callees lines calltree experiment_list}
bench_work

bench_build

job="$work/job-$count-$events-$stacks"
if [ ! -f "$job/job.erg" ]; then
    mkdir -p "$job"
    bench_manyfuncs "$job"
    echo "writing $count experiments of $events events..." >&2
    half=$((count / 2))
    for group in job first second; do
        echo "#analyzer experiment group" > "$job/$group.erg"
    done
    for ((rank = 0; rank < count; rank++)); do
        "$synth" --events "$events" --stacks "$stacks" --threads 2 \
            --pid $((10000 + rank)) --seed $((rank + 1)) \
            "$job/manyfuncs" "$job/job.$rank.er"
        echo "job.$rank.er" >> "$job/job.erg"
        if [ "$rank" -lt "$half" ]; then
            echo "job.$rank.er" >> "$job/first.erg"
        else
            echo "job.$rank.er" >> "$job/second.erg"
        fi
    done
fi

python3 - "$rdbx" "$runs" "$job" "$count" "$events" "$commands" <<'PY'
import sys
from timing import median_of
rdbx, runs, job, count, events = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
commands = sys.argv[6].split()

rows = []
for command in commands:
    wall, rss, cpu = median_of(runs, [rdbx, "analyze", "-c", command, "job.erg"], cwd=job)
    rows.append((f"-c {command} job.erg", wall, rss, cpu))
compare = [rdbx, "analyze", "--compare=ratio", "first.erg", "second.erg"]
for command in ["functions", "flamegraph diff.svg"]:
    wall, rss, cpu = median_of(runs, compare + ["-c", command], cwd=job)
    rows.append((f"--compare=ratio first second -c {command.split()[0]}", wall, rss, cpu))

print(f"{count} experiments of {events} clock events, median of {runs} runs")
print(f"{'rdbx analyze':<48} {'wall s':>8} {'CPU s':>8} {'peak MiB':>9}")
for name, wall, rss, cpu in rows:
    print(f"{name:<48} {wall:>8.3f} {cpu:>8.3f} {rss:>9.0f}")
PY
