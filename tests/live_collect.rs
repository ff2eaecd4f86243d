//! Collection started on a running process: `collector enable` at a stop
//! of a process rdbx started without collection loads libcollector.so
//! with an injected dlopen and starts it (`attach=1`). The program
//! (tests/programs/live_threads.c) measures each thread's own CPU time
//! after the stop and prints it; the experiment must agree per thread.

mod common;

use common::*;
use experiment::log::Event;
use experiment::Experiment;
use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

fn live_threads() -> &'static Path {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| build("live_threads"))
}

fn live_fork() -> &'static Path {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| build("live_fork"))
}

/// tests/programs/NAME.c at -O0, built once per test binary.
fn build(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("live-programs");
    std::fs::create_dir_all(&dir).expect("mkdir");
    let out = dir.join(format!("{name}-{}", std::process::id()));
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/programs/{name}.c"));
    let status = Command::new("gcc")
        .args(["-O0", "-g", "-pthread"])
        .arg(&source)
        .arg("-o")
        .arg(&out)
        .status()
        .expect("gcc must be installed");
    assert!(status.success(), "gcc failed on {name}.c");
    out
}

/// "cpu TID SECONDS" lines: each thread's CPU after the barrier.
fn measured_cpu(text: &str) -> HashMap<u32, f64> {
    text.lines()
        .filter_map(|line| {
            let words: Vec<&str> = line.split_whitespace().collect();
            match words.as_slice() {
                ["cpu", tid, seconds] => Some((tid.parse().ok()?, seconds.parse().ok()?)),
                _ => None,
            }
        })
        .collect()
}

/// The program's deterministic lines ("worker N sum X", "done"), sorted
/// (threads finish in any order).
fn program_lines(text: &str) -> Vec<String> {
    // rdbx tells thread exits as they happen, on the same output: one can
    // fall between the program's "done" and its newline (puts writes them
    // apart on an unbuffered stream).
    let mut lines: Vec<String> = text
        .lines()
        .map(|l| l.split("[Thread").next().unwrap_or(l))
        .filter(|l| l.starts_with("worker ") || *l == "done")
        .map(str::to_string)
        .collect();
    lines.sort();
    lines
}

/// Each thread's recorded CPU (sum of event weights) must be within 10% of
/// what the thread measured itself.
fn assert_recorded_like_measured(
    expt: &Experiment,
    measured: &HashMap<u32, f64>,
    transcript: &str,
) {
    let mut recorded: HashMap<u32, u64> = HashMap::new();
    for event in expt.clock_events().expect("clock events") {
        *recorded.entry(event.tid).or_default() += u64::from(event.weight_ns);
    }
    for (tid, seconds) in measured {
        let got = recorded.get(tid).copied().unwrap_or(0) as f64 / 1e9;
        assert!(
            (got - seconds).abs() <= seconds * 0.10,
            "thread {tid}: {got:.3}s recorded, {seconds:.3}s measured by the thread\n{recorded:?}\n{transcript}"
        );
    }
}

/// The events of an experiment's log.
fn log_events(expt: &Experiment) -> Vec<Event> {
    expt.log()
        .expect("log")
        .into_iter()
        .map(|e| e.event)
        .collect()
}

/// Starts `command` with its stdio piped and waits for its `waiting` line.
fn start_waiting(
    mut command: Command,
) -> (std::process::Child, BufReader<std::process::ChildStdout>) {
    use std::process::Stdio;
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the target");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut first = String::new();
    stdout.read_line(&mut first).expect("read");
    assert_eq!(first, "waiting\n");
    (child, stdout)
}

