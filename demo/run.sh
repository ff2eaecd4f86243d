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
