//! Metrics from a [`Model`]: exclusive, inclusive and attributed values
//! (the manual's "How Metrics Are Assigned to Program Structure") for functions, load objects, lines and PCs, and the call tree.
//!
//! Events are first summed per distinct stack (`Weights`), then each stack
//! is walked once with its total: the cost is the frames of the distinct
//! stacks (not of the events), each frame a constant-time step — array
//! reads, a generation stamp for "once per stack", at most one hash.

use crate::model::*;
use commands::MetricName;
use experiment::io::IoClass;
use rustc_hash::FxHashMap;
use std::collections::{HashMap, HashSet};
use std::hash::Hash;
use std::sync::Arc;

/// The metric values of one item (or stack, or call edge): each data kind
/// its own fields, summed together in one pass.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Value {
    /// Clock profiling: CPU time.
    pub ns: u64,
    /// Clock profiling: the events behind `ns`.
    pub events: u64,
    /// Sync-wait tracing: wall time in the traced waits.
    pub sync_wait_ns: u64,
    /// Sync-wait tracing: the traced waits.
    pub sync_waits: u64,
    /// Heap tracing: allocations made.
    pub allocations: u64,
    pub bytes_allocated: u64,
    /// Heap tracing: allocations never freed.
    pub leaks: u64,
    pub bytes_leaked: u64,
    /// I/O tracing: wall time in the traced calls.
    pub io_ns: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    /// I/O tracing: read, write and other calls.
    pub reads: u64,
    pub writes: u64,
    pub other_io: u64,
    /// Off-CPU profiling: time off the CPU, and the switches behind it.
    pub offcpu_ns: u64,
    pub switches: u64,
}

impl Value {
    pub(crate) fn add(&mut self, other: Value) {
        self.ns += other.ns;
        self.events += other.events;
        self.sync_wait_ns += other.sync_wait_ns;
        self.sync_waits += other.sync_waits;
        self.allocations += other.allocations;
        self.bytes_allocated += other.bytes_allocated;
        self.leaks += other.leaks;
        self.bytes_leaked += other.bytes_leaked;
        self.io_ns += other.io_ns;
        self.read_bytes += other.read_bytes;
        self.write_bytes += other.write_bytes;
        self.reads += other.reads;
        self.writes += other.writes;
        self.other_io += other.other_io;
        self.offcpu_ns += other.offcpu_ns;
        self.switches += other.switches;
    }

    pub fn seconds(&self) -> f64 {
        self.ns as f64 / 1e9
    }

    /// Nothing recorded: no event of any kind.
    pub fn is_empty(&self) -> bool {
        self.events == 0
            && self.allocations == 0
            && self.sync_waits == 0
            && self.io_calls() == 0
            && self.switches == 0
    }

    /// Traced I/O calls of every class.
    pub fn io_calls(&self) -> u64 {
        self.reads + self.writes + self.other_io
    }

    /// The number `metric` shows (nanoseconds for CPU time); 0 for a
    /// metric that is not computed from events.
    pub fn get(&self, metric: MetricName) -> u64 {
        match metric {
            MetricName::TotalCpu => self.ns,
            MetricName::SyncWaitTime => self.sync_wait_ns,
            MetricName::SyncWaitCount => self.sync_waits,
            MetricName::Allocations => self.allocations,
            MetricName::BytesAllocated => self.bytes_allocated,
            MetricName::Leaks => self.leaks,
            MetricName::BytesLeaked => self.bytes_leaked,
            MetricName::IoTime => self.io_ns,
            MetricName::ReadBytes => self.read_bytes,
            MetricName::WriteBytes => self.write_bytes,
            MetricName::ReadCount => self.reads,
            MetricName::WriteCount => self.writes,
            MetricName::OtherIoCount => self.other_io,
            MetricName::OffCpuTime => self.offcpu_ns,
            MetricName::WallTime => self.ns + self.offcpu_ns,
            MetricName::Name | MetricName::Size | MetricName::Address => 0,
        }
    }

