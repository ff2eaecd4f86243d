//! Off-CPU profiling: each time a thread is switched off its CPU (it
//! blocks in a system call, sleeps, waits on a futex or for a page, or is
//! preempted), where it was and, once it runs again, how long it was off.
//! Records go to the thread's block of the `offcpu` file (kind 6, see
//! experiment::offcpu).
//!
//! How: a perf_event software `context-switches` event per thread,
//! sample_period 1, with `sigtrap`: the switch out overflows it, the
//! kernel queues task work, and when the thread returns to user mode
//! (after it ran again and its system call finished: the wait is never
//! cut short) it gets SIGTRAP with si_code TRAP_PERF and si_perf_data =
//! [`OFFCPU_TAG`]. The handler's ucontext is where the thread was at the
//! switch. Off-CPU time is the wall time since the thread's previous
//! trap less the CPU time it used since then (both read on entry of the
//! handler, so the handler's own run time cancels out), less the time rdbx
//! held the process stopped meanwhile (the wall time is the run clock of
//! hold.rs): a thread asleep while the user sat at a breakpoint was not
//! waiting for the program.
//!
//! How the event stays armed depends on whether anything traces the
//! process (decided at start, as for the clock's SIGTRAP):
//!
//! - Nobody traces it (`rdbx collect`): the event stays enabled, and the
//!   kernel queues at most one trap at a time (a switch while one is
//!   queued adds nothing: its wait is inside the queued trap's window).
//!   The handler makes no system call for the event itself. (A debugger
//!   that attaches later then stops at a SIGTRAP at every resume: its
//!   stop queues the next trap.)
//! - Under a debugger the event is one-shot: armed with
//!   PERF_EVENT_IOC_REFRESH 1, it disables itself at its overflow, and the
//!   handler arms it again. The delivery of the SIGTRAP is a ptrace stop,
//!   itself a context switch: an event left armed would fire again for
//!   it, forever. A trap is re-armed only when the event overflowed since
//!   it was last armed (its count, read in the handler, moved): a trap the
//!   debugger delivered late, or one that arrives after a recovery, must
//!   not arm the event twice (two overflows in flight would feed each
//!   other through the ptrace stops of their deliveries). One-shot costs
//!   much more per switch: the kernel disables an event from the switch
//!   through an irq_work, a self-interrupt, which in a virtual machine
//!   costs exits to the hypervisor (bench/RESULTS.md, "Off-CPU profiling
//!   cost": about 13 µs a switch there).
//!
//! A trap can be lost: SIGTRAP is a standard signal, so when the clock's
//! trap (same signal) is already pending, the kernel drops ours (a
//! one-shot event would then stay off). The clock's tick checks for it
//! ([`check_lost`]): overflowed since the last trap, and no SIGTRAP
//! pending, means lost; a one-shot event is armed again, and the time
//! since the thread's last record is dropped, not charged to a stack it
//! was not switched out at. Only then, when the clock traps too, does an
//! enabled event's trap read the count (a system call) for that check.
//!
//! Privileges: context switches happen in kernel mode, so the event must
//! count the kernel (exclude_kernel = 0), which perf_event_paranoid 2 (the
//! usual default) refuses to unprivileged users. Then the experiment says
//! so in an `error` line and runs without off-CPU data.

use crate::blocks::WriteError;
use crate::clock::{
    self, SoftwareEvent, ATTR_DISABLED, ATTR_EXCLUDE_HV, ATTR_REMOVE_ON_EXEC, ATTR_SIGTRAP,
    PERF_EVENT_IOC_ENABLE, PERF_EVENT_IOC_REFRESH,
};
use crate::{hold, lifecycle, log, profile, state, sys, threads};
use experiment::offcpu::{OffCpuEvent, OFFCPU_RECORD_SIZE};
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};

/// si_perf_data of our context-switch events ("RDBXOFFC"); the clock's
/// is `clock::PROFILE_TAG`.
pub const OFFCPU_TAG: u64 = 0x5244_4258_4f46_4643;

const PERF_COUNT_SW_CONTEXT_SWITCHES: u64 = 3;

/// Records written, their total off-CPU time, lost traps recovered, and
/// traps that came while the thread's clock handler ran (their time goes
/// to the thread's next record).
static EVENTS: AtomicU64 = AtomicU64::new(0);
static OFF_NS: AtomicU64 = AtomicU64::new(0);
static RECOVERED: AtomicU64 = AtomicU64::new(0);
static DEFERRED: AtomicU64 = AtomicU64::new(0);
static WRITE_FAILURE_TOLD: AtomicBool = AtomicBool::new(false);

