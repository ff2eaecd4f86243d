//! I/O tracing: the file I/O functions (open, read, write, seek, sync,
//! dup, close, transfers, and the stdio functions that do I/O),
//! interposed like the malloc family (heap.rs) and recorded while an
//! experiment traces I/O, as gprofng's I/O tracing records them: each
//! call, with its descriptor, the bytes it moved, its wall time, whether
//! it failed, its call stack, and for the calls that name a file the path
//! as given (the `io` file, docs/experiment-format.md).
//!
//! The hooks forward to the next definition (libc's), resolved once in
//! the constructor (attached: what the program's own calls reached, and
//! the GOT entries are redirected, see got.rs).
//!
//! Every call is recorded, whatever its time: the clock is read before
//! and after the real call (the processor's counter, converted to
//! CLOCK_MONOTONIC, where the kernel's clock is that counter; else the
//! vDSO's clock_gettime: tsc.rs). While the experiment does not trace I/O
//! (no experiment, paused, another kind only) a call costs one load of the
//! state word and the real call.
//!
//! What runs on a recorded call allocates nothing and takes no lock of
//! ours: the thread's slot, busy flag, walk memo and stack cache are
//! heap.rs's (one flag against recursion for every kind of hook: a call
//! made while the thread is inside a hook, a signal handler's write during
//! a recorded one, is counted in `io_totals unrecorded=`, not recorded),
//! records go into the thread's block of the `io` file. errno is the one
//! the real call left when the hook returns. The collector's own I/O (log
//! lines, block files, /proc reads) never comes here: it is made of raw
//! system calls (sys.rs), since calls from inside this library to libc's
//! names would reach these exports too.
//!
//! Not traced: calls glibc makes inside other functions (the write inside
//! fflush or printf: they are not made through the dynamic linkage), the
//! variadic printf family (printf, fprintf: a variadic function cannot be
//! defined in stable Rust), and the per-character functions (fgetc, fputc,
//! getc, putc and their macros: one record per byte would cost more than
//! the byte; programs that move data that way show it in their flushes).
//!
//! open, open64, openat and openat64 are variadic in C (`int open(const
//! char *path, int flags, ...)`): the mode comes only with O_CREAT or
//! O_TMPFILE. On x86-64 a variadic call passes its arguments in the same
//! registers as a fixed one, so a hook that takes the mode as a third
//! (fourth, for openat) argument reads the register it is in, or whatever
//! the register held when the caller gave none; it passes that on to the
//! real function, called as the variadic function it is, which reads it
//! only when the flags say there is one.

use crate::blocks::WriteError;
use crate::hold::{self, Marked};
use crate::real;
use crate::{heap, lifecycle, log, state, sys, tsc};
use experiment::io::{IoEvent, IoOp};
use std::ffi::{c_char, c_int, c_long, c_uint, c_void, CStr};

type File = libc::FILE;

extern "C" {
    static mut stdout: *mut File;
}

// ---- starting and stopping ----------------------------------------------

/// Before an experiment that traces I/O starts (ordinary context): the
/// slots' prerequisites and, attached, the real functions (what the
/// program's calls reach now).
pub fn prepare() {
    heap::prepare_slots();
    if state::live() {
        crate::got::resolve_reals(crate::got::Set::Io);
    }
}

/// Tracing starts. Attached, the GOT entries of the I/O functions are
/// redirected to the hooks first (`io how=got entries=N`).
pub fn start_tracing() {
    if state::live() {
        let entries = crate::got::patch_all(crate::got::Set::Io);
        log::write("io", |line| {
            line.str("how", b"got");
            line.u64("entries", entries as u64);
        });
    }
    lifecycle::io_on();
}

pub fn stop_tracing() {
    lifecycle::io_off();
    if state::live() {
        crate::got::restore_all(crate::got::Set::Io);
    }
}

/// The `io_totals` log line before `end`: calls recorded, and calls seen
/// but not recorded (made inside another hook of the same thread).
pub fn log_totals() {
    let (calls, unrecorded) = heap::io_counts();
    log::write("io_totals", |line| {
        line.u64("calls", calls);
        line.u64("unrecorded", unrecorded);
        line.str("clock", tsc::source());
        line.u64("clock_out_of_step", u64::from(tsc::disagreed()));
    });
}

// ---- recording ------------------------------------------------------------

/// What a finished call was, for its record.
#[derive(Clone, Copy)]
struct Call<'a> {
    op: IoOp,
    failed: bool,
    fd: c_int,
    aux_fd: c_int,
    bytes: u64,
    name: &'a [u8],
}

impl<'a> Call<'a> {
    fn on(op: IoOp, fd: c_int) -> Call<'a> {
        Call {
            op,
            failed: false,
            fd,
            aux_fd: -1,
            bytes: 0,
            name: &[],
        }
    }

    fn failed_if(self, failed: bool) -> Call<'a> {
        Call { failed, ..self }
    }

    /// A read or write that returned `result` (-1: failed).
    fn moved(self, result: isize) -> Call<'a> {
        Call {
            failed: result < 0,
            bytes: result.max(0) as u64,
            ..self
        }
    }
}

/// A call of the I/O family: not recording, the real call alone; else
/// timed and recorded as `describe` says from its result.
#[inline(always)]
fn traced<'a, R: Copy>(call: impl FnOnce() -> R, describe: impl FnOnce(R) -> Call<'a>) -> R {
    if !lifecycle::recording_io() {
        return call();
    }
    timed(call, describe)
}

