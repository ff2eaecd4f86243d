//! Building a [`Model`] from experiment directories.
//!
//! Everything readable is loaded; what is not (a damaged block, a lost
//! stack record, an object file that changed) becomes a warning in
//! `Model::warnings`, never a failure, so a cut or corrupted experiment still
//! shows what it holds.

use crate::matching::{FunctionMatches, ObjectVersions};
use crate::model::*;
use crate::resolve::{symbol_file, symbolize, PcSymbol};
use crate::stack_ids::Lookup;
use crate::{Error, Result};

mod heap_replay;
use debugger::symbols::{ObjectFile, SourceLocation};
use experiment::archive::ArchivedObject;
use experiment::counters::{CounterSpec, MAX_COUNTERS};
use experiment::layout::{StackRecordRef, StackStatus, MAX_STACK_DEPTH};
use experiment::log::{Event, Sample};
use experiment::Experiment;
use rustc_hash::FxHashMap;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Loads `paths` (each a founder or descendant experiment) and, with
/// `descendants`, every descendant inside each of them; each clock event
/// its own entry.
pub fn load(paths: &[PathBuf], descendants: bool) -> Result<Model> {
    load_with(paths, descendants, EventDetail::Each)
}

/// How clock events are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventDetail {
    /// Each its own entry (with its time).
    Each,
    /// Merged (see `EventEntry::count`) when the experiments' profiles
    /// hold more than [`merge_beyond`] events: many experiments of a
    /// job take the memory of their distinct stacks, threads and samples,
    /// not of their events.
    Auto,
}

/// The number of clock events beyond which [`EventDetail::Auto`] merges
/// them: `RDBX_MERGE_EVENTS_BEYOND` when set (0: always), else 8 million
/// (256 MB of entries).
pub fn merge_beyond() -> u64 {
    std::env::var("RDBX_MERGE_EVENTS_BEYOND")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(8_000_000)
}

/// [`load`], keeping clock events as `detail` says.
pub fn load_with(paths: &[PathBuf], descendants: bool, detail: EventDetail) -> Result<Model> {
    if paths.is_empty() {
        return Err(Error::NoExperiment);
    }
    let mut builder = Builder::default();
    let mut all = Vec::new();
    for path in paths {
        let founder = Experiment::open(path)?;
        let archive = founder.archive_index().unwrap_or_else(|e| {
            builder.warn(format!("archive index unreadable: {e}"));
            Vec::new()
        });
        let archives_dir = founder.path().join("archives");
        let mut dirs = vec![founder.clone()];
        if descendants {
            for dir in founder.descendants() {
                match Experiment::open(&dir) {
                    Ok(d) => dirs.push(d),
                    Err(e) => builder.warn(format!("descendant skipped: {e}")),
                }
            }
        }
        all.push((dirs, archive, archives_dir));
    }
    let events: usize = all
        .iter()
        .flat_map(|(dirs, _, _)| dirs)
        .map(|expt| stored_bytes(expt, "profile") / experiment::layout::CLOCK_EVENT_SIZE)
        .sum();
    builder.merge_events = detail == EventDetail::Auto && events as u64 > merge_beyond();
    builder.model.events_merged = builder.merge_events;
    if !builder.merge_events {
        for (dirs, archive, archives_dir) in &all {
            for expt in dirs {
                builder.add_experiment(expt, archive, archives_dir, None)?;
            }
        }
        return Ok(builder.finish());
    }
    // A helper thread reads and merges the next experiment's clock events
    // while this one symbolizes and stores the current one's.
    std::thread::scope(|scope| {
        let (sender, receiver) = std::sync::mpsc::sync_channel(1);
        let experiments: Vec<&Experiment> = all.iter().flat_map(|(dirs, _, _)| dirs).collect();
        scope.spawn(move || {
            for expt in experiments {
                if sender.send(collect_clock_events(expt)).is_err() {
                    break;
                }
            }
        });
        for (dirs, archive, archives_dir) in &all {
            for expt in dirs {
                let collected = receiver.recv().ok();
                builder.add_experiment(expt, archive, archives_dir, collected)?;
            }
        }
        Ok(builder.finish())
    })
}

/// One experiment's clock events read and merged, apart from the model.
struct CollectedEvents {
    merged: MergedEvents,
    threads: ThreadNumbers,
    tally: Tally,
    stats: experiment::BlockStats,
}

/// Reads and merges `expt`'s clock events (see [`MergedEvents`]), its
/// threads numbered as [`Builder::add_experiment`] numbers them.
fn collect_clock_events(expt: &Experiment) -> Result<CollectedEvents> {
    let entry = experiment_entry(expt, expt.log()?);
    let plausible = PlausibleTimes::of(&entry.log);
    let mut threads = ThreadNumbers::new(&entry);
    let mut tally = Tally::default();
    let mut merged = MergedEvents::default();
    let mut samples = SampleIntervals::new(&entry.samples);
    let stats = expt.for_each_clock_event(|record| {
        let at = record.timestamp_ns;
        if tally.admit(&plausible, at, at, at) {
            let thread = threads.number(record.tid);
            merged.add(&record, thread, samples.of(at));
        }
    })?;
    Ok(CollectedEvents {
        merged,
        threads,
        tally,
        stats,
    })
}

/// One experiment whose events are being added: what placing them in the
/// model needs beside the model (its recorded stacks, thread numbers and
/// samples), and the tally of what they found.
struct Loading<'a> {
    expt: &'a Experiment,
    /// Its path, as warnings name it.
    shown: &'a str,
    /// Its index in the model.
    experiment: u16,
    plausible: PlausibleTimes,
    samples: SampleIntervals<'a>,
    mappings: &'a [Mapping],
    stacks: &'a mut RecordedStacks,
    threads: &'a mut ThreadNumbers,
    tally: &'a mut Tally,
}

impl Loading<'_> {
    /// Whether an event recorded at `at` (covering `start..=end`) has a
    /// possible time (see [`Tally::admit`]).
    fn admit(&mut self, at: u64, start: u64, end: u64) -> bool {
        self.tally.admit(&self.plausible, at, start, end)
    }
}

/// Where an event goes in the model: its thread's number, its model stack
/// and its sample.
struct Placed {
    thread: u32,
    stack: StackId,
    sample: u32,
}

/// Whether `expt` recorded data of kind `kind` (its manifest says).
fn has_kind(expt: &Experiment, kind: &str) -> bool {
    expt.manifest().kinds.iter().any(|k| k == kind)
}

/// Events whose stacks are looked up together.
const EVENT_BATCH: usize = 32;

/// One experiment's stack records, read before its events. Each goes
/// into the model's calling-context tree (`StackTable`) as the frames it
/// does not share with the record before it, as slots (one per distinct
/// recorded PC, not yet symbolized); a record's frames become model PCs,
/// in place, when an event first uses it, so that stacks, PCs and
/// functions are numbered in the order the events use them and a record
/// no event uses is never symbolized.
#[derive(Default)]
struct RecordedStacks {
    by_id: crate::stack_ids::StackIds,
    records: Vec<Record>,
    slots: Slots,
    /// The record added last: its PCs as recorded (leaf first), at the
    /// end of `previous_bytes` (so that a record's own PCs are copied in
    /// below those it shares), and the position of each from the
    /// outermost in the tree (as many as its PCs).
    previous_bytes: Vec<u8>,
    previous_path: Vec<u32>,
    /// A record's own frames, leaf first (reused).
    own: Vec<u64>,
    /// Records a batch of events uses first (reused).
    firsts: Vec<u32>,
}

/// Where a recorded stack's innermost frame is in the tree.
#[derive(Debug, Clone, Copy)]
struct Record {
    position: u32,
    status: StackStatus,
}

/// How many 8-byte words `a` and `b` end with alike. Compared 32 bytes at
/// a time (fixed-size arrays compare as vectors): a record shares most of
/// its frames with the one before, and the comparison was a third of
/// reading a deep stacks file one word at a time.
fn common_suffix_words(a: &[u8], b: &[u8]) -> usize {
    let words = a.len().min(b.len()) / 8;
    let (a, b) = (&a[a.len() - words * 8..], &b[b.len() - words * 8..]);
    let mut same = 0;
    while same + 4 <= words {
        let rest = (words - same) * 8;
        if a[..rest].last_chunk::<32>() != b[..rest].last_chunk::<32>() {
            break;
        }
        same += 4;
    }
    while same < words {
        let rest = (words - same) * 8;
        if a[..rest].last_chunk::<8>() != b[..rest].last_chunk::<8>() {
            break;
        }
        same += 1;
    }
    same
}