/// Whether the events can be opened here: Ok, or why not (for the log).
pub fn check_available() -> Result<(), String> {
    match open_event(sys::gettid()) {
        Ok(fd) => {
            // A raw close: with I/O tracing on, libc's would be ours.
            sys::close_raw(fd);
            Ok(())
        }
        Err(errno) => Err(refusal(errno)),
    }
}

/// What to tell the user when the kernel refuses the event.
fn refusal(errno: i32) -> String {
    let paranoid = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .map(|text| text.trim().to_string())
        .unwrap_or_else(|_| "?".into());
    let why = std::io::Error::from_raw_os_error(errno);
    if errno == libc::EACCES || errno == libc::EPERM {
        format!(
            "off-CPU profiling is off: the kernel refused a context-switch event that counts \
             in kernel mode ({why}; kernel.perf_event_paranoid is {paranoid}). Context switches \
             happen in the kernel, so off-CPU profiling needs root, CAP_PERFMON, or \
             kernel.perf_event_paranoid set to 1 or less (sysctl kernel.perf_event_paranoid=1); \
             the program runs without off-CPU data"
        )
    } else {
        format!(
            "off-CPU profiling is off: the kernel refused a context-switch event with a SIGTRAP \
             signal ({why}; it needs Linux 5.13 or later); the program runs without off-CPU data"
        )
    }
}

fn open_event(tid: i32) -> Result<i32, i32> {
    clock::open_software_event(
        tid,
        SoftwareEvent {
            config: PERF_COUNT_SW_CONTEXT_SWITCHES,
            sample_period: 1,
            // Counting in kernel mode (no ATTR_EXCLUDE_KERNEL): that is
            // where switches happen. sigtrap needs remove_on_exec.
            flags: ATTR_DISABLED | ATTR_EXCLUDE_HV | ATTR_SIGTRAP | ATTR_REMOVE_ON_EXEC,
            sig_data: OFFCPU_TAG,
        },
    )
}

/// Whether the experiment being started records off-CPU events (so
/// SIGTRAP is the collector's to handle).
static WANTED: AtomicBool = AtomicBool::new(false);
/// The events stay enabled (nobody traces the process); else one-shot.
static CONTINUOUS: AtomicBool = AtomicBool::new(false);
/// The clock's ticks are SIGTRAPs too, so a trap of ours can be lost.
static CLOCK_TRAPS: AtomicBool = AtomicBool::new(false);

pub fn wanted() -> bool {
    WANTED.load(Ordering::Acquire)
}

/// How an experiment's context-switch events are armed (see the module
/// comment).
#[derive(Clone, Copy, Debug)]
pub struct Arming {
    /// Nobody traces the process: the events stay enabled.
    pub continuous: bool,
    /// The clock signals with SIGTRAP as well.
    pub clock_traps: bool,
}

fn continuous() -> bool {
    CONTINUOUS.load(Ordering::Relaxed)
}

/// Whether a trap reads its event's count: one-shot events need it to
/// re-arm, enabled ones only for [`check_lost`].
fn traps_read_count() -> bool {
    !continuous() || CLOCK_TRAPS.load(Ordering::Relaxed)
}

/// A new experiment, recording off-CPU events when `wanted`, armed as
/// `arming` says: counters from zero.
pub fn reset(wanted: bool, arming: Arming) {
    WANTED.store(wanted, Ordering::Release);
    CONTINUOUS.store(arming.continuous, Ordering::Relaxed);
    CLOCK_TRAPS.store(arming.clock_traps, Ordering::Relaxed);
    EVENTS.store(0, Ordering::Relaxed);
    OFF_NS.store(0, Ordering::Relaxed);
    RECOVERED.store(0, Ordering::Relaxed);
    DEFERRED.store(0, Ordering::Relaxed);
    WRITE_FAILURE_TOLD.store(false, Ordering::Relaxed);
}

