//! I/O tracing against programs whose I/O is known by construction
//! (tests/programs/io_known.c: a file written in 8 calls of 100 bytes and
//! read back with pread, readv and read through a dup, a file written and
//! read with stdio, a sendfile and a copy_file_range, two failed opens of a
//! missing file, a second thread's writes, and writes to stdout): every
//! call is in the `io` file with its op, descriptor, bytes, failed flag,
//! path and caller; per file, the bytes and calls add up to what the
//! program did; the program's output is unchanged. Also `collector iotrace`
//! in the debugger and a collector loaded into a running process
//! (io_attach.c: the GOT entries are redirected, the calls after
//! `collector enable` are seen). Faults the hooks must not change
//! (io_faults.c: a descriptor closed under a blocked read, a read of a
//! descriptor never opened), and the bytes per file of C++ file streams
//! (io_cpp.cpp) and Rust's std::fs::File (io_rust.rs).

mod common;

use common::*;
use experiment::io::IoOp;
use experiment::log::Event;
use experiment::Experiment;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;

/// One recorded call, its path owned.
#[derive(Debug, Clone)]
struct Call {
    tid: u32,
    op: IoOp,
    failed: bool,
    fd: i32,
    aux_fd: i32,
    start_ns: u64,
    time_ns: u64,
    bytes: u64,
    stack_id: u64,
    name: String,
}

fn io_calls(expt: &Experiment) -> Vec<Call> {
    let mut calls = Vec::new();
    let stats = expt
        .for_each_io_event(|r| {
            calls.push(Call {
                tid: r.tid,
                op: r.event.op,
                failed: r.event.failed,
                fd: r.event.fd,
                aux_fd: r.event.aux_fd,
                start_ns: r.event.start_ns,
                time_ns: r.event.time_ns,
                bytes: r.event.bytes,
                stack_id: r.event.stack_id,
                name: String::from_utf8_lossy(r.event.name).into_owned(),
            })
        })
        .expect("read the io file");
    assert_eq!(stats.damaged, 0, "{stats:?}");
    calls.sort_by_key(|c| c.start_ns);
    calls
}

/// A log line's fields, by event name (the first such line).
fn log_fields(expt: &Experiment, event: &str) -> Option<HashMap<String, String>> {
    expt.log()
        .expect("log")
        .into_iter()
        .find_map(|e| match e.event {
            Event::Other { name, fields } if name == event => Some(fields.into_iter().collect()),
            _ => None,
        })
}

/// What the program said on stderr: its descriptors by name and the
/// result of its copy_file_range.
struct Said {
    fds: HashMap<String, i32>,
    copied: i64,
}

fn said(stderr: &str) -> Said {
    let copied = stderr.lines().find_map(|line| {
        let n = line.strip_prefix("copy_file_range ")?;
        Some(n.parse().expect("result"))
    });
    Said {
        fds: named_fds(stderr),
        copied: copied.unwrap_or_else(|| panic!("no copy_file_range line:\n{stderr}")),
    }
}

/// The program's `fd NAME N` lines: its descriptors by name.
fn named_fds(stderr: &str) -> HashMap<String, i32> {
    stderr
        .lines()
        .filter_map(
            |line| match line.split_whitespace().collect::<Vec<_>>()[..] {
                ["fd", name, fd] => Some((name.to_string(), fd.parse().expect("fd"))),
                _ => None,
            },
        )
        .collect()
}

/// Per file (by the path its descriptor was opened with, followed through
/// dups; `fd N` for descriptors opened before), the bytes and calls of
/// each class, from the records in time order.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct PerFile {
    read_bytes: u64,
    reads: u64,
    written_bytes: u64,
    writes: u64,
    other: u64,
}

fn per_file(calls: &[Call]) -> BTreeMap<String, PerFile> {
    let mut open: HashMap<(u32, i32), String> = HashMap::new();
    let mut files: BTreeMap<String, PerFile> = BTreeMap::new();
    // Descriptors are the process's: a thread's open is every thread's.
    let name_of = |open: &HashMap<(u32, i32), String>, fd: i32| -> String {
        open.get(&(0, fd)).cloned().unwrap_or(format!("fd {fd}"))
    };
    for call in calls {
        let file = name_of(&open, call.fd);
        match call.op {
            IoOp::Open if !call.failed => {
                let name = Path::new(&call.name)
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                open.insert((0, call.fd), name.clone());
                files.entry(name).or_default().other += 1;
            }
            IoOp::Dup if !call.failed => {
                let name = name_of(&open, call.aux_fd);
                open.insert((0, call.fd), name.clone());
                files.entry(name).or_default().other += 1;
            }
            IoOp::Close => {
                open.remove(&(0, call.fd));
                files.entry(file).or_default().other += 1;
            }
            IoOp::Read => {
                let entry = files.entry(file).or_default();
                entry.reads += 1;
                entry.read_bytes += call.bytes;
            }
            IoOp::Write => {
                let entry = files.entry(file).or_default();
                entry.writes += 1;
                entry.written_bytes += call.bytes;
            }
            IoOp::Transfer => {
                let from = files.entry(name_of(&open, call.aux_fd)).or_default();
                from.reads += 1;
                from.read_bytes += call.bytes;
                let to = files.entry(file).or_default();
                to.writes += 1;
                to.written_bytes += call.bytes;
            }
            _ => files.entry(file).or_default().other += 1,
        }
    }
    files
}

