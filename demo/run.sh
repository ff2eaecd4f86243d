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
cargo build --release -q -p analyzer --example expt_dump
rm -rf target/demo/demo.er target/demo/collect.er
echo
echo "== rdbx with collector enable, a sample recorded at phase_two's breakpoint"
(cd target/demo && ../release/rdbx --batch \
    -c 'collector enable' -c 'collector store filename demo.er' \
    -c 'stop in phase_two' -c 'run two-phases 0.5' \
    -c 'collector sample record second-phase' -c 'collector status' -c 'cont' \
    ./phases)
echo
echo "== rdbx collect: two threads, no debugger"
(cd target/demo && ../release/rdbx collect -o collect.er ./phases threads 0.5)
echo
echo "== what the experiments hold (samples, then exclusive and inclusive CPU seconds per function)"
target/release/examples/expt_dump target/demo/demo.er | grep -v '^Summary'
target/release/examples/expt_dump target/demo/collect.er | grep -v '^Summary\|^sample'
