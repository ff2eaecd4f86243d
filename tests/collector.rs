//! The collector against the truth: tests/programs/phases.c measures its
//! own thread CPU time per function and prints it; each test runs it under
//! `rdbx collect` or rdbx with `collector enable`, reads the experiment
//! back (experiment crate reader + analyzer's per-function times) and
//! compares. Tolerances (from the issue): per function within 10% or
//! 0.05 s, the experiment's total CPU within 3% of the process's rusage.

mod common;

use analyzer::functions::{clock_profile, ClockProfile};
use common::*;
use experiment::log::{Event, TerminatedHow};
use experiment::Experiment;
use std::collections::HashMap;
use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// `rdbx collect ARGS -- phases MODE SECONDS` in `dir`.
fn collect(dir: &Path, options: &[&str], mode: &[&str]) -> Output {
    let output = Command::new(rdbx_bin())
        .arg("collect")
        .args(options)
        .arg(phases())
        .args(mode)
        .current_dir(dir)
        .output()
        .expect("run rdbx collect");
    assert!(
        output.status.success(),
        "rdbx collect failed: {}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// The program's own figures: "cpu NAME SECONDS" and "total SECONDS".
fn truth(stdout: &str) -> HashMap<String, f64> {
    let mut figures = HashMap::new();
    for line in stdout.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["cpu", name, seconds] => {
                figures.insert(name.to_string(), seconds.parse().expect("seconds"));
            }
            ["total", seconds] => {
                figures.insert("total".to_string(), seconds.parse().expect("seconds"));
            }
            _ => {}
        }
    }
    figures
}

fn profile_of(dir: &Path) -> ClockProfile {
    let expt = Experiment::open(dir).unwrap_or_else(|e| panic!("open {}: {e}", dir.display()));
    clock_profile(&expt).expect("clock profile")
}

fn inclusive_seconds(profile: &ClockProfile, function: &str) -> f64 {
    profile
        .function(function)
        .map_or(0.0, |f| f.inclusive_ns as f64 / 1e9)
}

fn assert_function_close(profile: &ClockProfile, function: &str, expected: f64) {
    let measured = inclusive_seconds(profile, function);
    let tolerance = (expected * 0.10).max(0.05);
    assert!(
        (measured - expected).abs() <= tolerance,
        "{function}: recorded {measured:.3}s, the program measured {expected:.3}s (tolerance {tolerance:.3}s)\n{:#?}",
        profile.functions
    );
}

fn assert_total_close(profile: &ClockProfile, process_total: f64) {
    let recorded = profile.total_ns as f64 / 1e9;
    assert!(
        (recorded - process_total).abs() <= process_total * 0.03,
        "experiment total {recorded:.3}s against the process's rusage {process_total:.3}s (3%)"
    );
}

fn log_of(dir: &Path) -> Vec<Event> {
    Experiment::open(dir)
        .expect("open")
        .log()
        .expect("log")
        .into_iter()
        .map(|e| e.event)
        .collect()
}

#[test]
fn threads_are_profiled_per_function_and_in_total() {
    let dir = scratch_dir("collect-threads");
    let output = collect(&dir, &["-o", "t.er"], &["threads", "0.6"]);
    let truth = truth(&String::from_utf8_lossy(&output.stdout));
    let profile = profile_of(&dir.join("t.er"));
    for function in ["worker_a", "worker_b", "main_work"] {
        assert_function_close(&profile, function, truth[function]);
    }
    assert_total_close(&profile, truth["total"]);
    let threads = log_of(&dir.join("t.er"))
        .iter()
        .filter(|e| matches!(e, Event::ThreadStart { .. }))
        .count();
    assert_eq!(threads, 3, "main and two workers");
}

