#!/usr/bin/env bash
# Heap tracing cost: ns and disk bytes per event, rdbx against heaptrack and
# gprofng, in one run.
#
# The program (bench/programs/heap_churn.c, -O2 without frame pointers)
# makes PAIRS malloc/free pairs (default 2 million), each at the bottom of
# a call chain 10 to 30 frames deep, and prints its own ns per pair. Each
# tool runs it RUNS times (default 5); the figure is the median, minus the
# median of the untraced program, over the two events of a pair. Disk:
# the tool's data files over the events they hold (rdbx: the heap and
# stacks files; heaptrack: its compressed trace; gprofng: the experiment
# directory). gprofng, being slow, runs PAIRS/10 pairs.
#
# usage: bash bench/heap.sh [PAIRS]     (RUNS=N to change the run count)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
pairs=${1:-2000000}
runs=${RUNS:-5}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cargo build --release -q --manifest-path "$root/Cargo.toml" --bin rdbx
rdbx="$root/target/release/rdbx"
gcc -O2 -g -o "$work/churn" "$root/bench/programs/heap_churn.c"

# ns per pair as the program measured it
per_pair() { sed -n 's/.* pairs, \([0-9.]*\) ns per pair.*/\1/p'; }
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

base=$(for _ in $(seq "$runs"); do "$work/churn" "$pairs" | per_pair; done | median)

rdbx_ns=$(for i in $(seq "$runs"); do
    "$rdbx" collect -H on -p off -A off -o "r$i.er" -d "$work" "$work/churn" "$pairs" 2>/dev/null | per_pair
done | median)
events=$(sed -n 's/.* heap_totals events=\([0-9]*\).*/\1/p' "$work/r1.er/log")
walks=$(sed -n 's/.* walks=\([0-9]*\).*/\1/p' "$work/r1.er/log")
reused=$(sed -n 's/.* walks_reused=\([0-9]*\).*/\1/p' "$work/r1.er/log")
rdbx_bytes=$(( $(stat -c %s "$work/r1.er/heap") + $(stat -c %s "$work/r1.er/stacks") ))

if command -v heaptrack >/dev/null; then
    heaptrack_ns=$(for i in $(seq "$runs"); do
        heaptrack -o "$work/h$i" "$work/churn" "$pairs" 2>/dev/null | per_pair
    done | median)
    heaptrack_bytes=$(stat -c %s "$work"/h1.*)
else
    heaptrack_ns=""
fi

if command -v gprofng >/dev/null; then
    small=$((pairs / 10))
    gprofng_ns=$(for i in $(seq "$runs"); do
        (cd "$work" && gprofng collect app -H on -p off -o "g$i.er" ./churn "$small" 2>/dev/null) | per_pair
    done | median)
    gprofng_bytes=$(du -sb "$work/g1.er" | cut -f1)
else
    gprofng_ns=""
fi

per_event() { awk -v t="$1" -v b="$base" 'BEGIN {printf "%.1f", (t - b) / 2}'; }
echo "program alone: $base ns per malloc/free pair (median of $runs)"
echo "rdbx:      $(per_event "$rdbx_ns") ns/event, $(awk -v b="$rdbx_bytes" -v e="$events" 'BEGIN {printf "%.1f", b / e}') bytes/event ($events events; $reused of $walks stack walks reused remembered frames)"
if [ -n "$heaptrack_ns" ]; then
    echo "heaptrack: $(per_event "$heaptrack_ns") ns/event, $(awk -v b="$heaptrack_bytes" -v e="$events" 'BEGIN {printf "%.4f", b / e}') bytes/event"
    awk -v r="$rdbx_ns" -v h="$heaptrack_ns" -v b="$base" 'BEGIN {printf "rdbx/heaptrack: %.2f\n", (r - b) / (h - b)}'
fi
if [ -n "$gprofng_ns" ]; then
    echo "gprofng:   $(per_event "$gprofng_ns") ns/event, $(awk -v b="$gprofng_bytes" -v e="$((events / 10))" 'BEGIN {printf "%.1f", b / e}') bytes/event ($((pairs / 10)) pairs)"
    awk -v r="$rdbx_ns" -v g="$gprofng_ns" -v b="$base" 'BEGIN {printf "rdbx/gprofng: %.3f\n", (r - b) / (g - b)}'
fi
