//! Binary layouts of the block files (`profile`, `stacks`) and the constants of the format.
//!
//! libcollector.so uses this module inside signal handlers, so nothing here allocates,
//! panics on bad input, or does I/O. All integers are little-endian on disk.
//!
//! A block file is a sequence of `BLOCK_SIZE` blocks. Each block starts with a
//! [`BlockHeader`]; complete records follow, `committed` bytes of them. See
//! docs/experiment-format.md for the full specification.

use core::mem::{offset_of, size_of};
use core::sync::atomic::{AtomicU32, Ordering};

/// Size of one block of a data file (also `block_size` in the manifest).
pub const BLOCK_SIZE: usize = 65536;
/// `magic` of a claimed block: the bytes "RXB1" read as a little-endian u32.
pub const BLOCK_MAGIC: u32 = 0x3142_5852;
/// Size of [`BlockHeader`]; records start at this offset inside a block.
pub const HEADER_SIZE: usize = 32;
/// Bytes of records a block can hold.
pub const BLOCK_PAYLOAD: usize = BLOCK_SIZE - HEADER_SIZE;
/// Block kind of the `profile` file (records are [`ClockEvent`]).
pub const KIND_PROFILE: u16 = 1;
/// Block kind of the `stacks` file (records are [`StackRecordHeader`] + pcs).
pub const KIND_STACKS: u16 = 2;
/// Block kind of the `heap` file: heap-tracing records ([`crate::heap`]).
pub const KIND_HEAP: u16 = 3;
/// Block kind of the `sync` file: synchronization-wait records ([`crate::sync`]).
pub const KIND_SYNC: u16 = 4;
/// Block kind of the `io` file: I/O tracing records ([`crate::io`]).
pub const KIND_IO: u16 = 5;
/// Block kind of the `offcpu` file: off-CPU records ([`crate::offcpu`]).
pub const KIND_OFFCPU: u16 = 6;
/// Block kind of the `counters` file: counter overflow records ([`crate::counters`]).
pub const KIND_COUNTERS: u16 = 7;
/// Block kind of the `mpi` file: MPI tracing records ([`crate::mpi`]).
pub const KIND_MPI: u16 = 8;
/// First line of the manifest: `format=rdbx-experiment`.
pub const FORMAT_NAME: &str = "rdbx-experiment";
/// Major version of the format this crate writes and reads.
pub const FORMAT_VERSION: u32 = 1;
/// Minor version this crate knows and writers write (`version=1.1`: 1.1 added the `number`
/// of `thread-start` lines and the `collector-thread` event). A reader reads a newer minor
/// version of its major version, ignoring what it does not know.
pub const FORMAT_MINOR_VERSION: u32 = 6;
/// Deepest stack a record may hold.
pub const MAX_STACK_DEPTH: usize = 2048;
/// Default stack depth limit.
pub const DEFAULT_STACK_DEPTH: usize = 256;
/// `cpu` of a clock event when the CPU is not known.
pub const CPU_UNKNOWN: u16 = 0xffff;
/// Size of one [`ClockEvent`] record.
pub const CLOCK_EVENT_SIZE: usize = 24;
/// Size of a [`StackRecordHeader`] (the pcs follow it).
pub const STACK_RECORD_HEADER_SIZE: usize = 16;
/// Size of the largest stack record.
pub const MAX_STACK_RECORD_SIZE: usize = STACK_RECORD_HEADER_SIZE + 8 * MAX_STACK_DEPTH;
/// Byte offset of `magic` inside a block header.
pub const MAGIC_OFFSET: usize = offset_of!(BlockHeader, magic);
/// Byte offset of `committed` inside a block header.
pub const COMMITTED_OFFSET: usize = offset_of!(BlockHeader, committed);

/// The header at the start of every block.
///
/// `committed` is the number of bytes of complete records after the header. Writers store it
/// with an atomic `Release` store (through a pointer to the field cast to `AtomicU32`) after
/// the record bytes, so a reader that loads it with `Acquire` (or reads the header before the
/// records, as one `read(2)` of the block does) never sees a half-written record. Writers also
/// store `magic` last, with `Release`, when they claim a block, so a reader never sees a
/// claimed block with a half-written header. See [`BlockWriter`].
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BlockHeader {
    /// [`BLOCK_MAGIC`] when the block is claimed; 0: unused (never claimed, or being
    /// claimed), skip it; anything else: not written by a collector, damaged.
    pub magic: u32,
    /// [`KIND_PROFILE`] or [`KIND_STACKS`].
    pub kind: u16,
    /// [`HEADER_SIZE`].
    pub header_size: u16,
    /// Kernel thread id of the thread that owns the block.
    pub tid: u32,
    /// Bytes of complete records after the header.
    pub committed: u32,
    /// Index of the block in its file.
    pub block_index: u32,
    /// Zero.
    pub reserved: u32,
    /// CLOCK_MONOTONIC ns when the block was claimed.
    pub first_timestamp_ns: u64,
}

