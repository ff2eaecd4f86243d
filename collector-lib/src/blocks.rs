//! Block files: `profile` and `stacks` (docs/experiment-format.md).
//!
//! A thread owns one 64 KiB block of a file at a time. Blocks are claimed
//! with an atomic counter, the block's disk space is reserved with
//! fallocate before it is mapped (so a full disk is an error here, never a
//! SIGBUS later), and records are copied in and published by a Release
//! store of the block's `committed` count. A reader therefore sees only
//! whole records, while we write and after a SIGKILL.
//!
//! Reserving goes [`RESERVE_BLOCKS`] blocks ahead of the claims, beyond the
//! file's end (its size grows block by block as blocks are claimed, so a
//! reader never sees a block nobody claimed); what is left reserved past
//! the end is given back when the file is closed.
//!
//! The bytes of a block (header, records, the Release stores) are written
//! by the experiment crate's `BlockWriter`, the one implementation of the
//! block protocol the format tests and the analyzer's benchmarks use too;
//! this module finds the blocks: claims, maps, retires them.
//!
//! All of this runs inside the SIGPROF handler: system calls only, no
//! allocation, no locks.

use experiment::layout::{BlockWriter, BLOCK_PAYLOAD, BLOCK_SIZE, HEADER_SIZE};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU64, Ordering};

/// Blocks reserved on disk in one fallocate: a claim's system calls are
/// most of what a block costs (measured with 48-byte records: one
/// fallocate per block was a sixth of a claim).
pub const RESERVE_BLOCKS: u32 = 16;

pub struct BlockFile {
    fd: AtomicI32,
    kind: u16,
    next_block: AtomicU32,
    /// Blocks [0, reserved) have disk space (fallocate'd, or written).
    reserved: AtomicU32,
    /// Bumped each time the file is (re)opened, so cursors from an earlier
    /// experiment (or from the parent, in a fork child) are dropped.
    generation: AtomicU32,
    /// Threads claiming a block or retiring one, which use the descriptor:
    /// `close` waits for them, so none extends, maps or punches a file that
    /// has taken the descriptor's number since.
    users: AtomicU32,
}

/// Why a record could not be written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteError {
    /// The file is closed (no experiment).
    Closed,
    /// The data limit was reached.
    Limit,
    /// fallocate or mmap failed (disk full, I/O error).
    Disk,
    /// The record is larger than a block.
    TooLarge,
}

/// Process-wide accounting of claimed bytes, for `collector limit`.
pub struct Budget {
    pub limit: AtomicU64,
    pub claimed: AtomicU64,
    pub exhausted: AtomicBool,
}

impl Budget {
    pub const fn new() -> Budget {
        Budget {
            limit: AtomicU64::new(0),
            claimed: AtomicU64::new(0),
            exhausted: AtomicBool::new(false),
        }
    }

    fn reserve(&self, bytes: u64) -> bool {
        let limit = self.limit.load(Ordering::Relaxed);
        let before = self.claimed.fetch_add(bytes, Ordering::Relaxed);
        if limit != 0 && before + bytes > limit {
            self.exhausted.store(true, Ordering::Relaxed);
            return false;
        }
        true
    }
}

/// A thread's position in one block file.
pub struct Cursor {
    block: *mut u8,
    used: usize,
    generation: u32,
    /// The block's file and offset, to give back its unused tail.
    fd: i32,
    offset: i64,
}

impl Cursor {
    pub const fn new() -> Cursor {
        Cursor {
            block: std::ptr::null_mut(),
            used: 0,
            generation: 0,
            fd: -1,
            offset: 0,
        }
    }

    /// Unmaps the current block (its records stay in the file).
    pub fn release(&mut self) {
        if !self.block.is_null() {
            // SAFETY: block is a BLOCK_SIZE mapping we made.
            unsafe { crate::sys::munmap_raw(self.block, BLOCK_SIZE) };
        }
        self.block = std::ptr::null_mut();
        self.used = 0;
    }
}

