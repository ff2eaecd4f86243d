//! The analyzer's in-memory picture of one or more experiments: every
//! recorded PC symbolized once, every distinct stack stored once, and the
//! events as small records pointing at them. Metrics are computed from this
//! (see `metrics`); nothing here depends on the view settings.

use experiment::counters::CounterSpec;
use experiment::layout::StackStatus;
use experiment::log::{LogEvent, Sample, StartInfo};
use std::path::PathBuf;
use std::sync::Arc;

pub type ObjectId = u32;
pub type FunctionId = u32;
pub type LineId = u32;
pub type PcId = u32;
pub type StackId = u32;

/// Functions every model has, at fixed ids.
pub const TOTAL: FunctionId = 0;
pub const UNKNOWN: FunctionId = 1;
pub const TRUNCATED: FunctionId = 2;

pub const TOTAL_NAME: &str = "<Total>";
pub const UNKNOWN_NAME: &str = "<Unknown>";
pub const TRUNCATED_NAME: &str = "<Truncated-stack>";

/// A load object as recorded (`object` log lines of any experiment).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectEntry {
    /// The path the process had mapped.
    pub path: PathBuf,
    /// The file read for symbols (the recorded path, or the archive's copy).
    pub symbols_from: Option<PathBuf>,
    /// The pseudo-function that stands for the whole object when it is hidden.
    pub hidden_function: FunctionId,
}

impl ObjectEntry {
    /// The basename, as er_print shows objects.
    pub fn name(&self) -> String {
        self.path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| self.path.to_string_lossy().into_owned())
    }

    /// The collector's own library: its frames (wrappers, a created
    /// thread's start) are not the program's.
    pub fn is_collector(&self) -> bool {
        self.name().starts_with("libcollector")
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FunctionKind {
    /// An out-of-line function (DWARF subprogram or ELF symbol).
    Normal,
    /// A function that exists (here) only inlined into others.
    Inlined,
    /// `<static>@0x...`: code of a stripped object with no symbol.
    Static,
    /// `@plt`: PLT code of an object seen below the leaf.
    Plt,
    /// `<Total>`, `<Unknown>`, `<Truncated-stack>`, `<libname>` of a hidden object.
    Special,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FunctionEntry {
    /// Demangled, with parameters for C++.
    pub name: String,
    /// The linkage (mangled) name; equal to `name` for C.
    pub linkage_name: String,
    pub object: Option<ObjectId>,
    /// Link-time address of the first instruction (0 when unknown).
    pub address: u64,
    pub size: u64,
    pub kind: FunctionKind,
    /// Other names of the same code (ELF aliases), sorted.
    pub aliases: Vec<String>,
    /// The source file of its definition, when DWARF says.
    pub source: Option<PathBuf>,
    /// The line of its definition in `source` (DW_AT_decl_line).
    pub source_line: Option<u32>,
}

impl FunctionEntry {
    /// A function known by its name alone, not from a symbol table
    /// (`<Total>`, a hidden object's `<name>`, `@plt`, an inlined
    /// function): no size, aliases or source.
    pub(crate) fn named(
        name: String,
        object: Option<ObjectId>,
        kind: FunctionKind,
        address: u64,
    ) -> FunctionEntry {
        FunctionEntry {
            linkage_name: name.clone(),
            name,
            object,
            address,
            size: 0,
            kind,
            aliases: Vec::new(),
            source: None,
            source_line: None,
        }
    }
}

/// A source line.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LineEntry {
    /// The file as DWARF names it (relative to the compilation directory when inside it).
    pub file: PathBuf,
    /// Absolute, for reading the source.
    pub full_path: PathBuf,
    pub line: u32,
}

/// One frame of an inline chain at a PC.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InlineStep {
    pub function: FunctionId,
    /// Where execution is in this function (the call site of the next inner one).
    pub line: Option<LineId>,
}

/// One distinct recorded PC, symbolized.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PcEntry {
    pub object: Option<ObjectId>,
    /// The address looked up: the interrupted PC for a leaf, the return
    /// address minus one (inside the call instruction) for a caller.
    pub address: u64,
    /// `address` relative to the object's link-time addresses.
    pub offset: u64,
    /// The out-of-line function.
    pub function: FunctionId,
    /// The line in `function` (the call site of inlined code).
    pub line: Option<LineId>,
    /// Inlined functions at this PC, innermost first (empty when none).
    pub inlined: Vec<InlineStep>,
    /// In a PLT stub.
    pub plt: bool,
}

