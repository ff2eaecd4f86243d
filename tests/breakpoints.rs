//! Breakpoints and events: stop in / stop at / stopi, lines with no code,
//! -count, -if, -temp, when (with and without stop), status, delete, clear,
//! pending breakpoints in a dlopen'ed library.
mod common;
use common::*;

/// Lines of `status` output (`(N) ...`).
fn status_lines(o: &Outcome) -> Vec<String> {
    o.stdout
        .lines()
        .filter(|l| {
            l.starts_with('(') && l.contains(") stop") || l.starts_with('(') && l.contains(") when")
        })
        .map(|l| l.to_string())
        .collect()
}

fn gdb_break_line(p: &std::path::Path, spec: &str) -> u32 {
    let out = gdb(p, &[], &[&format!("break {spec}")]);
    let bps = parse_gdb_breakpoints(&out);
    assert_eq!(bps.len(), 1, "gdb: {out}");
    bps[0].1
}

#[test]
fn stop_in_function_hits_where_gdb_does() {
    let p = prog("recurse-O0");
    let o = Rdbx::batch()
        .cmds(&["stop in fact", "run"])
        .prog(&p, &[])
        .run();
    o.assert_stderr_well_formed();
    assert!(o.has_line("(1) stop in fact"), "{}", o.transcript());
    let line = gdb_break_line(&p, "fact");
    let s = o.nth_stop(0);
    assert_eq!(
        (s.func.as_str(), s.line, s.file.as_deref()),
        ("fact", Some(line), Some("recurse.c")),
        "{}",
        o.transcript()
    );
    // The stop line is followed by the source line.
    let lines = o.out_lines();
    let i = lines
        .iter()
        .position(|l| l.starts_with("stopped in fact"))
        .expect("stop line");
    assert_eq!(
        lines.get(i + 1).copied(),
        Some(format!("{line:>6}\t{}", source_line("recurse.c", line)).as_str()),
        "{}",
        o.transcript()
    );
    // Running: and process id lines.
    assert!(
        o.stdout
            .lines()
            .any(|l| l.starts_with("Running: ") && l.contains("recurse-O0")),
        "{}",
        o.transcript()
    );
    assert_eq!(o.process_ids().len(), 1, "{}", o.transcript());
}

#[test]
fn stop_at_line_reports_and_hits() {
    let p = prog("loop-O0");
    let body = line_of("loop.c", "hit_body");
    let o = Rdbx::batch()
        .cmds(&[
            &format!("stop at \"loop.c\":{body}"),
            "run",
            "print i",
            "cont",
            "print i",
        ])
        .prog(&p, &[])
        .run();
    o.assert_stderr_well_formed();
    assert!(
        o.has_line(&format!("(1) stop at \"loop.c\":{body}")),
        "{}",
        o.transcript()
    );
    assert_eq!(o.nth_stop(0).line, Some(body));
    assert_eq!(o.nth_stop(1).line, Some(body));
    assert_eq!(o.printed("i"), ["1", "2"], "{}", o.transcript());
}

#[test]
fn stop_at_bare_line_number_uses_current_file() {
    let p = prog("loop-O0");
    let body = line_of("loop.c", "hit_body");
    let o = Rdbx::batch()
        .cmds(&["stop in main", "run", &format!("stop at {body}"), "cont"])
        .prog(&p, &[])
        .run();
    o.assert_stderr_well_formed();
    assert!(
        o.has_line(&format!("(2) stop at \"loop.c\":{body}")),
        "{}",
        o.transcript()
    );
    let s = o.nth_stop(1);
    assert_eq!(
        (s.func.as_str(), s.line),
        ("hit", Some(body)),
        "{}",
        o.transcript()
    );
}

fn no_code_line(marker: &str) {
    let p = prog("recurse-O0");
    let line = line_of("recurse.c", marker);
    let used = gdb_break_line(&p, &format!("recurse.c:{line}"));
    assert!(used > line);
    let o = Rdbx::batch()
        .cmds(&[&format!("stop at \"recurse.c\":{line}"), "run"])
        .prog(&p, &[])
        .run();
    o.assert_stderr_well_formed();
    let note = format!("line {line} in \"recurse.c\" has no code; using line {used}");
    assert!(
        o.stdout.contains(&note) || o.stderr.contains(&note),
        "expected {note:?}\n{}",
        o.transcript()
    );
    assert!(
        o.has_line(&format!("(1) stop at \"recurse.c\":{used}")),
        "{}",
        o.transcript()
    );
    assert_eq!(o.nth_stop(0).line, Some(used), "{}", o.transcript());
}

#[test]
fn line_with_no_code_inside_function_moves_to_next_line() {
    no_code_line("comment_in_main");
}

#[test]
fn line_with_no_code_between_functions_moves_like_gdb() {
    no_code_line("blank_before_fib");
}

