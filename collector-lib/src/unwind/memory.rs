//! Reading the interrupted thread's stack from a signal handler without ever faulting.
//!
//! Reads inside the part of a known stack mapping at or above the stack pointer that
//! started the walk are direct loads; every other read goes through `process_vm_readv` on
//! our own pid, which returns an error instead of faulting on a bad address.

/// The stack mappings one thread was seen running on (per thread, owned by the caller).
///
/// Plain data: keep one per thread (e.g. in a const-initialized thread-local or a
/// per-thread slot) and reset it with [`StackCache::new`] when the slot is given to another
/// thread. Two entries so a thread that alternates between its stack and a sigaltstack
/// does not reread `/proc/self/maps` at every sample.
#[derive(Clone, Copy, Debug)]
pub struct StackCache {
    mappings: [Mapping; 2],
    /// Which entry was filled last (the other one is replaced next).
    newest: u8,
    /// `/proc/self/maps` lookups that found nothing; after a few, stop trying (every read
    /// then goes through process_vm_readv, slower but still safe).
    failed_lookups: u8,
}

/// A readable mapping `[lo, hi)`; `lo == hi` is an empty entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Mapping {
    pub lo: u64,
    pub hi: u64,
}

impl Mapping {
    const EMPTY: Mapping = Mapping { lo: 0, hi: 0 };

    fn contains(&self, address: u64) -> bool {
        self.lo <= address && address < self.hi
    }
}

const MAX_FAILED_LOOKUPS: u8 = 4;

impl StackCache {
    /// An empty cache.
    pub const fn new() -> StackCache {
        StackCache {
            mappings: [Mapping::EMPTY; 2],
            newest: 0,
            failed_lookups: 0,
        }
    }

    /// The mapping holding `rsp`, looked up in `/proc/self/maps` if it is not cached.
    ///
    /// Async-signal-safe: at most one open/read/close of /proc/self/maps into a stack
    /// buffer, no allocation.
    pub(crate) fn mapping_for(&mut self, rsp: u64) -> Option<Mapping> {
        if let Some(mapping) = self.mappings.iter().find(|m| m.contains(rsp)) {
            return Some(*mapping);
        }
        if self.failed_lookups >= MAX_FAILED_LOOKUPS {
            return None;
        }
        match find_mapping(rsp) {
            Some(mapping) => {
                self.newest ^= 1;
                if let Some(slot) = self.mappings.get_mut(usize::from(self.newest)) {
                    *slot = mapping;
                }
                Some(mapping)
            }
            None => {
                self.failed_lookups += 1;
                None
            }
        }
    }
}

impl Default for StackCache {
    fn default() -> Self {
        StackCache::new()
    }
}

/// Memory a walk reads: the stack (and a DRAP slot).
pub(crate) trait StackMemory {
    /// 8 bytes at `address`, or None if that memory is not readable.
    fn read_u64(&self, address: u64) -> Option<u64>;
}

impl StackMemory for StackReader {
    fn read_u64(&self, address: u64) -> Option<u64> {
        StackReader::read_u64(self, address)
    }
}

/// Stack memory of one walk: direct reads inside `[floor, hi)` of up to two stacks (the
/// one the walk started on, the one a signal frame leads back to).
pub(crate) struct StackReader {
    windows: [Mapping; 2],
}

impl StackReader {
    pub fn new() -> StackReader {
        StackReader {
            windows: [Mapping::EMPTY; 2],
        }
    }

    /// Allow direct reads from `rsp` up to the end of its mapping (slot 0: the interrupted
    /// stack, slot 1: the stack below a signal frame).
    ///
    /// Async-signal-safe (see [`StackCache::mapping_for`]).
    pub fn set_window(&mut self, slot: usize, rsp: u64, cache: &mut StackCache) {
        let window = match cache.mapping_for(rsp) {
            Some(mapping) => Mapping {
                lo: rsp,
                hi: mapping.hi,
            },
            None => Mapping::EMPTY,
        };
        if let Some(entry) = self.windows.get_mut(slot) {
            *entry = window;
        }
    }

    /// The part of the walk's own stack known to be mapped: `[lo, hi)`.
    pub fn own_window(&self) -> (u64, u64) {
        (self.windows[0].lo, self.windows[0].hi)
    }

    /// Read 8 bytes at `address`, or None if that memory is not readable.
    ///
    /// Async-signal-safe: a plain load inside a window known to be mapped, otherwise one
    /// process_vm_readv system call (which reports EFAULT instead of faulting).
    #[inline]
    pub fn read_u64(&self, address: u64) -> Option<u64> {
        let end = address.checked_add(8)?;
        if self
            .windows
            .iter()
            .any(|window| window.lo <= address && end <= window.hi)
        {
            // SAFETY: the window lies inside a readable mapping of this thread's stack.
            return Some(unsafe { std::ptr::read_unaligned(address as *const u64) });
        }
        read_u64_checked(address)
    }
}