/// A distinct stack, with the status the unwinder gave it: a place in
/// the [`StackTable`]'s calling-context tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StackRef<'a> {
    table: &'a StackTable,
    position: u32,
    pub status: StackStatus,
}

impl<'a> StackRef<'a> {
    /// The PCs, leaf first (found by walking up the tree: as long as the
    /// stack is deep).
    pub fn pcs(&self) -> impl Iterator<Item = PcId> + 'a {
        let table = self.table;
        let mut at = self.position;
        std::iter::from_fn(move || {
            let pc = table.pc_at(at)?;
            at = table.parent(at);
            Some(pc)
        })
    }
}

/// One stack: where its innermost frame is, and its status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct StackEntry {
    position: u32,
    status: StackStatus,
}

/// Every distinct stack, as a path in one calling-context tree of PCs
/// stored as runs in a flat vector of cells: a run holds frames from the
/// outermost one it adds toward the leaf, each the parent of the next,
/// and starts with a link to the parent of its first frame (unless that
/// is the cell before). A stack is the position of its innermost frame.
/// The loader adds a run per recorded stack for the frames it does not
/// share with the stack recorded before it (neighbouring records share
/// most of their outer frames: a million stacks 200 frames deep are a few
/// million cells, not two hundred million). A context recorded apart
/// again may be stored twice; every stack still has its own frames. Ids
/// need not follow positions: the loader numbers stacks in the order
/// events first use them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StackTable {
    cells: Vec<u32>,
    stacks: Vec<StackEntry>,
}

/// The position of the empty stack, the tree's root.
pub(crate) const ROOT_POSITION: u32 = 0;
/// A cell that links a run to the parent of its first frame: the rest of
/// the cell is the parent's position.
pub(crate) const LINK: u32 = 1 << 31;
/// A frame cell the loader has made a model PC (the rest of the cell):
/// while it loads, a frame cell is the recorded PC's slot until an event
/// uses a stack through it.
pub(crate) const TRANSLATED: u32 = 1 << 30;
const VALUE: u32 = TRANSLATED - 1;

impl Default for StackTable {
    fn default() -> StackTable {
        StackTable {
            // The root: a link cell to itself, so that a run right after
            // it needs no link of its own.
            cells: vec![LINK | ROOT_POSITION],
            stacks: Vec::new(),
        }
    }
}

impl StackTable {
    pub fn len(&self) -> usize {
        self.stacks.len()
    }

    pub fn is_empty(&self) -> bool {
        self.stacks.is_empty()
    }

    /// Adds a stack (`pcs` leaf first) after the others, as a run of its
    /// own; its id.
    pub fn push(&mut self, pcs: &[PcId], status: StackStatus) -> StackId {
        let mut position = ROOT_POSITION;
        for &pc in pcs.iter().rev() {
            position = self.push_frame(position, TRANSLATED | pc);
        }
        self.push_stack(position, status)
    }

