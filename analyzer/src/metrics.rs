//! Metrics from a [`Model`]: exclusive, inclusive and attributed values
//! (the manual's "How Metrics Are Assigned to Program Structure") for functions, load objects, lines and PCs, and the call tree.
//!
//! Events are first summed per distinct stack (`Weights`), then each stack
//! is walked once with its total: the cost is the frames of the distinct
//! stacks (not of the events), each frame a constant-time step — array
//! reads, a generation stamp for "once per stack", at most one hash.

use crate::memory::{populate_in_background, vec_with_room};
use crate::model::*;
use crate::packed::{Layout, Sums};
use crate::parallel::on_two_threads;
use crate::u64_table::Children;
use call_pairs::{CallPairs, ListedPairs};
use commands::MetricName;
use experiment::counters::MAX_COUNTERS;
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
    /// I/O tracing: wall time in the traced calls, failed or not.
    pub io_ns: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    /// I/O tracing: read, write and other calls that did not fail.
    pub reads: u64,
    pub writes: u64,
    pub other_io: u64,
    /// I/O tracing: the wall time of those, per class.
    pub read_ns: u64,
    pub write_ns: u64,
    pub other_io_ns: u64,
    /// I/O tracing: the calls that failed (of any class), and their time.
    pub io_errors: u64,
    pub io_error_ns: u64,
    /// Off-CPU profiling: time off the CPU, and the switches behind it.
    pub offcpu_ns: u64,
    pub switches: u64,
    /// Counter overflow profiling: each counter's events, by its index in
    /// `Model::counters`.
    pub counters: [u64; MAX_COUNTERS],
    /// The events of the cycles and the instructions counter again (those
    /// with a [`CounterRole`]): what CPI and IPC are made of.
    pub cycles: u64,
    pub instructions: u64,
    // MPI tracing: the manual's six metrics, and the calls behind MPI Time.
    /// Wall time in the traced MPI calls.
    pub mpi_ns: u64,
    pub mpi_sends: u64,
    pub mpi_bytes_sent: u64,
    pub mpi_receives: u64,
    pub mpi_bytes_received: u64,
    /// Calls of the other MPI functions (waits, barriers, init, finalize).
    pub mpi_other: u64,
    /// Every traced MPI call (not the completions of receives).
    pub mpi_calls: u64,
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
        self.read_ns += other.read_ns;
        self.write_ns += other.write_ns;
        self.other_io_ns += other.other_io_ns;
        self.io_errors += other.io_errors;
        self.io_error_ns += other.io_error_ns;
        self.offcpu_ns += other.offcpu_ns;
        self.switches += other.switches;
        for (sum, count) in self.counters.iter_mut().zip(other.counters) {
            *sum += count;
        }
        self.cycles += other.cycles;
        self.instructions += other.instructions;
        self.add_mpi(other);
    }

    fn add_mpi(&mut self, other: Value) {
        self.mpi_ns += other.mpi_ns;
        self.mpi_sends += other.mpi_sends;
        self.mpi_bytes_sent += other.mpi_bytes_sent;
        self.mpi_receives += other.mpi_receives;
        self.mpi_bytes_received += other.mpi_bytes_received;
        self.mpi_other += other.mpi_other;
        self.mpi_calls += other.mpi_calls;
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
            && self.counters.iter().all(|&c| c == 0)
            && self.mpi_calls == 0
            && self.mpi_bytes_received == 0
    }

    /// Traced I/O calls of every class, the failed ones included (a
    /// transfer is a read and a write).
    pub fn io_calls(&self) -> u64 {
        self.reads + self.writes + self.other_io + self.io_errors
    }

    /// CPI or IPC; None for another metric, or when the divisor is 0.
    pub fn ratio(&self, metric: MetricName) -> Option<f64> {
        let (dividend, divisor) = match metric {
            MetricName::Cpi => (self.cycles, self.instructions),
            MetricName::Ipc => (self.instructions, self.cycles),
            _ => return None,
        };
        (divisor > 0).then(|| dividend as f64 / divisor as f64)
    }

    /// The number `metric` shows (nanoseconds for CPU time, millionths
    /// for a ratio: what listings sort by); 0 for a metric that is not
    /// computed from events, or a counter not resolved to the model's.
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
            MetricName::ReadTime => self.read_ns,
            MetricName::WriteTime => self.write_ns,
            MetricName::OtherIoTime => self.other_io_ns,
            MetricName::IoErrorTime => self.io_error_ns,
            MetricName::IoErrorCount => self.io_errors,
            MetricName::ReadBytes => self.read_bytes,
            MetricName::WriteBytes => self.write_bytes,
            MetricName::ReadCount => self.reads,
            MetricName::WriteCount => self.writes,
            MetricName::OtherIoCount => self.other_io,
            MetricName::OffCpuTime => self.offcpu_ns,
            MetricName::WallTime => self.ns + self.offcpu_ns,
            MetricName::MpiTime => self.mpi_ns,
            MetricName::MpiSends => self.mpi_sends,
            MetricName::MpiBytesSent => self.mpi_bytes_sent,
            MetricName::MpiReceives => self.mpi_receives,
            MetricName::MpiBytesReceived => self.mpi_bytes_received,
            MetricName::MpiOtherCalls => self.mpi_other,
            MetricName::Counter(counter) => counter
                .slot()
                .and_then(|slot| self.counters.get(slot))
                .copied()
                .unwrap_or(0),
            MetricName::Cpi | MetricName::Ipc => self
                .ratio(metric)
                .map_or(0, |ratio| (ratio * 1e6).round() as u64),
            MetricName::Name | MetricName::Size | MetricName::Address => 0,
        }
    }

    /// The events behind `metric`'s number (`+` in a metric spec).
    pub fn count(&self, metric: MetricName) -> u64 {
        match metric {
            MetricName::Allocations | MetricName::BytesAllocated => self.allocations,
            MetricName::Leaks | MetricName::BytesLeaked => self.leaks,
            MetricName::SyncWaitTime | MetricName::SyncWaitCount => self.sync_waits,
            MetricName::ReadBytes | MetricName::ReadCount | MetricName::ReadTime => self.reads,
            MetricName::WriteBytes | MetricName::WriteCount | MetricName::WriteTime => self.writes,
            MetricName::OtherIoCount | MetricName::OtherIoTime => self.other_io,
            MetricName::IoErrorCount | MetricName::IoErrorTime => self.io_errors,
            MetricName::IoTime => self.io_calls(),
            MetricName::OffCpuTime => self.switches,
            MetricName::WallTime => self.events + self.switches,
            MetricName::MpiTime => self.mpi_calls,
            MetricName::MpiSends | MetricName::MpiBytesSent => self.mpi_sends,
            MetricName::MpiReceives | MetricName::MpiBytesReceived => self.mpi_receives,
            MetricName::MpiOtherCalls => self.mpi_other,
            // A counter's number is its events already.
            MetricName::Counter(_) => self.get(metric),
            // The events the ratio is per.
            MetricName::Cpi => self.instructions,
            MetricName::Ipc => self.cycles,
            _ => self.events,
        }
    }

    /// A clock event's value (what `Weights` sums without making it).
    pub fn of_clock(entry: &EventEntry) -> Value {
        Value {
            ns: u64::from(entry.weight_ns),
            events: 1,
            ..Value::default()
        }
    }

    /// A traced wait's value.
    pub fn of_wait(entry: &SyncEntry) -> Value {
        Value {
            sync_wait_ns: entry.wait_ns,
            sync_waits: 1,
            ..Value::default()
        }
    }

    /// A traced I/O call's value. As in gprofng, a call that failed counts
    /// only as an error (its time in I/O Error Time, not in its class's);
    /// a transfer is a read and a write, its time the write's.
    pub fn of_io(entry: &IoEntry) -> Value {
        let mut value = Value {
            io_ns: entry.call_ns,
            ..Value::default()
        };
        if entry.failed {
            value.io_errors = 1;
            value.io_error_ns = entry.call_ns;
            return value;
        }
        let (read, written) = entry.read_and_written();
        if let Some(bytes) = read {
            value.reads = 1;
            value.read_bytes = bytes;
        }
        if let Some(bytes) = written {
            value.writes = 1;
            value.write_bytes = bytes;
        }
        match entry.op.class() {
            IoClass::Read => value.read_ns = entry.call_ns,
            IoClass::Write => value.write_ns = entry.call_ns,
            IoClass::Other => {
                value.other_io = 1;
                value.other_io_ns = entry.call_ns;
            }
        }
        value
    }

    /// A traced MPI call's value (or a completed receive's: its bytes).
    pub fn of_mpi(entry: &MpiEntry) -> Value {
        let call = u64::from(!entry.completion);
        let other = entry.op.class() == experiment::mpi::MpiClass::Other;
        Value {
            mpi_ns: entry.call_ns,
            mpi_sends: u64::from(entry.sends),
            mpi_bytes_sent: entry.bytes_sent,
            mpi_receives: u64::from(entry.receives),
            mpi_bytes_received: entry.bytes_received,
            mpi_other: call * u64::from(other),
            mpi_calls: call,
            ..Value::default()
        }
    }

    /// A switch off the CPU's value.
    pub fn of_offcpu(entry: &OffCpuEntry) -> Value {
        Value {
            offcpu_ns: entry.off_ns,
            switches: 1,
            ..Value::default()
        }
    }

    /// A counter overflow record's value, the counter playing `role`.
    pub fn of_counter(entry: &CounterEntry, role: Option<CounterRole>) -> Value {
        let mut value = Value::default();
        if let Some(events) = value.counters.get_mut(usize::from(entry.counter)) {
            *events = entry.count;
        }
        match role {
            Some(CounterRole::Cycles) => value.cycles = entry.count,
            Some(CounterRole::Instructions) => value.instructions = entry.count,
            None => {}
        }
        value
    }

    /// An allocation's value.
    pub fn of_allocation(entry: &HeapEntry) -> Value {
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
    /// [`StackTable::ids_in_walk_order`]).
    walk_order: Vec<StackId>,
    unknown: FrameId,
    truncated: FrameId,
}