    /// The events behind `metric`'s number (`+` in a metric spec).
    pub fn count(&self, metric: MetricName) -> u64 {
        match metric {
            MetricName::Allocations | MetricName::BytesAllocated => self.allocations,
            MetricName::Leaks | MetricName::BytesLeaked => self.leaks,
            MetricName::SyncWaitTime | MetricName::SyncWaitCount => self.sync_waits,
            MetricName::ReadBytes | MetricName::ReadCount => self.reads,
            MetricName::WriteBytes | MetricName::WriteCount => self.writes,
            MetricName::OtherIoCount => self.other_io,
            MetricName::IoTime => self.io_calls(),
            MetricName::OffCpuTime => self.switches,
            MetricName::WallTime => self.events + self.switches,
            _ => self.events,
        }
    }

    /// A clock event's value.
    fn of_event(event: &EventEntry) -> Value {
        Value {
            ns: u64::from(event.weight_ns),
            events: 1,
            ..Value::default()
        }
    }

    /// A traced wait's value.
    fn of_wait(entry: &SyncEntry) -> Value {
        Value {
            sync_wait_ns: entry.wait_ns,
            sync_waits: 1,
            ..Value::default()
        }
    }

    /// A traced I/O call's value.
    pub(crate) fn of_io(entry: &IoEntry) -> Value {
        let mut value = Value {
            io_ns: entry.time_ns,
            ..Value::default()
        };
        match entry.op.class() {
            IoClass::Read => {
                value.reads = 1;
                value.read_bytes = entry.bytes;
            }
            IoClass::Write => {
                value.writes = 1;
                value.write_bytes = entry.bytes;
            }
            IoClass::Other => value.other_io = 1,
        }
        value
    }

    /// A switch off the CPU's value.
    fn of_offcpu(entry: &OffCpuEntry) -> Value {
        Value {
            offcpu_ns: entry.off_ns,
            switches: 1,
            ..Value::default()
        }
    }

    /// An allocation's value.
    fn of_allocation(entry: &HeapEntry) -> Value {
        let leaked = u64::from(entry.leaked);
        Value {
            allocations: 1,
            bytes_allocated: entry.bytes,
            leaks: leaked,
            bytes_leaked: leaked * entry.bytes,
            ..Value::default()
        }
    }
}

/// Exclusive and inclusive values of one item.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct ExclInclValue {
    pub exclusive: Value,
    pub inclusive: Value,
}

/// How stacks are shown: inlined functions as their own frames or not,
/// and which load objects are folded into one `<lib>` entry.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ViewSettings {
    pub inlines: bool,
    pub hidden_objects: HashSet<ObjectId>,
}

/// One frame as shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frame {
    pub function: FunctionId,
    pub line: Option<LineId>,
    pub pc: Option<PcId>,
}

impl Frame {
    fn special(function: FunctionId) -> Frame {
        Frame {
            function,
            line: None,
            pc: None,
        }
    }
}

/// Index of a frame in its [`View`].
pub type FrameId = u32;

/// Every distinct stack of a model as shown under some settings.
///
/// Frames are not stored per stack (a million stacks 200 deep would be
/// 200 million of them): each PC's frames are worked out once (its
/// inlined functions, or its hidden object's pseudo-function) and a
/// stack's frames are made from its PCs when asked, into a buffer the
/// caller reuses.
#[derive(Debug, Clone)]
pub struct View {
    stacks: Arc<StackTable>,
    /// Every frame a stack can show: each PC's, then the special ones.
    frames: Vec<Frame>,
    /// PC p shows frames `pc_frames[p]..pc_frames[p + 1]`.
    pc_frames: Vec<FrameId>,
    /// Per PC: in a hidden object, so it folds into the frame before it
    /// when that one is of the same object (one call of the object).
    folds: Vec<bool>,
    /// Every PC shows one frame, its own id, and none folds (no inlines
    /// shown, no object hidden): a stack's frames are its PCs.
    one_frame_per_pc: bool,
    /// Stack ids in the order aggregation walks them (see
    /// [`StackTable::ids_in_arena_order`]).
    walk_order: Vec<StackId>,
    unknown: FrameId,
    truncated: FrameId,
}

