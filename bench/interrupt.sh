#!/usr/bin/env bash
# Ctrl-C latency: how long from SIGINT to rdbx until every thread of the
# debugged program is stopped. Runs the integration test tests/interrupt.rs
# (200 interrupts of an attached 5-thread program in a session of its own,
# during cont, next over a blocking call, step up, collector enable, and
# with the collector's SIGPROF stops every millisecond) with a release
# build, RUNS times, and prints each run's median and maximum.
#
# Usage: bench/interrupt.sh [RUNS]   (default 3)
set -euo pipefail
RUNS=${1:-3}
cd "$(dirname "$0")/.."
cargo test --release --test interrupt --no-run -q 2>/dev/null
for ((r = 1; r <= RUNS; r++)); do
    cargo test --release -q --test interrupt -- --nocapture 2>&1 | grep "ctrl-c latency"
done