fn file(read_bytes: u64, reads: u64, written_bytes: u64, writes: u64, other: u64) -> PerFile {
    PerFile {
        read_bytes,
        reads,
        written_bytes,
        writes,
        other,
    }
}

/// The records of io_known against what it did by construction (its
/// descriptors and its copy_file_range's result from its stderr).
fn check_known_io(expt: &Experiment, program: &Path, dir: &Path, said: &Said) {
    assert!(
        expt.manifest().kinds.iter().any(|k| k == "io-trace"),
        "{:?}",
        expt.manifest()
    );
    assert!(expt.manifest().files.iter().any(|f| f == "io"));
    let start = expt
        .log()
        .expect("log")
        .into_iter()
        .find_map(|e| match e.event {
            Event::Start(start) => Some(start),
            _ => None,
        })
        .expect("start line");
    assert!(start.iotrace, "{start:?}");
    let calls = io_calls(expt);
    let callers = Callers::of(expt, program);
    let fd = |name: &str| -> i32 {
        *said
            .fds
            .get(name)
            .unwrap_or_else(|| panic!("the program names no fd {name}"))
    };
    let copied = u64::try_from(said.copied).unwrap_or(0);
    let copy_calls = 1 + u64::from(said.copied >= 0);

    // Per file: the bytes and calls add up.
    let expected: BTreeMap<String, PerFile> = [
        // 8 writes of 100; open, fsync, close (write_a); open, lseek,
        // dup, dup2, 3 closes (read_a), open and close (copy_c); read:
        // 4 preads of 100, a readv of 400, a read of 400 and one of 0
        // through the dup, then what sendfile and copy_file_range took.
        (
            "a",
            file(1200 + 200 + copied, 7 + copy_calls, 800, 8, 3 + 7 + 2),
        ),
        // fwrite 150 + fputs 5; fread 150, fgets 5, fgets 155, fgets 0;
        // 2 fopens, fflush, fseek, 2 fcloses.
        ("b", file(310, 4, 155, 2, 6)),
        ("c", file(0, 0, 200 + copied, copy_calls, 2)),
        ("d", file(0, 0, 192, 3, 2)),
        // puts of "puts line\n", write of "done\n", fflush(stdout).
        ("fd 1", file(0, 0, 15, 2, 1)),
        // The failed open and fopen (not in a file's figures: they made
        // no descriptor) are below.
    ]
    .into_iter()
    .map(|(name, figures)| (name.to_string(), figures))
    .collect();
    let mut found = per_file(&calls);
    let missing = found.remove("fd -1");
    assert_eq!(found, expected, "{calls:#?}");
    assert_eq!(missing, Some(file(0, 0, 0, 0, 2)), "the failed opens");

    // Ops, descriptors, failed flags and callers, call by call.
    let of = |caller: &str| -> Vec<&Call> {
        calls
            .iter()
            .filter(|c| callers.caller(c.stack_id) == caller)
            .collect()
    };
    let ops = |list: &[&Call]| -> Vec<IoOp> { list.iter().map(|c| c.op).collect() };
    use IoOp::*;
    let path = |name: &str| dir.join(name).to_string_lossy().into_owned();

    let write_a = of("write_a");
    let mut expect = vec![Open];
    expect.extend([Write; 8]);
    expect.extend([Sync, Close]);
    assert_eq!(ops(&write_a), expect, "{write_a:#?}");
    assert!(write_a.iter().all(|c| c.fd == fd("write_a") && !c.failed));
    assert_eq!(write_a[0].name, path("a"));
    assert!(write_a[1..9].iter().all(|c| c.bytes == 100));

    let read_a = of("read_a");
    assert_eq!(
        ops(&read_a),
        vec![Open, Read, Read, Read, Read, Seek, Read, Dup, Read, Read, Dup, Close, Close, Close],
        "{read_a:#?}"
    );
    let (a, copy, high) = (fd("read_a"), fd("read_a_dup"), fd("read_a_dup2"));
    let described: Vec<(i32, i32, u64)> =
        read_a.iter().map(|c| (c.fd, c.aux_fd, c.bytes)).collect();
    assert_eq!(
        described,
        vec![
            (a, -1, 0),
            (a, -1, 100),
            (a, -1, 100),
            (a, -1, 100),
            (a, -1, 100),
            (a, -1, 0),
            (a, -1, 400),
            (copy, a, 0),
            (copy, -1, 400),
            (copy, -1, 0),
            (high, a, 0),
            (high, -1, 0),
            (copy, -1, 0),
            (a, -1, 0),
        ]
    );
    assert_eq!(high, 100);
    assert!(
        read_a.iter().all(|c| !c.failed),
        "the read at the end of the file is no failure"
    );
    assert_eq!(read_a[0].name, path("a"));
    assert!(read_a[1..].iter().all(|c| c.name.is_empty()));

    let stdio_b = of("stdio_b");
    assert_eq!(
        ops(&stdio_b),
        vec![Open, Write, Write, Sync, Close, Open, Read, Read, Seek, Read, Read, Close],
        "{stdio_b:#?}"
    );
    let (w, r) = (fd("stdio_b_w"), fd("stdio_b_r"));
    let described: Vec<(i32, u64)> = stdio_b.iter().map(|c| (c.fd, c.bytes)).collect();
    assert_eq!(
        described,
        vec![
            (w, 0),
            (w, 150),
            (w, 5),
            (w, 0),
            (w, 0),
            (r, 0),
            (r, 150),
            (r, 5),
            (r, 0),
            (r, 155),
            (r, 0),
            (r, 0),
        ]
    );
    assert!(stdio_b.iter().all(|c| !c.failed));
    assert_eq!(
        (stdio_b[0].name.clone(), stdio_b[5].name.clone()),
        (path("b"), path("b"))
    );

    let copy_c = of("copy_c");
    let (to, from) = (fd("copy_c_to"), fd("copy_c_from"));
    let described: Vec<(IoOp, i32, i32, u64, bool)> = copy_c
        .iter()
        .map(|c| (c.op, c.fd, c.aux_fd, c.bytes, c.failed))
        .collect();
    assert_eq!(
        described,
        vec![
            (Open, to, -1, 0, false),
            (Open, from, -1, 0, false),
            (Transfer, to, from, 200, false),
            (Transfer, to, from, copied, said.copied < 0),
            (Close, from, -1, 0, false),
            (Close, to, -1, 0, false),
        ]
    );

    let missing = of("open_missing");
    assert_eq!(ops(&missing), vec![Open, Open]);
    for call in &missing {
        assert!(call.failed && call.fd == -1, "{call:?}");
        assert_eq!(call.name, path("missing/none"));
    }
    assert_eq!(calls.iter().filter(|c| c.failed).count(), 2, "{calls:#?}");

    let write_d = of("write_d");
    assert_eq!(ops(&write_d), vec![Open, Write, Write, Write, Close]);
    assert!(write_d.iter().all(|c| c.fd == fd("write_d")));
    let main_tid = write_a[0].tid;
    assert!(
        write_d.iter().all(|c| c.tid != main_tid),
        "the other thread's"
    );

    let done = of("say_done");
    let described: Vec<(IoOp, i32, u64)> = done.iter().map(|c| (c.op, c.fd, c.bytes)).collect();
    assert_eq!(described, vec![(Write, 1, 10), (Sync, 1, 0), (Write, 1, 5)]);

    // Every call has a caller of the program's, and is timed.
    let total = write_a.len()
        + read_a.len()
        + stdio_b.len()
        + copy_c.len()
        + missing.len()
        + write_d.len()
        + done.len();
    assert_eq!(total, calls.len(), "calls with another caller: {calls:#?}");
    assert!(calls.iter().all(|c| c.time_ns > 0 && c.start_ns > 0));
    let totals = log_fields(expt, "io_totals").expect("the io_totals line");
    assert_eq!(totals["calls"], calls.len().to_string());
    assert_eq!(totals["unrecorded"], "0");
}

