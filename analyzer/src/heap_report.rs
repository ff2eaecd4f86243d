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

use crate::model::Model;
use crate::resolve::{symbolize, PcSymbol};
use debugger::symbols::ObjectFile;
use experiment::heap::{HeapEvent, HeapOp};
use experiment::layout::StackRecordRef;
use experiment::log::Event;
use experiment::Experiment;
use rustc_hash::FxHashMap;
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

/// Which forms of a listing to make: the JSON of a million groups with
/// their stacks is tens of gigabytes of `Json` values, worth making only
/// when it is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListingForm {
    /// The text; the JSON is `Json::Null`.
    Text,
    /// The JSON; the text is empty.
    Json,
    Both,
}

/// One frame of an allocation stack, as shown.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct ShownFrame {
    function: String,
    file: Option<String>,
    line: Option<u32>,
}

/// Counts and bytes of what a listing counts.
#[derive(Debug, Clone, Copy, Default)]
struct Sums {
    count: u64,
    bytes: u64,
}

/// What one pass over an experiment's heap events found.
#[derive(Default)]
struct Replayed {
    allocations: u64,
    bytes_allocated: u64,
    frees: u64,
    unknown_frees: u64,
    leaks: u64,
    bytes_leaked: u64,
    /// The most bytes of the malloc family in use at once, and when.
    peak_bytes: u64,
    peak_ns: u64,
    /// Allocations by power-of-two size bucket.
    histogram: Vec<u64>,
    /// The listing's sums by recorded stack id.
    by_stack: FxHashMap<u64, Sums>,
}

/// What a pass over the heap events is for.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Pass {
    /// Blocks not freed, by stack.
    Leaks,
    /// Allocations by stack: no replay needed, the events come as read.
    Allocations,
    /// The `heap` totals.
    Statistics,
}

/// The blocks in use during a replay, by address: (size, stack id).
type Live = FxHashMap<u64, (u64, u64)>;

/// A replay under way: what it found so far, the blocks in use and their
/// bytes.
#[derive(Default)]
struct Replaying {
    found: Replayed,
    live: Live,
    in_use: u64,
}

impl Replaying {
    fn new() -> Replaying {
        Replaying {
            found: Replayed {
                histogram: vec![0; 65],
                ..Replayed::default()
            },
            ..Replaying::default()
        }
    }

    fn apply(&mut self, e: HeapEvent) {
        let r = &mut self.found;
        match e.op {
            // Mappings are not heap blocks; free(NULL) frees nothing.
            HeapOp::Mmap | HeapOp::Munmap => {}
            HeapOp::Free if e.address == 0 => {}
            HeapOp::Free => {
                r.frees += 1;
                match self.live.remove(&e.address) {
                    Some((size, _)) => self.in_use -= size,
                    None => r.unknown_frees += 1,
                }
            }
            _ if e.address == 0 => {}
            _ => {
                r.allocations += 1;
                r.bytes_allocated += e.size;
                let bucket = (64 - e.size.leading_zeros()) as usize;
                if let Some(slot) = r.histogram.get_mut(bucket) {
                    *slot += 1;
                }
                // A block made where one is still in use replaces it.
                if let Some((old, _)) = self.live.insert(e.address, (e.size, e.stack_id)) {
                    self.in_use -= old;
                }
                self.in_use += e.size;
                if self.in_use > r.peak_bytes {
                    r.peak_bytes = self.in_use;
                    r.peak_ns = e.timestamp_ns;
                }
            }
        }
    }
}

/// One pass over `expt`'s heap events (in order when the pass replays
/// them), holding no event: the blocks in use are all it keeps.
fn replay(expt: &Experiment, pass: Pass) -> Result<Replayed, String> {
    let mut r = Replayed {
        histogram: vec![0; 65],
        ..Replayed::default()
    };
    if pass == Pass::Allocations {
        expt.for_each_heap_event(|record| {
            let e = record.event;
            if e.op.allocates() && e.op != HeapOp::Mmap && e.address != 0 {
                let sums = r.by_stack.entry(e.stack_id).or_default();
                sums.count += 1;
                sums.bytes += e.size;
            }
        })
        .map_err(|e| e.to_string())?;
        return Ok(r);
    }
    let (replaying, _) = expt
        .heap_events_in_order(Replaying::new, |replaying, record| {
            replaying.apply(record.event)
        })
        .map_err(|e| e.to_string())?;
    let Replaying {
        found: mut r, live, ..
    } = replaying;
    r.leaks = live.len() as u64;
    r.bytes_leaked = live.values().map(|&(size, _)| size).sum();
    if pass == Pass::Leaks {
        for (size, stack_id) in live.into_values() {
            let sums = r.by_stack.entry(stack_id).or_default();
            sums.count += 1;
            sums.bytes += size;
        }
    }
    Ok(r)
}