/// Read 8 bytes of our own memory through the kernel: a bad address gives an error, never
/// a fault. Async-signal-safe (getpid and process_vm_readv are system calls).
pub(crate) fn read_u64_checked(address: u64) -> Option<u64> {
    let mut value: u64 = 0;
    let local = libc::iovec {
        iov_base: (&mut value as *mut u64).cast(),
        iov_len: 8,
    };
    let remote = libc::iovec {
        iov_base: address as *mut libc::c_void,
        iov_len: 8,
    };
    // SAFETY: `local` points to our own 8-byte variable; the kernel checks `remote`.
    let copied = unsafe { libc::process_vm_readv(libc::getpid(), &local, 1, &remote, 1, 0) };
    (copied == 8).then_some(value)
}

/// Find the readable mapping holding `address` in /proc/self/maps.
///
/// Async-signal-safe: open/read/close system calls and a 4 KiB stack buffer; the lines are
/// parsed as a stream, so long path names need no line buffer.
fn find_mapping(address: u64) -> Option<Mapping> {
    // A raw system call: the preloaded collector's own `open` is traced.
    let fd = crate::sys::open_raw(c"/proc/self/maps", libc::O_RDONLY | libc::O_CLOEXEC, 0);
    if fd < 0 {
        return None;
    }
    let mut parser = MapsParser::new(address);
    let mut buffer = [0u8; 4096];
    let found = loop {
        let count = crate::sys::read_raw(fd, &mut buffer);
        // SAFETY: errno is thread-local and always readable.
        if count < 0 && unsafe { *libc::__errno_location() } == libc::EINTR {
            continue;
        }
        let Ok(count) = usize::try_from(count) else {
            break None;
        };
        let Some(chunk) = buffer.get(..count) else {
            break None;
        };
        if count == 0 {
            break parser.finish();
        }
        if let Some(mapping) = parser.feed(chunk) {
            break Some(mapping);
        }
    };
    crate::sys::close_raw(fd);
    found
}

/// A streaming parser of /proc/self/maps lines `lo-hi perms ...` looking for the readable
/// mapping that holds one address.
pub(crate) struct MapsParser {
    address: u64,
    field: MapsField,
    lo: u64,
    hi: u64,
    readable: bool,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum MapsField {
    Lo,
    Hi,
    Perms,
    Rest,
    /// A line that does not parse: ignore it.
    Bad,
}

impl MapsParser {
    pub fn new(address: u64) -> MapsParser {
        MapsParser {
            address,
            field: MapsField::Lo,
            lo: 0,
            hi: 0,
            readable: false,
        }
    }

    /// Feed the next bytes; returns the mapping once a complete matching line was seen.
    pub fn feed(&mut self, bytes: &[u8]) -> Option<Mapping> {
        for &byte in bytes {
            if byte == b'\n' {
                if let Some(mapping) = self.end_line() {
                    return Some(mapping);
                }
                continue;
            }
            self.field = match (self.field, byte) {
                (MapsField::Lo, b'-') => MapsField::Hi,
                (MapsField::Lo, _) => accumulate_hex(&mut self.lo, byte, MapsField::Lo),
                (MapsField::Hi, b' ') => MapsField::Perms,
                (MapsField::Hi, _) => accumulate_hex(&mut self.hi, byte, MapsField::Hi),
                (MapsField::Perms, _) => {
                    self.readable = byte == b'r';
                    MapsField::Rest
                }
                (field, _) => field,
            };
        }
        None
    }

    /// The input ended: a last line without a newline still counts.
    pub fn finish(&mut self) -> Option<Mapping> {
        self.end_line()
    }

    fn end_line(&mut self) -> Option<Mapping> {
        let mapping = Mapping {
            lo: self.lo,
            hi: self.hi,
        };
        let matched =
            self.field == MapsField::Rest && self.readable && mapping.contains(self.address);
        *self = MapsParser::new(self.address);
        matched.then_some(mapping)
    }
}

fn accumulate_hex(value: &mut u64, byte: u8, field: MapsField) -> MapsField {
    let digit = match byte {
        b'0'..=b'9' => byte - b'0',
        b'a'..=b'f' => byte - b'a' + 10,
        b'A'..=b'F' => byte - b'A' + 10,
        _ => return MapsField::Bad,
    };
    match value.checked_mul(16) {
        Some(shifted) => {
            *value = shifted | u64::from(digit);
            field
        }
        None => MapsField::Bad,
    }
}
