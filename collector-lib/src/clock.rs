//! The per-thread profiling clock: what signals a thread after it has
//! used `interval` of CPU time.
//!
//! Preferred: a perf_event software `cpu-clock` event per thread, which
//! the kernel drives from a high-resolution timer, so 1 ms means 1 ms.
//! Its overflow reaches the thread one of two ways:
//! - `sigtrap` (Linux 5.13+): the kernel queues task work on the overflow
//!   and sends SIGTRAP (si_code TRAP_PERF, si_perf_data = our tag) on the
//!   thread's way back to user mode. Used when nobody traces the process
//!   (a debugger would stop at every such SIGTRAP).
//! - fasync: F_SETSIG SIGPROF to the thread (si_code POLL_IN, si_fd). The
//!   kernel raises an irq_work (a self-IPI) per overflow to send it; on a
//!   VM that interrupt costs about 15 µs per event, half of the event's
//!   price (bench/RESULTS.md, "why hi costs what it costs").
//!
//! Fallback (perf_event_open refused): a POSIX timer on the thread's CPU
//! clock, which the kernel only checks at its scheduler tick (4 ms at
//! HZ=250): finer requests are rounded up to the tick, with a warning.
//! Either way an event's weight is the CPU time the thread really used
//! since its previous event, so fewer ticks never mean less time.

use std::sync::atomic::{AtomicI32, AtomicU64, AtomicU8, AtomicUsize, Ordering};

/// si_value tag of our POSIX per-thread profile timers, and the sig_data
/// (si_perf_data) of our `sigtrap` perf events.
pub const PROFILE_TAG: usize = 0x5244_4258_5052_4f46; // "RDBXPROF"

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClockKind {
    PerfEvent,
    PosixTimer,
}

impl ClockKind {
    pub fn name(self) -> &'static str {
        match self {
            ClockKind::PerfEvent => "perf-event",
            ClockKind::PosixTimer => "posix-timer",
        }
    }
}

/// Which kind new threads get (decided once per experiment).
static KIND: AtomicU8 = AtomicU8::new(0);
const KIND_PERF: u8 = 1;
const KIND_POSIX: u8 = 2;
/// A perf event that signals with `sigtrap` (SIGTRAP) instead of fasync.
const KIND_PERF_TRAP: u8 = 3;
/// Profiling interval in ns.
static INTERVAL_NS: AtomicU64 = AtomicU64::new(10_000_000);

/// Bitmap of descriptors that are our perf events: the handler tells our
/// SIGPROF (si_code POLL_IN, si_fd) from anybody else's with it.
const MAX_FD: usize = 65536;
static PERF_FDS: [AtomicU64; MAX_FD / 64] = [const { AtomicU64::new(0) }; MAX_FD / 64];

fn mark_fd(fd: i32, ours: bool) {
    let Ok(fd) = usize::try_from(fd) else { return };
    if let Some(word) = PERF_FDS.get(fd / 64) {
        let bit = 1u64 << (fd % 64);
        if ours {
            word.fetch_or(bit, Ordering::Release);
        } else {
            word.fetch_and(!bit, Ordering::Release);
        }
    }
}

/// Whether `fd` is one of our perf events. Async-signal-safe.
pub fn is_our_perf_fd(fd: i32) -> bool {
    let Ok(fd) = usize::try_from(fd) else {
        return false;
    };
    PERF_FDS
        .get(fd / 64)
        .is_some_and(|w| w.load(Ordering::Acquire) & (1u64 << (fd % 64)) != 0)
}

/// Chooses the clock for a new experiment. `allow_trap`: the perf event
/// may signal with SIGTRAP (nobody traces the process). Returns the kind
/// and, when the interval had to be rounded, the interval really used.
pub fn choose(interval_ns: u64, allow_trap: bool) -> (ClockKind, Option<u64>) {
    INTERVAL_NS.store(interval_ns, Ordering::Relaxed);
    let tid = crate::sys::gettid();
    for (delivery, kind) in [
        (Delivery::Trap, KIND_PERF_TRAP),
        (Delivery::Fasync, KIND_PERF),
    ] {
        if delivery == Delivery::Trap && !allow_trap {
            continue;
        }
        if let Some(fd) = open_perf(tid, interval_ns, delivery) {
            crate::sys::close_raw(fd);
            KIND.store(kind, Ordering::Relaxed);
            return (ClockKind::PerfEvent, None);
        }
    }
    KIND.store(KIND_POSIX, Ordering::Relaxed);
    let tick = kernel_tick_ns();
    if interval_ns < tick {
        INTERVAL_NS.store(tick, Ordering::Relaxed);
        return (ClockKind::PosixTimer, Some(tick));
    }
    (ClockKind::PosixTimer, None)
}

