//! Damaged and wrong input: what can be read is shown, what cannot
//! becomes a warning (`Analysis::warnings`), and what is not an
//! experiment at all is refused with a message saying why.

mod common;

use analyzer::Analysis;
use common::*;
use experiment::layout::{stack_id, StackStatus, BLOCK_SIZE, CLOCK_EVENT_SIZE, HEADER_SIZE};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

const UNIT: u64 = 10_000_000;

struct Built {
    dir: PathBuf,
    syms: HashMap<String, (u64, u64)>,
}

/// Thread 700: 20 events, `A main` x10 then `C A main` x5 then `B main` x5;
/// thread 701: 10 events of `C B main`. One profile and one stacks block
/// per thread, thread 700's first.
fn build(tmp: &Path, name: &str) -> Built {
    let (_, syms, mut expt) = seed_synthetic(tmp, name);
    let mut ts = START + 1000;
    let plan: [(u32, &[&str], u32); 4] = [
        (700, &["A", "main"], 10),
        (700, &["C", "A", "main"], 5),
        (700, &["B", "main"], 5),
        (701, &["C", "B", "main"], 10),
    ];
    for (tid, names, n) in plan {
        for _ in 0..n {
            ts += 1000;
            expt.event(tick(ts, tid, stack_of(&syms, names)));
        }
    }
    Built {
        dir: expt.write(),
        syms,
    }
}

fn units_by_name(analysis: &mut Analysis) -> HashMap<String, (u64, u64)> {
    rows_by_name(&run_json(analysis, "functions"))
        .into_iter()
        .map(|(n, (e, i))| (n, (e / UNIT, i / UNIT)))
        .collect()
}

fn has_warning(analysis: &Analysis, words: &[&str]) -> bool {
    analysis
        .warnings()
        .iter()
        .any(|w| words.iter().all(|word| w.contains(word)))
}

fn patch(path: &Path, offset: usize, bytes: &[u8]) {
    let mut data = std::fs::read(path).unwrap();
    data[offset..offset + bytes.len()].copy_from_slice(bytes);
    std::fs::write(path, data).unwrap();
}

#[test]
fn an_intact_experiment_has_no_warnings() {
    let tmp = TempDir::new("intact");
    let built = build(&tmp.0, "ok.er");
    let mut analysis = Analysis::open(&[built.dir]).expect("opens");
    assert!(analysis.warnings().is_empty(), "{:?}", analysis.warnings());
    let f = units_by_name(&mut analysis);
    assert_eq!(f["<Total>"], (30, 30));
    assert_eq!(f["A"], (10, 15));
    assert_eq!(f["C"], (15, 15));
}

#[test]
fn zeroed_records_in_a_profile_block_are_skipped_with_a_warning() {
    let tmp = TempDir::new("zeroed");
    let built = build(&tmp.0, "z.er");
    // Records 2, 3 and 4 of thread 700 (all `A main`) become zeros.
    let at = HEADER_SIZE + 2 * CLOCK_EVENT_SIZE;
    patch(&built.dir.join("profile"), at, &[0u8; 3 * CLOCK_EVENT_SIZE]);
    let mut analysis = Analysis::open(&[built.dir]).expect("opens");
    assert!(
        has_warning(&analysis, &["damaged profile block"]),
        "{:?}",
        analysis.warnings()
    );
    let f = units_by_name(&mut analysis);
    assert_eq!(f["<Total>"], (27, 27), "{f:?}");
    assert_eq!(f["A"], (7, 12), "{f:?}");
    assert_eq!(f["B"], (5, 15), "{f:?}");
    // The warning is in the header too.
    let header = run(&mut analysis, "header");
    assert!(header.contains("analyzer warning:"), "{header}");
    assert_eq!(
        run_json(&mut analysis, "header")["warnings"]
            .as_array()
            .map(Vec::len),
        Some(analysis.warnings().len())
    );
}

#[test]
fn garbage_in_the_middle_of_a_profile_block_leaves_the_rest_readable() {
    let tmp = TempDir::new("garbage");
    let built = build(&tmp.0, "g.er");
    // 2.5 records of garbage from the middle of record 3.
    let at = HEADER_SIZE + 3 * CLOCK_EVENT_SIZE + 7;
    patch(&built.dir.join("profile"), at, &[0xab; 60]);
    let mut analysis = Analysis::open(&[built.dir]).expect("opens");
    // Garbage timestamps (0xabab...) are centuries after the run: dropped.
    assert!(
        has_warning(&analysis, &["impossible timestamps"]),
        "{:?}",
        analysis.warnings()
    );
    // Records 3, 4 and 5 are garbage; every other event counts as written.
    let f = units_by_name(&mut analysis);
    assert_eq!(f["A"], (7, 12), "{f:?}");
    assert_eq!(f["B"], (5, 15), "{f:?}");
    assert_eq!(f["C"], (15, 15), "{f:?}");
    assert_eq!(f["main"], (0, 27), "{f:?}");
    assert!(!f.contains_key("<Unknown>"), "garbage charged: {f:?}");
    let overview = run_json(&mut analysis, "overview");
    let duration = overview["duration_seconds"].as_f64().unwrap();
    assert!(duration < 3600.0, "duration from garbage: {duration}");
}

