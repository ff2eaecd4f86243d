#!/usr/bin/env bash
# Counter overflow profiling cost, against perf, on a program whose page
# faults are known by construction (bench/programs/faults.c, -O2: ROUNDS
# rounds of PAGES fresh anonymous pages, one minor fault each, 15 calls
# deep). In one run, median of RUNS runs (default 5) of the program's own
# wall and CPU time (user + system) and the CPU of the whole command (GNU
# time: the tool's own processes too):
#   - the program alone;
#   - `rdbx collect -p off -h page-faults` (the default interval, 100) and
#     `perf record -e page-faults -c 100 -g`, the same interval;
#   - `rdbx collect -p off -h page-faults,1` and `perf record -e page-faults
#     -c 1 -g`: every fault;
#   - `rdbx collect -p on -h page-faults,context-switches` (clock profiling
#     and two software counters at their default intervals) and `perf
#     record -e cpu-clock/period=10000000/ -e page-faults/period=100/ -e
#     context-switches/period=100/ -g` (each event's period in the event:
#     perf's -c is one period for all).
# Every rdbx case must have recorded the faults the program counted
# (counts summed over the `counters` file, within 2%).
#
# Every case runs pinned to one CPU (taskset -c CPU, default 1), so the
# figures do not depend on how the scheduler spreads a shared machine.
#
# usage: bash bench/counters.sh [ROUNDS [PAGES]]   (RUNS=N run count, CPU=N the CPU)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
rounds=${1:-400}
pages=${2:-1024}
runs=${RUNS:-5}
cpu=${CPU:-1}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cargo build --release -q --manifest-path "$root/Cargo.toml" --bin rdbx
rdbx="$root/target/release/rdbx"
gcc -O2 -g -o "$work/faults" "$root/bench/programs/faults.c"

median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

# One run of "$@": "wall cpu total faults".
measure() {
    /usr/bin/time -f "total %U %S" -o "$work/time" taskset -c "$cpu" "$@" >"$work/out" 2>/dev/null
    local wall cpu faults total
    wall=$(sed -n 's/^wall \([0-9.]*\) s.*/\1/p' "$work/out")
    cpu=$(sed -n 's/.* cpu \([0-9.]*\) s.*/\1/p' "$work/out")
    faults=$(sed -n 's/.* faults \([0-9]*\).*/\1/p' "$work/out")
    total=$(awk '/^total/ {print $2 + $3}' "$work/time")
    echo "$wall $cpu $total $faults"
}

# Runs a case RUNS times; prints the medians "wall cpu total".
case_medians() {
    local rows=()
    for _ in $(seq "$runs"); do
        rows+=("$(measure "$@")")
        rm -rf "$work"/r.er "$work"/perf.data
    done
    for column in 1 2 3; do
        printf '%s\n' "${rows[@]}" | awk -v c="$column" '{print $c}' | median
    done | paste -sd' '
}

cd "$work"
args=("$rounds" "$pages")
declare -A result
run_case() {
    local label=$1
    shift
    result[$label]=$(case_medians "$@")
}
run_case alone ./faults "${args[@]}"
run_case "rdbx -h page-faults" "$rdbx" collect -p off -A off -h page-faults -o r.er ./faults "${args[@]}"
run_case "perf -c 100" perf record -q -e page-faults -c 100 -g -o perf.data ./faults "${args[@]}"
run_case "rdbx -h page-faults,1" "$rdbx" collect -p off -A off -h page-faults,1 -o r.er ./faults "${args[@]}"
run_case "perf -c 1" perf record -q -e page-faults -c 1 -g -o perf.data ./faults "${args[@]}"
run_case "rdbx clock + 2 counters" "$rdbx" collect -p on -A off -h page-faults,context-switches -o r.er ./faults "${args[@]}"
run_case "perf clock + 2 counters" perf record -q -e cpu-clock/period=10000000/ -e page-faults/period=100/ -e context-switches/period=100/ -g -o perf.data ./faults "${args[@]}"

# What one rdbx run recorded, against what the program counted.
taskset -c "$cpu" "$rdbx" collect -p off -A off -h page-faults,1 -o r.er ./faults "${args[@]}" >"$work/out" 2>/dev/null
counted=$(sed -n 's/.* faults \([0-9]*\).*/\1/p' "$work/out")
recorded=$(grep -o ' counter_totals .*' r.er/log || true)

ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }
read -r base_wall base_cpu base_total <<<"${result[alone]}"
echo "faults: $rounds rounds of $pages pages on CPU $cpu, median of $runs runs"
printf '%-28s %8s %8s %10s %18s\n' "" "wall s" "cpu s" "total cpu" "x alone (cpu,total)"
for label in alone "rdbx -h page-faults" "perf -c 100" "rdbx -h page-faults,1" "perf -c 1" "rdbx clock + 2 counters" "perf clock + 2 counters"; do
    read -r wall cpu total <<<"${result[$label]}"
    printf '%-28s %8s %8s %10s %9s,%s\n' "$label" "$wall" "$cpu" "$total" "$(ratio "$cpu" "$base_cpu")" "$(ratio "$total" "$base_total")"
done
added() { awk -v a="$1" -v b="$2" -v base="$3" 'BEGIN {printf "%.2f", (a - base) / (b - base)}'; }
for pair in "rdbx -h page-faults|perf -c 100" "rdbx -h page-faults,1|perf -c 1" "rdbx clock + 2 counters|perf clock + 2 counters"; do
    read -r _ rcpu rtotal <<<"${result[${pair%%|*}]}"
    read -r _ pcpu ptotal <<<"${result[${pair##*|}]}"
    echo "added cost ${pair%%|*} / ${pair##*|}: program cpu $(added "$rcpu" "$pcpu" "$base_cpu"), total cpu $(added "$rtotal" "$ptotal" "$base_total")"
done
echo "page faults the program counted: $counted; rdbx's log: ${recorded:-no counter_totals line}"
