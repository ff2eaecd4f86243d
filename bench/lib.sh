# The setup bench/analyzer.sh, heap_analysis.sh, groups.sh and export.sh
# share, sourced by each after it sets `root` (the repository). Each stays
# runnable alone: `bash bench/NAME.sh`.

# Their Python parts time runs with bench/timing.py.
export PYTHONPATH="$root/bench${PYTHONPATH:+:$PYTHONPATH}"

# `work`: WORK when given (kept, and the experiments in it reused), else a
# fresh directory removed on exit.
bench_work() {
    if [ -n "${WORK:-}" ]; then
        work=$WORK
        mkdir -p "$work"
    else
        work=$(mktemp -d)
        trap 'rm -rf "$work"' EXIT
    fi
}

# Release builds of analyzer/examples/synth_experiment.rs (`synth`) and of
# rdbx (`rdbx`; RDBX=path measures that binary instead, to compare builds).
bench_build() {
    local target=${CARGO_TARGET_DIR:-$root/target}
    cargo build --release -q --manifest-path "$root/Cargo.toml" -p analyzer --example synth_experiment
    if [ -n "${RDBX:-}" ]; then
        rdbx=$RDBX
    else
        cargo build --release -q --manifest-path "$root/Cargo.toml" --bin rdbx
        rdbx="$target/release/rdbx"
    fi
    synth="$target/release/examples/synth_experiment"
}

# DIR/manyfuncs: 400 small C functions calling one another, a real symbol
# and line table for the synthetic stacks to be looked up in (built once).
bench_manyfuncs() {
    python3 "$root/bench/programs/manyfuncs.py" "$1/manyfuncs.c"
    [ -x "$1/manyfuncs" ] || gcc -O0 -g "$1/manyfuncs.c" -o "$1/manyfuncs"
}
