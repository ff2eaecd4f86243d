//! The ids of the stacks a thread recorded lately.
//!
//! A stack's id (experiment::layout::stack_id) is a chain of dependent
//! multiplies over every pc, leaf first: for a stack 30 frames deep it
//! cost about as much as everything else a heap event records but the
//! walk. A thread that records the same stacks again (a loop of calls
//! from the same places, the usual case) finds them here by comparing
//! pcs, a fraction of that. Exact: an id is reused only for the same
//! status and the same pcs.
//!
//! Async-signal-safe: plain memory of the thread's own.

use experiment::layout::{stack_id, StackStatus};

/// Stacks remembered, direct-mapped by depth and innermost pcs.
const ENTRIES: usize = 32;
/// Deeper stacks are hashed every time.
const DEPTH: usize = 64;

#[derive(Clone, Copy)]
struct Entry {
    /// 0: empty (ids are never 0).
    id: u64,
    status: u16,
    len: u16,
    pcs: [u64; DEPTH],
}

/// One thread's cache. Valid when all zeros (every entry empty).
pub struct IdCache {
    entries: [Entry; ENTRIES],
}

impl IdCache {
    pub const fn new() -> IdCache {
        IdCache {
            entries: [Entry {
                id: 0,
                status: 0,
                len: 0,
                pcs: [0; DEPTH],
            }; ENTRIES],
        }
    }

    /// The id of the stack `pcs` (leaf first) ending as `status`.
    pub fn id(&mut self, status: StackStatus, pcs: &[u64]) -> u64 {
        let code = status.code();
        if pcs.len() > DEPTH {
            return stack_id(code, pcs);
        }
        let entry = &mut self.entries[slot(pcs)];
        let known = entry.id != 0
            && entry.status == code
            && usize::from(entry.len) == pcs.len()
            && entry.pcs[..pcs.len()] == *pcs;
        if known {
            return entry.id;
        }
        let id = stack_id(code, pcs);
        entry.id = id;
        entry.status = code;
        entry.len = pcs.len() as u16;
        entry.pcs[..pcs.len()].copy_from_slice(pcs);
        id
    }
}

impl Default for IdCache {
    fn default() -> Self {
        IdCache::new()
    }
}

/// The entry of a stack: from its depth and its two innermost pcs (the
/// same call site reached by different paths differs in depth, or finds
/// its entry taken and hashes).
fn slot(pcs: &[u64]) -> usize {
    let leaf = pcs.first().copied().unwrap_or(0);
    let caller = pcs.get(1).copied().unwrap_or(0);
    let key = (pcs.len() as u64) ^ leaf.rotate_left(20) ^ caller.rotate_left(40);
    (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 59) as usize % ENTRIES
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_the_hash_of_the_same_stack() {
        let mut cache = Box::new(IdCache::new());
        let stacks: Vec<Vec<u64>> = (0..200u64)
            .map(|n| (0..(n % 70)).map(|i| 0x40_1000 + i * 16 + n % 3).collect())
            .collect();
        for round in 0..3 {
            for pcs in &stacks {
                for status in [StackStatus::Complete, StackStatus::Failed] {
                    assert_eq!(
                        cache.id(status, pcs),
                        stack_id(status.code(), pcs),
                        "round {round}, {} frames",
                        pcs.len()
                    );
                }
            }
        }
        // Same depth and innermost pcs, a different outer frame.
        let a = [1u64, 2, 3, 4];
        let b = [1u64, 2, 3, 5];
        assert_eq!(cache.id(StackStatus::Complete, &a), stack_id(0, &a));
        assert_eq!(cache.id(StackStatus::Complete, &b), stack_id(0, &b));
        assert_eq!(cache.id(StackStatus::Complete, &a), stack_id(0, &a));
        assert_eq!(cache.id(StackStatus::Truncated, &a), stack_id(1, &a));
    }
}
