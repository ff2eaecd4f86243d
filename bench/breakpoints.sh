#!/usr/bin/env bash
# Breakpoint throughput: rdbx vs gdb on tests/programs/loop.c, whose function
# `hit` is called N times (default 20000).
#
# Usage: bench/breakpoints.sh [N] [RUNS]
#   N     number of calls to hit (default 20000)
#   RUNS  runs per measurement, the median is reported (default 5)
# Env:   RDBX=path/to/rdbx (default: target/release/rdbx if present, else target/debug/rdbx)
#
# Measures, for each debugger:
#   count: rdbx `stop in hit -count N` + run + cont  vs  gdb `break hit`, `ignore 1 N-1`, run, continue
#   when:  rdbx `when in hit { }` + run              vs  gdb `commands 1 / silent / continue / end`
# and prints seconds (median), hits/s and the rdbx/gdb time ratio (< 1: rdbx is faster).
set -euo pipefail

N=${1:-20000}
RUNS=${2:-5}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
if [[ -z "${RDBX:-}" ]]; then
    if [[ -x "$ROOT/target/release/rdbx" ]]; then RDBX=$ROOT/target/release/rdbx; else RDBX=$ROOT/target/debug/rdbx; fi
fi
[[ -x "$RDBX" ]] || { echo "no rdbx at $RDBX (cargo build --release first)" >&2; exit 1; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/rdbx-bench.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
# Compile from inside tests/programs so DWARF names the file loop.c.
(cd "$ROOT/tests/programs" && gcc -g -O0 loop.c -o "$WORK/loop")
PROG=$WORK/loop

cat > "$WORK/gdb-when.gdb" <<GDB
set pagination off
break hit
commands 1
silent
continue
end
run
GDB

# time_runs NAME CMD... : runs CMD RUNS times (output discarded), prints the median seconds.
time_runs() {
    local name=$1; shift
    local times=()
    for ((r = 0; r < RUNS; r++)); do
        local t0 t1
        t0=$(date +%s.%N)
        "$@" > "$WORK/out.$name" 2>&1 </dev/null || true
        t1=$(date +%s.%N)
        times+=("$(python3 -c "print($t1 - $t0)")")
    done
    python3 -c 'import statistics,sys; print("%.3f" % statistics.median(float(x) for x in sys.argv[1:]))' "${times[@]}"
}

check() { # check NAME NEEDLE: the run really reached the end of the program
    grep -q "$2" "$WORK/out.$1" || { echo "warning: $1 output lacks '$2':" >&2; tail -5 "$WORK/out.$1" >&2; }
}

report() { # report LABEL RDBX_SECONDS GDB_SECONDS
    python3 - "$N" "$@" <<'PY'
import sys
n, label, r, g = int(sys.argv[1]), sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
print(f"{label:6} rdbx {r:8.3f}s {n / r:10.0f} hits/s | gdb {g:8.3f}s {n / g:10.0f} hits/s | rdbx/gdb {r / g:6.3f}")
PY
}

echo "hit loop: N=$N, $RUNS runs each, medians; rdbx=$RDBX"

r=$(time_runs rdbx-count "$RDBX" --batch -c "stop in hit -count $N" -c run -c cont "$PROG" "$N")
check rdbx-count "sum="
g=$(time_runs gdb-count gdb -batch -nx -ex 'set debuginfod enabled off' -ex 'break hit' -ex "ignore 1 $((N - 1))" -ex run -ex continue --args "$PROG" "$N")
check gdb-count "sum="
report count "$r" "$g"

r=$(time_runs rdbx-when "$RDBX" --batch -c 'when in hit { }' -c run "$PROG" "$N")
check rdbx-when "sum="
g=$(time_runs gdb-when gdb -batch -nx -ex 'set debuginfod enabled off' -x "$WORK/gdb-when.gdb" --args "$PROG" "$N")
check gdb-when "sum="
report when "$r" "$g"
