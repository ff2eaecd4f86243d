//! A map of nonzero 64-bit keys to small values, for tables of millions
//! of entries met in random order (the heap blocks in use while the
//! loader replays heap events, by address; the nodes of a heap listing's
//! tree, by parent and frame).
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

    /// Starts fetching the slot where `key` would be, for an access soon.
    pub(crate) fn prefetch(&self, key: u64) {
        if let Some(slot) = self.slots.get(self.home(key)) {
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

    /// Puts `value` at `key` (not 0); the value that was there, if one was.
    pub(crate) fn insert(&mut self, key: u64, value: V) -> Option<V> {
        if (self.len + 1) * 5 > self.slots.len() * 4 {
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
    /// table is never full (at most 80 %: every slot is memory the kernel
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
