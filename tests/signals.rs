//! Signals: where inside a signal handler (compared with gdb's bt), catch /
//! ignore, signal stops, death by signal.
mod common;
use common::*;

fn is_ours(f: &Frame) -> bool {
    f.file.as_deref() == Some("signals.c")
}

#[test]
fn where_in_sigusr1_handler_matches_gdb() {
    let p = prog("signals-O0");
    let o = Rdbx::batch()
        .cmds(&[
            "ignore SIGUSR1",
            "stop in handler_work",
            "run",
            "where",
            "cont",
        ])
        .prog(&p, &["usr1"])
        .run();
    o.assert_stderr_well_formed();
    let w = o.nth_where(0);
    let g = gdb_bt(
        &p,
        &["usr1"],
        &["handle SIGUSR1 nostop noprint pass", "break handler_work"],
    );
    let tramp = |fs: &[Frame]| fs.iter().position(|f| f.func == "<signal handler called>");
    let (ri, gi) = (tramp(&w), tramp(&g));
    let gi = gi.unwrap_or_else(|| panic!("gdb bt:\n{}", show_frames(&g)));
    let ri = ri.unwrap_or_else(|| panic!("no <signal handler called> frame\n{}", o.transcript()));
    // Above the trampoline: exactly gdb's frames.
    assert_eq!(
        through_main(&w[..=ri]),
        through_main(&g[..=gi]),
        "rdbx:\n{}\ngdb:\n{}",
        show_frames(&w),
        show_frames(&g)
    );
    assert!(
        o.stdout
            .lines()
            .any(|l| l.trim_start().ends_with("] <signal handler called>")),
        "{}",
        o.transcript()
    );
    // Below it: the interrupted program's own frames, like gdb's (libc frames may be named differently).
    let ours = |fs: &[Frame]| -> Vec<(String, Option<u32>)> {
        fs.iter()
            .filter(|f| is_ours(f))
            .map(|f| (f.func.clone(), f.line))
            .collect()
    };
    assert_eq!(
        ours(&w[ri + 1..]),
        ours(&g[gi + 1..]),
        "rdbx:\n{}\ngdb:\n{}",
        show_frames(&w),
        show_frames(&g)
    );
    let below: Vec<&str> = w[ri + 1..].iter().map(|f| f.func.as_str()).collect();
    assert!(
        below.contains(&"send_signal") && below.contains(&"main"),
        "{}",
        o.transcript()
    );
    assert!(
        w[ri + 1].func != "send_signal",
        "the raise frames in libc are shown\n{}",
        o.transcript()
    );
    o.assert_out_contains("handled 1");
    assert_eq!(o.exit_lines(), [0], "{}", o.transcript());
}

#[test]
fn where_in_sigsegv_handler_matches_gdb() {
    let p = prog("signals-O0");
    let o = Rdbx::batch()
        .cmds(&["stop in handler_work", "run", "cont", "where", "cont"])
        .prog(&p, &["segvh"])
        .run();
    o.assert_stderr_well_formed();
    let crash_line = line_of("signals.c", "crash_store");
    let s = o.nth_stop(0);
    assert_eq!(
        (s.signal.as_deref(), s.func.as_str(), s.line),
        (Some("SIGSEGV"), "crash", Some(crash_line)),
        "{}",
        o.transcript()
    );
    let out = gdb(&p, &["segvh"], &["break handler_work", "run", "cont", "bt"]);
    let g = parse_gdb_bt(&out);
    let w = o.nth_where(0);
    assert_eq!(
        through_main(&w),
        through_main(&g),
        "rdbx:\n{}\ngdb:\n{}\n{}",
        show_frames(&w),
        show_frames(&g),
        o.transcript()
    );
    let names: Vec<&str> = w.iter().take(5).map(|f| f.func.as_str()).collect();
    assert_eq!(
        names,
        [
            "handler_work",
            "on_segv",
            "<signal handler called>",
            "crash",
            "main"
        ]
    );
    o.assert_out_contains("recovered 11");
    assert_eq!(o.exit_lines(), [0], "{}", o.transcript());
}

#[test]
fn sigsegv_stop_then_death() {
    let p = prog("signals-O0");
    let o = Rdbx::batch()
        .cmds(&["run", "where", "cont"])
        .prog(&p, &["segv"])
        .run();
    o.assert_stderr_well_formed();
    let line = line_of("signals.c", "crash_store");
    assert!(
        o.has_line(&format!(
            "signal SIGSEGV (Segmentation fault) in crash at line {line} in file \"signals.c\""
        )),
        "{}",
        o.transcript()
    );
    assert!(
        o.stdout
            .contains(&format!("{line:>6}\t{}", source_line("signals.c", line))),
        "{}",
        o.transcript()
    );
    let w = o.nth_where(0);
    assert_eq!(
        through_main(&w)
            .iter()
            .map(|f| f.0.as_str())
            .collect::<Vec<_>>(),
        ["crash", "main"]
    );
    assert!(
        o.has_line("program terminated by signal SIGSEGV (Segmentation fault)"),
        "{}",
        o.transcript()
    );
    assert!(o.exit_lines().is_empty());
}

