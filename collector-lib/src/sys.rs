//! Small async-signal-safe wrappers over system calls.
//!
//! Everything here is callable from a signal handler: raw system calls or
//! vDSO clock reads, no allocation, no locks, no panics. errno is the only
//! shared state these touch, and the signal handler saves and restores it.

use std::ffi::CStr;

/// CLOCK_MONOTONIC in nanoseconds (vDSO, no system call).
pub fn monotonic_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// CLOCK_MONOTONIC_COARSE in nanoseconds: the same clock at the kernel
/// tick's resolution (a few ms), read without the timestamp counter, so
/// much cheaper in a virtual machine. For events whose order is exact
/// otherwise (heap events carry order numbers).
pub fn monotonic_coarse_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC_COARSE)
}

/// CPU time consumed by the calling thread, in nanoseconds.
pub fn thread_cpu_ns() -> u64 {
    clock_ns(libc::CLOCK_THREAD_CPUTIME_ID)
}

/// CPU time consumed by thread `tid` of this process, in nanoseconds, or
/// None when the thread is gone. Linux encodes a thread's CPU clock in the
/// clock id (`~tid << 3 | CPUCLOCK_PERTHREAD | CPUCLOCK_SCHED`); glibc's
/// pthread_getcpuclockid does the same but needs a pthread_t we do not have
/// for threads found in /proc/self/task.
pub fn other_thread_cpu_ns(tid: i32) -> Option<u64> {
    let clock = thread_cpu_clock(tid);
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid out-pointer.
    let rc = unsafe { libc::clock_gettime(clock, &mut ts) };
    (rc == 0).then(|| timespec_ns(&ts))
}

/// The CPU-time clock id of thread `tid` (see `other_thread_cpu_ns`).
pub fn thread_cpu_clock(tid: i32) -> libc::clockid_t {
    ((!tid) << 3) | 6
}

fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid out-pointer; clock_gettime is async-signal-safe.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    timespec_ns(&ts)
}