impl View {
    pub fn new(model: &Model, settings: &ViewSettings) -> View {
        let mut frames = Vec::with_capacity(model.pcs.len() + 2);
        let mut pc_frames = Vec::with_capacity(model.pcs.len() + 1);
        let mut folds = Vec::with_capacity(model.pcs.len());
        for (id, pc) in model.pcs.iter().enumerate() {
            pc_frames.push(frames.len() as FrameId);
            let pc_id = Some(id as PcId);
            let hidden = pc
                .object
                .filter(|o| settings.hidden_objects.contains(o))
                .map(|o| model.object(o).hidden_function);
            folds.push(hidden.is_some());
            if let Some(function) = hidden {
                frames.push(Frame {
                    function,
                    line: None,
                    pc: pc_id,
                });
                continue;
            }
            if settings.inlines {
                frames.extend(pc.inlined.iter().map(|step| Frame {
                    function: step.function,
                    line: step.line,
                    pc: pc_id,
                }));
            }
            frames.push(Frame {
                function: pc.function,
                line: pc.line,
                pc: pc_id,
            });
        }
        pc_frames.push(frames.len() as FrameId);
        let one_frame_per_pc = frames.len() == model.pcs.len() && !folds.contains(&true);
        let unknown = frames.len() as FrameId;
        frames.push(Frame::special(UNKNOWN));
        let truncated = frames.len() as FrameId;
        frames.push(Frame::special(TRUNCATED));
        View {
            stacks: Arc::clone(&model.stacks),
            frames,
            pc_frames,
            folds,
            one_frame_per_pc,
            walk_order: model.stacks.ids_in_arena_order(),
            unknown,
            truncated,
        }
    }

    pub fn frame(&self, id: FrameId) -> Frame {
        self.frames
            .get(id as usize)
            .copied()
            .unwrap_or(Frame::special(UNKNOWN))
    }

    /// Every frame any stack can show, by id.
    pub fn all_frames(&self) -> &[Frame] {
        &self.frames
    }

    /// The frames of `stack`, leaf first, into `out` (cleared first). A
    /// lost stack (`NO_STACK`) is `<Unknown>`.
    pub fn stack_frames(&self, stack: StackId, out: &mut Vec<FrameId>) {
        let mut buffer = Vec::new();
        let frames = self.frames_of(stack, &mut buffer);
        out.clear();
        out.extend_from_slice(frames);
    }

    /// The frames of `stack`, leaf first: its PCs themselves when they
    /// are its frames (no copy), else made in `buffer`.
    pub fn frames_of<'a>(&'a self, stack: StackId, buffer: &'a mut Vec<FrameId>) -> &'a [FrameId] {
        let complete = self
            .stacks
            .get(stack)
            .filter(|s| s.status == experiment::layout::StackStatus::Complete);
        match complete {
            Some(s) if self.one_frame_per_pc && !s.pcs.is_empty() => s.pcs,
            _ => {
                self.make_frames(stack, buffer);
                buffer
            }
        }
    }

    fn make_frames(&self, stack: StackId, out: &mut Vec<FrameId>) {
        out.clear();
        let Some(stack) = self.stacks.get(stack) else {
            out.push(self.unknown);
            return;
        };
        if self.one_frame_per_pc {
            out.extend_from_slice(stack.pcs);
        } else {
            self.expand_pcs(stack.pcs, out);
        }
        if stack.status != experiment::layout::StackStatus::Complete {
            out.push(self.truncated);
        }
        if out.is_empty() {
            out.push(self.unknown);
        }
    }

