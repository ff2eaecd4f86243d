//! The heap blocks in use while the loader replays heap events, by
//! address.
//!
//! Millions of blocks in use, each event touching one of them at a random
//! place: with a general-purpose map every event waits for a cache miss
//! (and a TLB miss, in a VM). This table is open addressing with linear
//! probing on the address itself, in huge pages where the kernel allows,
//! so that the loader can fetch an event's slot while it still works on
//! the events before it ([`LiveBlocks::prefetch`]). A removal shifts the
//! slots after it back (no tombstones: probes stay short however many
//! blocks come and go).

/// A block in use: its entry in the loader's list, and its size when that
/// fits (else the entry says).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct LiveBlock {
    pub entry: u32,
    pub bytes: u32,
}

/// One slot: `address` 0 is empty (no block is at 0).
#[derive(Debug, Clone, Copy, Default)]
struct Slot {
    address: u64,
    block: LiveBlock,
}

#[derive(Debug, Default)]
pub(crate) struct LiveBlocks {
    slots: Vec<Slot>,
    len: usize,
    /// 64 minus the table's size in bits: a hash's top bits are its slot.
    shift: u32,
}

/// Slots before the table first grows.
const FIRST_SIZE: usize = 1 << 16;

impl LiveBlocks {
    #[cfg(test)]
    fn len(&self) -> usize {
        self.len
    }

    /// Starts fetching the slot where `address` would be, for an insert
    /// or a removal soon.
    pub(crate) fn prefetch(&self, address: u64) {
        if let Some(slot) = self.slots.get(self.home(address)) {
            crate::memory::prefetch_one(slot);
        }
    }

    /// Puts the block at `address` (not 0); the block that was there, if
    /// one was.
    pub(crate) fn insert(&mut self, address: u64, block: LiveBlock) -> Option<LiveBlock> {
        if (self.len + 1) * 5 > self.slots.len() * 4 {
            self.grow();
        }
        let index = self.find(address);
        let slot = &mut self.slots[index];
        if slot.address == address {
            return Some(std::mem::replace(&mut slot.block, block));
        }
        *slot = Slot { address, block };
        self.len += 1;
        None
    }

    /// Takes out the block at `address`, if there is one.
    pub(crate) fn remove(&mut self, address: u64) -> Option<LiveBlock> {
        if self.slots.is_empty() || address == 0 {
            return None;
        }
        let mask = self.slots.len() - 1;
        let mut hole = self.find(address);
        if self.slots[hole].address != address {
            return None;
        }
        let block = self.slots[hole].block;
        self.len -= 1;
        // Shift back what follows in the run, each slot that may move to
        // the hole (its home is not between the hole and it).
        let mut next = hole;
        loop {
            next = (next + 1) & mask;
            let address = self.slots[next].address;
            if address == 0 {
                break;
            }
            let home = self.home(address);
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
        Some(block)
    }

    /// Every block in use, in no order.
    pub(crate) fn blocks(&self) -> impl Iterator<Item = LiveBlock> + '_ {
        self.slots
            .iter()
            .filter(|s| s.address != 0)
            .map(|s| s.block)
    }

    fn home(&self, address: u64) -> usize {
        // Fibonacci hashing: addresses differ in their middle bits.
        (address.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> self.shift) as usize
    }

    /// The slot holding `address`, or the empty one where it would go. The
    /// table is never full (at most 80 %: every slot is memory the kernel
    /// must clear first), so the probe ends.
    fn find(&self, address: u64) -> usize {
        let mask = self.slots.len() - 1;
        let mut index = self.home(address);
        while self.slots[index].address != 0 && self.slots[index].address != address {
            index = (index + 1) & mask;
        }
        index
    }

    fn grow(&mut self) {
        let size = (self.slots.len() * 2).max(FIRST_SIZE);
        let slots = crate::memory::huge_vec(Slot::default(), size);
        let old = std::mem::replace(&mut self.slots, slots);
        self.shift = 64 - size.trailing_zeros();
        for slot in old.into_iter().filter(|s| s.address != 0) {
            let index = self.find(slot.address);
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
        let mut table = LiveBlocks::default();
        let mut map: HashMap<u64, LiveBlock> = HashMap::new();
        for i in 0..300_000u32 {
            // A small pool of addresses: many come back, runs form.
            let address = 16 * (1 + next() % 90_000);
            let block = LiveBlock { entry: i, bytes: i };
            match next() % 3 {
                0 => assert_eq!(table.remove(address), map.remove(&address)),
                _ => assert_eq!(table.insert(address, block), map.insert(address, block)),
            }
            assert_eq!(table.len(), map.len());
        }
        for (&address, &block) in &map {
            assert_eq!(table.slots[table.find(address)].block, block);
        }
        let mut entries: Vec<u32> = table.blocks().map(|b| b.entry).collect();
        let mut expected: Vec<u32> = map.values().map(|b| b.entry).collect();
        entries.sort_unstable();
        expected.sort_unstable();
        assert_eq!(entries, expected);
        assert_eq!(table.remove(0), None);
    }
}
