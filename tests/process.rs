//! Process control: run with arguments and redirections, the exit line,
//! rerun, kill, fork (child runs free), exec (new program's breakpoint hit).
//! Every run also checks (in the harness) that no process it started remains.
mod common;
use common::*;
use std::fs;
use std::time::Duration;

#[test]
fn exit_line_and_running_line() {
    let p = prog("loop-O0");
    let o = Rdbx::batch().cmd("run").prog(&p, &["4"]).run();
    o.assert_no_errors();
    o.assert_stderr_well_formed();
    assert!(
        o.stdout.lines().any(|l| l.starts_with("Running: ")
            && l.contains("loop-O0")
            && l.trim_end().ends_with(" 4")),
        "{}",
        o.transcript()
    );
    assert_eq!(o.process_ids().len(), 1);
    o.assert_out_contains("sum=10");
    assert!(
        o.has_line("execution completed, exit code is 3"),
        "{}",
        o.transcript()
    );
    assert_eq!(o.exit_code(), Some(0), "rdbx itself exits 0");
}

#[test]
fn run_with_arguments() {
    let p = prog("io-O0");
    let o = Rdbx::batch().cmd("run alpha beta").prog(&p, &[]).run();
    o.assert_no_errors();
    o.assert_out_contains("argc=3\nargv[1]=alpha\nargv[2]=beta\n");
    o.assert_out_contains("lines=0");
    // Arguments from rdbx's command line.
    let o = Rdbx::batch().cmd("run").prog(&p, &["x", "y", "z"]).run();
    o.assert_out_contains("argc=4\nargv[1]=x\nargv[2]=y\nargv[3]=z\n");
    assert_eq!(o.exit_lines(), [0]);
}

#[test]
fn run_with_redirections() {
    let p = prog("io-O0");
    let dir = scratch_dir("redirect");
    let input = dir.join("in.txt");
    let output = dir.join("out.txt");
    write_file(&input, "first line\nsecond line\n");
    let o = Rdbx::batch()
        .cmd(&format!(
            "run one < {} > {}",
            input.display(),
            output.display()
        ))
        .prog(&p, &[])
        .run();
    o.assert_no_errors();
    let written = fs::read_to_string(&output)
        .unwrap_or_else(|e| panic!("no output file: {e}\n{}", o.transcript()));
    assert_eq!(
        written,
        "argc=2\nargv[1]=one\nstdin: first line\nstdin: second line\nlines=2\n",
        "{}",
        o.transcript()
    );
    o.assert_out_lacks("argv[1]=one");
    assert_eq!(o.exit_lines(), [0], "{}", o.transcript());
}

#[test]
fn rerun_runs_again() {
    let p = prog("loop-O0");
    let o = Rdbx::batch().cmds(&["run 2", "rerun"]).prog(&p, &[]).run();
    o.assert_stderr_well_formed();
    assert_eq!(
        o.stdout.matches("Running: ").count(),
        2,
        "{}",
        o.transcript()
    );
    let pids = o.process_ids();
    assert_eq!(pids.len(), 2, "{}", o.transcript());
    assert_ne!(pids[0], pids[1]);
    assert_eq!(o.exit_lines(), [3, 3], "{}", o.transcript());
}

#[test]
fn rerun_while_stopped_replaces_the_process() {
    let p = prog("loop-O0");
    let mut s = Session::start(&p, &[]);
    s.send("stop in hit");
    s.send("run");
    s.wait_for("stopped in hit");
    let first = Outcome::pids_in(&s.stdout());
    s.send("rerun");
    s.wait_for_count("stopped in hit", 2);
    let pids = Outcome::pids_in(&s.stdout());
    assert_eq!(pids.len(), 2, "{}", s.transcript());
    assert_eq!(first[0], pids[0]);
    assert!(
        gone_soon(pids[0]),
        "the first process is gone after rerun\n{}",
        s.transcript()
    );
    assert!(proc_state(pids[1]).is_some());
    s.send("print i");
    s.wait_for("i = 1");
    s.finish();
}