/// One clock-profiling event (kind 1 blocks).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClockEvent {
    /// CLOCK_MONOTONIC ns when the tick was handled.
    pub timestamp_ns: u64,
    /// Id of the stack record holding the call stack.
    pub stack_id: u64,
    /// Thread CPU time consumed since this thread's previous event, saturating.
    pub weight_ns: u32,
    /// CPU the thread ran on, or [`CPU_UNKNOWN`].
    pub cpu: u16,
    /// Zero.
    pub reserved: u16,
}

/// Header of a stack record (kind 2 blocks); `depth` u64 pcs follow it, leaf first.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StackRecordHeader {
    /// [`stack_id`] of (status, pcs).
    pub stack_id: u64,
    /// Number of pcs that follow.
    pub depth: u16,
    /// A [`StackStatus`] code.
    pub status: u16,
    /// Zero.
    pub reserved: u32,
}

const _: () = assert!(size_of::<BlockHeader>() == HEADER_SIZE);
const _: () = assert!(size_of::<ClockEvent>() == CLOCK_EVENT_SIZE);
const _: () = assert!(size_of::<StackRecordHeader>() == STACK_RECORD_HEADER_SIZE);
const _: () = assert!(COMMITTED_OFFSET == 12 && MAGIC_OFFSET == 0);
const _: () = assert!(offset_of!(BlockHeader, first_timestamp_ns) == 24);
const _: () = assert!(offset_of!(ClockEvent, cpu) == 20);
const _: () = assert!(offset_of!(StackRecordHeader, status) == 10);
const _: () = assert!(MAX_STACK_RECORD_SIZE <= BLOCK_PAYLOAD);

/// Reads little-endian integers from the front of a slice; every read checks the length.
struct Reader<'a> {
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        Reader { rest: bytes }
    }

    fn take<const N: usize>(&mut self) -> Option<[u8; N]> {
        let (head, tail) = self.rest.split_first_chunk::<N>()?;
        self.rest = tail;
        Some(*head)
    }

    fn u16(&mut self) -> Option<u16> {
        self.take().map(u16::from_le_bytes)
    }

    fn u32(&mut self) -> Option<u32> {
        self.take().map(u32::from_le_bytes)
    }

    fn u64(&mut self) -> Option<u64> {
        self.take().map(u64::from_le_bytes)
    }
}

/// Writes little-endian integers into a fixed array.
struct Writer<const N: usize> {
    out: [u8; N],
    at: usize,
}

impl<const N: usize> Writer<N> {
    fn new() -> Self {
        Writer { out: [0; N], at: 0 }
    }

    fn put(&mut self, bytes: &[u8]) -> &mut Self {
        if let Some(dst) = self.out.get_mut(self.at..self.at + bytes.len()) {
            dst.copy_from_slice(bytes);
        }
        self.at += bytes.len();
        self
    }
}

/// Copies `src` to the start of `dst`; false (nothing written) if `dst` is too short.
fn copy_into(dst: &mut [u8], src: &[u8]) -> bool {
    match dst.get_mut(..src.len()) {
        Some(d) => {
            d.copy_from_slice(src);
            true
        }
        None => false,
    }
}

impl BlockHeader {
    /// A claimed header with nothing committed yet.
    pub const fn new(kind: u16, tid: u32, block_index: u32, first_timestamp_ns: u64) -> Self {
        BlockHeader {
            magic: BLOCK_MAGIC,
            kind,
            header_size: HEADER_SIZE as u16,
            tid,
            committed: 0,
            block_index,
            reserved: 0,
            first_timestamp_ns,
        }
    }

    /// True when the block has been claimed by a writer.
    pub fn is_claimed(&self) -> bool {
        self.magic == BLOCK_MAGIC
    }

    pub fn to_bytes(&self) -> [u8; HEADER_SIZE] {
        let mut w = Writer::<HEADER_SIZE>::new();
        w.put(&self.magic.to_le_bytes())
            .put(&self.kind.to_le_bytes())
            .put(&self.header_size.to_le_bytes())
            .put(&self.tid.to_le_bytes())
            .put(&self.committed.to_le_bytes())
            .put(&self.block_index.to_le_bytes())
            .put(&self.reserved.to_le_bytes())
            .put(&self.first_timestamp_ns.to_le_bytes());
        w.out
    }

