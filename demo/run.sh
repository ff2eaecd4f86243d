#!/usr/bin/env bash
# Builds rdbx and the demo program, then runs a scripted rdbx session on it.
# Usage: bash demo/run.sh
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --workspace --release
mkdir -p target/demo
(cd demo && gcc -g -O0 -o ../target/demo/demo demo.c)
echo "== rdbx -x demo/session.rdbx --batch target/demo/demo"
target/release/rdbx -x demo/session.rdbx --batch target/demo/demo

# The collector: profile a two-phase program under rdbx, recording a sample
# at a breakpoint between the phases, then show what the experiment holds.
gcc -g -O2 -pthread -I collector-lib/include -o target/demo/phases tests/programs/phases.c
rm -rf target/demo/demo.er target/demo/collect.er
echo
echo "== rdbx with collector enable, a sample recorded at phase_two's breakpoint"
(cd target/demo && ../release/rdbx --batch \
    -c 'collector sample manual' -c 'collector enable' -c 'collector store filename demo.er' \
    -c 'stop in phase_two' -c 'run two-phases 0.5' \
    -c 'analyze functions' \
    -c 'collector sample record second-phase' -c 'collector status' -c 'cont' \
    -c 'analyze sample_list' \
    ./phases)
echo
echo "== rdbx collect: two threads, no debugger"
(cd target/demo && ../release/rdbx collect -o collect.er ./phases threads 0.5)
echo
echo "== rdbx analyze: the second phase only (samples after the one recorded at the breakpoint)"
target/release/rdbx analyze target/demo/demo.er -c 'sample_select 4-99' -c functions
echo
echo "== rdbx analyze: the threaded run, callers and callees of worker_b, the call tree"
target/release/rdbx analyze target/demo/collect.er -c 'csingle worker_b' -c 'limit 8' -c calltree
