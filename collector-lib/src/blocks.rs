//! Block files: `profile` and `stacks` (docs/experiment-format.md).
//!
//! A thread owns one 64 KiB block of a file at a time. Blocks are claimed
//! with an atomic counter, the file is extended with fallocate before the
//! block is mapped (so a full disk is an error here, never a SIGBUS later),
//! and records are copied in and published by a Release store of the
//! block's `committed` count. A reader therefore sees only whole records,
//! while we write and after a SIGKILL.
//!
//! All of this runs inside the SIGPROF handler: system calls only, no
//! allocation, no locks.

use experiment::layout::{BlockHeader, BLOCK_MAGIC, BLOCK_SIZE, HEADER_SIZE};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU64, Ordering};

/// Offset of `committed` inside the block header.
const COMMITTED_OFFSET: usize = 12;

pub struct BlockFile {
    fd: AtomicI32,
    kind: u16,
    next_block: AtomicU32,
    /// Bumped each time the file is (re)opened, so cursors from an earlier
    /// experiment (or from the parent, in a fork child) are dropped.
    generation: AtomicU32,
    /// Threads inside `retire`, which may use the descriptor: `close`
    /// waits for them so it never punches a file that reused the number.
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
            unsafe { libc::munmap(self.block.cast(), BLOCK_SIZE) };
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

    /// In a fork child: threads counted in `users` do not exist here.
    pub fn close_after_fork(&self) {
        self.users.store(0, Ordering::SeqCst);
        self.close();
    }

    /// Starts writing to `fd` (an empty file). Not signal-safe with
    /// respect to writers of the previous file: call with profiling off.
    pub fn open(&self, fd: i32) {
        self.next_block.store(0, Ordering::Relaxed);
        self.generation.fetch_add(1, Ordering::AcqRel);
        let old = self.fd.swap(fd, Ordering::AcqRel);
        if old >= 0 {
            // SAFETY: old was ours.
            unsafe { libc::close(old) };
        }
    }

    /// Stops writing; cursors are dropped at their next use.
    pub fn close(&self) {
        self.generation.fetch_add(1, Ordering::SeqCst);
        for _ in 0..100_000 {
            if self.users.load(Ordering::SeqCst) == 0 {
                break;
            }
            std::thread::yield_now();
        }
        let old = self.fd.swap(-1, Ordering::AcqRel);
        if old >= 0 {
            // SAFETY: old was ours.
            unsafe { libc::close(old) };
        }
    }

    /// Appends one record made of `parts` for thread `tid`.
    /// Async-signal-safe.
    pub fn append(
        &self,
        cursor: &mut Cursor,
        budget: &Budget,
        tid: i32,
        timestamp_ns: u64,
        parts: &[&[u8]],
    ) -> Result<(), WriteError> {
        let total: usize = parts.iter().map(|p| p.len()).sum();
        if total > BLOCK_SIZE - HEADER_SIZE {
            return Err(WriteError::TooLarge);
        }
        let generation = self.generation.load(Ordering::Acquire);
        if cursor.generation != generation {
            cursor.release();
            cursor.generation = generation;
        }
        if cursor.block.is_null() || cursor.used + total > BLOCK_SIZE - HEADER_SIZE {
            cursor.release();
            let (block, offset) = self.claim(budget, tid, timestamp_ns)?;
            cursor.block = block;
            cursor.offset = offset;
            cursor.fd = self.fd.load(Ordering::Acquire);
            cursor.used = 0;
        }
        let mut at = HEADER_SIZE + cursor.used;
        for part in parts {
            // SAFETY: at + part.len() <= BLOCK_SIZE was checked above and
            // block maps BLOCK_SIZE writable bytes.
            unsafe {
                std::ptr::copy_nonoverlapping(part.as_ptr(), cursor.block.add(at), part.len());
            }
            at += part.len();
        }
        cursor.used += total;
        self.publish(cursor);
        Ok(())
    }