impl RecordedStacks {
    /// Adds a record (the first of its id) to `table`: the outer frames
    /// it shares with the record added before it (most of them, in
    /// recording order) are that one's, the others a new run of slots.
    fn add(&mut self, record: StackRecordRef<'_>, table: &mut StackTable) {
        let Some(status) = record.status() else {
            return;
        };
        let Ok(index) = u32::try_from(self.records.len()) else {
            return;
        };
        if !self.by_id.insert(record.header.stack_id, index) {
            return;
        }
        let pcs = record.pcs_bytes();
        let depth = pcs.len() / 8;
        let previous_len = self.previous_path.len() * 8;
        if self.previous_bytes.len() < pcs.len() {
            // Room for the deepest record (the first to come, or a deeper one: the
            // kept record moves to the new end).
            let room = pcs.len().max(MAX_STACK_DEPTH * 8);
            let kept = self.previous_bytes.len() - previous_len;
            self.previous_bytes.resize(room, 0);
            self.previous_bytes
                .copy_within(kept..kept + previous_len, room - previous_len);
        }
        let end = self.previous_bytes.len();
        let before = &self.previous_bytes[end - previous_len..];
        // Neither leaf is shared: a leaf's slot is not a caller's.
        let most = depth.min(self.previous_path.len()).saturating_sub(1);
        let shared = common_suffix_words(pcs, before).min(most);
        let own_bytes = &pcs[..pcs.len() - shared * 8];
        self.previous_bytes[end - pcs.len()..end - shared * 8].copy_from_slice(own_bytes);
        self.previous_path.truncate(shared);
        let parent = self.previous_path.last().copied().unwrap_or(ROOT_POSITION);
        self.own.clear();
        self.own.extend(record.pcs().take(depth - shared));
        let slots = &mut self.slots;
        let own = self.own.iter().enumerate().rev();
        let first = table.push_run(parent, own.map(|(i, &pc)| slots.slot(pc, i == 0)));
        let end = first + self.own.len() as u32;
        self.previous_path.extend(first..end);
        let position = match self.own.is_empty() {
            true => parent,
            false => end - 1,
        };
        self.records.push(Record { position, status });
    }

    /// Starts fetching what looking up the recorded stacks `ids` soon
    /// needs: their table entries, and for those no event used yet, their
    /// records and innermost frames in `cells` (fetched together, not one
    /// cache miss after another).
    fn prefetch(&mut self, ids: impl Iterator<Item = u64> + Clone, cells: &[u32]) {
        for id in ids.clone() {
            self.by_id.prefetch(id);
        }
        self.prefetch_records(ids);
        self.prefetch_cells(cells);
    }

    /// Starts fetching the records of the stacks `ids` no event used yet
    /// (their table entries fetched before), and keeps them for
    /// [`RecordedStacks::prefetch_cells`].
    fn prefetch_records(&mut self, ids: impl Iterator<Item = u64>) {
        self.firsts.clear();
        for id in ids {
            if let Lookup::Record(r) = self.by_id.get(id) {
                self.firsts.push(r);
                self.records
                    .get(r as usize)
                    .map(crate::memory::prefetch_one);
            }
        }
    }

    /// Starts fetching the innermost frames in `cells` of the records
    /// [`RecordedStacks::prefetch_records`] fetched.
    fn prefetch_cells(&self, cells: &[u32]) {
        for &r in &self.firsts {
            if let Some(record) = self.records.get(r as usize) {
                cells
                    .get(record.position as usize)
                    .map(crate::memory::prefetch_one);
            }
        }
    }
}

/// What loading an experiment's events found beside the events: those
/// skipped for an impossible time, those whose stack was lost, and the
/// span of time they cover.
struct Tally {
    impossible: u64,
    lost: u64,
    first_ns: u64,
    last_ns: u64,
}

impl Default for Tally {
    fn default() -> Self {
        Tally {
            impossible: 0,
            lost: 0,
            first_ns: u64::MAX,
            last_ns: 0,
        }
    }
}

impl Tally {
    /// Whether an event recorded at `at` (covering `start..=end`) has a
    /// possible time; counts it when not, widens the span when it has.
    fn admit(&mut self, plausible: &PlausibleTimes, at: u64, start: u64, end: u64) -> bool {
        if !plausible.contains(at) {
            self.impossible += 1;
            return false;
        }
        self.first_ns = self.first_ns.min(start);
        self.last_ns = self.last_ns.max(end);
        true
    }

    /// `stack`, counted when its record was lost.
    fn stack(&mut self, stack: StackId) -> StackId {
        if stack == NO_STACK {
            self.lost += 1;
        }
        stack
    }

    fn add(&mut self, other: &Tally) {
        self.impossible += other.impossible;
        self.lost += other.lost;
        self.first_ns = self.first_ns.min(other.first_ns);
        self.last_ns = self.last_ns.max(other.last_ns);
    }
}

/// The distinct (recorded PC, is the leaf) pairs of one experiment: most
/// frames of a million stacks are a few thousand PCs, and a slot is found
/// with one cheap hash, symbolized later once.
#[derive(Default)]
struct Slots {
    /// By recorded PC: callers' slots, and leaves' (apart, so that the key
    /// of the hundred million lookups is one word).
    callers: FxHashMap<u64, PcId>,
    leaves: FxHashMap<u64, PcId>,
    pcs: Vec<(u64, bool)>,
    /// The model pc of each slot once looked up (as an interrupted PC for
    /// a leaf, a return address otherwise).
    model_pcs: Vec<Option<PcId>>,
    /// Per slot: its pc if known and taken as it is (see `plain_pc`),
    /// else `NOT_PLAIN`. One table for the hot loop.
    plain: Vec<PcId>,
}

const NOT_PLAIN: PcId = PcId::MAX;

impl Slots {
    fn slot(&mut self, pc: u64, leaf: bool) -> PcId {
        let next = self.pcs.len() as PcId;
        let ids = if leaf {
            &mut self.leaves
        } else {
            &mut self.callers
        };
        let slot = *ids.entry(pc).or_insert(next);
        if slot == next {
            self.pcs.push((pc, leaf));
        }
        slot
    }

    fn pc(&self, slot: PcId) -> (u64, bool) {
        self.pcs.get(slot as usize).copied().unwrap_or((0, false))
    }

    fn known(&self, slot: PcId) -> Option<PcId> {
        self.model_pcs.get(slot as usize).copied().flatten()
    }

    /// The pc of `slot` if it is known and its frame is taken as it is
    /// (not a PLT stub, the collector or a signal trampoline).
    fn plain_pc(&self, slot: PcId) -> Option<PcId> {
        match self.plain.get(slot as usize) {
            Some(&NOT_PLAIN) | None => None,
            Some(&pc) => Some(pc),
        }
    }

    fn remember(&mut self, slot: PcId, pc: PcId, plain: bool) {
        if self.model_pcs.len() <= slot as usize {
            self.model_pcs.resize(slot as usize + 1, None);
            self.plain.resize(slot as usize + 1, NOT_PLAIN);
        }
        self.model_pcs[slot as usize] = Some(pc);
        self.plain[slot as usize] = if plain { pc } else { NOT_PLAIN };
    }
}

/// What building a stack needs to know of a pc.
#[derive(Debug, Clone, Copy)]
struct PcTraits {
    plt: bool,
    /// In the collector's library (its wrappers are not the program's).
    collector: bool,
    /// In `__restore_rt`: the next frame's PC is the one a signal interrupted.
    signal_trampoline: bool,
}

/// Where an object sits in one experiment's address space.
#[derive(Debug, Clone)]
struct Mapping {
    object: ObjectId,
    base: u64,
    lo: u64,
    hi: u64,
}

#[derive(Default)]
struct Builder {
    model: Model,
    /// Load objects by path and build (see `matching`).
    objects: ObjectVersions,
    /// Functions of different builds of one object, matched by name.
    matches: FunctionMatches,
    /// Opened symbol files by object id (None: unreadable, already warned).
    files: HashMap<ObjectId, Option<ObjectFile>>,
    /// The model's stacks while they are being read (see `RecordedStacks`).
    stacks: StackTable,
    /// Positions of frames being made model PCs (reused).
    fresh: Vec<u32>,
    function_ids: HashMap<FunctionKey, FunctionId>,
    line_ids: HashMap<LineEntry, LineId>,
    /// (experiment, looked-up address) -> pc.
    pc_ids: FxHashMap<(u16, u64), PcId>,
    /// (load object, offset in it) -> pc: every experiment's.
    pc_by_instruction: FxHashMap<(ObjectId, u64), PcId>,
    /// What stack building asks of each pc, by pc id: known once, not
    /// recomputed for each of a hundred million frames.
    pc_traits: Vec<PcTraits>,
    archive: Vec<ArchivedObject>,
    archives_dir: PathBuf,
    /// Mapped size of the `[vdso]` object (to check our own is the same).
    vdso_size: HashMap<ObjectId, u64>,
    /// Clock events of one thread, CPU, sample and stack make one entry.
    merge_events: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum FunctionKey {
    Normal(ObjectId, u64, String),
    Inlined(ObjectId, String),
    Static(ObjectId, u64),
    Plt(ObjectId),
}

impl Builder {
    fn warn(&mut self, message: String) {
        if !self.model.warnings.contains(&message) {
            self.model.warnings.push(message);
        }
    }

