//! An experiment's heap events replayed in order, on a thread of their
//! own, while the loader reads the stacks and the other events: the
//! blocks in use, the frees, the peak in use and the blocks never freed.
//! The allocations go to the loader in batches as they are replayed, so
//! that it gives them their threads and stacks while the replay goes on.

use super::{reserve, stored_bytes, Builder, Mapping, PlausibleTimes, RecordedStacks};
use super::{SampleIntervals, Tally, ThreadNumbers, EVENT_BATCH};
use crate::model::{HeapEntry, HeapReplay};
use crate::u64_table::U64Table;
use crate::Result;
use experiment::heap::{HeapOp, MIN_ALLOCATING_RECORD_SIZE};
use experiment::log::Sample;
use experiment::{BlockStats, Experiment};
use rustc_hash::FxHashMap;
use std::sync::mpsc::{Receiver, Sender};
use std::thread::JoinHandle;

/// An allocation replayed, on its way to the model (a `HeapEntry` once
/// its thread is numbered and its stack looked up). As small as it can
/// be: a few million may wait while the loader reads the stacks.
#[derive(Clone, Copy)]
struct Allocation {
    /// The recorded thread id.
    tid: u32,
    sample: u32,
    time_ns: u64,
    bytes: u64,
    /// The recorded stack's id.
    stack_id: u64,
}

/// The recorded stacks of `allocations`.
fn stack_ids(allocations: &[Allocation]) -> impl Iterator<Item = u64> + '_ {
    allocations.iter().map(|a| a.stack_id)
}

/// Allocations sent to the loader at a time.
const BATCH: usize = 1 << 14;

/// What the replay sends the loader as it goes.
enum Replayed {
    /// The next allocations, in order.
    Allocations(Vec<Allocation>),
    /// Forget the allocations sent: the replay starts again from the
    /// first event (some thread's order numbers went down, and the order
    /// had to be found by a sort).
    Restart,
}

/// What the replay found once every event was applied.
struct ReplayedSummary {
    /// The allocations whose block was never freed: bit i (of word
    /// i / 64) for the i-th allocation sent.
    leaked: Vec<u64>,
    replay: HeapReplay,
    tally: Tally,
    stats: BlockStats,
}

/// A heap replay under way: [`Builder::receive_heap`] ends it.
pub(super) struct HeapReplaying {
    /// Room for the allocations the heap file may hold (an allocating
    /// record takes at least `MIN_ALLOCATING_RECORD_SIZE` bytes), reserved
    /// in the model (not touched) so that they are never copied as they
    /// come; the table of blocks in use has as much, to grow in place.
    room: usize,
    allocations: Receiver<Replayed>,
    /// Batches given back to the replay to be filled again.
    recycle: Sender<Vec<Allocation>>,
    thread: JoinHandle<Result<ReplayedSummary>>,
}

/// Starts replaying the heap events of `expt` (experiment `index`) on a
/// thread of their own.
pub(super) fn start(
    expt: &Experiment,
    index: u16,
    plausible: PlausibleTimes,
    samples: Vec<Sample>,
) -> HeapReplaying {
    let (sender, allocations) = std::sync::mpsc::channel();
    let (recycle, recycled) = std::sync::mpsc::channel();
    let room = stored_bytes(expt, "heap") / MIN_ALLOCATING_RECORD_SIZE;
    let expt = expt.clone();
    let thread = std::thread::spawn(move || {
        replay(&expt, index, room, &plausible, &samples, sender, recycled)
    });
    HeapReplaying {
        room,
        allocations,
        recycle,
        thread,
    }
}