pub fn timespec_ns(ts: &libc::timespec) -> u64 {
    (ts.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(ts.tv_nsec as u64)
}

/// The calling thread's thread pointer (`%fs:0`, glibc's `struct pthread`
/// address): tells threads apart without a system call or thread-local
/// storage, which a dlopen'ed library may only get through malloc.
pub fn thread_pointer() -> usize {
    let pointer: usize;
    // SAFETY: on x86-64 Linux %fs:0 holds the thread control block's own
    // address (the TLS ABI requires it); reading it has no side effect.
    unsafe {
        std::arch::asm!(
            "mov {}, qword ptr fs:[0]",
            out(reg) pointer,
            options(nostack, readonly, preserves_flags)
        );
    }
    pointer
}

/// mmap as a raw system call: the collector's own mappings must not go
/// through its exported `mmap` hook.
pub fn mmap_raw(length: usize, prot: i32, flags: i32, fd: i32, offset: i64) -> *mut u8 {
    mmap_at(std::ptr::null_mut(), length, prot, flags, fd, offset)
}

/// mmap with an address hint, as a raw system call; MAP_FAILED with errno
/// set on failure, as libc's.
pub fn mmap_at(
    address: *mut u8,
    length: usize,
    prot: i32,
    flags: i32,
    fd: i32,
    offset: i64,
) -> *mut u8 {
    // SAFETY: the kernel checks every argument; MAP_FIXED over memory the
    // caller owns is the caller's business, as with libc's mmap.
    let result = unsafe {
        libc::syscall(
            libc::SYS_mmap,
            address,
            length,
            prot as libc::c_long,
            flags as libc::c_long,
            fd as libc::c_long,
            offset,
        )
    };
    // glibc's syscall() returns -1 with errno set on failure, which is
    // MAP_FAILED.
    result as *mut u8
}

/// munmap as a raw system call (see `mmap_raw`).
///
/// # Safety
/// `[address, address + length)` must be a mapping of ours nothing uses any more.
pub unsafe fn munmap_raw(address: *mut u8, length: usize) {
    munmap_checked(address, length);
}

/// munmap as a raw system call, with libc's result: 0, or -1 and errno.
///
/// # Safety
/// As libc's munmap.
pub unsafe fn munmap_checked(address: *mut u8, length: usize) -> i32 {
    let result = libc::syscall(libc::SYS_munmap, address, length);
    if result < 0 {
        // The raw syscall wrapper already set errno.
        return -1;
    }
    0
}

pub fn gettid() -> i32 {
    // SAFETY: gettid has no arguments and cannot fail.
    unsafe { libc::syscall(libc::SYS_gettid) as i32 }
}

pub fn getpid() -> i32 {
    // SAFETY: getpid cannot fail.
    unsafe { libc::getpid() }
}

/// The CPU the calling thread runs on, or None.
pub fn current_cpu() -> Option<u16> {
    // SAFETY: sched_getcpu reads the vDSO/rseq area; no side effects.
    let cpu = unsafe { libc::sched_getcpu() };
    u16::try_from(cpu).ok()
}

// ---- the collector's own file I/O ----------------------------------------
// Raw system calls, never libc's functions: a preloaded collector exports
// `open`, `read`, `write`, `close`, ... (I/O tracing), and a call from
// inside the library to libc's name would reach that export, so the
// collector's own log lines, block files and /proc reads would be traced
// as the program's. errno is set as libc's functions set it.

/// The result of a raw system call as libc's wrappers give it: glibc's
/// `syscall()` already returns -1 with errno set on failure.
fn raw_result(result: libc::c_long) -> isize {
    result as isize
}

/// open(2) as a raw system call (openat relative to the working directory).
pub fn open_raw(path: &CStr, flags: i32, mode: u32) -> i32 {
    // SAFETY: a NUL-terminated path; the kernel checks the rest.
    raw_result(unsafe {
        libc::syscall(
            libc::SYS_openat,
            libc::AT_FDCWD as libc::c_long,
            path.as_ptr(),
            flags as libc::c_long,
            mode as libc::c_long,
        )
    }) as i32
}

/// read(2) as a raw system call.
pub fn read_raw(fd: i32, buf: &mut [u8]) -> isize {
    // SAFETY: `buf` is writable for its length.
    raw_result(unsafe { libc::syscall(libc::SYS_read, fd, buf.as_mut_ptr(), buf.len()) })
}

/// write(2) as a raw system call.
pub fn write_raw(fd: i32, bytes: &[u8]) -> isize {
    // SAFETY: the pointer and length describe `bytes`.
    raw_result(unsafe { libc::syscall(libc::SYS_write, fd, bytes.as_ptr(), bytes.len()) })
}

/// pwrite(2) as a raw system call.
pub fn pwrite_raw(fd: i32, bytes: &[u8], offset: i64) -> isize {
    // SAFETY: the pointer and length describe `bytes`.
    raw_result(unsafe {
        libc::syscall(libc::SYS_pwrite64, fd, bytes.as_ptr(), bytes.len(), offset)
    })
}

/// lseek(2) as a raw system call.
pub fn lseek_raw(fd: i32, offset: i64, whence: i32) -> i64 {
    // SAFETY: plain system call on a descriptor.
    raw_result(unsafe { libc::syscall(libc::SYS_lseek, fd, offset, whence) }) as i64
}

/// close(2) as a raw system call.
pub fn close_raw(fd: i32) -> i32 {
    // SAFETY: plain system call; closing a descriptor the caller owns.
    raw_result(unsafe { libc::syscall(libc::SYS_close, fd) }) as i32
}

/// Frees the disk space `fd`'s file has reserved past its end (fallocate
/// with KEEP_SIZE): truncating a file to its own size does (raw system
/// calls, as every I/O of the collector's own).
pub fn free_reserve_past_end(fd: i32) {
    // SAFETY: fstat into a struct of ours, then ftruncate on our descriptor.
    unsafe {
        let mut stat: libc::stat = std::mem::zeroed();
        if libc::syscall(libc::SYS_fstat, fd, &mut stat as *mut libc::stat) == 0 {
            libc::syscall(libc::SYS_ftruncate, fd, stat.st_size);
        }
    }
}

/// Writes all of `bytes` to `fd`, retrying on EINTR and short writes.
pub fn write_all(fd: i32, mut bytes: &[u8]) -> bool {
    while !bytes.is_empty() {
        let n = write_raw(fd, bytes);
        if n < 0 {
            if errno() == libc::EINTR {
                continue;
            }
            return false;
        }
        if n == 0 {
            return false;
        }
        bytes = bytes.get(n as usize..).unwrap_or(&[]);
    }
    true
}

/// Reads a whole small file (e.g. /proc/self/statm) into `buf` with raw
/// open/read/close system calls; returns the bytes read.
pub fn read_small_file<'a>(path: &CStr, buf: &'a mut [u8]) -> Option<&'a [u8]> {
    let fd = open_raw(path, libc::O_RDONLY | libc::O_CLOEXEC, 0);
    if fd < 0 {
        return None;
    }
    let mut len = 0;
    while len < buf.len() {
        let rest = buf.get_mut(len..)?;
        let n = read_raw(fd, rest);
        if n < 0 && errno() == libc::EINTR {
            continue;
        }
        if n <= 0 {
            break;
        }
        len += n as usize;
    }
    close_raw(fd);
    buf.get(..len)
}

/// Whether a tracer (a debugger) is attached to the calling thread, from
/// the `TracerPid:` line of /proc/thread-self/status. Unknown counts as
/// traced (the careful answer).
pub fn traced() -> bool {
    let mut buf = [0u8; 4096];
    let Some(text) = read_small_file(c"/proc/thread-self/status", &mut buf) else {
        return true;
    };
    tracer_pid(text).is_none_or(|pid| pid != 0)
}

fn tracer_pid(status: &[u8]) -> Option<u64> {
    const KEY: &[u8] = b"TracerPid:";
    let start = status.windows(KEY.len()).position(|w| w == KEY)? + KEY.len();
    let rest = status.get(start..)?;
    let digits = rest.iter().position(|b| b.is_ascii_digit())?;
    parse_u64(rest.get(digits..)?).map(|(pid, _)| pid)
}