    /// The stack `id`; None for `NO_STACK` or an id out of range.
    pub fn get(&self, id: StackId) -> Option<StackRef<'_>> {
        let entry = self.stacks.get(id as usize)?;
        Some(StackRef {
            table: self,
            position: entry.position,
            status: entry.status,
        })
    }

    /// Starts fetching stack `id`'s entry (for a `get` soon).
    pub(crate) fn prefetch(&self, id: StackId) {
        if let Some(entry) = self.stacks.get(id as usize) {
            crate::memory::prefetch_one(entry);
        }
    }

    /// Every stack id, in the order of their positions: the order the
    /// stacks were recorded in, where neighbours share most of their
    /// frames (see [`PathWalk`]).
    pub fn ids_in_walk_order(&self) -> Vec<StackId> {
        self.ids_in_walk_order_within(0..self.positions())
    }

    /// The stacks whose innermost frames lie in `positions`, in walk
    /// order: a part of the walk, for walks cut in parts (positions go up
    /// to [`StackTable::positions`]).
    pub(crate) fn ids_in_walk_order_within(&self, positions: std::ops::Range<u32>) -> Vec<StackId> {
        // Sorted as (position, id) pairs: no lookup per comparison, and
        // no sort at all when ids already follow positions (stacks read
        // in the order they were recorded).
        let mut pairs: Vec<u64> = (self.stacks.iter().enumerate())
            .filter(|(_, stack)| positions.contains(&stack.position))
            .map(|(id, stack)| u64::from(stack.position) << 32 | id as u64)
            .collect();
        if !pairs.is_sorted() {
            pairs.sort_unstable();
        }
        pairs.into_iter().map(|pair| pair as StackId).collect()
    }

    /// The end of the stacks' positions.
    pub(crate) fn positions(&self) -> u32 {
        self.cells.len() as u32
    }

    /// The model PC of the frame at `position`; None at the root.
    pub(crate) fn pc_at(&self, position: u32) -> Option<PcId> {
        match position {
            ROOT_POSITION => None,
            at => self.cells.get(at as usize).map(|&cell| cell & VALUE),
        }
    }

    /// The position of the frame that calls the one at `position` (the
    /// root for an outermost frame, and for the root).
    pub(crate) fn parent(&self, position: u32) -> u32 {
        let Some(before) = position.checked_sub(1) else {
            return ROOT_POSITION;
        };
        match self.cells.get(before as usize) {
            Some(&cell) if cell & LINK != 0 => cell & !LINK,
            Some(_) => before,
            None => ROOT_POSITION,
        }
    }

    /// Appends a frame cell under `parent` (with a link first unless the
    /// last cell is its parent already); its position.
    pub(crate) fn push_frame(&mut self, parent: u32, cell: u32) -> u32 {
        let next = self.cells.len() as u32;
        if self.parent(next) != parent {
            self.cells.push(LINK | parent);
        }
        self.cells.push(cell);
        self.cells.len() as u32 - 1
    }

    /// Appends frame cells, each the parent of the next, the first under
    /// `parent`; the position of the first (where it would be, if none).
    pub(crate) fn push_run(&mut self, parent: u32, cells: impl Iterator<Item = u32>) -> u32 {
        let next = self.cells.len() as u32;
        let mut cells = cells.peekable();
        if cells.peek().is_none() {
            return next;
        }
        let first = match self.parent(next) == parent {
            true => next,
            false => {
                self.cells.push(LINK | parent);
                next + 1
            }
        };
        self.cells.extend(cells);
        first
    }

    /// The cells, for the loader to write recorded frames in and make
    /// them model PCs in place.
    pub(crate) fn cells_mut(&mut self) -> &mut Vec<u32> {
        &mut self.cells
    }

    pub(crate) fn cells(&self) -> &[u32] {
        &self.cells
    }

    /// Which of `pcs` model PCs some stack holds, by PC id: a stack's
    /// frames are all model PCs, and every model PC in a cell is a frame
    /// of some stack (a recorded frame no event used is not one yet).
    pub(crate) fn pcs_in_stacks(&self, pcs: usize) -> Vec<bool> {
        let mut held = vec![false; pcs];
        for &cell in &self.cells {
            if cell & LINK == 0 && cell & TRANSLATED != 0 {
                if let Some(pc) = held.get_mut((cell & VALUE) as usize) {
                    *pc = true;
                }
            }
        }
        held
    }

    /// Makes the frame at `position` (written already) the innermost one
    /// of the next stack.
    pub(crate) fn push_stack(&mut self, position: u32, status: StackStatus) -> StackId {
        let id = self.stacks.len() as StackId;
        self.stacks.push(StackEntry { position, status });
        id
    }
}

/// A walk over stacks that keeps the path of the stack walked last: each
/// stack is told as the number of outer frames it keeps of that path and
/// the frames it adds below them (outermost first), so that what is made
/// of a path (frames as shown, call-tree nodes, listing groups) is made
/// once for the frames neighbours share. In walk order
/// ([`StackTable::ids_in_walk_order`]), a stack adds the few frames it
/// does not share with the one before: the walk costs the tree's cells,
/// not the stacks' frames.
pub(crate) struct PathWalk<'a> {
    table: &'a StackTable,
    /// Positions of the path's frames from the outermost; they rise
    /// (a run's frames come after their parents).
    path: Vec<u32>,
    added: Vec<u32>,
    added_pcs: Vec<PcId>,
}