pub fn interval_ns() -> u64 {
    INTERVAL_NS.load(Ordering::Relaxed)
}

/// Whether this experiment's perf events signal with SIGTRAP (so the
/// collector must handle SIGTRAP as well as SIGPROF).
pub fn uses_sigtrap() -> bool {
    KIND.load(Ordering::Relaxed) == KIND_PERF_TRAP
}

/// The scheduler tick: the resolution of the coarse monotonic clock.
fn kernel_tick_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid out-pointer.
    let rc = unsafe { libc::clock_getres(libc::CLOCK_MONOTONIC_COARSE, &mut ts) };
    if rc == 0 {
        crate::sys::timespec_ns(&ts).max(1)
    } else {
        4_000_000
    }
}

/// One thread's clock: a perf event descriptor or a POSIX timer id.
pub struct ClockSource {
    perf_fd: AtomicI32,
    timer: AtomicUsize,
    has_timer: AtomicU8,
    /// Signals seen since the clock was armed (see `top_up`).
    signals: AtomicU64,
}

impl ClockSource {
    pub const fn new() -> ClockSource {
        ClockSource {
            perf_fd: AtomicI32::new(-1),
            timer: AtomicUsize::new(0),
            has_timer: AtomicU8::new(0),
            signals: AtomicU64::new(0),
        }
    }

    /// Starts signalling `tid` every interval of its CPU time.
    pub fn arm(&self, tid: i32) -> bool {
        self.disarm();
        self.signals.store(0, Ordering::Relaxed);
        let interval = interval_ns();
        let kind = KIND.load(Ordering::Relaxed);
        if kind == KIND_PERF_TRAP {
            if let Some(fd) = open_perf(tid, interval, Delivery::Trap) {
                mark_fd(fd, true);
                self.perf_fd.store(fd, Ordering::Release);
                // SAFETY: our perf descriptor. No overflow limit: a sigtrap
                // event signals on every overflow without a refresh.
                unsafe { libc::ioctl(fd, PERF_EVENT_IOC_ENABLE, 0) };
                return true;
            }
        }
        // The fasync event is also the fallback of a trap event refused
        // for one thread: SIGPROF is always handled.
        if kind == KIND_PERF || kind == KIND_PERF_TRAP {
            if let Some(fd) = open_perf(tid, interval, Delivery::Fasync) {
                if route_perf_signal(fd, tid) {
                    mark_fd(fd, true);
                    self.perf_fd.store(fd, Ordering::Release);
                    // SAFETY: our perf descriptor. REFRESH enables the
                    // event for that many overflows, each signalled.
                    unsafe { libc::ioctl(fd, PERF_EVENT_IOC_REFRESH, 1 << 30) };
                    return true;
                }
                crate::sys::close_raw(fd);
            }
        }
        self.arm_posix(tid, interval)
    }

    fn arm_posix(&self, tid: i32, interval: u64) -> bool {
        // SAFETY: sigevent is plain data; we fill the fields the kernel
        // reads for SIGEV_THREAD_ID.
        let mut event: libc::sigevent = unsafe { std::mem::zeroed() };
        event.sigev_notify = libc::SIGEV_THREAD_ID;
        event.sigev_signo = libc::SIGPROF;
        event.sigev_value = libc::sigval {
            sival_ptr: PROFILE_TAG as *mut libc::c_void,
        };
        event.sigev_notify_thread_id = tid;
        let mut timer: libc::timer_t = std::ptr::null_mut();
        // SAFETY: valid pointers.
        if unsafe { libc::timer_create(crate::sys::thread_cpu_clock(tid), &mut event, &mut timer) }
            != 0
        {
            return false;
        }
        let period = timespec(interval);
        let spec = libc::itimerspec {
            it_interval: period,
            it_value: period,
        };
        // SAFETY: timer was just created.
        if unsafe { libc::timer_settime(timer, 0, &spec, std::ptr::null_mut()) } != 0 {
            // SAFETY: ours.
            unsafe { libc::timer_delete(timer) };
            return false;
        }
        self.timer.store(timer as usize, Ordering::Release);
        self.has_timer.store(1, Ordering::Release);
        true
    }

    /// Stops the clock. Safe to call when not armed.
    pub fn disarm(&self) {
        let fd = self.perf_fd.swap(-1, Ordering::AcqRel);
        if fd >= 0 {
            mark_fd(fd, false);
            crate::sys::close_raw(fd);
        }
        if self.has_timer.swap(0, Ordering::AcqRel) == 1 {
            let timer = self.timer.load(Ordering::Acquire) as libc::timer_t;
            // SAFETY: a timer we created.
            unsafe { libc::timer_delete(timer) };
        }
    }

