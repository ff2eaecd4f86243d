//! Values per (caller, callee) pair of functions, the lines of the
//! callers-callees pictures (the manual's "How Metrics Are Assigned to
//! Program Structure": attributed metrics).

use crate::metrics::Value;
use crate::model::FunctionId;
use crate::packed::{Layout, Sums};
use rustc_hash::FxHashMap;

/// Per (caller, callee) pair: the callee's value that the caller gave it
/// (the caller's line in the callee's picture), and what of the caller's
/// value the callee took (the callee's line in the caller's picture). A
/// frame left adds both, to one cell: one cache miss, not two. Dense when
/// there are few functions (an indexed add per frame), else hashed.
pub(super) struct CallPairs {
    /// Words of each half of a cell.
    width: usize,
    cells: Cells,
    /// Adds to dense cells not made yet, each made `WAITING` adds later,
    /// its cell fetched meanwhile.
    waiting: Waiting,
}

/// Adds waiting for their cells, in a ring: a frame's pair is added when
/// the frame is left, and a leaf is left as soon as it is entered, so
/// there is no time to fetch its cell before the add.
struct Waiting {
    /// Per slot: the cell.
    cells: Vec<usize>,
    /// Per slot: the two halves' words.
    words: Vec<u64>,
    /// Adds queued since the ring was last emptied: the next goes to slot
    /// `queued % WAITING`, where the oldest waits once the ring is full.
    queued: usize,
}

impl Waiting {
    /// The words of slot `slot`.
    fn words(&mut self, slot: usize) -> &mut [u64] {
        let size = self.words.len() / WAITING;
        &mut self.words[slot * size..(slot + 1) * size]
    }
}

/// Adds that wait for their cells at once.
const WAITING: usize = 16;

enum Cells {
    /// Cell `caller * bound + callee`.
    Dense { bound: usize, sums: Sums },
    Sparse {
        index: FxHashMap<(FunctionId, FunctionId), u32>,
        sums: Sums,
    },
}

/// At most this many words in a dense [`CallPairs`].
const DENSE_WORDS: usize = 1 << 22;

impl CallPairs {
    /// Pairs of functions below `bound`, whose values are `width` words.
    pub(super) fn new(bound: usize, width: usize) -> CallPairs {
        let cells = match bound.checked_mul(bound) {
            Some(cells) if cells.saturating_mul(2 * width) <= DENSE_WORDS => Cells::Dense {
                bound,
                sums: Sums::new(2 * width, cells),
            },
            _ => Cells::Sparse {
                index: FxHashMap::default(),
                sums: Sums::new(2 * width, 0),
            },
        };
        let waiting = Waiting {
            cells: vec![0; WAITING],
            words: vec![0; WAITING * 2 * width],
            queued: 0,
        };
        CallPairs {
            width,
            cells,
            waiting,
        }
    }

    /// Whether the pairs are hashed (for tests of the sparse form).
    #[cfg(test)]
    pub(super) fn is_sparse(&self) -> bool {
        matches!(self.cells, Cells::Sparse { .. })
    }

    /// The cell of a pair, made if it is hashed and new.
    fn cell(&mut self, caller: FunctionId, callee: FunctionId) -> usize {
        match &mut self.cells {
            Cells::Dense { bound, .. } => caller as usize * *bound + callee as usize,
            Cells::Sparse { index, sums } => *index
                .entry((caller, callee))
                .or_insert_with(|| sums.push_zero() as u32)
                as usize,
        }
    }

    fn sums(&mut self) -> &mut Sums {
        match &mut self.cells {
            Cells::Dense { sums, .. } | Cells::Sparse { sums, .. } => sums,
        }
    }

    /// Adds `from_caller` to the caller's line of the callee's picture and
    /// `taken` to the callee's line of the caller's.
    pub(super) fn add(
        &mut self,
        caller: FunctionId,
        callee: FunctionId,
        from_caller: &[u64],
        taken: &[u64],
    ) {
        let (cell, width) = (self.cell(caller, callee), self.width);
        let sums = self.sums();
        sums.add_at(cell, 0, from_caller);
        sums.add_at(cell, width, taken);
    }

    /// [`CallPairs::add`], made after a few more adds (dense cells: the
    /// cell is fetched meanwhile); [`CallPairs::settle`] makes those still
    /// waiting.
    pub(super) fn add_soon(
        &mut self,
        caller: FunctionId,
        callee: FunctionId,
        from_caller: &[u64],
        taken: &[u64],
    ) {
        let Cells::Dense { bound, sums } = &mut self.cells else {
            return self.add(caller, callee, from_caller, taken);
        };
        let cell = caller as usize * *bound + callee as usize;
        sums.prefetch(cell);
        let (waiting, width) = (&mut self.waiting, self.width);
        let (slot, full) = (waiting.queued % WAITING, waiting.queued >= WAITING);
        let oldest = waiting.cells[slot];
        let words = waiting.words(slot);
        if full {
            sums.add_at(oldest, 0, words);
        }
        words[..width].copy_from_slice(from_caller);
        words[width..].copy_from_slice(taken);
        waiting.cells[slot] = cell;
        waiting.queued += 1;
    }

    /// Makes the adds still waiting.
    fn settle(&mut self) {
        let Cells::Dense { sums, .. } = &mut self.cells else {
            return;
        };
        let waiting = &mut self.waiting;
        for slot in 0..waiting.queued.min(WAITING) {
            let cell = waiting.cells[slot];
            sums.add_at(cell, 0, waiting.words(slot));
        }
        waiting.queued = 0;
    }

    /// Starts fetching a pair's cell, to be added to soon.
    pub(super) fn prefetch(&self, caller: FunctionId, callee: FunctionId) {
        if let Cells::Dense { bound, sums } = &self.cells {
            sums.prefetch(caller as usize * bound + callee as usize);
        }
    }

