//! er_print's heap-tracing listings: `leaks` (blocks never freed, grouped
//! by allocation stack, largest first), `allocs` (allocations grouped the
//! same way) and `heap` (totals, the peak in use and when, sizes), from
//! the heap data the loader put in the model (the manual's "Heap Tracing
//! Data": Allocations, Bytes Allocated, Leaks, Bytes Leaked): its
//! allocations with their leak flags and stacks, and what its replay of
//! the frees found. No file is read again.
//!
//! A leak is a block not freed when the program ended; in an experiment
//! still being written (at a stop of a live program), a block not freed
//! yet. Groups are by the call stack as shown (function and line of each
//! frame), so the same path in several processes is one group.

use crate::model::{
    FunctionKind, HeapEntry, HeapReplay, Model, ObjectId, PathWalk, PcId, NO_STACK,
};
use crate::resolve::{symbolize, PcSymbol};
use crate::u64_table::Children;
use debugger::symbols::ObjectFile;
use serde_json::{json, Value as Json};
use std::collections::HashMap;
use std::fmt::Write;

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

impl Sums {
    fn add(&mut self, bytes: u64) {
        self.count += 1;
        self.bytes += bytes;
    }
}

/// The replays of the experiments that traced the heap.
fn heap_replays(model: &Model) -> Result<&[HeapReplay], String> {
    if model.heap_replays.is_empty() {
        return Err("no heap-tracing data (collect with -H on, or collector heaptrace on)".into());
    }
    Ok(&model.heap_replays)
}

/// What a listing counts, summed by model stack, and by experiment for the
/// allocations whose stack record was lost.
struct StackSums {
    by_stack: Vec<Sums>,
    /// Per model stack counted: its experiment.
    experiment: Vec<u16>,
    lost: Vec<Sums>,
}