#[test]
fn abort_terminates_with_sigabrt() {
    let p = prog("signals-O0");
    // rdbx may or may not stop at SIGABRT first; extra conts are harmless errors.
    let o = Rdbx::batch()
        .cmds(&["run", "cont", "cont"])
        .prog(&p, &["abort"])
        .run();
    o.assert_stderr_well_formed();
    assert!(
        o.has_line("program terminated by signal SIGABRT (Aborted)"),
        "{}",
        o.transcript()
    );
    for s in o.stops() {
        assert_eq!(s.signal.as_deref(), Some("SIGABRT"), "{}", o.transcript());
    }
    assert!(o.exit_lines().is_empty());
}

#[test]
fn caught_sigusr1_stops_then_handler_runs() {
    let p = prog("signals-O0");
    let o = Rdbx::batch()
        .cmds(&["catch SIGUSR1", "run", "cont"])
        .prog(&p, &["usr1"])
        .run();
    o.assert_stderr_well_formed();
    assert!(
        o.stdout
            .lines()
            .any(|l| l.starts_with("signal SIGUSR1 (User defined signal 1) in ")),
        "{}",
        o.transcript()
    );
    let s = o.nth_stop(0);
    assert_eq!(s.signal.as_deref(), Some("SIGUSR1"));
    // cont delivers the signal: the program's handler runs.
    o.assert_out_contains("handled 1");
    assert_eq!(o.exit_lines(), [0], "{}", o.transcript());
}

#[test]
fn ignored_sigusr1_goes_to_the_handler_without_stopping() {
    let p = prog("signals-O0");
    let o = Rdbx::batch()
        .cmds(&["ignore SIGUSR1", "run"])
        .prog(&p, &["usr1"])
        .run();
    o.assert_stderr_well_formed();
    o.assert_out_lacks("signal SIGUSR1");
    assert!(o.stops().is_empty(), "{}", o.transcript());
    o.assert_out_contains("handled 1");
    assert_eq!(o.exit_lines(), [0], "{}", o.transcript());
}

#[test]
fn catch_and_ignore_lists() {
    let p = prog("signals-O0");
    let o = Rdbx::batch().cmds(&["catch"]).prog(&p, &[]).run();
    o.assert_no_errors();
    o.assert_out_contains("SIGSEGV");

    let o = Rdbx::batch()
        .cmds(&["ignore SIGUSR1", "catch"])
        .prog(&p, &[])
        .run();
    o.assert_no_errors();
    o.assert_out_contains("SIGSEGV");
    o.assert_out_lacks("SIGUSR1");

    let o = Rdbx::batch()
        .cmds(&["ignore SIGUSR1", "ignore"])
        .prog(&p, &[])
        .run();
    o.assert_no_errors();
    o.assert_out_contains("SIGUSR1");
    o.assert_out_lacks("SIGSEGV");

    // catch undoes ignore.
    let o = Rdbx::batch()
        .cmds(&["ignore SIGUSR1", "catch SIGUSR1", "run", "cont"])
        .prog(&p, &["usr1"])
        .run();
    assert_eq!(
        o.nth_stop(0).signal.as_deref(),
        Some("SIGUSR1"),
        "{}",
        o.transcript()
    );
}

#[test]
fn ctrl_c_stops_the_running_program_and_returns_to_the_prompt() {
    let p = prog("spin-O0");
    let mut s = Session::start(&p, &[]);
    s.send("run");
    s.wait_for("spinning");
    std::thread::sleep(std::time::Duration::from_millis(200));
    s.interrupt();
    s.wait_for("signal SIGINT (Interrupt) in main at line");
    // The session goes on: the program can be inspected and resumed.
    s.send("print spins > 0");
    s.wait_for("spins > 0 = 1");
    s.send("cont");
    std::thread::sleep(std::time::Duration::from_millis(200));
    s.interrupt();
    s.wait_for_count("signal SIGINT (Interrupt)", 2);
    s.send("quit");
    let o = s.finish();
    o.assert_stderr_well_formed();
    assert!(o.errors().is_empty(), "{}", o.transcript());
    let line = line_of("spin.c", "spin_loop");
    assert!(
        o.stops().iter().all(|stop| stop.line == Some(line)),
        "{}",
        o.transcript()
    );
}