    /// Decodes the header at the start of `bytes`; None if it is shorter than a header.
    pub fn from_bytes(bytes: &[u8]) -> Option<Self> {
        let mut r = Reader::new(bytes);
        Some(BlockHeader {
            magic: r.u32()?,
            kind: r.u16()?,
            header_size: r.u16()?,
            tid: r.u32()?,
            committed: r.u32()?,
            block_index: r.u32()?,
            reserved: r.u32()?,
            first_timestamp_ns: r.u64()?,
        })
    }

    /// Writes the header at the start of `dst`; false if `dst` is too short.
    pub fn write_to(&self, dst: &mut [u8]) -> bool {
        copy_into(dst, &self.to_bytes())
    }
}

impl ClockEvent {
    pub fn to_bytes(&self) -> [u8; CLOCK_EVENT_SIZE] {
        let mut w = Writer::<CLOCK_EVENT_SIZE>::new();
        w.put(&self.timestamp_ns.to_le_bytes())
            .put(&self.stack_id.to_le_bytes())
            .put(&self.weight_ns.to_le_bytes())
            .put(&self.cpu.to_le_bytes())
            .put(&self.reserved.to_le_bytes());
        w.out
    }

    pub fn from_bytes(bytes: &[u8]) -> Option<Self> {
        let mut r = Reader::new(bytes);
        Some(ClockEvent {
            timestamp_ns: r.u64()?,
            stack_id: r.u64()?,
            weight_ns: r.u32()?,
            cpu: r.u16()?,
            reserved: r.u16()?,
        })
    }

    pub fn write_to(&self, dst: &mut [u8]) -> bool {
        copy_into(dst, &self.to_bytes())
    }
}

impl StackRecordHeader {
    pub fn to_bytes(&self) -> [u8; STACK_RECORD_HEADER_SIZE] {
        let mut w = Writer::<STACK_RECORD_HEADER_SIZE>::new();
        w.put(&self.stack_id.to_le_bytes())
            .put(&self.depth.to_le_bytes())
            .put(&self.status.to_le_bytes())
            .put(&self.reserved.to_le_bytes());
        w.out
    }

    pub fn from_bytes(bytes: &[u8]) -> Option<Self> {
        let mut r = Reader::new(bytes);
        Some(StackRecordHeader {
            stack_id: r.u64()?,
            depth: r.u16()?,
            status: r.u16()?,
            reserved: r.u32()?,
        })
    }

    /// Size of the whole record: header plus `depth` pcs.
    pub fn record_size(&self) -> usize {
        stack_record_size(self.depth as usize)
    }
}

/// Size of a stack record with `depth` pcs.
pub const fn stack_record_size(depth: usize) -> usize {
    STACK_RECORD_HEADER_SIZE + 8 * depth
}

/// Encodes a whole stack record (header, then pcs) at the start of `dst`.
/// Returns the bytes written, or None if `dst` is too short or the stack too deep
/// (nothing is written then).
pub fn write_stack_record(dst: &mut [u8], status: StackStatus, pcs: &[u64]) -> Option<usize> {
    if pcs.len() > MAX_STACK_DEPTH {
        return None;
    }
    let size = stack_record_size(pcs.len());
    let dst = dst.get_mut(..size)?;
    let header = StackRecordHeader {
        stack_id: stack_id(status as u16, pcs),
        depth: pcs.len() as u16,
        status: status as u16,
        reserved: 0,
    };
    let (head, body) = dst.split_at_mut(STACK_RECORD_HEADER_SIZE);
    copy_into(head, &header.to_bytes());
    for (slot, pc) in body.chunks_exact_mut(8).zip(pcs) {
        slot.copy_from_slice(&pc.to_le_bytes());
    }
    Some(size)
}

/// A stack record seen in place inside a block.
#[derive(Clone, Copy, Debug)]
pub struct StackRecordRef<'a> {
    pub header: StackRecordHeader,
    pcs_bytes: &'a [u8],
}

impl<'a> StackRecordRef<'a> {
    /// Decodes the record at the start of `bytes`; None if the header or the pcs do not fit.
    pub fn parse(bytes: &'a [u8]) -> Option<Self> {
        let header = StackRecordHeader::from_bytes(bytes)?;
        let pcs_bytes = bytes.get(STACK_RECORD_HEADER_SIZE..header.record_size())?;
        Some(StackRecordRef { header, pcs_bytes })
    }

    /// The pcs as recorded: 8 little-endian bytes each, leaf first.
    pub fn pcs_bytes(&self) -> &'a [u8] {
        self.pcs_bytes
    }

    /// The pcs, leaf first.
    pub fn pcs(&self) -> impl DoubleEndedIterator<Item = u64> + 'a {
        self.pcs_bytes
            .chunks_exact(8)
            .filter_map(|c| c.try_into().ok().map(u64::from_le_bytes))
    }

    pub fn status(&self) -> Option<StackStatus> {
        StackStatus::from_code(self.header.status)
    }

    /// Size of the whole record in bytes.
    pub fn size(&self) -> usize {
        STACK_RECORD_HEADER_SIZE + self.pcs_bytes.len()
    }
}

