//! Metric values packed to the quantities a model's data can make nonzero.
//!
//! A [`Value`] has a field for every kind of data (CPU time, waits,
//! allocations, I/O, off-CPU time, counters, MPI): 38 words. A clock profile
//! only ever fills two of them, and the aggregation adds a value per frame of every
//! distinct stack (a hundred million frames at a million stacks) and keeps
//! one per call-tree node (millions): the per-stack sums, the per-key sums
//! of the hot loop and the call tree hold only the words the data has, in
//! one flat vector each, and a value is unpacked when it is shown.

use crate::metrics::Value;
use crate::model::{CounterRole, Model};
use experiment::counters::MAX_COUNTERS;

/// Words of a [`Value`].
pub const WORDS: usize = MPI_WORDS + 7;

/// The words of a clock event: CPU time and the event.
pub const NS_WORD: usize = 0;
pub const EVENTS_WORD: usize = 1;

/// The words of each traced kind, in [`Value::to_words`] order.
const SYNC_WORDS: std::ops::Range<u8> = 2..4;
const HEAP_WORDS: std::ops::Range<u8> = 4..8;
const IO_WORDS: std::ops::Range<u8> = 8..19;
const OFFCPU_WORDS: std::ops::Range<u8> = 19..21;
/// The heap words one by one: an allocation and its bytes, and the same
/// again when it leaked.
pub const ALLOCATION_WORDS: [usize; 4] = {
    let first = HEAP_WORDS.start as usize;
    [first, first + 1, first + 2, first + 3]
};
const _: () = assert!(HEAP_WORDS.end - HEAP_WORDS.start == 4);

/// Where the counters' words start, then `cycles` and `instructions`.
const COUNTER_WORDS: usize = OFFCPU_WORDS.end as usize;
const CYCLES_WORD: usize = COUNTER_WORDS + MAX_COUNTERS;
const INSTRUCTIONS_WORD: usize = CYCLES_WORD + 1;
/// Where the MPI tracing words start (after the counters').
const MPI_WORDS: usize = INSTRUCTIONS_WORD + 1;