#[test]
fn stacks_through_libc_at_o2_reach_main() {
    let dir = scratch_dir("collect-libc");
    let output = collect(&dir, &["-o", "libc.er", "-p", "hi"], &["libc", "0.6"]);
    let truth = truth(&String::from_utf8_lossy(&output.stdout));
    let profile = profile_of(&dir.join("libc.er"));
    assert_function_close(&profile, "sort_work", truth["sort_work"]);
    assert_function_close(&profile, "compare", inclusive_seconds(&profile, "compare"));
    // qsort's own frames are in libc; every stack must get through them.
    let qsort = inclusive_seconds(&profile, "qsort_r") + inclusive_seconds(&profile, "qsort");
    assert!(
        qsort > 0.3,
        "time under qsort: {qsort}\n{:#?}",
        profile.functions
    );
    let reaching = profile.events_reaching_main as f64 / profile.events as f64;
    assert!(
        reaching > 0.97 && profile.failed_stacks * 50 < profile.events,
        "{} of {} stacks reach main, {} failed",
        profile.events_reaching_main,
        profile.events,
        profile.failed_stacks
    );
}

#[test]
fn fork_child_writes_f1_inside_the_founder() {
    let dir = scratch_dir("collect-fork");
    let output = collect(&dir, &["-o", "f.er"], &["fork", "0.5"]);
    let truth = truth(&String::from_utf8_lossy(&output.stdout));
    let founder = dir.join("f.er");
    let parent = profile_of(&founder);
    assert_function_close(&parent, "parent_work", truth["parent_work"]);
    assert!(inclusive_seconds(&parent, "child_work") == 0.0);
    let child_dir = founder.join("_f1.er");
    let child = profile_of(&child_dir);
    assert_function_close(&child, "child_work", truth["child_work"]);
    assert!(inclusive_seconds(&child, "parent_work") == 0.0);
    assert!(log_of(&founder)
        .iter()
        .any(|e| matches!(e, Event::Fork { child_expt, .. } if child_expt == "_f1.er")));
    assert!(log_of(&child_dir)
        .iter()
        .any(|e| matches!(e, Event::Descendant { parent_expt, .. } if parent_expt == ".")));
    let causes: Vec<String> = Experiment::open(&founder)
        .unwrap()
        .samples()
        .unwrap()
        .iter()
        .map(|s| s.cause.name().to_string())
        .collect();
    assert!(
        causes.contains(&"fork-before".to_string()) && causes.contains(&"fork-after".to_string()),
        "{causes:?}"
    );
    let archived = Experiment::open(&founder).unwrap().archive_index().unwrap();
    assert!(archived.iter().any(|o| o.path == phases()), "{archived:?}");
}

#[test]
fn exec_writes_x1_and_no_follow_writes_nothing() {
    let dir = scratch_dir("collect-exec");
    let output = collect(&dir, &["-o", "x.er"], &["exec", "0.4"]);
    let truth = truth(&String::from_utf8_lossy(&output.stdout));
    let founder = profile_of(&dir.join("x.er"));
    assert_function_close(&founder, "main_work", truth["main_work"]);
    let exec = profile_of(&dir.join("x.er/_x1.er"));
    assert_function_close(&exec, "phase_one", truth["phase_one"]);
    assert_function_close(&exec, "phase_two", truth["phase_two"]);

    collect(&dir, &["-o", "nofollow.er", "-F", "off"], &["exec", "0.2"]);
    assert!(!dir.join("nofollow.er/_x1.er").exists());
}

#[test]
fn nothing_is_recorded_while_paused() {
    let dir = scratch_dir("collect-pause");
    let output = collect(&dir, &["-o", "p.er"], &["pause", "0.4"]);
    let truth = truth(&String::from_utf8_lossy(&output.stdout));
    let profile = profile_of(&dir.join("p.er"));
    assert_function_close(&profile, "phase_one", truth["phase_one"]);
    assert_function_close(&profile, "phase_two", truth["phase_two"]);
    let paused = inclusive_seconds(&profile, "paused_work");
    assert!(
        paused <= 0.02,
        "paused_work recorded {paused}s while paused"
    );
    let log = log_of(&dir.join("p.er"));
    assert!(log
        .iter()
        .any(|e| matches!(e, Event::Pause { cause } if cause == "api")));
    assert!(log
        .iter()
        .any(|e| matches!(e, Event::Resume { cause } if cause == "api")));
}

