//! Synchronization wait tracing against programs whose waits are known by
//! construction and measured by the program itself
//! (tests/programs/sync_waits.c: a mutex held 20 ms, a condition wait of
//! 30 ms, a join of a thread sleeping 40 ms, a sem_wait of 10 ms, a writer
//! waiting 15 ms for a reader, a barrier, and 100000 uncontended lock/unlock
//! pairs): every wait is in the experiment with its op, object, time within
//! 5% of the program's own measure and its caller; uncontended calls are
//! not; the threshold keeps only the long waits; the program's output is
//! unchanged. Also the debugger's `collector synctrace` and a collector
//! loaded into a running process (sync_attach.c).

mod common;

use common::*;
use experiment::log::Event;
use experiment::sync::SyncOp;
use experiment::{Experiment, SyncEventRecord};
use std::path::{Path, PathBuf};
use std::process::Command;

/// One wait as the program measured it (a `wait OP OBJECT NS CALLERS` line
/// of its stderr).
#[derive(Debug, Clone)]
struct Measured {
    op: String,
    object: u64,
    ns: u64,
    callers: Vec<String>,
}

/// What the program said on stderr: its waits, and the address of the
/// mutex it locks 100000 times uncontended.
struct Said {
    waits: Vec<Measured>,
    quiet_mutex: u64,
}

fn hex(text: &str) -> u64 {
    u64::from_str_radix(text.trim_start_matches("0x"), 16).expect("hex address")
}

fn said(stderr: &str) -> Said {
    let mut waits = Vec::new();
    let mut quiet_mutex = 0;
    for line in stderr.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words[..] {
            ["wait", op, object, ns, callers] => waits.push(Measured {
                op: op.to_string(),
                object: hex(object),
                ns: ns.parse().expect("ns"),
                callers: callers.split('/').map(String::from).collect(),
            }),
            ["object", "quiet_mutex", address] => quiet_mutex = hex(address),
            _ => {}
        }
    }
    assert!(
        quiet_mutex != 0,
        "the program names its quiet mutex:\n{stderr}"
    );
    Said { waits, quiet_mutex }
}

/// `rdbx collect -s SETTING` of sync_waits: the experiment, stdout, stderr.
fn collect(name: &str, setting: &str) -> (PathBuf, String, String) {
    let dir = scratch_dir(name);
    let output = Command::new(rdbx_bin())
        .args(["collect", "-s", setting, "-A", "off", "-o", "t.er"])
        .arg(prog("sync_waits-O0"))
        .current_dir(&dir)
        .output()
        .expect("run rdbx collect");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(output.status.success(), "{stdout}\n{stderr}");
    (dir.join("t.er"), stdout, stderr)
}

fn sync_events(expt: &Experiment) -> Vec<SyncEventRecord> {
    let mut events = Vec::new();
    let stats = expt
        .for_each_sync_event(|e| events.push(e))
        .expect("read the sync file");
    assert_eq!(stats.damaged, 0, "{stats:?}");
    events
}

/// The `sync threshold_ns= calibrated_ns=` line and the start line's
/// threshold.
fn thresholds(expt: &Experiment) -> (u64, u64, Option<u64>) {
    let log = expt.log().expect("log");
    let start = log
        .iter()
        .find_map(|e| match &e.event {
            Event::Start(start) => Some(start.synctrace_ns),
            _ => None,
        })
        .expect("start line");
    let (threshold, calibrated) = log
        .iter()
        .find_map(|e| match &e.event {
            Event::Other { name, fields } if name == "sync" => {
                let field = |key: &str| -> u64 {
                    fields
                        .iter()
                        .find(|(k, _)| k == key)
                        .map(|(_, v)| v.parse().expect("number"))
                        .expect("field")
                };
                Some((field("threshold_ns"), field("calibrated_ns")))
            }
            _ => None,
        })
        .expect("the sync line");
    (threshold, calibrated, start)
}

