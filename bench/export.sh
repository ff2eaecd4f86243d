#!/usr/bin/env bash
# The Parquet export (docs/fleet.md) on a large experiment: time and size of
# `rdbx analyze --export parquet`, and DuckDB's time for the documented
# queries on the tables it writes.
#
# The experiment is bench/analyzer.sh's: EVENTS clock events (default 10
# million) over STACKS distinct stacks (default 5,000) of 3 to MAX_DEPTH
# frames (default 30), real return addresses of a 400-function C program,
# written by analyzer/examples/synth_experiment.rs. The export runs RUNS
# times (default 3) into a fresh directory each time; the figures are
# medians of wall time, CPU time (user + system) and peak RSS, beside
# `rdbx analyze -c functions` on the same experiment. Then DuckDB (its
# Python package, `pip install duckdb`) runs the setup and the `functions`
# and `callers` queries of docs/fleet.md, read from it, RUNS times each
# in one process (the files in the page cache, as after the export);
# median wall times.
#
# WORK=dir keeps the experiment there and reuses it (it takes a while to
# write); RDBX=path measures that rdbx binary instead of this tree's build.
#
# usage: bash bench/export.sh [EVENTS]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/bench/lib.sh"
events=${1:-10000000}
runs=${RUNS:-3}
stacks=${STACKS:-5000}
max_depth=${MAX_DEPTH:-30}
bench_work

bench_build
bench_manyfuncs "$work"
synth_er="$work/synth-$events-$stacks-$max_depth-independent.er"
if [ ! -d "$synth_er" ]; then
    "$synth" --events "$events" --stacks "$stacks" --max-depth "$max_depth" \
        --threads 4 "$work/manyfuncs" "$synth_er"
fi

python3 - "$work" "$rdbx" "$runs" "$synth_er" "$root/docs/fleet.md" <<'PY'
import os, re, shutil, statistics, sys, time
from timing import measure, median, median_of
work, rdbx, runs, synth, docs = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]

def bytes_under(path):
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)

fleet = os.path.join(work, "fleet")
exports = []
for _ in range(runs):
    shutil.rmtree(fleet, ignore_errors=True)
    exports.append(measure([rdbx, "analyze", "--export", "parquet", "fleet", synth], work))
analyze = median_of(runs, [rdbx, "analyze", "-c", "functions", synth], cwd=work)

print(f"{os.path.basename(synth)}: median of {runs} runs")
print(f"{'command':<40} {'wall s':>8} {'CPU s':>8} {'peak MiB':>9}")
for name, (wall, rss, cpu) in [("rdbx analyze --export parquet", median(exports)),
                               ("rdbx analyze -c functions", analyze)]:
    print(f"{name:<40} {wall:>8.3f} {cpu:>8.3f} {rss:>9.0f}")
print(f"experiment on disk: {bytes_under(synth) / 2**20:.1f} MiB")
for table in ("events", "stacks", "experiments"):
    print(f"{table + ' table:':<20} {bytes_under(os.path.join(fleet, table)) / 2**20:>8.2f} MiB")

try:
    import duckdb
except ImportError:
    sys.exit("DuckDB's Python package is not installed (pip install duckdb): no query times")
text = open(docs).read()
block = lambda name: re.search(r"```sql " + name + r"\n(.*?)```", text, re.S).group(1)
os.chdir(work)
con = duckdb.connect()
con.execute(block("duckdb"))
print(f"DuckDB {duckdb.__version__}, {con.execute('SELECT current_setting(' + repr('threads') + ')').fetchone()[0]} threads")
for query in ("functions", "callers"):
    times = []
    for _ in range(runs):
        start = time.monotonic()
        rows = con.execute(block(query)).fetchall()
        times.append(time.monotonic() - start)
    print(f"{'DuckDB ' + query + ' query':<40} {statistics.median(times):>8.3f} s ({len(rows)} rows)")
PY