/// [`traced`] once the caller knows the experiment records (it had to
/// look at the arguments before the call).
#[inline(always)]
fn timed<'a, R: Copy>(call: impl FnOnce() -> R, describe: impl FnOnce(R) -> Call<'a>) -> R {
    let start = hold::marked(tsc::stamp);
    let result = call();
    let end = hold::marked(tsc::stamp);
    let saved = sys::errno();
    record(describe(result), start, end);
    sys::set_errno(saved);
    result
}

const ZEROS: [u8; 8] = [0; 8];

/// Writes the record of a call from `start` to `end` into the thread's
/// block of the `io` file, with its stack. Its time leaves out the time
/// rdbx held the process stopped (hold.rs).
#[inline(never)]
fn record(call: Call<'_>, start: Marked<tsc::Stamp>, end: Marked<tsc::Stamp>) {
    let event = IoEvent {
        op: call.op,
        failed: call.failed,
        fd: call.fd,
        start_ns: 0,
        time_ns: 0,
        bytes: call.bytes,
        stack_id: 0,
        aux_fd: call.aux_fd,
        name: call.name,
    };
    let size = event.encoded_size();
    let recorded = heap::record_io(start, end, |cursor, tid, stack_id, (start_ns, time_ns)| {
        let event = IoEvent {
            stack_id,
            start_ns,
            time_ns,
            ..event
        };
        let (fixed, name, padding) = event.encode_parts();
        let end_ns = start_ns.saturating_add(time_ns);
        state::IO.append(cursor, &state::BUDGET, tid, end_ns, size, |writer| {
            // Most calls name no file: their record is the fixed part.
            writer.push_bytes(&fixed)
                && (name.is_empty()
                    || (writer.push_bytes(name)
                        && writer.push_bytes(&ZEROS[..padding.min(ZEROS.len())])))
        })
    });
    if let Err(err) = recorded {
        failed(err);
    }
}

/// Tracing stops (the program runs on); the log says why, once.
fn failed(err: WriteError) {
    if !lifecycle::io_off() {
        return;
    }
    match err {
        WriteError::Limit => log::warning("data limit reached: I/O tracing stopped"),
        WriteError::Disk => {
            log::warning("cannot extend the io or stacks file (disk full?): I/O tracing stopped")
        }
        WriteError::TooLarge => {
            log::warning("an io record did not fit a block: I/O tracing stopped")
        }
        WriteError::Closed => {}
    }
}

/// The bytes of a path the program gave (none for NULL).
///
/// # Safety
/// `path` is NULL or a NUL-terminated string.
unsafe fn path_bytes<'a>(path: *const c_char) -> &'a [u8] {
    if path.is_null() {
        &[]
    } else {
        CStr::from_ptr(path).to_bytes()
    }
}

/// The descriptor of a stream (-1 for NULL, or a stream without one).
///
/// # Safety
/// `stream` is NULL or a valid stream.
unsafe fn stream_fd(stream: *mut File) -> c_int {
    if stream.is_null() {
        -1
    } else {
        libc::fileno(stream)
    }
}

/// Whether a stream has its error indicator set (a short stdio read or
/// write is an error, not the end of the file).
///
/// # Safety
/// `stream` is NULL or a valid stream.
unsafe fn stream_error(stream: *mut File) -> bool {
    !stream.is_null() && libc::ferror(stream) != 0
}

/// An open that returned `fd` (-1: failed) for `path`.
fn opened(fd: c_int, path: &[u8]) -> Call<'_> {
    Call {
        name: path,
        ..Call::on(IoOp::Open, fd).failed_if(fd < 0)
    }
}

/// A stdio open that returned `stream` (NULL: failed) for `path`.
///
/// # Safety
/// `stream` is NULL or a valid stream.
unsafe fn stream_opened(stream: *mut File, path: &[u8]) -> Call<'_> {
    Call {
        name: path,
        ..Call::on(IoOp::Open, stream_fd(stream)).failed_if(stream.is_null())
    }
}

// ---- the real functions ---------------------------------------------------

type OpenFn = unsafe extern "C" fn(*const c_char, c_int, ...) -> c_int;
type Open2Fn = unsafe extern "C" fn(*const c_char, c_int) -> c_int;
type OpenatFn = unsafe extern "C" fn(c_int, *const c_char, c_int, ...) -> c_int;
type Openat2Fn = unsafe extern "C" fn(c_int, *const c_char, c_int) -> c_int;
type CreatFn = unsafe extern "C" fn(*const c_char, libc::mode_t) -> c_int;
type FdFn = unsafe extern "C" fn(c_int) -> c_int;
type ReadFn = unsafe extern "C" fn(c_int, *mut c_void, usize) -> isize;
type WriteFn = unsafe extern "C" fn(c_int, *const c_void, usize) -> isize;
type ReadChkFn = unsafe extern "C" fn(c_int, *mut c_void, usize, usize) -> isize;
type PreadFn = unsafe extern "C" fn(c_int, *mut c_void, usize, libc::off_t) -> isize;
type PreadChkFn = unsafe extern "C" fn(c_int, *mut c_void, usize, libc::off_t, usize) -> isize;
type PwriteFn = unsafe extern "C" fn(c_int, *const c_void, usize, libc::off_t) -> isize;
type VecFn = unsafe extern "C" fn(c_int, *const libc::iovec, c_int) -> isize;
type VecAtFn = unsafe extern "C" fn(c_int, *const libc::iovec, c_int, libc::off_t) -> isize;
type SeekFn = unsafe extern "C" fn(c_int, libc::off_t, c_int) -> libc::off_t;
type Dup2Fn = unsafe extern "C" fn(c_int, c_int) -> c_int;
type Dup3Fn = unsafe extern "C" fn(c_int, c_int, c_int) -> c_int;
type SendfileFn = unsafe extern "C" fn(c_int, c_int, *mut libc::off_t, usize) -> isize;
type CopyRangeFn =
    unsafe extern "C" fn(c_int, *mut libc::off_t, c_int, *mut libc::off_t, usize, c_uint) -> isize;
