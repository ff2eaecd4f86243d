//! I/O tracing events (the `io` block file, kind 5): what the collector
//! records for each traced call of the file I/O family (open, read, write,
//! seek, sync, dup, close and the stdio functions that do I/O), as gprofng's
//! I/O tracing records them: the file descriptor, the bytes moved, the wall
//! time of the call, its call stack, and for the calls that name a file the
//! path as given.
//!
//! Records are little-endian, a fixed part and the path's bytes:
//!
//! ```text
//! offset size field
//! 0      1    op          IoOp code
//! 1      1    flags       bit 0: the call failed (returned -1 / NULL / short with error)
//! 2      2    name_len    bytes of path after the fixed part (0: none)
//! 4      4    fd          the descriptor the call worked on (open, dup: the new one; -1 if none)
//! 8      8    start_ns    CLOCK_MONOTONIC when the call began
//! 16     8    time_ns     how long the call took
//! 24     8    bytes       bytes read or written (0 for other calls)
//! 32     8    stack_id    the stack record of the call
//! 40     4    aux_fd      dup: the old descriptor; sendfile, copy_file_range: the input; else -1
//! 44     4    (zero)
//! 48     name_len bytes of path, then zeros to a multiple of 8
//! ```
//!
//! Encoding and decoding allocate nothing and never panic: the encoder runs
//! inside the collector's wrappers.

/// What a traced call was.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IoOp {
    /// open, open64, openat, creat, fopen, fdopen, freopen: `fd` is the new descriptor.
    Open,
    /// close, fclose.
    Close,
    /// read, pread, readv, preadv, fread, fgets and the like: `bytes` read.
    Read,
    /// write, pwrite, writev, pwritev, fwrite, fputs and the like: `bytes` written.
    Write,
    /// lseek, fseek and the like.
    Seek,
    /// fsync, fdatasync, fflush.
    Sync,
    /// dup, dup2, dup3: `fd` the new descriptor, `aux_fd` the old.
    Dup,
    /// sendfile, copy_file_range: `bytes` written to `fd`, read from `aux_fd`.
    Transfer,
}

impl IoOp {
    pub const ALL: [IoOp; 8] = [
        IoOp::Open,
        IoOp::Close,
        IoOp::Read,
        IoOp::Write,
        IoOp::Seek,
        IoOp::Sync,
        IoOp::Dup,
        IoOp::Transfer,
    ];

    pub fn code(self) -> u8 {
        match self {
            IoOp::Open => 1,
            IoOp::Close => 2,
            IoOp::Read => 3,
            IoOp::Write => 4,
            IoOp::Seek => 5,
            IoOp::Sync => 6,
            IoOp::Dup => 7,
            IoOp::Transfer => 8,
        }
    }

    pub fn from_code(code: u8) -> Option<IoOp> {
        IoOp::ALL.into_iter().find(|op| op.code() == code)
    }

    pub fn name(self) -> &'static str {
        match self {
            IoOp::Open => "open",
            IoOp::Close => "close",
            IoOp::Read => "read",
            IoOp::Write => "write",
            IoOp::Seek => "seek",
            IoOp::Sync => "sync",
            IoOp::Dup => "dup",
            IoOp::Transfer => "transfer",
        }
    }

    /// Which of gprofng's three I/O metrics families the call counts in: reads,
    /// writes (a transfer writes), or other I/O.
    pub fn class(self) -> IoClass {
        match self {
            IoOp::Read => IoClass::Read,
            IoOp::Write | IoOp::Transfer => IoClass::Write,
            _ => IoClass::Other,
        }
    }
}

/// The metric family of a call: Read Bytes/Count, Write Bytes/Count, Other I/O Count.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IoClass {
    Read,
    Write,
    Other,
}

/// Bit of `flags`: the call failed.
pub const FLAG_FAILED: u8 = 1;
/// Size of the fixed part of a record.
pub const IO_RECORD_FIXED_SIZE: usize = 48;
/// Longest path a record holds (longer paths keep their last bytes: the file name).
pub const MAX_IO_NAME: usize = 4096;
/// Size of the largest record.
pub const MAX_IO_RECORD_SIZE: usize = IO_RECORD_FIXED_SIZE + MAX_IO_NAME;