    /// In a fork child: POSIX timers are not inherited (forget the id);
    /// perf descriptors are, but they count the parent's threads: close.
    pub fn forget_after_fork(&self) {
        let fd = self.perf_fd.swap(-1, Ordering::AcqRel);
        if fd >= 0 {
            mark_fd(fd, false);
            // The child's copy of the descriptor.
            crate::sys::close_raw(fd);
        }
        self.has_timer.store(0, Ordering::Release);
    }

    /// Called on each of this clock's signals: keeps a fasync perf event
    /// signalling forever (each overflow uses one unit of the REFRESH
    /// budget; a sigtrap event has none, and the refresh is harmless). The
    /// count is the thread's own, so no cache line is shared between
    /// threads. Async-signal-safe (one ioctl, once in 2^29 events).
    pub fn top_up(&self) {
        let seen = self.signals.fetch_add(1, Ordering::Relaxed) + 1;
        if seen.is_multiple_of(1 << 29) {
            let fd = self.perf_fd.load(Ordering::Acquire);
            if fd >= 0 {
                // SAFETY: ours.
                unsafe { libc::ioctl(fd, PERF_EVENT_IOC_REFRESH, 1 << 30) };
            }
        }
    }
}

impl Default for ClockSource {
    fn default() -> Self {
        Self::new()
    }
}

pub fn timespec(ns: u64) -> libc::timespec {
    libc::timespec {
        tv_sec: (ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (ns % 1_000_000_000) as libc::c_long,
    }
}

pub(crate) const PERF_EVENT_IOC_ENABLE: libc::c_ulong = 0x2400;
pub(crate) const PERF_EVENT_IOC_REFRESH: libc::c_ulong = 0x2402;
const PERF_TYPE_SOFTWARE: u32 = 1;
const PERF_COUNT_SW_CPU_CLOCK: u64 = 0;
const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 8;

/// `struct perf_event_attr` up to `sig_data` (PERF_ATTR_SIZE_VER7, 128
/// bytes), written by hand because only a few fields are set and the
/// layout is ABI-stable; the rest stay zero. A kernel older than the
/// struct refuses it (E2BIG) only when a field it does not know is
/// non-zero: `sig_data` for a trap event, which it could not honour.
#[repr(C)]
struct PerfEventAttr {
    kind: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    config1: u64,
    config2: u64,
    branch_sample_type: u64,
    sample_regs_user: u64,
    sample_stack_user: u32,
    clockid: i32,
    sample_regs_intr: u64,
    aux_watermark: u32,
    sample_max_stack: u16,
    reserved_2: u16,
    aux_sample_size: u32,
    reserved_3: u32,
    sig_data: u64,
}

const _: () = assert!(std::mem::size_of::<PerfEventAttr>() == 128);

pub(crate) const ATTR_DISABLED: u64 = 1 << 0;
pub(crate) const ATTR_EXCLUDE_KERNEL: u64 = 1 << 5;
pub(crate) const ATTR_EXCLUDE_HV: u64 = 1 << 6;
pub(crate) const ATTR_REMOVE_ON_EXEC: u64 = 1 << 36;
pub(crate) const ATTR_SIGTRAP: u64 = 1 << 37;

/// How an overflow reaches the thread (see the module comment).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Delivery {
    Trap,
    Fasync,
}

fn open_perf(tid: i32, interval_ns: u64, delivery: Delivery) -> Option<i32> {
    // sigtrap needs remove_on_exec (the kernel insists): the event goes
    // away with the image whose handler knows its signal.
    let (trap_flags, sig_data) = match delivery {
        Delivery::Trap => (ATTR_SIGTRAP | ATTR_REMOVE_ON_EXEC, PROFILE_TAG as u64),
        Delivery::Fasync => (0, 0),
    };
    // exclude_kernel: no overflow (so no signal) while the thread is in
    // the kernel. Unprivileged users need it (perf_event_paranoid 2),
    // and it keeps a signal from being queued during execve, where it
    // would outlive our handler and kill the new image (its SIGPROF
    // disposition is back to the default). Kernel time still counts:
    // an event's weight is the thread's CPU time, user and system.
    open_software_event(
        tid,
        SoftwareEvent {
            config: PERF_COUNT_SW_CPU_CLOCK,
            sample_period: interval_ns.max(10_000),
            flags: ATTR_DISABLED | ATTR_EXCLUDE_KERNEL | ATTR_EXCLUDE_HV | trap_flags,
            sig_data,
        },
    )
    .ok()
}

/// What differs between the collector's software perf events.
pub(crate) struct SoftwareEvent {
    pub config: u64,
    pub sample_period: u64,
    /// The attr's bit flags (`ATTR_*`).
    pub flags: u64,
    pub sig_data: u64,
}