/// `rdbx collect ARGS io_known DIR` in a scratch directory: the
/// experiment, stdout, stderr.
fn collect(name: &str, options: &[&str]) -> (PathBuf, PathBuf, String, String) {
    let dir = scratch_dir(name);
    let output = Command::new(rdbx_bin())
        .args(["collect", "-A", "off", "-o", "t.er"])
        .args(options)
        .arg(prog("io_known-O0"))
        .arg(&dir)
        .current_dir(&dir)
        .output()
        .expect("run rdbx collect");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(output.status.success(), "{stdout}\n{stderr}");
    (dir.join("t.er"), dir, stdout, stderr)
}

#[test]
fn every_call_is_recorded_with_its_bytes_descriptor_and_caller() {
    let (path, dir, stdout, stderr) = collect("io-known", &["-i", "on"]);
    let untraced_dir = scratch_dir("io-untraced");
    let untraced = Command::new(prog("io_known-O0"))
        .arg(&untraced_dir)
        .output()
        .expect("run io_known");
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
    assert_eq!(stdout.lines().collect::<Vec<_>>(), ["puts line", "done"]);
    for name in ["a", "b", "c", "d"] {
        assert_eq!(
            std::fs::read(dir.join(name)).expect("the traced run's file"),
            std::fs::read(untraced_dir.join(name)).expect("the untraced run's file"),
            "{name}"
        );
    }
    let expt = Experiment::open(&path).expect("open the experiment");
    check_known_io(&expt, &prog("io_known-O0"), &dir, &said(&stderr));

    // The analyzer's ioactivity says the same per file.
    let output = Command::new(rdbx_bin())
        .args(["analyze", "--json", "-c", "ioactivity", "-c", "iodetail"])
        .args(["-c", "iocallstack", "-c", "iostat"])
        .arg(&path)
        .output()
        .expect("run rdbx analyze");
    assert!(output.status.success());
    let doc: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    // A failed call counts only as an I/O error (as in gprofng): not in
    // its file's bytes and calls.
    let recorded = io_calls(&expt);
    let succeeded: Vec<Call> = recorded.iter().filter(|c| !c.failed).cloned().collect();
    let expected = per_file(&succeeded);
    let failed = (recorded.len() - succeeded.len()) as u64;
    assert_eq!(doc[0]["total"]["io_error_count"], failed);
    assert_eq!(doc[3]["error"]["calls"], failed);
    for name in ["a", "b", "c", "d"] {
        let row = doc[0]["files"]
            .as_array()
            .expect("files")
            .iter()
            .find(|f| {
                f["name"]
                    .as_str()
                    .is_some_and(|n| n.ends_with(&format!("/{name}")))
            })
            .unwrap_or_else(|| panic!("{name} in {doc}"));
        let got = file(
            row["read_bytes"].as_u64().unwrap(),
            row["read_count"].as_u64().unwrap(),
            row["write_bytes"].as_u64().unwrap(),
            row["write_count"].as_u64().unwrap(),
            row["other_io_count"].as_u64().unwrap(),
        );
        assert_eq!(Some(&got), expected.get(name), "{name}: {row}");
    }
    // iodetail: the openings of a file add up to its ioactivity row; the
    // file write_a made was opened and closed there.
    let (activity, detail, stacks, stat) = (&doc[0], &doc[1], &doc[2], &doc[3]);
    for row in activity["files"].as_array().expect("files") {
        let openings: Vec<&serde_json::Value> = detail["files"]
            .as_array()
            .expect("openings")
            .iter()
            .filter(|o| o["name"] == row["name"])
            .collect();
        for key in [
            "read_bytes",
            "write_bytes",
            "read_count",
            "write_count",
            "other_io_count",
        ] {
            let sum: u64 = openings.iter().map(|o| o[key].as_u64().unwrap()).sum();
            assert_eq!(Some(sum), row[key].as_u64(), "{key} of {}", row["name"]);
        }
    }
    // iocallstack: write_a's 8 writes of 100 bytes are one stack under it;
    // the stacks add up to the total.
    let stack_list = stacks["stacks"].as_array().expect("stacks");
    let writes_in_a = stack_list
        .iter()
        .find(|s| s["frames"][0] == "write_a" && s["write_count"] == 8)
        .unwrap_or_else(|| panic!("write_a's writes in {stacks}"));
    assert_eq!(writes_in_a["write_bytes"], 800);
    let written: u64 = stack_list
        .iter()
        .map(|s| s["write_bytes"].as_u64().unwrap())
        .sum();
    assert_eq!(Some(written), stacks["total"]["write_bytes"].as_u64());
    // iostat: the calls and bytes of the total, by class.
    assert_eq!(stat["write"]["calls"], activity["total"]["write_count"]);
    assert_eq!(stat["write"]["bytes"], activity["total"]["write_bytes"]);
    assert_eq!(stat["read"]["bytes"], activity["total"]["read_bytes"]);
    assert_eq!(stat["other"]["calls"], activity["total"]["other_io_count"]);
}