type FopenFn = unsafe extern "C" fn(*const c_char, *const c_char) -> *mut File;
type FdopenFn = unsafe extern "C" fn(c_int, *const c_char) -> *mut File;
type FreopenFn = unsafe extern "C" fn(*const c_char, *const c_char, *mut File) -> *mut File;
type StreamFn = unsafe extern "C" fn(*mut File) -> c_int;
type FreadFn = unsafe extern "C" fn(*mut c_void, usize, usize, *mut File) -> usize;
type FreadChkFn = unsafe extern "C" fn(*mut c_void, usize, usize, usize, *mut File) -> usize;
type FwriteFn = unsafe extern "C" fn(*const c_void, usize, usize, *mut File) -> usize;
type FgetsFn = unsafe extern "C" fn(*mut c_char, c_int, *mut File) -> *mut c_char;
type FgetsChkFn = unsafe extern "C" fn(*mut c_char, usize, c_int, *mut File) -> *mut c_char;
type FputsFn = unsafe extern "C" fn(*const c_char, *mut File) -> c_int;
type PutsFn = unsafe extern "C" fn(*const c_char) -> c_int;
type FseekFn = unsafe extern "C" fn(*mut File, c_long, c_int) -> c_int;
type FseekoFn = unsafe extern "C" fn(*mut File, libc::off_t, c_int) -> c_int;
type GetdelimFn = unsafe extern "C" fn(*mut *mut c_char, *mut usize, c_int, *mut File) -> isize;
type GetlineFn = unsafe extern "C" fn(*mut *mut c_char, *mut usize, *mut File) -> isize;

// ---- the hooks ------------------------------------------------------------

/// # Safety
/// libc's open contract (the mode read as the variadic argument it is).
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_open(
    path: *const c_char,
    flags: c_int,
    mode: c_uint,
) -> c_int {
    traced(
        || call_real!(real::OPEN, OpenFn, sys::no_such_function(-1); path, flags, mode),
        |fd| opened(fd, path_bytes(path)),
    )
}

/// # Safety
/// libc's open64 contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_open64(
    path: *const c_char,
    flags: c_int,
    mode: c_uint,
) -> c_int {
    traced(
        || call_real!(real::OPEN64, OpenFn, sys::no_such_function(-1); path, flags, mode),
        |fd| opened(fd, path_bytes(path)),
    )
}

/// # Safety
/// glibc's __open_2 contract (fortified open without a mode).
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_open_2(path: *const c_char, flags: c_int) -> c_int {
    traced(
        || call_real!(real::OPEN_2, Open2Fn, sys::no_such_function(-1); path, flags),
        |fd| opened(fd, path_bytes(path)),
    )
}

/// # Safety
/// glibc's __open64_2 contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_open64_2(path: *const c_char, flags: c_int) -> c_int {
    traced(
        || call_real!(real::OPEN64_2, Open2Fn, sys::no_such_function(-1); path, flags),
        |fd| opened(fd, path_bytes(path)),
    )
}

/// # Safety
/// libc's openat contract (the mode read as the variadic argument it is).
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_openat(
    dir: c_int,
    path: *const c_char,
    flags: c_int,
    mode: c_uint,
) -> c_int {
    traced(
        || call_real!(real::OPENAT, OpenatFn, sys::no_such_function(-1); dir, path, flags, mode),
        |fd| opened(fd, path_bytes(path)),
    )
}

/// # Safety
/// libc's openat64 contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_openat64(
    dir: c_int,
    path: *const c_char,
    flags: c_int,
    mode: c_uint,
) -> c_int {
    traced(
        || call_real!(real::OPENAT64, OpenatFn, sys::no_such_function(-1); dir, path, flags, mode),
        |fd| opened(fd, path_bytes(path)),
    )
}

/// # Safety
/// glibc's __openat_2 contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_openat_2(
    dir: c_int,
    path: *const c_char,
    flags: c_int,
) -> c_int {
    traced(
        || call_real!(real::OPENAT_2, Openat2Fn, sys::no_such_function(-1); dir, path, flags),
        |fd| opened(fd, path_bytes(path)),
    )
}

/// # Safety
/// glibc's __openat64_2 contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_openat64_2(
    dir: c_int,
    path: *const c_char,
    flags: c_int,
) -> c_int {
    traced(
        || call_real!(real::OPENAT64_2, Openat2Fn, sys::no_such_function(-1); dir, path, flags),
        |fd| opened(fd, path_bytes(path)),
    )
}

/// # Safety
/// libc's creat contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_creat(path: *const c_char, mode: libc::mode_t) -> c_int {
    traced(
        || call_real!(real::CREAT, CreatFn, sys::no_such_function(-1); path, mode),
        |fd| opened(fd, path_bytes(path)),
    )
}

