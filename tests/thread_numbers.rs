//! The debugger's `threads` and the analyzer's `thread_list` give the same
//! thread the same number (dbx's t@N: the first thread 1, then in order of
//! creation; after an attach, the others in tid order), whether collection
//! started with the program, in the middle of its run, or after an attach,
//! and under `rdbx collect`. tests/programs/thread_numbers.c starts three
//! workers, stops in all_started(), then starts a late thread that stops in
//! late_started().

mod common;

use common::*;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

fn program() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        let dir = scratch_dir("thread-numbers-build");
        let exe = dir.join("thread_numbers");
        let status = Command::new("gcc")
            .args(["-g", "-O0", "-pthread", "-o"])
            .arg(&exe)
            .arg(sources_dir().join("thread_numbers.c"))
            .status()
            .expect("gcc runs");
        assert!(status.success(), "gcc failed");
        exe
    })
}

/// Number -> tid of every `t@N (lwp TID)` line of a `threads` listing in
/// `block`.
fn debugger_threads(block: &str) -> BTreeMap<u32, u32> {
    block
        .lines()
        .map(|l| l.trim_start_matches("=>").trim_start())
        .filter_map(|l| {
            let rest = l.strip_prefix("t@")?;
            let (number, rest) = rest.split_once(' ')?;
            let tid = rest.strip_prefix("(lwp ")?.split(')').next()?;
            Some((number.parse().ok()?, tid.parse().ok()?))
        })
        .collect()
}

/// A row of `thread_list`: (number, tid, events, rdbx's own thread).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Row {
    number: u32,
    tid: u32,
    events: u64,
    collector: bool,
}

/// The rows of the `thread_list` table in `block`.
fn analyzer_threads(block: &str) -> Vec<Row> {
    block
        .lines()
        .skip_while(|l| !l.starts_with("Sel "))
        .skip(1)
        .map_while(|l| {
            let mut words: Vec<&str> = l.split_whitespace().collect();
            if words.first() == Some(&"*") {
                words.remove(0);
            }
            let number = words.get(1)?.parse().ok()?;
            Some(Row {
                number,
                tid: words.get(2)?.parse().ok()?,
                events: words.get(3)?.parse().ok()?,
                collector: l.contains("(rdbx collector)"),
            })
        })
        .collect()
}

/// The text between each `marker` line and the next one (the output of
/// the commands sent after each marker).
fn sections<'a>(stdout: &'a str, marker: &str) -> Vec<&'a str> {
    stdout.split(marker).skip(1).collect()
}

/// Every thread the debugger lists is in the analyzer's list under the
/// same number; no number names two threads.
fn assert_same_numbers(section: &str, transcript: &str) -> (BTreeMap<u32, u32>, Vec<Row>) {
    let debugger = debugger_threads(section);
    let analyzer = analyzer_threads(section);
    assert!(!debugger.is_empty(), "no threads listing\n{transcript}");
    assert!(!analyzer.is_empty(), "no thread_list\n{transcript}");
    for (&number, &tid) in &debugger {
        let row = analyzer.iter().find(|r| r.tid == tid);
        assert_eq!(
            row.map(|r| r.number),
            Some(number),
            "t@{number} (lwp {tid}) in thread_list: {analyzer:?}\n{transcript}"
        );
    }
    let mut numbers: Vec<u32> = analyzer.iter().map(|r| r.number).collect();
    numbers.dedup();
    assert_eq!(numbers.len(), analyzer.len(), "{analyzer:?}\n{transcript}");
    (debugger, analyzer)
}

/// `threads` then `thread_list`, after an echo line to find them by.
const LOOK: [&str; 3] = ["print 12345", "threads", "analyze thread_list"];
const MARK: &str = "12345\n";

#[test]
fn collection_from_the_start_numbers_threads_as_the_debugger() {
    // Scheduling decides which new thread runs first; a few runs give the
    // threads every chance to start out of their order of creation.
    for run in 0..3 {
        let dir = scratch_dir(&format!("thread-numbers-start-{run}"));
        let mut commands = vec![
            "collector enable",
            "stop in all_started",
            "stop in late_started",
            "run",
        ];
        commands.extend(LOOK);
        commands.push("cont");
        commands.extend(LOOK);
        commands.push("cont");
        let out = Rdbx::batch()
            .cwd(&dir)
            .cmds(&commands)
            .prog(program(), &[])
            .run();
        let transcript = out.transcript();
        let stops = sections(&out.stdout, MARK);
        assert_eq!(stops.len(), 2, "{transcript}");
        let (first, _) = assert_same_numbers(stops[0], &transcript);
        assert_eq!(first.keys().copied().collect::<Vec<_>>(), [1, 2, 3, 4]);
        let (second, rows) = assert_same_numbers(stops[1], &transcript);
        // The late thread is t@5; the workers, gone, are still listed.
        assert!(second.contains_key(&5), "{transcript}");
        let numbers: Vec<u32> = rows.iter().map(|r| r.number).collect();
        assert_eq!(numbers, [1, 2, 3, 4, 5], "{transcript}");
        assert!(rows.iter().all(|r| !r.collector));
        // Worker N printed its tid: it is thread N + 1.
        for n in 1..=3u32 {
            let tid = printed_tid(&out.stdout, &format!("worker {n} tid "));
            assert_eq!(first.get(&(n + 1)), Some(&tid), "{transcript}");
        }
    }
}

