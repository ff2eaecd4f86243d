//! er_print's heap-tracing listings: `leaks` (blocks never freed, grouped
//! by allocation stack, largest first), `allocs` (allocations grouped the
//! same way) and `heap` (totals, the peak in use and when, sizes), from
//! the `heap` files of the loaded experiments (the manual's "Heap Tracing
//! Data": Allocations, Bytes Allocated, Leaks, Bytes Leaked).
//!
//! A leak is a block not freed when the program ended; in an experiment
//! still being written (at a stop of a live program), a block not freed
//! yet. Groups are by the call stack as shown (function and line of each
//! frame), so the same path in several processes is one group.

use crate::heap::HeapState;
use crate::model::Model;
use crate::resolve::{symbolize, PcSymbol};
use debugger::symbols::ObjectFile;
use experiment::heap::HeapOp;
use experiment::log::Event;
use experiment::{Experiment, HeapEventRecord, Stack};
use serde_json::{json, Value as Json};
use std::collections::HashMap;
use std::fmt::Write;
use std::path::{Path, PathBuf};

/// Which grouping a listing shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeapListing {
    Leaks,
    Allocations,
}

/// One frame of an allocation stack, as shown.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct ShownFrame {
    function: String,
    file: Option<String>,
    line: Option<u32>,
}

/// Blocks (or allocations) with the same shown stack.
struct Group {
    frames: Vec<ShownFrame>,
    count: u64,
    bytes: u64,
}

/// Every experiment's heap, replayed, with what is needed to show it.
struct LoadedHeap {
    experiments: Vec<ExperimentHeap>,
}

struct ExperimentHeap {
    state: HeapState,
    events: Vec<HeapEventRecord>,
    stacks: HashMap<u64, Stack>,
    symbols: Symbolizer,
    start_ns: u64,
}

fn load(model: &Model) -> Result<LoadedHeap, String> {
    let mut experiments = Vec::new();
    for entry in &model.experiments {
        let expt = Experiment::open(&entry.path).map_err(|e| e.to_string())?;
        if !expt.manifest().kinds.iter().any(|k| k == "heap-trace") {
            continue;
        }
        let events = expt.heap_events().map_err(|e| e.to_string())?;
        experiments.push(ExperimentHeap {
            state: HeapState::replay(&events),
            stacks: expt.stacks().map_err(|e| e.to_string())?,
            symbols: Symbolizer::new(model, &entry.log),
            events,
            start_ns: entry.start_ns,
        });
    }
    if experiments.is_empty() {
        return Err("no heap-tracing data (collect with -H on, or collector heaptrace on)".into());
    }
    Ok(LoadedHeap { experiments })
}

/// `leaks` or `allocs`: (text, JSON).
pub fn listing(
    model: &Model,
    what: HeapListing,
    limit: Option<usize>,
) -> Result<(String, Json), String> {
    let heap = load(model)?;
    let mut groups: HashMap<Vec<ShownFrame>, Group> = HashMap::new();
    for expt in &heap.experiments {
        // Summed per recorded stack first: each stack is shown (looked
        // up) once, however many events it has.
        let mut by_stack: HashMap<u64, (u64, u64)> = HashMap::new();
        let mut add = |stack_id: u64, bytes: u64| {
            let sums = by_stack.entry(stack_id).or_default();
            sums.0 += 1;
            sums.1 += bytes;
        };
        match what {
            HeapListing::Leaks => {
                for block in expt.state.blocks() {
                    add(block.stack_id, block.size);
                }
            }
            HeapListing::Allocations => {
                for record in &expt.events {
                    let e = record.event;
                    if e.op.allocates() && e.op != HeapOp::Mmap && e.address != 0 {
                        add(e.stack_id, e.size);
                    }
                }
            }
        }
        for (stack_id, (count, bytes)) in by_stack {
            let frames = expt.shown_stack(stack_id);
            let group = groups.entry(frames.clone()).or_insert(Group {
                frames,
                count: 0,
                bytes: 0,
            });
            group.count += count;
            group.bytes += bytes;
        }
    }
    let mut groups: Vec<Group> = groups.into_values().collect();
    groups.sort_by(|a, b| b.bytes.cmp(&a.bytes).then(b.count.cmp(&a.count)));
    let total_count: u64 = groups.iter().map(|g| g.count).sum();
    let total_bytes: u64 = groups.iter().map(|g| g.bytes).sum();
    let shown = limit.unwrap_or(usize::MAX).min(groups.len());
    let (noun, count_key, bytes_key, title) = match what {
        HeapListing::Leaks => ("Leak", "leaks", "bytes_leaked", "Bytes Leaked"),
        HeapListing::Allocations => (
            "Allocation",
            "allocations",
            "bytes_allocated",
            "Bytes Allocated",
        ),
    };
    let mut text = String::new();
    let _ = writeln!(
        text,
        "Summary Results: Distinct {noun}s = {}, Total Instances = {total_count}, Total {title} = {total_bytes}",
        groups.len()
    );
    let mut list = Vec::new();
    for (n, group) in groups.iter().take(shown).enumerate() {
        let _ = writeln!(
            text,
            "\n{noun} #{}, Instances = {}, {title} = {}",
            n + 1,
            group.count,
            group.bytes
        );
        for frame in &group.frames {
            let _ = writeln!(text, "    {}", frame_text(frame));
        }
        list.push(json!({
            count_key: group.count,
            bytes_key: group.bytes,
            "stack": group.frames.iter().map(frame_json).collect::<Vec<_>>(),
        }));
    }
    let doc = json!({
        "report": if what == HeapListing::Leaks { "leaks" } else { "allocs" },
        count_key: total_count,
        bytes_key: total_bytes,
        "groups": list,
    });
    Ok((text, doc))
}

