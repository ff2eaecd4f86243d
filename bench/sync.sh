#!/usr/bin/env bash
# Sync wait tracing cost on a program that never waits: ns per uncontended
# pthread_mutex_lock/unlock pair, untraced, under `rdbx collect -s on` and
# `-s all` (threshold 0: every wait would be recorded, the hook's fast path
# is what runs) and under `gprofng collect app -s on` and `-s all`, in one
# run. (gprofng's `-s all` records every call, blocked or not: it runs
# PAIRS/10 pairs.)
#
# The program (bench/programs/sync_uncontended.c, -O2) locks and unlocks
# one mutex PAIRS times (default 10 million) in 5 rounds and prints its
# best ns per pair. Each case runs RUNS times (default 5): the median.
# Clock profiling is off in every case (-p off), so only the sync hooks
# differ.
#
# usage: bash bench/sync.sh [PAIRS]     (RUNS=N to change the run count)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
pairs=${1:-10000000}
runs=${RUNS:-5}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cargo build --release -q --manifest-path "$root/Cargo.toml" --bin rdbx
rdbx="$root/target/release/rdbx"
gcc -O2 -g -pthread -o "$work/quiet" "$root/bench/programs/sync_uncontended.c"

per_pair() { sed -n 's/.* pairs, \([0-9.]*\) ns per pair.*/\1/p'; }
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

base=$(for _ in $(seq "$runs"); do "$work/quiet" "$pairs" | per_pair; done | median)
rdbx() {
    for i in $(seq "$runs"); do
        "$rdbx" collect "$@" -p off -A off -o "r$i.er" -d "$work" "$work/quiet" "$pairs" 2>/dev/null | per_pair
        rm -rf "$work/r$i.er"
    done | median
}
gprofng_run() {
    local n=$1
    shift
    for i in $(seq "$runs"); do
        (cd "$work" && gprofng collect app "$@" -p off -o "g$i.er" ./quiet "$n" 2>/dev/null) | per_pair
        rm -rf "$work/g$i.er"
    done | median
}

echo "program alone:               $base ns per lock/unlock pair (median of $runs)"
echo "rdbx collect (-s off):       $(rdbx -s off) ns per pair (the hooks present, not recording)"
echo "rdbx collect -s on:          $(rdbx -s on) ns per pair"
echo "rdbx collect -s all:         $(rdbx -s all) ns per pair"
if command -v gprofng >/dev/null; then
    echo "gprofng collect app -s on:   $(gprofng_run "$pairs" -s on) ns per pair"
    echo "gprofng collect app -s all:  $(gprofng_run $((pairs / 10)) -s all) ns per pair"
fi