    /// The frames of `pcs`, a hidden object's consecutive frames folded.
    fn expand_pcs(&self, pcs: &[PcId], out: &mut Vec<FrameId>) {
        for &pc in pcs {
            let (start, end) = match self.pc_frames.get(pc as usize..pc as usize + 2) {
                Some(&[start, end]) => (start, end),
                _ => (self.unknown, self.unknown + 1),
            };
            let folds = self.folds.get(pc as usize).copied().unwrap_or(false);
            if folds
                && out.last().is_some_and(|&last| {
                    self.frames[last as usize].function == self.frames[start as usize].function
                })
            {
                continue;
            }
            out.extend(start..end);
        }
    }

    /// Calls `each` with every distinct stack's frames (not the lost
    /// stack's), in stack id order.
    pub fn for_each_stack(&self, mut each: impl FnMut(StackId, &[FrameId])) {
        let mut buffer = Vec::new();
        for id in 0..self.stacks.len() as StackId {
            each(id, self.frames_of(id, &mut buffer));
        }
    }

    /// One more than the largest function id a frame shows.
    fn function_bound(&self) -> usize {
        self.frames
            .iter()
            .map(|f| f.function as usize + 1)
            .max()
            .unwrap_or(0)
            .max(TOTAL as usize + 1)
    }
}

/// Selected events summed per stack.
#[derive(Debug, Clone, Default)]
pub struct Weights {
    /// Indexed by stack id; the last slot is for events whose stack was
    /// lost (`NO_STACK`). A dense vector: summing ten million events is
    /// one indexed add each.
    sums: Vec<Value>,
    pub total: Value,
}

impl Weights {
    /// Sums the events, waits and allocations `keep` accepts (a wait or an
    /// allocation is asked as an event: [`HeapEntry::as_event`]).
    pub fn new(model: &Model, keep: impl Fn(&EventEntry) -> bool) -> Weights {
        let lost_slot = model.stacks.len();
        let mut sums = vec![Value::default(); lost_slot + 1];
        let mut total = Value::default();
        let mut add = |stack: StackId, value: Value| {
            let slot = match stack {
                NO_STACK => lost_slot,
                stack => (stack as usize).min(lost_slot),
            };
            sums[slot].add(value);
            total.add(value);
        };
        for event in model.events.iter().filter(|e| keep(e)) {
            add(event.stack, Value::of_event(event));
        }
        for entry in model.heap.iter().filter(|e| keep(&e.as_event())) {
            add(entry.stack, Value::of_allocation(entry));
        }
        for entry in model.sync.iter().filter(|e| keep(&e.as_event())) {
            add(entry.stack, Value::of_wait(entry));
        }
        for entry in model.io.iter().filter(|e| keep(&e.as_event())) {
            add(entry.stack, Value::of_io(entry));
        }
        for entry in model.offcpu.iter().filter(|e| keep(&e.as_event())) {
            add(entry.stack, Value::of_offcpu(entry));
        }
        Weights { sums, total }
    }

    /// Every stack with selected events, and their sum.
    pub fn per_stack(&self) -> impl Iterator<Item = (StackId, Value)> + '_ {
        let lost_slot = self.sums.len().saturating_sub(1);
        self.sums
            .iter()
            .enumerate()
            .filter(|(_, v)| !v.is_empty())
            .map(move |(i, &v)| match i == lost_slot {
                true => (NO_STACK, v),
                false => (i as StackId, v),
            })
    }

    /// Calls `each` with the frames of every stack with selected events
    /// and their sum, in the view's walk order (neighbours alike), the
    /// lost stack last.
    pub fn for_each_stack(&self, view: &View, mut each: impl FnMut(&[FrameId], Value)) {
        let mut buffer = Vec::new();
        for (i, &stack) in view.walk_order.iter().enumerate() {
            // Walk order is not id order: fetch a later stack's sum and
            // span while this one is walked.
            if let Some(&ahead) = view.walk_order.get(i + PREFETCH_AHEAD) {
                if let Some(sum) = self.sums.get(ahead as usize) {
                    crate::memory::prefetch_one(sum);
                }
                view.stacks.prefetch(ahead);
            }
            match self.sums.get(stack as usize) {
                Some(&value) if !value.is_empty() => {
                    each(view.frames_of(stack, &mut buffer), value)
                }
                _ => {}
            }
        }
        if let Some(&lost) = self.sums.last().filter(|v| !v.is_empty()) {
            each(view.frames_of(NO_STACK, &mut buffer), lost);
        }
    }
}