/// True if the pid disappears (not even a zombie) within two seconds.
fn gone_soon(pid: u32) -> bool {
    for _ in 0..100 {
        if proc_state(pid).is_none() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

#[test]
fn kill_ends_the_process_and_session_goes_on() {
    let p = prog("loop-O0");
    let mut s = Session::start(&p, &[]);
    s.send("stop in hit");
    s.send("run");
    s.wait_for("stopped in hit");
    let pid = Outcome::pids_in(&s.stdout())[0];
    assert_eq!(proc_state(pid), Some('t'), "the stopped target is traced");
    s.send("kill");
    s.send("cont");
    s.wait_until("no process error", |_, e| e.contains("rdbx: no process"));
    assert!(
        gone_soon(pid),
        "killed process is reaped (no zombie)\n{}",
        s.transcript()
    );
    // A new run works after kill.
    s.send("run");
    s.wait_for_count("stopped in hit", 2);
    s.send("cont");
    s.wait_for_count("stopped in hit", 3);
    let o = s.finish();
    o.assert_stderr_well_formed();
    assert_eq!(o.errors().len(), 1, "{}", o.transcript());
}

#[test]
fn quit_kills_a_stopped_target() {
    let p = prog("loop-O0");
    let o = Rdbx::interactive()
        .stdin("stop in hit\nrun\nquit\n")
        .prog(&p, &[])
        .run();
    assert_eq!(o.stops().len(), 1, "{}", o.transcript());
    // (the harness asserts the pid is gone)
}

#[test]
fn fork_child_runs_free_and_parent_continues() {
    let p = prog("fork-O0");
    let o = Rdbx::batch()
        .cmds(&["stop in common_work", "run", "print who", "cont"])
        .prog(&p, &[])
        .run();
    o.assert_stderr_well_formed();
    // Only the parent stops (the child is not traced and must not trap).
    assert_eq!(o.stops().len(), 1, "{}", o.transcript());
    assert_eq!(o.printed("who"), ["1"], "{}", o.transcript());
    let children = o.fork_child_ids();
    assert_eq!(
        children.len(),
        1,
        "[Detaching after fork from child process PID]\n{}",
        o.transcript()
    );
    let child = children[0];
    o.assert_out_contains(&format!("child {child} running"));
    o.assert_out_contains(&format!("parent: child {child} exited with 7"));
    assert_eq!(o.exit_lines(), [0], "{}", o.transcript());
}

#[test]
fn fork_without_breakpoints() {
    let p = prog("fork-O0");
    let o = Rdbx::batch().cmds(&["run"]).prog(&p, &[]).run();
    o.assert_stderr_well_formed();
    let child = o.fork_child_ids()[0];
    o.assert_out_contains(&format!("parent: child {child} exited with 7"));
    assert_eq!(o.exit_lines(), [0], "{}", o.transcript());
}

#[test]
fn exec_is_reported_and_new_program_breakpoint_hit() {
    let p = prog("exec-O0");
    let io = prog("io-O0");
    let io_s = io.to_string_lossy().into_owned();
    let o = Rdbx::batch()
        .cmds(&["stop in print_args", "run", "print argc", "where", "cont"])
        .prog(&p, &[&io_s, "x"])
        .run();
    o.assert_stderr_well_formed();
    o.assert_out_contains("before exec");
    let pid = o.process_ids()[0];
    assert!(
        o.stdout
            .contains(&format!("[process {pid} is executing new program: {io_s}]")),
        "{}",
        o.transcript()
    );
    let s = o.nth_stop(0);
    assert_eq!(
        (s.func.as_str(), s.line, s.file.as_deref()),
        (
            "print_args",
            Some(line_of("io.c", "print_args_body")),
            Some("io.c")
        ),
        "{}",
        o.transcript()
    );
    assert_eq!(o.printed("argc"), ["2"]);
    let w = o.nth_where(0);
    assert_eq!(w[1].func, "main", "{}", o.transcript());
    o.assert_out_contains("argv[1]=x");
    assert_eq!(o.exit_lines(), [0], "{}", o.transcript());
}

#[test]
fn exec_of_program_without_symbols_we_know() {
    let p = prog("exec-O0");
    let o = Rdbx::batch().cmds(&["run"]).prog(&p, &["/bin/true"]).run();
    o.assert_stderr_well_formed();
    assert!(
        // The kernel reports the resolved path (/bin may be a link to /usr/bin).
        o.stdout.contains(&format!(
            "is executing new program: {}]",
            std::fs::canonicalize("/bin/true").unwrap().display()
        )),
        "{}",
        o.transcript()
    );
    assert_eq!(o.exit_lines(), [0], "{}", o.transcript());
}