    /// Makes event times relative to the earliest experiment start (they
    /// are absolute while loading, when that start is not known yet).
    fn finish(mut self) -> Model {
        if self.model.functions.is_empty() {
            self.model.functions = special_functions();
        }
        self.model.stacks = std::sync::Arc::new(std::mem::take(&mut self.stacks));
        let origin = self.model.experiments.iter().map(|e| e.start_ns).min();
        self.model.origin_ns = origin.unwrap_or(0);
        for event in &mut self.model.events {
            event.time_ns = event.time_ns.saturating_sub(self.model.origin_ns);
        }
        for entry in &mut self.model.heap {
            entry.time_ns = entry.time_ns.saturating_sub(self.model.origin_ns);
        }
        for entry in &mut self.model.sync {
            entry.time_ns = entry.time_ns.saturating_sub(self.model.origin_ns);
        }
        let origin = self.model.origin_ns;
        for entry in &mut self.model.io {
            entry.time_ns = entry.time_ns.saturating_sub(origin);
        }
        for file in &mut self.model.io_files {
            file.opened_ns = file.opened_ns.saturating_sub(origin);
            file.closed_ns = file.closed_ns.map(|t| t.saturating_sub(origin));
        }
        for entry in &mut self.model.offcpu {
            entry.time_ns = entry.time_ns.saturating_sub(origin);
        }
        for entry in &mut self.model.counter_events {
            entry.time_ns = entry.time_ns.saturating_sub(origin);
        }
        let threads = self
            .model
            .experiments
            .iter_mut()
            .flat_map(|e| &mut e.threads);
        for (_, started_ns) in threads.filter_map(|t| t.pthread.as_mut()) {
            *started_ns = started_ns.saturating_sub(origin);
        }
        for entry in &mut self.model.mpi {
            entry.time_ns = entry.time_ns.saturating_sub(origin);
        }
        self.model
    }

    /// The counters an experiment's log names, each given the model's
    /// counter of its name (made when new): the same counter in several
    /// experiments is one metric.
    fn experiment_counters(
        &mut self,
        shown: &str,
        log: &[experiment::LogEvent],
    ) -> Vec<ExperimentCounter> {
        let mut counters: Vec<ExperimentCounter> = Vec::new();
        for event in log {
            let Event::Counter { index, spec } = &event.event else {
                continue;
            };
            if counters.iter().any(|c| c.index == *index) {
                continue;
            }
            let slot = self.counter_slot(shown, spec);
            counters.push(ExperimentCounter {
                index: *index,
                spec: spec.clone(),
                slot,
                scaled: false,
            });
        }
        counters.sort_by_key(|c| c.index);
        counters
    }

    /// The index in `Model::counters` of the counter named as `spec`'s,
    /// added if new; None (with a warning) when the model holds the most
    /// counters a value has room for.
    fn counter_slot(&mut self, shown: &str, spec: &CounterSpec) -> Option<u8> {
        let counters = &self.model.counters;
        if let Some(slot) = counters.iter().position(|c| c.spec.name == spec.name) {
            return u8::try_from(slot).ok();
        }
        if counters.len() >= MAX_COUNTERS {
            self.warn(format!(
                "{shown}: counter {} not shown: the experiments have more than {MAX_COUNTERS} \
                 counters",
                spec.name
            ));
            return None;
        }
        let slot = u8::try_from(counters.len()).ok()?;
        let role = CounterRole::of(spec).filter(|&r| self.model.counter_with(r).is_none());
        self.model.counters.push(CounterInfo {
            metric: commands::Counter::named(&spec.name).at(slot),
            spec: spec.clone(),
            role,
            scaled: false,
        });
        Some(slot)
    }

    /// Adds experiment `expt` (of the founder whose archive is `archive`);
    /// with merged events, `collected` are its clock events when a helper
    /// thread read them already.
    fn add_experiment(
        &mut self,
        expt: &Experiment,
        archive: &[ArchivedObject],
        archives_dir: &Path,
        collected: Option<Result<CollectedEvents>>,
    ) -> Result<()> {
        if self.model.functions.is_empty() {
            self.model.functions = special_functions();
        }
        self.archive = archive.to_vec();
        self.archives_dir = archives_dir.to_path_buf();
        let index = u16::try_from(self.model.experiments.len()).map_err(|_| Error::TooMany)?;
        let log = expt.log()?;
        let plausible = PlausibleTimes::of(&log);
        // The heap events are replayed on a thread of their own while the
        // stacks and the other events are read; the allocations it sends
        // get their stacks after those, while it goes on.
        let heap_replay = match expt.manifest().kinds.iter().any(|k| k == "heap-trace") {
            true => Some(heap_replay::start(
                expt,
                index,
                plausible,
                sorted_samples(&log),
            )),
            false => None,
        };
        let mut stacks = RecordedStacks::default();
        // Sized from the files up front: no copy of hundreds of megabytes
        // when a vector doubles. The tree takes a cell per frame a record
        // does not share with the one before (few, when stacks share their
        // outer frames as a program's do): its room is only reserved.
        reserve(self.stacks.cells_mut(), stored_bytes(expt, "stacks") / 8);
        // Merged events take a fraction of that, found as they come.
        if !self.merge_events {
            reserve(&mut self.model.events, stored_bytes(expt, "profile") / 24);
        }
        // The events do not grow past what was reserved (the file holds
        // no more), so they stay put until the join below.
        let spares = vec![crate::memory::spare(&self.model.events)];
        let populating = crate::memory::populate_in_background(spares, 128 << 20);
        let stack_stats = crate::stack_file::for_each_stack_block(expt, |records| {
            for record in records {
                stacks.by_id.prefetch(record.header.stack_id);
            }
            for &record in records {
                stacks.add(record, &mut self.stacks);
            }
        })?;
        let shown = expt.path().display().to_string();
        let malformed = log
            .iter()
            .filter(|e| matches!(e.event, Event::Malformed { .. }))
            .count();
        if malformed > 0 {
            self.warn(format!(
                "{shown}: {malformed} unreadable log line(s) skipped"
            ));
        }
        for file in expt.missing_files() {
            self.warn(format!("{shown}: {}", missing_file_consequence(&file)));
        }
        self.warn_damaged(&shown, "stacks", &stack_stats);
        let mappings = self.mappings(&log);
        let mut entry = experiment_entry(expt, log);
        if let Some(founder) = archives_dir.parent() {
            entry.founder = founder.to_path_buf();
        }
        entry.counters = self.experiment_counters(&shown, &entry.log);
        let mut threads = ThreadNumbers::new(&entry);
        let mut tally = Tally::default();
        let mut loading = Loading {
            expt,
            shown: &shown,
            experiment: index,
            plausible,
            samples: SampleIntervals::new(&entry.samples),
            mappings: &mappings,
            stacks: &mut stacks,
            threads: &mut threads,
            tally: &mut tally,
        };
        let event_stats = match self.merge_events {
            true => {
                let collected = match collected {
                    Some(collected) => collected?,
                    None => collect_clock_events(expt)?,
                };
                *loading.threads = collected.threads;
                *loading.tally = collected.tally;
                self.add_merged_events(collected.merged, &mut loading);
                collected.stats
            }
            false => self.add_clock_events(&mut loading)?,
        };
        drop(populating);
        if has_kind(expt, "sync-trace") {
            self.add_sync_waits(&mut loading)?;
        }
        if has_kind(expt, "io-trace") {
            self.add_io_calls(&mut loading)?;
        }
        if has_kind(expt, "mpi-trace") {
            self.add_mpi_calls(&mut loading)?;
        }
        if has_kind(expt, "off-cpu") {
            self.add_offcpu_switches(&mut loading)?;
        }
        if has_kind(expt, "counters") {
            self.add_counter_events(&mut loading, &mut entry.counters)?;
        }
        if let Some(replaying) = heap_replay {
            let heap_stats = self.receive_heap(
                index,
                replaying,
                &mut stacks,
                &mut threads,
                &mut tally,
                &mappings,
            )?;
            if let Some(warning) = block_file_warning(&shown, "heap", &heap_stats) {
                self.warn(warning);
            }
        }
        if let Some(warning) = block_file_warning(&shown, "profile", &event_stats) {
            self.warn(warning);
        }
        let has_log = expt.path().join("log").exists();
        let names_objects = entry
            .log
            .iter()
            .any(|e| matches!(e.event, Event::Object { .. }));
        if has_log && !names_objects && event_stats.records > 0 {
            self.warn(format!(
                "{shown}: the log names no load object: every function shows as <Unknown>"
            ));
        }
        let Tally {
            impossible,
            lost,
            first_ns,
            last_ns,
        } = tally;
        if impossible > 0 {
            self.warn(format!(
                "{shown}: {impossible} event(s) with impossible timestamps (damaged data) skipped"
            ));
        }
        if lost > 0 {
            self.warn(format!(
                "{shown}: {lost} event(s) whose stack was not written are shown as <Unknown>"
            ));
        }
        if entry.start_ns == 0 && first_ns != u64::MAX {
            entry.start_ns = first_ns;
        }
        entry.end_ns = entry.end_ns.max(last_ns);
        entry.threads = threads.into_entries();
        self.model.experiments.push(entry);
        Ok(())
    }

