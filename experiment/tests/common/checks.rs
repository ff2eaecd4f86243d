//! Invariant checks over every reading API of the experiment crate, shared by the property
//! tests (tests/corrupt.rs) and the cargo-fuzz target (fuzz/fuzz_targets/read_experiment.rs,
//! which includes this file with `#[path]`). Each check panics (asserts) when the reader
//! breaks a promise; the reader itself must never panic, whatever the input.

#![allow(dead_code)]

use experiment::archive::{parse_index, parse_index_lenient};
use experiment::layout::{
    parse_block, BlockState, ClockEvent, StackRecordRef, BLOCK_MAGIC, BLOCK_SIZE, CLOCK_EVENT_SIZE,
    HEADER_SIZE, KIND_PROFILE, KIND_STACKS, MAX_STACK_DEPTH,
};
use experiment::log::parse_log;
use experiment::text::{parse_log_line, percent_decode, MAX_LOG_LINE};
use experiment::{Config, Event, Experiment, Manifest, Stack, StackStatus, Warning};
use std::collections::HashMap;
use std::path::Path;

/// What a block file holds, worked out block by block with `parse_block` (the oracle the
/// reader's results are compared with).
#[derive(Debug, Default)]
pub struct BlockFileModel {
    pub blocks: u64,
    pub used: u64,
    pub unused: u64,
    pub bad_header: u64,
    /// Blocks whose magic is neither RXB1 nor 0.
    pub garbage: u64,
    pub cut_header: u64,
    /// (tid, event) of every whole clock event with a nonzero stack id, in file order.
    pub clock_events: Vec<(u32, ClockEvent)>,
    /// The first record of each stack id, read the way the reader does.
    pub stacks: HashMap<u64, Stack>,
}

/// Checks `parse_block` on each `block_size` chunk of `file` and models what it holds.
pub fn check_block_file(file: &[u8], block_size: usize, kind: u16) -> BlockFileModel {
    let mut model = BlockFileModel::default();
    if block_size == 0 {
        // Not a block size a manifest can give; parse_block must still not panic.
        let _ = parse_block(file, 0, kind);
        return model;
    }
    for chunk in file.chunks(block_size) {
        model.blocks += 1;
        let magic_ok = chunk
            .first_chunk::<4>()
            .is_some_and(|m| u32::from_le_bytes(*m) == BLOCK_MAGIC);
        let magic = &chunk[..chunk.len().min(4)];
        let magic_zero = magic.iter().all(|&b| b == 0);
        match parse_block(chunk, block_size, kind) {
            BlockState::Unused => {
                assert!(magic_zero, "a block with magic {magic:?} read as unused");
                model.unused += 1;
            }
            BlockState::Garbage => {
                assert!(!magic_zero && !magic_ok, "magic {magic:?} read as garbage");
                model.garbage += 1;
            }
            BlockState::CutHeader => {
                assert!(chunk.len() < HEADER_SIZE && !magic_zero);
                assert!(BLOCK_MAGIC.to_le_bytes().starts_with(magic));
                model.cut_header += 1;
            }
            BlockState::BadHeader(header) => {
                assert!(magic_ok && header.magic == BLOCK_MAGIC);
                let size = usize::from(header.header_size);
                assert!(
                    header.kind != kind || size < HEADER_SIZE || size % 8 != 0 || size > block_size
                );
                model.bad_header += 1;
            }
            BlockState::Used(used) => {
                assert!(magic_ok && used.header.magic == BLOCK_MAGIC);
                assert_eq!(used.header.kind, kind);
                let header_size = usize::from(used.header.header_size);
                let capacity = block_size - header_size;
                let committed = used.header.committed as usize;
                // committed is clamped to the payload and to the bytes present.
                assert!(used.records.len() <= capacity);
                assert!(used.records.len() <= committed);
                assert_eq!(used.clamped, committed > capacity);
                let end = header_size + committed.min(capacity);
                assert_eq!(
                    used.cut,
                    chunk.len() < end,
                    "cut: the block ends before {end}"
                );
                if !used.records.is_empty() {
                    let start = chunk.as_ptr() as usize + header_size;
                    assert_eq!(
                        used.records.as_ptr() as usize,
                        start,
                        "records right after the header"
                    );
                }
                model.used += 1;
                if kind == KIND_PROFILE {
                    model_clock_events(used.header.tid, used.records, &mut model);
                } else {
                    model_stacks(used.records, &mut model);
                }
            }
        }
    }
    model
}

