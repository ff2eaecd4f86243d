//! Heap-tracing events (the `heap` block file, kind 3): what the collector
//! records for every call of the malloc family and of anonymous
//! mmap/munmap, as the manual's "Heap Tracing Data" describes it.
//!
//! Records are variable-length and delta-encoded against the previous
//! record of the same block, so a malloc/free pair costs about 25 bytes
//! on disk: a block is one thread's, its events come in that thread's
//! order, and each block starts afresh (a reader can decode any block on
//! its own). Numbers are LEB128; signed deltas are zigzag-encoded.
//!
//! ```text
//! op        u8       HeapOp code
//! order     uleb     global order number minus the previous record's (the first: itself)
//! time      uleb     timestamp minus the previous record's (the first: minus the block's
//!                    first_timestamp_ns)
//! address   sleb     address minus the previous record's address (the first: itself)
//! size      uleb     for allocations, realloc, mmap and munmap
//! old       sleb     realloc only: the old address minus the new one
//! stack     u64 LE   allocations, realloc and mmap: the stack record's id
//! ```
//!
//! Encoding and decoding allocate nothing and never panic: the encoder
//! runs inside the collector's malloc hooks.

/// What a heap event is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HeapOp {
    Malloc,
    Calloc,
    /// realloc and reallocarray: `old_address` freed (when not null),
    /// `address` allocated.
    Realloc,
    /// memalign, posix_memalign, aligned_alloc, valloc, pvalloc.
    Memalign,
    Free,
    /// An anonymous private mapping (its own kind, not a heap block).
    Mmap,
    Munmap,
}

impl HeapOp {
    pub const ALL: [HeapOp; 7] = [
        HeapOp::Malloc,
        HeapOp::Calloc,
        HeapOp::Realloc,
        HeapOp::Memalign,
        HeapOp::Free,
        HeapOp::Mmap,
        HeapOp::Munmap,
    ];

    pub fn code(self) -> u8 {
        match self {
            HeapOp::Malloc => 1,
            HeapOp::Calloc => 2,
            HeapOp::Realloc => 3,
            HeapOp::Memalign => 4,
            HeapOp::Free => 5,
            HeapOp::Mmap => 6,
            HeapOp::Munmap => 7,
        }
    }

    pub fn from_code(code: u8) -> Option<HeapOp> {
        Some(match code {
            1 => HeapOp::Malloc,
            2 => HeapOp::Calloc,
            3 => HeapOp::Realloc,
            4 => HeapOp::Memalign,
            5 => HeapOp::Free,
            6 => HeapOp::Mmap,
            7 => HeapOp::Munmap,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            HeapOp::Malloc => "malloc",
            HeapOp::Calloc => "calloc",
            HeapOp::Realloc => "realloc",
            HeapOp::Memalign => "memalign",
            HeapOp::Free => "free",
            HeapOp::Mmap => "mmap",
            HeapOp::Munmap => "munmap",
        }
    }

    /// Whether the event makes a block (and so has a size and a stack).
    pub fn allocates(self) -> bool {
        matches!(
            self,
            HeapOp::Malloc | HeapOp::Calloc | HeapOp::Realloc | HeapOp::Memalign | HeapOp::Mmap
        )
    }

    fn has_size(self) -> bool {
        self.allocates() || self == HeapOp::Munmap
    }
}

/// One heap event as the collector saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeapEvent {
    pub op: HeapOp,
    /// Global order, exact across threads: events of one block carry
    /// increasing numbers, and sorting every thread's events by it gives
    /// the order in which the calls took effect.
    pub order: u64,
    /// CLOCK_MONOTONIC ns.
    pub timestamp_ns: u64,
    /// The block made (allocations, realloc, mmap) or given back (free,
    /// munmap). 0 for a failed allocation and for free(NULL).
    pub address: u64,
    /// Bytes asked for (allocations, realloc, mmap) or given back (munmap);
    /// 0 for free.
    pub size: u64,
    /// realloc's old block (0 when it was realloc(NULL, n)).
    pub old_address: u64,
    /// The stack of allocations, realloc and mmap; 0 otherwise.
    pub stack_id: u64,
}

/// Longest encoded record: op, three ulebs and two slebs of at most ten
/// bytes each, and a stack id.
pub const MAX_HEAP_RECORD_SIZE: usize = 1 + 10 * 5 + 8;