    /// Makes the merged clock events of experiment `loading.experiment`
    /// entries of the model, each stack looked up once per entry (not per
    /// event).
    fn add_merged_events(&mut self, merged: MergedEvents, loading: &mut Loading) {
        let entries = merged.finish();
        reserve(&mut self.model.events, entries.len());
        let experiment = loading.experiment;
        for entry in entries {
            let stack =
                self.model_stack(experiment, loading.stacks, entry.stack_id, loading.mappings);
            if stack == NO_STACK {
                loading.tally.lost += u64::from(entry.count);
            }
            self.model.events.push(EventEntry {
                experiment,
                thread: entry.thread,
                cpu: entry.cpu,
                time_ns: entry.first_ns,
                weight_ns: entry.weight_ns,
                stack,
                sample: entry.sample,
                count: entry.count,
            });
        }
    }

    /// Adds an experiment's clock events, each its own entry. They go in
    /// batches: the table entries of a batch's stacks are fetched from
    /// memory together, not one cache miss after another.
    fn add_clock_events(&mut self, loading: &mut Loading) -> Result<experiment::BlockStats> {
        let expt = loading.expt;
        let mut batch: Vec<experiment::ClockEventRecord> = Vec::with_capacity(EVENT_BATCH);
        let mut add_batch = |batch: &mut Vec<experiment::ClockEventRecord>| {
            let ids = batch.iter().map(|record| record.stack_id);
            loading.stacks.prefetch(ids, self.stacks.cells());
            for record in batch.drain(..) {
                let at = record.timestamp_ns;
                if !loading.admit(at, at, at) {
                    continue;
                }
                let placed = self.place(loading, record.tid, record.stack_id, at);
                self.model.events.push(EventEntry {
                    experiment: loading.experiment,
                    thread: placed.thread,
                    cpu: record.cpu,
                    time_ns: at,
                    weight_ns: record.weight_ns,
                    stack: placed.stack,
                    sample: placed.sample,
                    count: 1,
                });
            }
        };
        let stats = expt.for_each_clock_event(|record| {
            batch.push(record);
            if batch.len() == EVENT_BATCH {
                add_batch(&mut batch);
            }
        })?;
        add_batch(&mut batch);
        Ok(stats)
    }

    /// Adds an experiment's traced synchronization waits, and names their
    /// objects.
    fn add_sync_waits(&mut self, loading: &mut Loading) -> Result<()> {
        let stats = loading.expt.for_each_sync_event(|record| {
            let e = record.event;
            let end = e.start_ns.saturating_add(e.wait_ns);
            if !loading.admit(e.start_ns, e.start_ns, end) {
                return;
            }
            let placed = self.place(loading, record.tid, e.stack_id, e.start_ns);
            self.model.sync.push(SyncEntry {
                experiment: loading.experiment,
                op: e.op,
                thread: placed.thread,
                time_ns: e.start_ns,
                wait_ns: e.wait_ns,
                object: e.object,
                stack: placed.stack,
                sample: placed.sample,
            });
        })?;
        self.warn_damaged(loading.shown, "sync", &stats);
        self.name_sync_objects(loading.experiment, loading.mappings);
        Ok(())
    }

    /// Adds an experiment's traced I/O calls, each with its file.
    fn add_io_calls(&mut self, loading: &mut Loading) -> Result<()> {
        let mut calls = Vec::new();
        let stats = loading.expt.for_each_io_event(|record| {
            let e = record.event;
            let end = e.start_ns.saturating_add(e.time_ns);
            if !loading.admit(e.start_ns, e.start_ns, end) {
                return;
            }
            let placed = self.place(loading, record.tid, e.stack_id, e.start_ns);
            let name = (!e.name.is_empty()).then(|| String::from_utf8_lossy(e.name).into_owned());
            let call = IoEntry {
                experiment: loading.experiment,
                op: e.op,
                failed: e.failed,
                thread: placed.thread,
                time_ns: e.start_ns,
                call_ns: e.time_ns,
                bytes: e.bytes,
                fd: e.fd,
                file: 0,
                source: NO_FILE,
                stack: placed.stack,
                sample: placed.sample,
            };
            calls.push((call, e.aux_fd, name));
        })?;
        let (io, files) = (&mut self.model.io, &mut self.model.io_files);
        crate::io::place_calls(loading.experiment, calls, io, files);
        self.warn_damaged(loading.shown, "io", &stats);
        Ok(())
    }

    /// Adds an experiment's traced MPI calls and completions.
    fn add_mpi_calls(&mut self, loading: &mut Loading) -> Result<()> {
        let stats = loading.expt.for_each_mpi_event(|record| {
            let e = record.event;
            let end = e.start_ns.saturating_add(e.time_ns);
            if !loading.admit(e.start_ns, e.start_ns, end) {
                return;
            }
            let placed = self.place(loading, record.tid, e.stack_id, e.start_ns);
            self.model.mpi.push(MpiEntry {
                experiment: loading.experiment,
                op: e.op,
                completion: e.completion,
                thread: placed.thread,
                time_ns: e.start_ns,
                call_ns: e.time_ns,
                dest: e.dest,
                source: e.source,
                bytes_sent: e.bytes_sent,
                bytes_received: e.bytes_received,
                sends: e.sends,
                receives: e.receives,
                stack: placed.stack,
                sample: placed.sample,
            });
        })?;
        self.warn_damaged(loading.shown, "mpi", &stats);
        Ok(())
    }

    /// Adds an experiment's switches off the CPU (recorded when they end).
    fn add_offcpu_switches(&mut self, loading: &mut Loading) -> Result<()> {
        let stats = loading.expt.for_each_offcpu_event(|record| {
            let e = record.event;
            let start_ns = e.end_ns.saturating_sub(e.off_ns);
            if !loading.admit(e.end_ns, start_ns, e.end_ns) {
                return;
            }
            let placed = self.place(loading, record.tid, e.stack_id, start_ns);
            self.model.offcpu.push(OffCpuEntry {
                experiment: loading.experiment,
                thread: placed.thread,
                time_ns: start_ns,
                off_ns: e.off_ns,
                stack: placed.stack,
                sample: placed.sample,
            });
        })?;
        self.warn_damaged(loading.shown, "offcpu", &stats);
        Ok(())
    }

    /// Adds an experiment's counter overflow records of `counters` (the
    /// counters its log names, which learn here whether a record was
    /// scaled).
    fn add_counter_events(
        &mut self,
        loading: &mut Loading,
        counters: &mut [ExperimentCounter],
    ) -> Result<()> {
        let mut unnamed = 0u64;
        let stats = loading.expt.for_each_counter_event(|record| {
            let e = record.event;
            if !loading.admit(e.time_ns, e.time_ns, e.time_ns) {
                return;
            }
            let named = counters.iter_mut().find(|c| c.index == e.counter);
            let Some(counter) = named else {
                unnamed += 1;
                return;
            };
            // A counter the model had no room for was warned about.
            let Some(slot) = counter.slot else {
                return;
            };
            counter.scaled |= e.scaled();
            let placed = self.place(loading, record.tid, e.stack_id, e.time_ns);
            self.model.counter_events.push(CounterEntry {
                experiment: loading.experiment,
                counter: slot,
                flags: e.flags,
                frame: e.frame,
                thread: placed.thread,
                time_ns: e.time_ns,
                count: e.count,
                data_addr: e.data_addr,
                frame_cfa: e.frame_cfa,
                stack_record: e.stack_id,
                stack: placed.stack,
                sample: placed.sample,
            });
        })?;
        if unnamed > 0 {
            self.warn(format!(
                "{}: {unnamed} counter record(s) of a counter the log does not name skipped",
                loading.shown
            ));
        }
        self.warn_damaged(loading.shown, "counters", &stats);
        for counter in counters.iter().filter(|c| c.scaled) {
            if let Some(slot) = counter.slot {
                self.model.counters[usize::from(slot)].scaled = true;
            }
        }
        Ok(())
    }