/// Replays `expt`'s heap events in order: the allocations sent on
/// `sender` in batches (filling those that come back on `recycled`). At
/// most `room` blocks can be in use at once.
fn replay(
    expt: &Experiment,
    index: u16,
    room: usize,
    plausible: &PlausibleTimes,
    samples: &[Sample],
    sender: Sender<Replayed>,
    recycled: Receiver<Vec<Allocation>>,
) -> Result<ReplayedSummary> {
    let mut samples = SampleIntervals::new(samples);
    let mut started = false;
    let new_load = || {
        if std::mem::replace(&mut started, true) {
            let _ = sender.send(Replayed::Restart);
        }
        HeapLoad::new(index, room, sender.clone(), &recycled)
    };
    let (mut heap, stats) = expt.heap_events_in_order(new_load, |heap, record| {
        let e = record.event;
        let at = e.timestamp_ns;
        if !heap.tally.admit(plausible, at, at, at) {
            return;
        }
        if e.op == HeapOp::Free && e.address != 0 {
            heap.replay(Pending::Free(e.address));
            return;
        }
        if !e.op.allocates() || e.op == HeapOp::Mmap || e.address == 0 {
            return;
        }
        heap.replay(Pending::Allocation {
            address: e.address,
            allocation: Allocation {
                tid: record.tid,
                sample: samples.of(e.timestamp_ns),
                time_ns: e.timestamp_ns,
                bytes: e.size,
                stack_id: e.stack_id,
            },
        });
    })?;
    heap.flush();
    Ok(heap.finish(stats))
}

/// The replay's state: the blocks in use and the allocations not sent yet.
struct HeapLoad<'a> {
    /// The blocks in use, by address.
    live: U64Table<LiveBlock>,
    /// Events whose blocks' slots are being fetched, oldest first.
    pending: std::collections::VecDeque<Pending>,
    /// Bytes of the blocks in use.
    in_use: u64,
    replay: HeapReplay,
    tally: Tally,
    /// Allocations made so far (sent, and in `batch`).
    made: u32,
    /// Which of them are in use: bit i (of word i / 64) for the i-th.
    /// Kept as they come and go (an allocation's bit is set in order, a
    /// free's in a megabyte or two), so that the end needs no pass over
    /// the table.
    in_use_bits: Vec<u64>,
    /// The sizes of the blocks in use too large for `LiveBlock::bytes`.
    large: FxHashMap<u32, u64>,
    batch: Vec<Allocation>,
    sender: Sender<Replayed>,
    recycled: &'a Receiver<Vec<Allocation>>,
}

/// A heap event waiting for the slot of its block.
#[derive(Clone, Copy)]
enum Pending {
    /// A free of the block at this address (not null).
    Free(u64),
    /// A block of the malloc family made at `address` (not null).
    Allocation {
        address: u64,
        allocation: Allocation,
    },
}

/// How many events after one its block's slot is fetched while the
/// events before it are applied.
const REPLAY_AHEAD: usize = 16;

/// A block in use during the replay: its allocation's index, and its size
/// when that fits (`BYTES_ELSEWHERE`: `HeapLoad::large` has it), so that a
/// slot of the table is 16 bytes.
#[derive(Debug, Clone, Copy, Default)]
struct LiveBlock {
    allocation: u32,
    bytes: u32,
}

/// `LiveBlock::bytes` of a block too large for it.
const BYTES_ELSEWHERE: u32 = u32::MAX;

/// The word and the bit of allocation `index` in a bit set of them.
fn bit_of(index: u32) -> (usize, u64) {
    (index as usize / 64, 1 << (index % 64))
}