fn model_clock_events(tid: u32, records: &[u8], model: &mut BlockFileModel) {
    for chunk in records.chunks_exact(CLOCK_EVENT_SIZE) {
        let event = ClockEvent::from_bytes(chunk).expect("a whole record decodes");
        if event.stack_id != 0 {
            model.clock_events.push((tid, event));
        }
    }
}

fn model_stacks(records: &[u8], model: &mut BlockFileModel) {
    let mut rest = records;
    while let Some(record) = StackRecordRef::parse(rest) {
        let depth = usize::from(record.header.depth);
        assert_eq!(record.size(), 16 + 8 * depth);
        assert!(record.size() <= rest.len());
        let pcs: Vec<u64> = record.pcs().collect();
        assert_eq!(pcs.len(), depth);
        let Some(status) = record.status() else { break };
        if record.header.stack_id == 0 || depth > MAX_STACK_DEPTH {
            break;
        }
        model
            .stacks
            .entry(record.header.stack_id)
            .or_insert(Stack { pcs, status });
        rest = &rest[record.size()..];
    }
}

/// Checks the log parser on `bytes`; returns the number of events it must give.
pub fn check_log(bytes: &[u8]) -> usize {
    let events = parse_log(bytes);
    let complete = match bytes.iter().rposition(|&b| b == b'\n') {
        Some(last) => &bytes[..=last],
        None => &[][..],
    };
    let lines = complete
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .count();
    assert_eq!(events.len(), lines, "one event per complete line");
    for event in &events {
        if let Event::Malformed { line, reason } = &event.event {
            assert!(
                line.chars().count() <= MAX_LOG_LINE + 3,
                "malformed line kept whole"
            );
            assert!(reason.len() < 1000, "reason quotes the whole line");
        }
    }
    lines
}

/// Every pure parser on `data`: nothing may panic, and what they return must hold together.
pub fn check_pure(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let path = Path::new("/fuzz.er/manifest");
    if let Ok(m) = Manifest::parse(&text, path) {
        assert!((64..=16 << 20).contains(&m.block_size), "{}", m.block_size);
        assert_eq!(m.version_major, experiment::layout::FORMAT_VERSION);
    }
    check_log(data);
    for line in text.lines() {
        if let Ok(raw) = parse_log_line(line) {
            assert!(!raw.event.is_empty() && !raw.event.contains('='));
        }
    }
    if let Ok(config) = Config::parse(&text) {
        assert!((1..=MAX_STACK_DEPTH as u32).contains(&config.depth));
        assert!((0..=64).contains(&config.pause_signal));
        // What parses re-emits and parses back the same.
        assert_eq!(Config::parse(&config.to_config_string()).ok(), Some(config));
    }
    if let Ok(decoded) = percent_decode(&text) {
        assert!(decoded.len() <= text.len());
    }
    let strict = parse_index(&text, path);
    let (entries, errors) = parse_index_lenient(&text, path);
    match strict {
        Ok(all) => {
            assert!(errors.is_empty());
            assert_eq!(all, entries);
        }
        Err(_) => assert!(!errors.is_empty()),
    }
    // The first two bytes pick a block size, so small and odd ones are covered too.
    let picked = data
        .first_chunk::<2>()
        .map_or(64, |b| usize::from(u16::from_le_bytes(*b)));
    for block_size in [picked, 0, 1, HEADER_SIZE, 64, 4096, BLOCK_SIZE] {
        for kind in [KIND_PROFILE, KIND_STACKS, 0] {
            check_block_file(data, block_size, kind);
        }
    }
    if let Some(record) = StackRecordRef::parse(data) {
        assert_eq!(record.pcs().count(), usize::from(record.header.depth));
        assert!(record.size() <= data.len());
    }
}