/// One traced call, the path borrowed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IoEvent<'a> {
    pub op: IoOp,
    pub failed: bool,
    pub fd: i32,
    /// CLOCK_MONOTONIC ns when the call began.
    pub start_ns: u64,
    /// Wall time of the call.
    pub time_ns: u64,
    pub bytes: u64,
    pub stack_id: u64,
    pub aux_fd: i32,
    /// The path as the program gave it (open, creat, fopen); empty otherwise.
    pub name: &'a [u8],
}

/// The path bytes a record keeps of `name`: all of it, or its last
/// [`MAX_IO_NAME`] bytes.
#[inline]
fn kept_name(name: &[u8]) -> &[u8] {
    &name[name.len().saturating_sub(MAX_IO_NAME)..]
}

/// Bytes of a record with a path of `name_len` bytes.
#[inline]
pub fn record_size(name_len: usize) -> usize {
    IO_RECORD_FIXED_SIZE + name_len.min(MAX_IO_NAME).next_multiple_of(8)
}

impl IoEvent<'_> {
    /// Bytes of this event's record.
    #[inline]
    pub fn encoded_size(&self) -> usize {
        record_size(self.name.len())
    }

    /// Writes the record into `out`; its length, or None when `out` is too short.
    pub fn encode_into(&self, out: &mut [u8]) -> Option<usize> {
        let (fixed, name, padding) = self.encode_parts();
        let size = IO_RECORD_FIXED_SIZE + name.len() + padding;
        let record = out.get_mut(..size)?;
        record.fill(0);
        record[..IO_RECORD_FIXED_SIZE].copy_from_slice(&fixed);
        record[IO_RECORD_FIXED_SIZE..IO_RECORD_FIXED_SIZE + name.len()].copy_from_slice(name);
        Some(size)
    }
}

impl<'a> IoEvent<'a> {
    /// The record in its three parts, for a writer that copies them where
    /// they go without a buffer of [`MAX_IO_RECORD_SIZE`] bytes (the
    /// collector, on the program's stack): the fixed part, the path bytes
    /// kept, and how many zeros follow them.
    #[inline]
    pub fn encode_parts(&self) -> ([u8; IO_RECORD_FIXED_SIZE], &'a [u8], usize) {
        let name = kept_name(self.name);
        let mut fixed = [0u8; IO_RECORD_FIXED_SIZE];
        fixed[0] = self.op.code();
        fixed[1] = if self.failed { FLAG_FAILED } else { 0 };
        fixed[2..4].copy_from_slice(&(name.len() as u16).to_le_bytes());
        fixed[4..8].copy_from_slice(&self.fd.to_le_bytes());
        fixed[8..16].copy_from_slice(&self.start_ns.to_le_bytes());
        fixed[16..24].copy_from_slice(&self.time_ns.to_le_bytes());
        fixed[24..32].copy_from_slice(&self.bytes.to_le_bytes());
        fixed[32..40].copy_from_slice(&self.stack_id.to_le_bytes());
        fixed[40..44].copy_from_slice(&self.aux_fd.to_le_bytes());
        let padding = record_size(name.len()) - IO_RECORD_FIXED_SIZE - name.len();
        (fixed, name, padding)
    }
}

