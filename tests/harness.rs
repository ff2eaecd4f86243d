//! Checks of the test harness itself (program builds, gdb parsing, rdbx output
//! parsers). These pass without rdbx, so a failure here is a harness bug.
mod common;
use common::*;

#[test]
fn programs_are_built_with_relative_source_names() {
    let out = gdb(&prog("recurse-O0"), &[], &["break fact"]);
    let bps = parse_gdb_breakpoints(&out);
    assert_eq!(bps.len(), 1, "{out}");
    assert!(out.contains("file recurse.c,"), "{out}");
    assert!(prog("libdllib.so").exists());
    assert!(prog("nodebug-O2").exists());
}

#[test]
fn gdb_backtrace_is_parsed() {
    let frames = gdb_bt(&prog("recurse-O0"), &[], &["break fact if n == 1"]);
    let names: Vec<&str> = frames.iter().map(|f| f.func.as_str()).collect();
    assert_eq!(
        names,
        ["fact", "fact", "fact", "fact", "fact", "fact", "main"]
    );
    assert_eq!(frames[0].line, Some(line_of("recurse.c", "fact_base") - 1));
    assert_eq!(frames[6].line, Some(line_of("recurse.c", "main_fact")));
}

#[test]
fn gdb_markers_are_parsed() {
    let out = gdb(
        &prog("steps-O0"),
        &[],
        &["break main", "run", GDB_WHERE_AM_I, "next", GDB_WHERE_AM_I],
    );
    let m = parse_gdb_markers(&out);
    // break main stops on the setvbuf line just above MARK:main_first.
    let first = line_of("steps.c", "main_first") - 1;
    assert_eq!(
        m,
        vec![("main".to_string(), first), ("main".to_string(), first + 1)],
        "{out}"
    );
}

#[test]
fn rdbx_output_parsers() {
    let s = parse_stop(r#"stopped in fact at line 5 in file "recurse.c""#).unwrap();
    assert_eq!(
        (s.func.as_str(), s.line, s.file.as_deref()),
        ("fact", Some(5), Some("recurse.c"))
    );
    let s = parse_stop("stopped in nd_compute at 0x401136").unwrap();
    assert_eq!(s.addr, Some(0x401136));
    let s = parse_stop(
        r#"signal SIGSEGV (Segmentation fault) in crash at line 47 in file "signals.c""#,
    )
    .unwrap();
    assert_eq!(s.signal.as_deref(), Some("SIGSEGV"));
    assert_eq!(s.line, Some(47));
    let f = parse_rdbx_frame(r#"=>[1] fact(n = 1), line 5 in "recurse.c""#).unwrap();
    assert!(f.selected && f.index == 1 && f.func == "fact" && f.line == Some(5));
    let f = parse_rdbx_frame("  [3] raise() + 0x10, at 0x7ffff7e10fb2 in libc.so.6").unwrap();
    assert_eq!(f.lib.as_deref(), Some("libc.so.6"));
    let f = parse_rdbx_frame(
        r#"  [2] inner_inl(x = <optimized out>) [inlined], line 17 in "inline.c""#,
    )
    .unwrap();
    assert!(f.inlined && f.line == Some(17));
    let f = parse_rdbx_frame("  [4] <signal handler called>").unwrap();
    assert_eq!(f.func, "<signal handler called>");
    let g = parse_gdb_frame("#3  __pthread_kill_implementation (threadid=<optimized out>, signo=signo@entry=10) at ./nptl/pthread_kill.c:44").unwrap();
    assert_eq!(
        (g.func.as_str(), g.line),
        ("__pthread_kill_implementation", Some(44))
    );
    let g =
        parse_gdb_frame("#4  0x00007ffff7e10fb2 in raise () from /lib/x86_64-linux-gnu/libc.so.6")
            .unwrap();
    assert_eq!(g.lib.as_deref(), Some("/lib/x86_64-linux-gnu/libc.so.6"));
}
