//! The heap as the heap-tracing events leave it: which blocks are in use
//! (replayed in order), and which of them a program can still reach — the
//! leak check dbx's runtime checking did at any stop, with valgrind's and
//! LeakSanitizer's classes: still reachable (a chain of pointers from the
//! roots to the block's start), possibly lost (reached only through
//! pointers into its middle), definitely lost (no pointer to it at all)
//! and indirectly lost (pointed to only from lost blocks).
//!
//! The scan is given the roots (the process's writable memory outside the
//! heap, every thread's stack above its stack pointer, its registers) and
//! a way to read memory; what it reads is the caller's business (a stopped
//! process under the debugger).

use experiment::heap::HeapOp;
use experiment::{Experiment, HeapEventRecord};
use rustc_hash::FxHashMap;
use std::ops::Range;

/// A block in use: what made it, where and when.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Block {
    pub address: u64,
    pub size: u64,
    pub op: HeapOp,
    /// The event's order number (exact across threads).
    pub order: u64,
    pub timestamp_ns: u64,
    pub tid: u32,
    pub stack_id: u64,
}

impl Block {
    /// The bytes a pointer may point into (a zero-sized block has its
    /// start).
    fn span(&self) -> Range<u64> {
        self.address..self.address.saturating_add(self.size.max(1))
    }
}

/// The heap after replaying events in order.
#[derive(Debug, Default)]
pub struct HeapState {
    /// Blocks of the malloc family in use, by address.
    blocks: Vec<Block>,
    /// Anonymous mappings not unmapped, by address.
    mappings: Vec<Block>,
    /// Frees of blocks no traced allocation made (allocated before tracing
    /// started, or by a call that was not recorded).
    pub unknown_frees: u64,
    pub allocations: u64,
    pub bytes_allocated: u64,
    pub frees: u64,
}

impl HeapState {
    /// Replays `events`, which must be sorted by order number
    /// (`Experiment::heap_events`).
    pub fn replay<'a>(events: impl IntoIterator<Item = &'a HeapEventRecord>) -> HeapState {
        let mut replay = Replay::default();
        for record in events {
            replay.apply(record);
        }
        replay.finish()
    }

    /// Replays the heap events of `expt` in order, read as they are
    /// replayed (`Experiment::heap_events_in_order`) rather than held and
    /// sorted first.
    pub fn of_experiment(expt: &Experiment) -> experiment::Result<HeapState> {
        let (replay, _) =
            expt.heap_events_in_order(Replay::default, |replay, record| replay.apply(&record))?;
        Ok(replay.finish())
    }

    /// The blocks in use, by address.
    pub fn blocks(&self) -> &[Block] {
        &self.blocks
    }

    /// The anonymous mappings not unmapped, by address.
    pub fn mappings(&self) -> &[Block] {
        &self.mappings
    }

    /// The block in use that holds `address`.
    pub fn block_holding(&self, address: u64) -> Option<&Block> {
        find(&self.blocks, address)
    }

    /// The mapping that holds `address`.
    pub fn mapping_holding(&self, address: u64) -> Option<&Block> {
        find(&self.mappings, address)
    }
}

/// A replay under way: the blocks and mappings in use by address.
#[derive(Default)]
struct Replay {
    blocks: FxHashMap<u64, Block>,
    mappings: FxHashMap<u64, Block>,
    state: HeapState,
}

impl Replay {
    fn apply(&mut self, record: &HeapEventRecord) {
        let e = record.event;
        let block = Block {
            address: e.address,
            size: e.size,
            op: e.op,
            order: e.order,
            timestamp_ns: e.timestamp_ns,
            tid: record.tid,
            stack_id: e.stack_id,
        };
        let state = &mut self.state;
        match e.op {
            HeapOp::Free if e.address == 0 => {}
            HeapOp::Free => {
                state.frees += 1;
                if self.blocks.remove(&e.address).is_none() {
                    state.unknown_frees += 1;
                }
            }
            HeapOp::Mmap => {
                self.mappings.insert(e.address, block);
            }
            HeapOp::Munmap => unmap(
                &mut self.mappings,
                e.address..e.address.saturating_add(e.size),
            ),
            _ if e.address == 0 => {}
            _ => {
                state.allocations += 1;
                state.bytes_allocated += e.size;
                self.blocks.insert(e.address, block);
            }
        }
    }

    fn finish(self) -> HeapState {
        let mut state = self.state;
        state.blocks = sorted(self.blocks);
        state.mappings = sorted(self.mappings);
        state
    }
}

fn sorted(blocks: FxHashMap<u64, Block>) -> Vec<Block> {
    let mut list: Vec<Block> = blocks.into_values().collect();
    list.sort_unstable_by_key(|b| b.address);
    list
}

/// munmap of `range`: mappings inside it are gone (a partial unmap keeps
/// a mapping's record: its start is still mapped or moved).
fn unmap(mappings: &mut FxHashMap<u64, Block>, range: Range<u64>) {
    mappings.retain(|&start, block| {
        !(range.start <= start && start.saturating_add(block.size) <= range.end)
    });
}