impl<'a> HeapLoad<'a> {
    fn new(
        experiment: u16,
        room: usize,
        sender: Sender<Replayed>,
        recycled: &'a Receiver<Vec<Allocation>>,
    ) -> HeapLoad<'a> {
        HeapLoad {
            live: U64Table::with_room(room),
            pending: std::collections::VecDeque::with_capacity(REPLAY_AHEAD + 1),
            in_use: 0,
            replay: HeapReplay {
                experiment,
                ..HeapReplay::default()
            },
            tally: Tally::default(),
            made: 0,
            in_use_bits: Vec::new(),
            large: FxHashMap::default(),
            batch: Vec::with_capacity(BATCH),
            sender,
            recycled,
        }
    }

    /// Applies `event` after the events given before it: its block's slot
    /// is fetched now and the event applied a few events later (the
    /// events in between are applied meanwhile).
    fn replay(&mut self, event: Pending) {
        let address = match event {
            Pending::Free(address) => address,
            Pending::Allocation { address, .. } => address,
        };
        self.live.prefetch(address);
        self.pending.push_back(event);
        if self.pending.len() > REPLAY_AHEAD {
            self.apply_oldest();
        }
    }

    /// Applies the events still waiting, and sends the last allocations.
    fn flush(&mut self) {
        while !self.pending.is_empty() {
            self.apply_oldest();
        }
        self.send();
    }

    fn apply_oldest(&mut self) {
        match self.pending.pop_front() {
            Some(Pending::Free(address)) => self.free(address),
            Some(Pending::Allocation {
                address,
                allocation,
            }) => self.allocate(address, allocation),
            None => {}
        }
    }

    /// A free of the block at `address` (not null).
    fn free(&mut self, address: u64) {
        self.replay.frees += 1;
        match self.live.remove(address) {
            Some(block) => self.release(block),
            None => self.replay.unknown_frees += 1,
        }
    }

    /// A block of the malloc family made at `address`: one still in use
    /// there is replaced, as the allocator's reuse of an address says it
    /// was freed unseen.
    fn allocate(&mut self, address: u64, allocation: Allocation) {
        let bytes = allocation.bytes;
        let block = LiveBlock {
            allocation: self.made,
            bytes: u32::try_from(bytes).unwrap_or(BYTES_ELSEWHERE),
        };
        if block.bytes == BYTES_ELSEWHERE {
            self.large.insert(self.made, bytes);
        }
        let (word, bit) = bit_of(self.made);
        if word == self.in_use_bits.len() {
            self.in_use_bits.push(0);
        }
        self.in_use_bits[word] |= bit;
        self.made += 1;
        if let Some(old) = self.live.insert(address, block) {
            self.release(old);
        }
        self.in_use += bytes;
        if self.in_use > self.replay.peak_bytes {
            self.replay.peak_bytes = self.in_use;
            self.replay.peak_at_ns = allocation.time_ns;
        }
        self.batch.push(allocation);
        if self.batch.len() >= BATCH {
            self.send();
        }
    }

    /// Sends the allocations of `batch` (the loader gives the batch back
    /// once it took them).
    fn send(&mut self) {
        if self.batch.is_empty() {
            return;
        }
        let next = match self.recycled.try_recv() {
            Ok(batch) => batch,
            Err(_) => Vec::with_capacity(BATCH),
        };
        let batch = std::mem::replace(&mut self.batch, next);
        // The loader gone (it failed) leaves nothing to send to.
        let _ = self.sender.send(Replayed::Allocations(batch));
    }

    /// `block` is no longer in use (freed, or its address taken again).
    fn release(&mut self, block: LiveBlock) {
        let bytes = match block.bytes {
            BYTES_ELSEWHERE => self.large.remove(&block.allocation).unwrap_or(0),
            bytes => u64::from(bytes),
        };
        self.in_use -= bytes;
        let (word, bit) = bit_of(block.allocation);
        self.in_use_bits[word] &= !bit;
    }

    /// What the replay found (its sender dropped: the loader's receiving
    /// ends).
    fn finish(self, stats: BlockStats) -> ReplayedSummary {
        ReplayedSummary {
            leaked: self.in_use_bits,
            replay: self.replay,
            tally: self.tally,
            stats,
        }
    }
}

impl Builder {
    /// Ends `replaying` (the heap replay of experiment `experiment`): its
    /// allocations, as they come, get their thread numbers and model
    /// stacks (in the order they were made, as the other events do) and
    /// join the model, those never freed marked leaked. Returns what
    /// reading the heap file found.
    pub(super) fn receive_heap(
        &mut self,
        experiment: u16,
        replaying: HeapReplaying,
        stacks: &mut RecordedStacks,
        threads: &mut ThreadNumbers,
        tally: &mut Tally,
        mappings: &[Mapping],
    ) -> Result<BlockStats> {
        let first = self.model.heap.len();
        reserve(&mut self.model.heap, replaying.room);
        for replayed in &replaying.allocations {
            match replayed {
                Replayed::Allocations(mut batch) => {
                    self.resolve_heap(experiment, &batch, stacks, threads, tally, mappings);
                    batch.clear();
                    // The replay gone (it failed) wants no batch back.
                    let _ = replaying.recycle.send(batch);
                }
                Replayed::Restart => self.model.heap.truncate(first),
            }
        }
        let summary = match replaying.thread.join() {
            Ok(replayed) => replayed?,
            Err(panic) => std::panic::resume_unwind(panic),
        };
        for (word, &bits) in summary.leaked.iter().enumerate() {
            let mut rest = bits;
            while rest != 0 {
                let index = word * 64 + rest.trailing_zeros() as usize;
                self.model.heap[first + index].leaked = true;
                rest &= rest - 1;
            }
        }
        tally.add(&summary.tally);
        self.model.heap_replays.push(summary.replay);
        Ok(summary.stats)
    }

