#!/usr/bin/env bash
# Sync wait tracing cost on a program that never waits: ns per uncontended
# pthread_mutex_lock/unlock pair, untraced, under `rdbx collect -s all`
# (every wait would be recorded: the hook's fast path is what runs) and
# under `gprofng collect app -s all`, in one run.
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
rdbx_off=$(for i in $(seq "$runs"); do
    "$rdbx" collect -p off -A off -o "o$i.er" -d "$work" "$work/quiet" "$pairs" 2>/dev/null | per_pair
done | median)
rdbx_all=$(for i in $(seq "$runs"); do
    "$rdbx" collect -s all -p off -A off -o "r$i.er" -d "$work" "$work/quiet" "$pairs" 2>/dev/null | per_pair
done | median)
records=$(( $(stat -c %s "$work/r1.er/sync") ))

echo "program alone:              $base ns per lock/unlock pair (median of $runs)"
echo "rdbx collect, -s off:       $rdbx_off ns per pair (the hooks present, not recording)"
echo "rdbx collect -s all:        $rdbx_all ns per pair (sync file: $records bytes)"
if command -v gprofng >/dev/null; then
    gprofng_all=$(for i in $(seq "$runs"); do
        (cd "$work" && gprofng collect app -s all -p off -o "g$i.er" ./quiet "$pairs" 2>/dev/null) | per_pair
    done | median)
    echo "gprofng collect app -s all: $gprofng_all ns per pair"
    awk -v r="$rdbx_all" -v g="$gprofng_all" -v b="$base" \
        'BEGIN {printf "added per pair: rdbx %.1f ns, gprofng %.1f ns\n", r - b, g - b}'
fi