/// # Safety
/// libc's creat64 contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_creat64(path: *const c_char, mode: libc::mode_t) -> c_int {
    traced(
        || call_real!(real::CREAT64, CreatFn, sys::no_such_function(-1); path, mode),
        |fd| opened(fd, path_bytes(path)),
    )
}

/// # Safety
/// libc's close contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_close(fd: c_int) -> c_int {
    traced(
        || call_real!(real::CLOSE, FdFn, sys::no_such_function(-1); fd),
        |rc| Call::on(IoOp::Close, fd).failed_if(rc != 0),
    )
}

/// # Safety
/// libc's read contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_read(fd: c_int, buf: *mut c_void, count: usize) -> isize {
    traced(
        || call_real!(real::READ, ReadFn, sys::no_such_function(-1); fd, buf, count),
        |n| Call::on(IoOp::Read, fd).moved(n),
    )
}

/// # Safety
/// glibc's __read_chk contract (fortified read).
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_read_chk(
    fd: c_int,
    buf: *mut c_void,
    count: usize,
    size: usize,
) -> isize {
    traced(
        || call_real!(real::READ_CHK, ReadChkFn, sys::no_such_function(-1); fd, buf, count, size),
        |n| Call::on(IoOp::Read, fd).moved(n),
    )
}

/// # Safety
/// libc's write contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_write(fd: c_int, buf: *const c_void, count: usize) -> isize {
    traced(
        || call_real!(real::WRITE, WriteFn, sys::no_such_function(-1); fd, buf, count),
        |n| Call::on(IoOp::Write, fd).moved(n),
    )
}

/// # Safety
/// libc's pread contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_pread(
    fd: c_int,
    buf: *mut c_void,
    count: usize,
    offset: libc::off_t,
) -> isize {
    traced(
        || call_real!(real::PREAD, PreadFn, sys::no_such_function(-1); fd, buf, count, offset),
        |n| Call::on(IoOp::Read, fd).moved(n),
    )
}

/// # Safety
/// libc's pread64 contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_pread64(
    fd: c_int,
    buf: *mut c_void,
    count: usize,
    offset: libc::off_t,
) -> isize {
    traced(
        || call_real!(real::PREAD64, PreadFn, sys::no_such_function(-1); fd, buf, count, offset),
        |n| Call::on(IoOp::Read, fd).moved(n),
    )
}

/// # Safety
/// glibc's __pread_chk contract (fortified pread).
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_pread_chk(
    fd: c_int,
    buf: *mut c_void,
    count: usize,
    offset: libc::off_t,
    size: usize,
) -> isize {
    traced(
        || call_real!(real::PREAD_CHK, PreadChkFn, sys::no_such_function(-1); fd, buf, count, offset, size),
        |n| Call::on(IoOp::Read, fd).moved(n),
    )
}

/// # Safety
/// glibc's __pread64_chk contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_pread64_chk(
    fd: c_int,
    buf: *mut c_void,
    count: usize,
    offset: libc::off_t,
    size: usize,
) -> isize {
    traced(
        || call_real!(real::PREAD64_CHK, PreadChkFn, sys::no_such_function(-1); fd, buf, count, offset, size),
        |n| Call::on(IoOp::Read, fd).moved(n),
    )
}

/// # Safety
/// libc's pwrite contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_pwrite(
    fd: c_int,
    buf: *const c_void,
    count: usize,
    offset: libc::off_t,
) -> isize {
    traced(
        || call_real!(real::PWRITE, PwriteFn, sys::no_such_function(-1); fd, buf, count, offset),
        |n| Call::on(IoOp::Write, fd).moved(n),
    )
}

/// # Safety
/// libc's pwrite64 contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_pwrite64(
    fd: c_int,
    buf: *const c_void,
    count: usize,
    offset: libc::off_t,
) -> isize {
    traced(
        || call_real!(real::PWRITE64, PwriteFn, sys::no_such_function(-1); fd, buf, count, offset),
        |n| Call::on(IoOp::Write, fd).moved(n),
    )
}

/// # Safety
/// libc's readv contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_readv(
    fd: c_int,
    iov: *const libc::iovec,
    count: c_int,
) -> isize {
    traced(
        || call_real!(real::READV, VecFn, sys::no_such_function(-1); fd, iov, count),
        |n| Call::on(IoOp::Read, fd).moved(n),
    )
}

/// # Safety
/// libc's writev contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_writev(
    fd: c_int,
    iov: *const libc::iovec,
    count: c_int,
) -> isize {
    traced(
        || call_real!(real::WRITEV, VecFn, sys::no_such_function(-1); fd, iov, count),
        |n| Call::on(IoOp::Write, fd).moved(n),
    )
}

/// # Safety
/// libc's preadv contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_preadv(
    fd: c_int,
    iov: *const libc::iovec,
    count: c_int,
    offset: libc::off_t,
) -> isize {
    traced(
        || call_real!(real::PREADV, VecAtFn, sys::no_such_function(-1); fd, iov, count, offset),
        |n| Call::on(IoOp::Read, fd).moved(n),
    )
}

/// # Safety
/// libc's preadv64 contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_preadv64(
    fd: c_int,
    iov: *const libc::iovec,
    count: c_int,
    offset: libc::off_t,
) -> isize {
    traced(
        || call_real!(real::PREADV64, VecAtFn, sys::no_such_function(-1); fd, iov, count, offset),
        |n| Call::on(IoOp::Read, fd).moved(n),
    )
}

