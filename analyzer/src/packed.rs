//! Metric values packed to the quantities a model's data can make nonzero.
//!
//! A [`Value`] has a field for every kind of data (CPU time, waits,
//! allocations, I/O, off-CPU time): 16 words. A clock profile only ever
//! fills two of them, and the aggregation adds a value per frame of every
//! distinct stack (a hundred million frames at a million stacks) and keeps
//! one per call-tree node (millions): the per-stack sums, the per-key sums
//! of the hot loop and the call tree hold only the words the data has, in
//! one flat vector each, and a value is unpacked when it is shown.

use crate::metrics::Value;
use crate::model::Model;

/// Words of a [`Value`].
pub const WORDS: usize = 16;

impl Value {
    /// The value's quantities in a fixed order (see [`Layout::of`]).
    pub(crate) fn to_words(self) -> [u64; WORDS] {
        [
            self.ns,
            self.events,
            self.sync_wait_ns,
            self.sync_waits,
            self.allocations,
            self.bytes_allocated,
            self.leaks,
            self.bytes_leaked,
            self.io_ns,
            self.read_bytes,
            self.write_bytes,
            self.reads,
            self.writes,
            self.other_io,
            self.offcpu_ns,
            self.switches,
        ]
    }

    pub(crate) fn from_words(w: [u64; WORDS]) -> Value {
        Value {
            ns: w[0],
            events: w[1],
            sync_wait_ns: w[2],
            sync_waits: w[3],
            allocations: w[4],
            bytes_allocated: w[5],
            leaks: w[6],
            bytes_leaked: w[7],
            io_ns: w[8],
            read_bytes: w[9],
            write_bytes: w[10],
            reads: w[11],
            writes: w[12],
            other_io: w[13],
            offcpu_ns: w[14],
            switches: w[15],
        }
    }
}

/// Which words of a [`Value`] a packed value keeps, in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Layout {
    kept: Vec<u8>,
}

impl Layout {
    /// The words the model's data can make nonzero: CPU time and events
    /// with clock events (or no data at all), and each traced kind's.
    pub fn of(model: &Model) -> Layout {
        let kinds: [(bool, std::ops::Range<u8>); 5] = [
            (!model.events.is_empty(), 0..2),
            (!model.sync.is_empty(), 2..4),
            (!model.heap.is_empty(), 4..8),
            (!model.io.is_empty(), 8..14),
            (!model.offcpu.is_empty(), 14..16),
        ];
        let mut kept: Vec<u8> = kinds
            .into_iter()
            .filter(|(present, _)| *present)
            .flat_map(|(_, words)| words)
            .collect();
        if kept.is_empty() {
            kept.extend(0..2);
        }
        Layout { kept }
    }

    /// Words of a packed value.
    pub fn width(&self) -> usize {
        self.kept.len()
    }

    /// `value`'s kept words into `out` (`width` long).
    pub fn pack(&self, value: Value, out: &mut [u64]) {
        let words = value.to_words();
        for (slot, &word) in out.iter_mut().zip(&self.kept) {
            *slot = words[usize::from(word)];
        }
    }

    /// The value of packed words (the others zero).
    pub fn unpack(&self, packed: &[u64]) -> Value {
        let mut words = [0u64; WORDS];
        for (&value, &word) in packed.iter().zip(&self.kept) {
            words[usize::from(word)] = value;
        }
        Value::from_words(words)
    }
}

/// Packed values in one flat vector: value `i` is the `width` words from
/// `i * width`.
#[derive(Debug, Clone, Default)]
pub struct Sums {
    width: usize,
    words: Vec<u64>,
}

impl Sums {
    /// `len` zero values of `width` words.
    pub fn new(width: usize, len: usize) -> Sums {
        Sums {
            width,
            words: vec![0; width * len],
        }
    }

    pub fn len(&self) -> usize {
        self.words.len().checked_div(self.width).unwrap_or(0)
    }

    /// Adds packed `value` to value `i`.
    #[inline]
    pub fn add(&mut self, i: usize, value: &[u64]) {
        let start = i * self.width;
        let sum = &mut self.words[start..start + self.width];
        for (s, v) in sum.iter_mut().zip(value) {
            *s += v;
        }
    }

    /// Value `i`, packed.
    #[inline]
    pub fn get(&self, i: usize) -> &[u64] {
        let start = i * self.width;
        &self.words[start..start + self.width]
    }

    /// Whether value `i` is all zeros (nothing was added, or only nothing).
    pub fn is_zero(&self, i: usize) -> bool {
        self.get(i).iter().all(|&w| w == 0)
    }

    /// Appends a zero value; its index.
    pub fn push_zero(&mut self) -> usize {
        self.words.resize(self.words.len() + self.width, 0);
        self.len() - 1
    }

    /// Adds value `from` to value `to`.
    pub fn add_within(&mut self, to: usize, from: usize) {
        let (w, (t, f)) = (self.width, (to * self.width, from * self.width));
        for k in 0..w {
            self.words[t + k] += self.words[f + k];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packs_only_the_kept_words() {
        let layout = Layout {
            kept: vec![0, 1, 8, 9],
        };
        let value = Value {
            ns: 5,
            events: 1,
            io_ns: 7,
            read_bytes: 100,
            ..Value::default()
        };
        let mut packed = [0u64; 4];
        layout.pack(value, &mut packed);
        assert_eq!(packed, [5, 1, 7, 100]);
        assert_eq!(layout.unpack(&packed), value);
        let mut sums = Sums::new(4, 2);
        sums.add(1, &packed);
        sums.add(1, &packed);
        assert!(sums.is_zero(0) && !sums.is_zero(1));
        assert_eq!(sums.get(1), [10, 2, 14, 200]);
        sums.add_within(0, 1);
        assert_eq!(sums.get(0), [10, 2, 14, 200]);
        assert_eq!(sums.push_zero(), 2);
        assert_eq!(Value::from_words(value.to_words()), value);
    }

    #[test]
    fn an_empty_model_keeps_the_clock_words() {
        let layout = Layout::of(&Model::default());
        assert_eq!(layout.width(), 2);
    }
}