#[test]
fn deep_stacks_are_truncated_at_the_limit() {
    let dir = scratch_dir("collect-deep");
    collect(&dir, &["-o", "d.er"], &["deep", "0.3", "300"]);
    let expt = Experiment::open(dir.join("d.er")).unwrap();
    let stacks = expt.stacks().unwrap();
    let events = expt.clock_events().unwrap();
    let truncated: Vec<_> = events
        .iter()
        .filter_map(|e| stacks.get(&e.stack_id))
        .filter(|s| s.status == experiment::layout::StackStatus::Truncated)
        .collect();
    assert!(
        truncated.len() * 10 >= events.len() * 9,
        "{} of {} truncated",
        truncated.len(),
        events.len()
    );
    assert!(truncated.iter().all(|s| s.pcs.len() == 256));

    // The limit is settable: 400 frames hold the whole recursion.
    collect(
        &dir,
        &["-o", "d400.er", "-D", "400"],
        &["deep", "0.2", "300"],
    );
    let profile = profile_of(&dir.join("d400.er"));
    assert_eq!(profile.truncated_stacks, 0);
    assert!(
        profile.events_reaching_main * 10 >= profile.events * 9,
        "{profile:?}"
    );
}

#[test]
fn sigkill_mid_run_leaves_a_readable_experiment() {
    let dir = scratch_dir("collect-sigkill");
    let mut child = Command::new(rdbx_bin())
        .args(["collect", "-o", "k.er"])
        .arg(phases())
        .args(["forever", "0.1"])
        .current_dir(&dir)
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("spawn rdbx collect");
    let expt_dir = dir.join("k.er");
    // Wait until the collector has written a second of CPU time.
    let deadline = Instant::now() + Duration::from_secs(30);
    let target_pid = loop {
        assert!(Instant::now() < deadline, "the collector did not record");
        std::thread::sleep(Duration::from_millis(100));
        let Ok(expt) = Experiment::open(&expt_dir) else {
            continue;
        };
        let Ok(events) = expt.clock_events() else {
            continue;
        };
        let recorded: u64 = events.iter().map(|e| u64::from(e.weight_ns)).sum();
        let pid = expt
            .log()
            .unwrap_or_default()
            .iter()
            .find_map(|e| match &e.event {
                Event::Start(start) => Some(start.pid),
                _ => None,
            });
        if let (Some(pid), true) = (pid, recorded > 1_000_000_000) {
            break pid;
        }
    };
    // SAFETY: kill(2) on the target's pid.
    unsafe { libc::kill(target_pid as i32, libc::SIGKILL) };
    let status = child.wait().expect("wait rdbx collect");
    assert_eq!(
        status.code(),
        Some(128 + 9),
        "rdbx collect exits like the target"
    );
    let expt = Experiment::open(&expt_dir).unwrap();
    let summary = expt.summary().unwrap();
    assert_eq!(summary.profile_blocks.damaged, 0);
    assert_eq!(summary.stacks_blocks.damaged, 0);
    assert!(!summary.ended, "the collector never got to write `end`");
    assert_eq!(summary.terminated, Some((TerminatedHow::Signal, 9)));
    let profile = clock_profile(&expt).unwrap();
    assert!(inclusive_seconds(&profile, "phase_one") > 0.9);
    assert_eq!(profile.events_without_stack, 0);
}