#[test]
fn off_by_default_and_with_i_off() {
    for (name, options) in [("io-default", &[][..]), ("io-off", &["-i", "off"][..])] {
        let (path, _, _, _) = collect(name, options);
        let expt = Experiment::open(&path).expect("open");
        assert!(!expt.manifest().kinds.iter().any(|k| k == "io-trace"));
        assert!(!path.join("io").exists());
        let log = std::fs::read_to_string(path.join("log")).expect("log");
        assert!(log.contains(" iotrace=0"), "{log}");
        assert!(!log.contains(" io_totals "), "{log}");
    }
}

#[test]
fn a_bad_i_value_is_one_line_before_the_program_runs() {
    let dir = scratch_dir("io-bad");
    let output = Command::new(rdbx_bin())
        .args(["collect", "-i", "maybe", "-o", "t.er"])
        .arg(prog("io_known-O0"))
        .arg(&dir)
        .current_dir(&dir)
        .output()
        .expect("run rdbx collect");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("-i: expected on or off, got \"maybe\""),
        "{stderr}"
    );
    assert!(!dir.join("t.er").exists());
    assert!(!dir.join("a").exists(), "the program did not run");
}

#[test]
fn collector_iotrace_in_the_debugger() {
    let program = prog("io_known-O0");
    let dir = scratch_dir("io-debugger");
    let run = format!("run {}", dir.display());
    let out = Rdbx::batch()
        .cwd(&dir)
        .cmds(&[
            "collector show iotrace",
            "collector iotrace on",
            "collector show iotrace",
            "collector iotrace maybe",
            "collector store filename dbx.er",
            "collector enable",
            &run,
        ])
        .arg(&program)
        .run();
    let transcript = out.transcript();
    assert!(out.has_line("iotrace: off"), "{transcript}");
    assert!(out.has_line("iotrace: on"), "{transcript}");
    let errors = out.errors().join("\n");
    assert!(
        errors.contains("collector iotrace: expected on or off, got \"maybe\""),
        "{transcript}"
    );
    assert!(out.has_line("done"), "{transcript}");
    let expt = Experiment::open(dir.join("dbx.er"))
        .unwrap_or_else(|e| panic!("open dbx.er: {e}\n{transcript}"));
    check_known_io(&expt, &program, &dir, &said(&out.stderr));
}