    /// Adds the sums of `other` (as wide).
    pub(super) fn absorb(&mut self, mut other: CallPairs) {
        self.settle();
        other.settle();
        let width = self.width;
        match (&mut self.cells, other.cells) {
            (
                Cells::Dense { bound, sums },
                Cells::Dense {
                    bound: b,
                    sums: more,
                },
            ) if *bound == b => sums.add_all(&more),
            (_, Cells::Dense { bound, sums: more }) => {
                for cell in (0..more.len()).filter(|&cell| !more.is_zero(cell)) {
                    let (caller, callee) =
                        ((cell / bound) as FunctionId, (cell % bound) as FunctionId);
                    let (from_caller, taken) = more.get(cell).split_at(width);
                    self.add(caller, callee, from_caller, taken);
                }
            }
            (_, Cells::Sparse { index, sums: more }) => {
                for ((caller, callee), cell) in index {
                    let (from_caller, taken) = more.get(cell as usize).split_at(width);
                    self.add(caller, callee, from_caller, taken);
                }
            }
        }
    }

    /// The pairs, ready to list by function.
    pub(super) fn listed(mut self) -> ListedPairs {
        self.settle();
        let (mut by_callee, mut by_caller) = (FxHashMap::default(), FxHashMap::default());
        if let Cells::Sparse { index, .. } = &self.cells {
            for (&(caller, callee), &cell) in index {
                by_callee
                    .entry(callee)
                    .or_insert_with(Vec::new)
                    .push((caller, cell));
                by_caller
                    .entry(caller)
                    .or_insert_with(Vec::new)
                    .push((callee, cell));
            }
        }
        ListedPairs {
            pairs: self,
            by_callee,
            by_caller,
        }
    }
}

/// [`CallPairs`] with, when hashed, each function's pairs as callee and as
/// caller.
pub(super) struct ListedPairs {
    pairs: CallPairs,
    by_callee: FxHashMap<FunctionId, Vec<(FunctionId, u32)>>,
    by_caller: FxHashMap<FunctionId, Vec<(FunctionId, u32)>>,
}

impl ListedPairs {
    /// `center`'s callers with what each gave it.
    pub(super) fn callers(&self, center: FunctionId, layout: &Layout) -> Vec<(FunctionId, Value)> {
        let width = self.pairs.width;
        match &self.pairs.cells {
            Cells::Dense { bound, sums } => {
                let column = (0..*bound).map(|caller| (caller, caller * bound + center as usize));
                nonzero(
                    layout,
                    sums,
                    0..width,
                    column.filter(|_| (center as usize) < *bound),
                )
            }
            Cells::Sparse { sums, .. } => {
                let pairs = self.by_callee.get(&center).into_iter().flatten();
                let cells = pairs.map(|&(caller, cell)| (caller as usize, cell as usize));
                nonzero(layout, sums, 0..width, cells)
            }
        }
    }

    /// `center`'s callees with what each took of its value.
    pub(super) fn callees(&self, center: FunctionId, layout: &Layout) -> Vec<(FunctionId, Value)> {
        let width = self.pairs.width;
        match &self.pairs.cells {
            Cells::Dense { bound, sums } => {
                let row = (0..*bound).map(|callee| (callee, center as usize * bound + callee));
                nonzero(
                    layout,
                    sums,
                    width..2 * width,
                    row.filter(|_| (center as usize) < *bound),
                )
            }
            Cells::Sparse { sums, .. } => {
                let pairs = self.by_caller.get(&center).into_iter().flatten();
                let cells = pairs.map(|&(callee, cell)| (callee as usize, cell as usize));
                nonzero(layout, sums, width..2 * width, cells)
            }
        }
    }
}

/// The functions of `cells` (function, cell) whose half `half` holds a
/// value, with it.
fn nonzero(
    layout: &Layout,
    sums: &Sums,
    half: std::ops::Range<usize>,
    cells: impl Iterator<Item = (usize, usize)>,
) -> Vec<(FunctionId, Value)> {
    cells
        .filter_map(|(function, cell)| {
            let packed = &sums.get(cell)[half.clone()];
            let value = layout.unpack(packed);
            (!value.is_empty()).then_some((function as FunctionId, value))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every dense cell's words.
    fn cells(pairs: &CallPairs) -> Vec<u64> {
        match &pairs.cells {
            Cells::Dense { sums, .. } => {
                (0..sums.len()).flat_map(|c| sums.get(c).to_vec()).collect()
            }
            Cells::Sparse { .. } => panic!("dense pairs expected"),
        }
    }

    /// Adds made soon (some in a second set absorbed after, both with adds
    /// still waiting) come to what the same adds made at once come to.
    #[test]
    fn adds_made_soon_are_the_adds() {
        let (bound, width) = (7, 3);
        let (mut now, mut soon, mut other) = (
            CallPairs::new(bound, width),
            CallPairs::new(bound, width),
            CallPairs::new(bound, width),
        );
        let mut x = 1u64;
        for i in 0..500u64 {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let caller = (x >> 33) as FunctionId % bound as FunctionId;
            let callee = (x >> 45) as FunctionId % bound as FunctionId;
            let (from_caller, taken) = ([i, 2 * i, 1], [i + 1, 3, x >> 60]);
            now.add(caller, callee, &from_caller, &taken);
            match i % 3 {
                0 => other.add_soon(caller, callee, &from_caller, &taken),
                _ => soon.add_soon(caller, callee, &from_caller, &taken),
            }
        }
        // The last adds of both still wait.
        assert!(soon.waiting.queued > 0 && other.waiting.queued > 0);
        soon.absorb(other);
        soon.settle();
        assert_eq!(cells(&soon), cells(&now));
    }
}
