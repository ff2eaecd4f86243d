//! Recorded stack ids to the analyzer's stacks, for the loader.
//!
//! Every event looks its stack up here: ten million lookups in a table of a
//! million stacks are ten million cache misses, so the table is as small
//! and as direct as it can be: open addressing on the id itself (ids are
//! already hashes), one 16-byte slot per entry holding everything an event
//! needs, in huge pages where the kernel allows (a TLB miss on every lookup
//! costs as much again in a VM).

use crate::model::{StackId, NO_STACK};

/// One slot: `id` 0 is empty (0 is never a stack id).
#[derive(Debug, Clone, Copy, Default)]
struct Slot {
    id: u64,
    /// Index of the record (in the loader's list) with this id.
    record: u32,
    /// The model stack it became; `NO_STACK` until an event uses it.
    stack: StackId,
}

/// What the table knows of a recorded id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lookup {
    /// A model stack already.
    Stack(StackId),
    /// Not yet a stack: its record's index.
    Record(u32),
    /// No record has this id.
    Missing,
}

#[derive(Debug, Default)]
pub(crate) struct StackIds {
    slots: Vec<Slot>,
    len: usize,
}

impl StackIds {
    /// Adds `id` for record `record`; false if `id` is there already (an id
    /// recorded twice: the first record is kept) or is 0.
    pub(crate) fn insert(&mut self, id: u64, record: u32) -> bool {
        if id == 0 {
            return false;
        }
        if (self.len + 1) * 2 > self.slots.len() {
            self.grow();
        }
        let index = self.find(id);
        if self.slots[index].id == id {
            return false;
        }
        self.slots[index] = Slot {
            id,
            record,
            stack: NO_STACK,
        };
        self.len += 1;
        true
    }

    pub(crate) fn get(&self, id: u64) -> Lookup {
        if self.slots.is_empty() || id == 0 {
            return Lookup::Missing;
        }
        let slot = self.slots[self.find(id)];
        match (slot.id == id, slot.stack) {
            (false, _) => Lookup::Missing,
            (true, NO_STACK) => Lookup::Record(slot.record),
            (true, stack) => Lookup::Stack(stack),
        }
    }

    /// Starts fetching the slot where `id` would be, for a `get` soon.
    pub(crate) fn prefetch(&self, id: u64) {
        if self.slots.is_empty() {
            return;
        }
        crate::memory::prefetch_one(&self.slots[(id as usize) & (self.slots.len() - 1)]);
    }

    /// Records that `id`'s record became model stack `stack`.
    pub(crate) fn set_stack(&mut self, id: u64, stack: StackId) {
        if self.slots.is_empty() {
            return;
        }
        let index = self.find(id);
        if self.slots[index].id == id {
            self.slots[index].stack = stack;
        }
    }

    /// The slot holding `id`, or the empty slot where it would go. The
    /// table is never full (at most half), so the probe ends.
    fn find(&self, id: u64) -> usize {
        let mask = self.slots.len() - 1;
        // The low bits of a stack id are as random as the high ones.
        let mut index = (id as usize) & mask;
        while self.slots[index].id != 0 && self.slots[index].id != id {
            index = (index + 1) & mask;
        }
        index
    }

    fn grow(&mut self) {
        let capacity = (self.slots.len() * 2).max(1024);
        let slots = crate::memory::huge_vec(Slot::default(), capacity);
        let old = std::mem::replace(&mut self.slots, slots);
        for slot in old.into_iter().filter(|s| s.id != 0) {
            let index = self.find(slot.id);
            self.slots[index] = slot;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_what_was_inserted_through_growth_and_collisions() {
        let mut ids = StackIds::default();
        // Ids equal in their low bits collide in every table size.
        let id = |i: u64| (i << 40) | 7;
        for i in 1..5000u64 {
            assert!(ids.insert(id(i), i as u32));
        }
        assert!(!ids.insert(id(3), 99), "the first record of an id is kept");
        assert!(!ids.insert(0, 1));
        assert_eq!(ids.get(id(3)), Lookup::Record(3));
        ids.set_stack(id(3), 42);
        assert_eq!(ids.get(id(3)), Lookup::Stack(42));
        assert_eq!(ids.get(id(6000)), Lookup::Missing);
        assert_eq!(ids.get(0), Lookup::Missing);
        assert_eq!(StackIds::default().get(5), Lookup::Missing);
    }
}