/// The waits the program makes that are long by construction (10 ms or
/// more): all but the short mutex's (held 0.3 ms) and the barrier's
/// second arrival (whichever thread it is), by object.
fn long_objects(said: &Said) -> Vec<(String, u64)> {
    let mut long: Vec<(String, u64)> = said
        .waits
        .iter()
        .filter(|w| w.callers.last().map(String::as_str) != Some("short_waiter"))
        .map(|w| (w.op.clone(), w.object))
        .collect();
    long.sort();
    long.dedup();
    long
}

#[test]
fn every_wait_is_recorded_with_its_time_object_and_caller() {
    let (path, stdout, stderr) = collect("sync-all", "all");
    let untraced = Command::new(prog("sync_waits-O0"))
        .output()
        .expect("run sync_waits");
    assert_eq!(
        stdout
            .lines()
            .filter(|l| !l.starts_with("rdbx collect"))
            .collect::<Vec<_>>(),
        String::from_utf8_lossy(&untraced.stdout)
            .lines()
            .collect::<Vec<_>>(),
        "the program's output changed"
    );
    let said = said(&stderr);
    let expt = Experiment::open(&path).expect("open the experiment");
    assert!(expt.manifest().kinds.iter().any(|k| k == "sync-trace"));
    assert_eq!(thresholds(&expt), (0, 0, Some(0)));
    let events = sync_events(&expt);
    let callers = Callers::of(&expt, &prog("sync_waits-O0"));
    let short_mutex = said
        .waits
        .iter()
        .find(|w| w.callers.last().map(String::as_str) == Some("short_waiter"))
        .expect("the short wait")
        .clone();

    // Uncontended: 100000 lock/unlock pairs, not one record.
    assert!(
        !events.iter().any(|e| e.event.object == said.quiet_mutex),
        "an uncontended lock was recorded"
    );
    // The short mutex: recorded when the lock was still held on arrival
    // (the program cannot tell), never for longer than the program saw.
    let short: Vec<_> = events
        .iter()
        .filter(|e| e.event.object == short_mutex.object)
        .collect();
    assert!(short.len() <= 1, "{short:?}");
    assert!(short.iter().all(|e| e.event.wait_ns <= short_mutex.ns));

    // Every other wait: the op, the object, the count and the time.
    for (op, object) in long_objects(&said) {
        let measured: Vec<&Measured> = said
            .waits
            .iter()
            .filter(|w| w.op == op && w.object == object)
            .collect();
        let recorded: Vec<&SyncEventRecord> = events
            .iter()
            .filter(|e| e.event.op.name() == op && e.event.object == object)
            .collect();
        assert_eq!(
            recorded.len(),
            measured.len(),
            "{op} on {object:#x}: {recorded:?} vs {measured:?}"
        );
        let measured_ns: u64 = measured.iter().map(|w| w.ns).sum();
        let recorded_ns: u64 = recorded.iter().map(|e| e.event.wait_ns).sum();
        assert!(measured_ns >= 10_000_000, "{op}: {measured_ns} ns");
        // The program's clock reads enclose the collector's.
        assert!(
            close_below(recorded_ns, measured_ns),
            "{op}: recorded {recorded_ns} ns, the program measured {measured_ns} ns"
        );
        for record in &recorded {
            let functions = callers.functions(record.event.stack_id);
            let expected = &measured[0].callers;
            let found = measured.iter().any(|w| functions.starts_with(&w.callers));
            assert!(
                found,
                "{op}: stack {functions:?}, expected {expected:?} first"
            );
        }
    }
    // Nothing else was recorded.
    let known = long_objects(&said);
    for e in &events {
        let op = e.event.op.name().to_string();
        assert!(
            known.contains(&(op.clone(), e.event.object)) || e.event.object == short_mutex.object,
            "unexpected {op} on {:#x}",
            e.event.object
        );
    }
    // Every kind the program waits in is there, and the join's object is
    // the thread waited for.
    for op in [
        SyncOp::MutexLock,
        SyncOp::CondWait,
        SyncOp::Join,
        SyncOp::SemWait,
        SyncOp::RwlockWrite,
        SyncOp::Barrier,
    ] {
        assert!(events.iter().any(|e| e.event.op == op), "no {op:?}");
    }

    // syncobjects: the program's named locks by their symbols, every wait
    // counted once, the totals the records'.
    let output = Command::new(rdbx_bin())
        .args(["analyze", "--json", "-c", "syncobjects"])
        .arg(&path)
        .output()
        .expect("run rdbx analyze");
    assert!(output.status.success());
    let doc: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    let objects = doc[0]["objects"].as_array().expect("objects");
    let named: Vec<&str> = objects.iter().filter_map(|o| o["name"].as_str()).collect();
    for name in ["held_mutex", "cond", "rwlock", "sem", "barrier"] {
        assert!(named.contains(&name), "{name} in {named:?}");
    }
    let count: u64 = objects
        .iter()
        .map(|o| o["sync_wait_count"].as_u64().unwrap())
        .sum();
    assert_eq!(count, events.len() as u64);
    assert_eq!(doc[0]["total"]["sync_wait_count"], events.len() as u64);
}

