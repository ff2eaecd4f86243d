//! The libc functions we interpose, resolved once with dlsym(RTLD_NEXT).
//!
//! libcollector.so is preloaded, so its exported `sigaction`, `fork`, ...
//! win symbol lookup for the whole program, including calls made from
//! inside this library. Every call to the real function therefore goes
//! through these pointers. They are resolved in the library constructor;
//! `resolve` is also called lazily in case another preloaded library calls
//! an interposed function before our constructor ran.

use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::atomic::{AtomicUsize, Ordering};

pub type SigactionFn =
    unsafe extern "C" fn(c_int, *const libc::sigaction, *mut libc::sigaction) -> c_int;
pub type SigmaskFn =
    unsafe extern "C" fn(c_int, *const libc::sigset_t, *mut libc::sigset_t) -> c_int;
pub type StartRoutine = extern "C" fn(*mut c_void) -> *mut c_void;
pub type PthreadCreateFn = unsafe extern "C" fn(
    *mut libc::pthread_t,
    *const libc::pthread_attr_t,
    StartRoutine,
    *mut c_void,
) -> c_int;
pub type ForkFn = unsafe extern "C" fn() -> libc::pid_t;
pub type DlopenFn = unsafe extern "C" fn(*const c_char, c_int) -> *mut c_void;
pub type DlcloseFn = unsafe extern "C" fn(*mut c_void) -> c_int;

/// One lazily resolved function pointer.
pub struct Real {
    name: &'static CStr,
    address: AtomicUsize,
}

impl Real {
    pub(crate) const fn new(name: &'static CStr) -> Real {
        Real {
            name,
            address: AtomicUsize::new(0),
        }
    }

    pub fn name(&self) -> &'static CStr {
        self.name
    }

    /// The address if resolved already (0 if not): for callers that must not
    /// call dlsym, which may call malloc.
    pub fn resolved(&self) -> usize {
        self.address.load(Ordering::Acquire)
    }

    /// Sets the real function: in a process the collector was loaded into
    /// while running, what the program's own calls reached.
    pub fn set(&self, address: usize) {
        self.address.store(address, Ordering::Release);
    }

    /// The real function's address, or 0 when libc has none.
    pub fn address(&self) -> usize {
        let known = self.address.load(Ordering::Acquire);
        if known != 0 {
            return known;
        }
        // SAFETY: name is NUL-terminated; RTLD_NEXT finds the definition
        // after this library in the lookup order.
        let found = unsafe { libc::dlsym(libc::RTLD_NEXT, self.name.as_ptr()) } as usize;
        self.address.store(found, Ordering::Release);
        found
    }
}

pub static SIGACTION: Real = Real::new(c"sigaction");
pub static SIGPROCMASK: Real = Real::new(c"sigprocmask");
pub static PTHREAD_SIGMASK: Real = Real::new(c"pthread_sigmask");
pub static PTHREAD_CREATE: Real = Real::new(c"pthread_create");
pub static FORK: Real = Real::new(c"fork");
pub static DLOPEN: Real = Real::new(c"dlopen");
pub static DLCLOSE: Real = Real::new(c"dlclose");

pub static EXECVE: Real = Real::new(c"execve");
pub static EXECV: Real = Real::new(c"execv");
pub static EXECVP: Real = Real::new(c"execvp");
pub static EXECVPE: Real = Real::new(c"execvpe");
pub static FEXECVE: Real = Real::new(c"fexecve");
pub static EXECVEAT: Real = Real::new(c"execveat");

/// The exec family (exec.rs): resolved at load, since an exec may come in
/// a fork child, where dlsym could deadlock.
pub const EXEC: [&Real; 6] = [&EXECVE, &EXECV, &EXECVP, &EXECVPE, &FEXECVE, &EXECVEAT];

pub static MALLOC: Real = Real::new(c"malloc");
pub static FREE: Real = Real::new(c"free");
pub static CALLOC: Real = Real::new(c"calloc");
pub static REALLOC: Real = Real::new(c"realloc");
pub static REALLOCARRAY: Real = Real::new(c"reallocarray");
pub static MEMALIGN: Real = Real::new(c"memalign");
pub static POSIX_MEMALIGN: Real = Real::new(c"posix_memalign");
pub static ALIGNED_ALLOC: Real = Real::new(c"aligned_alloc");
pub static VALLOC: Real = Real::new(c"valloc");
pub static PVALLOC: Real = Real::new(c"pvalloc");

/// The allocator's functions, resolved before heap tracing can start.
pub const ALLOCATOR: [&Real; 10] = [
    &MALLOC,
    &FREE,
    &CALLOC,
    &REALLOC,
    &REALLOCARRAY,
    &MEMALIGN,
    &POSIX_MEMALIGN,
    &ALIGNED_ALLOC,
    &VALLOC,
    &PVALLOC,
];