impl StackSums {
    fn of(model: &Model, what: HeapListing) -> StackSums {
        let mut sums = StackSums {
            by_stack: vec![Sums::default(); model.stacks.len()],
            experiment: vec![0; model.stacks.len()],
            lost: vec![Sums::default(); model.experiments.len()],
        };
        let counted = |e: &HeapEntry| what == HeapListing::Allocations || e.leaked;
        for (i, entry) in model.heap.iter().enumerate() {
            // A later allocation's stack is fetched while one is added.
            if let Some(ahead) = model.heap.get(i + crate::metrics::PREFETCH_AHEAD) {
                sums.by_stack
                    .get(ahead.stack as usize)
                    .map(crate::memory::prefetch_one);
            }
            if !counted(entry) {
                continue;
            }
            let slot = match entry.stack {
                NO_STACK => sums.lost.get_mut(usize::from(entry.experiment)),
                stack => {
                    if let Some(experiment) = sums.experiment.get_mut(stack as usize) {
                        *experiment = entry.experiment;
                    }
                    sums.by_stack.get_mut(stack as usize)
                }
            };
            if let Some(slot) = slot {
                slot.add(entry.bytes);
            }
        }
        sums
    }
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

/// A node that is no group's (yet).
const NO_GROUP: u32 = u32::MAX;

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
        heap_replays(model)?;
        let sums = StackSums::of(model, what);
        let mut shown = ShownStacks::default();
        // Groups by their shown stack's node, in order of first use.
        let mut group_of: Vec<u32> = Vec::new();
        let mut groups: Vec<(u32, Sums)> = Vec::new();
        shown.of_model(model, &sums, |node, sums| {
            if group_of.len() <= node as usize {
                group_of.resize(node as usize + 1, NO_GROUP);
            }
            let group = match group_of[node as usize] {
                NO_GROUP => {
                    group_of[node as usize] = groups.len() as u32;
                    groups.push((node, Sums::default()));
                    groups.len() - 1
                }
                group => group as usize,
            };
            groups[group].1.count += sums.count;
            groups[group].1.bytes += sums.bytes;
        });
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
    for entry in &model.heap {
        totals.allocations += 1;
        totals.bytes_allocated += entry.bytes;
        if entry.leaked {
            totals.leaks += 1;
            totals.bytes_leaked += entry.bytes;
        }
        histogram[(64 - entry.bytes.leading_zeros()) as usize] += 1;
    }
    for replay in heap_replays(model)? {
        totals.frees += replay.frees;
        totals.unknown_frees += replay.unknown_frees;
        if replay.peak_bytes > totals.peak_bytes {
            totals.peak_bytes = replay.peak_bytes;
            let start_ns = model.experiments[usize::from(replay.experiment)].start_ns;
            totals.peak_seconds = replay.peak_at_ns.saturating_sub(start_ns) as f64 / 1e9;
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
    /// Nodes by parent and frame.
    children: Children,
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
            children: Children::default(),
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
        let frames = &self.frame;
        if let Some(node) = self.children.get(parent, frame, |n| frames[n as usize]) {
            return node;
        }
        let node = self.parent.len() as u32;
        self.parent.push(parent);
        self.frame.push(frame);
        let len = self.text_len[parent as usize] + self.frame_lines[frame as usize].len();
        self.text_len.push(len);
        self.children.insert(parent, frame, node);
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

    /// Calls `each` with the node and the sums of every model stack
    /// `sums` counts something for, walking the stacks in the order of
    /// their records in the `stacks` files, experiment by experiment, an
    /// experiment's lost stacks after its others: nodes are numbered in
    /// that order, which breaks ties between groups. The outer frames a
    /// stack shares with the one walked before are not looked at again.
    fn of_model(&mut self, model: &Model, sums: &StackSums, mut each: impl FnMut(u32, Sums)) {
        let mut frames = ModelFrames::new(model);
        let mut walk = PathWalk::new(&model.stacks);
        // Per frame of the path walked last, from the outermost: its PC
        // and the node after it shown as a caller.
        let mut path: Vec<(PcId, u32)> = Vec::new();
        let mut lost_placed = 0;
        let mut place_lost =
            |shown: &mut ShownStacks, until: usize, each: &mut dyn FnMut(u32, Sums)| {
                for lost in sums.lost.get(lost_placed..until).unwrap_or(&[]) {
                    if lost.count > 0 {
                        each(shown.unknown(), *lost);
                    }
                }
                lost_placed = lost_placed.max(until);
            };
        let order = model.stacks.ids_in_walk_order();
        for (i, &id) in order.iter().enumerate() {
            // Walk order is not id order: a later stack's sums are fetched
            // while this one is walked.
            if let Some(&ahead) = order.get(i + crate::metrics::PREFETCH_AHEAD) {
                sums.by_stack
                    .get(ahead as usize)
                    .map(crate::memory::prefetch_one);
                sums.experiment
                    .get(ahead as usize)
                    .map(crate::memory::prefetch_one);
            }
            let stack_sums = sums.by_stack[id as usize];
            if stack_sums.count == 0 {
                continue;
            }
            place_lost(self, usize::from(sums.experiment[id as usize]), &mut each);
            let Some(step) = walk.step(id) else {
                continue;
            };
            path.truncate(step.kept);
            // A frame's node as a caller is made once a frame is below it:
            // a stack's innermost frame shows as a leaf instead.
            for &pc in step.added {
                self.settle(&mut frames, &mut path);
                path.push((pc, UNSET));
            }
            let node = match path.split_last() {
                Some((&(pc, _), outer)) => {
                    let above = self.node_above(&mut frames, outer, pc);
                    let frame = frames.leaf(self, pc);
                    self.step(above, frame)
                }
                None => ROOT,
            };
            each(node, stack_sums);
        }
        place_lost(self, sums.lost.len(), &mut each);
    }

    /// Makes the node of the innermost frame of `path` as a caller, if it
    /// is not made yet.
    fn settle(&mut self, frames: &mut ModelFrames, path: &mut [(PcId, u32)]) {
        let Some((&mut (pc, ref mut node), outer)) = path.split_last_mut() else {
            return;
        };
        if *node == UNSET {
            let above = self.node_above(frames, outer, pc);
            let frame = frames.caller(self, pc);
            *node = self.step(above, frame);
        }
    }

    /// The node of the frames above a frame of PC `pc` whose callers are
    /// `outer` (from the outermost): their caller's node, but below a
    /// signal trampoline, the interrupted frame shows as a leaf.
    fn node_above(&mut self, frames: &mut ModelFrames, outer: &[(PcId, u32)], pc: PcId) -> u32 {
        let node_of = |level: Option<&(PcId, u32)>| level.map_or(ROOT, |&(_, node)| node);
        match outer.split_last() {
            Some((&(interrupted, _), further)) if frames.is_trampoline(pc) => {
                let frame = frames.leaf(self, interrupted);
                self.step(node_of(further.last()), frame)
            }
            _ => node_of(outer.last()),
        }
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

/// The frames the model's PCs show as, each worked out once. A caller's
/// PC is shown as the loader symbolized it (a return address, looked up
/// at its call); a leaf's PC, the return address into the code that
/// called the allocator, which the loader looked up as it is (as an
/// interrupted PC), is looked up again at its call; so is the PC below a
/// signal trampoline, which the loader looked up as it is too.
struct ModelFrames<'a> {
    model: &'a Model,
    /// Per PC: its frame as a caller, as a leaf (or `UNSET`).
    caller: Vec<u32>,
    leaf: Vec<u32>,
    /// Per PC: in `__restore_rt`.
    trampoline: Vec<bool>,
    /// Opened symbol files, by object (None: unreadable).
    files: HashMap<ObjectId, Option<ObjectFile>>,
}

/// A frame not worked out yet.
const UNSET: u32 = u32::MAX - 1;

impl<'a> ModelFrames<'a> {
    fn new(model: &'a Model) -> ModelFrames<'a> {
        let trampoline = model
            .pcs
            .iter()
            .map(|pc| model.function(pc.function).name == "__restore_rt")
            .collect();
        ModelFrames {
            model,
            caller: vec![UNSET; model.pcs.len()],
            leaf: vec![UNSET; model.pcs.len()],
            trampoline,
            files: HashMap::new(),
        }
    }

    fn is_trampoline(&self, pc: PcId) -> bool {
        self.trampoline.get(pc as usize).copied().unwrap_or(false)
    }

    /// The frame PC `pc` shows as a caller.
    fn caller(&mut self, shown: &mut ShownStacks, pc: PcId) -> u32 {
        self.frame(shown, pc, false)
    }

    /// The frame PC `pc` shows as the leaf (or below a signal trampoline).
    fn leaf(&mut self, shown: &mut ShownStacks, pc: PcId) -> u32 {
        self.frame(shown, pc, true)
    }

    fn frame(&mut self, shown: &mut ShownStacks, pc: PcId, as_leaf: bool) -> u32 {
        let known = match as_leaf {
            true => self.leaf.get(pc as usize),
            false => self.caller.get(pc as usize),
        };
        if let Some(&frame) = known.filter(|&&f| f != UNSET) {
            return frame;
        }
        let frame = self.work_out(shown, pc, as_leaf);
        let memo = match as_leaf {
            true => &mut self.leaf,
            false => &mut self.caller,
        };
        if let Some(slot) = memo.get_mut(pc as usize) {
            *slot = frame;
        }
        frame
    }

    /// The frame of `pc`, or HIDDEN for the collector's own frames (its
    /// pthread_create, which a thread's stack passes through).
    fn work_out(&mut self, shown: &mut ShownStacks, pc: PcId, as_leaf: bool) -> u32 {
        let model = self.model;
        let entry = model.pc(pc);
        let object = entry.object.map(|o| model.object(o));
        if object.is_some_and(|o| o.is_collector()) {
            return HIDDEN;
        }
        let frame = match (as_leaf, entry.object) {
            (true, Some(object)) => self.look_up(object, entry.address, entry.offset),
            (true, None) => unknown_frame(entry.address.saturating_sub(1)),
            (false, _) => {
                let function = model.function(entry.function);
                let line = entry.line.map(|l| model.line(l));
                match function.kind {
                    FunctionKind::Normal => ShownFrame {
                        function: function.name.clone(),
                        file: line.map(|l| l.file.display().to_string()),
                        line: line.map(|l| l.line),
                    },
                    _ => unknown_frame(entry.address),
                }
            }
        };
        shown.frame_id(frame)
    }

    /// The frame of the call before return address `address` (at `offset`
    /// in `object`).
    fn look_up(&mut self, object: ObjectId, address: u64, offset: u64) -> ShownFrame {
        let model = self.model;
        let entry = model.object(object);
        let file = self.files.entry(object).or_insert_with(|| {
            let path = entry
                .symbols_from
                .clone()
                .or_else(|| entry.path.is_file().then(|| entry.path.clone()))?;
            ObjectFile::open(&path).ok()
        });
        let vdso = entry.path.as_os_str() == "[vdso]";
        match file
            .as_ref()
            .map(|f| symbolize(f, offset.wrapping_sub(1), vdso))
        {
            Some(PcSymbol::Function { name, line, .. }) => ShownFrame {
                function: name,
                file: line.as_ref().map(|l| l.file.display().to_string()),
                line: line.map(|l| l.line),
            },
            _ => unknown_frame(address.saturating_sub(1)),
        }
    }
}

/// A frame no function is known for: its address.
fn unknown_frame(address: u64) -> ShownFrame {
    ShownFrame {
        function: format!("0x{address:x}"),
        file: None,
        line: None,
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