/// One stack of a [`PathWalk`].
pub(crate) struct PathStep<'w> {
    pub status: StackStatus,
    /// Outer frames of the previous path kept.
    pub kept: usize,
    /// PCs added below them, outermost first.
    pub added: &'w [PcId],
}

impl<'a> PathWalk<'a> {
    pub(crate) fn new(table: &'a StackTable) -> PathWalk<'a> {
        PathWalk {
            table,
            path: Vec::new(),
            added: Vec::new(),
            added_pcs: Vec::new(),
        }
    }

    /// Moves to stack `id`; None for an id that is no stack.
    pub(crate) fn step(&mut self, id: StackId) -> Option<PathStep<'_>> {
        let stack = self.table.stacks.get(id as usize)?;
        self.added.clear();
        let mut at = stack.position;
        // Up from the stack's frame until a frame of the path: positions
        // fall on the way up and rise along the path, so one scan down
        // the path meets it.
        let mut level = self.path.len();
        let kept = loop {
            if at == ROOT_POSITION {
                break 0;
            }
            while level > 0 && self.path[level - 1] > at {
                level -= 1;
            }
            if level > 0 && self.path[level - 1] == at {
                break level;
            }
            self.added.push(at);
            at = self.table.parent(at);
        };
        self.path.truncate(kept);
        self.path.extend(self.added.iter().rev());
        self.added_pcs.clear();
        let table = self.table;
        let pcs = self.added.iter().rev().filter_map(|&at| table.pc_at(at));
        self.added_pcs.extend(pcs);
        Some(PathStep {
            status: stack.status,
            kept,
            added: &self.added_pcs,
        })
    }
}

/// One clock event. Kept small (32 bytes): a model may hold tens of
/// millions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventEntry {
    pub experiment: u16,
    /// 0xffff when unknown.
    pub cpu: u16,
    /// dbx's thread number within its experiment, from 1 (its tid:
    /// `Model::tid`).
    pub thread: u32,
    /// Nanoseconds since the earliest experiment start of the model.
    pub time_ns: u64,
    pub weight_ns: u32,
    /// Index into `Model::stacks`; `NO_STACK` when the stack record was lost.
    pub stack: StackId,
    /// The sample (of its experiment) the event falls in, from 1.
    pub sample: u32,
    /// The clock events this entry stands for: 1, or (when the loader
    /// merged events, `Model::events_merged`) every event of its
    /// experiment, thread, CPU, sample and stack, `weight_ns` their sum
    /// and `time_ns` the first one's.
    pub count: u32,
}

pub const NO_STACK: StackId = StackId::MAX;

impl EventEntry {
    /// A traced call (a wait, an allocation) as an event with no weight
    /// and no CPU, for the selections and filters written for events.
    fn traced(experiment: u16, thread: u32, time_ns: u64, stack: StackId, sample: u32) -> Self {
        EventEntry {
            experiment,
            cpu: experiment::layout::CPU_UNKNOWN,
            thread,
            time_ns,
            weight_ns: 0,
            stack,
            sample,
            count: 1,
        }
    }
}

/// One allocation of heap tracing (the malloc family; mappings are not
/// heap blocks): what the heap metrics count (the manual's "Heap Tracing
/// Data": Allocations, Bytes Allocated, Leaks, Bytes Leaked). Kept small:
/// a model may hold tens of millions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeapEntry {
    pub experiment: u16,
    /// Not freed when the experiment ends: a leak (at a stop of a live
    /// program, a block not freed yet).
    pub leaked: bool,
    /// dbx's thread number within its experiment, as for clock events.
    pub thread: u32,
    /// Nanoseconds since the earliest experiment start of the model.
    pub time_ns: u64,
    /// Bytes asked for.
    pub bytes: u64,
    /// The allocation's stack; `NO_STACK` when its record was lost.
    pub stack: StackId,
    /// The sample (of its experiment) the allocation falls in, from 1.
    pub sample: u32,
}

const _: () = assert!(std::mem::size_of::<HeapEntry>() == 32);