/// `heap`: totals, the peak in use and when, and sizes by power of two.
pub fn statistics(model: &Model) -> Result<(String, Json), String> {
    let heap = load(model)?;
    let mut totals = Totals::default();
    let mut histogram: Vec<u64> = vec![0; 65];
    for expt in &heap.experiments {
        totals.add(expt, &mut histogram);
    }
    let mut text = String::new();
    let _ = writeln!(text, "Heap statistics");
    let _ = writeln!(text, "  Allocations:           {}", totals.allocations);
    let _ = writeln!(text, "  Bytes Allocated:       {}", totals.bytes_allocated);
    let _ = writeln!(text, "  Frees:                 {}", totals.frees);
    let _ = writeln!(
        text,
        "  Frees of blocks not traced: {}",
        totals.unknown_frees
    );
    let _ = writeln!(text, "  Leaks:                 {}", totals.leaks);
    let _ = writeln!(text, "  Bytes Leaked:          {}", totals.bytes_leaked);
    let _ = writeln!(
        text,
        "  Peak Bytes in Use:     {} (at {:.3} s)",
        totals.peak_bytes, totals.peak_seconds
    );
    let _ = writeln!(text, "\n  Size (bytes)            Allocations");
    let mut sizes = Vec::new();
    for (bucket, &count) in histogram.iter().enumerate().filter(|(_, c)| **c > 0) {
        let (from, to) = bucket_range(bucket);
        let _ = writeln!(text, "  {:>9} - {:<11} {count}", from, to);
        sizes.push(json!({"size_from": from, "size_to": to, "allocations": count}));
    }
    let doc = json!({
        "report": "heap",
        "allocations": totals.allocations,
        "bytes_allocated": totals.bytes_allocated,
        "frees": totals.frees,
        "frees_not_traced": totals.unknown_frees,
        "leaks": totals.leaks,
        "bytes_leaked": totals.bytes_leaked,
        "peak_bytes_in_use": totals.peak_bytes,
        "peak_seconds": totals.peak_seconds,
        "sizes": sizes,
    });
    Ok((text, doc))
}

#[derive(Default)]
struct Totals {
    allocations: u64,
    bytes_allocated: u64,
    frees: u64,
    unknown_frees: u64,
    leaks: u64,
    bytes_leaked: u64,
    peak_bytes: u64,
    peak_seconds: f64,
}

impl Totals {
    fn add(&mut self, expt: &ExperimentHeap, histogram: &mut [u64]) {
        self.allocations += expt.state.allocations;
        self.bytes_allocated += expt.state.bytes_allocated;
        self.frees += expt.state.frees;
        self.unknown_frees += expt.state.unknown_frees;
        self.leaks += expt.state.blocks().len() as u64;
        self.bytes_leaked += expt.state.blocks().iter().map(|b| b.size).sum::<u64>();
        let (peak, at) = peak_in_use(&expt.events);
        if peak > self.peak_bytes {
            self.peak_bytes = peak;
            self.peak_seconds = at.saturating_sub(expt.start_ns) as f64 / 1e9;
        }
        for record in &expt.events {
            let e = record.event;
            if e.op.allocates() && e.op != HeapOp::Mmap && e.address != 0 {
                let bucket = (64 - e.size.leading_zeros()) as usize;
                if let Some(slot) = histogram.get_mut(bucket) {
                    *slot += 1;
                }
            }
        }
    }
}

/// Sizes of bucket `b`: 0 for 0, else 2^(b-1) ..= 2^b - 1.
fn bucket_range(bucket: usize) -> (u64, u64) {
    match bucket {
        0 => (0, 0),
        64 => (1 << 63, u64::MAX),
        b => (1 << (b - 1), (1 << b) - 1),
    }
}

