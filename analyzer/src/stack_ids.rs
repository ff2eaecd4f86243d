//! Recorded stack ids to the analyzer's stacks, for the loader.
//!
//! Every event looks its stack up here: ten million lookups in a table of a
//! million stacks, each fetched ahead (`prefetch`), in the open-addressing
//! table the heap replay uses too ([`U64Table`]), a 16-byte slot per id
//! holding everything an event needs.

use crate::model::{StackId, NO_STACK};
use crate::u64_table::U64Table;

/// What the table holds for an id.
#[derive(Debug, Clone, Copy, Default)]
struct Entry {
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
    table: U64Table<Entry>,
}

impl StackIds {
    /// Adds `id` for record `record`; false if `id` is there already (an id
    /// recorded twice: the first record is kept) or is 0.
    pub(crate) fn insert(&mut self, id: u64, record: u32) -> bool {
        if id == 0 || self.table.get(id).is_some() {
            return false;
        }
        let stack = NO_STACK;
        self.table.insert(id, Entry { record, stack });
        true
    }

    pub(crate) fn get(&self, id: u64) -> Lookup {
        match self.table.get(id) {
            None => Lookup::Missing,
            Some(Entry {
                record,
                stack: NO_STACK,
            }) => Lookup::Record(record),
            Some(Entry { stack, .. }) => Lookup::Stack(stack),
        }
    }

    /// Starts fetching the slot where `id` would be, for a `get` soon.
    pub(crate) fn prefetch(&self, id: u64) {
        self.table.prefetch(id);
    }

    /// Records that `id`'s record became model stack `stack`.
    pub(crate) fn set_stack(&mut self, id: u64, stack: StackId) {
        if let Some(entry) = self.table.get_mut(id) {
            entry.stack = stack;
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
