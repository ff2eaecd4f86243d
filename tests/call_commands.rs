//! `call FUNC(ARGS)`, `print FUNC(ARGS)` and `dbxenv call_timeout` through
//! the rdbx binary.

mod common;

use common::*;
use std::path::{Path, PathBuf};

/// tests/programs/call_args.c, built once per source text.
fn call_args_program() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT.get_or_init(build_call_args).clone()
}

fn build_call_args() -> PathBuf {
    use std::hash::{Hash, Hasher};
    let source = sources_dir().join("call_args.c");
    let text = std::fs::read(&source).expect("read source");
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    text.hash(&mut hasher);
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("call-programs");
    std::fs::create_dir_all(&dir).expect("create dir");
    let out = dir.join(format!("call_args-cli-{:016x}", hasher.finish()));
    if !out.exists() {
        let aside = dir.join(format!("call_args-cli.{}.tmp", std::process::id()));
        let status = std::process::Command::new("gcc")
            .args(["-g", "-O0", "-pthread", "call_args.c", "-o"])
            .arg(&aside)
            .current_dir(sources_dir())
            .status()
            .expect("gcc");
        assert!(status.success(), "gcc failed for call_args.c");
        std::fs::rename(&aside, &out).expect("publish program");
    }
    out
}

#[test]
fn print_and_call_show_typed_results() {
    let o = Rdbx::batch()
        .cmds(&[
            "stop in stop_here",
            "run",
            "print half(3)",
            "print mix(1, 2.5, 3, 0.25, \"abcd\")",
            "p measure(\"hello\") + 1",
            "print greeting()",
            "print initial(\"xyz\")",
            "call bump(4)",
            "print counter",
            "call half(7)",
            "print bump(1)",
            "print counter",
            "print half()",
            "call counter",
            "cont",
        ])
        .prog(&call_args_program(), &[])
        .run();
    assert_eq!(o.printed_one("half(3)"), "1.5");
    assert_eq!(o.printed_one("mix(1, 2.5, 3, 0.25, \"abcd\")"), "10.75");
    assert_eq!(o.printed_one("$1"), "6");
    assert!(
        o.printed_one("greeting()").ends_with(" \"hello there\""),
        "{}",
        o.transcript()
    );
    assert_eq!(o.printed_one("initial(\"xyz\")"), "120 'x'");
    // `call` of a void function prints nothing; `print` says void.
    assert!(o.printed("bump(4)").is_empty(), "{}", o.transcript());
    assert_eq!(o.printed_one("bump(1)"), "void");
    assert_eq!(o.printed("counter"), ["4", "5"]);
    assert_eq!(o.printed_one("half(7)"), "3.5");
    assert!(
        o.stderr
            .contains("too few arguments in the call to half: it takes 1, 0 given"),
        "{}",
        o.transcript()
    );
    assert!(
        o.stderr.contains("call: expected FUNC(ARGS)"),
        "{}",
        o.transcript()
    );
    o.assert_out_contains("counter=5 text=none");
    assert_eq!(o.exit_lines(), [0]);
}

#[test]
fn a_call_that_runs_too_long_is_abandoned() {
    let o = Rdbx::batch()
        .cmds(&[
            "dbxenv call_timeout 0.5",
            "dbxenv",
            "stop in stop_here",
            "run",
            "call forever()",
            "set call-timeout 10",
            "dbxenv call_timeout",
            "call crash_here(0)",
            "print leave(3)",
            "print half(1)",
        ])
        .prog(&call_args_program(), &[])
        .run();
    assert!(
        o.stderr.contains(
            "rdbx: the call to forever did not return within 0.5 s; abandoned and the \
             thread's state restored"
        ),
        "{}",
        o.transcript()
    );
    assert_eq!(
        o.out_lines()
            .iter()
            .filter(|l| l.starts_with("call_timeout"))
            .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
            .collect::<Vec<_>>(),
        ["call_timeout 0.5", "call_timeout 10"]
    );
    assert!(
        o.stderr
            .contains("the call to crash_here got SIGSEGV in crash_here"),
        "{}",
        o.transcript()
    );
    // The program exits inside the call: said, then reported, then gone.
    assert!(
        o.stderr
            .contains("the program exited with code 3 during the call to leave"),
        "{}",
        o.transcript()
    );
    assert_eq!(o.exit_lines(), [3]);
    assert!(o.stderr.contains("no process"), "{}", o.transcript());
}

/// Ctrl-C during `call` stops the call at once: abandoned, the thread's
/// state restored, and the session goes on.
#[test]
fn ctrl_c_abandons_a_call_at_once() {
    let program = call_args_program();
    let mut rdbx = Console::start(&[program.to_str().unwrap()]);
    rdbx.send("stop in stop_here");
    rdbx.send("run");
    rdbx.expect("the breakpoint", TIMEOUT, |l| {
        l.starts_with("stopped in stop_here")
    });
    rdbx.send("call forever()");
    std::thread::sleep(std::time::Duration::from_millis(300));
    let sent = std::time::Instant::now();
    rdbx.signal(libc::SIGINT);
    rdbx.send("print half(8)");
    rdbx.expect("the answer after the call", TIMEOUT, |l| {
        l.contains("half(8) = 4")
    });
    assert!(
        sent.elapsed() < std::time::Duration::from_secs(2),
        "{:?}\n{}",
        sent.elapsed(),
        rdbx.transcript()
    );
    assert!(
        rdbx.stderr().contains(
            "the call to forever was interrupted; abandoned and the thread's state restored"
        ),
        "{}",
        rdbx.transcript()
    );
    rdbx.finish(true);
}