/// A threshold run: every record at least the threshold, and each long
/// wait of the main thread there.
fn threshold_run(name: &str, setting: &str) -> (u64, u64, Option<u64>) {
    let (path, _, stderr) = collect(name, setting);
    let said = said(&stderr);
    let expt = Experiment::open(&path).expect("open the experiment");
    let found = thresholds(&expt);
    let threshold = found.0;
    let events = sync_events(&expt);
    for e in &events {
        assert!(e.event.wait_ns >= threshold, "{e:?} below {threshold}");
        assert_ne!(e.event.object, said.quiet_mutex);
    }
    let long = long_objects(&said);
    for w in said
        .waits
        .iter()
        .filter(|w| w.ns >= 9_000_000 && long.contains(&(w.op.clone(), w.object)))
    {
        // Waits this long are the constructed ones; a record is within the
        // program's measure.
        let recorded = events
            .iter()
            .any(|e| e.event.op.name() == w.op && e.event.object == w.object);
        assert!(recorded, "{w:?} not recorded (threshold {threshold})");
    }
    // A record is never longer than the program's own measure of that
    // object's waits.
    for e in &events {
        let most = said
            .waits
            .iter()
            .filter(|w| w.object == e.event.object)
            .map(|w| w.ns)
            .max()
            .unwrap_or(0);
        assert!(
            e.event.wait_ns <= most,
            "{e:?}: the program measured {most}"
        );
    }
    found
}

#[test]
fn calibrated_threshold_keeps_waits_and_says_what_it_measured() {
    let (threshold, calibrated, start) = threshold_run("sync-calibrate", "on");
    assert!(calibrated > 0, "an uncontended lock + unlock takes time");
    assert_eq!(threshold, (5 * calibrated).max(1_000));
    assert_eq!(start, Some(threshold));
}

#[test]
fn a_threshold_in_microseconds_keeps_only_longer_waits() {
    let (threshold, calibrated, start) = threshold_run("sync-1ms", "1000");
    assert_eq!(
        (threshold, calibrated, start),
        (1_000_000, 0, Some(1_000_000))
    );
}

#[test]
fn a_bad_threshold_is_one_line_before_the_program_runs() {
    let dir = scratch_dir("sync-bad");
    let output = Command::new(rdbx_bin())
        .args(["collect", "-s", "1.5ms", "-o", "t.er"])
        .arg(prog("sync_waits-O0"))
        .current_dir(&dir)
        .output()
        .expect("run rdbx collect");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(
        stderr
            .contains("-s: expected a threshold in microseconds, calibrate or all, got \"1.5ms\""),
        "{stderr}"
    );
    assert!(!String::from_utf8_lossy(&output.stdout).contains("done"));
    assert!(!dir.join("t.er").exists());
}

#[test]
fn off_by_default_and_with_s_off() {
    for options in [&[][..], &["-s", "off"][..]] {
        let dir = scratch_dir("sync-off");
        let status = Command::new(rdbx_bin())
            .args(["collect", "-A", "off", "-o", "t.er"])
            .args(options)
            .arg(prog("sync_waits-O0"))
            .current_dir(&dir)
            .output()
            .expect("run rdbx collect")
            .status;
        assert!(status.success());
        let expt = Experiment::open(dir.join("t.er")).expect("open");
        assert!(!expt.manifest().kinds.iter().any(|k| k == "sync-trace"));
        assert!(!dir.join("t.er/sync").exists());
    }
}