/// How a recorded stack ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u16)]
pub enum StackStatus {
    /// The unwinder reached the outermost frame.
    Complete = 0,
    /// Cut at the depth limit.
    Truncated = 1,
    /// The unwinder failed: the frames listed are right, the rest is unknown.
    Failed = 2,
}

impl StackStatus {
    pub fn from_code(code: u16) -> Option<Self> {
        match code {
            0 => Some(StackStatus::Complete),
            1 => Some(StackStatus::Truncated),
            2 => Some(StackStatus::Failed),
            _ => None,
        }
    }

    pub fn code(self) -> u16 {
        self as u16
    }

    pub fn name(self) -> &'static str {
        match self {
            StackStatus::Complete => "complete",
            StackStatus::Truncated => "truncated",
            StackStatus::Failed => "failed",
        }
    }
}

/// Why a sample was recorded (the `cause` of a `sample` log line; the code is the `cause`
/// argument of `__rdbx_collector_sample`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u16)]
pub enum SampleCause {
    Start = 0,
    End = 1,
    Pause = 2,
    Resume = 3,
    Periodic = 4,
    /// `collector sample record` in the debugger.
    Manual = 5,
    /// The debugger stopped the process.
    DbxStop = 6,
    /// `collector_sample()` called by the program.
    Api = 7,
    /// The sample signal arrived.
    Signal = 8,
    ForkBefore = 9,
    ForkAfter = 10,
}

const SAMPLE_CAUSES: [SampleCause; 11] = [
    SampleCause::Start,
    SampleCause::End,
    SampleCause::Pause,
    SampleCause::Resume,
    SampleCause::Periodic,
    SampleCause::Manual,
    SampleCause::DbxStop,
    SampleCause::Api,
    SampleCause::Signal,
    SampleCause::ForkBefore,
    SampleCause::ForkAfter,
];

impl SampleCause {
    pub fn from_code(code: u32) -> Option<Self> {
        SAMPLE_CAUSES.get(code as usize).copied()
    }

    pub fn code(self) -> u32 {
        self as u32
    }

    /// The name written in the log.
    pub fn name(self) -> &'static str {
        match self {
            SampleCause::Start => "start",
            SampleCause::End => "end",
            SampleCause::Pause => "pause",
            SampleCause::Resume => "resume",
            SampleCause::Periodic => "periodic",
            SampleCause::Manual => "manual",
            SampleCause::DbxStop => "dbx-stop",
            SampleCause::Api => "api",
            SampleCause::Signal => "signal",
            SampleCause::ForkBefore => "fork-before",
            SampleCause::ForkAfter => "fork-after",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        SAMPLE_CAUSES.iter().copied().find(|c| c.name() == name)
    }
}

const HASH_K0: u64 = 0x9e37_79b9_7f4a_7c15;
const HASH_K1: u64 = 0xbf58_476d_1ce4_e5b9;
const HASH_K2: u64 = 0x94d0_49bb_1331_11eb;

/// 64x64 -> 128 multiply folded back to 64 bits: a cheap mixer with good diffusion.
fn fold_mul(a: u64, b: u64) -> u64 {
    let product = (a as u128).wrapping_mul(b as u128);
    (product as u64) ^ ((product >> 64) as u64)
}

/// Final avalanche (splitmix64's finalizer) so every input bit reaches every output bit.
fn avalanche(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(HASH_K1);
    z = (z ^ (z >> 27)).wrapping_mul(HASH_K2);
    z ^ (z >> 31)
}

/// The id of a stack: a 64-bit hash of (status, pcs). Deterministic (the same stack gets the
/// same id in every process) and never 0, which the collector's dedup table uses for
/// "empty slot".
pub fn stack_id(status: u16, pcs: &[u64]) -> u64 {
    let mut h = fold_mul(u64::from(status) ^ HASH_K0, (pcs.len() as u64) ^ HASH_K1);
    for &pc in pcs {
        h = fold_mul(pc ^ HASH_K1, h ^ HASH_K2);
    }
    match avalanche(h ^ HASH_K0) {
        0 => 1,
        id => id,
    }
}