/// Opens a software perf event counting thread `tid` on any CPU; the
/// descriptor, or the errno of the refusal.
pub(crate) fn open_software_event(tid: i32, event: SoftwareEvent) -> Result<i32, i32> {
    let attr = PerfEventAttr {
        kind: PERF_TYPE_SOFTWARE,
        size: std::mem::size_of::<PerfEventAttr>() as u32,
        config: event.config,
        sample_period: event.sample_period,
        sample_type: 0,
        read_format: 0,
        flags: event.flags,
        wakeup_events: 1,
        bp_type: 0,
        config1: 0,
        config2: 0,
        branch_sample_type: 0,
        sample_regs_user: 0,
        sample_stack_user: 0,
        clockid: 0,
        sample_regs_intr: 0,
        aux_watermark: 0,
        sample_max_stack: 0,
        reserved_2: 0,
        aux_sample_size: 0,
        reserved_3: 0,
        sig_data: event.sig_data,
    };
    // SAFETY: attr is a valid perf_event_attr prefix of the size we give.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            &attr as *const PerfEventAttr,
            tid,
            -1i32,
            -1i32,
            PERF_FLAG_FD_CLOEXEC,
        )
    };
    if fd >= 0 {
        Ok(fd as i32)
    } else {
        Err(crate::sys::errno())
    }
}

/// `struct f_owner_ex` and the fcntl commands the libc crate lacks
/// (linux/fcntl.h values).
#[repr(C)]
struct OwnerEx {
    kind: libc::c_int,
    pid: libc::pid_t,
}
const F_OWNER_TID: libc::c_int = 0;
const F_SETSIG: libc::c_int = 10;
const F_SETOWN_EX: libc::c_int = 15;

/// Overflow of `fd` sends SIGPROF (si_code POLL_IN, si_fd = fd) to `tid`.
fn route_perf_signal(fd: i32, tid: i32) -> bool {
    let owner = OwnerEx {
        kind: F_OWNER_TID,
        pid: tid,
    };
    // SAFETY: fcntl on our descriptor with valid arguments.
    unsafe {
        libc::fcntl(fd, libc::F_SETFL, libc::O_ASYNC) == 0
            && libc::fcntl(fd, F_SETSIG, libc::SIGPROF) == 0
            && libc::fcntl(fd, F_SETOWN_EX, &owner as *const OwnerEx) == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU32;

    static OUR_TRAPS: AtomicU32 = AtomicU32::new(0);

    extern "C" fn count_our_traps(
        _: libc::c_int,
        info: *mut libc::siginfo_t,
        _: *mut libc::c_void,
    ) {
        // SAFETY: the kernel passes a valid siginfo; si_perf_data is the
        // u64 at offset 24 of a TRAP_PERF one.
        let (code, data) = unsafe {
            let data = std::ptr::read_unaligned(info.cast::<u8>().add(24).cast::<u64>());
            ((*info).si_code, data)
        };
        if code == 6 && data == PROFILE_TAG as u64 {
            OUR_TRAPS.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// An untraced thread's sigtrap clock sends SIGTRAP (TRAP_PERF, our
    /// tag) about once per millisecond of its CPU time, with no refresh.
    #[test]
    fn sigtrap_clock_ticks_every_interval() {
        let (kind, _) = choose(1_000_000, true);
        if kind == ClockKind::PosixTimer {
            eprintln!("perf_event_open refused here: nothing to test");
            return;
        }
        assert!(uses_sigtrap(), "Linux 5.13+ has sigtrap perf events");
        // SAFETY: a plain SA_SIGINFO handler for SIGTRAP in this test binary.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = count_our_traps as *const () as usize;
            action.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
            libc::sigaction(libc::SIGTRAP, &action, std::ptr::null_mut());
        }
        let ticks = std::thread::spawn(|| {
            let clock = ClockSource::new();
            assert!(clock.arm(crate::sys::gettid()));
            let start = crate::sys::thread_cpu_ns();
            let mut x = 0u64;
            while crate::sys::thread_cpu_ns() - start < 60_000_000 {
                for i in 0..10_000u64 {
                    x = x.wrapping_add(i * i);
                }
                std::hint::black_box(x);
            }
            clock.disarm();
            OUR_TRAPS.load(Ordering::Relaxed)
        })
        .join()
        .unwrap();
        // 60 ms of CPU at 1 ms: allow for time spent in the kernel (not
        // counted with exclude_kernel) and a loaded machine.
        assert!((30..=70).contains(&ticks), "{ticks} ticks in 60 ms of CPU");
    }
}
