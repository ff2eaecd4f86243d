//! A map of nonzero 64-bit keys to small values, for tables of millions
//! of entries met in random order (the heap blocks in use while the
//! loader replays heap events, by address; the nodes of a call tree, by
//! parent and function).
//!
//! With a general-purpose map each access waits for a cache miss (and a
//! TLB miss, in a VM). This one is open addressing with linear probing on
//! the key itself, so that a caller can fetch a key's slot while it
//! still works on others ([`U64Table::prefetch`]). A removal shifts the
//! slots after it back (no tombstones: probes stay short however many
//! keys come and go).
//!
//! Probes run forward and never wrap: a run that passes the last home
//! goes on into a tail of slots after it. So a table made with room for
//! the most keys it may hold ([`U64Table::with_room`]: address space only,
//! no page is touched before it is used) doubles in place, every key
//! moved to its new home in one pass; a table without room moves to a new
//! vector twice as large. In a VM the kernel's clearing of fresh pages
//! costs as much as all of a large heap replay's other work on the table:
//! in place, over its growth a table clears each page once, not twice.

/// One slot: `key` 0 is empty.
#[derive(Debug, Clone, Copy, Default)]
struct Slot<V> {
    key: u64,
    value: V,
}

#[derive(Debug, Default)]
pub(crate) struct U64Table<V> {
    /// The homes (a power of two of them), then the tail.
    slots: Vec<Slot<V>>,
    len: usize,
    /// 64 minus the homes' number in bits: a hash's top bits are its home.
    shift: u32,
}

/// Homes before the table first grows.
const FIRST_SIZE: usize = 1 << 16;

/// [`U64Table::with_room`] leaves room for a tail of one slot per this
/// many homes (runs past the last home are short).
const TAIL_ROOM: usize = 64;