/// The heap-tracing experiments of the model, opened.
fn heap_experiments(model: &Model) -> Result<Vec<(Experiment, usize)>, String> {
    let mut experiments = Vec::new();
    for (index, entry) in model.experiments.iter().enumerate() {
        let expt = Experiment::open(&entry.path).map_err(|e| e.to_string())?;
        if expt.manifest().kinds.iter().any(|k| k == "heap-trace") {
            experiments.push((expt, index));
        }
    }
    if experiments.is_empty() {
        return Err("no heap-tracing data (collect with -H on, or collector heaptrace on)".into());
    }
    Ok(experiments)
}

/// `leaks` or `allocs`: (text, JSON).
pub fn listing(
    model: &Model,
    what: HeapListing,
    limit: Option<usize>,
) -> Result<(String, Json), String> {
    listing_as(model, what, limit, ListingForm::Both)
}

/// `leaks` or `allocs` in the forms asked for: (text, JSON).
pub fn listing_as(
    model: &Model,
    what: HeapListing,
    limit: Option<usize>,
    form: ListingForm,
) -> Result<(String, Json), String> {
    let grouped = Grouped::of(model, what, limit)?;
    let mut text = String::new();
    if form != ListingForm::Json {
        // Sized first: the text of a million groups is gigabytes, better
        // not copied as it grows.
        text.reserve(grouped.text_len());
        grouped
            .write_text(&mut |piece| {
                text.push_str(piece);
                Ok(())
            })
            .map_err(|e| e.to_string())?;
    }
    let doc = match form {
        ListingForm::Text => Json::Null,
        ListingForm::Json | ListingForm::Both => grouped.json(),
    };
    Ok((text, doc))
}

/// A listing's text written as it is made (`rdbx analyze`): the whole
/// `leaks` or `allocs` of a million stacks is gigabytes of text.
pub fn listing_stream(
    model: &Model,
    what: HeapListing,
    limit: Option<usize>,
) -> Result<crate::report::TextStream, String> {
    let grouped = Grouped::of(model, what, limit)?;
    Ok(Box::new(move |out| {
        grouped.write_text(&mut |piece| out.write_all(piece.as_bytes()))
    }))
}

/// Leaks or allocations grouped by their stack as shown, largest first.
struct Grouped {
    what: HeapListing,
    shown: ShownStacks,
    groups: Vec<(u32, Sums)>,
    /// How many groups are listed (`limit`).
    listed: usize,
    total_count: u64,
    total_bytes: u64,
}

impl Grouped {
    fn of(model: &Model, what: HeapListing, limit: Option<usize>) -> Result<Grouped, String> {
        let pass = match what {
            HeapListing::Leaks => Pass::Leaks,
            HeapListing::Allocations => Pass::Allocations,
        };
        let mut shown = ShownStacks::default();
        // Groups by their shown stack's node, in order of first use.
        let mut group_of: FxHashMap<u32, usize> = FxHashMap::default();
        let mut groups: Vec<(u32, Sums)> = Vec::new();
        for (expt, index) in heap_experiments(model)? {
            let replayed = replay(&expt, pass)?;
            let symbols = Symbolizer::new(model, &model.experiments[index].log);
            let nodes = shown.of_experiment(&expt, &symbols, &replayed.by_stack)?;
            for (stack_id, sums) in &replayed.by_stack {
                let node = nodes
                    .get(stack_id)
                    .copied()
                    .unwrap_or_else(|| shown.unknown());
                let group = *group_of.entry(node).or_insert_with(|| {
                    groups.push((node, Sums::default()));
                    groups.len() - 1
                });
                groups[group].1.count += sums.count;
                groups[group].1.bytes += sums.bytes;
            }
        }
        // Largest first; equal ones in the order of their stacks in the files.
        groups.sort_unstable_by(|(a_node, a), (b_node, b)| {
            b.bytes
                .cmp(&a.bytes)
                .then(b.count.cmp(&a.count))
                .then(a_node.cmp(b_node))
        });
        let total_count: u64 = groups.iter().map(|(_, g)| g.count).sum();
        let total_bytes: u64 = groups.iter().map(|(_, g)| g.bytes).sum();
        let listed = limit.unwrap_or(usize::MAX).min(groups.len());
        Ok(Grouped {
            what,
            shown,
            groups,
            listed,
            total_count,
            total_bytes,
        })
    }

    /// (noun, count key, bytes key, bytes title).
    fn words(&self) -> (&'static str, &'static str, &'static str, &'static str) {
        match self.what {
            HeapListing::Leaks => ("Leak", "leaks", "bytes_leaked", "Bytes Leaked"),
            HeapListing::Allocations => (
                "Allocation",
                "allocations",
                "bytes_allocated",
                "Bytes Allocated",
            ),
        }
    }