#[test]
fn a_block_with_a_bad_header_is_skipped_and_the_others_read() {
    let tmp = TempDir::new("badheader");
    let built = build(&tmp.0, "h.er");
    // Thread 700's profile block claims to be of kind 0x7777.
    patch(&built.dir.join("profile"), 4, &0x7777u16.to_le_bytes());
    let mut analysis = Analysis::open(&[built.dir]).expect("opens");
    assert!(
        has_warning(&analysis, &["damaged profile block"]),
        "{:?}",
        analysis.warnings()
    );
    let f = units_by_name(&mut analysis);
    assert_eq!(f["<Total>"], (10, 10), "{f:?}");
    assert_eq!(f["C"], (10, 10), "{f:?}");
    assert!(!f.contains_key("A"), "{f:?}");
}

#[test]
fn a_cut_stacks_file_shows_lost_stacks_as_unknown() {
    let tmp = TempDir::new("cutstacks");
    let built = build(&tmp.0, "c.er");
    // Keep thread 700's first stack record (`A main`, depth 2) only.
    let keep = HEADER_SIZE + 16 + 2 * 8;
    let stacks = built.dir.join("stacks");
    let data = std::fs::read(&stacks).unwrap();
    std::fs::write(&stacks, &data[..keep + 5]).unwrap();
    let mut analysis = Analysis::open(&[built.dir]).expect("opens");
    assert!(
        has_warning(&analysis, &["20 event(s)", "stack was not written"]),
        "{:?}",
        analysis.warnings()
    );
    let f = units_by_name(&mut analysis);
    assert_eq!(f["<Total>"], (30, 30), "{f:?}");
    assert_eq!(f["A"], (10, 10), "{f:?}");
    assert_eq!(f["<Unknown>"], (20, 20), "{f:?}");
    assert!(!f.contains_key("C"), "{f:?}");
}

#[test]
fn an_event_whose_stack_record_is_missing_is_unknown() {
    let tmp = TempDir::new("nostack");
    let built = build(&tmp.0, "m.er");
    let lost = stack_of(&built.syms, &["B", "main"]);
    drop_stack_record(&built.dir, stack_id(StackStatus::Complete.code(), &lost));
    let mut analysis = Analysis::open(&[built.dir]).expect("opens");
    assert!(
        has_warning(&analysis, &["5 event(s)", "stack was not written"]),
        "{:?}",
        analysis.warnings()
    );
    let f = units_by_name(&mut analysis);
    assert_eq!(f["<Unknown>"], (5, 5), "{f:?}");
    assert_eq!(f["B"], (0, 10), "{f:?}");
    assert_eq!(f["main"], (0, 25), "{f:?}");
    assert_eq!(f["<Total>"], (30, 30), "{f:?}");
    let unknown = run_json(&mut analysis, "csingle <Unknown>");
    assert_eq!(
        attributed(&unknown, "callers"),
        [("<Total>".to_string(), 5 * UNIT)]
    );
}

#[test]
fn unreadable_log_lines_and_broken_descendants_are_warnings() {
    let tmp = TempDir::new("badlog");
    let built = build(&tmp.0, "l.er");
    let log = built.dir.join("log");
    let mut text = std::fs::read(&log).unwrap();
    text.extend_from_slice(b"not a log line at all\n1234 sample number=x\n");
    std::fs::write(&log, text).unwrap();
    let child = built.dir.join("_f1.er");
    std::fs::create_dir_all(&child).unwrap();
    std::fs::write(
        child.join("manifest"),
        "format=rdbx-experiment\nversion=99\n",
    )
    .unwrap();
    let mut analysis = Analysis::open(&[built.dir]).expect("opens");
    assert!(
        has_warning(&analysis, &["2 unreadable log line(s)"]),
        "{:?}",
        analysis.warnings()
    );
    assert!(
        has_warning(&analysis, &["descendant skipped", "99"]),
        "{:?}",
        analysis.warnings()
    );
    assert_eq!(units_by_name(&mut analysis)["<Total>"], (30, 30));
}

fn open_error(path: &Path) -> String {
    Analysis::open(&[path.to_path_buf()])
        .map(|_| ())
        .expect_err("refused")
        .to_string()
}

