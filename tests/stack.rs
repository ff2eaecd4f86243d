//! `where`, `up`/`down`/`frame`, compared with gdb's `bt` on the same program
//! and breakpoint: recursion, -O2 code without frame pointers, inlined frames,
//! frames without debug info.
mod common;
use common::*;

/// rdbx's where (through main) must equal gdb's bt (through main): names and lines.
fn assert_same_stack(rdbx: &[Frame], gdb: &[Frame], o: &Outcome) {
    assert_eq!(
        through_main(rdbx),
        through_main(gdb),
        "rdbx where:\n{}\ngdb bt:\n{}\n{}",
        show_frames(rdbx),
        show_frames(gdb),
        o.transcript()
    );
}

#[test]
fn recursion_where_matches_gdb_bt() {
    let p = prog("recurse-O0");
    let o = Rdbx::batch()
        .cmds(&["stop in fact -if n == 1", "run", "where"])
        .prog(&p, &[])
        .run();
    o.assert_stderr_well_formed();
    let frames = o.nth_where(0);
    let gdb = gdb_bt(&p, &[], &["break fact if n == 1"]);
    assert_same_stack(&frames, &gdb, &o);
    assert_eq!(frames.iter().filter(|f| f.func == "fact").count(), 6);
    assert!(frames[0].selected, "frame 1 carries =>\n{}", o.transcript());
    assert!(frames[1..].iter().all(|f| !f.selected));
    assert_eq!(frames[0].file.as_deref(), Some("recurse.c"));
    // Argument list in the contract's spelling.
    assert!(
        o.stdout
            .lines()
            .any(|l| l.starts_with("=>[1] fact(n = 1), line ")),
        "{}",
        o.transcript()
    );
    assert!(
        o.stdout.contains("  [2] fact(n = 2), line "),
        "{}",
        o.transcript()
    );
}

#[test]
fn recursion_depth_by_count_matches_gdb() {
    // fact(6) -> the 4th hit is fact(3), four fact frames deep.
    let p = prog("recurse-O0");
    let o = Rdbx::batch()
        .cmds(&["stop in fact -count 4", "run", "where", "print n"])
        .prog(&p, &[])
        .run();
    let frames = o.nth_where(0);
    let gdb = gdb_bt(&p, &[], &["break fact", "ignore 1 3"]);
    assert_same_stack(&frames, &gdb, &o);
    assert_eq!(o.printed_one("n"), "3");
}

#[test]
fn optimized_code_where_matches_gdb() {
    // -O2: no frame pointers, unwinding relies on CFI. Second hit of add is from twice.
    let p = prog("steps-O2");
    let o = Rdbx::batch()
        .cmds(&["stop in add -count 2", "run", "where"])
        .prog(&p, &[])
        .run();
    o.assert_stderr_well_formed();
    let frames = o.nth_where(0);
    let gdb = gdb_bt(&p, &[], &["break add", "ignore 1 1"]);
    assert_same_stack(&frames, &gdb, &o);
    let names: Vec<&str> = frames.iter().take(3).map(|f| f.func.as_str()).collect();
    assert_eq!(names, ["add", "twice", "main"], "{}", o.transcript());
}

fn inline_where(variant: &str) {
    let p = prog(variant);
    let line = line_of("inline.c", "inner_sink_call");
    let o = Rdbx::batch()
        .cmds(&[&format!("stop at \"inline.c\":{line}"), "run", "where"])
        .prog(&p, &[])
        .run();
    o.assert_stderr_well_formed();
    let frames = o.nth_where(0);
    let gdb = gdb_bt(&p, &[], &[&format!("break inline.c:{line}")]);
    assert_same_stack(&frames, &gdb, &o);
    let names: Vec<&str> = frames.iter().take(3).map(|f| f.func.as_str()).collect();
    assert_eq!(
        names,
        ["inner_inl", "outer_inl", "main"],
        "{}",
        o.transcript()
    );
    assert!(
        frames[0].inlined && frames[1].inlined,
        "inlined frames are marked [inlined]\n{}",
        o.transcript()
    );
    assert!(
        !frames[2].inlined,
        "main is a real frame\n{}",
        o.transcript()
    );
    // Each level shows its own parameters: main has none, although the
    // functions inlined into it at the same pc do.
    let where_lines: Vec<&str> = o.stdout.lines().filter(|l| l.contains("] main(")).collect();
    assert!(
        where_lines.iter().all(|l| l.contains("] main(),")),
        "{}",
        o.transcript()
    );
    assert!(o.stdout.contains("] outer_inl(x = "), "{}", o.transcript());
    assert_eq!(
        frames[1].line,
        Some(line_of("inline.c", "outer_calls_inner"))
    );
    assert_eq!(
        frames[2].line,
        Some(line_of("inline.c", "main_calls_outer"))
    );
    let stop = o.nth_stop(0);
    assert_eq!(stop.line, Some(line), "{}", o.transcript());
    assert_eq!(
        stop.func,
        "inner_inl",
        "the stop names the innermost inlined function\n{}",
        o.transcript()
    );
}