impl Cursor {
    fn punch_unused_tail(&self) {
        const PAGE: usize = 4096;
        let used_end = (HEADER_SIZE + self.used).div_ceil(PAGE) * PAGE;
        if self.fd < 0 || used_end >= BLOCK_SIZE {
            return;
        }
        // SAFETY: a range of our own block; the descriptor may have been
        // closed meanwhile (experiment closed), then this fails harmlessly.
        unsafe {
            libc::fallocate(
                self.fd,
                libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
                self.offset + used_end as i64,
                (BLOCK_SIZE - used_end) as i64,
            );
        }
    }
}

impl Default for Cursor {
    fn default() -> Self {
        Self::new()
    }
}

impl BlockFile {
    pub const fn new(kind: u16) -> BlockFile {
        BlockFile {
            fd: AtomicI32::new(-1),
            kind,
            next_block: AtomicU32::new(0),
            reserved: AtomicU32::new(0),
            generation: AtomicU32::new(1),
            users: AtomicU32::new(0),
        }
    }

    /// A thread is done with its block (thread exit, experiment closing):
    /// unmap it and give the disk space of its unused tail back, so a
    /// short run does not keep a mostly empty 64 KiB per thread.
    /// Async-signal-safe.
    pub fn retire(&self, cursor: &mut Cursor) {
        self.users.fetch_add(1, Ordering::SeqCst);
        if !cursor.block.is_null() && cursor.generation == self.generation.load(Ordering::SeqCst) {
            cursor.punch_unused_tail();
        }
        self.users.fetch_sub(1, Ordering::SeqCst);
        cursor.release();
    }

    /// In a fork child: threads counted in `users` do not exist here. The
    /// file is the parent's, which goes on writing it: its reserve stays.
    pub fn close_after_fork(&self) {
        self.users.store(0, Ordering::SeqCst);
        self.stop_writing(false);
    }

    /// Starts writing to `fd` (an empty file). Not signal-safe with
    /// respect to writers of the previous file: call with profiling off.
    pub fn open(&self, fd: i32) {
        self.next_block.store(0, Ordering::Relaxed);
        self.reserved.store(0, Ordering::Relaxed);
        self.generation.fetch_add(1, Ordering::AcqRel);
        let old = self.fd.swap(fd, Ordering::AcqRel);
        if old >= 0 {
            crate::sys::close_raw(old);
        }
    }

    /// Stops writing; cursors are dropped at their next use.
    pub fn close(&self) {
        self.stop_writing(true);
    }

    /// [`BlockFile::close`]; `give_back`: the disk space reserved past the
    /// file's end is freed, when no claim is under way (one could be
    /// extending the file).
    fn stop_writing(&self, give_back: bool) {
        self.generation.fetch_add(1, Ordering::SeqCst);
        let mut idle = false;
        for _ in 0..100_000 {
            if self.users.load(Ordering::SeqCst) == 0 {
                idle = true;
                break;
            }
            std::thread::yield_now();
        }
        let old = self.fd.swap(-1, Ordering::AcqRel);
        if old >= 0 {
            if give_back && idle {
                crate::sys::free_reserve_past_end(old);
            }
            crate::sys::close_raw(old);
        }
    }