#[test]
fn io_tracing_after_attach_sees_the_calls_from_then_on() {
    let program = prog("io_attach-O0");
    let dir = scratch_dir("io-attach");
    let run = collect_after_attach(&program, &dir, &["collector iotrace on"]);
    let target_dir = run.ready.strip_prefix("ready ").expect("ready line");
    let (rest, transcript) = (run.rest, run.transcript);
    assert_eq!(rest, "read 128\ndone\n", "{transcript}");

    let expt = Experiment::open(dir.join("live.er"))
        .unwrap_or_else(|e| panic!("open live.er: {e}\n{transcript}"));
    let log = std::fs::read_to_string(dir.join("live.er/log")).expect("log");
    assert!(
        log.contains(" kinds available=clock-profile,samples,io unavailable=heap,sync,mpi "),
        "{log}"
    );
    let entries: u64 = log_fields(&expt, "io")
        .and_then(|f| f.get("entries")?.parse().ok())
        .unwrap_or_else(|| panic!("the io how=got line: {log}"));
    assert!(entries >= 4, "open, write, read, close at least: {log}");
    let calls = io_calls(&expt);
    let callers = Callers::of(&expt, &program);
    let after = format!("{target_dir}/after");
    // The calls of after_attach (write_file's from it), none of before's.
    let described: Vec<(IoOp, u64, bool)> = calls
        .iter()
        .filter(|c| {
            let functions = callers.functions(c.stack_id);
            functions.iter().any(|f| f == "after_attach")
        })
        .map(|c| (c.op, c.bytes, c.failed))
        .collect();
    use IoOp::*;
    assert_eq!(
        described,
        vec![
            (Open, 0, false),
            (Write, 32, false),
            (Write, 32, false),
            (Write, 32, false),
            (Write, 32, false),
            (Close, 0, false),
            (Open, 0, false),
            (Read, 128, false),
            (Close, 0, false),
            (Write, 14, false),
        ],
        "{calls:#?}\n{log}"
    );
    let opens: Vec<&str> = calls
        .iter()
        .filter(|c| c.op == Open)
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(opens, [after.as_str(), after.as_str()]);
    assert!(
        !calls.iter().any(|c| c.name.ends_with("/before")),
        "{calls:#?}"
    );
}

/// A program run under `rdbx collect -i on` and alone, each in its own
/// scratch directory (given as its argument when `dir_argument`).
struct Runs {
    expt: Experiment,
    dir: PathBuf,
    plain_dir: PathBuf,
    stdout: String,
    stderr: String,
}

fn traced_and_plain(name: &str, program: &Path, dir_argument: bool) -> Runs {
    let dir = scratch_dir(name);
    let plain_dir = scratch_dir(&format!("{name}-plain"));
    let mut traced = Command::new(rdbx_bin());
    traced
        .args(["collect", "-i", "on", "-A", "off", "-o", "t.er"])
        .arg(program)
        .current_dir(&dir);
    let mut plain = Command::new(program);
    plain.current_dir(&plain_dir);
    if dir_argument {
        traced.arg(&dir);
        plain.arg(&plain_dir);
    }
    let traced = traced.output().expect("run rdbx collect");
    let plain = plain.output().expect("run the program");
    let stdout = String::from_utf8_lossy(&traced.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&traced.stderr).into_owned();
    assert_eq!(
        traced.status.code(),
        plain.status.code(),
        "exit status changed\n{stdout}\n{stderr}"
    );
    assert_eq!(
        stdout,
        String::from_utf8_lossy(&plain.stdout),
        "the program's output changed\n{stderr}"
    );
    let expt = Experiment::open(dir.join("t.er")).expect("open the experiment");
    let totals = log_fields(&expt, "io_totals").expect("the io_totals line");
    assert_eq!(totals["unrecorded"], "0");
    Runs {
        expt,
        dir,
        plain_dir,
        stdout,
        stderr,
    }
}