#[test]
fn inlined_frames_at_o2_match_gdb() {
    inline_where("inline-O2");
}

#[test]
fn inlined_frames_at_o0_match_gdb() {
    // always_inline also inlines at -O0.
    inline_where("inline-O0");
}

#[test]
fn where_in_function_without_debug_info() {
    let p = prog("nodebug-O0");
    let o = Rdbx::batch()
        .cmds(&["stop in nd_compute", "run", "where"])
        .prog(&p, &[])
        .run();
    o.assert_stderr_well_formed();
    let stop = o.nth_stop(0);
    assert_eq!(stop.func, "nd_compute", "{}", o.transcript());
    assert!(
        stop.line.is_none() && stop.addr.is_some(),
        "no line info: stopped in F at 0xADDR\n{}",
        o.transcript()
    );
    let frames = o.nth_where(0);
    assert_eq!(frames[0].func, "nd_compute");
    assert_eq!(frames[0].line, None);
    assert!(
        o.stdout
            .lines()
            .any(|l| l.starts_with("=>[1] nd_compute() + 0x")
                && l.contains(", at 0x")
                && l.trim_end().ends_with(" in nodebug-O0")),
        "no-debug frame format `FUNC() + 0xOFF, at 0xADDR in LIBNAME`\n{}",
        o.transcript()
    );
    assert_eq!(frames[1].func, "main");
    assert_eq!(
        frames[1].line,
        Some(line_of("nodebug_main.c", "call_nodebug"))
    );
}

#[test]
fn up_down_frame_move_the_selection() {
    let p = prog("recurse-O0");
    let o = Rdbx::batch()
        .cmds(&[
            "stop in fact -if n == 1",
            "run",
            "up",
            "print n",
            "up 2",
            "print n",
            "where",
            "down",
            "print n",
            "frame 7",
            "print f",
        ])
        .prog(&p, &[])
        .run();
    o.assert_stderr_well_formed();
    // up: frame 2 is fact(n = 2); up 2: frame 4 is fact(n = 4); down: frame 3.
    assert_eq!(o.printed("n"), ["2", "4", "3"], "{}", o.transcript());
    let w = o.nth_where(0);
    let sel: Vec<u32> = w.iter().filter(|f| f.selected).map(|f| f.index).collect();
    assert_eq!(
        sel,
        [4],
        "=> marks the selected frame after up\n{}",
        o.transcript()
    );
    // up prints the frame's where-line then its source line.
    let rec = line_of("recurse.c", "fact_rec");
    assert!(
        o.stdout
            .contains(&format!("[2] fact(n = 2), line {rec} in \"recurse.c\"")),
        "{}",
        o.transcript()
    );
    assert!(
        o.stdout
            .contains(&format!("{rec:>6}\t{}", source_line("recurse.c", rec))),
        "{}",
        o.transcript()
    );
    // frame 7 is main; `f` is main's local, not yet assigned, but printable.
    let main_line = line_of("recurse.c", "main_fact");
    assert!(
        o.stdout
            .contains(&format!("[7] main(), line {main_line} in \"recurse.c\"")),
        "{}",
        o.transcript()
    );
    assert_eq!(o.printed("f").len(), 1, "{}", o.transcript());
}