#[test]
fn enable_at_a_stop_profiles_existing_and_new_threads() {
    let program = live_threads();
    let plain = Command::new(program)
        .arg("0.3")
        .output()
        .expect("run live_threads");
    assert!(plain.status.success());
    let dir = scratch_dir("live-enable");
    let out = Rdbx::batch()
        .cwd(&dir)
        .cmds(&[
            "collector store filename live.er",
            "stop in ready",
            "run",
            "collector enable",
            "cont",
        ])
        .prog(program, &["0.3"])
        .run();
    let transcript = out.transcript();
    assert_eq!(
        program_lines(&out.stdout),
        program_lines(&String::from_utf8_lossy(&plain.stdout)),
        "the program's output changed\n{transcript}"
    );
    let measured = measured_cpu(&format!("{}\n{}", out.stdout, out.stderr));
    assert_eq!(
        measured.len(),
        5,
        "four workers and a late thread\n{transcript}"
    );

    let expt = Experiment::open(dir.join("live.er"))
        .unwrap_or_else(|e| panic!("open live.er: {e}\n{transcript}"));
    assert_recorded_like_measured(&expt, &measured, &transcript);

    let log: Vec<Event> = log_events(&expt);
    let kinds = log
        .iter()
        .find_map(|e| match e {
            Event::Other { name, fields } if name == "kinds" => Some(fields.clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no kinds line in the log: {log:?}"));
    let field = |key: &str| {
        kinds
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
            .unwrap_or("")
    };
    assert_eq!(field("available"), "clock-profile,samples");
    assert_eq!(field("unavailable"), "heap,sync,io,mpi");
    assert!(log.iter().any(|e| matches!(e, Event::End)), "{log:?}");
}

#[test]
fn a_library_that_does_not_load_gives_dlerror_text() {
    let dir = scratch_dir("live-dlerror");
    let not_elf = dir.join("libnot-elf.so");
    std::fs::write(&not_elf, "this is not a shared library\n").expect("write");
    let out = Rdbx::batch()
        .cwd(&dir)
        .env("RDBX_COLLECTOR", &not_elf)
        .cmds(&["stop in ready", "run", "collector enable", "cont"])
        .prog(live_threads(), &["0.05"])
        .run();
    let transcript = out.transcript();
    let error = out
        .stderr
        .lines()
        .find(|l| l.contains("cannot load"))
        .unwrap_or_else(|| panic!("no load error\n{transcript}"));
    assert!(
        error.contains(&not_elf.display().to_string())
            && (error.contains("invalid ELF header") || error.contains("file too short")),
        "{error}\n{transcript}"
    );
    // The process was left as it was: it runs to its end normally.
    assert!(out.stdout.contains("done"), "{transcript}");
    assert!(
        !dir.join("test.1.er").exists(),
        "no experiment is created when the library does not load"
    );
}

#[test]
fn a_fork_after_enable_writes_the_childs_experiment() {
    let dir = scratch_dir("live-fork");
    let out = Rdbx::batch()
        .cwd(&dir)
        .cmds(&["stop in ready", "run", "collector enable", "cont"])
        .prog(live_fork(), &[])
        .run();
    let transcript = out.transcript();
    out.assert_out_contains("child done");
    out.assert_out_contains("parent done");
    let child = Experiment::open(dir.join("test.1.er/_f1.er"))
        .unwrap_or_else(|e| panic!("open _f1.er: {e}\n{transcript}"));
    let log: Vec<Event> = log_events(&child);
    assert!(
        log.iter().any(|e| matches!(e, Event::Descendant { .. })),
        "{log:?}"
    );
    let child_cpu: u64 = child
        .clock_events()
        .expect("events")
        .iter()
        .map(|e| u64::from(e.weight_ns))
        .sum();
    assert!(
        child_cpu >= 50_000_000,
        "the child spun 0.1 s; {child_cpu} ns recorded\n{transcript}"
    );
    let parent: Vec<Event> = Experiment::open(dir.join("test.1.er"))
        .expect("open")
        .log()
        .expect("log")
        .into_iter()
        .map(|e| e.event)
        .collect();
    assert!(
        parent
            .iter()
            .any(|e| matches!(e, Event::Fork { child_expt, .. } if child_expt == "_f1.er")),
        "{parent:?}"
    );
}

/// The issue's own case: a process already running (not started by rdbx)
/// is attached to with `rdbx -p`, `collector enable` loads the collector,
/// `detach` leaves it collecting, and the process closes the experiment
/// when it exits. Four workers and a thread born after the enable are all
/// profiled, each within 10% of the CPU it measured itself.
#[test]
fn attach_enable_and_detach_profiles_a_running_process() {
    use std::io::Write;
    let program = live_threads();
    let plain = Command::new(program)
        .arg("0.3")
        .output()
        .expect("run live_threads");
    let dir = scratch_dir("live-attach");
    let mut command = Command::new(program);
    command.args(["0.3", "wait"]);
    let (mut target, mut stdout) = start_waiting(command);
    let out = Rdbx::batch()
        .cwd(&dir)
        .arg("-p")
        .arg(target.id().to_string())
        .cmds(&[
            "collector store filename live.er",
            "collector enable",
            "detach",
        ])
        .run();
    let transcript = out.transcript();
    assert!(
        out.stdout.contains("collection goes on in the process"),
        "{transcript}"
    );
    target
        .stdin
        .take()
        .expect("stdin")
        .write_all(b"go")
        .expect("release the program");
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).expect("stdout");
    let mut errors = String::new();
    std::io::Read::read_to_string(&mut target.stderr.take().expect("stderr"), &mut errors)
        .expect("stderr");
    let status = target.wait().expect("wait");
    assert!(status.success(), "{rest}\n{errors}\n{transcript}");
    assert_eq!(
        program_lines(&rest),
        program_lines(&String::from_utf8_lossy(&plain.stdout)),
        "the program's output changed\n{transcript}"
    );
    let measured = measured_cpu(&errors);
    assert_eq!(measured.len(), 5, "{errors}");
    let expt = Experiment::open(dir.join("live.er"))
        .unwrap_or_else(|e| panic!("open live.er: {e}\n{transcript}"));
    assert_recorded_like_measured(&expt, &measured, &transcript);
    // Closed by the collector itself when the process exited.
    let log = expt.log().expect("log");
    assert!(
        log.iter().any(|e| matches!(e.event, Event::End)),
        "no end line\n{log:?}"
    );
}

/// A thread inside dlopen (its library's constructor never returns) holds
/// the loader's lock: the injected dlopen would wait for ever. rdbx gives
/// up after the call timeout, says why, and the program goes on as before.
#[test]
fn enable_while_another_thread_holds_the_loader_lock_times_out_cleanly() {
    let dir = scratch_dir("live-lock");
    let program = build("live_lock");
    let library = dir.join("liblive_lock.so");
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/programs/live_lock_lib.c");
    let status = Command::new("gcc")
        .args(["-shared", "-fPIC", "-O0"])
        .arg(&source)
        .arg("-o")
        .arg(&library)
        .status()
        .expect("gcc");
    assert!(status.success());
    let started = std::time::Instant::now();
    let out = Rdbx::batch()
        .cwd(&dir)
        .cmds(&[
            "dbxenv call_timeout 1",
            "stop in ready",
            "run",
            "collector enable",
            "cont",
        ])
        .prog(&program, &[library.to_str().unwrap()])
        .run();
    let transcript = out.transcript();
    let error = out
        .stderr
        .lines()
        .find(|l| l.contains("cannot load"))
        .unwrap_or_else(|| panic!("no load error\n{transcript}"));
    assert!(
        error.contains("did not return within 1 s") && error.contains("loader or malloc lock"),
        "{error}\n{transcript}"
    );
    out.assert_out_contains("done");
    assert!(
        !dir.join("test.1.er").exists(),
        "no experiment is left behind\n{transcript}"
    );
    assert!(started.elapsed().as_secs() < 30, "{transcript}");
}

/// A seccomp filter may kill the process for a system call the loader
/// makes: rdbx refuses unless RDBX_INJECT_SECCOMP=1, and with it (this
/// filter allows everything) collection works.
#[test]
fn a_seccomp_filtered_process_is_refused_unless_allowed() {
    let program = build("live_seccomp");
    let dir = scratch_dir("live-seccomp");
    let out = Rdbx::batch()
        .cwd(&dir)
        .cmds(&["stop in ready", "run", "collector enable", "cont"])
        .prog(&program, &[])
        .run();
    let transcript = out.transcript();
    assert!(
        out.stderr.contains("has a seccomp filter") && out.stderr.contains("RDBX_INJECT_SECCOMP=1"),
        "{transcript}"
    );
    out.assert_out_contains("done");
    assert!(!dir.join("test.1.er").exists(), "{transcript}");

    let out = Rdbx::batch()
        .cwd(&dir)
        .env("RDBX_INJECT_SECCOMP", "1")
        .cmds(&["stop in ready", "run", "collector enable", "cont"])
        .prog(&program, &[])
        .run();
    let transcript = out.transcript();
    out.assert_out_contains("done");
    let expt = Experiment::open(dir.join("test.1.er"))
        .unwrap_or_else(|e| panic!("open test.1.er: {e}\n{transcript}"));
    let log = expt.log().expect("log");
    assert!(
        log.iter().any(|e| matches!(e.event, Event::End)),
        "{log:?}\n{transcript}"
    );
}

/// A process in a chroot (a container's view of the file system): its
/// libc is not at the path its maps name. rdbx reads it through
/// /proc/PID/root, so functions resolve and calls work; collection, whose
/// experiment directory the process cannot see, is refused in one line.
#[test]
fn a_chrooted_process_is_debugged_through_its_own_root() {
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 || !Path::new("/usr/sbin/chroot").exists() {
        eprintln!("skipped: needs root and chroot");
        return;
    }
    let dir = scratch_dir("live-chroot");
    let root = dir.join("root");
    std::fs::create_dir_all(&root).expect("mkdir");
    let program = live_threads();
    std::fs::copy(program, root.join("prog")).expect("copy program");
    let ldd = Command::new("ldd").arg(program).output().expect("ldd");
    for library in String::from_utf8_lossy(&ldd.stdout)
        .split_whitespace()
        .filter(|w| w.starts_with('/'))
    {
        let inside = root.join(library.trim_start_matches('/'));
        std::fs::create_dir_all(inside.parent().unwrap()).expect("mkdir lib");
        std::fs::copy(library, &inside).expect("copy library");
    }
    let mut command = Command::new("/usr/sbin/chroot");
    command.arg(&root).args(["/prog", "0.05", "wait"]);
    let (mut target, mut stdout) = start_waiting(command);
    // chroot execs the program: same pid.
    let pid = target.id();
    let out = Rdbx::batch()
        .cwd(&dir)
        .arg("-p")
        .arg(pid.to_string())
        .cmds(&["print getpid()", "collector enable", "detach"])
        .run();
    let transcript = out.transcript();
    out.assert_out_contains(&format!("getpid() = {pid}"));
    assert!(
        out.stderr.contains("does not see") && out.stderr.contains("another mount namespace"),
        "{transcript}"
    );
    drop(target.stdin.take());
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).expect("stdout");
    let status = target.wait().expect("wait");
    // stdin closed: the program's read fails and it exits 1, as it would
    // without rdbx; what matters is that it was left running.
    assert_eq!(status.code(), Some(1), "{rest}\n{transcript}");
}

/// After a live start the collector commands act as after `run`: a sample
/// recorded at a stop, pause and resume, and `disable`, which closes the
/// experiment while the process runs on to its normal end.
#[test]
fn sample_pause_resume_and_disable_work_after_a_live_start() {
    let dir = scratch_dir("live-commands");
    let out = Rdbx::batch()
        .cwd(&dir)
        .cmds(&[
            "stop in ready",
            "run",
            "collector enable",
            "collector sample record before-barrier",
            "collector pause",
            "collector resume",
            "collector disable",
            "cont",
        ])
        .prog(live_threads(), &["0.05"])
        .run();
    let transcript = out.transcript();
    out.assert_out_contains("done");
    assert!(
        !out.stderr.lines().any(|l| l.starts_with("rdbx:")),
        "{transcript}"
    );
    let expt = Experiment::open(dir.join("test.1.er"))
        .unwrap_or_else(|e| panic!("open test.1.er: {e}\n{transcript}"));
    let log: Vec<Event> = log_events(&expt);
    assert!(
        log.iter()
            .any(|e| matches!(e, Event::Sample(s) if s.label == "before-barrier")),
        "{log:?}"
    );
    let pause = log.iter().position(|e| matches!(e, Event::Pause { .. }));
    let resume = log.iter().position(|e| matches!(e, Event::Resume { .. }));
    assert!(
        matches!((pause, resume), (Some(p), Some(r)) if p < r),
        "{log:?}"
    );
    // Closed by `disable`, before the workers ran: the program's spinning
    // after the stop is not in it.
    let end = log
        .iter()
        .position(|e| matches!(e, Event::End))
        .unwrap_or_else(|| panic!("no end line: {log:?}\n{transcript}"));
    assert!(end > resume.unwrap(), "{log:?}");
    let recorded: u64 = expt
        .clock_events()
        .expect("events")
        .iter()
        .map(|e| u64::from(e.weight_ns))
        .sum();
    assert!(
        recorded < 50_000_000,
        "{recorded} ns recorded after disable?"
    );
}
