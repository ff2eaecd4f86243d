#!/usr/bin/env bash
# I/O tracing cost per call that does not wait: ns per pread of 64 bytes
# from a file in the page cache and per write of 64 bytes to /dev/null,
# untraced, under `rdbx collect -i off` (the hooks present, not recording),
# `rdbx collect -i on` and `gprofng collect app -i on`, in one run.
#
# The program (bench/programs/io_calls.c, -O2, without _FORTIFY_SOURCE so
# that every tool sees plain pread and write calls) times CALLS preads and
# CALLS writes (default 1 million each, best of 3 rounds of CALLS/3) and
# prints its own ns per call. Each case runs RUNS times (default 5): the
# median. Under -i on every run must have recorded every call (the log's
# io_totals line: the timed calls and the 6 of the set-up). Clock profiling
# is off in every case (-p off), so only the I/O hooks differ. The added
# cost is the case's figure minus the untraced one.
#
# usage: bash bench/io.sh [CALLS]     (RUNS=N to change the run count)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
calls=${1:-1000000}
runs=${RUNS:-5}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cargo build --release -q --manifest-path "$root/Cargo.toml" --bin rdbx
rdbx="$root/target/release/rdbx"
gcc -O2 -g -U_FORTIFY_SOURCE -D_FORTIFY_SOURCE=0 -o "$work/io_calls" "$root/bench/programs/io_calls.c"

# "N calls: pread P ns per call, write W ns per call" -> "P W"
figures() { sed -n 's/.*pread \([0-9.]*\) ns per call, write \([0-9.]*\) ns per call.*/\1 \2/p'; }
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
# Medians of the two columns of RUNS lines: "P W".
medians() {
    local lines
    lines=$(cat)
    echo "$(cut -d' ' -f1 <<<"$lines" | median) $(cut -d' ' -f2 <<<"$lines" | median)"
}

export TMPDIR="$work"
alone=$(for _ in $(seq "$runs"); do "$work/io_calls" "$calls" | figures; done | medians)
rdbx() {
    for i in $(seq "$runs"); do
        "$rdbx" collect "$@" -p off -A off -o "r$i.er" -d "$work" "$work/io_calls" "$calls" 2>/dev/null | figures
        if [ "$*" = "-i on" ] && ! grep -q " io_totals calls=$((2 * (calls / 3 * 3) + 6)) unrecorded=0" "$work/r$i.er/log"; then
            echo "rdbx did not record every call: $(grep io_totals "$work/r$i.er/log")" >"$work/unrecorded"
        fi
        rm -rf "$work/r$i.er"
    done | medians
}
gprofng_run() {
    for i in $(seq "$runs"); do
        (cd "$work" && gprofng collect app "$@" -p off -o "g$i.er" ./io_calls "$calls" 2>/dev/null) | figures
        rm -rf "$work/g$i.er"
    done | medians
}

added() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%+.1f", a - b}'; }
show() {
    local label=$1 pread=$2 write=$3
    read -r base_pread base_write <<<"$alone"
    printf '%-32s pread %7.1f ns (%s)   write %7.1f ns (%s)\n' "$label" "$pread" \
        "$(added "$pread" "$base_pread")" "$write" "$(added "$write" "$base_write")"
}

echo "$calls preads of 64 bytes and $calls writes of 64 bytes; ns per call, median of $runs runs"
read -r p w <<<"$alone"
printf '%-32s pread %7.1f ns           write %7.1f ns\n' "program alone:" "$p" "$w"
read -r p w <<<"$(rdbx -i off)"
show "rdbx collect -i off:" "$p" "$w"
read -r rp rw <<<"$(rdbx -i on)"
if [ -e "$work/unrecorded" ]; then
    cat "$work/unrecorded" >&2
    exit 1
fi
show "rdbx collect -i on:" "$rp" "$rw"
if command -v gprofng >/dev/null; then
    read -r gp gw <<<"$(gprofng_run -i on)"
    show "gprofng collect app -i on:" "$gp" "$gw"
    read -r base_pread base_write <<<"$alone"
    awk -v rp="$rp" -v rw="$rw" -v gp="$gp" -v gw="$gw" -v bp="$base_pread" -v bw="$base_write" \
        'BEGIN {printf "added cost rdbx/gprofng: pread %.3f, write %.3f\n", (rp - bp) / (gp - bp), (rw - bw) / (gw - bw)}'
fi