    fn listed(&self) -> &[(u32, Sums)] {
        &self.groups[..self.listed]
    }

    /// About how long the text is.
    fn text_len(&self) -> usize {
        let frames: usize = self
            .listed()
            .iter()
            .map(|&(node, _)| self.shown.text_len(node))
            .sum();
        frames + 100 * (self.listed + 1)
    }

    /// The text, a group at a time, each piece given to `emit`.
    fn write_text(&self, emit: &mut dyn FnMut(&str) -> std::io::Result<()>) -> std::io::Result<()> {
        let (noun, _, _, title) = self.words();
        let mut piece = format!(
            "Summary Results: Distinct {noun}s = {}, Total Instances = {}, Total {title} = {}\n",
            self.groups.len(),
            self.total_count,
            self.total_bytes
        );
        for (n, (node, group)) in self.listed().iter().enumerate() {
            let _ = writeln!(
                piece,
                "\n{noun} #{}, Instances = {}, {title} = {}",
                n + 1,
                group.count,
                group.bytes
            );
            self.shown.write_text(*node, &mut piece);
            if piece.len() >= 64 * 1024 {
                emit(&piece)?;
                piece.clear();
            }
        }
        emit(&piece)
    }

    fn json(&self) -> Json {
        let (_, count_key, bytes_key, _) = self.words();
        let list: Vec<Json> = self
            .listed()
            .iter()
            .map(|(node, group)| {
                json!({
                    count_key: group.count,
                    bytes_key: group.bytes,
                    "stack": self.shown.json(*node),
                })
            })
            .collect();
        json!({
            "report": if self.what == HeapListing::Leaks { "leaks" } else { "allocs" },
            count_key: self.total_count,
            bytes_key: self.total_bytes,
            "groups": list,
        })
    }
}