/// How many stacks ahead of the one walked their sums and spans are
/// fetched.
const PREFETCH_AHEAD: usize = 16;

/// Marks which items a stack has counted already, so that an item met many
/// times in one stack (recursion) counts once: the stamp of item i is the
/// number of the last stack that counted it. Constant time per frame,
/// where searching the frames seen so far is quadratic in the depth.
struct OncePerStack {
    stamps: Vec<u32>,
    current: u32,
}

impl OncePerStack {
    fn new(items: usize) -> OncePerStack {
        OncePerStack {
            stamps: vec![0; items],
            current: 0,
        }
    }

    /// Starts the next stack.
    fn next_stack(&mut self) {
        if self.current == u32::MAX {
            self.stamps.fill(0);
            self.current = 0;
        }
        self.current += 1;
    }

    /// True the first time `item` is met in the current stack.
    fn first(&mut self, item: usize) -> bool {
        let fresh = self.stamps[item] != self.current;
        self.stamps[item] = self.current;
        fresh
    }
}

/// The measured keys of a view's frames, each numbered densely once, so
/// that a frame's key is an array read (not a hash) in the hot loop.
struct FrameKeys<K> {
    /// Per frame id: the key's index, or `NO_KEY`.
    of_frame: Vec<u32>,
    keys: Vec<K>,
}

const NO_KEY: u32 = u32::MAX;

impl<K: Hash + Eq + Copy> FrameKeys<K> {
    fn new(view: &View, key: impl Fn(&Frame) -> Option<K>) -> FrameKeys<K> {
        let mut index: FxHashMap<K, u32> = FxHashMap::default();
        let mut keys = Vec::new();
        let of_frame = view
            .frames
            .iter()
            .map(|frame| match key(frame) {
                Some(k) => *index.entry(k).or_insert_with(|| {
                    keys.push(k);
                    keys.len() as u32 - 1
                }),
                None => NO_KEY,
            })
            .collect();
        FrameKeys { of_frame, keys }
    }

    fn of(&self, frame: FrameId) -> Option<usize> {
        match self.of_frame.get(frame as usize) {
            None | Some(&NO_KEY) => None,
            Some(&k) => Some(k as usize),
        }
    }
}

/// Exclusive (leaf frame) and inclusive (anywhere, once per stack) values
/// per key; `key` maps a frame to what is measured (None: not counted).
pub fn exclusive_inclusive<K: Hash + Eq + Copy>(
    view: &View,
    weights: &Weights,
    key: impl Fn(&Frame) -> Option<K>,
) -> HashMap<K, ExclInclValue> {
    let keys = FrameKeys::new(view, key);
    let mut values = vec![ExclInclValue::default(); keys.keys.len()];
    let mut once = OncePerStack::new(keys.keys.len());
    weights.for_each_stack(view, |frames, value| {
        if let Some(leaf) = frames.first().and_then(|&f| keys.of(f)) {
            values[leaf].exclusive.add(value);
        }
        once.next_stack();
        for &frame in frames {
            if let Some(k) = keys.of(frame) {
                if once.first(k) {
                    values[k].inclusive.add(value);
                }
            }
        }
    });
    // Only what some selected stack holds (every such stack has events).
    keys.keys
        .into_iter()
        .zip(values)
        .filter(|(_, v)| !v.inclusive.is_empty())
        .collect()
}

/// Per function (`<Total>` included).
pub fn function_metrics(view: &View, weights: &Weights) -> HashMap<FunctionId, ExclInclValue> {
    let mut out = exclusive_inclusive(view, weights, |f| Some(f.function));
    out.insert(
        TOTAL,
        ExclInclValue {
            exclusive: weights.total,
            inclusive: weights.total,
        },
    );
    out
}