pub static PTHREAD_MUTEX_LOCK: Real = Real::new(c"pthread_mutex_lock");
pub static PTHREAD_MUTEX_TIMEDLOCK: Real = Real::new(c"pthread_mutex_timedlock");
pub static PTHREAD_MUTEX_CLOCKLOCK: Real = Real::new(c"pthread_mutex_clocklock");
pub static PTHREAD_COND_WAIT: Real = Real::new(c"pthread_cond_wait");
pub static PTHREAD_COND_TIMEDWAIT: Real = Real::new(c"pthread_cond_timedwait");
pub static PTHREAD_COND_CLOCKWAIT: Real = Real::new(c"pthread_cond_clockwait");
pub static PTHREAD_RWLOCK_RDLOCK: Real = Real::new(c"pthread_rwlock_rdlock");
pub static PTHREAD_RWLOCK_WRLOCK: Real = Real::new(c"pthread_rwlock_wrlock");
pub static PTHREAD_RWLOCK_TIMEDRDLOCK: Real = Real::new(c"pthread_rwlock_timedrdlock");
pub static PTHREAD_RWLOCK_TIMEDWRLOCK: Real = Real::new(c"pthread_rwlock_timedwrlock");
pub static PTHREAD_RWLOCK_CLOCKRDLOCK: Real = Real::new(c"pthread_rwlock_clockrdlock");
pub static PTHREAD_RWLOCK_CLOCKWRLOCK: Real = Real::new(c"pthread_rwlock_clockwrlock");
pub static SEM_WAIT: Real = Real::new(c"sem_wait");
pub static SEM_TIMEDWAIT: Real = Real::new(c"sem_timedwait");
pub static SEM_CLOCKWAIT: Real = Real::new(c"sem_clockwait");
pub static PTHREAD_JOIN: Real = Real::new(c"pthread_join");
pub static PTHREAD_BARRIER_WAIT: Real = Real::new(c"pthread_barrier_wait");

/// The pthread wait family (sync tracing's hooks forward to these).
pub const SYNC: [&Real; 17] = [
    &PTHREAD_MUTEX_LOCK,
    &PTHREAD_MUTEX_TIMEDLOCK,
    &PTHREAD_MUTEX_CLOCKLOCK,
    &PTHREAD_COND_WAIT,
    &PTHREAD_COND_TIMEDWAIT,
    &PTHREAD_COND_CLOCKWAIT,
    &PTHREAD_RWLOCK_RDLOCK,
    &PTHREAD_RWLOCK_WRLOCK,
    &PTHREAD_RWLOCK_TIMEDRDLOCK,
    &PTHREAD_RWLOCK_TIMEDWRLOCK,
    &PTHREAD_RWLOCK_CLOCKRDLOCK,
    &PTHREAD_RWLOCK_CLOCKWRLOCK,
    &SEM_WAIT,
    &SEM_TIMEDWAIT,
    &SEM_CLOCKWAIT,
    &PTHREAD_JOIN,
    &PTHREAD_BARRIER_WAIT,
];

pub static OPEN: Real = Real::new(c"open");
pub static OPEN64: Real = Real::new(c"open64");
pub static OPENAT: Real = Real::new(c"openat");
pub static OPENAT64: Real = Real::new(c"openat64");
pub static CREAT: Real = Real::new(c"creat");
pub static CREAT64: Real = Real::new(c"creat64");
pub static CLOSE: Real = Real::new(c"close");
pub static READ: Real = Real::new(c"read");
pub static WRITE: Real = Real::new(c"write");
pub static PREAD: Real = Real::new(c"pread");
pub static PREAD64: Real = Real::new(c"pread64");
pub static PWRITE: Real = Real::new(c"pwrite");
pub static PWRITE64: Real = Real::new(c"pwrite64");
pub static READV: Real = Real::new(c"readv");
pub static WRITEV: Real = Real::new(c"writev");
pub static PREADV: Real = Real::new(c"preadv");
pub static PREADV64: Real = Real::new(c"preadv64");
pub static PWRITEV: Real = Real::new(c"pwritev");
pub static PWRITEV64: Real = Real::new(c"pwritev64");
pub static LSEEK: Real = Real::new(c"lseek");
pub static LSEEK64: Real = Real::new(c"lseek64");
pub static FSYNC: Real = Real::new(c"fsync");
pub static FDATASYNC: Real = Real::new(c"fdatasync");
pub static DUP: Real = Real::new(c"dup");
pub static DUP2: Real = Real::new(c"dup2");
pub static DUP3: Real = Real::new(c"dup3");
pub static SENDFILE: Real = Real::new(c"sendfile");
pub static SENDFILE64: Real = Real::new(c"sendfile64");
pub static COPY_FILE_RANGE: Real = Real::new(c"copy_file_range");
pub static FOPEN: Real = Real::new(c"fopen");
pub static FOPEN64: Real = Real::new(c"fopen64");
pub static FDOPEN: Real = Real::new(c"fdopen");
pub static FREOPEN: Real = Real::new(c"freopen");
pub static FREOPEN64: Real = Real::new(c"freopen64");
pub static FCLOSE: Real = Real::new(c"fclose");
pub static FREAD: Real = Real::new(c"fread");
pub static FWRITE: Real = Real::new(c"fwrite");
pub static FGETS: Real = Real::new(c"fgets");
pub static FPUTS: Real = Real::new(c"fputs");
pub static PUTS: Real = Real::new(c"puts");
pub static FFLUSH: Real = Real::new(c"fflush");
pub static FSEEK: Real = Real::new(c"fseek");
pub static FSEEKO: Real = Real::new(c"fseeko");
pub static FSEEKO64: Real = Real::new(c"fseeko64");
pub static GETLINE: Real = Real::new(c"getline");
pub static GETDELIM: Real = Real::new(c"getdelim");
// The fortified forms (-D_FORTIFY_SOURCE, the default of many compilers at
// -O1 and up) the program calls instead when the buffer size is known.
pub static READ_CHK: Real = Real::new(c"__read_chk");
pub static PREAD_CHK: Real = Real::new(c"__pread_chk");
pub static PREAD64_CHK: Real = Real::new(c"__pread64_chk");
pub static FREAD_CHK: Real = Real::new(c"__fread_chk");
pub static FGETS_CHK: Real = Real::new(c"__fgets_chk");
pub static OPEN_2: Real = Real::new(c"__open_2");
pub static OPEN64_2: Real = Real::new(c"__open64_2");
pub static OPENAT_2: Real = Real::new(c"__openat_2");
pub static OPENAT64_2: Real = Real::new(c"__openat64_2");