#[test]
fn what_is_not_a_readable_experiment_is_refused_with_the_reason() {
    let tmp = TempDir::new("refused");
    let built = build(&tmp.0, "v.er");
    let manifest = built.dir.join("manifest");
    let text = std::fs::read_to_string(&manifest).unwrap();
    let changed: String = text
        .lines()
        .map(|l| match l.starts_with("version=") {
            true => "version=99\n".to_string(),
            false => format!("{l}\n"),
        })
        .collect();
    assert_ne!(changed, text, "the manifest has a version line");
    std::fs::write(&manifest, changed).unwrap();
    let err = open_error(&built.dir);
    assert!(err.contains("version 99"), "{err}");
    // The line is quoted, with its number.
    assert!(
        err.contains(&format!(
            "{}: manifest line 2: \"version=99\": ",
            built.dir.display()
        )),
        "{err}"
    );
    std::fs::write(&manifest, "version=1\nformat=rdbx-experiment\n").unwrap();
    let err = open_error(&built.dir);
    assert!(
        err.ends_with("(manifest line 1: \"version=1\": expected format=rdbx-experiment first)"),
        "{err}"
    );
    assert!(!err.contains("Some("), "{err}");
    std::fs::write(&manifest, "format=rdbx-experiment\nversion=1\nfiles log\n").unwrap();
    let err = open_error(&built.dir);
    assert!(
        err.ends_with("manifest line 3: \"files log\": expected KEY=VALUE"),
        "{err}"
    );

    let file = tmp.0.join("plain-file");
    std::fs::write(&file, "hello").unwrap();
    let err = open_error(&file);
    assert!(err.contains("not a directory"), "{err}");

    let empty = tmp.0.join("empty.er");
    std::fs::create_dir_all(&empty).unwrap();
    let err = open_error(&empty);
    assert!(err.contains("no manifest"), "{err}");

    let err = open_error(&tmp.0.join("missing.er"));
    assert!(err.contains("no such directory"), "{err}");

    let err = Analysis::open(&[]).map(|_| ()).expect_err("refused");
    assert!(err.to_string().contains("no experiment"), "{err}");

    // Another format's manifest.
    std::fs::write(empty.join("manifest"), "format=something-else\nversion=1\n").unwrap();
    let err = open_error(&empty);
    assert!(err.contains("not an rdbx experiment"), "{err}");
}

#[test]
fn garbage_or_missing_data_files_are_warnings_that_say_what_is_lost() {
    let tmp = TempDir::new("lost");
    // A profile that is not a block file at all: another file's bytes.
    let built = build(&tmp.0, "p.er");
    let junk: Vec<u8> = (0..3 * BLOCK_SIZE as u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8 | 1)
        .collect();
    std::fs::write(built.dir.join("profile"), &junk).unwrap();
    let mut analysis = Analysis::open(&[built.dir]).expect("opens");
    assert!(
        has_warning(
            &analysis,
            &["profile holds no readable block (3 of 3 damaged)"]
        ),
        "{:?}",
        analysis.warnings()
    );
    assert_eq!(units_by_name(&mut analysis)["<Total>"], (0, 0));

    // The same in stacks: every event is there, every stack lost.
    let built = build(&tmp.0, "s.er");
    std::fs::write(built.dir.join("stacks"), &junk[..BLOCK_SIZE + 100]).unwrap();
    let mut analysis = Analysis::open(&[built.dir]).expect("opens");
    assert!(
        has_warning(
            &analysis,
            &["stacks holds no readable block (2 of 2 damaged)"]
        ),
        "{:?}",
        analysis.warnings()
    );
    assert_eq!(units_by_name(&mut analysis)["<Unknown>"], (30, 30));

    // No log: the events are read, but no object names their PCs.
    let built = build(&tmp.0, "l.er");
    std::fs::remove_file(built.dir.join("log")).unwrap();
    let mut analysis = Analysis::open(std::slice::from_ref(&built.dir)).expect("opens");
    assert!(
        has_warning(
            &analysis,
            &["no log file", "every function shows as <Unknown>"]
        ),
        "{:?}",
        analysis.warnings()
    );
    let f = units_by_name(&mut analysis);
    assert_eq!(f["<Unknown>"], (30, 30), "{f:?}");
    // A log of garbage: its lines are skipped, and what that means is said.
    std::fs::write(built.dir.join("log"), "garbage\nmore garbage\n").unwrap();
    let analysis = Analysis::open(&[built.dir]).expect("opens");
    assert!(
        has_warning(&analysis, &["2 unreadable log line(s)"])
            && has_warning(&analysis, &["the log names no load object"]),
        "{:?}",
        analysis.warnings()
    );
    // Each is one line.
    assert!(analysis.warnings().iter().all(|w| !w.contains('\n')));
}

#[test]
fn an_experiment_without_data_files_opens_empty() {
    let tmp = TempDir::new("nodata");
    let built = build(&tmp.0, "n.er");
    std::fs::remove_file(built.dir.join("profile")).unwrap();
    std::fs::remove_file(built.dir.join("stacks")).unwrap();
    let mut analysis = Analysis::open(&[built.dir]).expect("opens");
    assert_eq!(units_by_name(&mut analysis)["<Total>"], (0, 0));
    for file in ["profile", "stacks"] {
        assert!(
            has_warning(&analysis, &[&format!("no {file} file")]),
            "{:?}",
            analysis.warnings()
        );
    }
    // Every listing still answers.
    for command in [
        "functions",
        "callers-callees",
        "calltree",
        "lines",
        "pcs",
        "objects",
        "overview",
        "statistics",
        "sample_list",
        "thread_list",
        "cpu_list",
    ] {
        run(&mut analysis, command);
        run_json(&mut analysis, command);
    }
    let _ = BLOCK_SIZE;
}
