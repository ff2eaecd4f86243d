#!/usr/bin/env bash
# MPI tracing cost per call, on 2 ranks of Open MPI on this machine
# (bench/programs/mpi_pingpong.c, -O2): the time of a round trip of an
# 8-byte message (rank 0 MPI_Send then MPI_Recv, rank 1 the other way: 4
# traced calls on the critical path) and of an MPI_Iprobe that finds
# nothing (a traced call that never waits), untraced, under `rdbx collect
# -M off` (the collector preloaded, its MPI hooks forwarding only) and
# `rdbx collect -M on`, both as `mpirun -np 2 rdbx collect ... prog`.
#
# The program times ROUNDS round trips (default 300000) and CALLS probes
# (default 3 million), each the best of 3 rounds of a third, and prints its
# own figures (rank 0's). Each case runs RUNS times (default 5): the median.
# Under -M on every run must have recorded every call of both ranks (the
# log's mpi_totals line). Clock profiling is off in every case (-p off), so
# only the MPI hooks differ. The added cost per traced call is the probe's
# figure minus the untraced one, and the round trip's difference over 4;
# the probe's CPU time per call (the thread's) leaves out the time it
# waited for the disk (3 million calls a second of 72-byte records) or for
# a CPU.
# The cases take turns run after run (a change in the machine's load falls
# on all three); the ranks poll while they wait, so the round trip needs
# two idle cores to mean anything (see the load average printed).
#
# usage: bash bench/mpi.sh [ROUNDS [CALLS]]     (RUNS=N to change the run count)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
rounds=${1:-300000}
calls=${2:-3000000}
runs=${RUNS:-5}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
command -v mpirun >/dev/null || { echo "mpirun is not installed (Debian: openmpi-bin, libopenmpi-dev)" >&2; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

cargo build --release -q --manifest-path "$root/Cargo.toml" --bin rdbx
rdbx="$root/target/release/rdbx"
mpicc -O2 -g -o "$work/mpi_pingpong" "$root/bench/programs/mpi_pingpong.c"

# "... R ns per round trip, ... P ns per call, C cpu ns per call" -> "R P C"
figures() { sed -n 's/.* \([0-9.]*\) ns per round trip, .* \([0-9.]*\) ns per call, \([0-9.]*\) cpu ns.*/\1 \2 \3/p'; }
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
medians() {
    local lines
    lines=$(cat)
    echo "$(cut -d' ' -f1 <<<"$lines" | median) $(cut -d' ' -f2 <<<"$lines" | median) $(cut -d' ' -f3 <<<"$lines" | median)"
}
# The calls each rank makes: MPI_Init, the warm-up's 1000 round trips and
# 1000 probes, 6 barriers, the timed round trips and probes, MPI_Finalize.
per_rank=$((1 + 2 * 1000 + 1000 + 6 + 2 * (rounds / 3 * 3) + calls / 3 * 3 + 1))

# One run of a case: the program's "R P" line.
alone_run() { mpirun -np 2 "$work/mpi_pingpong" "$rounds" "$calls" | figures; }
collected_run() {
    local i=$1
    shift
    (cd "$work" && mpirun -np 2 "$rdbx" collect "$@" -p off -A off -o "r$i.er" \
        ./mpi_pingpong "$rounds" "$calls" 2>/dev/null) | figures
    if [ "$*" = "-M on" ]; then
        for rank in 0 1; do
            grep -q " mpi_totals calls=$per_rank unrecorded=0 untracked=0" "$work/r$i.$rank.er/log" ||
                echo "rank $rank did not record every call: $(grep mpi_totals "$work/r$i.$rank.er/log")" >"$work/unrecorded"
        done
    fi
    rm -rf "$work"/r"$i".*.er "$work"/r"$i".erg
}
# The cases take turns, run after run: a change of the machine's load
# falls on all three alike.
for i in $(seq "$runs"); do
    alone_run >>"$work/alone"
    collected_run "$i" -M off >>"$work/off"
    collected_run "$i" -M on >>"$work/on"
done
alone=$(medians <"$work/alone")

added() { awk -v a="$1" -v b="$2" -v per="$3" 'BEGIN {printf "%+.1f", (a - b) / per}'; }
show() {
    local label=$1 trip=$2 probe=$3 cpu=$4
    read -r base_trip base_probe base_cpu <<<"$alone"
    printf '%-22s round trip %8.1f ns (%s per call)   iprobe %7.1f ns (%s), cpu %7.1f ns (%s)\n' \
        "$label" "$trip" "$(added "$trip" "$base_trip" 4)" "$probe" "$(added "$probe" "$base_probe" 1)" \
        "$cpu" "$(added "$cpu" "$base_cpu" 1)"
}

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "2 ranks: $((rounds / 3 * 3)) round trips of 8 bytes, $((calls / 3 * 3)) MPI_Iprobe calls; medians of $runs runs"
read -r t p c <<<"$alone"
printf '%-22s round trip %8.1f ns                  iprobe %7.1f ns,         cpu %7.1f ns\n' \
    "program alone:" "$t" "$p" "$c"
read -r t p c <<<"$(medians <"$work/off")"
show "rdbx collect -M off:" "$t" "$p" "$c"
read -r t p c <<<"$(medians <"$work/on")"
if [ -e "$work/unrecorded" ]; then
    cat "$work/unrecorded" >&2
    exit 1
fi
show "rdbx collect -M on:" "$t" "$p" "$c"
