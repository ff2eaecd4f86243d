//! step / next / finish / stepi: each stop compared with gdb doing the same
//! sequence from the same breakpoint, at -O0 and -O2; stepping over a call
//! into a function without debug info.
mod common;
use common::*;

/// Runs `setup` (rdbx and gdb spellings), `run`, then `steps` in both
/// debuggers and compares (function, line) after each command.
fn compare_steps(
    p: &std::path::Path,
    rdbx_setup: &[&str],
    gdb_setup: &[&str],
    steps: &[&str],
) -> Outcome {
    let mut cmds: Vec<&str> = rdbx_setup.to_vec();
    cmds.push("run");
    cmds.extend_from_slice(steps);
    let o = Rdbx::batch().cmds(&cmds).prog(p, &[]).run();
    o.assert_stderr_well_formed();

    let mut g: Vec<&str> = gdb_setup.to_vec();
    g.push("run");
    g.push(GDB_WHERE_AM_I);
    for s in steps {
        g.push(s);
        g.push(GDB_WHERE_AM_I);
    }
    let gout = gdb(p, &[], &g);
    let expected = parse_gdb_markers(&gout);
    assert_eq!(expected.len(), steps.len() + 1, "gdb transcript:\n{gout}");
    assert!(
        !gout.contains("not meaningful"),
        "test sequence finishes out of main:\n{gout}"
    );

    let got: Vec<(String, u32)> = o
        .stops()
        .into_iter()
        .map(|s| (s.func, s.line.unwrap_or(0)))
        .collect();
    assert_eq!(
        got,
        expected,
        "stops after [run, {}] differ from gdb's\ngdb:\n{gout}\n{}",
        steps.join(", "),
        o.transcript()
    );
    o
}

const SEQUENCE: &[&str] = &[
    "next", "next", "next", "step", "next", "finish", "next", "step", "step", "finish", "finish",
    "next", "next", "next",
];

#[test]
fn step_next_finish_match_gdb_o0() {
    let o = compare_steps(
        &prog("steps-O0"),
        &["stop in main"],
        &["break main"],
        SEQUENCE,
    );
    // finish prints the returned value before the stop line.
    o.assert_out_contains("add returns 3");
    o.assert_out_contains("add returns 6");
    o.assert_out_contains("twice returns 6");
    // Each stop is followed by its source line.
    let first = line_of("steps.c", "main_first");
    assert!(
        o.stdout
            .contains(&format!("{first:>6}\t{}", source_line("steps.c", first))),
        "{}",
        o.transcript()
    );
}

#[test]
fn step_next_finish_match_gdb_o2() {
    // At -O2 `x = 1; acc = x;` share code with line 26, so one fewer `next` is needed.
    const O2_SEQUENCE: &[&str] = &[
        "next", "next", "step", "next", "finish", "next", "step", "step", "finish", "finish",
        "next", "next", "next",
    ];
    compare_steps(
        &prog("steps-O2"),
        &["stop in main"],
        &["break main"],
        O2_SEQUENCE,
    );
}

#[test]
fn next_stops_at_breakpoint_inside_called_function() {
    compare_steps(
        &prog("steps-O0"),
        &["stop in main", "stop in twice"],
        &["break main", "break twice"],
        &["next", "next", "next", "next", "next"],
    );
}

#[test]
fn step_in_recursion_matches_gdb() {
    compare_steps(
        &prog("recurse-O0"),
        &["stop in fact -if n == 2"],
        &["break fact if n == 2"],
        &["step", "step", "step", "step", "finish", "next", "finish"],
    );
}

fn step_over_nodebug(variant: &str) {
    let p = prog(variant);
    let call = line_of("nodebug_main.c", "call_nodebug");
    let o = compare_steps(
        &p,
        &[&format!("stop at \"nodebug_main.c\":{call}")],
        &[&format!("break nodebug_main.c:{call}")],
        &["step", "next"],
    );
    let s = o.nth_stop(1);
    assert_eq!(
        s.func,
        "main",
        "step over a function without line info stays in main\n{}",
        o.transcript()
    );
    assert!(s.line.unwrap_or(0) > call, "{}", o.transcript());
}

#[test]
fn step_over_function_without_debug_info_o0() {
    step_over_nodebug("nodebug-O0");
    // At -O0 the next line is exactly the line after the call.
    let o = Rdbx::batch()
        .cmds(&[
            &format!(
                "stop at \"nodebug_main.c\":{}",
                line_of("nodebug_main.c", "call_nodebug")
            ),
            "run",
            "step",
        ])
        .prog(&prog("nodebug-O0"), &[])
        .run();
    assert_eq!(
        o.nth_stop(1).line,
        Some(line_of("nodebug_main.c", "after_nodebug")),
        "{}",
        o.transcript()
    );
}

#[test]
fn step_over_function_without_debug_info_o2() {
    step_over_nodebug("nodebug-O2");
}

#[test]
fn stepi_moves_pc_like_gdb() {
    let p = prog("steps-O0");
    let o = Rdbx::batch()
        .cmds(&["stop in main", "run", "stepi", "stepi", "stepi", "regs"])
        .prog(&p, &[])
        .run();
    o.assert_stderr_well_formed();
    assert_eq!(
        o.stops().len(),
        4,
        "one stop line per stepi\n{}",
        o.transcript()
    );
    let gout = gdb(
        &p,
        &[],
        &[
            "break main",
            "run",
            "stepi",
            "stepi",
            "stepi",
            "info registers rip",
        ],
    );
    let g_rip = gout
        .lines()
        .find_map(|l| l.strip_prefix("rip").and_then(parse_hex_field))
        .unwrap_or_else(|| panic!("gdb rip:\n{gout}"));
    let r_rip = o
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("rip").and_then(parse_hex_field))
        .unwrap_or_else(|| panic!("no rip in regs\n{}", o.transcript()));
    assert_eq!(r_rip, g_rip, "{}", o.transcript());
}

fn parse_hex_field(rest: &str) -> Option<u64> {
    parse_hex(rest.split_whitespace().next()?)
}