/// One thread's context-switch event and the clocks of its last trap.
pub struct OffCpuSource {
    fd: AtomicI32,
    /// The event's count when it was last armed (one-shot) or at the
    /// last trap (enabled): a trap re-arms only when the count moved since
    /// (it overflowed, so it is off), and a tick finds a lost trap by it.
    armed_count: AtomicU64,
    /// The run clock (hold.rs) and thread CPU time at the previous trap
    /// (or when armed): the next record's window.
    last_run_ns: AtomicU64,
    last_cpu_ns: AtomicU64,
}

impl OffCpuSource {
    pub const fn new() -> OffCpuSource {
        OffCpuSource {
            fd: AtomicI32::new(-1),
            armed_count: AtomicU64::new(0),
            last_run_ns: AtomicU64::new(0),
            last_cpu_ns: AtomicU64::new(0),
        }
    }

    /// Starts watching `tid`'s switches; `cpu_now` is its CPU time now.
    pub fn arm(&self, tid: i32, cpu_now: u64) -> bool {
        self.disarm();
        let Ok(fd) = open_event(tid) else {
            return false;
        };
        self.last_run_ns
            .store(hold::now().run_ns, Ordering::Relaxed);
        self.last_cpu_ns.store(cpu_now, Ordering::Relaxed);
        self.armed_count.store(0, Ordering::Relaxed);
        self.fd.store(fd, Ordering::Release);
        if continuous() {
            // SAFETY: our perf descriptor: enabled with no overflow limit.
            unsafe { libc::ioctl(fd, PERF_EVENT_IOC_ENABLE, 0) };
        } else {
            // SAFETY: our perf descriptor: one overflow, then it disables itself.
            unsafe { libc::ioctl(fd, PERF_EVENT_IOC_REFRESH, 1) };
        }
        true
    }

    /// Whether the thread's switches are watched.
    pub fn is_armed(&self) -> bool {
        self.fd.load(Ordering::Acquire) >= 0
    }

    /// Stops watching. Safe to call when not armed.
    pub fn disarm(&self) {
        let fd = self.fd.swap(-1, Ordering::AcqRel);
        if fd >= 0 {
            // A raw close: with I/O tracing on, libc's would be ours.
            sys::close_raw(fd);
        }
    }

    /// In a fork child: the descriptor counts the parent's thread.
    pub fn forget_after_fork(&self) {
        self.disarm();
    }

    /// The window of the next record starts now (recording resumes);
    /// `run_ns` is the run clock of hold.rs.
    pub fn restart_window(&self, run_ns: u64, cpu_ns: u64) {
        self.last_run_ns.store(run_ns, Ordering::Relaxed);
        self.last_cpu_ns.store(cpu_ns, Ordering::Relaxed);
    }

    fn count(&self, fd: i32) -> Option<u64> {
        // A raw read: with I/O tracing on, libc's would be ours.
        let mut value = [0u8; 8];
        let n = sys::read_raw(fd, &mut value);
        (n == 8).then_some(u64::from_le_bytes(value))
    }

    /// The event's count when it overflowed since it was last armed
    /// (so it is off now), None when it did not. Async-signal-safe.
    fn fired(&self) -> Option<u64> {
        let fd = self.fd.load(Ordering::Acquire);
        if fd < 0 {
            return None;
        }
        let count = self.count(fd)?;
        (count != self.armed_count.load(Ordering::Relaxed)).then_some(count)
    }

    /// The overflows up to `count` (from `fired`) are handled: a one-shot
    /// event is armed again for one more, an enabled one goes on.
    /// Async-signal-safe.
    fn rearm(&self, count: u64) {
        let fd = self.fd.load(Ordering::Acquire);
        if fd < 0 {
            return;
        }
        self.armed_count.store(count, Ordering::Relaxed);
        if !continuous() {
            // SAFETY: our perf descriptor.
            unsafe { libc::ioctl(fd, PERF_EVENT_IOC_REFRESH, 1) };
        }
    }
}

impl Default for OffCpuSource {
    fn default() -> Self {
        Self::new()
    }
}

