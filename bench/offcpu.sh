#!/usr/bin/env bash
# Off-CPU profiling cost on a program that switches off the CPU about
# 100k times a second: two threads ping-ponging a byte through two pipes
# (bench/programs/pingpong.c, -O2; each thread blocks in read once per
# round trip). In one run: the program alone, under
# `rdbx collect --off-cpu on -p off` (every switch recorded with its
# stack; clock profiling off so only off-CPU recording differs), and
# under `perf record -e context-switches -c 1 -g` (perf's nearest
# equivalent without BPF: every switch sampled with its call chain, in
# the kernel, into a ring buffer perf drains). Median of RUNS runs
# (default 5) of: the program's wall time, its CPU time (user + system,
# getrusage of its own threads) and the CPU of the whole command (GNU
# time: the tool's own processes too).
#
# Every case runs pinned to one CPU (taskset -c CPU, default 1): the two
# threads hand the CPU to each other at each read, the switches are
# direct, and the figures do not depend on how the scheduler spreads
# them over a small, shared machine (unpinned, cross-CPU wakeups on a VM
# dominate and vary by a factor of 3 from run to run).
#
# Needs root (or perf_event_paranoid <= 1) for both tools.
#
# usage: bash bench/offcpu.sh [ROUNDS [WORK]]   (RUNS=N run count, CPU=N the CPU)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
rounds=${1:-100000}
work_steps=${2:-8000}
runs=${RUNS:-5}
cpu=${CPU:-1}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cargo build --release -q --manifest-path "$root/Cargo.toml" --bin rdbx
rdbx="$root/target/release/rdbx"
gcc -O2 -g -pthread -o "$work/pingpong" "$root/bench/programs/pingpong.c"

median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

# One run of "$@" (a command line running pingpong): "wall cpu total rate"
# from the program's line and GNU time's user+system of the whole tree.
measure() {
    /usr/bin/time -f "total %U %S" -o "$work/time" taskset -c "$cpu" "$@" >"$work/out" 2>/dev/null
    local wall cpu rate total
    wall=$(sed -n 's/^wall \([0-9.]*\) s.*/\1/p' "$work/out")
    cpu=$(sed -n 's/.* cpu \([0-9.]*\) s.*/\1/p' "$work/out")
    rate=$(sed -n 's/.* rate \([0-9]*\)\/s.*/\1/p' "$work/out")
    total=$(awk '/^total/ {print $2 + $3}' "$work/time")
    echo "$wall $cpu $total $rate"
}

# Runs a case RUNS times; prints the medians "wall cpu total rate".
case_medians() {
    local rows=()
    for i in $(seq "$runs"); do
        rows+=("$(measure "$@")")
        rm -rf "$work"/r.er "$work"/perf.data
    done
    for column in 1 2 3 4; do
        printf '%s\n' "${rows[@]}" | awk -v c="$column" '{print $c}' | median
    done | paste -sd' '
}

cd "$work"
read -r base_wall base_cpu base_total base_rate < <(case_medians ./pingpong "$rounds" "$work_steps")
read -r rdbx_wall rdbx_cpu rdbx_total _ < <(case_medians "$rdbx" collect --off-cpu on -p off -A off -o r.er ./pingpong "$rounds" "$work_steps")
read -r perf_wall perf_cpu perf_total _ < <(case_medians perf record -q -e context-switches -c 1 -g -o perf.data ./pingpong "$rounds" "$work_steps")

# An experiment to count what was recorded.
taskset -c "$cpu" "$rdbx" collect --off-cpu on -p off -A off -o r.er ./pingpong "$rounds" "$work_steps" >/dev/null 2>&1
events=$(sed -n 's/.* offcpu events=\([0-9]*\) .*/\1/p' r.er/log)

ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }
echo "pingpong $rounds round trips, work $work_steps, on CPU $cpu: ~$base_rate switches/s alone (median of $runs runs)"
printf '%-36s %8s %8s %10s\n' "" "wall s" "cpu s" "total cpu"
printf '%-36s %8s %8s %10s\n' "program alone" "$base_wall" "$base_cpu" "$base_total"
printf '%-36s %8s %8s %10s\n' "rdbx collect --off-cpu on -p off" "$rdbx_wall" "$rdbx_cpu" "$rdbx_total"
printf '%-36s %8s %8s %10s\n' "perf record -e context-switches -c 1 -g" "$perf_wall" "$perf_cpu" "$perf_total"
echo "rdbx: $events off-CPU records; wall x$(ratio "$rdbx_wall" "$base_wall"), program cpu x$(ratio "$rdbx_cpu" "$base_cpu"), total cpu x$(ratio "$rdbx_total" "$base_total")"
echo "perf: wall x$(ratio "$perf_wall" "$base_wall"), program cpu x$(ratio "$perf_cpu" "$base_cpu"), total cpu x$(ratio "$perf_total" "$base_total")"
echo "rdbx / perf: wall $(ratio "$rdbx_wall" "$perf_wall"), program cpu $(ratio "$rdbx_cpu" "$perf_cpu"), total cpu $(ratio "$rdbx_total" "$perf_total")"