#[test]
fn collector_synctrace_in_the_debugger() {
    let program = prog("sync_waits-O0");
    let dir = scratch_dir("sync-debugger");
    let out = Rdbx::batch()
        .cwd(&dir)
        .cmds(&[
            "collector show synctrace",
            "collector synctrace on",
            "collector synctrace threshold 5000",
            "collector show synctrace",
            "collector synctrace threshold all",
            "collector synctrace threshold calibrate",
            "collector synctrace threshold 5000",
            "collector synctrace threshold soon",
            "collector store filename dbx.er",
            "collector enable",
            "run",
        ])
        .arg(&program)
        .run();
    let transcript = out.transcript();
    assert!(
        out.has_line("synctrace: off, threshold calibrate"),
        "{transcript}"
    );
    assert!(
        out.has_line("synctrace: on, threshold 5000 us"),
        "{transcript}"
    );
    let errors = out.errors().join("\n");
    assert!(
        errors.contains("collector synctrace: expected a threshold in microseconds, calibrate or all, got \"soon\""),
        "{transcript}"
    );
    let expt = Experiment::open(dir.join("dbx.er"))
        .unwrap_or_else(|e| panic!("open dbx.er: {e}\n{transcript}"));
    assert_eq!(thresholds(&expt), (5_000_000, 0, Some(5_000_000)));
    let events = sync_events(&expt);
    // 5 ms: the constructed waits of 10 ms and more, not the short one.
    let mut ops: Vec<&str> = events.iter().map(|e| e.event.op.name()).collect();
    ops.sort();
    ops.dedup();
    for op in [
        "mutex_lock",
        "cond_wait",
        "join",
        "sem_wait",
        "rwlock_wrlock",
        "barrier_wait",
    ] {
        assert!(ops.contains(&op), "{op} missing: {events:?}\n{transcript}");
    }
    assert!(events.iter().all(|e| e.event.wait_ns >= 5_000_000));
}

/// A recorded wait is at most what the program measured around the call
/// (its clock reads enclose the collector's) and at least 95% of it less
/// 3 ms: the program's measure also holds the hook's own work after the
/// wait, and on a loaded machine the thread can be preempted there (the
/// off-CPU tests allow the same slack).
fn close_below(recorded_ns: u64, measured_ns: u64) -> bool {
    recorded_ns <= measured_ns && recorded_ns * 100 + 300_000_000 >= measured_ns * 95
}

