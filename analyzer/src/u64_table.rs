//! A map of nonzero 64-bit keys to small values, for tables of millions
//! of entries met in random order (the heap blocks in use while the
//! loader replays heap events, by address; the nodes of a call tree, by
//! parent and function).
//!
//! With a general-purpose map each access waits for a cache miss (and a
//! TLB miss, in a VM). This one is open addressing with linear probing on
//! the key itself, in huge pages where the kernel allows, so that a
//! caller can fetch a key's slot while it still works on others
//! ([`U64Table::prefetch`]). A removal shifts the slots after it back (no
//! tombstones: probes stay short however many keys come and go).

/// One slot: `key` 0 is empty.
#[derive(Debug, Clone, Copy, Default)]
struct Slot<V> {
    key: u64,
    value: V,
}

#[derive(Debug, Default)]
pub(crate) struct U64Table<V> {
    slots: Vec<Slot<V>>,
    len: usize,
    /// 64 minus the table's size in bits: a hash's top bits are its slot.
    shift: u32,
}

/// Slots before the table first grows.
const FIRST_SIZE: usize = 1 << 16;

impl<V: Copy + Default> U64Table<V> {
    #[cfg(test)]
    fn len(&self) -> usize {
        self.len
    }

    /// Starts fetching the slot where `key` would be, for an access soon,
    /// and the cache line after it: a probe often goes on into it.
    pub(crate) fn prefetch(&self, key: u64) {
        let home = self.home(key);
        if let Some(slot) = self.slots.get(home) {
            crate::memory::prefetch_one(slot);
        }
        if let Some(slot) = self.slots.get(home + 64 / std::mem::size_of::<Slot<V>>()) {
            crate::memory::prefetch_one(slot);
        }
    }

    /// The value of `key`.
    pub(crate) fn get(&self, key: u64) -> Option<V> {
        if self.slots.is_empty() || key == 0 {
            return None;
        }
        let slot = self.slots[self.find(key)];
        (slot.key == key).then_some(slot.value)
    }

    /// The value of `key`, to change in place.
    pub(crate) fn get_mut(&mut self, key: u64) -> Option<&mut V> {
        if self.slots.is_empty() || key == 0 {
            return None;
        }
        let index = self.find(key);
        let slot = &mut self.slots[index];
        (slot.key == key).then_some(&mut slot.value)
    }

    /// Puts `value` at `key` (not 0); the value that was there, if one was.
    pub(crate) fn insert(&mut self, key: u64, value: V) -> Option<V> {
        if (self.len + 1) * 3 > self.slots.len() * 2 {
            self.resize((self.slots.len() * 2).max(FIRST_SIZE));
        }
        let index = self.find(key);
        let slot = &mut self.slots[index];
        if slot.key == key {
            return Some(std::mem::replace(&mut slot.value, value));
        }
        *slot = Slot { key, value };
        self.len += 1;
        None
    }

    /// Takes out the value at `key`, if there is one.
    pub(crate) fn remove(&mut self, key: u64) -> Option<V> {
        if self.slots.is_empty() || key == 0 {
            return None;
        }
        let mask = self.slots.len() - 1;
        let mut hole = self.find(key);
        if self.slots[hole].key != key {
            return None;
        }
        let value = self.slots[hole].value;
        self.len -= 1;
        // Shift back what follows in the run, each slot that may move to
        // the hole (its home is not between the hole and it).
        let mut next = hole;
        loop {
            next = (next + 1) & mask;
            let key = self.slots[next].key;
            if key == 0 {
                break;
            }
            let home = self.home(key);
            let stays = match hole <= next {
                true => hole < home && home <= next,
                false => hole < home || home <= next,
            };
            if !stays {
                self.slots[hole] = self.slots[next];
                hole = next;
            }
        }
        self.slots[hole] = Slot::default();
        Some(value)
    }