/// # Safety
/// libc's pwritev contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_pwritev(
    fd: c_int,
    iov: *const libc::iovec,
    count: c_int,
    offset: libc::off_t,
) -> isize {
    traced(
        || call_real!(real::PWRITEV, VecAtFn, sys::no_such_function(-1); fd, iov, count, offset),
        |n| Call::on(IoOp::Write, fd).moved(n),
    )
}

/// # Safety
/// libc's pwritev64 contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_pwritev64(
    fd: c_int,
    iov: *const libc::iovec,
    count: c_int,
    offset: libc::off_t,
) -> isize {
    traced(
        || call_real!(real::PWRITEV64, VecAtFn, sys::no_such_function(-1); fd, iov, count, offset),
        |n| Call::on(IoOp::Write, fd).moved(n),
    )
}

/// # Safety
/// libc's lseek contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_lseek(
    fd: c_int,
    offset: libc::off_t,
    whence: c_int,
) -> libc::off_t {
    traced(
        || call_real!(real::LSEEK, SeekFn, sys::no_such_function(-1); fd, offset, whence),
        |at| Call::on(IoOp::Seek, fd).failed_if(at < 0),
    )
}

/// # Safety
/// libc's lseek64 contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_lseek64(
    fd: c_int,
    offset: libc::off_t,
    whence: c_int,
) -> libc::off_t {
    traced(
        || call_real!(real::LSEEK64, SeekFn, sys::no_such_function(-1); fd, offset, whence),
        |at| Call::on(IoOp::Seek, fd).failed_if(at < 0),
    )
}

/// # Safety
/// libc's fsync contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_fsync(fd: c_int) -> c_int {
    traced(
        || call_real!(real::FSYNC, FdFn, sys::no_such_function(-1); fd),
        |rc| Call::on(IoOp::Sync, fd).failed_if(rc != 0),
    )
}

/// # Safety
/// libc's fdatasync contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_fdatasync(fd: c_int) -> c_int {
    traced(
        || call_real!(real::FDATASYNC, FdFn, sys::no_such_function(-1); fd),
        |rc| Call::on(IoOp::Sync, fd).failed_if(rc != 0),
    )
}

/// A dup of `old` that returned `new` (-1: failed).
fn duplicated<'a>(new: c_int, old: c_int) -> Call<'a> {
    Call {
        aux_fd: old,
        ..Call::on(IoOp::Dup, new).failed_if(new < 0)
    }
}

/// # Safety
/// libc's dup contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_dup(old: c_int) -> c_int {
    traced(
        || call_real!(real::DUP, FdFn, sys::no_such_function(-1); old),
        |new| duplicated(new, old),
    )
}

/// # Safety
/// libc's dup2 contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_dup2(old: c_int, new: c_int) -> c_int {
    traced(
        || call_real!(real::DUP2, Dup2Fn, sys::no_such_function(-1); old, new),
        |made| duplicated(made, old),
    )
}

/// # Safety
/// libc's dup3 contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_dup3(old: c_int, new: c_int, flags: c_int) -> c_int {
    traced(
        || call_real!(real::DUP3, Dup3Fn, sys::no_such_function(-1); old, new, flags),
        |made| duplicated(made, old),
    )
}

/// A transfer from `from` to `to` that returned `result`.
fn transferred<'a>(to: c_int, from: c_int, result: isize) -> Call<'a> {
    Call {
        aux_fd: from,
        ..Call::on(IoOp::Transfer, to).moved(result)
    }
}

/// # Safety
/// libc's sendfile contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_sendfile(
    to: c_int,
    from: c_int,
    offset: *mut libc::off_t,
    count: usize,
) -> isize {
    traced(
        || call_real!(real::SENDFILE, SendfileFn, sys::no_such_function(-1); to, from, offset, count),
        |n| transferred(to, from, n),
    )
}

/// # Safety
/// libc's sendfile64 contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_sendfile64(
    to: c_int,
    from: c_int,
    offset: *mut libc::off_t,
    count: usize,
) -> isize {
    traced(
        || call_real!(real::SENDFILE64, SendfileFn, sys::no_such_function(-1); to, from, offset, count),
        |n| transferred(to, from, n),
    )
}

/// # Safety
/// libc's copy_file_range contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_copy_file_range(
    from: c_int,
    from_offset: *mut libc::off_t,
    to: c_int,
    to_offset: *mut libc::off_t,
    count: usize,
    flags: c_uint,
) -> isize {
    traced(
        || {
            call_real!(real::COPY_FILE_RANGE, CopyRangeFn, sys::no_such_function(-1);
                from, from_offset, to, to_offset, count, flags)
        },
        |n| transferred(to, from, n),
    )
}

/// # Safety
/// libc's fopen contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_fopen(path: *const c_char, mode: *const c_char) -> *mut File {
    traced(
        || call_real!(real::FOPEN, FopenFn, sys::no_such_function(std::ptr::null_mut()); path, mode),
        |stream| stream_opened(stream, path_bytes(path)),
    )
}

/// # Safety
/// libc's fopen64 contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_fopen64(
    path: *const c_char,
    mode: *const c_char,
) -> *mut File {
    traced(
        || call_real!(real::FOPEN64, FopenFn, sys::no_such_function(std::ptr::null_mut()); path, mode),
        |stream| stream_opened(stream, path_bytes(path)),
    )
}