fn find(sorted: &[Block], address: u64) -> Option<&Block> {
    let after = sorted.partition_point(|b| b.address <= address);
    sorted
        .get(after.checked_sub(1)?)
        .filter(|b| b.span().contains(&address))
}

/// What a leak check found a block to be.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Reach {
    /// No pointer to it anywhere the program can look.
    DefinitelyLost,
    /// Pointed to only from lost blocks.
    IndirectlyLost,
    /// Reached only through pointers into its middle.
    PossiblyLost,
    /// A chain of pointers from the roots to its start.
    StillReachable,
}

impl Reach {
    pub fn name(self) -> &'static str {
        match self {
            Reach::DefinitelyLost => "definitely lost",
            Reach::IndirectlyLost => "indirectly lost",
            Reach::PossiblyLost => "possibly lost",
            Reach::StillReachable => "still reachable",
        }
    }

    /// The JSON key of the class's totals.
    pub fn key(self) -> &'static str {
        match self {
            Reach::DefinitelyLost => "definitely_lost",
            Reach::IndirectlyLost => "indirectly_lost",
            Reach::PossiblyLost => "possibly_lost",
            Reach::StillReachable => "still_reachable",
        }
    }
}

/// Where the program's pointers may be.
#[derive(Clone, Debug, Default)]
pub struct Roots {
    /// Memory to scan, 8-byte words (a range's odd ends are left out).
    pub ranges: Vec<Range<u64>>,
    /// Values held outside memory (threads' registers).
    pub values: Vec<u64>,
}

/// Reads `buf.len()` bytes at an address; false when unreadable.
pub type ReadMemory<'a> = dyn FnMut(u64, &mut [u8]) -> bool + 'a;

/// Largest piece of memory read at once.
const CHUNK: usize = 1 << 16;

/// Classifies every block of `blocks` (sorted by address) by what the
/// roots reach, as valgrind's memcheck does: start pointers from the roots
/// and from reachable blocks make blocks reachable; pointers into a
/// block's middle make it possibly lost (and what it points to too);
/// among the blocks nothing reaches, the first of each group that points
/// to the others is definitely lost and the rest indirectly lost.
pub fn leak_check(blocks: &[Block], roots: &Roots, read: &mut ReadMemory) -> Vec<Reach> {
    let mut marks: Vec<Option<Reach>> = vec![None; blocks.len()];
    let mut work: Vec<usize> = Vec::new();
    let reach =
        |marks: &mut Vec<Option<Reach>>, work: &mut Vec<usize>, value: u64, from_possible: bool| {
            let Some(index) = index_holding(blocks, value) else {
                return;
            };
            let found = if value == blocks[index].address && !from_possible {
                Reach::StillReachable
            } else {
                Reach::PossiblyLost
            };
            if marks[index].is_none_or(|m| m < found) {
                marks[index] = Some(found);
                work.push(index);
            }
        };
    for &value in &roots.values {
        reach(&mut marks, &mut work, value, false);
    }
    for range in &roots.ranges {
        scan(range.clone(), read, |value| {
            reach(&mut marks, &mut work, value, false)
        });
    }
    while let Some(index) = work.pop() {
        let from_possible = marks[index] == Some(Reach::PossiblyLost);
        scan(blocks[index].span(), read, |value| {
            reach(&mut marks, &mut work, value, from_possible)
        });
    }
    cliques(blocks, &mut marks, read);
    marks
        .into_iter()
        .map(|m| m.unwrap_or(Reach::DefinitelyLost))
        .collect()
}

/// Among the blocks nothing reached (None), each one in address order
/// not yet taken leads a group: it is definitely lost, what it points to
/// (transitively) indirectly lost — also a group leader found before.
fn cliques(blocks: &[Block], marks: &mut [Option<Reach>], read: &mut ReadMemory) {
    let unreached: Vec<bool> = marks.iter().map(Option::is_none).collect();
    for leader in 0..blocks.len() {
        if !unreached[leader] || marks[leader].is_some() {
            continue;
        }
        marks[leader] = Some(Reach::DefinitelyLost);
        let mut work = vec![leader];
        while let Some(index) = work.pop() {
            scan(blocks[index].span(), read, |value| {
                let Some(child) = index_holding(blocks, value) else {
                    return;
                };
                let open = unreached[child]
                    && child != leader
                    && marks[child] != Some(Reach::IndirectlyLost);
                if open {
                    marks[child] = Some(Reach::IndirectlyLost);
                    work.push(child);
                }
            });
        }
    }
}

fn index_holding(blocks: &[Block], value: u64) -> Option<usize> {
    let after = blocks.partition_point(|b| b.address <= value);
    let index = after.checked_sub(1)?;
    blocks[index].span().contains(&value).then_some(index)
}