    /// Adds the allocations of `batch` to the model with their thread
    /// numbers and model stacks. The stacks are looked up a group of
    /// allocations at a time, what a group needs fetched in three steps
    /// while the groups before it are worked on: its table entries, then
    /// the records of the stacks no allocation used yet, then their
    /// innermost frames (each step needs what the one before fetched).
    fn resolve_heap(
        &mut self,
        experiment: u16,
        batch: &[Allocation],
        stacks: &mut RecordedStacks,
        threads: &mut ThreadNumbers,
        tally: &mut Tally,
        mappings: &[Mapping],
    ) {
        let groups: Vec<&[Allocation]> = batch.chunks(EVENT_BATCH).collect();
        // Step s fetches group s's entries, s - 1's records and s - 2's
        // frames (their records kept at step s - 1), and adds group s - 3.
        for step in 0..groups.len() + 3 {
            // Group s - 2's records, kept by the step before.
            if (2..groups.len() + 2).contains(&step) {
                stacks.prefetch_cells(self.stacks.cells());
            }
            if let Some(&group) = step.checked_sub(1).and_then(|g| groups.get(g)) {
                stacks.prefetch_records(stack_ids(group));
            }
            for id in groups
                .get(step)
                .into_iter()
                .flat_map(|&group| stack_ids(group))
            {
                stacks.by_id.prefetch(id);
            }
            let Some(&group) = step.checked_sub(3).and_then(|g| groups.get(g)) else {
                continue;
            };
            for allocation in group {
                let stack = self.model_stack(experiment, stacks, allocation.stack_id, mappings);
                self.model.heap.push(HeapEntry {
                    experiment,
                    leaked: false,
                    thread: threads.number(allocation.tid),
                    time_ns: allocation.time_ns,
                    bytes: allocation.bytes,
                    stack: tally.stack(stack),
                    sample: allocation.sample,
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use experiment::heap::{HeapDelta, HeapEvent, HeapOp, MAX_HEAP_RECORD_SIZE};
    use experiment::layout::{BlockWriter, BLOCK_SIZE, KIND_HEAP};
    use std::path::{Path, PathBuf};

    fn temp_expt(tag: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("rdbx-heap-replay-{tag}-{}.er", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let mut buf = [0u8; 512];
        let n =
            experiment::text::write_manifest_into(&mut buf, "heap", "heap-trace", "test").unwrap();
        std::fs::write(dir.join("manifest"), &buf[..n]).unwrap();
        dir
    }

    /// Writes a `heap` file of `blocks`: (tid, events) each, in file order.
    fn write_heap(dir: &Path, blocks: &[(u32, Vec<HeapEvent>)]) {
        let mut file = Vec::new();
        for (index, (tid, events)) in blocks.iter().enumerate() {
            let mut block = vec![0u8; BLOCK_SIZE];
            let first = events.first().map_or(0, |e| e.timestamp_ns);
            let mut writer =
                BlockWriter::claim(&mut block, KIND_HEAP, *tid, index as u32, first).unwrap();
            let mut delta = HeapDelta::block_start(first);
            for event in events {
                let mut record = [0u8; MAX_HEAP_RECORD_SIZE];
                let len = delta.encode(event, &mut record);
                assert!(writer.push_bytes(&record[..len]), "block full");
            }
            writer.commit();
            file.extend_from_slice(&block);
        }
        std::fs::write(dir.join("heap"), file).unwrap();
    }

    fn event(op: HeapOp, order: u64, address: u64, size: u64) -> HeapEvent {
        HeapEvent {
            op,
            order,
            timestamp_ns: 1_000 + order,
            address,
            size,
            old_address: 0,
            stack_id: 7,
        }
    }

    /// The allocations (time, bytes, leaked) and the frees, replayed
    /// plainly from the events sorted by order number.
    fn plain_replay(blocks: &[(u32, Vec<HeapEvent>)]) -> (Vec<(u64, u64, bool)>, u64) {
        let mut events: Vec<HeapEvent> = blocks.iter().flat_map(|b| b.1.clone()).collect();
        events.sort_by_key(|e| e.order);
        let mut made = Vec::new();
        let mut live = std::collections::HashMap::new();
        let mut frees = 0;
        for e in events {
            if e.op == HeapOp::Free {
                frees += 1;
                live.remove(&e.address);
            } else {
                live.insert(e.address, made.len());
                made.push((e.timestamp_ns, e.size, false));
            }
        }
        for index in live.into_values() {
            made[index].2 = true;
        }
        (made, frees)
    }

    fn check_load(dir: &Path, blocks: &[(u32, Vec<HeapEvent>)]) {
        write_heap(dir, blocks);
        let model = crate::load::load(&[dir.to_path_buf()], false).unwrap();
        let loaded: Vec<(u64, u64, bool)> = model
            .heap
            .iter()
            .map(|e| (e.time_ns, e.bytes, e.leaked))
            .collect();
        let (expected, frees) = plain_replay(blocks);
        let base =
            expected.first().map_or(0, |e| e.0) - model.heap.first().map_or(0, |e| e.time_ns);
        let expected: Vec<_> = expected.iter().map(|&(t, b, l)| (t - base, b, l)).collect();
        assert_eq!(loaded.len(), expected.len());
        assert!(loaded == expected, "allocations differ from a plain replay");
        assert_eq!(model.heap_replays.len(), 1);
        assert_eq!(model.heap_replays[0].frees, frees);
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// Two threads' allocations, interleaved by order number over several
    /// blocks each, many batches of them: the model holds each once, in
    /// order, those never freed leaked, as a plain replay says.
    #[test]
    fn allocations_reach_the_model_in_batches_once_each() {
        let mut blocks = Vec::new();
        let per_block = 2_000u64;
        for round in 0..12u64 {
            for thread in 0..2u64 {
                let events: Vec<HeapEvent> = (0..per_block)
                    .map(|i| {
                        let n = round * per_block + i;
                        let order = 2 * n + thread;
                        let address = 0x1000 + 0x10 * (order / 4);
                        match order % 4 {
                            // A block and its free (order 1 frees order 0's
                            // address); blocks of order 2 are never freed.
                            1 => event(HeapOp::Free, order, address, 0),
                            3 => event(HeapOp::Malloc, order, address + 0x8, 24),
                            _ => event(HeapOp::Malloc, order, address, 16 + order % 7),
                        }
                    })
                    .collect();
                blocks.push((thread as u32 + 1, events));
            }
        }
        assert!(blocks.iter().map(|b| b.1.len()).sum::<usize>() > 2 * super::BATCH);
        check_load(&temp_expt("batches"), &blocks);
    }

    /// A thread whose numbers go down after a batch was sent: the replay
    /// starts again from a sort and the model holds each allocation once.
    #[test]
    fn a_replay_started_again_leaves_no_allocation_twice() {
        let n = super::BATCH as u64 + 500;
        let first: Vec<HeapEvent> = (0..n)
            .map(|order| event(HeapOp::Malloc, 2 * order, 0x10_0000 + 0x20 * order, 32))
            .collect();
        // Numbers below those before: damaged data, sorted.
        let falling = vec![
            event(HeapOp::Free, 1, 0x10_0000, 0),
            event(HeapOp::Malloc, 3, 0x90_0000, 8),
        ];
        let other: Vec<HeapEvent> = (0..100)
            .map(|i| event(HeapOp::Malloc, 2 * n + i, 0x50_0000 + 0x20 * i, 48))
            .collect();
        let mut blocks: Vec<(u32, Vec<HeapEvent>)> =
            first.chunks(1_000).map(|c| (1, c.to_vec())).collect();
        blocks.extend([(2, other), (1, falling)]);
        check_load(&temp_expt("restart"), &blocks);
    }
}