#[test]
fn stopi_at_address() {
    // -no-pie: gdb's pre-run breakpoint address is the run-time address.
    let p = prog("recurse-O0-nopie");
    let out = gdb(&p, &[], &["break fact"]);
    let (addr, _) = parse_gdb_breakpoints(&out)[0];
    let o = Rdbx::batch()
        .cmds(&[&format!("stopi at {addr:#x}"), "run", "regs"])
        .prog(&p, &[])
        .run();
    o.assert_stderr_well_formed();
    assert!(
        o.has_line(&format!("(1) stopi at {addr:#x}")),
        "{}",
        o.transcript()
    );
    assert_eq!(o.nth_stop(0).func, "fact", "{}", o.transcript());
    let rip = o
        .stdout
        .lines()
        .find_map(|l| parse_hex(l.strip_prefix("rip")?.split_whitespace().next()?))
        .unwrap_or_else(|| panic!("no rip\n{}", o.transcript()));
    assert_eq!(rip, addr);
}

#[test]
fn count_stops_on_the_nth_hit() {
    let p = prog("loop-O0");
    let o = Rdbx::batch()
        .cmds(&[
            "stop in hit -count 5",
            "run",
            "print i",
            "up",
            "print i",
            "status",
        ])
        .prog(&p, &[])
        .run();
    o.assert_stderr_well_formed();
    assert!(o.has_line("(1) stop in hit -count 5"), "{}", o.transcript());
    assert_eq!(o.stops().len(), 1, "{}", o.transcript());
    // hit's parameter and main's loop counter.
    assert_eq!(o.printed("i"), ["5", "5"], "{}", o.transcript());
    let st = status_lines(&o);
    let last = st
        .last()
        .unwrap_or_else(|| panic!("no status\n{}", o.transcript()));
    assert!(
        last.starts_with("(1) stop in hit -count 5"),
        "{}",
        o.transcript()
    );
    assert!(last.contains("[hits: 5]"), "{}", o.transcript());
}

#[test]
fn count_larger_than_hits_never_stops() {
    let p = prog("loop-O0");
    let o = Rdbx::batch()
        .cmds(&["stop in hit -count 11", "run"])
        .prog(&p, &[])
        .run();
    o.assert_stderr_well_formed();
    assert!(o.stops().is_empty(), "{}", o.transcript());
    o.assert_out_contains("sum=55");
    assert_eq!(o.exit_lines(), [3], "{}", o.transcript());
}

#[test]
fn if_condition_on_parameter() {
    let p = prog("loop-O0");
    let o = Rdbx::batch()
        .cmds(&["stop in hit -if i == 7", "run", "print i", "cont"])
        .prog(&p, &[])
        .run();
    o.assert_stderr_well_formed();
    assert_eq!(o.stops().len(), 1, "{}", o.transcript());
    assert_eq!(o.printed("i"), ["7"], "{}", o.transcript());
    o.assert_out_contains("sum=55");
    assert_eq!(o.exit_lines(), [3], "{}", o.transcript());
}

#[test]
fn if_condition_on_global() {
    let p = prog("loop-O0");
    let body = line_of("loop.c", "hit_body");
    // total = 1+..+6 = 21 > 20 first when hit(7) runs.
    let o = Rdbx::batch()
        .cmds(&[
            &format!("stop at \"loop.c\":{body} -if total > 20"),
            "run",
            "print i",
            "print total",
        ])
        .prog(&p, &[])
        .run();
    o.assert_stderr_well_formed();
    assert_eq!(o.printed("i"), ["7"], "{}", o.transcript());
    assert_eq!(o.printed("total"), ["21"], "{}", o.transcript());
}

#[test]
fn temp_breakpoint_fires_once_and_disappears() {
    let p = prog("loop-O0");
    let o = Rdbx::batch()
        .cmds(&["stop in hit -temp", "run", "print i", "status", "cont"])
        .prog(&p, &[])
        .run();
    o.assert_stderr_well_formed();
    assert!(o.has_line("(1) stop in hit -temp"), "{}", o.transcript());
    assert_eq!(o.stops().len(), 1, "{}", o.transcript());
    assert_eq!(o.printed("i"), ["1"]);
    assert_eq!(
        status_lines(&o).len(),
        1,
        "only the set line; status lists nothing\n{}",
        o.transcript()
    );
    assert_eq!(o.exit_lines(), [3], "{}", o.transcript());
}

#[test]
fn when_prints_at_each_hit_without_stopping() {
    let p = prog("loop-O0");
    let o = Rdbx::batch()
        .cmds(&["when in hit { print i }", "run"])
        .prog(&p, &[])
        .run();
    o.assert_stderr_well_formed();
    assert!(
        o.stdout.lines().any(|l| l.starts_with("(1) when in hit {")),
        "{}",
        o.transcript()
    );
    let want: Vec<String> = (1..=10).map(|i| i.to_string()).collect();
    assert_eq!(o.printed("i"), want, "{}", o.transcript());
    assert!(
        o.stops().is_empty(),
        "when without stop does not stop\n{}",
        o.transcript()
    );
    o.assert_out_contains("sum=55");
    assert_eq!(o.exit_lines(), [3]);
}