/// rdbx `collector enable` + a breakpoint: `collector sample record` at
/// phase_two's breakpoint splits the run into the two phases.
#[test]
fn sample_record_at_a_breakpoint_splits_two_phases() {
    let dir = scratch_dir("dbx-sample");
    let out = Rdbx::batch()
        .cwd(&dir)
        .cmds(&[
            "collector enable",
            "collector store filename phases.er",
            "stop in phase_two",
            "run two-phases 0.5",
            "collector sample record second",
            "cont",
        ])
        .prog(phases(), &[])
        .run();
    let truth = truth(&out.stdout);
    let expt = Experiment::open(dir.join("phases.er"))
        .unwrap_or_else(|e| panic!("{e}\n{}", out.transcript()));
    let samples = expt.samples().unwrap();
    let split = samples
        .iter()
        .find(|s| s.label == "second")
        .unwrap_or_else(|| panic!("no sample labelled second: {samples:?}"))
        .timestamp_ns;
    assert!(
        samples.iter().any(|s| s.cause.name() == "dbx-stop"),
        "{samples:?}"
    );
    let events = expt.clock_events().unwrap();
    let before: u64 = events
        .iter()
        .filter(|e| e.timestamp_ns < split)
        .map(|e| u64::from(e.weight_ns))
        .sum();
    let after: u64 = events
        .iter()
        .filter(|e| e.timestamp_ns >= split)
        .map(|e| u64::from(e.weight_ns))
        .sum();
    for (recorded, function) in [(before, "phase_one"), (after, "phase_two")] {
        let recorded = recorded as f64 / 1e9;
        let expected = truth[function];
        assert!(
            (recorded - expected).abs() <= (expected * 0.1).max(0.05),
            "{function}: {recorded:.3}s recorded in its interval, {expected:.3}s measured\n{}",
            out.transcript()
        );
    }
}

/// `collector pause` at one breakpoint, `collector resume` at the next:
/// the function run in between is not recorded.
#[test]
fn debugger_pause_and_resume() {
    let dir = scratch_dir("dbx-pause");
    let out = Rdbx::batch()
        .cwd(&dir)
        .cmds(&[
            "collector enable",
            "collector store filename pause.er",
            "stop in phase_one",
            "stop in phase_two",
            "run two-phases 0.4",
            "collector pause",
            "cont",
            "collector resume",
            "cont",
        ])
        .prog(phases(), &[])
        .run();
    let truth = truth(&out.stdout);
    let profile = profile_of(&dir.join("pause.er"));
    assert!(
        inclusive_seconds(&profile, "phase_one") <= 0.02,
        "{:#?}",
        profile.functions
    );
    assert_function_close(&profile, "phase_two", truth["phase_two"]);
    let log = log_of(&dir.join("pause.er"));
    assert!(log
        .iter()
        .any(|e| matches!(e, Event::Pause { cause } if cause == "debugger")));
}

/// The program's own SIGPROF profiling (handler + setitimer) keeps
/// working beside the collector's, and blocking SIGPROF does not hide the
/// program from the collector.
#[test]
fn the_programs_own_sigprof_handler_and_timer_keep_working() {
    let dir = scratch_dir("collect-own-sigprof");
    let alone = Command::new(phases())
        .args(["own-sigprof", "0.3"])
        .output()
        .unwrap();
    let output = collect(&dir, &["-o", "s.er"], &["own-sigprof", "0.3"]);
    for run in [&alone, &output] {
        let text = String::from_utf8_lossy(&run.stdout);
        let ticks: u32 = text
            .lines()
            .find_map(|l| l.strip_prefix("own_sigprof "))
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no own_sigprof line: {text}"));
        assert!(
            ticks >= 10,
            "the program's own SIGPROF handler ran {ticks} times\n{text}"
        );
    }
    let truth = truth(&String::from_utf8_lossy(&output.stdout));
    let profile = profile_of(&dir.join("s.er"));
    assert_function_close(&profile, "phase_one", truth["phase_one"]);
    assert_function_close(&profile, "phase_two", truth["phase_two"]);
}