fn printed_tid(stdout: &str, prefix: &str) -> u32 {
    stdout
        .lines()
        .find_map(|l| l.strip_prefix(prefix)?.trim().parse().ok())
        .unwrap_or_else(|| panic!("no line {prefix:?} in\n{stdout}"))
}

/// `collector enable` at a stop of a process started without collection:
/// the collector's watcher thread is created then, so the debugger calls
/// it t@5 and the late thread t@6; the analyzer agrees, and shows t@5 as
/// rdbx's own thread.
#[test]
fn collection_started_at_a_stop_counts_the_collectors_thread() {
    let dir = scratch_dir("thread-numbers-live");
    let mut commands = vec!["stop in all_started", "stop in late_started", "run"];
    commands.push("collector enable");
    commands.extend(LOOK);
    commands.push("cont");
    commands.extend(LOOK);
    commands.push("cont");
    let out = Rdbx::batch()
        .cwd(&dir)
        .cmds(&commands)
        .prog(program(), &[])
        .run();
    let transcript = out.transcript();
    let stops = sections(&out.stdout, MARK);
    assert_eq!(stops.len(), 2, "{transcript}");
    let (first, rows) = assert_same_numbers(stops[0], &transcript);
    assert_eq!(first.keys().copied().collect::<Vec<_>>(), [1, 2, 3, 4, 5]);
    let watcher = rows.iter().find(|r| r.number == 5).expect("t@5 listed");
    assert!(watcher.collector && watcher.events == 0, "{rows:?}");
    let (second, _) = assert_same_numbers(stops[1], &transcript);
    let late = printed_tid(&out.stdout, "late tid ");
    assert_eq!(second.get(&6), Some(&late), "{transcript}");
}

/// After an attach the debugger numbers the leader 1 and the others in tid
/// order; the collector started then numbers them the same way.
#[test]
fn collection_started_after_an_attach_numbers_threads_as_the_debugger() {
    let dir = scratch_dir("thread-numbers-attach");
    let mut target = Command::new(program())
        .arg("wait")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the target");
    let mut target_out = BufReader::new(target.stdout.take().expect("stdout"));
    let mut printed = String::new();
    while !printed.ends_with("waiting\n") {
        let before = printed.len();
        target_out.read_line(&mut printed).expect("read");
        assert!(printed.len() > before, "the target ended: {printed}");
    }
    let pid = target.id().to_string();
    let mut session = Session::start(Path::new("-p"), &[&pid]);
    session.send(&format!("collector store directory {}", dir.display()));
    session.send("collector enable");
    session.wait_for("Creating experiment database");
    session.send("stop in late_started");
    session.send("cont");
    target
        .stdin
        .take()
        .expect("stdin")
        .write_all(b"g")
        .expect("release the target");
    session.wait_for("stopped in late_started");
    for command in LOOK {
        session.send(command);
    }
    session.wait_until("the thread list", |out, _| {
        sections(out, MARK)
            .first()
            .is_some_and(|s| !analyzer_threads(s).is_empty())
    });
    let stdout = session.stdout();
    let transcript = session.transcript();
    session.send("detach");
    let _ = session.finish();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut target_out, &mut rest).expect("stdout");
    assert!(target.wait().expect("wait").success(), "{rest}");
    printed.push_str(&rest);

    let (listed, rows) = assert_same_numbers(sections(&stdout, MARK)[0], &transcript);
    // Leader, three workers in tid order, the watcher, the late thread.
    let mut workers: Vec<u32> = (1..=3)
        .map(|n| printed_tid(&printed, &format!("worker {n} tid ")))
        .collect();
    workers.sort_unstable();
    let by_number: Vec<u32> = rows.iter().map(|r| r.tid).collect();
    assert_eq!(by_number[0].to_string(), pid, "{rows:?}");
    assert_eq!(by_number[1..4], workers[..], "{rows:?}");
    assert!(rows[4].collector, "{rows:?}");
    assert_eq!(
        listed.get(&6),
        Some(&printed_tid(&printed, "late tid ")),
        "{transcript}"
    );
}

/// Without the debugger: worker N is thread N + 1, the late thread 5.
#[test]
fn rdbx_collect_numbers_threads_in_order_of_creation() {
    let dir = scratch_dir("thread-numbers-collect");
    let out = Command::new(rdbx_bin())
        .args(["collect", "-o", "t.er"])
        .arg(program())
        .current_dir(&dir)
        .output()
        .expect("rdbx collect");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{stdout}");
    let list = Command::new(rdbx_bin())
        .args(["analyze", "-c", "thread_list"])
        .arg(dir.join("t.er"))
        .output()
        .expect("rdbx analyze");
    let text = String::from_utf8_lossy(&list.stdout).into_owned();
    let rows = analyzer_threads(&text);
    let tid_of = |number: u32| rows.iter().find(|r| r.number == number).map(|r| r.tid);
    for n in 1..=3u32 {
        let tid = printed_tid(&stdout, &format!("worker {n} tid "));
        assert_eq!(tid_of(n + 1), Some(tid), "{text}\n{stdout}");
    }
    assert_eq!(tid_of(5), Some(printed_tid(&stdout, "late tid ")), "{text}");
    assert_eq!(rows.len(), 5, "{text}");
}
