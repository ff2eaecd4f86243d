#!/usr/bin/env bash
# The first write of fresh memory in small pages, in huge pages, and in huge
# pages just freed (bench/programs/first_touch.c), after the machine sat
# idle IDLE seconds (default 20): why the analyzer asks for no huge pages
# (analyzer/src/memory.rs). In a VM that hands its free memory back to the
# host, a fresh huge page is faulted in by the host 4 KiB at a time.
#
# usage: bash bench/first_touch.sh [MIB]     (default 512; IDLE=seconds)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cc -O2 -o "$work/first_touch" "$root/bench/programs/first_touch.c"
sleep "${IDLE:-20}"
"$work/first_touch" "${1:-512}"