/// What replaying one experiment's heap events in order found beside its
/// allocations (`HeapEntry`): the frees and the most bytes in use at once,
/// for the `heap` command's totals. One per experiment that traced the
/// heap, even one with no event.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HeapReplay {
    pub experiment: u16,
    /// Frees of a block (free(NULL) is none).
    pub frees: u64,
    /// Frees of blocks no traced allocation made (allocated before tracing
    /// started, or by a call that was not recorded).
    pub unknown_frees: u64,
    /// The most bytes of the malloc family in use at once.
    pub peak_bytes: u64,
    /// When that was first reached: CLOCK_MONOTONIC, as recorded (not
    /// relative to the model's origin).
    pub peak_at_ns: u64,
}

/// One traced synchronization wait (the manual's "Synchronization Wait
/// Tracing Data": Sync Wait Time, Sync Wait Count).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SyncEntry {
    pub experiment: u16,
    pub op: experiment::sync::SyncOp,
    /// dbx's thread number within its experiment, as for clock events.
    pub thread: u32,
    /// When the wait began: nanoseconds since the earliest experiment start
    /// of the model.
    pub time_ns: u64,
    pub wait_ns: u64,
    /// The lock, condition variable, semaphore or barrier (the thread, for
    /// a join).
    pub object: u64,
    /// The wait's stack; `NO_STACK` when its record was lost.
    pub stack: StackId,
    /// The sample (of its experiment) the wait began in, from 1.
    pub sample: u32,
}

/// One traced I/O call (gprofng's I/O tracing: Read and Write Bytes and
/// Counts, Other I/O Count, I/O Time).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IoEntry {
    pub experiment: u16,
    pub op: experiment::io::IoOp,
    pub failed: bool,
    /// dbx's thread number within its experiment, as for clock events.
    pub thread: u32,
    /// When the call began: nanoseconds since the earliest experiment
    /// start of the model.
    pub time_ns: u64,
    /// Wall time of the call.
    pub call_ns: u64,
    /// Bytes read or written.
    pub bytes: u64,
    /// The descriptor as the program knew it.
    pub fd: i32,
    /// Index into `Model::io_files`: the opening of a file the call used
    /// (a transfer's destination).
    pub file: u32,
    /// A transfer's source (sendfile, copy_file_range: what it read);
    /// `NO_FILE` for the other calls.
    pub source: u32,
    /// The call's stack; `NO_STACK` when its record was lost.
    pub stack: StackId,
    /// The sample (of its experiment) the call began in, from 1.
    pub sample: u32,
}

impl IoEntry {
    /// The bytes the call read and wrote, when it is a read, a write, or
    /// both (a transfer reads its source and writes its destination).
    pub fn read_and_written(&self) -> (Option<u64>, Option<u64>) {
        use experiment::io::IoOp;
        match self.op {
            IoOp::Read => (Some(self.bytes), None),
            IoOp::Write => (None, Some(self.bytes)),
            IoOp::Transfer => (Some(self.bytes), Some(self.bytes)),
            _ => (None, None),
        }
    }
}

/// `IoEntry::source` of a call that is no transfer.
pub const NO_FILE: u32 = u32::MAX;

/// One opening of a file: from the call that made its descriptor (open,
/// dup, or the first call on a descriptor opened before tracing) to the
/// close of that descriptor: gprofng's "virtual file descriptor".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IoFile {
    pub experiment: u16,
    /// The path as the program gave it, or `<stdin>`, `<stdout>`,
    /// `<stderr>`, `<fd N>` for a descriptor opened before tracing.
    pub name: String,
    pub fd: i32,
    /// Nanoseconds since the model's origin of the open (or first use)
    /// and of the close (None: never closed while traced).
    pub opened_ns: u64,
    pub closed_ns: Option<u64>,
}