/// Shortest record of an event that makes a block (an allocation,
/// realloc or mmap): op, four one-byte numbers and the stack id. A reader
/// bounds how many blocks a file can make by it.
pub const MIN_ALLOCATING_RECORD_SIZE: usize = 1 + 4 + 8;

/// The previous record's values, against which the next one is encoded.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HeapDelta {
    order: u64,
    timestamp_ns: u64,
    address: u64,
}

impl HeapDelta {
    /// The state at the start of a block claimed at `first_timestamp_ns`.
    pub const fn block_start(first_timestamp_ns: u64) -> HeapDelta {
        HeapDelta {
            order: 0,
            timestamp_ns: first_timestamp_ns,
            address: 0,
        }
    }

    /// Encodes `event` into `out` against this state and advances it;
    /// returns the record's length. `out` holds any record.
    pub fn encode(&mut self, event: &HeapEvent, out: &mut [u8; MAX_HEAP_RECORD_SIZE]) -> usize {
        let mut at = 0;
        out[0] = event.op.code();
        at += 1;
        at += put_uleb(&mut out[at..], event.order.wrapping_sub(self.order));
        at += put_uleb(
            &mut out[at..],
            event.timestamp_ns.saturating_sub(self.timestamp_ns),
        );
        at += put_sleb(
            &mut out[at..],
            event.address.wrapping_sub(self.address) as i64,
        );
        if event.op.has_size() {
            at += put_uleb(&mut out[at..], event.size);
        }
        if event.op == HeapOp::Realloc {
            at += put_sleb(
                &mut out[at..],
                event.old_address.wrapping_sub(event.address) as i64,
            );
        }
        if event.op.allocates() {
            out[at..at + 8].copy_from_slice(&event.stack_id.to_le_bytes());
            at += 8;
        }
        self.order = event.order;
        self.timestamp_ns = self.timestamp_ns.max(event.timestamp_ns);
        self.address = event.address;
        at
    }

    /// Decodes the record at the front of `bytes` against this state and
    /// advances it; returns the event and the record's length, or None
    /// when the bytes are no whole record.
    #[inline]
    pub fn decode(&mut self, bytes: &[u8]) -> Option<(HeapEvent, usize)> {
        let op = HeapOp::from_code(*bytes.first()?)?;
        let mut at = 1;
        let order = self.order.wrapping_add(uleb_at(bytes, &mut at)?);
        let timestamp_ns = self.timestamp_ns.saturating_add(uleb_at(bytes, &mut at)?);
        let address = self.address.wrapping_add(sleb_at(bytes, &mut at)? as u64);
        let size = match op.has_size() {
            true => uleb_at(bytes, &mut at)?,
            false => 0,
        };
        let old_address = match op {
            HeapOp::Realloc => address.wrapping_add(sleb_at(bytes, &mut at)? as u64),
            _ => 0,
        };
        let stack_id = if op.allocates() {
            let raw: [u8; 8] = bytes.get(at..at + 8)?.try_into().ok()?;
            at += 8;
            u64::from_le_bytes(raw)
        } else {
            0
        };
        self.order = order;
        self.timestamp_ns = timestamp_ns;
        self.address = address;
        let event = HeapEvent {
            op,
            order,
            timestamp_ns,
            address,
            size,
            old_address,
            stack_id,
        };
        Some((event, at))
    }
}

/// Decodes every record of one block's committed bytes; false from `each`
/// stops. Returns false when the bytes end inside a record or hold
/// something that is no record (a damaged block).
pub fn decode_block(
    first_timestamp_ns: u64,
    records: &[u8],
    mut each: impl FnMut(HeapEvent),
) -> bool {
    let mut delta = HeapDelta::block_start(first_timestamp_ns);
    let mut rest = records;
    while !rest.is_empty() {
        let Some((event, len)) = delta.decode(rest) else {
            return false;
        };
        each(event);
        rest = &rest[len..];
    }
    true
}

fn put_uleb(out: &mut [u8], mut value: u64) -> usize {
    let mut at = 0;
    loop {
        let byte = (value & 0x7f) as u8;
        value >>= 7;
        if value == 0 {
            out[at] = byte;
            return at + 1;
        }
        out[at] = byte | 0x80;
        at += 1;
    }
}