impl View {
    pub fn new(model: &Model, settings: &ViewSettings) -> View {
        let mut frames = Vec::with_capacity(model.pcs.len() + 2);
        let mut pc_frames = Vec::with_capacity(model.pcs.len() + 1);
        let mut folds = Vec::with_capacity(model.pcs.len());
        // The same instruction recorded by several experiments shows as one.
        let instruction = crate::matching::first_pc_of_each_instruction(model);
        for (id, pc) in model.pcs.iter().enumerate() {
            pc_frames.push(frames.len() as FrameId);
            let pc_id = Some(instruction[id]);
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
            walk_order: model.stacks.ids_in_walk_order(),
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
        self.make_frames(stack, out);
    }

    /// The frames of `stack`, leaf first, made in `buffer` (found by
    /// walking up the stack's path: to go over many stacks,
    /// [`View::for_each_stack`] makes each path's frames once).
    pub fn frames_of<'a>(&'a self, stack: StackId, buffer: &'a mut Vec<FrameId>) -> &'a [FrameId] {
        self.make_frames(stack, buffer);
        buffer
    }

    fn make_frames(&self, stack: StackId, out: &mut Vec<FrameId>) {
        out.clear();
        let Some(stack) = self.stacks.get(stack) else {
            out.push(self.unknown);
            return;
        };
        if self.one_frame_per_pc {
            out.extend(stack.pcs());
        } else {
            let pcs: Vec<PcId> = stack.pcs().collect();
            self.expand_pcs(&pcs, out);
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
            let (start, end) = self.pc_frame_range(pc);
            if self.folds_into(pc, start, out.last().copied()) {
                continue;
            }
            out.extend(start..end);
        }
    }

    /// The frames PC `pc` shows, leaf first.
    pub(crate) fn pc_frame_range(&self, pc: PcId) -> (FrameId, FrameId) {
        match self.pc_frames.get(pc as usize..pc as usize + 2) {
            Some(&[start, end]) => (start, end),
            _ => (self.unknown, self.unknown + 1),
        }
    }

    /// Whether `pc` (whose first frame is `start`) folds into its
    /// neighbour frame `next`: both in one hidden object, one call of it.
    fn folds_into(&self, pc: PcId, start: FrameId, next: Option<FrameId>) -> bool {
        self.folds.get(pc as usize).copied().unwrap_or(false)
            && next.is_some_and(|next| {
                self.frames[next as usize].function == self.frames[start as usize].function
            })
    }

    /// Calls `each` with every distinct stack's frames (not the lost
    /// stack's), in walk order.
    pub fn for_each_stack(&self, mut each: impl FnMut(StackId, &[FrameId])) {
        let mut path = FramePath::new(self);
        for &id in &self.walk_order {
            if let Some(frames) = path.step(self, id) {
                each(id, frames);
            }
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

/// The frames of the path a [`FrameLevels`] walk is on, leaf first, kept
/// as the walk goes: a stack's frames are made only for the frames it
/// does not share with the stack walked before.
struct FramePath<'v> {
    levels: FrameLevels<'v>,
    leaf_first: LeafFirst,
}

impl<'v> FramePath<'v> {
    fn new(view: &'v View) -> FramePath<'v> {
        let room = 256;
        let mut frames = vec![view.unknown; room + 1];
        frames[room] = view.truncated;
        FramePath {
            levels: FrameLevels::new(view, &[]),
            leaf_first: LeafFirst { frames, top: room },
        }
    }

    /// The frames of stack `id`, leaf first; None for an id that is no stack.
    fn step<'s>(&'s mut self, view: &'s View, id: StackId) -> Option<&'s [FrameId]> {
        let status = self.levels.step(view, id, &mut self.leaf_first)?;
        let LeafFirst { frames, top } = &self.leaf_first;
        let end = frames.len() - 1;
        let complete = status == experiment::layout::StackStatus::Complete;
        Some(match (complete, *top == end) {
            (true, false) => &frames[*top..end],
            (false, _) => &frames[*top..end + 1],
            // An empty complete stack shows as <Unknown>.
            (true, true) => std::slice::from_ref(&view.unknown),
        })
    }
}

/// A path's frames leaf first, as a [`PathVisitor`] is told them: they
/// fill `frames` from the end (the outermost frame last), and the cell
/// after them holds `<Truncated-stack>`, which an incomplete stack shows
/// below its outermost frame.
struct LeafFirst {
    frames: Vec<FrameId>,
    /// Where the leaf frame is in `frames`.
    top: usize,
}

impl PathVisitor for LeafFirst {
    fn enter(&mut self, frame: FrameId) {
        if self.top == 0 {
            // Grown at the front: the frames keep their place from the end.
            let grow = self.frames.len();
            let mut grown = vec![0; grow];
            grown.extend_from_slice(&self.frames);
            self.frames = grown;
            self.top = grow;
        }
        self.top -= 1;
        self.frames[self.top] = frame;
    }

    fn leave(&mut self) {
        self.top += 1;
    }

    fn stack(&mut self, _: usize, _: &[u64]) {}
}

/// What a walk over the stacks' paths tells (see [`Weights::walk`]): a
/// frame entered below the innermost frame of the path, the innermost
/// frame left, and a stack whose frames are the path's (its leaf the
/// innermost) with its packed value and its slot in the walk's sums (its
/// id; one past the last stack's for the events whose stack was lost).
/// Neighbouring stacks share most of their frames: a visitor that keeps
/// what it makes of a path per frame does the work of the frames the
/// stacks do not share, not of every stack's every frame.
pub(crate) trait PathVisitor {
    fn enter(&mut self, frame: FrameId);
    fn leave(&mut self);
    fn stack(&mut self, slot: usize, value: &[u64]);
}

/// A visitor whose sums are sums over stacks: a walk of some stacks
/// absorbs the sums of a walk of the others ([`Weights::walk_in_parts`]).
pub(crate) trait Absorb: PathVisitor + Send {
    fn absorb(&mut self, other: Self);
}

/// The frames of the path a [`PathWalk`] is on, from the outermost, told
/// to a [`PathVisitor`] as they change.
struct FrameLevels<'v> {
    walk: PathWalk<'v>,
    /// The path's frames, outermost first (after `base`).
    frames: Vec<FrameId>,
    /// Frames below the path's PCs that every stack of the walk has
    /// (`<Truncated-stack>` for incomplete stacks).
    base: usize,
    /// Per PC of the path: the frames it added, and the frame it replaced
    /// (a hidden object's call folded into its caller's frame).
    levels: Vec<(u32, Option<FrameId>)>,
    /// The base frames were entered (with the first stack).
    entered: bool,
}

impl<'v> FrameLevels<'v> {
    /// A walk whose stacks all have `base` as their outermost frames
    /// (entered with the first stack).
    fn new(view: &'v View, base: &[FrameId]) -> FrameLevels<'v> {
        FrameLevels {
            walk: PathWalk::new(&view.stacks),
            frames: base.to_vec(),
            base: base.len(),
            levels: Vec::new(),
            entered: false,
        }
    }

    /// Moves to stack `id`; its status, None for an id that is no stack.
    fn step(
        &mut self,
        view: &View,
        id: StackId,
        visitor: &mut impl PathVisitor,
    ) -> Option<experiment::layout::StackStatus> {
        let step = self.walk.step(id)?;
        if !self.entered {
            self.entered = true;
            for &frame in &self.frames {
                visitor.enter(frame);
            }
        }
        while self.levels.len() > step.kept {
            let Some((added, replaced)) = self.levels.pop() else {
                break;
            };
            for _ in 0..added {
                self.frames.pop();
                visitor.leave();
            }
            if let Some(frame) = replaced {
                self.frames.pop();
                visitor.leave();
                self.frames.push(frame);
                visitor.enter(frame);
            }
        }
        for &pc in step.added {
            let (start, end) = match view.one_frame_per_pc {
                true => (pc, pc + 1),
                false => view.pc_frame_range(pc),
            };
            // The leaf-most frame of a run of one hidden object's PCs
            // stands for the run (as `View::expand_pcs` keeps it).
            let leaf = (self.frames.len() > self.base).then(|| self.frames[self.frames.len() - 1]);
            if !view.one_frame_per_pc && view.folds_into(pc, start, leaf) {
                self.levels.push((0, leaf));
                self.frames.pop();
                visitor.leave();
                self.frames.push(start);
                visitor.enter(start);
                continue;
            }
            for frame in (start..end).rev() {
                self.frames.push(frame);
                visitor.enter(frame);
            }
            self.levels.push((end - start, None));
        }
        Some(step.status)
    }

    /// Leaves every frame.
    fn finish(self, visitor: &mut impl PathVisitor) {
        if self.entered {
            for _ in 0..self.frames.len() {
                visitor.leave();
            }
        }
    }
}

/// How many stacks (or allocations) ahead of the one worked on their sums
/// and entries are fetched.
pub(crate) const PREFETCH_AHEAD: usize = 16;

/// Below this many clock events and allocations, summing them is not
/// worth a second thread.
const SPLIT_SUMS_FROM: usize = 1 << 20;

/// Below this many stacks a walk is not worth a second thread.
const SPLIT_WALK_FROM: usize = 1 << 14;

/// Runs of the walk order a walk on two threads is cut in.
const WALK_PARTS: usize = 8;

/// Selected events summed per stack.
#[derive(Debug, Clone, Default)]
pub struct Weights {
    /// The words of a value the model's data has.
    layout: Layout,
    /// Indexed by stack id; the last slot is for events whose stack was
    /// lost (`NO_STACK`). Dense and packed: summing ten million events is
    /// one indexed add each.
    sums: Sums,
    pub total: Value,
}

impl Weights {
    /// Sums every event, wait and allocation: clock events and
    /// allocations, most of the data, in two halves on two threads when
    /// there are many.
    pub fn all(model: &Model) -> Weights {
        let (events, heap) = (&model.events[..], &model.heap[..]);
        if events.len() + heap.len() < SPLIT_SUMS_FROM {
            return Weights::new(model, |_| true);
        }
        let layout = Layout::of(model);
        let (events, heap) = (
            events.split_at(events.len() / 2),
            heap.split_at(heap.len() / 2),
        );
        let sum = |events, heap| {
            let mut sums = Sums::new(layout.width(), model.stacks.len() + 1);
            add_events_and_allocations(model, &layout, &|_| true, (events, heap), &mut sums);
            sums
        };
        let (mut sums, other) = on_two_threads(|| sum(events.0, heap.0), || sum(events.1, heap.1));
        sums.add_all(&other);
        drop(other);
        Weights::with_the_rest(model, layout, sums, |_| true)
    }

    /// Sums the events, waits and allocations `keep` accepts (a wait or an
    /// allocation is asked as an event: [`HeapEntry::as_event`]).
    pub fn new(model: &Model, keep: impl Fn(&EventEntry) -> bool) -> Weights {
        let layout = Layout::of(model);
        let mut sums = Sums::new(layout.width(), model.stacks.len() + 1);
        let parts = (&model.events[..], &model.heap[..]);
        add_events_and_allocations(model, &layout, &keep, parts, &mut sums);
        Weights::with_the_rest(model, layout, sums, keep)
    }

    /// `sums` of the clock events and allocations `keep` accepts, with the
    /// other data's added.
    fn with_the_rest(
        model: &Model,
        layout: Layout,
        mut sums: Sums,
        keep: impl Fn(&EventEntry) -> bool,
    ) -> Weights {
        let slot_of = |stack| slot_of(model, stack);
        let mut packed = vec![0u64; layout.width()];
        let mut add = |stack: StackId, value: Value| {
            layout.pack(value, &mut packed);
            sums.add(slot_of(stack), &packed);
        };
        for entry in model.sync.iter().filter(|e| keep(&e.as_event())) {
            add(entry.stack, Value::of_wait(entry));
        }
        for entry in model.io.iter().filter(|e| keep(&e.as_event())) {
            add(entry.stack, Value::of_io(entry));
        }
        for entry in model.offcpu.iter().filter(|e| keep(&e.as_event())) {
            add(entry.stack, Value::of_offcpu(entry));
        }
        for entry in model.mpi.iter().filter(|e| keep(&e.as_event())) {
            add(entry.stack, Value::of_mpi(entry));
        }
        let roles: Vec<Option<CounterRole>> = model.counters.iter().map(|c| c.role).collect();
        for entry in model.counter_events.iter().filter(|e| keep(&e.as_event())) {
            let role = roles.get(usize::from(entry.counter)).copied().flatten();
            add(entry.stack, Value::of_counter(entry, role));
        }
        // Summed from the stacks' sums: not a value's every word per event.
        let total = layout.unpack(&sums.sum_all());
        Weights {
            layout,
            sums,
            total,
        }
    }

    /// How the values are packed.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The value of packed words.
    pub fn value(&self, packed: &[u64]) -> Value {
        self.layout.unpack(packed)
    }

    /// Walks every stack with selected events for `visitor`, the lost
    /// stack last: complete stacks along their paths, then incomplete ones
    /// along theirs below `<Truncated-stack>`; an empty stack (and the lost
    /// one) is `<Unknown>` alone. Stacks come in no particular order.
    pub(crate) fn walk(&self, view: &View, visitor: &mut impl PathVisitor) {
        self.walk_part(view, &view.walk_order, visitor);
        self.visit_lost(view, visitor);
    }

    /// [`Weights::walk`] on two threads, each with a visitor of its own
    /// (`make`'s), the second then absorbed into the first (one visitor,
    /// for a walk too short to be worth a thread). The walk order is cut
    /// in `WALK_PARTS` runs, which the threads take one at a time as they
    /// are free: a thread slowed by the machine takes fewer. A run starts
    /// its paths from the root, so each stack is told whole.
    pub(crate) fn walk_in_parts<V: Absorb>(&self, view: &View, make: impl Fn() -> V + Sync) -> V {
        let order = &view.walk_order;
        if order.len() < SPLIT_WALK_FROM {
            let mut visitor = make();
            self.walk(view, &mut visitor);
            return visitor;
        }
        let parts: Vec<&[StackId]> = order.chunks(order.len().div_ceil(WALK_PARTS)).collect();
        let next = std::sync::atomic::AtomicUsize::new(0);
        let walk_parts = || {
            let mut visitor = make();
            loop {
                let part = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(stacks) = parts.get(part) else {
                    return visitor;
                };
                self.walk_part(view, stacks, &mut visitor);
            }
        };
        let (mut visitor, second) = on_two_threads(walk_parts, walk_parts);
        self.visit_lost(view, &mut visitor);
        visitor.absorb(second);
        visitor
    }

    /// The walk of the stacks `order` (a run of the view's walk order).
    fn walk_part(&self, view: &View, order: &[StackId], visitor: &mut impl PathVisitor) {
        let stacks = self.sums.len();
        let selected =
            |stack: StackId| (stack as usize) < stacks && !self.sums.is_zero(stack as usize);
        for complete in [true, false] {
            let base = match complete {
                true => vec![],
                false => vec![view.truncated],
            };
            let mut levels = FrameLevels::new(view, &base);
            for (i, &stack) in order.iter().enumerate() {
                // Walk order is not id order: a later stack's sum and
                // entry are fetched while this one is walked.
                if let Some(&ahead) = order.get(i + PREFETCH_AHEAD) {
                    self.sums.prefetch(ahead as usize);
                    view.stacks.prefetch(ahead);
                }
                let status = view.stacks.get(stack).map(|s| s.status);
                let is_complete = status == Some(experiment::layout::StackStatus::Complete);
                if !selected(stack) || is_complete != complete {
                    continue;
                }
                if levels.step(view, stack, visitor).is_none() {
                    continue;
                }
                let value = self.sums.get(stack as usize);
                match levels.frames.is_empty() {
                    true => alone(visitor, view.unknown, stack as usize, value),
                    false => visitor.stack(stack as usize, value),
                }
            }
            levels.finish(visitor);
        }
    }

    /// Tells `visitor` the events whose stack was lost, if any.
    fn visit_lost(&self, view: &View, visitor: &mut impl PathVisitor) {
        let lost = self.sums.len().saturating_sub(1);
        if self.sums.len() > 0 && !self.sums.is_zero(lost) {
            alone(visitor, view.unknown, lost, self.sums.get(lost));
        }
    }

    /// Calls `each` with the frames of every stack with selected events
    /// and their sum, packed (see [`Weights::value`]), in the view's walk
    /// order (neighbours alike), the lost stack last.
    pub fn for_each_stack(&self, view: &View, mut each: impl FnMut(&[FrameId], &[u64])) {
        let stacks = self.sums.len();
        let mut path = FramePath::new(view);
        for &stack in &view.walk_order {
            let stack_id = stack as usize;
            if stack_id >= stacks || self.sums.is_zero(stack_id) {
                continue;
            }
            if let Some(frames) = path.step(view, stack) {
                each(frames, self.sums.get(stack_id));
            }
        }
        let lost = stacks.saturating_sub(1);
        if stacks > 0 && !self.sums.is_zero(lost) {
            let mut buffer = Vec::new();
            each(view.frames_of(NO_STACK, &mut buffer), self.sums.get(lost));
        }
    }
}

/// A stack's index in [`Weights`]'s sums: the last for a lost stack.
fn slot_of(model: &Model, stack: StackId) -> usize {
    let lost = model.stacks.len();
    match stack {
        NO_STACK => lost,
        stack => (stack as usize).min(lost),
    }
}

/// Adds clock events and allocations of `model` that `keep` accepts to
/// their stacks' `sums`: their words go straight to
/// their places, with no value made and packed for each.
fn add_events_and_allocations(
    model: &Model,
    layout: &Layout,
    keep: &impl Fn(&EventEntry) -> bool,
    (events, heap): (&[EventEntry], &[HeapEntry]),
    sums: &mut Sums,
) {
    let slot_of = |stack| slot_of(model, stack);
    let ns_at = layout.position(crate::packed::NS_WORD);
    let events_at = layout.position(crate::packed::EVENTS_WORD);
    for event in events.iter().filter(|e| keep(e)) {
        let slot = slot_of(event.stack);
        if let Some(at) = ns_at {
            sums.add_word(slot, at, u64::from(event.weight_ns));
        }
        if let Some(at) = events_at {
            sums.add_word(slot, at, u64::from(event.count));
        }
    }
    // The stack of a later allocation is fetched while one is added.
    let heap_at = crate::packed::ALLOCATION_WORDS.map(|word| layout.position(word));
    for (i, entry) in heap.iter().enumerate() {
        if let Some(ahead) = heap.get(i + PREFETCH_AHEAD) {
            sums.prefetch(slot_of(ahead.stack));
        }
        if !keep(&entry.as_event()) {
            continue;
        }
        let slot = slot_of(entry.stack);
        let leaked = u64::from(entry.leaked);
        let words = [1, entry.bytes, leaked, leaked * entry.bytes];
        for (at, word) in heap_at.into_iter().zip(words) {
            if let Some(at) = at {
                sums.add_word(slot, at, word);
            }
        }
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

/// A stack of one frame told to `visitor` on its own.
fn alone(visitor: &mut impl PathVisitor, frame: FrameId, slot: usize, value: &[u64]) {
    visitor.enter(frame);
    visitor.stack(slot, value);
    visitor.leave();
}

/// Packed values along a path, one per frame, each the sum of what ended
/// in its subtree while it was on the path.
struct PathSums {
    width: usize,
    words: Vec<u64>,
}

impl PathSums {
    fn new(width: usize) -> PathSums {
        PathSums {
            width,
            words: Vec::new(),
        }
    }

    fn push(&mut self) {
        self.words.resize(self.words.len() + self.width, 0);
    }

    /// Adds an innermost frame whose sum starts at `value`.
    fn push_value(&mut self, value: &[u64]) {
        self.words.extend_from_slice(value);
    }

    /// Adds `value` to the innermost frame's.
    fn add(&mut self, value: &[u64]) {
        let start = self.words.len() - self.width;
        for (sum, v) in self.words[start..].iter_mut().zip(value) {
            *sum += v;
        }
    }

    /// The innermost frame's sum.
    fn innermost(&self) -> &[u64] {
        &self.words[self.words.len() - self.width..]
    }

    /// The sum of the frame at `depth` (0: the outermost).
    fn at(&self, depth: usize) -> &[u64] {
        &self.words[depth * self.width..(depth + 1) * self.width]
    }

    /// Adds `value` to the sum of the frame at `depth`.
    fn add_at(&mut self, depth: usize, value: &[u64]) {
        let start = depth * self.width;
        for (sum, v) in self.words[start..start + self.width].iter_mut().zip(value) {
            *sum += v;
        }
    }

    /// Removes the innermost frame's sum.
    fn drop_innermost(&mut self) {
        self.words.truncate(self.words.len() - self.width);
    }

    /// Removes the innermost frame, its sum added to its caller's.
    fn pop(&mut self) {
        let start = self.words.len() - self.width;
        if start >= self.width {
            for k in 0..self.width {
                self.words[start - self.width + k] += self.words[start + k];
            }
        }
        self.words.truncate(start);
    }
}

/// Builds [`exclusive_inclusive`]'s sums along the walk: a stack's value
/// goes to its leaf's key (exclusive) and to its innermost frame's path
/// sum; when a frame is left, its sum (what ended below it) goes to its
/// key's inclusive value if no frame above it has that key (each stack is
/// counted once per key: at the outermost frame with it).
struct KeySums<'k, K> {
    keys: &'k FrameKeys<K>,
    exclusive: Sums,
    inclusive: Sums,
    /// Per key: frames of the path that have it.
    on_path: Vec<u32>,
    /// Per frame of the path: its key and whether it is the outermost
    /// with it.
    levels: Vec<(Option<usize>, bool)>,
    sums: PathSums,
}

impl<K: Hash + Eq + Copy + Sync> Absorb for KeySums<'_, K> {
    fn absorb(&mut self, other: Self) {
        self.exclusive.add_all(&other.exclusive);
        self.inclusive.add_all(&other.inclusive);
    }
}

impl<K: Hash + Eq + Copy> PathVisitor for KeySums<'_, K> {
    fn enter(&mut self, frame: FrameId) {
        let key = self.keys.of(frame);
        let outermost = key.is_some_and(|k| self.on_path[k] == 0);
        if let Some(k) = key {
            self.on_path[k] += 1;
        }
        self.levels.push((key, outermost));
        self.sums.push();
    }

    fn leave(&mut self) {
        if let Some((key, outermost)) = self.levels.pop() {
            if let Some(k) = key {
                self.on_path[k] -= 1;
                if outermost {
                    self.inclusive.add(k, self.sums.innermost());
                }
            }
            self.sums.pop();
        }
    }

    fn stack(&mut self, _: usize, value: &[u64]) {
        if let Some(&(Some(leaf), _)) = self.levels.last() {
            self.exclusive.add(leaf, value);
        }
        self.sums.add(value);
    }
}

/// Exclusive (leaf frame) and inclusive (anywhere, once per stack) values
/// per key; `key` maps a frame to what is measured (None: not counted).
pub fn exclusive_inclusive<K: Hash + Eq + Copy + Sync>(
    view: &View,
    weights: &Weights,
    key: impl Fn(&Frame) -> Option<K>,
) -> HashMap<K, ExclInclValue> {
    let keys = FrameKeys::new(view, key);
    let width = weights.layout().width();
    let make = || KeySums {
        keys: &keys,
        exclusive: Sums::new(width, keys.keys.len()),
        inclusive: Sums::new(width, keys.keys.len()),
        on_path: vec![0; keys.keys.len()],
        levels: Vec::new(),
        sums: PathSums::new(width),
    };
    let KeySums {
        exclusive,
        inclusive,
        ..
    } = weights.walk_in_parts(view, make);
    // Only what some selected stack holds (every such stack has events).
    keys.keys
        .iter()
        .enumerate()
        .filter(|&(i, _)| !inclusive.is_zero(i))
        .map(|(i, &k)| {
            let value = ExclInclValue {
                exclusive: weights.value(exclusive.get(i)),
                inclusive: weights.value(inclusive.get(i)),
            };
            (k, value)
        })
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
    // Every build of an object is one row.
    let first_of_path = crate::matching::first_object_of_each_path(model);
    exclusive_inclusive(view, weights, |f| {
        Some(match f.pc.and_then(|pc| model.pc(pc).object) {
            Some(o) => ObjectKey::Object(first_of_path[o as usize]),
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
/// each stack, so recursion counts every event once (the manual's "How
/// Metrics Are Assigned to Program Structure": the recursive function is
/// its own caller for the deeper calls). From the one walk that makes
/// every function's picture ([`AllCallersCallees`], on two threads): a
/// walk per frame of every stack for one centre would take longer.
pub fn callers_callees(view: &View, weights: &Weights, center: FunctionId) -> CallersCallees {
    AllCallersCallees::new(view, weights).get(center)
}

/// [`callers_callees`] of every function on some selected stack (and
/// `<Total>`), in one pass over the stacks.
pub fn all_callers_callees(view: &View, weights: &Weights) -> HashMap<FunctionId, CallersCallees> {
    let all = AllCallersCallees::new(view, weights);
    all.values
        .keys()
        .map(|&center| (center, all.get(center)))
        .collect()
}

/// [`callers_callees`] of every function on some selected stack (and
/// `<Total>`) from one pass over the stacks: each centre's values, and its
/// callers and callees kept packed until [`AllCallersCallees::get`] asks
/// for them (as values, every (centre, caller) pair would hold a word for
/// every kind of data).
pub struct AllCallersCallees {
    layout: Layout,
    values: HashMap<FunctionId, ExclInclValue>,
    pairs: ListedPairs,
}

impl AllCallersCallees {
    pub fn new(view: &View, weights: &Weights) -> AllCallersCallees {
        let bound = view.function_bound();
        let width = weights.layout().width();
        let function_of: Vec<FunctionId> = view.frames.iter().map(|f| f.function).collect();
        let make = || PairWalk::new(&function_of, bound, width);
        let PairWalk {
            exclusive,
            inclusive,
            pairs,
            ..
        } = weights.walk_in_parts(view, make);
        let values = (0..bound as FunctionId)
            .filter(|&f| !inclusive.is_zero(f as usize))
            .map(|center| {
                let value = ExclInclValue {
                    exclusive: weights.value(exclusive.get(center as usize)),
                    inclusive: weights.value(inclusive.get(center as usize)),
                };
                (center, value)
            })
            .collect();
        AllCallersCallees {
            layout: weights.layout().clone(),
            values,
            pairs: pairs.listed(),
        }
    }

    /// Each centre's exclusive and inclusive values (its function
    /// metrics), moved out: [`AllCallersCallees::get`] leaves the value
    /// of its pictures empty after.
    pub fn take_values(&mut self) -> HashMap<FunctionId, ExclInclValue> {
        std::mem::take(&mut self.values)
    }

    /// The picture of `center` (empty for a function on no selected stack).
    pub fn get(&self, center: FunctionId) -> CallersCallees {
        CallersCallees {
            center,
            value: self.values.get(&center).copied().unwrap_or_default(),
            callers: sorted_by_value(self.pairs.callers(center, &self.layout)),
            callees: sorted_by_value(self.pairs.callees(center, &self.layout)),
        }
    }
}

/// A level of a [`PairWalk`]'s path that is no level.
const NO_LEVEL: u32 = u32::MAX;

/// Builds [`AllCallersCallees`] along the walk. A stack counts for each
/// function at its innermost frame with it. Per frame of the path: what
/// ended below it (`sums`), and of that what ended below the next deeper
/// frames of its function (`covered`: counted there). When a frame is
/// left, the rest is its function's: its inclusive value and what its
/// caller (the frame above; `<Total>` above the outermost) gave it. Its
/// callee's share is settled when each frame below it is left: what ended
/// below that frame less what its own deeper frames of the function
/// covered meanwhile (`covered_before` holds their cover when the frame
/// was entered). A stack that ends at a frame is that function's
/// exclusive value.
struct PairWalk<'a> {
    function_of: &'a [FunctionId],
    exclusive: Sums,
    inclusive: Sums,
    pairs: CallPairs,
    /// Per frame of the path: its function, and the next outer frame with
    /// the same function.
    levels: Vec<(FunctionId, u32)>,
    sums: PathSums,
    covered: PathSums,
    /// Per frame of the path: its caller's `covered` when it was entered.
    covered_before: PathSums,
    /// Per function: the innermost frame of the path with it.
    innermost: Vec<u32>,
    /// Room for the values [`PathVisitor::leave`] works out, made once:
    /// arrays of every word a value may have would be zeroed per frame.
    below: Vec<u64>,
    own: Vec<u64>,
    share: Vec<u64>,
}

impl<'a> PairWalk<'a> {
    /// A walk over `bound` functions' frames, whose values are `width`
    /// words.
    fn new(function_of: &'a [FunctionId], bound: usize, width: usize) -> PairWalk<'a> {
        PairWalk {
            function_of,
            exclusive: Sums::new(width, bound),
            inclusive: Sums::new(width, bound),
            pairs: CallPairs::new(bound, width),
            levels: Vec::new(),
            sums: PathSums::new(width),
            covered: PathSums::new(width),
            covered_before: PathSums::new(width),
            innermost: vec![NO_LEVEL; bound],
            below: vec![0; width],
            own: vec![0; width],
            share: vec![0; width],
        }
    }

    fn function(&self, frame: FrameId) -> FunctionId {
        self.function_of
            .get(frame as usize)
            .copied()
            .unwrap_or(UNKNOWN)
    }

    /// The function of the innermost frame's caller (`<Total>` for the
    /// outermost frame).
    fn caller(&self) -> FunctionId {
        self.levels.last().map_or(TOTAL, |&(function, _)| function)
    }
}

impl Absorb for PairWalk<'_> {
    fn absorb(&mut self, other: Self) {
        self.exclusive.add_all(&other.exclusive);
        self.inclusive.add_all(&other.inclusive);
        self.pairs.absorb(other.pairs);
    }
}

impl PathVisitor for PairWalk<'_> {
    fn enter(&mut self, frame: FrameId) {
        let function = self.function(frame);
        let depth = self.levels.len();
        // Its cell is added to when the frame is left: fetched meanwhile.
        self.pairs.prefetch(self.caller(), function);
        let outer = std::mem::replace(&mut self.innermost[function as usize], depth as u32);
        self.levels.push((function, outer));
        self.sums.push();
        self.covered.push();
        match depth {
            0 => self.covered_before.push(),
            _ => self.covered_before.push_value(self.covered.at(depth - 1)),
        }
    }

    fn leave(&mut self) {
        let Some((function, outer)) = self.levels.pop() else {
            return;
        };
        let (depth, caller) = (self.levels.len(), self.caller());
        let (below, own, share) = (&mut self.below, &mut self.own, &mut self.share);
        below.copy_from_slice(self.sums.innermost());
        // The deeper frames of this function covered theirs already.
        for ((own, b), c) in own.iter_mut().zip(&*below).zip(self.covered.innermost()) {
            *own = b - c;
        }
        self.inclusive.add(function as usize, own);
        if outer != NO_LEVEL {
            self.covered.add_at(outer as usize, below);
        }
        match depth {
            0 => share.copy_from_slice(below),
            _ => {
                // What ended below this frame is its caller's callee
                // share, but for what the caller's function's deeper
                // frames here covered.
                let parts = below
                    .iter()
                    .zip(self.covered.at(depth - 1))
                    .zip(self.covered_before.innermost());
                for (slot, ((b, now), before)) in share.iter_mut().zip(parts) {
                    *slot = b - (now - before);
                }
            }
        }
        self.pairs.add_soon(caller, function, own, share);
        self.innermost[function as usize] = outer;
        self.sums.pop();
        self.covered.drop_innermost();
        self.covered_before.drop_innermost();
    }

    fn stack(&mut self, _: usize, value: &[u64]) {
        self.inclusive.add(TOTAL as usize, value);
        if let Some(&(leaf, _)) = self.levels.last() {
            self.exclusive.add(leaf as usize, value);
        }
        self.sums.add(value);
    }
}

fn sorted_by_value(
    pairs: impl IntoIterator<Item = (FunctionId, Value)>,
) -> Vec<(FunctionId, Value)> {
    let mut list: Vec<_> = pairs.into_iter().collect();
    list.sort_by(|a, b| b.1.ns.cmp(&a.1.ns).then(a.0.cmp(&b.0)));
    list
}

/// Index of a node of a [`CallTree`].
pub type NodeId = u32;

/// The calling-context tree under `<Total>`, flat: node 0 is `<Total>`,
/// every node comes after its parent, and each node's values are packed
/// (a tree of millions of nodes holds only the words the data has).
#[derive(Debug, Clone)]
pub struct CallTree {
    layout: Layout,
    function: Vec<FunctionId>,
    /// Each node's inclusive value. Its exclusive value is what its
    /// children's inclusive values leave of it (not kept: most nodes have
    /// none).
    inclusive: Sums,
    /// Node n's children are `child_ids[child_start[n]..child_start[n + 1]]`.
    child_start: Vec<u32>,
    child_ids: Vec<NodeId>,
}

impl CallTree {
    pub const ROOT: NodeId = 0;

    /// Nodes, `<Total>` included.
    pub fn len(&self) -> usize {
        self.function.len()
    }

    pub fn is_empty(&self) -> bool {
        self.function.len() <= 1
    }

    pub fn function(&self, node: NodeId) -> FunctionId {
        self.function[node as usize]
    }

    pub fn value(&self, node: NodeId) -> ExclInclValue {
        let inclusive = self.inclusive.get(node as usize);
        let mut exclusive = inclusive.to_vec();
        for &child in self.children(node) {
            let below = self.inclusive.get(child as usize);
            for (word, child_word) in exclusive.iter_mut().zip(below) {
                *word = word.wrapping_sub(*child_word);
            }
        }
        ExclInclValue {
            exclusive: self.layout.unpack(&exclusive),
            inclusive: self.layout.unpack(inclusive),
        }
    }

    /// The node's children, in the order they were made.
    pub fn children(&self, node: NodeId) -> &[NodeId] {
        let (from, to) = (
            self.child_start[node as usize] as usize,
            self.child_start[node as usize + 1] as usize,
        );
        &self.child_ids[from..to]
    }

    /// The node's children by `key` of their inclusive values, largest
    /// first, ties by function id, into `out`. Sorted when asked, one node
    /// at a time: a listing shows a few nodes of a tree of millions.
    pub fn children_by(&self, node: NodeId, key: impl Fn(&Value) -> u64, out: &mut Vec<NodeId>) {
        out.clear();
        out.extend_from_slice(self.children(node));
        if out.len() > 1 {
            out.sort_by_cached_key(|&child| {
                let inclusive = self.layout.unpack(self.inclusive.get(child as usize));
                (std::cmp::Reverse(key(&inclusive)), self.function(child))
            });
        }
    }
}

/// The whole calling-context tree under `<Total>`, built along the walk on
/// two threads ([`Weights::walk_in_parts`]).
pub fn call_tree(view: &View, weights: &Weights) -> CallTree {
    let function_of: Vec<FunctionId> = view.frames.iter().map(|f| f.function).collect();
    // A node per position of the stacks' tree, unless frames are inlined.
    let room = view.stacks.positions() as usize + 3;
    let tree = weights.walk_in_parts(view, || TreeWalk::new(&function_of, room));
    let TreeWalk {
        function,
        parent_of,
        ends,
        children,
        ..
    } = tree;
    // Freed before the values are made: the peak holds one or the other.
    drop(children);
    let mut inclusive = Sums::new(weights.layout().width(), function.len());
    // Fresh memory (98 MB for 3.2 million nodes of heap values): faulted in
    // on another thread while the child lists are made and the values
    // added, ahead of them.
    let populating = populate_in_background(vec![inclusive.region()], 16 << 20);
    // The child lists and the values need only `parent_of`: made side by
    // side, for a tree of stacks enough to be worth a second thread.
    let alone = ends.len() < SPLIT_WALK_FROM;
    let mut add_values = || {
        // The stacks' sums are read in walk order, not slot order: each is
        // fetched a few stacks ahead.
        for (i, &(node, slot)) in ends.iter().enumerate() {
            if let Some(&(_, ahead)) = ends.get(i + PREFETCH_AHEAD) {
                weights.sums.prefetch(ahead as usize);
            }
            inclusive.add(node as usize, weights.sums.get(slot as usize));
        }
        // A node's inclusive value is what ends in it and in its
        // descendants: summed from the last node back (children come after
        // their parents).
        for id in (1..function.len()).rev() {
            inclusive.add_within(parent_of[id] as usize, id);
        }
    };
    let (child_start, child_ids) = match alone {
        true => {
            add_values();
            child_lists(&parent_of)
        }
        false => on_two_threads(add_values, || child_lists(&parent_of)).1,
    };
    drop(populating);
    CallTree {
        layout: weights.layout().clone(),
        function,
        inclusive,
        child_start,
        child_ids,
    }
}

/// Builds [`call_tree`] along the walk: a node per frame entered below
/// its caller's node (found again by function), and each stack's node (of
/// its leaf). No values: a tree of millions of nodes would take a value
/// for each, where only the stacks' nodes have one of their own.
struct TreeWalk<'a> {
    function_of: &'a [FunctionId],
    function: Vec<FunctionId>,
    parent_of: Vec<u32>,
    /// Each stack walked: its node, and its slot in the walk's sums.
    ends: Vec<(u32, u32)>,
    /// Children by parent and function: one lookup per frame entered.
    children: Children,
    /// The nodes of the path's frames, `<Total>` first.
    path: Vec<u32>,
}

impl<'a> TreeWalk<'a> {
    /// A tree of `<Total>` alone, with room to grow in place to `room`
    /// nodes.
    fn new(function_of: &'a [FunctionId], room: usize) -> TreeWalk<'a> {
        TreeWalk {
            function_of,
            function: vec_with_room(TOTAL, 1, room),
            parent_of: vec_with_room(0, 1, room),
            ends: Vec::new(),
            children: Children::with_room(room),
            path: vec![0],
        }
    }

    /// The child of `parent` for `function`, made if new.
    fn child(&mut self, parent: u32, function: FunctionId) -> u32 {
        if let Some(node) = self.children.get(parent, function) {
            return node;
        }
        let node = self.push(parent, function);
        self.children.insert(parent, function, node);
        node
    }

    /// A new node, not yet among its parent's children.
    fn push(&mut self, parent: u32, function: FunctionId) -> u32 {
        self.function.push(function);
        self.parent_of.push(parent);
        self.function.len() as u32 - 1
    }
}

impl Absorb for TreeWalk<'_> {
    /// Adds `other`'s tree, node by node in its order (parents first):
    /// a node under one both trees have is looked up, a node under one
    /// only `other` has is new here too, with no lookup. Two threads' trees
    /// share little more than the outer paths of the runs they walked.
    fn absorb(&mut self, other: Self) {
        let shared = self.function.len() as u32;
        let mut here = vec![0u32; other.function.len()];
        for node in 1..other.function.len() {
            let (parent, function) = (here[other.parent_of[node] as usize], other.function[node]);
            here[node] = match parent < shared {
                true => self.child(parent, function),
                false => self.push(parent, function),
            };
        }
        let ends = other
            .ends
            .iter()
            .map(|&(node, slot)| (here[node as usize], slot));
        self.ends.extend(ends);
    }
}

impl PathVisitor for TreeWalk<'_> {
    fn enter(&mut self, frame: FrameId) {
        let f = self
            .function_of
            .get(frame as usize)
            .copied()
            .unwrap_or(UNKNOWN);
        let parent = self.path[self.path.len() - 1];
        let node = self.child(parent, f);
        self.path.push(node);
    }

    fn leave(&mut self) {
        self.path.pop();
    }

    fn stack(&mut self, slot: usize, _: &[u64]) {
        self.ends
            .push((self.path[self.path.len() - 1], slot as u32));
    }
}

/// Each node's children, as offsets into one list (nodes after node 0
/// are children of their `parent_of`).
fn child_lists(parent_of: &[u32]) -> (Vec<u32>, Vec<NodeId>) {
    // Counts, then each node's end; children are placed from there down,
    // which leaves each node's start.
    let mut child_start = vec![0u32; parent_of.len() + 1];
    for &parent in &parent_of[1..] {
        child_start[parent as usize] += 1;
    }
    let mut end = 0;
    for start in child_start.iter_mut() {
        end += *start;
        *start = end;
    }
    let mut child_ids = vec![0; parent_of.len().saturating_sub(1)];
    for (id, &parent) in parent_of.iter().enumerate().skip(1).rev() {
        child_start[parent as usize] -= 1;
        child_ids[child_start[parent as usize] as usize] = id as NodeId;
    }
    (child_start, child_ids)
}

mod call_pairs;
#[cfg(test)]
mod tests;