/// # Safety
/// libc's fdopen contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_fdopen(fd: c_int, mode: *const c_char) -> *mut File {
    traced(
        || call_real!(real::FDOPEN, FdopenFn, sys::no_such_function(std::ptr::null_mut()); fd, mode),
        |stream| Call::on(IoOp::Open, fd).failed_if(stream.is_null()),
    )
}

/// # Safety
/// libc's freopen contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_freopen(
    path: *const c_char,
    mode: *const c_char,
    stream: *mut File,
) -> *mut File {
    traced(
        || call_real!(real::FREOPEN, FreopenFn, sys::no_such_function(std::ptr::null_mut()); path, mode, stream),
        |reopened| stream_opened(reopened, path_bytes(path)),
    )
}

/// # Safety
/// libc's freopen64 contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_freopen64(
    path: *const c_char,
    mode: *const c_char,
    stream: *mut File,
) -> *mut File {
    traced(
        || call_real!(real::FREOPEN64, FreopenFn, sys::no_such_function(std::ptr::null_mut()); path, mode, stream),
        |reopened| stream_opened(reopened, path_bytes(path)),
    )
}

/// # Safety
/// libc's fclose contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_fclose(stream: *mut File) -> c_int {
    if !lifecycle::recording_io() {
        return call_real!(real::FCLOSE, StreamFn, sys::no_such_function(libc::EOF); stream);
    }
    // The descriptor before the stream is gone.
    let fd = stream_fd(stream);
    timed(
        || call_real!(real::FCLOSE, StreamFn, sys::no_such_function(libc::EOF); stream),
        |rc| Call::on(IoOp::Close, fd).failed_if(rc != 0),
    )
}

/// A stdio read or write of `items` items of `size` bytes that moved
/// `done` of them.
///
/// # Safety
/// `stream` is a valid stream.
unsafe fn stdio_moved<'a>(
    op: IoOp,
    stream: *mut File,
    size: usize,
    items: usize,
    done: usize,
) -> Call<'a> {
    Call {
        bytes: done.saturating_mul(size) as u64,
        ..Call::on(op, stream_fd(stream)).failed_if(done < items && stream_error(stream))
    }
}

/// # Safety
/// libc's fread contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_fread(
    buf: *mut c_void,
    size: usize,
    items: usize,
    stream: *mut File,
) -> usize {
    traced(
        || call_real!(real::FREAD, FreadFn, sys::no_such_function(0); buf, size, items, stream),
        |done| stdio_moved(IoOp::Read, stream, size, items, done),
    )
}

/// # Safety
/// glibc's __fread_chk contract (fortified fread).
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_fread_chk(
    buf: *mut c_void,
    room: usize,
    size: usize,
    items: usize,
    stream: *mut File,
) -> usize {
    traced(
        || call_real!(real::FREAD_CHK, FreadChkFn, sys::no_such_function(0); buf, room, size, items, stream),
        |done| stdio_moved(IoOp::Read, stream, size, items, done),
    )
}

/// # Safety
/// libc's fwrite contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_fwrite(
    buf: *const c_void,
    size: usize,
    items: usize,
    stream: *mut File,
) -> usize {
    traced(
        || call_real!(real::FWRITE, FwriteFn, sys::no_such_function(0); buf, size, items, stream),
        |done| stdio_moved(IoOp::Write, stream, size, items, done),
    )
}

/// An fgets into `line` that returned `got` (NULL: nothing read, at the
/// end of the file or after an error).
///
/// # Safety
/// `stream` is a valid stream; `got` is NULL or `line`, a string.
unsafe fn line_read<'a>(stream: *mut File, got: *mut c_char) -> Call<'a> {
    let call = Call::on(IoOp::Read, stream_fd(stream));
    if got.is_null() {
        call.failed_if(stream_error(stream))
    } else {
        Call {
            bytes: libc::strlen(got) as u64,
            ..call
        }
    }
}

/// # Safety
/// libc's fgets contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_fgets(
    line: *mut c_char,
    size: c_int,
    stream: *mut File,
) -> *mut c_char {
    traced(
        || call_real!(real::FGETS, FgetsFn, sys::no_such_function(std::ptr::null_mut()); line, size, stream),
        |got| line_read(stream, got),
    )
}

/// # Safety
/// glibc's __fgets_chk contract (fortified fgets).
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_fgets_chk(
    line: *mut c_char,
    room: usize,
    size: c_int,
    stream: *mut File,
) -> *mut c_char {
    traced(
        || call_real!(real::FGETS_CHK, FgetsChkFn, sys::no_such_function(std::ptr::null_mut()); line, room, size, stream),
        |got| line_read(stream, got),
    )
}

/// A getline or getdelim that returned `result` (-1: nothing read).
///
/// # Safety
/// `stream` is a valid stream.
unsafe fn delimited_read<'a>(stream: *mut File, result: isize) -> Call<'a> {
    Call {
        bytes: result.max(0) as u64,
        ..Call::on(IoOp::Read, stream_fd(stream)).failed_if(result < 0 && stream_error(stream))
    }
}

/// # Safety
/// libc's getline contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_getline(
    line: *mut *mut c_char,
    size: *mut usize,
    stream: *mut File,
) -> isize {
    traced(
        || call_real!(real::GETLINE, GetlineFn, sys::no_such_function(-1); line, size, stream),
        |n| delimited_read(stream, n),
    )
}

/// # Safety
/// libc's getdelim contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_getdelim(
    line: *mut *mut c_char,
    size: *mut usize,
    delimiter: c_int,
    stream: *mut File,
) -> isize {
    traced(
        || call_real!(real::GETDELIM, GetdelimFn, sys::no_such_function(-1); line, size, delimiter, stream),
        |n| delimited_read(stream, n),
    )
}