/// (op, descriptor, bytes, failed) of each call.
fn described(calls: &[&Call]) -> Vec<(IoOp, i32, u64, bool)> {
    calls
        .iter()
        .map(|c| (c.op, c.fd, c.bytes, c.failed))
        .collect()
}

/// Faults the hooks must not change (tests/programs/io_faults.c): a
/// descriptor closed by one thread while another is blocked in read() on
/// it (a pipe, then written to; a socket, then shut down), and a read of a
/// descriptor never opened. The output and exit status are the untraced
/// run's, each reader gets what it gets untraced, and every call is
/// recorded as what it was: the reads with their real results on the
/// descriptors closed under them, open across the close, the failed read
/// failed.
#[test]
fn a_descriptor_closed_under_a_blocked_read_is_recorded_as_it_happened() {
    let program = prog("io_faults-O0");
    let runs = traced_and_plain("io-faults", &program, false);
    assert_eq!(
        runs.stdout,
        "pipe: close returned 0, write returned 12\n\
         pipe: read returned 12, errno 0, \"after close!\"\n\
         socket: close returned 0, shutdown returned 0\n\
         socket: read returned 0, errno 0, \"\"\n\
         unopened: read returned -1, errno EBADF\n",
        "{}",
        runs.stderr
    );
    let calls = io_calls(&runs.expt);
    let callers = Callers::of(&runs.expt, &program);
    let fds = named_fds(&runs.stderr);
    let fd = |name: &str| -> i32 {
        *fds.get(name)
            .unwrap_or_else(|| panic!("the program names no fd {name}"))
    };
    let of = |caller: &str| -> Vec<&Call> {
        calls
            .iter()
            .filter(|c| callers.caller(c.stack_id) == caller)
            .collect()
    };
    use IoOp::*;

    let reads = of("blocked_reader");
    assert_eq!(
        described(&reads),
        [
            (Read, fd("pipe_read"), 12, false),
            (Read, fd("socket_read"), 0, false),
        ],
        "{calls:#?}"
    );
    let pipe = of("pipe_closed_under_reader");
    assert_eq!(
        described(&pipe),
        [
            (Close, fd("pipe_read"), 0, false),
            (Write, fd("pipe_write"), 12, false),
            (Close, fd("pipe_write"), 0, false),
        ],
        "{calls:#?}"
    );
    let socket = of("socket_closed_under_reader");
    assert_eq!(
        described(&socket),
        [
            (Close, fd("socket_read"), 0, false),
            (Close, fd("socket_other"), 0, false),
        ],
        "{calls:#?}"
    );
    let unopened = of("read_unopened");
    assert_eq!(described(&unopened), [(Read, 1000, 0, true)]);

    // Each read began before the close and ended after what woke it began
    // (the write, the shutdown after the close), in a thread of its own.
    let end = |c: &Call| c.start_ns + c.time_ns;
    assert!(reads[0].start_ns < pipe[0].start_ns && end(reads[0]) > pipe[1].start_ns);
    assert!(reads[1].start_ns < socket[0].start_ns && end(reads[1]) > end(socket[0]));
    let main_tid = pipe[0].tid;
    assert!(reads[0].tid != main_tid && reads[1].tid != main_tid && reads[0].tid != reads[1].tid);

    // How the program saw the readers blocked: reads of their syscall
    // lines, each opened, read and closed.
    let polls = of("in_read");
    assert!(!polls.is_empty() && polls.len() % 3 == 0, "{polls:#?}");
    for poll in polls.chunks(3) {
        assert_eq!(ops_of(poll), [Open, Read, Close], "{poll:#?}");
        assert!(poll.iter().all(|c| !c.failed && c.fd == poll[0].fd));
        assert!(poll[1].bytes > 0);
        let name = &poll[0].name;
        assert!(
            name.starts_with("/proc/self/task/") && name.ends_with("/syscall"),
            "{name}"
        );
    }
    let accounted = reads.len() + pipe.len() + socket.len() + unopened.len() + polls.len();
    assert_eq!(accounted, calls.len(), "calls elsewhere: {calls:#?}");
}

fn ops_of(calls: &[&Call]) -> Vec<IoOp> {
    calls.iter().map(|c| c.op).collect()
}

/// Successful opens per file (by its name in the directory).
fn opens_per_file(calls: &[Call]) -> BTreeMap<String, u64> {
    let mut opens = BTreeMap::new();
    for call in calls.iter().filter(|c| c.op == IoOp::Open && !c.failed) {
        let name = Path::new(&call.name)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        *opens.entry(name).or_insert(0) += 1;
    }
    opens
}

