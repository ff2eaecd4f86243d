//! Heap blocks over time, from heap tracing: which block held an address
//! at an event's time (allocated before it and not freed before it).

use experiment::heap::HeapOp;
use experiment::Experiment;
use std::collections::{BTreeMap, HashMap};

/// One block of the malloc family, from its allocation to its free.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeapBlock {
    pub address: u64,
    /// Bytes asked for.
    pub size: u64,
    /// CLOCK_MONOTONIC ns of the allocation.
    pub allocated_ns: u64,
    /// CLOCK_MONOTONIC ns of its free (or of the realloc that moved it);
    /// None when it was never freed.
    pub freed_ns: Option<u64>,
    /// Where it was allocated: functions leaf first, `make_grid < main`.
    pub site: String,
}

/// An allocation or a free, in the order they took effect.
#[derive(Debug, Clone, Copy)]
struct Change {
    time_ns: u64,
    block: usize,
    allocates: bool,
}

/// Every traced block, and the allocations and frees in time order.
#[derive(Debug, Default)]
pub struct HeapBlocks {
    blocks: Vec<HeapBlock>,
    timeline: Vec<Change>,
}

impl HeapBlocks {
    /// The blocks, in the order they were allocated.
    pub fn new(blocks: Vec<HeapBlock>) -> HeapBlocks {
        let mut timeline = Vec::with_capacity(blocks.len() * 2);
        for (index, block) in blocks.iter().enumerate() {
            timeline.push(Change {
                time_ns: block.allocated_ns,
                block: index,
                allocates: true,
            });
            if let Some(freed) = block.freed_ns {
                timeline.push(Change {
                    time_ns: freed,
                    block: index,
                    allocates: false,
                });
            }
        }
        // Stable: changes at one time keep the order they were made in.
        timeline.sort_by_key(|c| c.time_ns);
        HeapBlocks { blocks, timeline }
    }

    pub fn is_empty(&self) -> bool {
        self.blocks.is_empty()
    }

    pub fn block(&self, index: usize) -> &HeapBlock {
        &self.blocks[index]
    }

    /// For each (address, time) of `queries`, the block holding the
    /// address at that time: one sweep over the timeline, the queries
    /// taken in time order, the blocks in use kept by address (blocks in
    /// use at one time do not overlap).
    pub fn holding(&self, queries: &[(u64, u64)]) -> Vec<Option<usize>> {
        let mut answers = vec![None; queries.len()];
        let mut order: Vec<usize> = (0..queries.len()).collect();
        order.sort_by_key(|&i| queries[i].1);
        let mut in_use: BTreeMap<u64, usize> = BTreeMap::new();
        let mut changes = self.timeline.iter().peekable();
        for index in order {
            let (address, time_ns) = queries[index];
            while let Some(change) = changes.next_if(|c| c.time_ns <= time_ns) {
                self.apply(&mut in_use, *change);
            }
            answers[index] = in_use
                .range(..=address)
                .next_back()
                .map(|(_, &block)| block)
                .filter(|&block| self.covers(block, address));
        }
        answers
    }

    fn apply(&self, in_use: &mut BTreeMap<u64, usize>, change: Change) {
        let address = self.blocks[change.block].address;
        if change.allocates {
            in_use.insert(address, change.block);
        } else if in_use.get(&address) == Some(&change.block) {
            in_use.remove(&address);
        }
    }

    fn covers(&self, block: usize, address: u64) -> bool {
        let block = &self.blocks[block];
        address - block.address < block.size.max(1)
    }

    /// The blocks of an experiment's heap tracing, each named by
    /// `site_of` from its allocation stack (leaf first; None when the
    /// stack record was lost).
    pub fn of_experiment(
        expt: &Experiment,
        mut site_of: impl FnMut(Option<&[u64]>) -> String,
    ) -> experiment::Result<HeapBlocks> {
        let stacks = expt.stacks()?;
        let mut sites: HashMap<u64, String> = HashMap::new();
        let (replay, _) = expt.heap_events_in_order(Replay::default, |replay, record| {
            let event = record.event;
            match event.op {
                HeapOp::Mmap | HeapOp::Munmap => return,
                HeapOp::Free => return replay.free(event.address, event.timestamp_ns),
                HeapOp::Realloc => replay.free(event.old_address, event.timestamp_ns),
                _ => {}
            }
            if event.address == 0 {
                return;
            }
            let site = sites
                .entry(event.stack_id)
                .or_insert_with(|| site_of(stacks.get(&event.stack_id).map(|s| s.pcs.as_slice())));
            replay.allocate(event.address, event.size, event.timestamp_ns, site.clone());
        })?;
        Ok(HeapBlocks::new(replay.blocks))
    }
}

/// Blocks made so far, and those in use by address.
#[derive(Default)]
struct Replay {
    blocks: Vec<HeapBlock>,
    in_use: HashMap<u64, usize>,
}

impl Replay {
    fn allocate(&mut self, address: u64, size: u64, time_ns: u64, site: String) {
        self.in_use.insert(address, self.blocks.len());
        self.blocks.push(HeapBlock {
            address,
            size,
            allocated_ns: time_ns,
            freed_ns: None,
            site,
        });
    }

    fn free(&mut self, address: u64, time_ns: u64) {
        if let Some(index) = self.in_use.remove(&address) {
            self.blocks[index].freed_ns = Some(time_ns);
        }
    }
}