/// One traced MPI call, or one receive a call of the wait and test families
/// completed (the manual's MPI tracing: MPI Time, Sends, Bytes Sent,
/// Receives, Bytes Received, Other MPI Calls).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MpiEntry {
    pub experiment: u16,
    pub op: experiment::mpi::MpiOp,
    /// A completion: the bytes of a nonblocking receive, no time, no call.
    pub completion: bool,
    /// dbx's thread number within its experiment, as for clock events.
    pub thread: u32,
    /// When the call began: nanoseconds since the earliest experiment
    /// start of the model.
    pub time_ns: u64,
    /// Wall time of the call.
    pub call_ns: u64,
    /// World ranks the data went to and came from (`experiment::mpi`'s
    /// special values below 0).
    pub dest: i32,
    pub source: i32,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    pub sends: u32,
    pub receives: u32,
    /// The call's stack; `NO_STACK` when its record was lost.
    pub stack: StackId,
    /// The sample (of its experiment) the call began in, from 1.
    pub sample: u32,
}

/// One switch off the CPU: where the thread was and for how long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OffCpuEntry {
    pub experiment: u16,
    /// dbx's thread number within its experiment, as for clock events.
    pub thread: u32,
    /// When the thread was switched out: nanoseconds since the earliest
    /// experiment start of the model.
    pub time_ns: u64,
    pub off_ns: u64,
    pub stack: StackId,
    /// The sample (of its experiment) the switch fell in, from 1.
    pub sample: u32,
}

/// One counter overflow record (or several merged: `count` covers them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CounterEntry {
    pub experiment: u16,
    /// Index into `Model::counters`.
    pub counter: u8,
    /// `experiment::counters::FLAG_*`: whether `data_addr`, `frame` and
    /// `frame_cfa` are set, and whether `count` was scaled.
    pub flags: u16,
    /// The stack frame holding `data_addr` (leaf = 0), with `FLAG_IN_FRAME`.
    pub frame: u16,
    /// dbx's thread number within its experiment, as for clock events.
    pub thread: u32,
    /// When the thread was interrupted: nanoseconds since the earliest
    /// experiment start of the model.
    pub time_ns: u64,
    /// Events counted since the thread's previous record of this counter.
    pub count: u64,
    /// The event's data address, with `FLAG_DATA_ADDRESS`.
    pub data_addr: u64,
    /// The CFA of frame `frame`, with `FLAG_IN_FRAME`.
    pub frame_cfa: u64,
    /// The stack record's id in its experiment's `stacks` file: `frame`
    /// counts the frames recorded there (the model's stack leaves some
    /// out), where the data views find the frame's function.
    pub stack_record: u64,
    pub stack: StackId,
    /// The sample (of its experiment) the record fell in, from 1.
    pub sample: u32,
}

/// What a counter counts toward: CPI and IPC are made of a cycles counter
/// and an instructions counter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CounterRole {
    Cycles,
    Instructions,
}

impl CounterRole {
    /// The role of a counter opened as `spec`: perf's generic hardware
    /// events CPU cycles (type 0, config 0) and instructions (config 1).
    /// Hybrid CPUs name their PMU in the config's high 32 bits.
    pub fn of(spec: &CounterSpec) -> Option<CounterRole> {
        const PERF_TYPE_HARDWARE: u32 = 0;
        if spec.kind != PERF_TYPE_HARDWARE {
            return None;
        }
        match spec.config & 0xffff_ffff {
            0 => Some(CounterRole::Cycles),
            1 => Some(CounterRole::Instructions),
            _ => None,
        }
    }
}

/// A counter of the loaded experiments: one per name, whichever
/// experiments recorded it.
#[derive(Debug, Clone)]
pub struct CounterInfo {
    /// Its metric, resolved to its index in `Model::counters`.
    pub metric: commands::Counter,
    /// What was opened (as the first experiment that has it says).
    pub spec: CounterSpec,
    /// Set on the first cycles counter and the first instructions counter
    /// only: those make CPI and IPC.
    pub role: Option<CounterRole>,
    /// Some record's count was scaled for multiplexing.
    pub scaled: bool,
}

impl CounterInfo {
    pub fn name(&self) -> &str {
        &self.spec.name
    }
}

/// A counter as one experiment's log names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExperimentCounter {
    /// The records' `counter` field.
    pub index: u16,
    pub spec: CounterSpec,
    /// Its index in `Model::counters`; None when the model had no room
    /// left (more than `MAX_COUNTERS` names across the experiments).
    pub slot: Option<u8>,
    /// Some record's count was scaled for multiplexing.
    pub scaled: bool,
}