#[test]
fn when_with_stop_in_body_stops() {
    let p = prog("loop-O0");
    let o = Rdbx::batch()
        .cmds(&[
            "when in hit { print i; stop }",
            "run",
            "print total",
            "cont",
        ])
        .prog(&p, &[])
        .run();
    o.assert_stderr_well_formed();
    // The first stop comes after i = 1 and before i = 2.
    assert_eq!(o.printed("i"), ["1", "2"], "{}", o.transcript());
    assert_eq!(o.printed("total"), ["0"], "{}", o.transcript());
    let stops = o.stops();
    assert_eq!(stops.len(), 2, "{}", o.transcript());
    assert_eq!(stops[0].func, "hit");
    let i2 = o.stdout.find("i = 2").expect("i = 2");
    let first_stop = o.stdout.find("stopped in hit").expect("stop");
    assert!(first_stop < i2, "{}", o.transcript());
}

#[test]
fn status_delete_and_all() {
    let p = prog("recurse-O0");
    let main_fact = line_of("recurse.c", "main_fact");
    let o = Rdbx::batch()
        .cmds(&[
            "stop in fact",
            "stop in fib",
            &format!("stop at \"recurse.c\":{main_fact}"),
            "status",
            "delete 2",
            "status",
            "run",
            "cont",
            "delete all",
            "status",
            "cont",
        ])
        .prog(&p, &[])
        .run();
    o.assert_stderr_well_formed();
    let st = status_lines(&o);
    // 3 set lines, status with 3, status with 2, final status empty.
    let expect_first = [
        "(1) stop in fact".to_string(),
        "(2) stop in fib".to_string(),
        format!("(3) stop at \"recurse.c\":{main_fact}"),
    ];
    assert_eq!(st.len(), 8, "{}", o.transcript());
    for (i, want) in expect_first.iter().enumerate() {
        assert!(st[i].starts_with(want.as_str()), "{}", o.transcript());
        assert!(
            st[3 + i].starts_with(want.as_str()),
            "status lists {want}\n{}",
            o.transcript()
        );
    }
    assert!(
        st[6].starts_with("(1) stop in fact") && st[7].starts_with("(3) stop at"),
        "{}",
        o.transcript()
    );
    let stops: Vec<(String, Option<u32>)> =
        o.stops().into_iter().map(|s| (s.func, s.line)).collect();
    assert_eq!(stops.len(), 2, "{}", o.transcript());
    assert_eq!(stops[0], ("main".to_string(), Some(main_fact)));
    assert_eq!(stops[1].0, "fact");
    o.assert_out_contains("fact=720 fib=55");
    assert_eq!(o.exit_lines(), [0]);
}

#[test]
fn clear_removes_breakpoint_at_current_line() {
    let p = prog("loop-O0");
    let body = line_of("loop.c", "hit_body");
    let o = Rdbx::batch()
        .cmds(&[
            &format!("stop at \"loop.c\":{body}"),
            "run",
            "clear",
            "status",
            "cont",
        ])
        .prog(&p, &[])
        .run();
    o.assert_stderr_well_formed();
    assert_eq!(o.stops().len(), 1, "{}", o.transcript());
    assert_eq!(status_lines(&o).len(), 1, "{}", o.transcript());
    assert_eq!(o.exit_lines(), [3], "{}", o.transcript());
}

#[test]
fn pending_breakpoint_in_dlopened_library() {
    let p = prog("dlmain-O0");
    let lib = prog("libdllib.so");
    let lib_s = lib.to_string_lossy().into_owned();
    let o = Rdbx::batch()
        .cmds(&[
            "stop in lib_func",
            "status",
            "run",
            "where",
            "print x",
            "cont",
        ])
        .prog(&p, &[&lib_s])
        .run();
    o.assert_stderr_well_formed();
    assert!(
        o.stderr
            .lines()
            .any(|l| l.starts_with("rdbx: warning: no function \"lib_func\"")
                && l.contains("pending")),
        "{}",
        o.transcript()
    );
    assert!(
        o.stdout
            .lines()
            .any(|l| l.starts_with("(1) stop in lib_func") && l.trim_end().ends_with("[pending]")),
        "status shows the pending breakpoint\n{}",
        o.transcript()
    );
    let s = o.nth_stop(0);
    assert_eq!(
        (s.func.as_str(), s.line, s.file.as_deref()),
        (
            "lib_func",
            Some(line_of("dllib.c", "lib_body")),
            Some("dllib.c")
        ),
        "{}",
        o.transcript()
    );
    let w = o.nth_where(0);
    assert_eq!(w[0].func, "lib_func");
    assert_eq!(
        (w[1].func.as_str(), w[1].line),
        ("main", Some(line_of("dlmain.c", "call_lib"))),
        "{}",
        o.transcript()
    );
    assert_eq!(o.printed("x"), ["20"]);
    o.assert_out_contains("lib_func=41");
    assert_eq!(o.exit_lines(), [0], "{}", o.transcript());
}