/// Fills a block in place the way the collector does: [`BlockWriter::claim`] writes the
/// header (magic last, with Release), `push_*` append records after the committed part, and
/// [`BlockWriter::commit`] publishes them by storing `committed` with Release.
///
/// Works on any `&mut [u8]` of at least `HEADER_SIZE` bytes (normally a `BLOCK_SIZE` slice of
/// a MAP_SHARED mapping, which is page aligned). No allocation, no panics.
pub struct BlockWriter<'a> {
    block: &'a mut [u8],
    /// Bytes of records written after the header (committed or not).
    written: usize,
}

impl<'a> BlockWriter<'a> {
    /// Claims a fresh block: writes its header with nothing committed, `magic` last.
    /// None if `block` is shorter than a header.
    pub fn claim(
        block: &'a mut [u8],
        kind: u16,
        tid: u32,
        block_index: u32,
        first_timestamp_ns: u64,
    ) -> Option<Self> {
        if block.len() < HEADER_SIZE {
            return None;
        }
        let header = BlockHeader::new(kind, tid, block_index, first_timestamp_ns);
        let bytes = header.to_bytes();
        let (magic, rest) = bytes.split_first_chunk::<4>()?;
        copy_into(block.get_mut(MAGIC_OFFSET + 4..)?, rest);
        store_u32_release(block, MAGIC_OFFSET, u32::from_le_bytes(*magic));
        Some(BlockWriter { block, written: 0 })
    }

    /// Goes on writing a block claimed earlier whose first `written` record bytes are
    /// there already (the collector appends to a thread's block one record at a time, one
    /// signal handler after another). None if `written` does not fit the block.
    pub fn resume(block: &'a mut [u8], written: usize) -> Option<Self> {
        if HEADER_SIZE.checked_add(written)? > block.len() {
            return None;
        }
        Some(BlockWriter { block, written })
    }

    /// Bytes of record space still free in the block.
    pub fn free(&self) -> usize {
        self.block.len().saturating_sub(HEADER_SIZE + self.written)
    }

    /// Appends a clock event (not yet committed); false if it does not fit.
    pub fn push_clock_event(&mut self, event: &ClockEvent) -> bool {
        let at = HEADER_SIZE + self.written;
        let fits = self
            .block
            .get_mut(at..)
            .is_some_and(|dst| event.write_to(dst));
        if fits {
            self.written += CLOCK_EVENT_SIZE;
        }
        fits
    }

    /// Appends a stack record (not yet committed); false if it does not fit.
    pub fn push_stack(&mut self, status: StackStatus, pcs: &[u64]) -> bool {
        let at = HEADER_SIZE + self.written;
        match self
            .block
            .get_mut(at..)
            .and_then(|dst| write_stack_record(dst, status, pcs))
        {
            Some(size) => {
                self.written += size;
                true
            }
            None => false,
        }
    }

    /// Appends raw record bytes (not yet committed); false if they do not fit.
    pub fn push_bytes(&mut self, bytes: &[u8]) -> bool {
        let at = HEADER_SIZE + self.written;
        let fits = self
            .block
            .get_mut(at..)
            .is_some_and(|dst| copy_into(dst, bytes));
        if fits {
            self.written += bytes.len();
        }
        fits
    }

    /// Publishes every record pushed so far: stores `committed` with Release.
    pub fn commit(&mut self) {
        store_u32_release(self.block, COMMITTED_OFFSET, self.written as u32);
    }

    /// Bytes of records written (committed or not).
    pub fn written(&self) -> usize {
        self.written
    }
}

/// Stores `value` little-endian at `block[offset..offset + 4]` with a Release atomic store
/// when the field is 4-byte aligned (it is in a mapped block), plainly otherwise.
fn store_u32_release(block: &mut [u8], offset: usize, value: u32) {
    let Some(field) = block.get_mut(offset..offset + 4) else {
        return;
    };
    let ptr = field.as_mut_ptr();
    if ptr.align_offset(core::mem::align_of::<AtomicU32>()) == 0 {
        // SAFETY: the 4 bytes are in bounds, aligned for AtomicU32, and borrowed mutably, so
        // no Rust reference aliases them; other processes only read them.
        let atomic = unsafe { AtomicU32::from_ptr(ptr.cast::<u32>()) };
        atomic.store(value.to_le(), Ordering::Release);
    } else {
        field.copy_from_slice(&value.to_le_bytes());
    }
}

/// What a block holds, as seen by a reader.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockState<'a> {
    /// Never claimed (magic 0: blocks are zeros until claimed, and the magic is stored
    /// last): skip it.
    Unused,
    /// Not written by a collector: the magic is neither RXB1 nor 0 (another file, random
    /// bytes). Skip it, count it as damaged.
    Garbage,
    /// The file ends inside the header: the block is being claimed or the file was cut.
    CutHeader,
    /// Claimed, but the header is not one this reader understands (wrong kind, bad
    /// header_size): skip it, count it as damaged.
    BadHeader(BlockHeader),
    /// Claimed, with `records` the committed record bytes present in the file.
    Used(UsedBlock<'a>),
}