/// Reads the experiment directory `dir` through every public reading API and checks the
/// results against models built from the files' bytes.
pub fn check_experiment_dir(dir: &Path) {
    let expt = match Experiment::open(dir) {
        Ok(expt) => expt,
        Err(e) => {
            // An error, not a panic; and it quotes at most a preview of the input.
            assert!(e.to_string().len() < 4096, "huge error message");
            return;
        }
    };
    let manifest = expt.manifest().clone();
    assert!((64..=16 << 20).contains(&manifest.block_size));
    let read = |name: &str| std::fs::read(dir.join(name)).ok();

    let log = expt.log();
    if let (Ok(log), Some(bytes)) = (&log, read("log")) {
        assert_eq!(log.len(), check_log(&bytes));
    }
    let samples = expt.samples();
    if let (Ok(log), Ok(samples)) = (&log, &samples) {
        let n = log
            .iter()
            .filter(|e| matches!(e.event, Event::Sample(_)))
            .count();
        assert_eq!(samples.len(), n);
    }

    let clock = expt.clock_events_with_stats();
    if let (Ok((events, stats)), Some(bytes)) = (&clock, read("profile")) {
        let model = check_block_file(&bytes, manifest.block_size, KIND_PROFILE);
        let expected: Vec<_> = model
            .clock_events
            .iter()
            .map(|(tid, e)| (*tid, e.timestamp_ns, e.stack_id, e.weight_ns, e.cpu))
            .collect();
        let got: Vec<_> = events
            .iter()
            .map(|e| (e.tid, e.timestamp_ns, e.stack_id, e.weight_ns, e.cpu))
            .collect();
        assert_eq!(
            got, expected,
            "events only from committed records of RXB1 blocks"
        );
        assert_eq!(stats.blocks, model.blocks);
        assert_eq!(stats.used, model.used);
        assert_eq!(stats.unused, model.unused);
        assert!(stats.damaged >= model.bad_header + model.garbage && stats.damaged <= model.blocks);
        assert!(stats.cut >= model.cut_header && stats.cut <= model.blocks);
        assert_eq!(stats.records, events.len() as u64);
    }

    let stacks = expt.stacks_with_stats();
    if let Ok((stacks, stats)) = &stacks {
        for (id, stack) in stacks {
            assert_ne!(*id, 0);
            assert!(stack.pcs.len() <= MAX_STACK_DEPTH);
            assert!(matches!(
                stack.status,
                StackStatus::Complete | StackStatus::Truncated | StackStatus::Failed
            ));
        }
        if let Some(bytes) = read("stacks") {
            let model = check_block_file(&bytes, manifest.block_size, KIND_STACKS);
            assert_eq!(stacks, &model.stacks);
            assert_eq!(stats.blocks, model.blocks);
            assert_eq!(stats.used, model.used);
        }
    }

    let summary = expt.summary();
    if let (Ok(summary), Ok(log), Ok((events, _)), Ok((_, stack_stats))) =
        (&summary, &log, &clock, &stacks)
    {
        assert_eq!(summary.log_events, log.len());
        assert_eq!(summary.clock_events, events.len() as u64);
        assert_eq!(summary.stack_records, stack_stats.records);
        let malformed = log
            .iter()
            .filter(|e| matches!(e.event, Event::Malformed { .. }))
            .count();
        assert_eq!(summary.malformed_log_lines, malformed);
        let warnings = expt.warnings();
        if malformed > 0 {
            assert!(warnings.contains(&Warning::MalformedLogLines { count: malformed }));
        }
        for w in summary.warnings() {
            assert!(warnings.contains(&w), "{w} missing from {warnings:?}");
        }
        for w in &warnings {
            assert!(!w.to_string().is_empty());
        }
    } else {
        // Something could not be read at all: warnings say so instead of failing.
        let warnings = expt.warnings();
        assert!(warnings
            .iter()
            .any(|w| matches!(w, Warning::Unreadable { .. })));
    }

    let _ = expt.descendants();
    let _ = expt.total_data_bytes();
    if let Some(notes) = expt.notes() {
        assert!(notes.len() <= 3 << 20, "notes read is capped");
    }
    let strict = expt.archive_index();
    let lenient = expt.archive_index_lenient();
    if let (Ok(strict), Ok((entries, errors))) = (strict, lenient) {
        assert!(errors.is_empty());
        assert_eq!(strict, entries);
    }
    let _ = expt.has_archive();
    let _ = expt.is_descendant();
}