fn put_sleb(out: &mut [u8], value: i64) -> usize {
    put_uleb(out, ((value << 1) ^ (value >> 63)) as u64)
}

/// The uleb at `bytes[*at..]`, moving `at` past it. One-byte numbers (most
/// deltas) take the short way, and those of up to eight bytes with eight
/// bytes to read are decoded without a branch per byte: a reader decodes
/// tens of millions, and an address delta's length is hard to predict.
#[inline]
fn uleb_at(bytes: &[u8], at: &mut usize) -> Option<u64> {
    let first = *bytes.get(*at)?;
    if first < 0x80 {
        *at += 1;
        return Some(u64::from(first));
    }
    if let Some(word) = bytes.get(*at..*at + 8) {
        let word = u64::from_le_bytes(word.try_into().ok()?);
        if let Some((value, len)) = uleb_in_word(word) {
            *at += len;
            return Some(value);
        }
    }
    let (value, len) = get_uleb(bytes.get(*at..)?)?;
    *at += len;
    Some(value)
}

/// The uleb that starts `word` (eight bytes, little-endian) and its
/// length, when it ends within them.
#[inline]
fn uleb_in_word(word: u64) -> Option<(u64, usize)> {
    // A clear top bit ends the number: the first such byte is its last.
    let ends = !word & 0x8080_8080_8080_8080;
    if ends == 0 {
        return None;
    }
    let len = (ends.trailing_zeros() as usize + 1) / 8;
    let bits = word & 0x7f7f_7f7f_7f7f_7f7f & (u64::MAX >> (64 - 8 * len));
    // Squeeze out the top bits: 7-bit groups into 14, 28, then 56 bits.
    let bits = (bits & 0x007f_007f_007f_007f) | ((bits & 0x7f00_7f00_7f00_7f00) >> 1);
    let bits = (bits & 0x0000_3fff_0000_3fff) | ((bits & 0x3fff_0000_3fff_0000) >> 2);
    let bits = (bits & 0x0000_0000_0fff_ffff) | ((bits & 0x0fff_ffff_0000_0000) >> 4);
    Some((bits, len))
}

#[inline]
fn sleb_at(bytes: &[u8], at: &mut usize) -> Option<i64> {
    let raw = uleb_at(bytes, at)?;
    Some(((raw >> 1) as i64) ^ -((raw & 1) as i64))
}