/// The most bytes of the malloc family in use at once, and when.
fn peak_in_use(events: &[HeapEventRecord]) -> (u64, u64) {
    let mut live: HashMap<u64, u64> = HashMap::new();
    let (mut in_use, mut peak, mut at) = (0u64, 0u64, 0u64);
    for record in events {
        let e = record.event;
        match e.op {
            HeapOp::Free => {
                if let Some(size) = live.remove(&e.address) {
                    in_use -= size;
                }
            }
            HeapOp::Mmap | HeapOp::Munmap => {}
            _ if e.address != 0 => {
                if let Some(old) = live.insert(e.address, e.size) {
                    in_use -= old;
                }
                in_use += e.size;
                if in_use > peak {
                    peak = in_use;
                    at = e.timestamp_ns;
                }
            }
            _ => {}
        }
    }
    (peak, at)
}

impl ExperimentHeap {
    /// The stack as shown: the program's frames (return addresses looked
    /// up at their call), ending at main.
    fn shown_stack(&self, stack_id: u64) -> Vec<ShownFrame> {
        let Some(stack) = self.stacks.get(&stack_id) else {
            return vec![ShownFrame {
                function: "<unknown stack>".into(),
                file: None,
                line: None,
            }];
        };
        let mut frames = Vec::new();
        for &pc in &stack.pcs {
            // The collector's own frames (its pthread_create, which a
            // thread's stack passes through) are not the program's.
            if self.symbols.is_collector(pc) {
                continue;
            }
            let frame = self.symbols.frame(pc.saturating_sub(1));
            let is_main = frame.function == "main";
            frames.push(frame);
            if is_main {
                break;
            }
        }
        frames
    }
}

/// PCs of one experiment to functions and lines, through its objects.
struct Symbolizer {
    /// (lo, hi, base, file to read) per object of the log.
    mappings: Vec<(u64, u64, u64, Option<PathBuf>, bool)>,
    /// Where libcollector.so is.
    collector: Vec<(u64, u64)>,
    files: std::cell::RefCell<HashMap<PathBuf, Option<ObjectFile>>>,
    /// Each PC looked up once.
    frames: std::cell::RefCell<HashMap<u64, ShownFrame>>,
}

impl Symbolizer {
    fn new(model: &Model, log: &[experiment::LogEvent]) -> Symbolizer {
        let symbols_from = |path: &Path| {
            model
                .objects
                .iter()
                .find(|o| o.path == path)
                .and_then(|o| o.symbols_from.clone())
                .or_else(|| path.is_file().then(|| path.to_path_buf()))
        };
        let mappings = log
            .iter()
            .filter_map(|e| match &e.event {
                Event::Object { path, base, lo, hi } => Some((
                    *lo,
                    *hi,
                    *base,
                    symbols_from(path),
                    path.as_os_str() == "[vdso]",
                )),
                _ => None,
            })
            .collect();
        let collector = log
            .iter()
            .filter_map(|e| match &e.event {
                Event::Object { path, lo, hi, .. }
                    if path.to_string_lossy().contains("libcollector") =>
                {
                    Some((*lo, *hi))
                }
                _ => None,
            })
            .collect();
        Symbolizer {
            mappings,
            collector,
            files: Default::default(),
            frames: Default::default(),
        }
    }

    fn is_collector(&self, pc: u64) -> bool {
        self.collector
            .iter()
            .any(|(lo, hi)| (*lo..=*hi).contains(&pc))
    }

    fn frame(&self, pc: u64) -> ShownFrame {
        if let Some(known) = self.frames.borrow().get(&pc) {
            return known.clone();
        }
        let frame = self.look_up(pc);
        self.frames.borrow_mut().insert(pc, frame.clone());
        frame
    }

    fn look_up(&self, pc: u64) -> ShownFrame {
        let unknown = || ShownFrame {
            function: format!("0x{pc:x}"),
            file: None,
            line: None,
        };
        let Some(&(_, _, base, ref path, vdso)) = self
            .mappings
            .iter()
            .find(|(lo, hi, ..)| (*lo..=*hi).contains(&pc))
        else {
            return unknown();
        };
        let Some(path) = path else { return unknown() };
        let mut files = self.files.borrow_mut();
        let file = files
            .entry(path.clone())
            .or_insert_with(|| ObjectFile::open(path).ok());
        let Some(file) = file else { return unknown() };
        match symbolize(file, pc.wrapping_sub(base), vdso) {
            PcSymbol::Function { name, line, .. } => ShownFrame {
                function: name,
                file: line.as_ref().map(|l| l.file.display().to_string()),
                line: line.map(|l| l.line),
            },
            _ => unknown(),
        }
    }
}

fn frame_text(frame: &ShownFrame) -> String {
    match (&frame.file, frame.line) {
        (Some(file), Some(line)) => format!("{}, line {line} in \"{file}\"", frame.function),
        _ => frame.function.clone(),
    }
}

fn frame_json(frame: &ShownFrame) -> Json {
    json!({
        "function": frame.function,
        "file": frame.file,
        "line": frame.line,
    })
}
