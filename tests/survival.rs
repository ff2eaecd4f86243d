//! The program survives rdbx: whatever kills rdbx (a panic, a stack
//! overflow in the command thread or another one, SIGTERM, SIGHUP), a
//! process it debugs goes on as if never traced: breakpoints out, threads
//! out of out-of-line slots, signals it was owed delivered. The target,
//! survivor.c, prints "total 1140 usr1 N" and exits with 3 only if nothing
//! disturbed it.

mod common;

use common::{prog, Console, Target, TIMEOUT};
use std::time::Duration;

/// The line survivor.c prints when it was left alone (with `usr1` SIGUSR1s).
fn intact(usr1: u32) -> String {
    format!("total 1140 usr1 {usr1}")
}

/// Attaches rdbx to a fresh survivor and lets `drive` bring rdbx down
/// (it gets the console and the target's pid); the target must then
/// finish intact, having received `usr1` SIGUSR1s.
fn survives(usr1: u32, drive: impl FnOnce(&mut Console, i32)) {
    let target = Target::start(&prog("survivor-O0"), false);
    let pid = target.pid();
    let mut rdbx = Console::start(&["-p", &pid.to_string()]);
    rdbx.expect("the attach", TIMEOUT, |l| {
        l.starts_with("Attached to process")
    });
    drive(&mut rdbx, pid as i32);
    let status = rdbx.wait_for_end();
    assert!(status.is_some(), "rdbx did not end\n{}", rdbx.transcript());
    let (output, code) = target.finish();
    assert!(
        output.contains(&intact(usr1)),
        "the target's output: {output:?}, exit code {code:?} (rdbx {status:?})\n{}",
        rdbx.transcript()
    );
    assert_eq!(code, Some(3), "{}", rdbx.transcript());
    assert!(
        rdbx.stderr().contains(&format!("process {pid} was let go")),
        "{}",
        rdbx.transcript()
    );
}

/// Runs each command and waits until it is done.
fn run(rdbx: &mut Console, commands: &[&str]) {
    for (n, command) in commands.iter().enumerate() {
        rdbx.send(command);
        rdbx.sync(9000 + n as u64);
    }
}

#[test]
fn a_panic_with_breakpoints_inserted_leaves_the_program_running() {
    survives(0, |rdbx, _| {
        run(rdbx, &["stop in step"]);
        rdbx.send("maintenance crash panic");
    });
}

#[test]
fn a_panic_at_a_breakpoint_leaves_the_program_running() {
    survives(0, |rdbx, _| {
        run(rdbx, &["stop in step", "cont"]);
        rdbx.send("maintenance crash panic");
    });
}

#[test]
fn a_stack_overflow_in_another_thread_leaves_the_program_running() {
    survives(0, |rdbx, _| {
        run(rdbx, &["stop in step", "cont"]);
        rdbx.send("maintenance crash thread-stack-overflow");
    });
}

#[test]
fn a_stack_overflow_in_the_command_thread_leaves_the_program_running() {
    survives(0, |rdbx, _| {
        run(rdbx, &["stop in step", "cont", "cont"]);
        rdbx.send("maintenance crash stack-overflow");
    });
}

#[test]
fn a_signal_rdbx_holds_is_delivered_after_a_panic() {
    // The program stops for SIGUSR1 (rdbx holds the signal for the thread
    // that took it), a breakpoint is set, and rdbx panics: the handler
    // still runs.
    survives(1, |rdbx, pid| {
        rdbx.send("cont");
        std::thread::sleep(Duration::from_millis(100));
        // SAFETY: kill(2) of the test's own child.
        unsafe { libc::kill(pid, libc::SIGUSR1) };
        rdbx.expect("the signal stop", TIMEOUT, |l| {
            l.starts_with("signal SIGUSR1")
        });
        run(rdbx, &["stop in step"]);
        rdbx.send("maintenance crash panic");
    });
}

#[test]
fn sigterm_while_the_program_runs_into_breakpoints() {
    // A condition that is never true: every call of step() traps and is
    // resumed by rdbx, so SIGTERM finds threads on breakpoints, in
    // out-of-line slots and running.
    survives(0, |rdbx, _| {
        run(rdbx, &["stop in step -if i == 1000"]);
        rdbx.send("cont");
        std::thread::sleep(Duration::from_millis(300));
        rdbx.signal(libc::SIGTERM);
    });
}

#[test]
fn sighup_at_a_breakpoint() {
    survives(0, |rdbx, _| {
        run(rdbx, &["stop in step", "cont"]);
        rdbx.signal(libc::SIGHUP);
    });
}

#[test]
fn a_program_rdbx_started_is_let_go_too() {
    // Not killed: only the user's kill or quit kills what rdbx started.
    let mut rdbx = Console::start(&[prog("survivor-O0").to_str().unwrap()]);
    rdbx.send("stop in step");
    rdbx.send("run");
    rdbx.expect("the breakpoint", TIMEOUT, |l| {
        l.starts_with("stopped in step")
    });
    rdbx.send("maintenance crash panic");
    rdbx.wait_for_end();
    // The program writes to rdbx's stdout, which it inherited.
    rdbx.expect("the program's own end", TIMEOUT, |l| l == intact(0));
}

#[test]
fn a_broken_pipe_on_rdbx_output_lets_the_program_go() {
    // The reader of rdbx's output goes away: rdbx's next output fails
    // (EPIPE) and rdbx ends, letting the program go first.
    let target = Target::start(&prog("survivor-O0"), false);
    let pid = target.pid();
    let mut rdbx = std::process::Command::new(common::rdbx_bin())
        .args(["-p", &pid.to_string()])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn rdbx");
    let mut stdin = rdbx.stdin.take().expect("stdin");
    let stdout = rdbx.stdout.take().expect("stdout");
    use std::io::{BufRead, Write};
    let mut lines = std::io::BufReader::new(stdout).lines();
    let first = lines.next().expect("a line").expect("text");
    assert!(first.starts_with("Attached to process"), "{first}");
    writeln!(stdin, "stop in step").unwrap();
    drop(lines);
    writeln!(stdin, "cont").unwrap();
    writeln!(stdin, "where").unwrap();
    stdin.flush().unwrap();
    let output = rdbx.wait_with_output().expect("rdbx ends");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(
        stderr.contains(&format!("process {pid} was let go")),
        "{stderr}"
    );
    let (rest, code) = target.finish();
    assert!(rest.contains(&intact(0)), "{rest:?}\n{stderr}");
    assert_eq!(code, Some(3));
}