#[test]
fn sync_tracing_after_attach_sees_the_waits_from_then_on() {
    let program = prog("sync_attach-O0");
    let dir = scratch_dir("sync-attach");
    let run = collect_after_attach(
        &program,
        &dir,
        &[
            "collector synctrace on",
            "collector synctrace threshold 1000",
        ],
    );
    let mutex = hex(run.ready.strip_prefix("ready ").expect("ready line"));
    let (rest, transcript) = (run.rest, run.transcript);
    let measured: u64 = rest
        .lines()
        .find_map(|l| l.strip_prefix("waited "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("the program's measure: {rest}"));

    let expt = Experiment::open(dir.join("live.er"))
        .unwrap_or_else(|e| panic!("open live.er: {e}\n{transcript}"));
    let log = std::fs::read_to_string(dir.join("live.er/log")).expect("log");
    assert!(
        log.contains(" kinds available=clock-profile,samples,sync "),
        "{log}"
    );
    let events = sync_events(&expt);
    let callers = Callers::of(&expt, &program);
    let waits: Vec<_> = events.iter().filter(|e| e.event.object == mutex).collect();
    assert_eq!(waits.len(), 1, "{events:?}\n{log}");
    let wait = waits[0].event;
    assert_eq!(wait.op, SyncOp::MutexLock);
    assert!(
        close_below(wait.wait_ns, measured),
        "recorded {} ns, measured {measured} ns",
        wait.wait_ns
    );
    assert_eq!(
        callers.functions(wait.stack_id).first().map(String::as_str),
        Some("after_attach")
    );
}

/// The analyzer's Sync Wait Time per function agrees with the program's
/// own measures: each long wait's outermost caller, inclusive.
#[test]
fn sync_wait_time_per_function_is_the_programs_own() {
    let (path, _, stderr) = collect("sync-analyze", "all");
    let said = said(&stderr);
    let output = Command::new(rdbx_bin())
        .args([
            "analyze",
            "--json",
            "-c",
            "metrics ei.sync:ei.syncn:name",
            "-c",
        ])
        .arg("functions")
        .arg(&path)
        .output()
        .expect("run rdbx analyze");
    assert!(output.status.success());
    let docs: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    let rows = docs[1]["rows"].as_array().expect("functions rows");
    let inclusive = |name: &str| -> (f64, u64) {
        let row = rows
            .iter()
            .find(|r| r["name"] == name)
            .unwrap_or_else(|| panic!("no {name} row"));
        (
            row["sync_wait_time"]["inclusive"]
                .as_f64()
                .expect("seconds"),
            row["sync_wait_count"]["inclusive"].as_u64().expect("count"),
        )
    };
    for caller in [
        "mutex_waiter",
        "cond_waiter",
        "join_waiter",
        "sem_waiter",
        "rwlock_writer",
        "barrier_waiter",
    ] {
        let measured: u64 = said
            .waits
            .iter()
            .filter(|w| w.callers.last().map(String::as_str) == Some(caller))
            .map(|w| w.ns)
            .sum();
        let (seconds, count) = inclusive(caller);
        let ns = (seconds * 1e9).round() as u64;
        assert_eq!(count, 1, "{caller}");
        assert!(
            close_below(ns, measured + 100_000),
            "{caller}: rdbx {ns} ns, the program measured {measured} ns"
        );
    }
}

/// Faults the hooks must not change (tests/programs/sync_faults.c): a lock
/// in a signal handler that interrupts a traced lock, a process-shared
/// mutex contended by a forked child, a robust mutex whose owner died
/// (EOWNERDEAD, then consistent), a thread cancelled in a condition wait:
/// the output is the same traced as untraced, the run ends, and the
/// blocking waits are recorded as what they are (the parent's 50 ms wait
/// for the child's lock, in process_shared).
#[test]
fn faults_leave_the_program_unchanged_and_waits_recorded() {
    let program = prog("sync_faults-O0");
    let plain = Command::new(&program).output().expect("run sync_faults");
    assert!(plain.status.success());
    let dir = scratch_dir("sync-faults");
    let traced = Command::new(rdbx_bin())
        .args(["collect", "-s", "all", "-A", "off", "-o", "t.er"])
        .arg(&program)
        .current_dir(&dir)
        .output()
        .expect("run rdbx collect");
    let stdout = String::from_utf8_lossy(&traced.stdout);
    assert!(
        traced.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&traced.stderr)
    );
    assert_eq!(stdout, String::from_utf8_lossy(&plain.stdout));
    assert!(
        stdout.contains("lock rc=EOWNERDEAD, consistent rc=0"),
        "{stdout}"
    );
    assert!(
        stdout.contains("cancel in wait: cancelled, cleanup ran 1"),
        "{stdout}"
    );
    let expt = Experiment::open(dir.join("t.er")).expect("open");
    let callers = Callers::of(&expt, &program);
    let waits = sync_events(&expt);
    let shared: Vec<u64> = waits
        .iter()
        .filter(|w| w.event.op == SyncOp::MutexLock)
        .filter(|w| {
            callers
                .functions(w.event.stack_id)
                .first()
                .map(String::as_str)
                == Some("process_shared")
        })
        .map(|w| w.event.wait_ns)
        .collect();
    assert_eq!(shared.len(), 1, "{waits:?}");
    assert!(shared[0] >= 40_000_000, "{shared:?}");
    let joins = waits.iter().filter(|w| w.event.op == SyncOp::Join).count();
    assert!(joins >= 2, "{waits:?}");
}