/// # Safety
/// libc's fputs contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_fputs(text: *const c_char, stream: *mut File) -> c_int {
    traced(
        || call_real!(real::FPUTS, FputsFn, sys::no_such_function(libc::EOF); text, stream),
        |rc| {
            let call = Call::on(IoOp::Write, stream_fd(stream)).failed_if(rc < 0);
            if rc < 0 {
                call
            } else {
                Call {
                    bytes: libc::strlen(text) as u64,
                    ..call
                }
            }
        },
    )
}

/// # Safety
/// libc's puts contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_puts(text: *const c_char) -> c_int {
    traced(
        || call_real!(real::PUTS, PutsFn, sys::no_such_function(libc::EOF); text),
        |rc| {
            let call = Call::on(IoOp::Write, stream_fd(stdout)).failed_if(rc < 0);
            if rc < 0 {
                call
            } else {
                // The line and its newline.
                Call {
                    bytes: libc::strlen(text) as u64 + 1,
                    ..call
                }
            }
        },
    )
}

/// # Safety
/// libc's fflush contract (NULL: every stream, descriptor -1).
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_fflush(stream: *mut File) -> c_int {
    traced(
        || call_real!(real::FFLUSH, StreamFn, sys::no_such_function(libc::EOF); stream),
        |rc| Call::on(IoOp::Sync, stream_fd(stream)).failed_if(rc != 0),
    )
}

/// # Safety
/// libc's fseek contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_fseek(
    stream: *mut File,
    offset: c_long,
    whence: c_int,
) -> c_int {
    traced(
        || call_real!(real::FSEEK, FseekFn, sys::no_such_function(-1); stream, offset, whence),
        |rc| Call::on(IoOp::Seek, stream_fd(stream)).failed_if(rc != 0),
    )
}

/// # Safety
/// libc's fseeko contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_fseeko(
    stream: *mut File,
    offset: libc::off_t,
    whence: c_int,
) -> c_int {
    traced(
        || call_real!(real::FSEEKO, FseekoFn, sys::no_such_function(-1); stream, offset, whence),
        |rc| Call::on(IoOp::Seek, stream_fd(stream)).failed_if(rc != 0),
    )
}

/// # Safety
/// libc's fseeko64 contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_fseeko64(
    stream: *mut File,
    offset: libc::off_t,
    whence: c_int,
) -> c_int {
    traced(
        || call_real!(real::FSEEKO64, FseekoFn, sys::no_such_function(-1); stream, offset, whence),
        |rc| Call::on(IoOp::Seek, stream_fd(stream)).failed_if(rc != 0),
    )
}

// ---- the exported entry points -----------------------------------------
// What the program's calls reach when the collector is preloaded (an
// attached collector patches GOT entries with the hooks instead).