    /// The thread number, model stack and sample of an event (admitted:
    /// [`Loading::admit`]) of thread `tid` on recorded stack `stack_id`,
    /// starting at `start_ns`.
    fn place(&mut self, loading: &mut Loading, tid: u32, stack_id: u64, start_ns: u64) -> Placed {
        let (experiment, mappings) = (loading.experiment, loading.mappings);
        let stack = self.model_stack(experiment, loading.stacks, stack_id, mappings);
        Placed {
            thread: loading.threads.number(tid),
            stack: loading.tally.stack(stack),
            sample: loading.samples.of(start_ns),
        }
    }

    /// Warns when some blocks of block file `file` of experiment `shown`
    /// were damaged (see [`block_file_warning`]).
    fn warn_damaged(&mut self, shown: &str, file: &str, stats: &experiment::BlockStats) {
        if let Some(warning) = block_file_warning(shown, file, stats) {
            self.warn(warning);
        }
    }

    fn mappings(&mut self, log: &[experiment::LogEvent]) -> Vec<Mapping> {
        let mut mappings = Vec::new();
        for event in log {
            if let Event::Object { path, base, lo, hi } = &event.event {
                let object = self.object_id(path);
                if path.as_os_str() == "[vdso]" {
                    self.vdso_size.insert(object, hi.saturating_sub(*lo));
                }
                // A later mapping of the same range (dlclose + dlopen) wins.
                mappings.retain(|m: &Mapping| m.hi <= *lo || m.lo >= *hi);
                mappings.push(Mapping {
                    object,
                    base: *base,
                    lo: *lo,
                    hi: *hi,
                });
            }
        }
        mappings
    }

    /// The object of `path` as the current experiment's archive says it
    /// was built: the same file at another address is the same object, a
    /// rebuilt one another (its symbols are read from its own file).
    fn object_id(&mut self, path: &Path) -> ObjectId {
        let version = crate::matching::version_of(&self.archive, path);
        if let Some(id) = self.objects.get(path, &version) {
            return id;
        }
        let id = self.model.objects.len() as ObjectId;
        // Every build of a path hides as one `<name>`.
        let hidden_function = match self.objects.add(id, path, version) {
            Some(first) => self.model.object(first).hidden_function,
            None => self.push_function(FunctionEntry::named(
                format!("<{}>", basename(path)),
                Some(id),
                FunctionKind::Special,
                0,
            )),
        };
        self.model.objects.push(ObjectEntry {
            path: path.to_path_buf(),
            symbols_from: None,
            hidden_function,
        });
        id
    }

    fn push_function(&mut self, entry: FunctionEntry) -> FunctionId {
        let id = self.model.functions.len() as FunctionId;
        self.model.functions.push(entry);
        id
    }

    /// The model stack of the recorded stack `stack_id`, made (symbolized)
    /// the first time an event uses it; `NO_STACK` when it was not written.
    fn model_stack(
        &mut self,
        experiment: u16,
        stacks: &mut RecordedStacks,
        stack_id: u64,
        mappings: &[Mapping],
    ) -> StackId {
        match stacks.by_id.get(stack_id) {
            Lookup::Stack(id) => id,
            Lookup::Record(r) => {
                let record = stacks.records[r as usize];
                let at = record.position;
                let position = self.model_position(experiment, &mut stacks.slots, at, mappings);
                let id = self.stacks.push_stack(position, record.status);
                stacks.by_id.set_stack(stack_id, id);
                id
            }
            Lookup::Missing => NO_STACK,
        }
    }

    /// The position in the tree of the model stack made of the recorded
    /// frames at `position`, symbolizing their PCs not seen before. Called
    /// once per distinct recorded stack, when an event first uses it.
    /// Frames are model PCs in place when they show as recorded (the
    /// common case: made once for every stack through them); a stack with
    /// a frame that does not (a PLT stub's leaf, the collector's frames,
    /// a signal trampoline) gets a run of its own for its model frames.
    fn model_position(
        &mut self,
        experiment: u16,
        slots: &mut Slots,
        position: u32,
        mappings: &[Mapping],
    ) -> u32 {
        // The frames not made model PCs yet, innermost first: those above
        // them are (a stack through a frame made them).
        let mut fresh = std::mem::take(&mut self.fresh);
        fresh.clear();
        let mut at = position;
        // Whether every one is known and taken as it is (the common case:
        // a table read per frame).
        let mut plain = true;
        while at != ROOT_POSITION {
            let cell = self.stacks.cells()[at as usize];
            if cell & TRANSLATED != 0 {
                break;
            }
            plain &= slots.plain_pc(cell).is_some();
            fresh.push(at);
            at = self.stacks.parent(at);
        }
        if !plain {
            // Symbolized innermost first, as a walk of the whole stack
            // would.
            plain = true;
            for &at in &fresh {
                let slot = self.stacks.cells()[at as usize];
                self.slot_pc(experiment, slots, slot, mappings);
                if slots.plain_pc(slot).is_none() {
                    plain = false;
                    break;
                }
            }
        }
        if plain {
            let cells = self.stacks.cells_mut();
            for &at in &fresh {
                let slot = cells[at as usize];
                cells[at as usize] = TRANSLATED | slots.plain_pc(slot).unwrap_or(slot);
            }
            self.fresh = fresh;
            return position;
        }
        self.fresh = fresh;
        self.own_model_run(experiment, slots, position, mappings)
    }

    /// The model frames of the recorded frames at `position` that do not
    /// all show as recorded, as a run of their own below the outer frames
    /// that do; the position of its innermost frame.
    fn own_model_run(
        &mut self,
        experiment: u16,
        slots: &mut Slots,
        position: u32,
        mappings: &[Mapping],
    ) -> u32 {
        let has_callers = self.stacks.parent(position) != ROOT_POSITION;
        let mut frames: Vec<PcId> = Vec::new();
        let mut after_signal_frame = false;
        let mut at = position;
        let mut depth = 0;
        let joins = loop {
            if at == ROOT_POSITION {
                break ROOT_POSITION;
            }
            let cell = self.stacks.cells()[at as usize];
            let made = cell & TRANSLATED != 0;
            let id = match (made, after_signal_frame) {
                // Model PCs from here up, taken as they are.
                (true, false) => break at,
                (false, false) => self.slot_pc(experiment, slots, cell, mappings),
                // The PC a signal interrupted is exact.
                (false, true) => self.intern_pc(experiment, slots.pc(cell).0, mappings),
                // A caller's model PC is its return address minus one.
                (true, true) => {
                    let address = self.model.pc(cell & !TRANSLATED).address;
                    self.intern_pc(experiment, address.wrapping_add(1), mappings)
                }
            };
            let traits = self.pc_traits[id as usize];
            after_signal_frame = traits.signal_trampoline;
            at = self.stacks.parent(at);
            depth += 1;
            // The manual ("Function Calls Between Shared Objects"): a leaf
            // PC in a PLT stub is dropped and its time goes to the call
            // instruction that entered the stub.
            if depth == 1 && traits.plt && has_callers {
                continue;
            }
            // The collector's wrappers (pthread_create's thread start,
            // interposed calls) are not the program's: callers link
            // straight to what the wrapper called, as in the manual's
            // "Explicit Multithreading" where created threads start at
            // `<Total>`.
            if depth > 1 && traits.collector {
                continue;
            }
            frames.push(id);
        };
        let mut position = joins;
        for &pc in frames.iter().rev() {
            position = self.stacks.push_frame(position, TRANSLATED | pc);
        }
        position
    }

    /// The pc of `slot` looked up as an interrupted PC if it is the leaf,
    /// else as a return address (the call instruction: one byte before).
    fn slot_pc(
        &mut self,
        experiment: u16,
        slots: &mut Slots,
        slot: PcId,
        mappings: &[Mapping],
    ) -> PcId {
        if let Some(id) = slots.known(slot) {
            return id;
        }
        let (pc, leaf) = slots.pc(slot);
        let address = if leaf { pc } else { pc.saturating_sub(1) };
        let id = self.intern_pc(experiment, address, mappings);
        let traits = self.pc_traits[id as usize];
        let plain = !(traits.plt || traits.collector || traits.signal_trampoline);
        slots.remember(slot, id, plain);
        id
    }