/// `-y SIGNAL` starts paused and toggles; `-l SIGNAL` records a sample.
#[test]
fn pause_and_sample_signals() {
    let dir = scratch_dir("collect-signals");
    let output = collect(
        &dir,
        &["-o", "y.er", "-y", "USR1", "-l", "USR2"],
        &["signals", "0.3"],
    );
    let truth = truth(&String::from_utf8_lossy(&output.stdout));
    let expt = Experiment::open(dir.join("y.er")).unwrap();
    let profile = clock_profile(&expt).unwrap();
    assert!(
        inclusive_seconds(&profile, "paused_work") <= 0.02,
        "{:#?}",
        profile.functions
    );
    assert_function_close(&profile, "phase_one", truth["phase_one"]);
    assert_function_close(&profile, "phase_two", truth["phase_two"]);
    let samples = expt.samples().unwrap();
    assert!(
        samples.iter().any(|s| s.cause.name() == "signal"),
        "{samples:?}"
    );
    let log = log_of(&dir.join("y.er"));
    assert!(log
        .iter()
        .any(|e| matches!(e, Event::Resume { cause } if cause == "signal")));
}

/// collector_api.h's weak references: without the collector the calls do
/// nothing and the program runs unchanged.
#[test]
fn the_api_is_harmless_without_the_collector() {
    let output = Command::new(phases())
        .args(["pause", "0.05"])
        .output()
        .unwrap();
    assert!(output.status.success());
    let truth = truth(&String::from_utf8_lossy(&output.stdout));
    assert!(truth.contains_key("paused_work") && truth.contains_key("phase_two"));
}

/// A library dlopen'ed by path appears in the load-object map after the
/// objects present at start.
#[test]
fn dlopen_adds_to_the_load_object_map() {
    let dir = scratch_dir("collect-dlopen");
    let library = prog("libdllib.so");
    let output = Command::new(rdbx_bin())
        .args(["collect", "-o", "dl.er"])
        .arg(prog("dlmain-O0"))
        .arg(&library)
        .current_dir(&dir)
        .output()
        .expect("run rdbx collect");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let log = log_of(&dir.join("dl.er"));
    let objects: Vec<&Path> = log
        .iter()
        .filter_map(|e| match e {
            Event::Object { path, .. } => Some(path.as_path()),
            _ => None,
        })
        .collect();
    let first_sample = log
        .iter()
        .position(|e| matches!(e, Event::Sample(_)))
        .unwrap();
    let dlopened = log
        .iter()
        .position(|e| matches!(e, Event::Object { path, .. } if path == &library))
        .unwrap_or_else(|| panic!("no object line for {}: {objects:?}", library.display()));
    assert!(
        dlopened > first_sample,
        "the library came later than start: {log:?}"
    );
    assert!(objects
        .iter()
        .any(|p| p.to_string_lossy().contains("libc.so")));
}

/// A fork while another thread holds the dynamic loader's lock (inside
/// dl_iterate_phdr): the child's copy of the lock is held forever, and the
/// child's experiment starts without asking the loader — with the
/// parent's object map, which is the child's too.
#[test]
fn a_fork_while_the_loader_is_locked_starts_the_childs_experiment() {
    let dir = scratch_dir("collect-fork-loader");
    let mut child = Command::new(rdbx_bin())
        .args(["collect", "-o", "l.er"])
        .arg(prog("fork_in_loader-O0"))
        .current_dir(&dir)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("spawn rdbx collect");
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the fork child hung (it waited for the loader's lock)");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stdout = String::new();
    use std::io::Read;
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut stdout)
        .unwrap();
    assert!(status.success(), "{stdout}");
    assert!(
        stdout.contains("child ok") && stdout.contains("parent ok 0"),
        "{stdout}"
    );
    let child_log = log_of(&dir.join("l.er").join("_f1.er"));
    assert!(
        child_log.iter().any(|e| matches!(e, Event::Object { .. })),
        "the child's experiment has the object map: {child_log:?}"
    );
}