/// `wait KIND NS FUNCTION` lines of a C++ or Rust program's stderr.
fn own_waits(stderr: &str) -> Vec<(String, u64, String)> {
    stderr
        .lines()
        .filter_map(
            |line| match line.split_whitespace().collect::<Vec<_>>()[..] {
                ["wait", kind, ns, function] => {
                    Some((kind.to_string(), ns.parse().ok()?, function.to_string()))
                }
                _ => None,
            },
        )
        .collect()
}

/// A recorded wait: its op, time and the functions on its stack.
type Recorded = (SyncOp, u64, Vec<String>);

/// `rdbx collect -s all` of a C++ or Rust program: the waits recorded (op,
/// time, the functions on the stack) and the program's waits.
fn collect_built(name: &str, program: &Path) -> (Vec<Recorded>, Vec<(String, u64, String)>) {
    let plain = Command::new(program).output().expect("run the program");
    let dir = scratch_dir(name);
    let traced = Command::new(rdbx_bin())
        .args(["collect", "-s", "all", "-A", "off", "-o", "t.er"])
        .arg(program)
        .current_dir(&dir)
        .output()
        .expect("run rdbx collect");
    assert!(traced.status.success());
    assert_eq!(traced.stdout, plain.stdout, "output unchanged");
    let expt = Experiment::open(dir.join("t.er")).expect("open");
    let callers = Callers::of(&expt, program);
    let recorded = sync_events(&expt)
        .iter()
        // Names as the symbol table has them (a mangled name holds the
        // function's).
        .map(|w| {
            (
                w.event.op,
                w.event.wait_ns,
                callers.functions(w.event.stack_id),
            )
        })
        .collect();
    (
        recorded,
        own_waits(&String::from_utf8_lossy(&traced.stderr)),
    )
}

/// The recorded wait of `op` whose stack holds `function` (one only).
fn wait_in(recorded: &[Recorded], op: SyncOp, function: &str) -> u64 {
    let found: Vec<u64> = recorded
        .iter()
        .filter(|(o, _, names)| *o == op && names.iter().any(|n| n.contains(function)))
        .map(|(_, ns, _)| *ns)
        .collect();
    assert_eq!(found.len(), 1, "{op:?} in {function}: {recorded:?}");
    found[0]
}

fn within_5_percent(recorded: u64, measured: u64) -> bool {
    recorded.abs_diff(measured) * 20 <= measured
}

/// C++: std::mutex, std::condition_variable and std::thread::join arrive
/// through the pthread functions, each recorded in the function that waited
/// with the time the program measured.
#[test]
fn cpp_std_mutex_condition_variable_and_join() {
    let program = built("sync_cpp.cpp", "g++");
    let (recorded, measured) = collect_built("sync-cpp", &program);
    assert_eq!(measured.len(), 3, "{measured:?}");
    for (kind, ns, function) in &measured {
        let op = match kind.as_str() {
            "mutex" => SyncOp::MutexLock,
            "cond" => SyncOp::CondWait,
            _ => SyncOp::Join,
        };
        let got = wait_in(&recorded, op, function);
        assert!(within_5_percent(got, *ns), "{function}: {got} vs {ns}");
    }
}

/// Rust: a join is pthread_join, recorded with its time; std's Mutex is a
/// futex, not pthreads, so its 30 ms wait is not a sync wait (off-CPU
/// profiling sees it).
#[test]
fn rust_join_is_recorded_and_std_mutex_is_not_pthreads() {
    let program = built("sync_rust.rs", "rustc");
    let (recorded, measured) = collect_built("sync-rust", &program);
    let (_, join_ns, _) = measured
        .iter()
        .find(|(kind, _, _)| kind == "join")
        .expect("the program's join");
    let got = wait_in(&recorded, SyncOp::Join, "join_sleeper");
    assert!(within_5_percent(got, *join_ns), "{got} vs {join_ns}");
    // Only the short join of the holder, no 30 ms wait for the lock.
    let in_lock: Vec<_> = recorded
        .iter()
        .filter(|(_, _, names)| names.iter().any(|n| n.contains("lock_std_mutex")))
        .collect();
    assert!(
        in_lock
            .iter()
            .all(|(op, ns, _)| *op == SyncOp::Join && *ns < 10_000_000),
        "{in_lock:?}"
    );
}