    fn is_collector(&self, object: ObjectId) -> bool {
        self.model.object(object).is_collector()
    }

    fn intern_pc(&mut self, experiment: u16, address: u64, mappings: &[Mapping]) -> PcId {
        if let Some(&id) = self.pc_ids.get(&(experiment, address)) {
            return id;
        }
        self.symbolize_pc(experiment, address, mappings)
    }

    fn symbolize_pc(&mut self, experiment: u16, address: u64, mappings: &[Mapping]) -> PcId {
        let mapping = mappings.iter().find(|m| m.lo <= address && address < m.hi);
        let instruction = mapping.map(|m| (m.object, address.wrapping_sub(m.base)));
        // The same instruction of the same file, recorded by another
        // experiment (at its own address): one pc, symbolized once.
        if let Some(&id) = instruction.and_then(|i| self.pc_by_instruction.get(&i)) {
            self.pc_ids.insert((experiment, address), id);
            return id;
        }
        let entry = match mapping {
            Some(m) => self.symbolize_in(m.object, address, address.wrapping_sub(m.base)),
            None => PcEntry {
                object: None,
                address,
                offset: address,
                function: UNKNOWN,
                line: None,
                inlined: Vec::new(),
                plt: false,
            },
        };
        let id = self.model.pcs.len() as PcId;
        self.pc_traits.push(PcTraits {
            plt: entry.plt,
            collector: entry.object.is_some_and(|o| self.is_collector(o)),
            signal_trampoline: self.model.function(entry.function).name == "__restore_rt",
        });
        self.model.pcs.push(entry);
        self.pc_ids.insert((experiment, address), id);
        if let Some(instruction) = instruction {
            self.pc_by_instruction.insert(instruction, id);
        }
        id
    }

    fn symbolize_in(&mut self, object: ObjectId, address: u64, offset: u64) -> PcEntry {
        let vdso = self.model.object(object).path.as_os_str() == "[vdso]";
        let symbol = match self.file(object) {
            Some(file) => symbolize(file, offset, vdso),
            None => PcSymbol::Unknown,
        };
        let mut entry = PcEntry {
            object: Some(object),
            address,
            offset,
            function: UNKNOWN,
            line: None,
            inlined: Vec::new(),
            plt: false,
        };
        match symbol {
            PcSymbol::Unknown => {}
            PcSymbol::Plt => {
                entry.plt = true;
                let any_build = self.objects.first_of_path(object);
                entry.function = self.special(FunctionKey::Plt(any_build), "@plt".into(), object);
            }
            PcSymbol::Static { region } => {
                let name = format!(
                    "<static>@0x{region:x} ({})",
                    self.model.object(object).name()
                );
                entry.function = self.special(FunctionKey::Static(object, region), name, object);
            }
            PcSymbol::Function {
                name,
                linkage_name,
                address: start,
                size,
                aliases,
                source,
                source_line,
                line,
                inlined,
            } => {
                entry.function = self.normal_function(FunctionEntry {
                    name,
                    linkage_name,
                    object: Some(object),
                    address: start,
                    size,
                    kind: FunctionKind::Normal,
                    aliases,
                    source,
                    source_line,
                });
                entry.line = line.map(|l| self.line_id(l));
                entry.inlined = inlined
                    .into_iter()
                    .map(|(name, line)| InlineStep {
                        function: self.inlined_function(object, name),
                        line: line.map(|l| self.line_id(l)),
                    })
                    .collect();
            }
        }
        entry
    }

    /// The id of an out-of-line function of an object: known already by
    /// its address in this build, or the same function of another build
    /// (same name and source file), or new.
    fn normal_function(&mut self, entry: FunctionEntry) -> FunctionId {
        let object = entry.object.unwrap_or_default();
        let key = FunctionKey::Normal(object, entry.address, entry.name.clone());
        if let Some(&id) = self.function_ids.get(&key) {
            return id;
        }
        let (name, source) = (&entry.name, &entry.source);
        let id = match self.matches.find(&self.objects, object, name, source) {
            Some(id) => {
                let starts = &mut self.model.starts_in_other_builds;
                starts.insert((object, id), entry.address);
                id
            }
            None => {
                let (name, source) = (name.clone(), source.clone());
                let id = self.push_function(entry);
                self.matches.add(&self.objects, object, &name, &source, id);
                id
            }
        };
        self.function_ids.insert(key, id);
        id
    }

    fn special(&mut self, key: FunctionKey, name: String, object: ObjectId) -> FunctionId {
        if let Some(&id) = self.function_ids.get(&key) {
            return id;
        }
        let kind = match key {
            FunctionKey::Plt(_) => FunctionKind::Plt,
            _ => FunctionKind::Static,
        };
        let address = match key {
            FunctionKey::Static(_, region) => region,
            _ => 0,
        };
        let id = self.push_function(FunctionEntry::named(name, Some(object), kind, address));
        self.function_ids.insert(key, id);
        id
    }

    /// An inlined function is one entry per object and name; when the
    /// object also has it out of line, that entry is used (the manual's
    /// "Inlined Functions": the out-of-line copy appears in the function
    /// list).
    fn inlined_function(&mut self, object: ObjectId, name: String) -> FunctionId {
        let any_build = self.objects.first_of_path(object);
        let key = FunctionKey::Inlined(any_build, name.clone());
        if let Some(&id) = self.function_ids.get(&key) {
            return id;
        }
        let objects = &self.objects;
        let out_of_line = self.function_ids.iter().find_map(|(k, &id)| match k {
            FunctionKey::Normal(o, _, n)
                if objects.first_of_path(*o) == any_build && *n == name =>
            {
                Some(id)
            }
            _ => None,
        });
        let id = match out_of_line {
            Some(id) => id,
            None => self.push_function(FunctionEntry::named(
                name,
                Some(object),
                FunctionKind::Inlined,
                0,
            )),
        };
        self.function_ids.insert(key, id);
        id
    }

    fn line_id(&mut self, location: SourceLocation) -> LineId {
        let entry = LineEntry {
            file: location.file,
            full_path: location.full_path,
            line: location.line,
        };
        if let Some(&id) = self.line_ids.get(&entry) {
            return id;
        }
        let id = self.model.lines.len() as LineId;
        self.model.lines.push(entry.clone());
        self.line_ids.insert(entry, id);
        id
    }

    /// Names the synchronization objects of experiment `index`'s waits that
    /// a symbol of their object holds (a global or static lock:
    /// `queue_lock`, `table+64`).
    fn name_sync_objects(&mut self, index: u16, mappings: &[Mapping]) {
        let mut addresses: Vec<u64> = self
            .model
            .sync
            .iter()
            .filter(|e| e.experiment == index)
            .map(|e| e.object)
            .collect();
        addresses.sort_unstable();
        addresses.dedup();
        for address in addresses {
            let Some(m) = mappings.iter().find(|m| m.lo <= address && address < m.hi) else {
                continue;
            };
            let offset = address.wrapping_sub(m.base);
            if let Some(name) = self.file(m.object).and_then(|f| f.symbolic_name(offset)) {
                self.model.sync_names.insert((index, address), name);
            }
        }
    }

    /// The symbol file of `object`, opened once; None (with one warning)
    /// when it cannot be read or no longer matches the recording.
    fn file(&mut self, object: ObjectId) -> Option<&ObjectFile> {
        if !self.files.contains_key(&object) {
            let opened = self.open_object(object);
            self.files.insert(object, opened);
        }
        self.files.get(&object).and_then(Option::as_ref)
    }

