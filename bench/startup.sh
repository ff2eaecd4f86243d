#!/usr/bin/env bash
# Startup cost: loading a big program's symbols and setting `stop in main`,
# rdbx vs gdb.
#
# Usage: bench/startup.sh [BIG] [RUNS]
#   BIG   program to load (default: target/debug/rdbx, built first with cargo build)
#   RUNS  runs per measurement, the median is reported (default 5)
# Env:   RDBX=path/to/rdbx (default: target/release/rdbx if present, else target/debug/rdbx)
#
# Compares `rdbx --batch -c 'stop in main' BIG` with `gdb -batch -ex 'break main' BIG`
# and prints the medians and the rdbx/gdb ratio (< 1: rdbx is faster).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
RUNS=${2:-5}
if [[ -z "${1:-}" ]]; then
    (cd "$ROOT" && cargo build --quiet)
    BIG=$ROOT/target/debug/rdbx
else
    BIG=$1
fi
if [[ -z "${RDBX:-}" ]]; then
    if [[ -x "$ROOT/target/release/rdbx" ]]; then RDBX=$ROOT/target/release/rdbx; else RDBX=$ROOT/target/debug/rdbx; fi
fi
[[ -x "$RDBX" ]] || { echo "no rdbx at $RDBX" >&2; exit 1; }
[[ -e "$BIG" ]] || { echo "no program $BIG" >&2; exit 1; }

OUT=$(mktemp "${TMPDIR:-/tmp}/rdbx-startup.XXXXXX")
trap 'rm -f "$OUT"' EXIT

time_runs() {
    local times=()
    for ((r = 0; r < RUNS; r++)); do
        local t0 t1
        t0=$(date +%s.%N)
        "$@" > "$OUT" 2>&1 </dev/null || true
        t1=$(date +%s.%N)
        times+=("$(python3 -c "print($t1 - $t0)")")
    done
    python3 -c 'import statistics,sys; print("%.3f" % statistics.median(float(x) for x in sys.argv[1:]))' "${times[@]}"
}

echo "startup: $BIG ($(du -h "$BIG" | cut -f1)), $RUNS runs each, medians; rdbx=$RDBX"
r=$(time_runs "$RDBX" --batch -c 'stop in main' "$BIG")
grep -q "stop in main" "$OUT" || { echo "warning: rdbx output:" >&2; tail -3 "$OUT" >&2; }
g=$(time_runs gdb -batch -nx -ex 'set debuginfod enabled off' -ex 'break main' "$BIG")
grep -q "Breakpoint 1 at" "$OUT" || { echo "warning: gdb output:" >&2; tail -3 "$OUT" >&2; }
python3 - "$r" "$g" <<'PY'
import sys
r, g = float(sys.argv[1]), float(sys.argv[2])
print(f"rdbx {r:.3f}s | gdb {g:.3f}s | rdbx/gdb {r / g:.3f}")
PY