/// The file I/O functions (I/O tracing's hooks forward to these).
pub const IO: [&Real; 55] = [
    &OPEN,
    &OPEN64,
    &OPENAT,
    &OPENAT64,
    &CREAT,
    &CREAT64,
    &CLOSE,
    &READ,
    &WRITE,
    &PREAD,
    &PREAD64,
    &PWRITE,
    &PWRITE64,
    &READV,
    &WRITEV,
    &PREADV,
    &PREADV64,
    &PWRITEV,
    &PWRITEV64,
    &LSEEK,
    &LSEEK64,
    &FSYNC,
    &FDATASYNC,
    &DUP,
    &DUP2,
    &DUP3,
    &SENDFILE,
    &SENDFILE64,
    &COPY_FILE_RANGE,
    &FOPEN,
    &FOPEN64,
    &FDOPEN,
    &FREOPEN,
    &FREOPEN64,
    &FCLOSE,
    &FREAD,
    &FWRITE,
    &FGETS,
    &FPUTS,
    &PUTS,
    &FFLUSH,
    &FSEEK,
    &FSEEKO,
    &FSEEKO64,
    &GETLINE,
    &GETDELIM,
    &READ_CHK,
    &PREAD_CHK,
    &PREAD64_CHK,
    &FREAD_CHK,
    &FGETS_CHK,
    &OPEN_2,
    &OPEN64_2,
    &OPENAT_2,
    &OPENAT64_2,
];

/// Resolves every pointer now, outside any signal handler.
pub fn resolve_all() {
    for real in [
        &SIGACTION,
        &SIGPROCMASK,
        &PTHREAD_SIGMASK,
        &PTHREAD_CREATE,
        &FORK,
        &DLOPEN,
        &DLCLOSE,
    ]
    .into_iter()
    .chain(ALLOCATOR)
    .chain(SYNC)
    .chain(IO)
    .chain(EXEC)
    {
        real.address();
    }
}

/// The real sigaction. Falls back to the raw system call if libc's cannot
/// be found (it always can on glibc).
pub unsafe fn sigaction(
    signal: c_int,
    act: *const libc::sigaction,
    old: *mut libc::sigaction,
) -> c_int {
    match SIGACTION.address() {
        0 => {
            crate::sys::set_errno(libc::ENOSYS);
            -1
        }
        f => {
            let f: SigactionFn = std::mem::transmute(f);
            f(signal, act, old)
        }
    }
}

pub unsafe fn sigmask(
    real: &Real,
    how: c_int,
    set: *const libc::sigset_t,
    old: *mut libc::sigset_t,
) -> c_int {
    match real.address() {
        0 => libc::ENOSYS,
        f => {
            let f: SigmaskFn = std::mem::transmute(f);
            f(how, set, old)
        }
    }
}

/// Calls the real function `$real` (a [`Real`]) as type `$ty` with the
/// program's arguments; when nothing after the collector defines it,
/// `$missing` is the result instead (the hooks say ENOSYS the way their
/// function reports errors).
macro_rules! call_real {
    ($real:expr, $ty:ty, $missing:expr; $($arg:expr),*) => {
        match $crate::real::Real::address(&$real) {
            0 => $missing,
            // SAFETY: the real function, by its C signature, with the
            // program's arguments.
            f => unsafe { std::mem::transmute::<usize, $ty>(f)($($arg),*) },
        }
    };
}