/// A claimed block and its committed records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UsedBlock<'a> {
    pub header: BlockHeader,
    /// The committed record bytes that are present in `bytes`.
    pub records: &'a [u8],
    /// `committed` was larger than the block can hold (it was clamped).
    pub clamped: bool,
    /// The bytes given end before the committed part does (file cut or still growing).
    pub cut: bool,
}

/// Where a claimed block's committed records are, as its header and the file's length
/// tell: what [`parse_block_head`] finds without the records themselves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordSpan {
    pub header: BlockHeader,
    /// The committed record bytes present in the file are the block's bytes
    /// `start..end`.
    pub start: usize,
    pub end: usize,
    /// `committed` was larger than the block can hold (it was clamped).
    pub clamped: bool,
    /// The file ends before the committed part does (file cut or still growing).
    pub cut: bool,
}

/// What a block holds, from its first bytes alone: [`BlockState`] with where the
/// records are in place of the records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockHead {
    Unused,
    Garbage,
    CutHeader,
    BadHeader(BlockHeader),
    Used(RecordSpan),
}

/// Looks at one block from its first bytes, `head` (its header, or all the file holds
/// of the block when that is less), given that the file holds `available` bytes of the
/// block: for a reader that reads the records later, or only needs where they are.
/// `kind` is the kind the file must hold.
pub fn parse_block_head(head: &[u8], available: usize, block_size: usize, kind: u16) -> BlockHead {
    let Some(header) = BlockHeader::from_bytes(head) else {
        // Fewer bytes than a header: the first (up to) four are the magic.
        let magic = head.get(..head.len().min(4)).unwrap_or(&[]);
        return if magic.iter().all(|&b| b == 0) {
            BlockHead::Unused
        } else if BLOCK_MAGIC.to_le_bytes().starts_with(magic) {
            BlockHead::CutHeader
        } else {
            BlockHead::Garbage
        };
    };
    match header.magic {
        BLOCK_MAGIC => {}
        0 => return BlockHead::Unused,
        _ => return BlockHead::Garbage,
    }
    let header_size = header.header_size as usize;
    if header.kind != kind
        || header_size < HEADER_SIZE
        || !header_size.is_multiple_of(8)
        || header_size > block_size
    {
        return BlockHead::BadHeader(header);
    }
    let capacity = block_size - header_size;
    let committed = header.committed as usize;
    let end = header_size + committed.min(capacity);
    let present = end.min(available);
    BlockHead::Used(RecordSpan {
        header,
        start: header_size,
        end: present.max(header_size),
        clamped: committed > capacity,
        cut: present < end,
    })
}

/// Looks at one block (`bytes` may be shorter than `block_size` when the file ends inside
/// it). `kind` is the kind the file must hold.
pub fn parse_block(bytes: &[u8], block_size: usize, kind: u16) -> BlockState<'_> {
    match parse_block_head(bytes, bytes.len(), block_size, kind) {
        BlockHead::Unused => BlockState::Unused,
        BlockHead::Garbage => BlockState::Garbage,
        BlockHead::CutHeader => BlockState::CutHeader,
        BlockHead::BadHeader(header) => BlockState::BadHeader(header),
        BlockHead::Used(span) => BlockState::Used(UsedBlock {
            header: span.header,
            records: bytes.get(span.start..span.end).unwrap_or(&[]),
            clamped: span.clamped,
            cut: span.cut,
        }),
    }
}