    /// Every value, in no order.
    pub(crate) fn values(&self) -> impl Iterator<Item = V> + '_ {
        self.slots.iter().filter(|s| s.key != 0).map(|s| s.value)
    }

    fn home(&self, key: u64) -> usize {
        // Fibonacci hashing: keys (addresses) differ in their middle bits.
        match self.shift {
            64 => 0,
            shift => (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> shift) as usize,
        }
    }

    /// The slot holding `key`, or the empty one where it would go. The
    /// table is never full (at most two thirds: fuller, a new key's probe
    /// runs through several cache lines; emptier, more memory the kernel
    /// must clear first), so the probe ends.
    fn find(&self, key: u64) -> usize {
        let mask = self.slots.len() - 1;
        let mut index = self.home(key);
        while self.slots[index].key != 0 && self.slots[index].key != key {
            index = (index + 1) & mask;
        }
        index
    }

    fn resize(&mut self, size: usize) {
        let slots = crate::memory::huge_vec(Slot::default(), size);
        let old = std::mem::replace(&mut self.slots, slots);
        self.shift = 64 - size.trailing_zeros();
        for slot in old.into_iter().filter(|s| s.key != 0) {
            let index = self.find(slot.key);
            self.slots[index] = slot;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// Random inserts and removals, with addresses that crowd some slots,
    /// agree with a map through growth and wrapping runs.
    #[test]
    fn agrees_with_a_map() {
        let mut state = 0x1234_5678_9abc_def1u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut table: U64Table<u32> = U64Table::default();
        let mut map: HashMap<u64, u32> = HashMap::new();
        for i in 0..300_000u32 {
            // A small pool of addresses: many come back, runs form.
            let address = 16 * (1 + next() % 90_000);
            match next() % 3 {
                0 => assert_eq!(table.remove(address), map.remove(&address)),
                _ => assert_eq!(table.insert(address, i), map.insert(address, i)),
            }
            assert_eq!(table.len(), map.len());
        }
        for (&address, &value) in &map {
            assert_eq!(table.get(address), Some(value));
        }
        assert_eq!(table.get(8), None);
        let mut entries: Vec<u32> = table.values().collect();
        let mut expected: Vec<u32> = map.values().copied().collect();
        entries.sort_unstable();
        expected.sort_unstable();
        assert_eq!(entries, expected);
        assert_eq!(table.remove(0), None);
    }
}

/// The children of a tree's nodes by parent and label (a frame, a
/// function), for a tree of millions of nodes built top down. Most nodes
/// of a calling-context tree have one child: a node's first child is kept
/// beside it (an array read of a node just walked), only the others in a
/// table (a cache miss each).
#[derive(Debug, Default)]
pub(crate) struct Children {
    /// Per node: its first child, or `NO_CHILD`.
    first: Vec<u32>,
    others: U64Table<u32>,
}

const NO_CHILD: u32 = u32::MAX;

impl Children {
    /// The child of `parent` labelled `label`; `label_of` gives a node's.
    pub(crate) fn get(
        &self,
        parent: u32,
        label: u32,
        label_of: impl Fn(u32) -> u32,
    ) -> Option<u32> {
        match self.first.get(parent as usize).copied() {
            None | Some(NO_CHILD) => None,
            Some(first) if label_of(first) == label => Some(first),
            Some(_) => self.others.get(key(parent, label)),
        }
    }

    /// Adds `child`, labelled `label`, under `parent` (which has no child
    /// of that label).
    pub(crate) fn insert(&mut self, parent: u32, label: u32, child: u32) {
        if self.first.len() <= parent as usize {
            self.first
                .resize((parent as usize + 1).max(self.first.len() * 2), NO_CHILD);
        }
        match self.first[parent as usize] {
            NO_CHILD => self.first[parent as usize] = child,
            _ => {
                self.others.insert(key(parent, label), child);
            }
        }
    }
}

/// A (parent, label) pair as a table key: never 0.
fn key(parent: u32, label: u32) -> u64 {
    (u64::from(parent) << 32 | u64::from(label)).wrapping_add(1)
}

#[cfg(test)]
mod children_tests {
    use super::*;

    #[test]
    fn finds_first_and_other_children() {
        let mut children = Children::default();
        // Node n is labelled n % 7.
        let label_of = |node: u32| node % 7;
        let mut next = 1;
        for parent in 0..50u32 {
            for label in 0..(parent % 4) {
                while label_of(next) != label {
                    next += 1;
                }
                assert_eq!(children.get(parent, label, label_of), None);
                children.insert(parent, label, next);
                assert_eq!(children.get(parent, label, label_of), Some(next));
                next += 1;
            }
        }
        assert_eq!(children.get(3, 5, label_of), None);
        assert_eq!(children.get(1000, 0, label_of), None);
    }
}