/// `as_event` for the traced calls (waits, allocations, I/O calls,
/// switches off the CPU, counter overflows): the call as a clock event
/// with no weight and no CPU, for the selections and filters written for
/// events.
macro_rules! traced_as_event {
    ($($entry:ty),*) => {$(
        impl $entry {
            pub fn as_event(&self) -> EventEntry {
                EventEntry::traced(self.experiment, self.thread, self.time_ns, self.stack, self.sample)
            }
        }
    )*};
}

traced_as_event!(
    SyncEntry,
    HeapEntry,
    IoEntry,
    OffCpuEntry,
    CounterEntry,
    MpiEntry
);

const _: () = assert!(std::mem::size_of::<EventEntry>() == 32);

/// A thread of one experiment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadEntry {
    /// dbx's number (`t@N`): 1 for the process's first thread, then in
    /// order of creation, as the debugger's `threads` shows it.
    pub number: u32,
    pub tid: u32,
    /// The collector's own thread (the watcher of a live start): the
    /// debugger lists it, it has no events.
    pub collector: bool,
    /// The thread's `pthread_t` (what a join of it names) when its
    /// `thread-start` line gives it, and when that line was written
    /// (nanoseconds since the model's origin): a `pthread_t` is reused
    /// once its thread has been joined.
    pub pthread: Option<(u64, u64)>,
}

/// What the analyzer keeps of one experiment directory.
#[derive(Debug, Clone)]
pub struct ExperimentEntry {
    pub path: PathBuf,
    /// The founder experiment it belongs to (itself, for a founder): its
    /// archives hold the copies of the load objects.
    pub founder: PathBuf,
    pub start: Option<StartInfo>,
    /// CLOCK_MONOTONIC of the `start` line (or of the first log line).
    pub start_ns: u64,
    /// CLOCK_MONOTONIC of the last thing recorded.
    pub end_ns: u64,
    pub samples: Vec<Sample>,
    pub threads: Vec<ThreadEntry>,
    pub log: Vec<LogEvent>,
    pub notes: Option<String>,
    /// The collector closed it (`end` line).
    pub ended: bool,
    pub format_version: String,
    /// The counters of counter overflow profiling, in index order.
    pub counters: Vec<ExperimentCounter>,
}

/// Everything the reports are computed from.
#[derive(Debug, Clone, Default)]
pub struct Model {
    pub experiments: Vec<ExperimentEntry>,
    pub objects: Vec<ObjectEntry>,
    pub functions: Vec<FunctionEntry>,
    pub lines: Vec<LineEntry>,
    pub pcs: Vec<PcEntry>,
    /// Shared with the views made of the model (see `metrics::View`).
    pub stacks: Arc<StackTable>,
    pub events: Vec<EventEntry>,
    /// Heap-tracing allocations, in order of their experiments and then
    /// of their order numbers.
    pub heap: Vec<HeapEntry>,
    /// The frees and peaks of the experiments that traced the heap, in
    /// order of their experiments.
    pub heap_replays: Vec<HeapReplay>,
    /// Traced synchronization waits, in order of their experiments.
    pub sync: Vec<SyncEntry>,
    /// The names symbols give the waits' objects, by experiment and address.
    pub sync_names: std::collections::HashMap<(u16, u64), String>,
    /// Traced I/O calls, in order of their experiments, then of their start.
    pub io: Vec<IoEntry>,
    /// The openings of files the I/O calls used.
    pub io_files: Vec<IoFile>,
    /// Switches off the CPU, in order of their experiments.
    pub offcpu: Vec<OffCpuEntry>,
    /// The counters of counter overflow profiling, at most
    /// `experiment::counters::MAX_COUNTERS`.
    pub counters: Vec<CounterInfo>,
    /// Counter overflow records, in order of their experiments.
    pub counter_events: Vec<CounterEntry>,
    /// Traced MPI calls and completions, in order of their experiments.
    pub mpi: Vec<MpiEntry>,
    /// Where a function starts in the other builds of its object (the
    /// function's own `address` is its first build's), by (that build's
    /// object, function): an instruction is named by its offset in the
    /// function as that build laid it out.
    pub starts_in_other_builds: std::collections::HashMap<(ObjectId, FunctionId), u64>,
    /// Problems met while loading (shown once, never fatal).
    pub warnings: Vec<String>,
    /// CLOCK_MONOTONIC of the earliest experiment start (time 0 of filters).
    pub origin_ns: u64,
    /// Clock events of one experiment, thread, CPU, sample and stack were
    /// merged into one entry (see `EventEntry::count`): exact for every
    /// selection but a filter on time, which needs each event's.
    pub events_merged: bool,
}