impl Value {
    /// The value's quantities in a fixed order (see [`Layout::of`]).
    pub(crate) fn to_words(self) -> [u64; WORDS] {
        let c = self.counters;
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
            self.read_ns,
            self.write_ns,
            self.other_io_ns,
            self.io_errors,
            self.io_error_ns,
            self.offcpu_ns,
            self.switches,
            c[0],
            c[1],
            c[2],
            c[3],
            c[4],
            c[5],
            c[6],
            c[7],
            self.cycles,
            self.instructions,
            self.mpi_ns,
            self.mpi_sends,
            self.mpi_bytes_sent,
            self.mpi_receives,
            self.mpi_bytes_received,
            self.mpi_other,
            self.mpi_calls,
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
            read_ns: w[14],
            write_ns: w[15],
            other_io_ns: w[16],
            io_errors: w[17],
            io_error_ns: w[18],
            offcpu_ns: w[19],
            switches: w[20],
            counters: std::array::from_fn(|i| w[COUNTER_WORDS + i]),
            cycles: w[CYCLES_WORD],
            instructions: w[INSTRUCTIONS_WORD],
            mpi_ns: w[MPI_WORDS],
            mpi_sends: w[MPI_WORDS + 1],
            mpi_bytes_sent: w[MPI_WORDS + 2],
            mpi_receives: w[MPI_WORDS + 3],
            mpi_bytes_received: w[MPI_WORDS + 4],
            mpi_other: w[MPI_WORDS + 5],
            mpi_calls: w[MPI_WORDS + 6],
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
    /// with clock events (or no data at all), each traced kind's, and
    /// those of the counters recorded (with CPI's two when they are).
    pub fn of(model: &Model) -> Layout {
        let counted = !model.counter_events.is_empty();
        let role = |role| counted && model.counter_with(role).is_some();
        let word = |at: usize| at as u8..at as u8 + 1;
        let kinds: [(bool, std::ops::Range<u8>); 9] = [
            (!model.events.is_empty(), 0..2),
            (!model.sync.is_empty(), SYNC_WORDS),
            (!model.heap.is_empty(), HEAP_WORDS),
            (!model.io.is_empty(), IO_WORDS),
            (!model.offcpu.is_empty(), OFFCPU_WORDS),
            (
                counted,
                COUNTER_WORDS as u8..(COUNTER_WORDS + model.counters.len()) as u8,
            ),
            (role(CounterRole::Cycles), word(CYCLES_WORD)),
            (role(CounterRole::Instructions), word(INSTRUCTIONS_WORD)),
            (!model.mpi.is_empty(), MPI_WORDS as u8..WORDS as u8),
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

    /// Where word `word` of a value is in a packed value, if kept.
    pub fn position(&self, word: usize) -> Option<usize> {
        self.kept.iter().position(|&w| usize::from(w) == word)
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
    /// Where the words are: address and length in bytes (to fault them in
    /// on another thread: [`crate::memory::populate_in_background`]).
    pub(crate) fn region(&self) -> (usize, usize) {
        (self.words.as_ptr() as usize, self.words.len() * 8)
    }

    /// `len` zero values of `width` words.
    pub fn new(width: usize, len: usize) -> Sums {
        let words = vec![0; width * len];
        Sums { width, words }
    }

    pub fn len(&self) -> usize {
        self.words.len().checked_div(self.width).unwrap_or(0)
    }

    /// Adds packed `value` to value `i`.
    #[inline]
    pub fn add(&mut self, i: usize, value: &[u64]) {
        self.add_at(i, 0, &value[..self.width.min(value.len())]);
    }

    /// Adds packed `value` to the words of value `i` from its word `at`.
    #[inline]
    pub fn add_at(&mut self, i: usize, at: usize, value: &[u64]) {
        let start = i * self.width + at;
        let sum = &mut self.words[start..start + value.len()];
        for (s, v) in sum.iter_mut().zip(value) {
            *s += v;
        }
    }

    /// Adds `value` to word `at` of value `i`.
    #[inline]
    pub fn add_word(&mut self, i: usize, at: usize, value: u64) {
        self.words[i * self.width + at] += value;
    }

    /// Value `i`, packed.
    #[inline]
    pub fn get(&self, i: usize) -> &[u64] {
        let start = i * self.width;
        &self.words[start..start + self.width]
    }

    /// Starts fetching every cache line of value `i`, for an access soon:
    /// a value wider than a word may straddle two (the vector starts where
    /// the allocator put it, not at a line), and then the second is
    /// fetched too.
    pub fn prefetch(&self, i: usize) {
        let start = i * self.width;
        if let Some(words) = self.words.get(start..start + self.width) {
            if let (Some(first), Some(last)) = (words.first(), words.last()) {
                crate::memory::prefetch_one(first);
                let line = |word: &u64| word as *const u64 as usize / 64;
                if line(last) != line(first) {
                    crate::memory::prefetch_one(last);
                }
            }
        }
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

    /// Adds every value of `other` (as long, as wide) to this one's.
    pub fn add_all(&mut self, other: &Sums) {
        debug_assert_eq!(
            (self.width, self.words.len()),
            (other.width, other.words.len())
        );
        for (sum, word) in self.words.iter_mut().zip(&other.words) {
            *sum += word;
        }
    }

    /// The sum of every value, packed.
    pub fn sum_all(&self) -> Vec<u64> {
        let mut sum = vec![0u64; self.width];
        for value in self.words.chunks_exact(self.width.max(1)) {
            for (s, v) in sum.iter_mut().zip(value) {
                *s += v;
            }
        }
        sum
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

    /// I/O keeps its eleven words (time, per-class times and errors,
    /// bytes, calls) and nothing else: a failed read is an error only.
    #[test]
    fn io_keeps_its_words() {
        use crate::model::{IoEntry, NO_FILE, NO_STACK};
        use experiment::io::IoOp;
        let call = |op, failed, call_ns, bytes| IoEntry {
            experiment: 0,
            op,
            failed,
            thread: 1,
            time_ns: 0,
            call_ns,
            bytes,
            fd: 3,
            file: 0,
            source: NO_FILE,
            stack: NO_STACK,
            sample: 1,
        };
        let model = Model {
            io: vec![call(IoOp::Read, false, 5, 100)],
            ..Model::default()
        };
        let layout = Layout::of(&model);
        assert_eq!(layout.width(), 11);
        let mut value = Value::of_io(&call(IoOp::Read, false, 5, 100));
        value.add(Value::of_io(&call(IoOp::Read, true, 7, 0)));
        value.add(Value::of_io(&call(IoOp::Sync, false, 11, 0)));
        value.add(Value::of_io(&call(IoOp::Transfer, false, 13, 40)));
        let mut packed = vec![0; layout.width()];
        layout.pack(value, &mut packed);
        let back = layout.unpack(&packed);
        assert_eq!(back, value);
        assert_eq!(
            (back.io_ns, back.read_ns, back.write_ns, back.other_io_ns),
            (36, 5, 13, 11)
        );
        assert_eq!((back.io_errors, back.io_error_ns), (1, 7));
        assert_eq!((back.reads, back.read_bytes, back.writes), (2, 140, 1));
        assert_eq!(back.io_calls(), 5, "a transfer is a read and a write");
    }

    /// MPI's seven words come after the counters', kept only with MPI data.
    #[test]
    fn mpi_words_round_trip() {
        let value = Value {
            mpi_ns: 1,
            mpi_sends: 2,
            mpi_bytes_sent: 3,
            mpi_receives: 4,
            mpi_bytes_received: 5,
            mpi_other: 6,
            mpi_calls: 7,
            instructions: 8,
            ..Value::default()
        };
        assert_eq!(Value::from_words(value.to_words()), value);
        let entry = crate::model::MpiEntry {
            experiment: 0,
            op: experiment::mpi::MpiOp::Waitall,
            completion: false,
            thread: 1,
            time_ns: 0,
            call_ns: 10,
            dest: -1,
            source: -1,
            bytes_sent: 0,
            bytes_received: 0,
            sends: 0,
            receives: 0,
            stack: crate::model::NO_STACK,
            sample: 1,
        };
        let mut model = Model {
            mpi: vec![entry],
            ..Model::default()
        };
        assert_eq!(Layout::of(&model).width(), 7);
        model.mpi.push(crate::model::MpiEntry {
            completion: true,
            bytes_received: 64,
            call_ns: 0,
            ..entry
        });
        let layout = Layout::of(&model);
        let mut packed = vec![0u64; layout.width()];
        let mut sum = Value::default();
        for entry in &model.mpi {
            sum.add(Value::of_mpi(entry));
        }
        layout.pack(sum, &mut packed);
        assert_eq!(
            packed,
            [10, 0, 0, 0, 64, 1, 1],
            "a wait: one other call; its receive's bytes"
        );
        assert_eq!(layout.unpack(&packed), sum);
    }

    #[test]
    fn an_empty_model_keeps_the_clock_words() {
        let layout = Layout::of(&Model::default());
        assert_eq!(layout.width(), 2);
    }

    /// Counters cost words only when recorded: one per counter, and CPI's
    /// two when a cycles and an instructions counter are among them.
    #[test]
    fn counters_keep_their_own_words() {
        use crate::model::{CounterEntry, CounterInfo, NO_STACK};
        use experiment::counters::CounterSpec;
        let counter = |name: &str, config: u64, role| CounterInfo {
            metric: commands::Counter::named(name),
            spec: CounterSpec::parse(&format!("0:{config}:0:0:1000:0:{name}")).unwrap(),
            role,
            scaled: false,
        };
        let mut model = Model {
            counters: vec![
                counter("cycles", 0, Some(CounterRole::Cycles)),
                counter("misses", 3, None),
            ],
            ..Model::default()
        };
        assert_eq!(Layout::of(&model).width(), 2, "no record, no words");
        model.counter_events.push(CounterEntry {
            experiment: 0,
            counter: 1,
            flags: 0,
            frame: 0,
            thread: 1,
            time_ns: 0,
            count: 5,
            data_addr: 0,
            frame_cfa: 0,
            stack_record: 0,
            stack: NO_STACK,
            sample: 1,
        });
        let layout = Layout::of(&model);
        // Two counters and cycles; no clock words without clock events.
        assert_eq!(layout.width(), 2 + 1);
        let value = Value {
            counters: [0, 5, 0, 0, 0, 0, 0, 9],
            cycles: 7,
            ..Value::default()
        };
        let mut packed = vec![0; layout.width()];
        layout.pack(value, &mut packed);
        assert_eq!(packed, [0, 5, 7]);
        let back = layout.unpack(&packed);
        assert_eq!((back.counters[1], back.counters[7], back.cycles), (5, 0, 7));
    }
}