    /// Appends one record of `size` bytes for thread `tid`, written by
    /// `fill` (a `BlockWriter` push of exactly that size) and published at
    /// once. Async-signal-safe.
    pub fn append(
        &self,
        cursor: &mut Cursor,
        budget: &Budget,
        tid: i32,
        timestamp_ns: u64,
        size: usize,
        fill: impl FnOnce(&mut BlockWriter<'_>) -> bool,
    ) -> Result<(), WriteError> {
        self.append_encoded(cursor, budget, tid, timestamp_ns, size, |writer, _| {
            fill(writer)
        })
    }

    /// [`BlockFile::append`] for records encoded against the block they go
    /// into: `fill` learns whether the block is fresh (its first record),
    /// and may push any size up to `max_size`.
    pub fn append_encoded(
        &self,
        cursor: &mut Cursor,
        budget: &Budget,
        tid: i32,
        timestamp_ns: u64,
        max_size: usize,
        fill: impl FnOnce(&mut BlockWriter<'_>, bool) -> bool,
    ) -> Result<(), WriteError> {
        let size = max_size;
        if size > BLOCK_PAYLOAD {
            return Err(WriteError::TooLarge);
        }
        let generation = self.generation.load(Ordering::Acquire);
        if cursor.generation != generation {
            cursor.release();
            cursor.generation = generation;
        }
        if cursor.block.is_null() || cursor.used + size > BLOCK_PAYLOAD {
            cursor.release();
            self.users.fetch_add(1, Ordering::SeqCst);
            let claimed = self.claim(budget, tid, timestamp_ns, generation);
            self.users.fetch_sub(1, Ordering::SeqCst);
            let (block, fd, offset) = claimed?;
            cursor.block = block;
            cursor.fd = fd;
            cursor.offset = offset;
            cursor.used = 0;
        }
        // SAFETY: the block maps BLOCK_SIZE writable bytes that only this
        // thread writes (a thread's cursor is its own).
        let bytes = unsafe { std::slice::from_raw_parts_mut(cursor.block, BLOCK_SIZE) };
        let fresh = cursor.used == 0;
        let mut writer = BlockWriter::resume(bytes, cursor.used).ok_or(WriteError::TooLarge)?;
        if !fill(&mut writer, fresh) {
            return Err(WriteError::TooLarge);
        }
        writer.commit();
        cursor.used = writer.written();
        Ok(())
    }

    /// Claims the next block of the file for thread `tid` and maps it,
    /// with its header written. The descriptor is loaded once, checked
    /// against the generation the caller saw (a close in between means
    /// this file is no longer ours to extend), and returned with the block.
    fn claim(
        &self,
        budget: &Budget,
        tid: i32,
        timestamp_ns: u64,
        generation: u32,
    ) -> Result<(*mut u8, i32, i64), WriteError> {
        let fd = self.fd.load(Ordering::Acquire);
        if fd < 0 || self.generation.load(Ordering::SeqCst) != generation {
            return Err(WriteError::Closed);
        }
        if !budget.reserve(BLOCK_SIZE as u64) {
            return Err(WriteError::Limit);
        }
        let index = self.next_block.fetch_add(1, Ordering::Relaxed);
        let offset = i64::from(index) * BLOCK_SIZE as i64;
        self.reserve_through(fd, index)?;
        // The zeros put the block's pages in the page cache (and extend the
        // file over it): mapping them then costs no read-ahead of the
        // reserved-but-unwritten extent (measured: a third of the time
        // heap tracing spent per event went to it).
        write_zeros(fd, offset)?;
        let block = crate::sys::mmap_raw(
            BLOCK_SIZE,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            fd,
            offset,
        );
        if block == libc::MAP_FAILED.cast() {
            return Err(WriteError::Disk);
        }
        // Mapped writable at once: one system call instead of a write
        // fault into each page (MAP_POPULATE maps a shared file's pages
        // read-only, and each first write faulted again: half of a claim's
        // time). Before Linux 5.14 this fails, and the pages fault in as
        // they are written.
        // SAFETY: advice on the mapping we just made.
        unsafe { libc::madvise(block.cast(), BLOCK_SIZE, libc::MADV_POPULATE_WRITE) };
        // SAFETY: a fresh BLOCK_SIZE mapping of our own.
        let bytes = unsafe { std::slice::from_raw_parts_mut(block, BLOCK_SIZE) };
        if BlockWriter::claim(bytes, self.kind, tid as u32, index, timestamp_ns).is_none() {
            // SAFETY: unmapping what we mapped above.
            unsafe { crate::sys::munmap_raw(block, BLOCK_SIZE) };
            return Err(WriteError::Disk);
        }
        Ok((block, fd, offset))
    }
}

impl BlockFile {
    /// Makes sure the file has real storage for block `index`: a block
    /// mapped over a hole would take its disk space at the first write
    /// into it, and a full disk would then be a SIGBUS in the program.
    /// Reserves from the end of what is reserved, [`RESERVE_BLOCKS`] at a
    /// time (so every block below `reserved` has its space), past the
    /// file's end (KEEP_SIZE: the claims' zeros extend it).
    fn reserve_through(&self, fd: i32, index: u32) -> Result<(), WriteError> {
        loop {
            let end = self.reserved.load(Ordering::Acquire);
            if index < end {
                return Ok(());
            }
            let batch = (index + 1).max(end.saturating_add(RESERVE_BLOCKS));
            let reserved = match reserve(fd, end, batch) {
                // The disk may hold this block but not a whole batch.
                Err(WriteError::Disk) if batch > index + 1 => reserve(fd, end, index + 1),
                other => other,
            };
            match reserved? {
                Some(to) => {
                    self.reserved.fetch_max(to, Ordering::AcqRel);
                }
                // A file system without fallocate: the claim's zeros
                // allocate the block (a whole block of them: writing only
                // its last byte would leave a hole).
                None => return Ok(()),
            }
        }
    }
}

/// fallocate of blocks [from, to) past the end: the end of what is now
/// reserved, None where the file system has no fallocate.
fn reserve(fd: i32, from: u32, to: u32) -> Result<Option<u32>, WriteError> {
    let offset = i64::from(from) * BLOCK_SIZE as i64;
    let length = i64::from(to - from) * BLOCK_SIZE as i64;
    // SAFETY: plain system call on our descriptor.
    let rc = unsafe { libc::fallocate(fd, libc::FALLOC_FL_KEEP_SIZE, offset, length) };
    if rc == 0 {
        return Ok(Some(to));
    }
    match crate::sys::errno() {
        libc::EOPNOTSUPP => Ok(None),
        _ => Err(WriteError::Disk),
    }
}

fn write_zeros(fd: i32, offset: i64) -> Result<(), WriteError> {
    static ZEROS: [u8; BLOCK_SIZE] = [0; BLOCK_SIZE];
    let mut done = 0usize;
    while done < BLOCK_SIZE {
        let n = crate::sys::pwrite_raw(fd, &ZEROS[done..], offset + done as i64);
        if n <= 0 {
            return Err(WriteError::Disk);
        }
        done += n as usize;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use experiment::layout::{parse_block, BlockState, ClockEvent, CLOCK_EVENT_SIZE, KIND_PROFILE};
    use std::os::fd::IntoRawFd;

    fn event(n: u64) -> ClockEvent {
        ClockEvent {
            timestamp_ns: n,
            stack_id: n + 1,
            weight_ns: 10,
            cpu: 0,
            reserved: 0,
        }
    }

    fn append_event(
        blocks: &BlockFile,
        cursor: &mut Cursor,
        budget: &Budget,
        tid: i32,
        n: u64,
    ) -> Result<(), WriteError> {
        blocks.append(cursor, budget, tid, n, CLOCK_EVENT_SIZE, |w| {
            w.push_clock_event(&event(n))
        })
    }

    /// A new, empty file at `path`, for reading and writing.
    fn empty_file(path: &std::path::Path) -> std::fs::File {
        std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
            .unwrap()
    }

    #[test]
    fn blocks_fill_until_the_limit_and_stay_valid() {
        let dir = std::env::temp_dir().join(format!("rdbx-blocks-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("profile");
        let file = empty_file(&path);
        let blocks = BlockFile::new(KIND_PROFILE);
        blocks.open(file.into_raw_fd());
        let budget = Budget::new();
        budget.limit.store(2 * BLOCK_SIZE as u64, Ordering::Relaxed);
        let mut cursor = Cursor::new();
        let mut written = 0u64;
        let error = loop {
            match append_event(&blocks, &mut cursor, &budget, 42, written) {
                Ok(()) => written += 1,
                Err(e) => break e,
            }
        };
        assert_eq!(error, WriteError::Limit);
        let per_block = ((BLOCK_SIZE - HEADER_SIZE) / 24) as u64;
        assert_eq!(written, 2 * per_block, "two whole blocks, then the limit");
        blocks.retire(&mut cursor);
        blocks.close();

        let data = std::fs::read(&path).unwrap();
        assert_eq!(data.len(), 2 * BLOCK_SIZE);
        let mut read = 0u64;
        for block in data.chunks(BLOCK_SIZE) {
            match parse_block(block, BLOCK_SIZE, KIND_PROFILE) {
                BlockState::Used(used) => {
                    assert_eq!(used.header.tid, 42);
                    assert!(!used.clamped && !used.cut);
                    for record in used.records.chunks(24) {
                        let e = ClockEvent::from_bytes(record).unwrap();
                        assert_eq!(e.timestamp_ns, read);
                        assert_eq!(e.stack_id, read + 1);
                        read += 1;
                    }
                }
                other => panic!("block not used: {other:?}"),
            }
        }
        assert_eq!(read, written);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn disk_is_reserved_ahead_and_given_back_at_close() {
        use std::os::unix::fs::MetadataExt;
        let path = std::env::temp_dir().join(format!("rdbx-reserve-{}", std::process::id()));
        let file = empty_file(&path);
        let blocks = BlockFile::new(KIND_PROFILE);
        blocks.open(file.into_raw_fd());
        let budget = Budget::new();
        let mut cursor = Cursor::new();
        let per_block = ((BLOCK_SIZE - HEADER_SIZE) / CLOCK_EVENT_SIZE) as u64;
        for n in 0..2 * per_block + 1 {
            append_event(&blocks, &mut cursor, &budget, 7, n).unwrap();
        }
        let during = std::fs::metadata(&path).unwrap();
        assert_eq!(
            during.len(),
            3 * BLOCK_SIZE as u64,
            "the file ends at its last claimed block"
        );
        assert!(
            during.blocks() * 512 >= u64::from(RESERVE_BLOCKS) * BLOCK_SIZE as u64,
            "reserved ahead: {} bytes",
            during.blocks() * 512
        );
        blocks.retire(&mut cursor);
        blocks.close();
        let after = std::fs::metadata(&path).unwrap();
        assert_eq!(after.len(), 3 * BLOCK_SIZE as u64);
        assert!(
            after.blocks() * 512 <= 3 * BLOCK_SIZE as u64,
            "the reserve past the end given back: {} bytes",
            after.blocks() * 512
        );
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn without_fallocate_the_whole_block_gets_storage() {
        use std::os::unix::fs::MetadataExt;
        let path = std::env::temp_dir().join(format!("rdbx-zeros-{}", std::process::id()));
        let file = empty_file(&path);
        let fd = std::os::fd::AsRawFd::as_raw_fd(&file);
        write_zeros(fd, BLOCK_SIZE as i64).unwrap();
        let meta = file.metadata().unwrap();
        assert_eq!(meta.len(), 2 * BLOCK_SIZE as u64);
        // Storage for the second block, not a hole (the first one is one).
        assert!(
            meta.blocks() * 512 >= BLOCK_SIZE as u64,
            "{} blocks",
            meta.blocks()
        );
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn a_closed_file_refuses_records() {
        let blocks = BlockFile::new(KIND_PROFILE);
        let mut cursor = Cursor::new();
        let budget = Budget::new();
        assert_eq!(
            append_event(&blocks, &mut cursor, &budget, 1, 0),
            Err(WriteError::Closed)
        );
    }
}