/// What an object metric is keyed by: a load object, or no object
/// (`<Unknown>` PCs and `<Truncated-stack>`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ObjectKey {
    Object(ObjectId),
    Unknown,
}

pub fn object_metrics(
    model: &Model,
    view: &View,
    weights: &Weights,
) -> HashMap<ObjectKey, ExclInclValue> {
    exclusive_inclusive(view, weights, |f| {
        Some(match f.pc.and_then(|pc| model.pc(pc).object) {
            Some(o) => ObjectKey::Object(o),
            None => ObjectKey::Unknown,
        })
    })
}

/// A source line, or the instructions of a function without line numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LineKey {
    Line(LineId),
    NoLine(FunctionId),
}

pub fn line_metrics(view: &View, weights: &Weights) -> HashMap<LineKey, ExclInclValue> {
    exclusive_inclusive(view, weights, |f| {
        Some(match f.line {
            Some(line) => LineKey::Line(line),
            None => LineKey::NoLine(f.function),
        })
    })
}

/// Per PC; frames without a PC (special functions) are not counted.
pub fn pc_metrics(view: &View, weights: &Weights) -> HashMap<PcId, ExclInclValue> {
    exclusive_inclusive(view, weights, |f| f.pc)
}

/// The callers-callees picture of one function (the manual's "How Metrics Are Assigned to Program Structure").
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallersCallees {
    pub center: FunctionId,
    pub value: ExclInclValue,
    /// Attributed to each caller (`<Total>` for the outermost frame);
    /// sums to the centre's inclusive value.
    pub callers: Vec<(FunctionId, Value)>,
    /// Attributed to each callee; with the exclusive value, sums to the
    /// centre's inclusive value.
    pub callees: Vec<(FunctionId, Value)>,
}

/// Callers and callees of `center`, taken at its innermost occurrence in
/// each stack, so recursion counts every event once (the manual's "How Metrics Are Assigned to Program Structure": the
/// recursive function is its own caller for the deeper calls).
pub fn callers_callees(view: &View, weights: &Weights, center: FunctionId) -> CallersCallees {
    let mut acc = Attribution::default();
    let mut functions = Vec::new();
    weights.for_each_stack(view, |frames, value| {
        functions.clear();
        functions.extend(frames.iter().map(|&f| view.frame(f).function));
        if center == TOTAL {
            acc.add_total(&functions, value);
        } else if let Some(i) = functions.iter().position(|&f| f == center) {
            acc.add_occurrence(&functions, i, value);
        }
    });
    acc.finish(center)
}

/// [`callers_callees`] of every function on some selected stack (and
/// `<Total>`), in one pass over the stacks.
pub fn all_callers_callees(view: &View, weights: &Weights) -> HashMap<FunctionId, CallersCallees> {
    let bound = view.function_bound();
    let mut values = vec![ExclInclValue::default(); bound];
    let mut callers = PairSums::new(bound);
    let mut callees = PairSums::new(bound);
    let mut once = OncePerStack::new(bound);
    let mut functions = Vec::new();
    let function_of: Vec<FunctionId> = view.frames.iter().map(|f| f.function).collect();
    weights.for_each_stack(view, |frames, value| {
        functions.clear();
        functions.extend(
            frames
                .iter()
                .map(|&f| function_of.get(f as usize).copied().unwrap_or(UNKNOWN)),
        );
        values[TOTAL as usize].inclusive.add(value);
        if let Some(&root) = functions.last() {
            callees.add(TOTAL, root, value);
        }
        once.next_stack();
        // Leaf first: the first occurrence of a function is its innermost.
        for (i, &center) in functions.iter().enumerate() {
            if !once.first(center as usize) {
                continue;
            }
            let value_of_center = &mut values[center as usize];
            value_of_center.inclusive.add(value);
            let caller = functions.get(i + 1).copied().unwrap_or(TOTAL);
            callers.add(center, caller, value);
            match i.checked_sub(1).map(|j| functions[j]) {
                Some(callee) => callees.add(center, callee, value),
                None => value_of_center.exclusive.add(value),
            }
        }
    });
    let mut callers = callers.by_center();
    let mut callees = callees.by_center();
    (0..bound as FunctionId)
        .filter(|&f| !values[f as usize].inclusive.is_empty())
        .map(|center| {
            let cc = CallersCallees {
                center,
                value: values[center as usize],
                callers: sorted_by_value(callers.remove(&center).unwrap_or_default()),
                callees: sorted_by_value(callees.remove(&center).unwrap_or_default()),
            };
            (center, cc)
        })
        .collect()
}