impl<V: Copy + Default> U64Table<V> {
    /// An empty table that grows in place up to `keys` keys (or, when
    /// the address space is not to be had, moves as it grows).
    pub(crate) fn with_room(keys: usize) -> U64Table<V> {
        let homes = keys
            .saturating_mul(2)
            .saturating_add(1)
            .checked_next_power_of_two()
            .unwrap_or(usize::MAX)
            .max(FIRST_SIZE);
        let room = homes.saturating_add(homes / TAIL_ROOM);
        let slots = crate::memory::vec_with_room(Slot::default(), 0, room);
        U64Table {
            slots,
            len: 0,
            shift: 64,
        }
    }

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
        let slot = self.slots.get(self.find(key)?)?;
        (slot.key == key).then_some(slot.value)
    }

    /// The value of `key`, to change in place.
    pub(crate) fn get_mut(&mut self, key: u64) -> Option<&mut V> {
        let index = self.find(key)?;
        let slot = self.slots.get_mut(index)?;
        (slot.key == key).then_some(&mut slot.value)
    }

    /// Puts `value` at `key` (not 0); the value that was there, if one was.
    pub(crate) fn insert(&mut self, key: u64, value: V) -> Option<V> {
        if key == 0 {
            return None;
        }
        if (self.len + 1) * 2 > self.homes() {
            self.grow();
        }
        let index = self.place(key);
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
        let mut hole = self.find(key)?;
        if self.slots.get(hole)?.key != key {
            return None;
        }
        let value = self.slots[hole].value;
        self.len -= 1;
        // Shift back what follows in the run, each slot that may move to
        // the hole (its home is not after the hole).
        for next in hole + 1..self.slots.len() {
            let key = self.slots[next].key;
            if key == 0 {
                break;
            }
            if self.home(key) <= hole {
                self.slots[hole] = self.slots[next];
                hole = next;
            }
        }
        self.slots[hole] = Slot::default();
        Some(value)
    }

    /// Every value, in no order.
    #[cfg(test)]
    pub(crate) fn values(&self) -> impl Iterator<Item = V> + '_ {
        self.slots.iter().filter(|s| s.key != 0).map(|s| s.value)
    }

    /// How many homes there are (0 before the first insert).
    fn homes(&self) -> usize {
        match self.slots.is_empty() {
            true => 0,
            false => 1 << (64 - self.shift),
        }
    }

    fn home(&self, key: u64) -> usize {
        // Fibonacci hashing: keys (addresses) differ in their middle bits.
        match self.shift {
            64 => 0,
            shift => (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> shift) as usize,
        }
    }

    /// The slot holding `key`, the empty one where it would go, or None
    /// when its run goes on to the end (or `key` is 0: no key). The table
    /// is at most half full, so runs are short: at two thirds a heap
    /// replay of ten million events took 5 % longer (probes crossing
    /// cache lines); emptier, more memory the kernel must clear.
    fn find(&self, key: u64) -> Option<usize> {
        if key == 0 || self.slots.is_empty() {
            return None;
        }
        (self.home(key)..self.slots.len()).find(|&i| {
            let at = self.slots[i].key;
            at == 0 || at == key
        })
    }

    /// [`U64Table::find`], the tail made a slot longer if the run ends it.
    fn place(&mut self, key: u64) -> usize {
        self.find(key).unwrap_or_else(|| {
            self.slots.push(Slot::default());
            self.slots.len() - 1
        })
    }

    /// Doubles the homes (or makes the first ones): in place when the
    /// vector has room, else in a new one.
    fn grow(&mut self) {
        let homes = self.homes();
        if homes == 0 && self.slots.capacity() >= FIRST_SIZE {
            self.slots.resize(FIRST_SIZE, Slot::default());
            self.shift = 64 - FIRST_SIZE.trailing_zeros();
        } else if homes > 0 && self.slots.capacity() - self.slots.len() >= homes {
            self.grow_in_place();
        } else {
            self.move_to((2 * homes).max(FIRST_SIZE));
        }
    }

    /// Moves every key to a new vector of `homes` homes, with room for a
    /// tail.
    fn move_to(&mut self, homes: usize) {
        let room = homes + homes / TAIL_ROOM;
        let slots = crate::memory::vec_with_room(Slot::default(), homes, room);
        let old = std::mem::replace(&mut self.slots, slots);
        self.shift = 64 - homes.trailing_zeros();
        for slot in old.into_iter().filter(|s| s.key != 0) {
            let index = self.place(slot.key);
            self.slots[index] = slot;
        }
    }

    /// Doubles the homes in the vector's room. One pass back from its end
    /// takes each key out and puts it back from its new home, about twice
    /// its old one: at or after the slot the pass is at, where every slot
    /// was settled (the keys there were taken out), so no run of a key put
    /// back crosses a slot still to be emptied. The few keys whose new
    /// home is before their slot (a run longer than its home's index) are
    /// put back after.
    fn grow_in_place(&mut self) {
        let (old, more) = (self.slots.len(), self.homes());
        self.slots.resize(old + more, Slot::default());
        self.shift -= 1;
        let mut behind = Vec::new();
        for i in (0..old).rev() {
            let slot = std::mem::take(&mut self.slots[i]);
            match slot.key {
                0 => {}
                key if self.home(key) >= i => {
                    let index = self.place(key);
                    self.slots[index] = slot;
                }
                _ => behind.push(slot),
            }
        }
        for slot in behind {
            let index = self.place(slot.key);
            self.slots[index] = slot;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// A table that grows into new vectors, and one that grows in place.
    fn both_kinds() -> [U64Table<u32>; 2] {
        [U64Table::default(), U64Table::with_room(1 << 20)]
    }

    /// Random inserts and removals, with addresses that crowd some slots,
    /// agree with a map through growth.
    #[test]
    fn agrees_with_a_map() {
        for table in both_kinds() {
            agrees_with_a_map_from(table);
        }
    }

    fn agrees_with_a_map_from(mut table: U64Table<u32>) {
        let mut state = 0x1234_5678_9abc_def1u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
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

    /// Keys whose homes are the last ones run on into the tail, through
    /// growth (where others move past them) and removals.
    #[test]
    fn runs_past_the_last_home_go_on_into_the_tail() {
        for table in both_kinds() {
            runs_past_the_last_home_from(table);
        }
    }

    fn runs_past_the_last_home_from(mut table: U64Table<u32>) {
        table.insert(1, 0);
        let last = table.homes() - 1;
        let crowded: Vec<u64> = (2..u64::MAX)
            .filter(|&key| table.home(key) == last)
            .take(500)
            .collect();
        let mut map = HashMap::from([(1, 0)]);
        insert_crowded(&mut table, &mut map, &crowded);
        assert!(table.slots.len() > table.homes(), "a tail");
        grow_remove_and_check(&mut table, &mut map, &crowded, (0x10_0000, 48), 3);
    }

    /// Keys crowding the first home run far past their new homes when
    /// the table doubles (put back after the pass, in place); every one
    /// is found after, and after removals.
    #[test]
    fn runs_longer_than_their_home_survive_growth() {
        for table in both_kinds() {
            runs_longer_than_their_home_from(table);
        }
    }

    fn runs_longer_than_their_home_from(mut table: U64Table<u32>) {
        table.insert(u64::MAX, 0);
        let crowded: Vec<u64> = (1..u64::MAX)
            .filter(|&key| table.home(key) <= 1)
            .take(300)
            .collect();
        let mut map = HashMap::from([(u64::MAX, 0)]);
        insert_crowded(&mut table, &mut map, &crowded);
        grow_remove_and_check(&mut table, &mut map, &crowded, (0x4000_0000, 16), 4);
    }

    /// Inserts `crowded` (key i with value i) into `table` and `map`.
    fn insert_crowded(table: &mut U64Table<u32>, map: &mut HashMap<u64, u32>, crowded: &[u64]) {
        for (i, &key) in crowded.iter().enumerate() {
            assert_eq!(table.insert(key, i as u32), map.insert(key, i as u32));
        }
    }

    /// Inserts keys `spacing` apart from `from` until the homes have
    /// doubled twice, takes out every `every`th of `crowded`, and checks
    /// `table` against `map`: what is in it, and what was taken out.
    fn grow_remove_and_check(
        table: &mut U64Table<u32>,
        map: &mut HashMap<u64, u32>,
        crowded: &[u64],
        (from, spacing): (u64, u64),
        every: usize,
    ) {
        let mut key = from;
        while table.homes() <= 2 * FIRST_SIZE {
            key += spacing;
            assert_eq!(table.insert(key, 7), map.insert(key, 7));
        }
        for &key in crowded.iter().step_by(every) {
            assert_eq!(table.remove(key), map.remove(&key));
        }
        assert_eq!(table.len(), map.len());
        for (&key, &value) in map.iter() {
            assert_eq!(table.get(key), Some(value), "{key:#x}");
        }
        for &key in crowded.iter().step_by(every) {
            assert_eq!(table.get(key), None);
        }
    }

    /// A million keys, half taken out again, through every doubling from
    /// the first size (in place up to the room made).
    #[test]
    fn grows_through_many_doublings() {
        for table in both_kinds() {
            grows_through_many_doublings_from(table);
        }
    }

    fn grows_through_many_doublings_from(mut table: U64Table<u32>) {
        let room = table.slots.capacity();
        let key = |i: u64| (i.wrapping_mul(0x2545_f491_4f6c_dd1d) | 1) & !(1 << 63);
        for i in 0..1_000_000u64 {
            assert_eq!(table.insert(key(i), i as u32), None);
            if i % 2 == 1 {
                assert_eq!(table.remove(key(i - 1)), Some(i as u32 - 1));
            }
        }
        assert_eq!(table.len(), 500_000);
        assert!(table.homes() >= 500_000 * 3 / 2);
        if room > 0 {
            assert_eq!(table.slots.capacity(), room, "grown in place");
        }
        for i in 0..1_000_000u64 {
            let expected = (i % 2 == 1).then_some(i as u32);
            assert_eq!(table.get(key(i)), expected, "{i}");
        }
    }
}

/// The children of a tree's nodes by parent and label (a frame, a
/// function), for a tree of millions of nodes built top down. Most nodes
/// of a calling-context tree have one or two children: a node's first two
/// are kept beside it with their labels (one read of a node just walked,
/// no read of the children's), only the others in a table (a cache miss
/// each).
#[derive(Debug, Default)]
pub(crate) struct Children {
    /// Per node: its first two children's labels and nodes, `NO_CHILD`
    /// for a node not there.
    near: Vec<[Near; NEAR]>,
    others: U64Table<u32>,
}

/// A child kept beside its parent: its label and node.
#[derive(Debug, Clone, Copy)]
struct Near {
    label: u32,
    node: u32,
}

/// Children kept beside their parent (a 16-byte entry per node).
const NEAR: usize = 2;

const NO_CHILD: u32 = u32::MAX;

const NO_NEAR: [Near; NEAR] = [Near {
    label: 0,
    node: NO_CHILD,
}; NEAR];

impl Children {
    /// No children yet, with room for `nodes` nodes to grow in place.
    pub(crate) fn with_room(nodes: usize) -> Children {
        Children {
            near: crate::memory::vec_with_room(NO_NEAR, 0, nodes),
            others: U64Table::with_room(nodes),
        }
    }

    /// The child of `parent` labelled `label`.
    pub(crate) fn get(&self, parent: u32, label: u32) -> Option<u32> {
        let near = self.near.get(parent as usize)?;
        for child in near {
            if child.node == NO_CHILD {
                return None;
            }
            if child.label == label {
                return Some(child.node);
            }
        }
        self.others.get(key(parent, label))
    }

    /// Adds `child`, labelled `label`, under `parent` (which has no child
    /// of that label).
    pub(crate) fn insert(&mut self, parent: u32, label: u32, child: u32) {
        if self.near.len() <= parent as usize {
            // Doubled, but within the room while it lasts.
            let doubled = (self.near.len() * 2).min(self.near.capacity());
            self.near
                .resize((parent as usize + 1).max(doubled), NO_NEAR);
        }
        let near = &mut self.near[parent as usize];
        match near.iter_mut().find(|c| c.node == NO_CHILD) {
            Some(free) => *free = Near { label, node: child },
            None => {
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

    /// Children beside their parent and in the table alike are found,
    /// before and after their siblings come.
    #[test]
    fn finds_near_and_other_children() {
        let mut children = Children::default();
        // Parent p has p % 6 children, labelled 10 * k + p % 3; their
        // nodes are numbered on from 1.
        let label = |parent: u32, k: u32| 10 * k + parent % 3;
        let mut next = 1;
        let mut made = Vec::new();
        for parent in 0..60u32 {
            for k in 0..parent % 6 {
                assert_eq!(children.get(parent, label(parent, k)), None);
                children.insert(parent, label(parent, k), next);
                assert_eq!(children.get(parent, label(parent, k)), Some(next));
                made.push((parent, label(parent, k), next));
                next += 1;
            }
        }
        for (parent, label, node) in made {
            assert_eq!(children.get(parent, label), Some(node));
        }
        assert_eq!(children.get(5, 7), None);
        assert_eq!(children.get(1000, 0), None);
    }
}