    fn open_object(&mut self, object: ObjectId) -> Option<ObjectFile> {
        let recorded = self.model.object(object).path.clone();
        if recorded.as_os_str() == "[vdso]" {
            let file = self
                .vdso_size
                .get(&object)
                .and_then(|&size| crate::resolve::own_vdso_file(size))
                .and_then(|path| ObjectFile::open(&path).ok().map(|f| (path, f)));
            return file.map(|(path, file)| {
                self.model.objects[object as usize].symbols_from = Some(path);
                file
            });
        }
        let archived = self.archive.iter().find(|a| a.path == recorded).cloned();
        let path = match symbol_file(&recorded, archived.as_ref(), &self.archives_dir) {
            Ok(path) => path,
            Err(why) => {
                self.warn(format!("{why}; its functions are shown as <Unknown>"));
                return None;
            }
        };
        match ObjectFile::open(&path) {
            Ok(file) => {
                self.model.objects[object as usize].symbols_from = Some(path);
                Some(file)
            }
            Err(e) => {
                self.warn(format!("{}: {e}", path.display()));
                None
            }
        }
    }
}

/// One experiment's clock events merged (see `EventEntry::count`): one
/// entry per context (thread, sample and CPU) and recorded stack. Contexts
/// are few and change seldom from one event to the next, so each has its
/// own small table of stacks, with the running sums in it: what an event
/// touches stays in cache.
#[derive(Default)]
struct MergedEvents {
    contexts: FxHashMap<(u32, u32, u16), u32>,
    last_context: Option<((u32, u32, u16), u32)>,
    /// Per context: recorded stack id -> its entry and the sums so far.
    stacks: Vec<FxHashMap<u64, RunningSum>>,
    entries: Vec<MergedEntry>,
}

/// An entry's sums while its events come.
#[derive(Clone, Copy)]
struct RunningSum {
    entry: u32,
    weight_ns: u32,
    count: u32,
}

/// The events of one context and recorded stack (or as many as one entry
/// can sum).
struct MergedEntry {
    thread: u32,
    sample: u32,
    cpu: u16,
    stack_id: u64,
    first_ns: u64,
    weight_ns: u32,
    count: u32,
}

impl MergedEvents {
    fn context(&mut self, thread: u32, sample: u32, cpu: u16) -> usize {
        let context = (thread, sample, cpu);
        if let Some((last, number)) = self.last_context {
            if last == context {
                return number as usize;
            }
        }
        let next = self.contexts.len() as u32;
        let number = *self.contexts.entry(context).or_insert(next);
        if number == next {
            self.stacks.push(FxHashMap::default());
        }
        self.last_context = Some((context, number));
        number as usize
    }

    /// Adds `record` (of dbx's thread `thread`, in sample `sample`) to the
    /// entry of its context and stack, or as a new entry when there is
    /// none or it is full.
    fn add(&mut self, record: &experiment::ClockEventRecord, thread: u32, sample: u32) {
        let context = self.context(thread, sample, record.cpu);
        let table = &mut self.stacks[context];
        if let Some(sum) = table.get_mut(&record.stack_id) {
            let weight = sum.weight_ns.checked_add(record.weight_ns);
            if let (Some(weight), Some(count)) = (weight, sum.count.checked_add(1)) {
                sum.weight_ns = weight;
                sum.count = count;
                return;
            }
            // Full: its sums are final.
            let full = *sum;
            let entry = &mut self.entries[full.entry as usize];
            (entry.weight_ns, entry.count) = (full.weight_ns, full.count);
        }
        let sum = RunningSum {
            entry: self.entries.len() as u32,
            weight_ns: record.weight_ns,
            count: 1,
        };
        table.insert(record.stack_id, sum);
        self.entries.push(MergedEntry {
            thread,
            sample,
            cpu: record.cpu,
            stack_id: record.stack_id,
            first_ns: record.timestamp_ns,
            weight_ns: record.weight_ns,
            count: 1,
        });
    }

    /// The entries, their sums final.
    fn finish(mut self) -> Vec<MergedEntry> {
        for table in &self.stacks {
            for sum in table.values() {
                let entry = &mut self.entries[sum.entry as usize];
                (entry.weight_ns, entry.count) = (sum.weight_ns, sum.count);
            }
        }
        self.entries
    }
}

/// What is lost with data file `file` of an experiment.
fn missing_file_consequence(file: &str) -> String {
    let lost = match file {
        "log" => {
            "the load objects, samples and threads are unknown: every function shows as <Unknown>"
        }
        "profile" => "no clock event is read",
        "stacks" => "every call stack is lost: events show as <Unknown>",
        _ => "it is ignored",
    };
    format!("no {file} file, though the manifest lists it: {lost}")
}

/// The warning for block file `file` (`profile` or `stacks`) when some of
/// its blocks could not be read: all of them (say, another file copied over
/// it), or some.
/// Bytes the file `name` of `expt` has on disk (not its length: a sparse
/// file cut to a huge length holds little); 0 when unknown.
fn stored_bytes(expt: &Experiment, name: &str) -> usize {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(expt.path().join(name))
        .map_or(0, |m| m.blocks().saturating_mul(512).min(m.len()) as usize)
}

/// Makes room for `more` elements (if memory allows).
fn reserve<T>(data: &mut Vec<T>, more: usize) {
    // Failing is fine: the vector grows as it goes.
    let _ = data.try_reserve(more);
}

fn block_file_warning(shown: &str, file: &str, stats: &experiment::BlockStats) -> Option<String> {
    if stats.damaged == 0 {
        return None;
    }
    Some(if stats.used == 0 {
        format!(
            "{shown}: {file} holds no readable block ({} of {} damaged): nothing is read from it",
            stats.damaged, stats.blocks
        )
    } else {
        format!(
            "{shown}: {} damaged {file} block(s); their valid records are used",
            stats.damaged
        )
    })
}

fn basename(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.to_string_lossy().into_owned())
}

/// The samples of a log, by time.
fn sorted_samples(log: &[experiment::LogEvent]) -> Vec<Sample> {
    let mut samples: Vec<Sample> = log
        .iter()
        .filter_map(|e| match &e.event {
            Event::Sample(s) => Some(s.clone()),
            _ => None,
        })
        .collect();
    samples.sort_by_key(|s| (s.timestamp_ns, s.number));
    samples
}

fn experiment_entry(expt: &Experiment, log: Vec<experiment::LogEvent>) -> ExperimentEntry {
    let start = log.iter().find_map(|e| match &e.event {
        Event::Start(info) => Some((e.timestamp_ns, info.clone())),
        _ => None,
    });
    let first_log = log.iter().map(|e| e.timestamp_ns).find(|&t| t > 0);
    // Without any timestamp in the log the first event's is used (the
    // caller fills it in).
    let start_ns = start.as_ref().map(|(t, _)| *t).or(first_log).unwrap_or(0);
    let last_log = log.iter().map(|e| e.timestamp_ns).max().unwrap_or(0);
    let samples = sorted_samples(&log);
    let ended = log.iter().any(|e| matches!(e.event, Event::End));
    let manifest = expt.manifest();
    ExperimentEntry {
        path: expt.path().to_path_buf(),
        founder: expt.path().to_path_buf(),
        start: start.map(|(_, info)| info),
        start_ns,
        end_ns: last_log.max(start_ns),
        samples,
        threads: Vec::new(),
        log,
        notes: expt.notes(),
        ended,
        format_version: format!("{}.{}", manifest.version_major, manifest.version_minor),
        counters: Vec::new(),
    }
}

/// dbx's thread numbers (`t@N`) of one experiment's threads, the numbers
/// the debugger's `threads` shows: the collector writes each thread's
/// number in its `thread-start` line, and its own watcher thread's in a
/// `collector-thread` line (format 1.1). Logs without numbers (format 1.0)
/// are numbered as the collector numbered them: the process's first thread
/// (tid = pid) 1, then in the order of the `thread-start` lines. A thread
/// with no line (lost with a damaged log) takes the next number after the
/// highest when its first event is read.
struct ThreadNumbers {
    numbers: FxHashMap<u32, u32>,
    highest: u32,
    /// The collector's own threads: (tid, number).
    collector: Vec<(u32, u32)>,
    /// Per tid: the `pthread_t` its line gives and the line's time.
    pthreads: FxHashMap<u32, (u64, u64)>,
    /// The last thread looked up: events come in per-thread blocks.
    last: Option<(u32, u32)>,
}

impl ThreadNumbers {
    fn new(entry: &ExperimentEntry) -> ThreadNumbers {
        let mut threads = ThreadNumbers {
            numbers: FxHashMap::default(),
            highest: 0,
            collector: Vec::new(),
            pthreads: FxHashMap::default(),
            last: None,
        };
        let numbered = entry.log.iter().any(|e| {
            matches!(
                e.event,
                Event::ThreadStart {
                    number: Some(_),
                    ..
                } | Event::CollectorThread { .. }
            )
        });
        if let Some(start) = entry.start.as_ref().filter(|_| !numbered) {
            threads.set(start.pid, 1);
        }
        for event in &entry.log {
            if let Event::ThreadStart {
                tid,
                pthread: Some(pthread),
                ..
            } = event.event
            {
                threads.pthreads.insert(tid, (pthread, event.timestamp_ns));
            }
            match event.event {
                Event::ThreadStart {
                    tid,
                    number: Some(number),
                    ..
                } => threads.set(tid, number),
                Event::ThreadStart {
                    tid, number: None, ..
                } => {
                    threads.number(tid);
                }
                Event::CollectorThread { tid, number } => {
                    threads.collector.push((tid, number));
                    threads.highest = threads.highest.max(number);
                }
                _ => {}
            }
        }
        threads
    }

    fn set(&mut self, tid: u32, number: u32) {
        self.numbers.insert(tid, number);
        self.highest = self.highest.max(number);
    }