impl<'a> IoEvent<'a> {
    /// The event at the start of `bytes` and its record's length; None when the bytes are
    /// no record (short, an unknown op or flag, a path longer than the format allows).
    pub fn decode(bytes: &'a [u8]) -> Option<(IoEvent<'a>, usize)> {
        let fixed = bytes.get(..IO_RECORD_FIXED_SIZE)?;
        let u64_at = |at: usize| -> Option<u64> {
            Some(u64::from_le_bytes(fixed.get(at..at + 8)?.try_into().ok()?))
        };
        let i32_at = |at: usize| -> Option<i32> {
            Some(i32::from_le_bytes(fixed.get(at..at + 4)?.try_into().ok()?))
        };
        if fixed[1] & !FLAG_FAILED != 0 {
            return None;
        }
        let name_len = usize::from(u16::from_le_bytes([fixed[2], fixed[3]]));
        if name_len > MAX_IO_NAME {
            return None;
        }
        let size = record_size(name_len);
        let name = bytes.get(IO_RECORD_FIXED_SIZE..IO_RECORD_FIXED_SIZE + name_len)?;
        bytes.get(..size)?;
        let event = IoEvent {
            op: IoOp::from_code(fixed[0])?,
            failed: fixed[1] & FLAG_FAILED != 0,
            fd: i32_at(4)?,
            start_ns: u64_at(8)?,
            time_ns: u64_at(16)?,
            bytes: u64_at(24)?,
            stack_id: u64_at(32)?,
            aux_fd: i32_at(40)?,
            name,
        };
        Some((event, size))
    }
}

/// Decodes every record of one block's committed bytes. Returns false when
/// the bytes are not whole records or hold something that is no record.
pub fn decode_block<'a>(mut records: &'a [u8], mut each: impl FnMut(IoEvent<'a>)) -> bool {
    while !records.is_empty() {
        let Some((event, size)) = IoEvent::decode(records) else {
            return false;
        };
        each(event);
        records = &records[size..];
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(op: IoOp, name: &[u8]) -> IoEvent<'_> {
        IoEvent {
            op,
            failed: op == IoOp::Close,
            fd: 7,
            start_ns: 123_456_789,
            time_ns: 42_000,
            bytes: 4096,
            stack_id: u64::MAX - 3,
            aux_fd: -1,
            name,
        }
    }

    #[test]
    fn records_round_trip() {
        let mut buf = [0u8; MAX_IO_RECORD_SIZE];
        for op in IoOp::ALL {
            for name in [&b""[..], b"/tmp/a", b"/exactly8"] {
                let e = event(op, name);
                let size = e.encode_into(&mut buf).unwrap();
                assert_eq!(size % 8, 0);
                assert_eq!(size, e.encoded_size());
                assert_eq!(IoEvent::decode(&buf[..size]), Some((e, size)));
            }
        }
    }

    #[test]
    fn parts_make_the_record() {
        let mut buf = [0u8; MAX_IO_RECORD_SIZE];
        for name in [&b""[..], b"/tmp/a", b"/exactly8", b"/tmp/a-longer-name"] {
            let e = event(IoOp::Write, name);
            let size = e.encode_into(&mut buf).unwrap();
            let (fixed, kept, padding) = e.encode_parts();
            let mut joined = fixed.to_vec();
            joined.extend_from_slice(kept);
            joined.resize(joined.len() + padding, 0);
            assert_eq!(joined, &buf[..size]);
            assert!(padding < 8);
        }
    }

    #[test]
    fn long_paths_keep_their_end() {
        let long = vec![b'x'; MAX_IO_NAME + 10];
        let mut buf = vec![0u8; MAX_IO_RECORD_SIZE];
        let size = event(IoOp::Open, &long).encode_into(&mut buf).unwrap();
        assert_eq!(size, MAX_IO_RECORD_SIZE);
        let (decoded, _) = IoEvent::decode(&buf).unwrap();
        assert_eq!(decoded.name.len(), MAX_IO_NAME);
        assert!(event(IoOp::Open, b"abc")
            .encode_into(&mut buf[..50])
            .is_none());
    }

    #[test]
    fn damaged_records_are_refused() {
        let mut buf = [0u8; 128];
        let size = event(IoOp::Read, b"/f").encode_into(&mut buf).unwrap();
        assert!(IoEvent::decode(&buf[..size - 1]).is_none());
        let mut bad = buf;
        bad[0] = 0;
        assert!(IoEvent::decode(&bad).is_none());
        bad = buf;
        bad[1] = 2;
        assert!(IoEvent::decode(&bad).is_none());
        let mut two = buf[..size].to_vec();
        two.extend_from_slice(&buf[..size]);
        let mut seen = 0;
        assert!(decode_block(&two, |_| seen += 1));
        assert_eq!(seen, 2);
        assert!(!decode_block(&two[..size + 10], |_| {}));
    }
}