/// Calls `each` with every aligned 8-byte word of `range` that can be read.
fn scan(range: Range<u64>, read: &mut ReadMemory, mut each: impl FnMut(u64)) {
    let start = range.start.next_multiple_of(8);
    let end = range.end & !7;
    let mut buf = vec![0u8; CHUNK];
    let mut at = start;
    while at < end {
        let len = ((end - at) as usize).min(CHUNK);
        let chunk = &mut buf[..len];
        if read(at, chunk) {
            for word in chunk.chunks_exact(8) {
                each(u64::from_le_bytes(word.try_into().unwrap_or([0; 8])));
            }
        }
        at += len as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use experiment::heap::HeapEvent;
    use std::collections::HashMap;

    fn record(op: HeapOp, order: u64, address: u64, size: u64) -> HeapEventRecord {
        HeapEventRecord {
            tid: 1,
            event: HeapEvent {
                op,
                order,
                timestamp_ns: order,
                address,
                size,
                old_address: 0,
                stack_id: 7,
            },
        }
    }

    #[test]
    fn replay_keeps_what_is_not_freed() {
        let events = [
            record(HeapOp::Malloc, 1, 0x1000, 16),
            record(HeapOp::Malloc, 2, 0x2000, 32),
            record(HeapOp::Free, 3, 0x1000, 0),
            record(HeapOp::Free, 4, 0x9000, 0),
            record(HeapOp::Free, 5, 0, 0),
            record(HeapOp::Malloc, 6, 0x1000, 8),
            record(HeapOp::Mmap, 7, 0x7000_0000, 8192),
            record(HeapOp::Munmap, 8, 0x7000_0000, 8192),
            record(HeapOp::Malloc, 9, 0, 1 << 40),
        ];
        let heap = HeapState::replay(&events);
        let live: Vec<(u64, u64)> = heap.blocks().iter().map(|b| (b.address, b.size)).collect();
        assert_eq!(live, vec![(0x1000, 8), (0x2000, 32)]);
        assert_eq!(heap.unknown_frees, 1);
        assert_eq!(heap.allocations, 3);
        assert!(heap.mappings().is_empty());
        assert_eq!(heap.block_holding(0x2010).map(|b| b.address), Some(0x2000));
        assert!(heap.block_holding(0x2020).is_none());
    }

    /// A fake address space: words at addresses.
    struct Memory(HashMap<u64, u64>);

    impl Memory {
        fn read(&self, address: u64, buf: &mut [u8]) -> bool {
            for (i, word) in buf.chunks_exact_mut(8).enumerate() {
                let value = self.0.get(&(address + 8 * i as u64)).copied().unwrap_or(0);
                word.copy_from_slice(&value.to_le_bytes());
            }
            true
        }
    }

    fn block(address: u64, size: u64) -> Block {
        Block {
            address,
            size,
            op: HeapOp::Malloc,
            order: address,
            timestamp_ns: 0,
            tid: 1,
            stack_id: 0,
        }
    }

    #[test]
    fn blocks_are_classified_as_memcheck_does() {
        // Roots at 0x100..0x120: a pointer to A's start, one into C's middle.
        // A -> B (start), C -> D (start), E -> F -> E (a lost cycle), G alone.
        let blocks = [
            block(0x1000, 32), // A
            block(0x2000, 32), // B
            block(0x3000, 32), // C
            block(0x4000, 32), // D
            block(0x5000, 32), // E
            block(0x6000, 32), // F
            block(0x7000, 32), // G
        ];
        let memory = Memory(HashMap::from([
            (0x100, 0x1000),
            (0x108, 0x3010),
            (0x1008, 0x2000),
            (0x3000, 0x4000),
            (0x5000, 0x6000),
            (0x6000, 0x5000),
        ]));
        let roots = Roots {
            ranges: std::iter::once(0x100..0x120).collect(),
            values: vec![],
        };
        let classes = leak_check(&blocks, &roots, &mut |a, b| memory.read(a, b));
        use Reach::*;
        assert_eq!(
            classes,
            vec![
                StillReachable,
                StillReachable,
                PossiblyLost,
                PossiblyLost,
                DefinitelyLost,
                IndirectlyLost,
                DefinitelyLost
            ]
        );
    }

    #[test]
    fn a_register_is_a_root_and_a_later_leader_takes_an_earlier_one() {
        let blocks = [block(0x1000, 16), block(0x2000, 16), block(0x3000, 16)];
        // C -> A: A was a leader when met first, then C's group takes it.
        let memory = Memory(HashMap::from([(0x3000, 0x1000)]));
        let roots = Roots {
            ranges: vec![],
            values: vec![0x2000],
        };
        let classes = leak_check(&blocks, &roots, &mut |a, b| memory.read(a, b));
        assert_eq!(
            classes,
            vec![
                Reach::IndirectlyLost,
                Reach::StillReachable,
                Reach::DefinitelyLost
            ]
        );
    }
}
