//! Job control under rdbx: `kill -STOP` stops a traced program as it
//! would an untraced one, rdbx reports it as a job-control stop (not as a
//! signal to pass on), and the program goes on correctly after `kill -CONT`
//! or after `cont` (which sends SIGCONT as it resumes it).

mod common;

use common::{all_threads_traced_stopped, prog, Console, Target, TIMEOUT};
use std::time::Duration;

/// Attaches to survivor.c, lets it run, stops it with SIGSTOP; then
/// `resume` continues it. It must end intact.
fn stopped_and_continued(resume: impl FnOnce(&mut Console, i32)) {
    let target = Target::start(&prog("survivor-O0"), false);
    let pid = target.pid() as i32;
    let mut rdbx = Console::start(&["-p", &pid.to_string()]);
    rdbx.expect("the attach", TIMEOUT, |l| {
        l.starts_with("Attached to process")
    });
    rdbx.expect("the attach's stop", TIMEOUT, |l| {
        l.starts_with("stopped in")
    });
    rdbx.send("cont");
    std::thread::sleep(Duration::from_millis(200));
    // SAFETY: kill(2) of the test's own child.
    unsafe { libc::kill(pid, libc::SIGSTOP) };
    let (_, line) = rdbx.expect("the job-control stop", TIMEOUT, |l| {
        l.starts_with("stopped") || l.starts_with("signal")
    });
    assert!(
        line.starts_with("stopped by SIGSTOP (job control) in "),
        "{}",
        rdbx.transcript()
    );
    assert!(all_threads_traced_stopped(pid as u32));
    rdbx.send("threads");
    rdbx.expect("a thread stopped by SIGSTOP", TIMEOUT, |l| {
        l.contains("stopped by SIGSTOP")
    });
    resume(&mut rdbx, pid);
    rdbx.expect("the end", TIMEOUT, |l| l.starts_with("execution completed"));
    let status = rdbx.finish(true);
    assert_eq!(status.and_then(|s| s.code()), Some(0));
    let (output, code) = target.finish();
    assert!(output.contains("total 1140 usr1 0"), "{output:?}");
    assert_eq!(code, Some(3));
}

#[test]
fn kill_stop_then_kill_cont_and_cont() {
    stopped_and_continued(|rdbx, pid| {
        // SAFETY: kill(2) of the test's own child.
        unsafe { libc::kill(pid, libc::SIGCONT) };
        std::thread::sleep(Duration::from_millis(50));
        // SIGCONT is silent (dbx's default): the program is not stopped
        // again by it.
        rdbx.send("cont");
    });
}

#[test]
fn kill_stop_then_cont_alone() {
    stopped_and_continued(|rdbx, _| rdbx.send("cont"));
}