pub fn errno() -> i32 {
    // SAFETY: __errno_location returns the calling thread's errno slot.
    unsafe { *libc::__errno_location() }
}

/// `failed` with errno set to ENOSYS: what a hook returns when the
/// function it stands for does not exist.
pub fn no_such_function<T>(failed: T) -> T {
    set_errno(libc::ENOSYS);
    failed
}

pub fn set_errno(value: i32) {
    // SAFETY: as in errno().
    unsafe { *libc::__errno_location() = value };
}

/// Parses the leading decimal number of `text` (after leading spaces).
pub fn parse_u64(text: &[u8]) -> Option<(u64, &[u8])> {
    let start = text.iter().position(|b| *b != b' ')?;
    let text = text.get(start..)?;
    let digits = text.iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 {
        return None;
    }
    let mut value: u64 = 0;
    for b in text.get(..digits)? {
        value = value.checked_mul(10)?.checked_add(u64::from(b - b'0'))?;
    }
    Some((value, text.get(digits..)?))
}

/// A fixed-capacity byte string built without allocation (for paths and
/// log values on async-signal-safe paths).
pub struct FixedBuf<const N: usize> {
    bytes: [u8; N],
    len: usize,
}

impl<const N: usize> FixedBuf<N> {
    pub const fn new() -> Self {
        FixedBuf {
            bytes: [0; N],
            len: 0,
        }
    }

    /// Appends; false (and nothing appended) when it does not fit with
    /// room for a terminating NUL.
    pub fn push(&mut self, part: &[u8]) -> bool {
        let end = self.len + part.len();
        if end >= N {
            return false;
        }
        if let Some(dest) = self.bytes.get_mut(self.len..end) {
            dest.copy_from_slice(part);
            self.len = end;
            true
        } else {
            false
        }
    }

    pub fn as_bytes(&self) -> &[u8] {
        self.bytes.get(..self.len).unwrap_or(&[])
    }

    /// The bytes with a terminating NUL, for system calls.
    pub fn as_cstr(&mut self) -> Option<&CStr> {
        *self.bytes.get_mut(self.len)? = 0;
        CStr::from_bytes_with_nul(self.bytes.get(..=self.len)?).ok()
    }

    pub fn clear(&mut self) {
        self.len = 0;
    }
}

impl<const N: usize> Default for FixedBuf<N> {
    fn default() -> Self {
        Self::new()
    }
}

// glibc's own entry points of the malloc family: what the collector's
// allocator uses, and what the heap hooks call before the next definitions
// are resolved (resolving them may itself allocate).
extern "C" {
    pub fn __libc_malloc(size: usize) -> *mut std::ffi::c_void;
    pub fn __libc_free(pointer: *mut std::ffi::c_void);
    pub fn __libc_calloc(count: usize, size: usize) -> *mut std::ffi::c_void;
    pub fn __libc_realloc(pointer: *mut std::ffi::c_void, size: usize) -> *mut std::ffi::c_void;
    pub fn __libc_memalign(alignment: usize, size: usize) -> *mut std::ffi::c_void;
    pub fn __libc_valloc(size: usize) -> *mut std::ffi::c_void;
    pub fn __libc_pvalloc(size: usize) -> *mut std::ffi::c_void;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_buf_refuses_overflow() {
        let mut buf = FixedBuf::<8>::new();
        assert!(buf.push(b"ab"));
        assert!(buf.push(b"4096"));
        assert_eq!(buf.as_bytes(), b"ab4096");
        assert!(!buf.push(b"xy"), "needs room for the NUL");
        assert_eq!(buf.as_cstr().unwrap().to_bytes(), b"ab4096");
    }

    #[test]
    fn parse_u64_reads_leading_number() {
        assert_eq!(parse_u64(b"  123 45"), Some((123, &b" 45"[..])));
        assert_eq!(parse_u64(b"x"), None);
    }

    #[test]
    fn tracer_pid_is_read_from_status() {
        let status = b"Name:\tx\nState:\tR (running)\nTracerPid:\t4242\nUid:\t0\n";
        assert_eq!(tracer_pid(status), Some(4242));
        assert_eq!(tracer_pid(b"TracerPid:\t0\n"), Some(0));
        assert_eq!(tracer_pid(b"Name:\tx\n"), None);
        // The test harness runs untraced (unless under a debugger).
        let own =
            read_small_file(c"/proc/thread-self/status", &mut [0u8; 4096]).and_then(tracer_pid);
        assert_eq!(traced(), own != Some(0));
    }

    #[test]
    fn thread_clocks_advance() {
        let before = thread_cpu_ns();
        let mut x = 0u64;
        for i in 0..2_000_000u64 {
            x = x.wrapping_add(i * i);
        }
        std::hint::black_box(x);
        assert!(thread_cpu_ns() > before);
        let other = other_thread_cpu_ns(gettid()).unwrap();
        assert!(other >= before);
    }
}