impl ExperimentEntry {
    /// The process's rank in MPI_COMM_WORLD, when its log says (MPI tracing).
    pub fn mpi_rank(&self) -> Option<u32> {
        experiment::log::mpi_place(&self.log).map(|(rank, _)| rank)
    }

    /// The machine the process ran on, when its start line says.
    pub fn host(&self) -> Option<&str> {
        self.start.as_ref()?.host.as_deref()
    }
}

impl Model {
    pub fn function(&self, id: FunctionId) -> &FunctionEntry {
        &self.functions[id as usize]
    }

    pub fn object(&self, id: ObjectId) -> &ObjectEntry {
        &self.objects[id as usize]
    }

    pub fn line(&self, id: LineId) -> &LineEntry {
        &self.lines[id as usize]
    }

    pub fn pc(&self, id: PcId) -> &PcEntry {
        &self.pcs[id as usize]
    }

    /// The counter that plays `role`, if one was recorded.
    pub fn counter_with(&self, role: CounterRole) -> Option<&CounterInfo> {
        self.counters.iter().find(|c| c.role == Some(role))
    }

    /// Whether CPI and IPC can be computed: a cycles counter and an
    /// instructions counter were recorded.
    pub fn has_cycles_and_instructions(&self) -> bool {
        self.counter_with(CounterRole::Cycles).is_some()
            && self.counter_with(CounterRole::Instructions).is_some()
    }

    /// Where function `id` starts in the build `object` (its own
    /// `address` in its first build).
    pub fn function_start(&self, id: FunctionId, object: Option<ObjectId>) -> u64 {
        let f = self.function(id);
        match object {
            Some(o) if Some(o) != f.object => self
                .starts_in_other_builds
                .get(&(o, id))
                .copied()
                .unwrap_or(f.address),
            _ => f.address,
        }
    }

    /// The kernel thread id of `event`'s thread.
    pub fn tid(&self, event: &EventEntry) -> u32 {
        let Some(experiment) = self.experiments.get(usize::from(event.experiment)) else {
            return 0;
        };
        // Sorted by number; numbers may have gaps (threads that ended
        // before collection, or were never profiled).
        let threads = &experiment.threads;
        threads
            .binary_search_by_key(&event.thread, |t| t.number)
            .map_or(0, |i| threads[i].tid)
    }

    /// Seconds covered: from the origin to the last recorded moment.
    pub fn duration_ns(&self) -> u64 {
        self.experiments
            .iter()
            .map(|e| e.end_ns.saturating_sub(self.origin_ns))
            .max()
            .unwrap_or(0)
    }

    /// Functions whose shown name is `name` (or whose linkage name or
    /// parameter-less name is); only when none is, those that have `name`
    /// as an alias (`clock_gettime` is libc's function, not the vDSO's
    /// `__vdso_clock_gettime` known by the same alias).
    pub fn functions_named(&self, name: &str) -> Vec<FunctionId> {
        let ids = 0..self.functions.len() as FunctionId;
        let shown: Vec<FunctionId> = ids
            .clone()
            .filter(|&id| {
                let f = self.function(id);
                f.name == name
                    || f.linkage_name == name
                    || debugger::symbols::without_parameters(&f.name) == name
            })
            .collect();
        if !shown.is_empty() {
            return shown;
        }
        ids.filter(|&id| self.function(id).aliases.iter().any(|a| a == name))
            .collect()
    }
}

/// Creates the fixed special functions of a new model.
pub(crate) fn special_functions() -> Vec<FunctionEntry> {
    [TOTAL_NAME, UNKNOWN_NAME, TRUNCATED_NAME]
        .into_iter()
        .map(|name| FunctionEntry::named(name.to_string(), None, FunctionKind::Special, 0))
        .collect()
}