/// Values per (centre, other function): a dense matrix when there are few
/// functions (an indexed add per frame), else a hash map.
enum PairSums {
    Dense { bound: usize, values: Vec<Value> },
    Sparse(FxHashMap<(FunctionId, FunctionId), Value>),
}

/// At most this many cells (16 bytes each) in a dense [`PairSums`].
const DENSE_PAIR_CELLS: usize = 1 << 20;

impl PairSums {
    fn new(bound: usize) -> PairSums {
        match bound.checked_mul(bound) {
            Some(cells) if cells <= DENSE_PAIR_CELLS => PairSums::Dense {
                bound,
                values: vec![Value::default(); cells],
            },
            _ => PairSums::Sparse(FxHashMap::default()),
        }
    }

    fn add(&mut self, center: FunctionId, other: FunctionId, value: Value) {
        match self {
            PairSums::Dense { bound, values } => {
                values[center as usize * *bound + other as usize].add(value)
            }
            PairSums::Sparse(map) => map.entry((center, other)).or_default().add(value),
        }
    }

    /// The pairs with events, grouped by centre.
    fn by_center(self) -> HashMap<FunctionId, HashMap<FunctionId, Value>> {
        let mut out: HashMap<FunctionId, HashMap<FunctionId, Value>> = HashMap::new();
        let pairs: Box<dyn Iterator<Item = ((FunctionId, FunctionId), Value)>> = match self {
            PairSums::Dense { bound, values } => Box::new(
                values
                    .into_iter()
                    .enumerate()
                    .map(move |(i, v)| (((i / bound) as FunctionId, (i % bound) as FunctionId), v)),
            ),
            PairSums::Sparse(map) => Box::new(map.into_iter()),
        };
        for ((center, other), value) in pairs.filter(|(_, v)| !v.is_empty()) {
            out.entry(center).or_default().insert(other, value);
        }
        out
    }
}

/// Sums of one centre's callers-callees picture.
#[derive(Default)]
struct Attribution {
    value: ExclInclValue,
    callers: HashMap<FunctionId, Value>,
    callees: HashMap<FunctionId, Value>,
}

impl Attribution {
    /// `<Total>` calls every stack's root.
    fn add_total(&mut self, functions: &[FunctionId], value: Value) {
        self.value.inclusive.add(value);
        if let Some(&root) = functions.last() {
            self.callees.entry(root).or_default().add(value);
        }
    }

    /// The centre is `functions[i]` (its innermost occurrence).
    fn add_occurrence(&mut self, functions: &[FunctionId], i: usize, value: Value) {
        self.value.inclusive.add(value);
        let caller = functions.get(i + 1).copied().unwrap_or(TOTAL);
        self.callers.entry(caller).or_default().add(value);
        match i.checked_sub(1).map(|j| functions[j]) {
            Some(callee) => self.callees.entry(callee).or_default().add(value),
            None => self.value.exclusive.add(value),
        }
    }

    fn finish(self, center: FunctionId) -> CallersCallees {
        CallersCallees {
            center,
            value: self.value,
            callers: sorted_by_value(self.callers),
            callees: sorted_by_value(self.callees),
        }
    }
}