/// A join the program measured: the joined thread's tid, its pthread_t,
/// the nanoseconds (a `join TID PTHREAD NS` line of sync_joins).
fn measured_joins(stderr: &str) -> Vec<(u64, u64, u64)> {
    stderr
        .lines()
        .filter_map(
            |line| match line.split_whitespace().collect::<Vec<_>>()[..] {
                ["join", tid, pthread, ns] => {
                    Some((tid.parse().ok()?, hex(pthread), ns.parse().ok()?))
                }
                _ => None,
            },
        )
        .collect()
}

/// Joins name the thread joined as `thread_list` numbers it
/// (tests/programs/sync_joins.c: three threads joined one after another,
/// each given the pthread_t of the one before, then two at once): with
/// and without clock profiling (sync-wait tracing alone still writes the
/// threads' `thread-start` lines, with their pthread_t), `syncobjects` has
/// one join row per joined thread, `t@N` of the thread whose tid the
/// thread itself said, with the wait the program measured.
#[test]
fn a_join_names_the_thread_it_waited_for() {
    let program = prog("sync_joins-O0");
    for profiling in ["on", "off"] {
        let dir = scratch_dir(&format!("sync-joins-{profiling}"));
        let output = Command::new(rdbx_bin())
            .args([
                "collect", "-s", "all", "-p", profiling, "-A", "off", "-o", "t.er",
            ])
            .arg(&program)
            .current_dir(&dir)
            .output()
            .expect("run rdbx collect");
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        assert!(output.status.success(), "{stderr}");
        assert_eq!(String::from_utf8_lossy(&output.stdout), "done\n");
        let joins = measured_joins(&stderr);
        assert_eq!(joins.len(), 5, "{stderr}");
        let reused = joins.iter().filter(|j| j.1 == joins[0].1).count();
        assert!(
            reused >= 2,
            "no pthread_t was reused, nothing to tell apart: {stderr}"
        );

        let analyzed = Command::new(rdbx_bin())
            .args([
                "analyze",
                "--json",
                "-c",
                "thread_list",
                "-c",
                "syncobjects",
            ])
            .arg(dir.join("t.er"))
            .output()
            .expect("run rdbx analyze");
        assert!(analyzed.status.success());
        let doc: serde_json::Value = serde_json::from_slice(&analyzed.stdout).expect("JSON");
        let number_of = |tid: u64| -> u64 {
            doc[0]["threads"]
                .as_array()
                .expect("threads")
                .iter()
                .find(|t| t["tid"] == tid)
                .unwrap_or_else(|| panic!("thread {tid} in {}", doc[0]))["thread"]
                .as_u64()
                .unwrap()
        };
        let rows: Vec<&serde_json::Value> = doc[1]["objects"]
            .as_array()
            .expect("objects")
            .iter()
            .filter(|o| o["kind"] == "join")
            .collect();
        assert_eq!(rows.len(), joins.len(), "{}", doc[1]);
        for &(tid, pthread, ns) in &joins {
            let number = number_of(tid);
            let row = rows
                .iter()
                .find(|o| o["thread"] == number)
                .unwrap_or_else(|| panic!("the join of t@{number} in {}", doc[1]));
            assert_eq!(row["object"], format!("t@{number}"));
            assert_eq!(row["address"], pthread);
            assert_eq!(row["sync_wait_count"], 1);
            let recorded = (row["sync_wait_time"].as_f64().unwrap() * 1e9).round() as u64;
            assert!(
                close_below(recorded, ns),
                "-p {profiling} t@{number}: recorded {recorded} ns, the program measured {ns} ns"
            );
        }
        let numbers: std::collections::BTreeSet<u64> =
            rows.iter().filter_map(|o| o["thread"].as_u64()).collect();
        assert_eq!(numbers.len(), joins.len(), "one row per thread");
    }
}