    /// The number of thread `tid`, numbering it if it has none yet.
    fn number(&mut self, tid: u32) -> u32 {
        if let Some((last_tid, number)) = self.last {
            if last_tid == tid {
                return number;
            }
        }
        let number = match self.numbers.get(&tid) {
            Some(&number) => number,
            None => {
                let number = self.highest + 1;
                self.set(tid, number);
                number
            }
        };
        self.last = Some((tid, number));
        number
    }

    /// The threads by number.
    fn into_entries(self) -> Vec<ThreadEntry> {
        let pthreads = self.pthreads;
        let program = self.numbers.into_iter().map(|(tid, number)| ThreadEntry {
            number,
            tid,
            collector: false,
            pthread: pthreads.get(&tid).copied(),
        });
        let collector = self.collector.into_iter().map(|(tid, number)| ThreadEntry {
            number,
            tid,
            collector: true,
            pthread: None,
        });
        let mut entries: Vec<ThreadEntry> = program.chain(collector).collect();
        entries.sort_by_key(|t| (t.number, t.tid));
        entries
    }
}

/// The timestamps a collector could have written: from shortly before the
/// experiment started to shortly after it ended. Anything else is garbage
/// in a block that still looks committed.
#[derive(Clone, Copy)]
struct PlausibleTimes {
    range: Option<(u64, u64)>,
}

impl PlausibleTimes {
    fn of(log: &[experiment::LogEvent]) -> PlausibleTimes {
        const SLACK_NS: u64 = 1_000_000_000;
        const LIVE_LIMIT_NS: u64 = 366 * 86_400 * 1_000_000_000;
        let start = log.iter().find_map(|e| match e.event {
            Event::Start(_) => Some(e.timestamp_ns),
            _ => None,
        });
        let range = start.map(|start| {
            let closed = log
                .iter()
                .any(|e| matches!(e.event, Event::End | Event::Terminated { .. }));
            let last_log = log.iter().map(|e| e.timestamp_ns).max().unwrap_or(start);
            let end = match closed {
                true => last_log.saturating_add(SLACK_NS),
                false => start.saturating_add(LIVE_LIMIT_NS),
            };
            (start.saturating_sub(SLACK_NS), end)
        });
        PlausibleTimes { range }
    }

    fn contains(&self, timestamp_ns: u64) -> bool {
        self.range
            .is_none_or(|(lo, hi)| (lo..=hi).contains(&timestamp_ns))
    }
}

/// [`sample_of`] for events that come mostly in time order: the interval
/// of the last answer is tried first.
struct SampleIntervals<'a> {
    samples: &'a [experiment::log::Sample],
    /// (after, up to) in ns, and the sample of that interval.
    last: Option<(u64, u64, u32)>,
}

impl<'a> SampleIntervals<'a> {
    fn new(samples: &'a [experiment::log::Sample]) -> Self {
        SampleIntervals {
            samples,
            last: None,
        }
    }

    fn of(&mut self, timestamp_ns: u64) -> u32 {
        if let Some((after, up_to, number)) = self.last {
            if after < timestamp_ns && timestamp_ns <= up_to {
                return number;
            }
        }
        let index = self
            .samples
            .partition_point(|s| s.timestamp_ns < timestamp_ns);
        let after = match index.checked_sub(1) {
            Some(i) => self.samples[i].timestamp_ns,
            None => 0,
        };
        let up_to = self.samples.get(index).map_or(u64::MAX, |s| s.timestamp_ns);
        let number = sample_of(self.samples, timestamp_ns);
        self.last = Some((after, up_to, number));
        number
    }
}

/// Sample N covers (sample N-1, sample N]; events after the last sample
/// fall in the still-open sample last+1.
fn sample_of(samples: &[experiment::log::Sample], timestamp_ns: u64) -> u32 {
    let index = samples.partition_point(|s| s.timestamp_ns < timestamp_ns);
    match samples.get(index) {
        Some(s) => s.number as u32,
        None => samples.last().map_or(1, |s| s.number as u32 + 1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(pcs: &[u64], buffer: &mut Vec<u8>) -> usize {
        let start = buffer.len();
        buffer.resize(start + 16 + 8 * pcs.len(), 0);
        let size = experiment::layout::write_stack_record(
            &mut buffer[start..],
            StackStatus::Complete,
            pcs,
        );
        assert_eq!(size, Some(16 + 8 * pcs.len()));
        start
    }

    #[test]
    fn sample_intervals_answer_as_sample_of() {
        let sample = |timestamp_ns, number| experiment::log::Sample {
            timestamp_ns,
            number,
            cause: experiment::layout::SampleCause::Periodic,
            label: String::new(),
            utime_ns: 0,
            stime_ns: 0,
            minflt: 0,
            majflt: 0,
            nvcsw: 0,
            nivcsw: 0,
            inblock: 0,
            oublock: 0,
            rss_kb: 0,
        };
        let samples = [sample(10, 1), sample(20, 2), sample(20, 3), sample(35, 4)];
        let mut intervals = SampleIntervals::new(&samples);
        let times = [0, 5, 10, 11, 20, 20, 21, 35, 36, 1_000, 3, 19, 35, 12];
        for t in times {
            assert_eq!(intervals.of(t), sample_of(&samples, t), "at {t}");
        }
    }

    /// The 32-byte comparison finds what a word-by-word one does, the
    /// first difference anywhere in or after a run of four words.
    #[test]
    fn common_suffixes_are_counted_in_whole_words() {
        let bytes =
            |words: &[u64]| -> Vec<u8> { words.iter().flat_map(|w| w.to_le_bytes()).collect() };
        for len_a in 0..11usize {
            for len_b in 0..11usize {
                for differ in 0..=len_a.min(len_b) {
                    let b: Vec<u64> = (0..len_b as u64).map(|i| 100 + i).collect();
                    // `a` ends as `b` does for its last `differ` words, one word
                    // before them differs (when there is one).
                    let mut a: Vec<u64> = (0..len_a as u64).map(|i| 900 + i).collect();
                    for k in 1..=differ {
                        a[len_a - k] = b[len_b - k];
                    }
                    let naive = a
                        .iter()
                        .rev()
                        .zip(b.iter().rev())
                        .take_while(|(x, y)| x == y)
                        .count();
                    assert_eq!(naive, differ);
                    assert_eq!(
                        common_suffix_words(&bytes(&a), &bytes(&b)),
                        naive,
                        "{a:?} {b:?}"
                    );
                }
            }
        }
        // A differing byte inside a word ends the run there.
        let (a, mut b) = (bytes(&[1, 2, 3, 4, 5, 6]), bytes(&[1, 2, 3, 4, 5, 6]));
        b[8 * 3 + 5] ^= 1;
        assert_eq!(common_suffix_words(&a, &b), 2);
    }

    #[test]
    fn records_share_outer_frames_with_the_one_before() {
        let mut bytes = Vec::new();
        let stacks_pcs: [&[u64]; 5] = [
            &[0x10, 0x20, 0x30, 0x40],
            &[0x11, 0x30, 0x40],
            // Its leaf is the first record's caller: a slot of its own.
            &[0x30, 0x40],
            &[0x50],
            &[0x12, 0x20, 0x30, 0x40],
        ];
        let at: Vec<usize> = stacks_pcs
            .iter()
            .map(|pcs| record(pcs, &mut bytes))
            .collect();
        let parse = |i: usize| StackRecordRef::parse(&bytes[at[i]..]).expect("a record");
        let mut stacks = RecordedStacks::default();
        let mut table = StackTable::default();
        for i in 0..at.len() {
            stacks.add(parse(i), &mut table);
        }
        let frames = |table: &StackTable, position: u32| {
            let mut out = Vec::new();
            let mut at = position;
            while at != ROOT_POSITION {
                out.push(stacks.slots.pc(table.cells()[at as usize]));
                at = table.parent(at);
            }
            out
        };
        for (i, pcs) in stacks_pcs.iter().enumerate() {
            let shown = frames(&table, stacks.records[i].position);
            let recorded: Vec<(u64, bool)> = pcs
                .iter()
                .enumerate()
                .map(|(d, &pc)| (pc, d == 0))
                .collect();
            assert_eq!(shown, recorded, "record {i}");
        }
        // The second record shares 0x30 and 0x40 with the first, the
        // third 0x40 with the second; the last shares nothing with the one
        // before it (only records side by side are compared).
        let frame_cells = table.cells().iter().filter(|&&c| c & LINK == 0).count();
        assert_eq!(frame_cells, 4 + 1 + 1 + 1 + 4);
        assert_eq!(table.parent(stacks.records[1].position), {
            table.parent(table.parent(stacks.records[0].position))
        });
    }
}