interposed! {
    open(path: *const c_char, flags: c_int, mode: c_uint) -> c_int =
        hook_open, Some(&real::OPEN);
    open64(path: *const c_char, flags: c_int, mode: c_uint) -> c_int =
        hook_open64, Some(&real::OPEN64);
    __open_2(path: *const c_char, flags: c_int) -> c_int = hook_open_2, Some(&real::OPEN_2);
    __open64_2(path: *const c_char, flags: c_int) -> c_int =
        hook_open64_2, Some(&real::OPEN64_2);
    openat(dir: c_int, path: *const c_char, flags: c_int, mode: c_uint) -> c_int =
        hook_openat, Some(&real::OPENAT);
    openat64(dir: c_int, path: *const c_char, flags: c_int, mode: c_uint) -> c_int =
        hook_openat64, Some(&real::OPENAT64);
    __openat_2(dir: c_int, path: *const c_char, flags: c_int) -> c_int =
        hook_openat_2, Some(&real::OPENAT_2);
    __openat64_2(dir: c_int, path: *const c_char, flags: c_int) -> c_int =
        hook_openat64_2, Some(&real::OPENAT64_2);
    creat(path: *const c_char, mode: libc::mode_t) -> c_int = hook_creat, Some(&real::CREAT);
    creat64(path: *const c_char, mode: libc::mode_t) -> c_int =
        hook_creat64, Some(&real::CREAT64);
    close(fd: c_int) -> c_int = hook_close, Some(&real::CLOSE);
    read(fd: c_int, buf: *mut c_void, count: usize) -> isize = hook_read, Some(&real::READ);
    __read_chk(fd: c_int, buf: *mut c_void, count: usize, size: usize) -> isize =
        hook_read_chk, Some(&real::READ_CHK);
    write(fd: c_int, buf: *const c_void, count: usize) -> isize = hook_write, Some(&real::WRITE);
    pread(fd: c_int, buf: *mut c_void, count: usize, offset: libc::off_t) -> isize =
        hook_pread, Some(&real::PREAD);
    pread64(fd: c_int, buf: *mut c_void, count: usize, offset: libc::off_t) -> isize =
        hook_pread64, Some(&real::PREAD64);
    __pread_chk(fd: c_int, buf: *mut c_void, count: usize, offset: libc::off_t,
                size: usize) -> isize = hook_pread_chk, Some(&real::PREAD_CHK);
    __pread64_chk(fd: c_int, buf: *mut c_void, count: usize, offset: libc::off_t,
                  size: usize) -> isize = hook_pread64_chk, Some(&real::PREAD64_CHK);
    pwrite(fd: c_int, buf: *const c_void, count: usize, offset: libc::off_t) -> isize =
        hook_pwrite, Some(&real::PWRITE);
    pwrite64(fd: c_int, buf: *const c_void, count: usize, offset: libc::off_t) -> isize =
        hook_pwrite64, Some(&real::PWRITE64);
    readv(fd: c_int, iov: *const libc::iovec, count: c_int) -> isize =
        hook_readv, Some(&real::READV);
    writev(fd: c_int, iov: *const libc::iovec, count: c_int) -> isize =
        hook_writev, Some(&real::WRITEV);
    preadv(fd: c_int, iov: *const libc::iovec, count: c_int, offset: libc::off_t) -> isize =
        hook_preadv, Some(&real::PREADV);
    preadv64(fd: c_int, iov: *const libc::iovec, count: c_int, offset: libc::off_t) -> isize =
        hook_preadv64, Some(&real::PREADV64);
    pwritev(fd: c_int, iov: *const libc::iovec, count: c_int, offset: libc::off_t) -> isize =
        hook_pwritev, Some(&real::PWRITEV);
    pwritev64(fd: c_int, iov: *const libc::iovec, count: c_int, offset: libc::off_t) -> isize =
        hook_pwritev64, Some(&real::PWRITEV64);
    lseek(fd: c_int, offset: libc::off_t, whence: c_int) -> libc::off_t =
        hook_lseek, Some(&real::LSEEK);
    lseek64(fd: c_int, offset: libc::off_t, whence: c_int) -> libc::off_t =
        hook_lseek64, Some(&real::LSEEK64);
    fsync(fd: c_int) -> c_int = hook_fsync, Some(&real::FSYNC);
    fdatasync(fd: c_int) -> c_int = hook_fdatasync, Some(&real::FDATASYNC);
    dup(old: c_int) -> c_int = hook_dup, Some(&real::DUP);
    dup2(old: c_int, new: c_int) -> c_int = hook_dup2, Some(&real::DUP2);
    dup3(old: c_int, new: c_int, flags: c_int) -> c_int = hook_dup3, Some(&real::DUP3);
    sendfile(to: c_int, from: c_int, offset: *mut libc::off_t, count: usize) -> isize =
        hook_sendfile, Some(&real::SENDFILE);
    sendfile64(to: c_int, from: c_int, offset: *mut libc::off_t, count: usize) -> isize =
        hook_sendfile64, Some(&real::SENDFILE64);
    copy_file_range(from: c_int, from_offset: *mut libc::off_t, to: c_int,
                    to_offset: *mut libc::off_t, count: usize, flags: c_uint) -> isize =
        hook_copy_file_range, Some(&real::COPY_FILE_RANGE);
    fopen(path: *const c_char, mode: *const c_char) -> *mut File =
        hook_fopen, Some(&real::FOPEN);
    fopen64(path: *const c_char, mode: *const c_char) -> *mut File =
        hook_fopen64, Some(&real::FOPEN64);
    fdopen(fd: c_int, mode: *const c_char) -> *mut File = hook_fdopen, Some(&real::FDOPEN);
    freopen(path: *const c_char, mode: *const c_char, stream: *mut File) -> *mut File =
        hook_freopen, Some(&real::FREOPEN);
    freopen64(path: *const c_char, mode: *const c_char, stream: *mut File) -> *mut File =
        hook_freopen64, Some(&real::FREOPEN64);
    fclose(stream: *mut File) -> c_int = hook_fclose, Some(&real::FCLOSE);
    fread(buf: *mut c_void, size: usize, items: usize, stream: *mut File) -> usize =
        hook_fread, Some(&real::FREAD);
    __fread_chk(buf: *mut c_void, room: usize, size: usize, items: usize,
                stream: *mut File) -> usize = hook_fread_chk, Some(&real::FREAD_CHK);
    fwrite(buf: *const c_void, size: usize, items: usize, stream: *mut File) -> usize =
        hook_fwrite, Some(&real::FWRITE);
    fgets(line: *mut c_char, size: c_int, stream: *mut File) -> *mut c_char =
        hook_fgets, Some(&real::FGETS);
    __fgets_chk(line: *mut c_char, room: usize, size: c_int, stream: *mut File) -> *mut c_char =
        hook_fgets_chk, Some(&real::FGETS_CHK);
    getline(line: *mut *mut c_char, size: *mut usize, stream: *mut File) -> isize =
        hook_getline, Some(&real::GETLINE);
    getdelim(line: *mut *mut c_char, size: *mut usize, delimiter: c_int,
             stream: *mut File) -> isize = hook_getdelim, Some(&real::GETDELIM);
    fputs(text: *const c_char, stream: *mut File) -> c_int = hook_fputs, Some(&real::FPUTS);
    puts(text: *const c_char) -> c_int = hook_puts, Some(&real::PUTS);
    fflush(stream: *mut File) -> c_int = hook_fflush, Some(&real::FFLUSH);
    fseek(stream: *mut File, offset: c_long, whence: c_int) -> c_int =
        hook_fseek, Some(&real::FSEEK);
    fseeko(stream: *mut File, offset: libc::off_t, whence: c_int) -> c_int =
        hook_fseeko, Some(&real::FSEEKO);
    fseeko64(stream: *mut File, offset: libc::off_t, whence: c_int) -> c_int =
        hook_fseeko64, Some(&real::FSEEKO64);
}