fn get_uleb(bytes: &[u8]) -> Option<(u64, usize)> {
    let mut value = 0u64;
    for (i, &byte) in bytes.iter().enumerate().take(10) {
        value |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Some((value, i + 1));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The word-at-a-time decoding reads what the byte-at-a-time one
    /// reads, for numbers of every length (with bytes after them) and for
    /// padded encodings (a top bit set on a zero group).
    #[test]
    fn a_uleb_read_by_the_word_is_read_by_the_byte_too() {
        let mut values: Vec<u64> = (0..64).flat_map(|b| [1u64 << b, (1u64 << b) - 1]).collect();
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..10_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            values.push(x >> (x % 64));
        }
        for value in values {
            let mut bytes = [0xffu8; 24];
            let len = put_uleb(&mut bytes, value);
            let mut at = 0;
            assert_eq!(uleb_at(&bytes, &mut at), Some(value), "{value:#x}");
            assert_eq!(at, len);
            assert_eq!(get_uleb(&bytes), Some((value, len)));
            // Exactly the number's bytes: the byte-at-a-time way.
            let mut at = 0;
            assert_eq!(uleb_at(&bytes[..len], &mut at), Some(value));
        }
        // 5 as three bytes, 0 as two.
        let mut at = 0;
        let padded = [0x85, 0x80, 0x00, 0, 0, 0, 0, 0, 0];
        assert_eq!(uleb_at(&padded, &mut at), Some(5));
        assert_eq!(at, 3);
        assert_eq!(
            uleb_in_word(u64::from_le_bytes([0x80, 0, 1, 2, 3, 4, 5, 6])),
            Some((0, 2))
        );
        // No end within eight bytes: left to the byte-at-a-time way.
        assert_eq!(uleb_in_word(u64::MAX), None);
        let mut at = 0;
        let long = [0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01, 0];
        assert_eq!(uleb_at(&long, &mut at), Some(1 << 56));
        assert_eq!(at, 9);
    }

    fn event(op: HeapOp, order: u64, address: u64) -> HeapEvent {
        HeapEvent {
            op,
            order,
            timestamp_ns: 1_000 + order * 37,
            address,
            size: if op.has_size() { 24 + order } else { 0 },
            old_address: if op == HeapOp::Realloc {
                address - 4096
            } else {
                0
            },
            stack_id: if op.allocates() {
                0xdead_beef_0000 + order
            } else {
                0
            },
        }
    }

    #[test]
    fn records_round_trip_in_a_block() {
        let events: Vec<HeapEvent> = HeapOp::ALL
            .iter()
            .enumerate()
            .map(|(i, &op)| event(op, 10 + 3 * i as u64, 0x5555_0000 + (i as u64 % 3) * 64))
            .collect();
        let mut bytes = Vec::new();
        let mut delta = HeapDelta::block_start(1_000);
        for e in &events {
            let mut out = [0u8; MAX_HEAP_RECORD_SIZE];
            let len = delta.encode(e, &mut out);
            bytes.extend_from_slice(&out[..len]);
        }
        let mut decoded = Vec::new();
        assert!(decode_block(1_000, &bytes, |e| decoded.push(e)));
        assert_eq!(decoded, events);
    }

    /// No event that makes a block encodes shorter than the bound.
    #[test]
    fn allocating_records_take_at_least_the_minimum() {
        for op in HeapOp::ALL.into_iter().filter(|op| op.allocates()) {
            let mut delta = HeapDelta::block_start(0);
            let e = HeapEvent {
                op,
                order: 0,
                timestamp_ns: 0,
                address: 0,
                size: 0,
                old_address: 0,
                stack_id: 0,
            };
            let len = delta.encode(&e, &mut [0u8; MAX_HEAP_RECORD_SIZE]);
            assert!(len >= MIN_ALLOCATING_RECORD_SIZE, "{op:?}: {len}");
        }
    }

    #[test]
    fn a_malloc_free_pair_takes_about_25_bytes() {
        let mut delta = HeapDelta::block_start(0);
        let mut out = [0u8; MAX_HEAP_RECORD_SIZE];
        let mut total = 0;
        for n in 0..1000u64 {
            let address = 0x5555_5555_a000 + (n % 7) * 48;
            let malloc = HeapEvent {
                op: HeapOp::Malloc,
                order: 2 * n,
                timestamp_ns: 200 * n,
                address,
                size: 32,
                old_address: 0,
                stack_id: 0x1234_5678_9abc_def0,
            };
            let free = HeapEvent {
                op: HeapOp::Free,
                order: 2 * n + 1,
                timestamp_ns: 200 * n + 90,
                address,
                size: 0,
                old_address: 0,
                stack_id: 0,
            };
            total += delta.encode(&malloc, &mut out) + delta.encode(&free, &mut out);
        }
        assert!(total <= 1000 * 26, "{total} bytes for 1000 pairs");
    }

    #[test]
    fn extreme_values_fit_the_largest_record() {
        let mut delta = HeapDelta::block_start(u64::MAX);
        let e = HeapEvent {
            op: HeapOp::Realloc,
            order: u64::MAX,
            timestamp_ns: 0,
            address: u64::MAX,
            size: u64::MAX,
            old_address: 0,
            stack_id: u64::MAX,
        };
        let mut out = [0u8; MAX_HEAP_RECORD_SIZE];
        let len = delta.encode(&e, &mut out);
        let mut back = HeapDelta::block_start(u64::MAX);
        let (decoded, used) = back.decode(&out[..len]).unwrap();
        assert_eq!(used, len);
        assert_eq!(decoded.address, e.address);
        assert_eq!(decoded.size, e.size);
        assert_eq!(decoded.old_address, e.old_address);
    }

    #[test]
    fn op_codes_round_trip() {
        for op in HeapOp::ALL {
            assert_eq!(HeapOp::from_code(op.code()), Some(op));
        }
        assert_eq!(HeapOp::from_code(0), None);
        assert_eq!(HeapOp::from_code(8), None);
    }

    #[test]
    fn damaged_bytes_are_refused_not_misread() {
        assert!(!decode_block(0, &[0xff, 1, 2], |_| {}));
        assert!(!decode_block(0, &[HeapOp::Malloc.code(), 0x80], |_| {}));
        assert!(decode_block(0, &[], |_| {}));
    }
}