/// The files a traced run made are the untraced run's, of the sizes the
/// program made them by construction.
fn same_files(runs: &Runs, sizes: &[(&str, u64)]) {
    for &(name, size) in sizes {
        let traced = std::fs::read(runs.dir.join(name)).expect("the traced run's file");
        let plain = std::fs::read(runs.plain_dir.join(name)).expect("the untraced run's file");
        assert!(traced == plain, "{name} differs");
        assert_eq!(traced.len() as u64, size, "{name}");
    }
}

/// C++ (tests/programs/io_cpp.cpp): std::ofstream, std::ifstream and
/// std::fstream reach the traced functions through libstdc++'s filebuf
/// (fopen and fclose, read, write and writev on the descriptor, lseek for
/// a seek). Its buffer makes fewer, larger calls than the program's, and
/// the bytes per file add up exactly to what the program moved: `text`
/// written once and read twice (copied, then line by line), `copy`
/// written, `data` written and read back through one fstream; stdout is
/// std::cout's fwrite calls.
#[test]
fn cpp_file_streams_move_the_bytes_the_program_did() {
    let program = built("io_cpp.cpp", "g++");
    let runs = traced_and_plain("io-cpp", &program, true);
    assert_eq!(runs.stdout, "lines 101\ndone\n");
    same_files(&runs, &[("text", 10_004), ("copy", 10_004), ("data", 3000)]);
    let calls = io_calls(&runs.expt);
    let files = per_file(&calls);
    let bytes = |name: &str| -> (u64, u64) {
        let file = files
            .get(name)
            .unwrap_or_else(|| panic!("no {name} in {files:#?}"));
        (file.read_bytes, file.written_bytes)
    };
    assert_eq!(bytes("text"), (2 * 10_004, 10_004), "{calls:#?}");
    assert_eq!(bytes("copy"), (0, 10_004), "{calls:#?}");
    assert_eq!(bytes("data"), (3000, 3000), "{calls:#?}");
    assert_eq!(bytes("fd 1"), (0, runs.stdout.len() as u64), "{calls:#?}");
    // 101 writes of the program's, at least two calls of the filebuf's
    // 8 KiB buffer.
    let text_writes = files["text"].writes;
    assert!((2..=100).contains(&text_writes), "{calls:#?}");
    // Each stream opened and closed its file once.
    let opens = opens_per_file(&calls);
    let expected: BTreeMap<String, u64> = [("text", 3), ("copy", 1), ("data", 1)]
        .into_iter()
        .map(|(name, n)| (name.to_string(), n))
        .collect();
    assert_eq!(opens, expected, "{calls:#?}");
    let closes = calls
        .iter()
        .filter(|c| c.op == IoOp::Close && c.fd > 2)
        .count();
    assert_eq!(closes, 5, "{calls:#?}");
    assert!(calls.iter().all(|c| !c.failed), "{calls:#?}");
}

/// Rust (tests/programs/io_rust.rs): std::fs::File is open64, read,
/// write and close; write_all of 5000 bytes is one write, a BufWriter's
/// 1000 writes of 10 bytes are two (8190 bytes when the next 10 no longer
/// fit its 8 KiB, 1810 at the flush), read_to_end and read_exact take
/// every byte back; stdout is println!'s writes.
#[test]
fn rust_files_move_the_bytes_the_program_did() {
    let program = built("io_rust.rs", "rustc");
    let runs = traced_and_plain("io-rust", &program, true);
    assert_eq!(runs.stdout, "read 5000 10000\ndone\n");
    same_files(&runs, &[("plain", 5000), ("buffered", 10_000)]);
    let calls = io_calls(&runs.expt);
    let files = per_file(&calls);
    let bytes = |name: &str| -> (u64, u64) {
        let file = files
            .get(name)
            .unwrap_or_else(|| panic!("no {name} in {files:#?}"));
        (file.read_bytes, file.written_bytes)
    };
    assert_eq!(bytes("plain"), (5000, 5000), "{calls:#?}");
    assert_eq!(bytes("buffered"), (10_000, 10_000), "{calls:#?}");
    assert_eq!(bytes("fd 1"), (0, runs.stdout.len() as u64), "{calls:#?}");
    let callers = Callers::of(&runs.expt, &program);
    let writes_in = |function: &str| -> Vec<u64> {
        calls
            .iter()
            .filter(|c| {
                c.op == IoOp::Write && callers.functions(c.stack_id).iter().any(|f| f == function)
            })
            .map(|c| c.bytes)
            .collect()
    };
    assert_eq!(writes_in("io_rust::write_plain"), [5000], "{calls:#?}");
    assert_eq!(
        writes_in("io_rust::write_buffered"),
        [8190, 1810],
        "{calls:#?}"
    );
    // read_to_end reads until a read returns 0.
    let plain_reads = files["plain"].reads;
    assert!(plain_reads >= 2, "{calls:#?}");
    let opens = opens_per_file(&calls);
    let expected: BTreeMap<String, u64> = [("plain", 2), ("buffered", 2)]
        .into_iter()
        .map(|(name, n)| (name.to_string(), n))
        .collect();
    assert_eq!(opens, expected, "{calls:#?}");
    assert!(calls.iter().all(|c| !c.failed), "{calls:#?}");
}