/// The SIGTRAP of a context-switch event (ours: si_perf_data is
/// OFFCPU_TAG). Async-signal-safe.
pub fn on_trap(context: *mut c_void) {
    let Some(slot) = threads::find(sys::gettid()) else {
        return;
    };
    let now = hold::now();
    let now_cpu = sys::thread_cpu_ns();
    let source = &slot.offcpu;
    let count = if traps_read_count() {
        let Some(count) = source.fired() else {
            // Not an overflow since the event was armed (a trap delivered
            // late by a debugger, after a recovery): the event is armed
            // already, and the time goes to the next record.
            return;
        };
        Some(count)
    } else {
        None
    };
    if slot.in_handler.swap(true, Ordering::AcqRel) {
        // The thread's clock handler was interrupted: it owns the stack
        // buffers. The window stays open for the next record.
        DEFERRED.fetch_add(1, Ordering::Relaxed);
    } else {
        record(slot, context, now, now_cpu);
        crate::profile::deferred_tick(slot, context);
        slot.in_handler.store(false, Ordering::Release);
    }
    // Armed again last: a switch during the handler (a page fault on a
    // new block) is not one of the program's. (An enabled event sees
    // those: their traps come nested, find `in_handler` set, and are
    // deferred.)
    if let Some(count) = count {
        source.rearm(count);
    }
}

fn record(slot: &threads::Slot, context: *mut c_void, moment: hold::Moment, now_cpu: u64) {
    let source = &slot.offcpu;
    let last_run = source.last_run_ns.swap(moment.run_ns, Ordering::Relaxed);
    let last_cpu = source.last_cpu_ns.swap(now_cpu, Ordering::Relaxed);
    if !lifecycle::recording_offcpu() {
        return;
    }
    let off = moment
        .run_ns
        .saturating_sub(last_run)
        .saturating_sub(now_cpu.saturating_sub(last_cpu));
    let now = moment.wall_ns;
    // SAFETY: we are the slot's thread, in its SIGTRAP handler (SIGTRAP
    // and SIGPROF blocked), and the clock handler is not running under
    // us (checked by the caller): nothing else touches `owned`.
    let owned = unsafe { slot.owned() };
    let tid = slot.tid();
    // SAFETY: context is this handler's ucontext.
    let stack_id = match unsafe { profile::record_signal_stack(owned, tid, context, now) } {
        Ok(id) => id,
        Err(err) => return write_failed(err),
    };
    let record = OffCpuEvent {
        end_ns: now,
        off_ns: off,
        stack_id,
    }
    .encode();
    match state::OFFCPU.append(
        &mut owned.offcpu,
        &state::BUDGET,
        tid,
        now,
        OFFCPU_RECORD_SIZE,
        |writer| writer.push_bytes(&record),
    ) {
        Ok(()) => {
            EVENTS.fetch_add(1, Ordering::Relaxed);
            OFF_NS.fetch_add(off, Ordering::Relaxed);
        }
        Err(err) => write_failed(err),
    }
}

/// From the thread's clock handler, when the clock signals with SIGTRAP
/// too: a trap of ours dropped because the clock's was pending is found
/// here (the event fired, nothing is pending) and the event armed again.
/// Async-signal-safe: one read, and sigpending when it fired.
pub fn check_lost(slot: &threads::Slot) {
    let source = &slot.offcpu;
    let Some(count) = source.fired() else {
        return;
    };
    // SAFETY: a sigset_t out-pointer.
    let pending = unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigpending(&mut set) == 0 && libc::sigismember(&set, libc::SIGTRAP) == 1
    };
    if pending {
        return;
    }
    source.rearm(count);
    RECOVERED.fetch_add(1, Ordering::Relaxed);
    source.restart_window(hold::now().run_ns, sys::thread_cpu_ns());
}

/// Recording stops (the program runs on); the log says why, once.
fn write_failed(err: WriteError) {
    lifecycle::offcpu_off();
    if WRITE_FAILURE_TOLD.swap(true, Ordering::Relaxed) {
        return;
    }
    match err {
        WriteError::Limit => log::warning("data limit reached: off-CPU profiling stopped"),
        WriteError::Disk => log::warning(
            "cannot extend the offcpu or stacks file (disk full?): off-CPU profiling stopped",
        ),
        WriteError::TooLarge => {
            log::warning("a stack record was larger than a block: off-CPU profiling stopped")
        }
        WriteError::Closed => {}
    }
}

/// The `offcpu` line before `end`: what was recorded.
pub fn log_totals() {
    log::write("offcpu", |line| {
        line.u64("events", EVENTS.load(Ordering::Relaxed));
        line.u64("off_ns", OFF_NS.load(Ordering::Relaxed));
        line.u64("recovered", RECOVERED.load(Ordering::Relaxed));
        line.u64("deferred", DEFERRED.load(Ordering::Relaxed));
    });
}