/// `heap`: totals, the peak in use and when, and sizes by power of two.
pub fn statistics(model: &Model) -> Result<(String, Json), String> {
    let mut totals = Totals::default();
    let mut histogram: Vec<u64> = vec![0; 65];
    for (expt, index) in heap_experiments(model)? {
        let r = replay(&expt, Pass::Statistics)?;
        totals.allocations += r.allocations;
        totals.bytes_allocated += r.bytes_allocated;
        totals.frees += r.frees;
        totals.unknown_frees += r.unknown_frees;
        totals.leaks += r.leaks;
        totals.bytes_leaked += r.bytes_leaked;
        if r.peak_bytes > totals.peak_bytes {
            totals.peak_bytes = r.peak_bytes;
            let start_ns = model.experiments[index].start_ns;
            totals.peak_seconds = r.peak_ns.saturating_sub(start_ns) as f64 / 1e9;
        }
        for (sum, count) in histogram.iter_mut().zip(&r.histogram) {
            *sum += count;
        }
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

/// Sizes of bucket `b`: 0 for 0, else 2^(b-1) ..= 2^b - 1.
fn bucket_range(bucket: usize) -> (u64, u64) {
    match bucket {
        0 => (0, 0),
        64 => (1 << 63, u64::MAX),
        b => (1 << (b - 1), (1 << b) - 1),
    }
}

/// The shown stacks of every experiment, as a tree of shown frames from
/// `main` (or the outermost frame) down: a stack as shown is a node, the
/// frames from it up to the root, so stacks that show the same are one
/// node (one group) and the frames they share are stored once. Neighbouring
/// stack records share most of their outer frames: those are not looked at
/// again.
struct ShownStacks {
    /// Distinct frames, and per frame its text line and whether it is main.
    frames: Vec<ShownFrame>,
    frame_ids: HashMap<ShownFrame, u32>,
    frame_lines: Vec<String>,
    is_main: Vec<bool>,
    /// Per node: its parent and its frame (the root's are unused).
    parent: Vec<u32>,
    frame: Vec<u32>,
    /// Per node: the length of its frames' text.
    text_len: Vec<usize>,
    children: FxHashMap<(u32, u32), u32>,
}

/// The empty stack: the tree's root.
const ROOT: u32 = 0;
/// A PC of the collector's own code: not shown.
const HIDDEN: u32 = u32::MAX;

impl Default for ShownStacks {
    fn default() -> ShownStacks {
        ShownStacks {
            frames: Vec::new(),
            frame_ids: HashMap::new(),
            frame_lines: Vec::new(),
            is_main: Vec::new(),
            parent: vec![ROOT],
            frame: vec![HIDDEN],
            text_len: vec![0],
            children: FxHashMap::default(),
        }
    }
}

impl ShownStacks {
    fn frame_id(&mut self, frame: ShownFrame) -> u32 {
        if let Some(&id) = self.frame_ids.get(&frame) {
            return id;
        }
        let id = self.frames.len() as u32;
        self.frame_lines
            .push(format!("    {}\n", frame_text(&frame)));
        self.is_main.push(frame.function == "main");
        self.frame_ids.insert(frame.clone(), id);
        self.frames.push(frame);
        id
    }

    fn child(&mut self, parent: u32, frame: u32) -> u32 {
        if let Some(&node) = self.children.get(&(parent, frame)) {
            return node;
        }
        let node = self.parent.len() as u32;
        self.parent.push(parent);
        self.frame.push(frame);
        let len = self.text_len[parent as usize] + self.frame_lines[frame as usize].len();
        self.text_len.push(len);
        self.children.insert((parent, frame), node);
        node
    }

    /// The node below `node` for one more frame toward the leaf. The stack
    /// shown ends at its innermost `main`: a `main` starts it afresh.
    fn step(&mut self, node: u32, frame: u32) -> u32 {
        match frame {
            HIDDEN => node,
            f if self.is_main[f as usize] => self.child(ROOT, f),
            f => self.child(node, f),
        }
    }

    /// The node of a stack whose record was not written.
    fn unknown(&mut self) -> u32 {
        let frame = self.frame_id(ShownFrame {
            function: "<unknown stack>".into(),
            file: None,
            line: None,
        });
        self.child(ROOT, frame)
    }

    /// The nodes of the stacks of `expt` named in `wanted`, read from its
    /// `stacks` file record by record (the first record of an id counts).
    fn of_experiment(
        &mut self,
        expt: &Experiment,
        symbols: &Symbolizer,
        wanted: &FxHashMap<u64, Sums>,
    ) -> Result<FxHashMap<u64, u32>, String> {
        let mut nodes: FxHashMap<u64, u32> = FxHashMap::default();
        nodes.reserve(wanted.len());
        // Each recorded PC's frame, looked up once.
        let mut frame_of: FxHashMap<u64, u32> = FxHashMap::default();
        // The record walked last: its PCs leaf first, and the node after
        // each of them from the root.
        let mut previous: Vec<u64> = Vec::new();
        let mut path: Vec<u32> = Vec::new();
        let mut pcs: Vec<u64> = Vec::new();
        crate::stack_file::for_each_stack_block(expt, |records: &[StackRecordRef<'_>]| {
            for record in records {
                let id = record.header.stack_id;
                if !wanted.contains_key(&id) || nodes.contains_key(&id) {
                    continue;
                }
                pcs.clear();
                pcs.extend(record.pcs());
                let shared = pcs
                    .iter()
                    .rev()
                    .zip(previous.iter().rev())
                    .take_while(|(a, b)| a == b)
                    .count();
                path.truncate(shared);
                let mut node = path.last().copied().unwrap_or(ROOT);
                for &pc in pcs[..pcs.len() - shared].iter().rev() {
                    let frame = *frame_of
                        .entry(pc)
                        .or_insert_with(|| self.frame_of_pc(symbols, pc));
                    node = self.step(node, frame);
                    path.push(node);
                }
                nodes.insert(id, node);
                std::mem::swap(&mut pcs, &mut previous);
            }
        })
        .map_err(|e| e.to_string())?;
        Ok(nodes)
    }

    /// The frame a recorded PC shows as (a return address looked up at its
    /// call), or HIDDEN for the collector's own frames (its
    /// pthread_create, which a thread's stack passes through).
    fn frame_of_pc(&mut self, symbols: &Symbolizer, pc: u64) -> u32 {
        if symbols.is_collector(pc) {
            return HIDDEN;
        }
        self.frame_id(symbols.look_up(pc.saturating_sub(1)))
    }

    /// Length of `node`'s frames' text.
    fn text_len(&self, node: u32) -> usize {
        self.text_len[node as usize]
    }

    /// Appends `node`'s frames to `text`, leaf first.
    fn write_text(&self, mut node: u32, text: &mut String) {
        while node != ROOT {
            text.push_str(&self.frame_lines[self.frame[node as usize] as usize]);
            node = self.parent[node as usize];
        }
    }

    fn json(&self, mut node: u32) -> Json {
        let mut list = Vec::new();
        while node != ROOT {
            list.push(frame_json(&self.frames[self.frame[node as usize] as usize]));
            node = self.parent[node as usize];
        }
        Json::Array(list)
    }
}

/// PCs of one experiment to functions and lines, through its objects.
struct Symbolizer {
    /// (lo, hi, base, file to read) per object of the log.
    mappings: Vec<(u64, u64, u64, Option<PathBuf>, bool)>,
    /// Where libcollector.so is.
    collector: Vec<(u64, u64)>,
    files: std::cell::RefCell<HashMap<PathBuf, Option<ObjectFile>>>,
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
        }
    }

    fn is_collector(&self, pc: u64) -> bool {
        self.collector
            .iter()
            .any(|(lo, hi)| (*lo..=*hi).contains(&pc))
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
