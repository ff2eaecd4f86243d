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
}

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
        CallPairs { width, cells }
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

    /// Starts fetching a pair's cell, to be added to soon.
    pub(super) fn prefetch(&self, caller: FunctionId, callee: FunctionId) {
        if let Cells::Dense { bound, sums } = &self.cells {
            sums.prefetch(caller as usize * bound + callee as usize);
        }
    }

    /// Adds the sums of `other` (as wide).
    pub(super) fn absorb(&mut self, other: CallPairs) {
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
    pub(super) fn listed(self) -> ListedPairs {
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