/// What io_timed measured of its own calls: per (function, class) the
/// nanoseconds and the calls (its `io FUNCTION CLASS NS CALLS` lines).
fn measured_per_class(stderr: &str) -> BTreeMap<(String, String), (u64, u64)> {
    stderr
        .lines()
        .filter_map(
            |line| match line.split_whitespace().collect::<Vec<_>>()[..] {
                ["io", function, class, ns, calls] => Some((
                    (function.to_string(), class.to_string()),
                    (ns.parse().ok()?, calls.parse().ok()?),
                )),
                _ => None,
            },
        )
        .collect()
}

/// A recorded time is at most what the program measured around its calls
/// (its clock reads enclose the collector's) and at least 95% of it less
/// 3 ms: the program's measure also holds the hook's own work, and on a
/// loaded machine the thread can be preempted there (as tests/sync.rs
/// allows for waits).
fn close_below(recorded_ns: u64, measured_ns: u64) -> bool {
    recorded_ns <= measured_ns && recorded_ns * 100 + 300_000_000 >= measured_ns * 95
}

/// gprofng's per-class times and errors against a program that times each
/// of its calls (tests/programs/io_timed.c): reads of a pipe blocked until
/// a helper writes, writes blocked until a helper drains the pipe, an
/// fsync and an open of a fifo blocked until a helper opens its other
/// end, and failed calls, one of them a read interrupted by a signal
/// 20 ms in. Per function, Read Time, Write Time, Other I/O Time and I/O
/// Error Time are the program's measures within the tolerance above, the
/// counts exact; a failed call counts only as an error, as in gprofng
/// (whose own run of this program counts the interrupted read as an I/O
/// error and not as a read).
#[test]
fn per_class_times_and_errors_are_the_programs_own() {
    let program = prog("io_timed-O0");
    let runs = traced_and_plain("io-timed", &program, true);
    assert_eq!(runs.stdout, "done\n", "{}", runs.stderr);
    assert!(!runs.stderr.contains("not EINTR"), "{}", runs.stderr);
    let measured = measured_per_class(&runs.stderr);
    assert_eq!(measured.len(), 16, "{}", runs.stderr);
    let output = Command::new(rdbx_bin())
        .args(["analyze", "--json", "-c", "functions", "-c", "iostat"])
        .arg(runs.dir.join("t.er"))
        .output()
        .expect("run rdbx analyze");
    assert!(output.status.success());
    let doc: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    let rows = doc[0]["rows"].as_array().expect("rows");
    let classes = [
        ("read", "read_time", "read_count"),
        ("write", "write_time", "write_count"),
        ("other", "other_io_time", "other_io_count"),
        ("error", "io_error_time", "io_error_count"),
    ];
    let mut errors = 0;
    for function in ["do_reads", "do_writes", "do_others", "do_errors"] {
        let row = rows
            .iter()
            .find(|r| r["name"] == function)
            .unwrap_or_else(|| panic!("{function} in {}", doc[0]));
        for (class, time_key, count_key) in classes {
            let (ns, calls) = measured[&(function.to_string(), class.to_string())];
            let recorded_ns = (row[time_key]["exclusive"].as_f64().unwrap() * 1e9).round() as u64;
            let recorded_calls = row[count_key]["exclusive"].as_u64().unwrap();
            assert_eq!(recorded_calls, calls, "{function} {class}: {row}");
            assert!(
                close_below(recorded_ns, ns),
                "{function} {class}: recorded {recorded_ns} ns, the program measured {ns} ns"
            );
            if class == "error" {
                errors += calls;
            }
        }
    }
    // By construction: 3 blocked reads and the end of the pipe; the
    // blocked open of the fifo; 6 failures, the interrupted read among them.
    let calls = |function: &str, class: &str| measured[&(function.to_string(), class.to_string())];
    assert_eq!(calls("do_reads", "read").1, 4);
    assert!(calls("do_reads", "read").0 >= 60_000_000);
    assert!(calls("do_others", "other").0 >= 20_000_000);
    assert_eq!(calls("do_others", "other").1, 5);
    assert_eq!(errors, 6);
    assert!(calls("do_errors", "error").0 >= 20_000_000);
    // iostat's classes are the metrics'.
    let stat = &doc[1];
    assert_eq!(stat["error"]["calls"], errors);
    assert_eq!(stat["read"]["calls"], doc[0]["total"]["read_count"]);
    assert_eq!(stat["other"]["calls"], doc[0]["total"]["other_io_count"]);
}