fn sorted_by_value(map: HashMap<FunctionId, Value>) -> Vec<(FunctionId, Value)> {
    let mut list: Vec<_> = map.into_iter().collect();
    list.sort_by(|a, b| b.1.ns.cmp(&a.1.ns).then(a.0.cmp(&b.0)));
    list
}

/// A node of the calling-context tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallTreeNode {
    pub function: FunctionId,
    pub value: ExclInclValue,
    /// Sorted by inclusive value, largest first.
    pub children: Vec<CallTreeNode>,
}

/// A node of the call tree while it is built: nodes in one vector, each
/// with its parent's index.
struct FlatNode {
    function: FunctionId,
    parent: u32,
    value: ExclInclValue,
}

/// The whole calling-context tree under `<Total>`.
pub fn call_tree(view: &View, weights: &Weights) -> CallTreeNode {
    let mut nodes = vec![FlatNode {
        function: TOTAL,
        parent: 0,
        value: ExclInclValue::default(),
    }];
    // (parent, function) -> child: one hash per frame, where searching a
    // node's children is linear in their number.
    let mut children: FxHashMap<(u32, FunctionId), u32> = FxHashMap::default();
    // The previous stack's frames and its path of nodes from the root:
    // the part a stack shares with the one before (most of it, in walk
    // order) is not looked up again.
    let mut previous: Vec<FrameId> = Vec::new();
    let mut path: Vec<u32> = vec![0];
    weights.for_each_stack(view, |frames, value| {
        let shared = frames
            .iter()
            .rev()
            .zip(previous.iter().rev())
            .take_while(|(a, b)| a == b)
            .count();
        path.truncate(shared + 1);
        for &frame in frames.iter().rev().skip(shared) {
            let function = view.frame(frame).function;
            let parent = path[path.len() - 1];
            let node = *children.entry((parent, function)).or_insert_with(|| {
                nodes.push(FlatNode {
                    function,
                    parent,
                    value: ExclInclValue::default(),
                });
                nodes.len() as u32 - 1
            });
            path.push(node);
        }
        nodes[path[path.len() - 1] as usize]
            .value
            .exclusive
            .add(value);
        previous.clear();
        previous.extend_from_slice(frames);
    });
    drop(children);
    add_inclusive(&mut nodes);
    nest(nodes)
}

/// A node's inclusive value is what ends in it and in its descendants:
/// summed from the last node back (children come after their parents).
fn add_inclusive(nodes: &mut [FlatNode]) {
    for id in (0..nodes.len()).rev() {
        let node = &mut nodes[id];
        node.value.inclusive.add(node.value.exclusive);
        let (inclusive, parent) = (node.value.inclusive, node.parent as usize);
        if id > 0 {
            nodes[parent].value.inclusive.add(inclusive);
        }
    }
}

/// The nested tree of flat nodes, children sorted. A child comes after its
/// parent in `nodes`, so building from the last node backwards finishes
/// every child before its parent (no recursion: stacks can be thousands
/// deep).
fn nest(nodes: Vec<FlatNode>) -> CallTreeNode {
    let mut children: Vec<Vec<CallTreeNode>> = Vec::new();
    children.resize_with(nodes.len(), Vec::new);
    for (id, node) in nodes.iter().enumerate().skip(1).rev() {
        let mut own = std::mem::take(&mut children[id]);
        sort_children(&mut own);
        children[node.parent as usize].push(CallTreeNode {
            function: node.function,
            value: node.value,
            children: own,
        });
    }
    let mut root_children = std::mem::take(&mut children[0]);
    sort_children(&mut root_children);
    CallTreeNode {
        function: TOTAL,
        value: nodes[0].value,
        children: root_children,
    }
}

fn sort_children(children: &mut [CallTreeNode]) {
    children.sort_by(|a, b| {
        b.value
            .inclusive
            .ns
            .cmp(&a.value.inclusive.ns)
            .then(a.function.cmp(&b.function))
    });
}

#[cfg(test)]
mod tests;