    fn publish(&self, cursor: &Cursor) {
        // SAFETY: the header is inside the mapping and 4-byte aligned
        // (mappings are page aligned); readers load it with Acquire.
        let committed = unsafe { &*(cursor.block.add(COMMITTED_OFFSET) as *const AtomicU32) };
        committed.store(cursor.used as u32, Ordering::Release);
    }

    fn claim(
        &self,
        budget: &Budget,
        tid: i32,
        timestamp_ns: u64,
    ) -> Result<(*mut u8, i64), WriteError> {
        let fd = self.fd.load(Ordering::Acquire);
        if fd < 0 {
            return Err(WriteError::Closed);
        }
        if !budget.reserve(BLOCK_SIZE as u64) {
            return Err(WriteError::Limit);
        }
        let index = self.next_block.fetch_add(1, Ordering::Relaxed);
        let offset = i64::from(index) * BLOCK_SIZE as i64;
        extend(fd, offset)?;
        // SAFETY: mapping a file range we just allocated.
        let block = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                BLOCK_SIZE,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                offset,
            )
        };
        if block == libc::MAP_FAILED {
            return Err(WriteError::Disk);
        }
        let block = block.cast::<u8>();
        let header = BlockHeader {
            magic: 0,
            kind: self.kind,
            header_size: HEADER_SIZE as u16,
            tid: tid as u32,
            committed: 0,
            block_index: index,
            reserved: 0,
            first_timestamp_ns: timestamp_ns,
        };
        // SAFETY: the header fits at the start of the mapping; the magic is
        // stored last so a reader never trusts a half-written header.
        unsafe {
            std::ptr::write_unaligned(block.cast::<BlockHeader>(), header);
            let magic = &*(block as *const AtomicU32);
            magic.store(BLOCK_MAGIC, Ordering::Release);
        }
        Ok((block, offset))
    }
}

/// Makes sure the file has real storage for the block at `offset`.
fn extend(fd: i32, offset: i64) -> Result<(), WriteError> {
    // SAFETY: plain system call on our descriptor.
    let rc = unsafe { libc::fallocate(fd, 0, offset, BLOCK_SIZE as i64) };
    if rc == 0 {
        return Ok(());
    }
    let err = crate::sys::errno();
    if err != libc::EOPNOTSUPP {
        return Err(WriteError::Disk);
    }
    // A file system without fallocate: extend by writing the block's last
    // byte (never shrinks the file, unlike ftruncate racing with others).
    let zero = 0u8;
    // SAFETY: writing one byte from a valid buffer.
    let n = unsafe {
        libc::pwrite(
            fd,
            (&zero as *const u8).cast(),
            1,
            offset + BLOCK_SIZE as i64 - 1,
        )
    };
    if n == 1 {
        Ok(())
    } else {
        Err(WriteError::Disk)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use experiment::layout::{parse_block, BlockState, ClockEvent, KIND_PROFILE};
    use std::os::fd::IntoRawFd;

    fn event(n: u64) -> [u8; 24] {
        ClockEvent {
            timestamp_ns: n,
            stack_id: n + 1,
            weight_ns: 10,
            cpu: 0,
            reserved: 0,
        }
        .to_bytes()
    }

    #[test]
    fn blocks_fill_until_the_limit_and_stay_valid() {
        let dir = std::env::temp_dir().join(format!("rdbx-blocks-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("profile");
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .unwrap();
        let blocks = BlockFile::new(KIND_PROFILE);
        blocks.open(file.into_raw_fd());
        let budget = Budget::new();
        budget.limit.store(2 * BLOCK_SIZE as u64, Ordering::Relaxed);
        let mut cursor = Cursor::new();
        let mut written = 0u64;
        let error = loop {
            match blocks.append(&mut cursor, &budget, 42, written, &[&event(written)]) {
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
    fn a_closed_file_refuses_records() {
        let blocks = BlockFile::new(KIND_PROFILE);
        let mut cursor = Cursor::new();
        let budget = Budget::new();
        assert_eq!(
            blocks.append(&mut cursor, &budget, 1, 0, &[&event(0)]),
            Err(WriteError::Closed)
        );
    }
}