/// Decodes every fixed-size record of one block's committed bytes with
/// `decode`, in order. Returns false when the bytes are not whole records
/// or hold something that is no record (damaged data).
pub fn decode_fixed_records<T>(
    records: &[u8],
    size: usize,
    decode: impl Fn(&[u8]) -> Option<T>,
    mut each: impl FnMut(T),
) -> bool {
    if size == 0 || !records.len().is_multiple_of(size) {
        return false;
    }
    for chunk in records.chunks_exact(size) {
        match decode(chunk) {
            Some(record) => each(record),
            None => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_roundtrip_and_bytes() {
        let h = BlockHeader {
            committed: 48,
            ..BlockHeader::new(KIND_PROFILE, 1234, 7, 0x1122_3344_5566_7788)
        };
        let b = h.to_bytes();
        assert_eq!(&b[0..4], b"RXB1");
        assert_eq!(&b[4..6], &[1, 0]);
        assert_eq!(&b[6..8], &[32, 0]);
        assert_eq!(&b[8..12], &1234u32.to_le_bytes());
        assert_eq!(&b[12..16], &48u32.to_le_bytes());
        assert_eq!(&b[16..20], &7u32.to_le_bytes());
        assert_eq!(&b[24..32], &0x1122_3344_5566_7788u64.to_le_bytes());
        assert_eq!(BlockHeader::from_bytes(&b), Some(h));
        assert_eq!(BlockHeader::from_bytes(&b[..31]), None);
    }

    #[test]
    fn clock_event_roundtrip() {
        let e = ClockEvent {
            timestamp_ns: 99,
            stack_id: 0xdead_beef_0000_0001,
            weight_ns: 10_000_000,
            cpu: CPU_UNKNOWN,
            reserved: 0,
        };
        let b = e.to_bytes();
        assert_eq!(&b[20..22], &[0xff, 0xff]);
        assert_eq!(ClockEvent::from_bytes(&b), Some(e));
        assert_eq!(ClockEvent::from_bytes(&b[..23]), None);
        let mut short = [0u8; 10];
        assert!(!e.write_to(&mut short));
    }

    #[test]
    fn stack_record_roundtrip() {
        let pcs = [0x401000u64, 0x401234, 0x7fff_0000_1000];
        let mut buf = [0u8; 64];
        let n = write_stack_record(&mut buf, StackStatus::Truncated, &pcs).unwrap();
        assert_eq!(n, 16 + 24);
        let rec = StackRecordRef::parse(&buf[..n]).unwrap();
        assert_eq!(rec.header.depth, 3);
        assert_eq!(rec.status(), Some(StackStatus::Truncated));
        assert_eq!(rec.header.stack_id, stack_id(1, &pcs));
        assert_eq!(rec.pcs().collect::<Vec<_>>(), pcs);
        assert!(StackRecordRef::parse(&buf[..n - 1]).is_none());
        let mut small = [0u8; 39];
        assert_eq!(
            write_stack_record(&mut small, StackStatus::Complete, &pcs),
            None
        );
        let deep = [1u64; MAX_STACK_DEPTH + 1];
        let mut big = [0u8; MAX_STACK_RECORD_SIZE + 8];
        assert_eq!(
            write_stack_record(&mut big, StackStatus::Complete, &deep),
            None
        );
        assert_eq!(
            write_stack_record(&mut big, StackStatus::Complete, &deep[..MAX_STACK_DEPTH]),
            Some(MAX_STACK_RECORD_SIZE)
        );
    }

    #[test]
    fn causes_and_statuses() {
        for code in 0..=10 {
            let c = SampleCause::from_code(code).unwrap();
            assert_eq!(c.code(), code);
            assert_eq!(SampleCause::from_name(c.name()), Some(c));
        }
        assert_eq!(SampleCause::from_code(11), None);
        assert_eq!(
            SampleCause::from_name("dbx-stop"),
            Some(SampleCause::DbxStop)
        );
        assert_eq!(SampleCause::from_name("fork-after").unwrap().code(), 10);
        assert_eq!(SampleCause::from_name("nope"), None);
        assert_eq!(StackStatus::from_code(2), Some(StackStatus::Failed));
        assert_eq!(StackStatus::from_code(3), None);
    }

    #[test]
    fn stack_id_is_nonzero_and_sensitive() {
        use std::collections::HashSet;
        let mut seen = HashSet::new();
        // Stacks that differ in one pc, in order, in length or in status all get new ids.
        for a in 0..200u64 {
            for b in 0..50u64 {
                let pcs = [0x400000 + a * 4, 0x400000 + b * 4, 0x7f00_0000_0000];
                assert!(seen.insert(stack_id(0, &pcs)));
                assert!(seen.insert(stack_id(1, &pcs)));
                assert!(seen.insert(stack_id(0, &pcs[..2])));
            }
        }
        assert!(seen.insert(stack_id(0, &[])));
        assert!(seen.insert(stack_id(1, &[])));
        assert!(!seen.contains(&0));
        assert_ne!(stack_id(0, &[1, 2]), stack_id(0, &[2, 1]));
        assert_ne!(stack_id(0, &[0]), stack_id(0, &[0, 0]));
        // Roughly half the output bits flip when one input bit flips.
        let base = stack_id(0, &[0x401000, 0x402000]);
        let mut total = 0;
        for bit in 0..64 {
            total += (base ^ stack_id(0, &[0x401000 ^ (1 << bit), 0x402000])).count_ones();
        }
        let mean = total as f64 / 64.0;
        assert!((24.0..40.0).contains(&mean), "mean flipped bits {mean}");
    }

    #[test]
    fn block_writer_and_parse_block() {
        let mut block = vec![0u8; BLOCK_SIZE];
        let mut w = BlockWriter::claim(&mut block, KIND_PROFILE, 42, 3, 1000).unwrap();
        let e = ClockEvent {
            timestamp_ns: 1,
            stack_id: 2,
            weight_ns: 3,
            cpu: 4,
            reserved: 0,
        };
        assert!(w.push_clock_event(&e));
        assert!(w.push_clock_event(&e));
        w.commit();
        assert!(w.push_clock_event(&e)); // written but not committed
        let BlockState::Used(used) = parse_block(&block, BLOCK_SIZE, KIND_PROFILE) else {
            panic!("block not used");
        };
        assert_eq!(used.header.tid, 42);
        assert_eq!(used.header.block_index, 3);
        assert_eq!(used.records.len(), 2 * CLOCK_EVENT_SIZE);
        assert!(!used.clamped && !used.cut);
        assert!(matches!(
            parse_block(&block, BLOCK_SIZE, KIND_STACKS),
            BlockState::BadHeader(_)
        ));
        // Cut inside the committed records.
        let BlockState::Used(cut) = parse_block(&block[..HEADER_SIZE + 30], BLOCK_SIZE, 1) else {
            panic!("cut block not used");
        };
        assert!(cut.cut);
        assert_eq!(cut.records.len(), 30);
        assert_eq!(
            parse_block(&block[..20], BLOCK_SIZE, 1),
            BlockState::CutHeader
        );
        assert_eq!(
            parse_block(&block[..2], BLOCK_SIZE, 1),
            BlockState::CutHeader
        );
        assert_eq!(parse_block(&[0u8; 64], BLOCK_SIZE, 1), BlockState::Unused);
        assert_eq!(parse_block(&[], BLOCK_SIZE, 1), BlockState::Unused);
        // A block being claimed: header fields written, magic not yet.
        let mut claiming = block.clone();
        claiming[..4].fill(0);
        assert_eq!(parse_block(&claiming, BLOCK_SIZE, 1), BlockState::Unused);
        // Bytes no collector wrote: a magic that is neither RXB1 nor 0.
        assert_eq!(parse_block(&[0xab; 64], BLOCK_SIZE, 1), BlockState::Garbage);
        assert_eq!(parse_block(b"hello\n", BLOCK_SIZE, 1), BlockState::Garbage);
        // committed larger than the block: clamped.
        block[12..16].copy_from_slice(&u32::MAX.to_le_bytes());
        let BlockState::Used(clamped) = parse_block(&block, BLOCK_SIZE, 1) else {
            panic!("clamped block not used");
        };
        assert!(clamped.clamped);
        assert_eq!(clamped.records.len(), BLOCK_PAYLOAD);
    }

    /// Random bytes through every decoder: nothing may panic.
    #[test]
    fn garbage_does_not_panic() {
        let mut state = 0x1234_5678_9abc_def0u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut buf = vec![0u8; 4096];
        for round in 0..2000 {
            for b in buf.iter_mut() {
                *b = next() as u8;
            }
            // Sometimes a plausible header, so the record parsers run on garbage too.
            if round % 2 == 0 {
                let kind = if round % 4 == 0 {
                    KIND_PROFILE
                } else {
                    KIND_STACKS
                };
                let header = BlockHeader {
                    committed: (next() % 5000) as u32,
                    ..BlockHeader::new(kind, 1, 0, 0)
                };
                header.write_to(&mut buf);
            }
            let len = (next() % 4097) as usize;
            let bytes = &buf[..len];
            for kind in [KIND_PROFILE, KIND_STACKS] {
                if let BlockState::Used(used) = parse_block(bytes, 4096, kind) {
                    let mut rest = used.records;
                    while let Some(rec) = StackRecordRef::parse(rest) {
                        let _ = rec.pcs().count();
                        rest = rest.get(rec.size()..).unwrap_or(&[]);
                    }
                    for chunk in used.records.chunks(CLOCK_EVENT_SIZE) {
                        let _ = ClockEvent::from_bytes(chunk);
                    }
                }
            }
            let _ = StackRecordRef::parse(bytes);
        }
    }

    #[test]
    fn block_writer_fills_up() {
        let mut block = vec![0u8; BLOCK_SIZE];
        let mut w = BlockWriter::claim(&mut block, KIND_STACKS, 1, 0, 0).unwrap();
        let pcs = [7u64; MAX_STACK_DEPTH];
        let mut n = 0;
        while w.push_stack(StackStatus::Complete, &pcs) {
            n += 1;
        }
        assert_eq!(n, BLOCK_PAYLOAD / MAX_STACK_RECORD_SIZE);
        assert!(w.free() < MAX_STACK_RECORD_SIZE);
        assert!(BlockWriter::claim(&mut [0u8; 31], KIND_STACKS, 1, 0, 0).is_none());
    }
}
