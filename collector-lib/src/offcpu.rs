//! Off-CPU profiling: each time a thread is switched off its CPU (it
//! blocks in a system call, sleeps, waits on a futex or for a page, or is
//! preempted), where it was and, once it runs again, how long it was off.
//! Records go to the thread's block of the `offcpu` file (kind 6, see
//! experiment::offcpu).
//!
//! How: a perf_event software `context-switches` event per thread,
//! sample_period 1, with `sigtrap`: the switch out overflows it, the
//! kernel queues task work, and when the thread returns to user mode
//! (after it ran again and its system call finished) it gets SIGTRAP with
//! si_code TRAP_PERF and si_perf_data = [`OFFCPU_TAG`]. The handler's
//! ucontext is where the thread was at the switch. Off-CPU time is the
//! wall time since the thread's previous trap less the CPU time it used
//! since then (both read on entry of the handler, so the handler's own run
//! time cancels out), less the time rdbx held the process stopped
//! meanwhile (the wall time is the run clock of hold.rs): a thread asleep
//! while the user sat at a breakpoint was not waiting for the program.
//!
//! The event never ends a wait: the trap waits for the system call to
//! return by itself. A debugger's stop is the exception, since it wakes a
//! waiting thread to stop it: the kernel restarts the call when the thread
//! resumes, but a handler that runs first makes a sleep, or a poll or
//! select with a timeout, fail with EINTR (our handler has SA_RESTART, see
//! interpose.rs, so a read or a futex wait starts again after it as it
//! would without it). For those rdbx holds our trap back until the
//! restarted call has returned (debugger/src/inferior.rs,
//! `keep_perf_trap`).
//!
//! Each event has an overflow allowance (PERF_EVENT_IOC_REFRESH): the
//! kernel turns it off when the allowance is used up. How large it is
//! depends on whether anything traces the process (decided at start, as
//! for the clock's SIGTRAP, and again when a tracer shows up):
//!
//! - Nobody traces it (`rdbx collect`): [`ALLOWANCE`] overflows, topped up
//!   every [`TOP_UP_TRAPS`] traps (one read of the count, one ioctl), so
//!   it is never used up: the event stays enabled, and the kernel queues
//!   at most one trap at a time (a switch while one is queued adds
//!   nothing: its wait is inside the queued trap's window). The handler
//!   makes no other system call for the event.
//! - Under a debugger the event is one-shot (an allowance of 1): it
//!   disables itself at its overflow, and the handler arms it again. The
//!   delivery of the SIGTRAP is a ptrace stop, itself a context switch:
//!   an event left armed would fire again for it, forever. A trap is
//!   re-armed only when the event overflowed since it was last armed (its
//!   count, read in the handler, moved): a trap the debugger delivered
//!   late, or one that arrives after a recovery, must not arm the event
//!   twice. One-shot costs much more per switch: the kernel disables an
//!   event from the switch through an irq_work, a self-interrupt, which in
//!   a virtual machine costs exits to the hypervisor (bench/RESULTS.md,
//!   "Off-CPU profiling cost": about 13 µs a switch there).
//!
//! A tracer that attaches later (strace, gdb, rdbx) stops the thread to
//! deliver each trap: with the event enabled, that stop queues the next
//! trap, whose frame the kernel pushes before any handler ran (SIGTRAP is
//! never blocked, see interpose.rs), and so on until the allowance is used
//! up: the allowance is what keeps that loop from overflowing the stack.
//! Under strace every system call is a stop too, the handler's own ones
//! included, its arming ioctl last. A trap that came before the previous
//! one's handler ran, or two levels deep in our handler (one level is a
//! preemption or a page fault), is one the tracer's stops made: it is
//! dropped (its time goes to the next record), arms nothing, and makes
//! the collector look at TracerPid (/proc/thread-self/status, at most
//! every [`TRACER_CHECK_NS`]); a process found traced gets one-shot
//! events, and enabled ones again once the clock's ticks find the tracer
//! gone. Under strace the events are mostly off (each arming ends in a
//! dropped trap) until a tick recovers them: what strace's stops would
//! record is strace, not the program. A tracer that does not pass the trap
//! on (gdb) never lets the handler run: it stops at each trap until the
//! allowance is used up, and then not again (until a tick recovers the
//! event, when the clock runs).
//!
//! A trap can be lost: SIGTRAP is a standard signal, so when another
//! SIGTRAP is already pending the kernel drops ours: the clock's, a
//! counter's, or a debugger's breakpoint or single-step trap when the
//! thread was preempted between taking it and its delivery (the switch
//! queues our trap just then). A one-shot event would then stay off. The
//! clock's tick checks for it ([`check_lost`]), as a counter's trap does:
//! overflowed since the last trap, and no SIGTRAP pending (nor one of ours
//! about to run its handler), means lost; the event is armed again, and
//! the time since the thread's last record is dropped, not charged to a
//! stack it was not switched out at.
//!
//! Privileges: context switches happen in kernel mode, so the event must
//! count the kernel (exclude_kernel = 0), which perf_event_paranoid 2 (the
//! usual default) refuses to unprivileged users. Then the experiment says
//! so in an `error` line and runs without off-CPU data.

use crate::blocks::WriteError;
use crate::clock::{
    self, SoftwareEvent, ATTR_DISABLED, ATTR_EXCLUDE_HV, ATTR_REMOVE_ON_EXEC, ATTR_SIGTRAP,
    PERF_EVENT_IOC_REFRESH,
};
use crate::{hold, lifecycle, log, profile, state, sys, threads};
use experiment::offcpu::{OffCpuEvent, OFFCPU_RECORD_SIZE};
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU64, Ordering};

/// si_perf_data of our context-switch events ("RDBXOFFC"); the clock's
/// is `clock::PROFILE_TAG`.
pub const OFFCPU_TAG: u64 = 0x5244_4258_4f46_4643;

const PERF_COUNT_SW_CONTEXT_SWITCHES: u64 = 3;

/// An enabled event's overflow allowance: also the most trap frames a
/// tracer's stops can stack up before a handler runs.
const ALLOWANCE: u64 = 16;
/// Traps between two top-ups of an enabled event's allowance.
const TOP_UP_TRAPS: u32 = 8;
/// Handlers of the thread's off-CPU traps that may run nested: one trap
/// may come while the handler of another runs (a preemption at the
/// return of its arming ioctl, a page fault); under strace, each arming
/// makes one (its system call's exit stop is a switch), and the nested
/// handler's arming the next: that one, a level deeper, is dropped.
const MAX_TRAP_DEPTH: u32 = 2;
/// TracerPid is read at most this often (CLOCK_MONOTONIC ns): on a trap
/// a tracer's stops seem to have made, and, once a tracer was found, at a
/// clock tick.
const TRACER_CHECK_NS: u64 = 100_000_000;

/// Records written, their total off-CPU time, lost traps recovered,
/// traps that came while the thread's clock handler ran (their time goes
/// to the thread's next record), and traps our own handler or the
/// delivery of our own trap made (a tracer's stops; dropped).
static EVENTS: AtomicU64 = AtomicU64::new(0);
static OFF_NS: AtomicU64 = AtomicU64::new(0);
static RECOVERED: AtomicU64 = AtomicU64::new(0);
static DEFERRED: AtomicU64 = AtomicU64::new(0);
static FED: AtomicU64 = AtomicU64::new(0);
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
/// A tracer that attached after the start made the events one-shot.
static TRACER_FOUND: AtomicBool = AtomicBool::new(false);
/// When TracerPid may be read again (CLOCK_MONOTONIC ns).
static NEXT_TRACER_CHECK_NS: AtomicU64 = AtomicU64::new(0);

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

/// The overflow allowance an event is topped up to.
fn target_allowance() -> u64 {
    if continuous() {
        ALLOWANCE
    } else {
        1
    }
}

/// Whether every trap reads its event's count: one-shot events need it
/// to re-arm, enabled ones for [`check_lost`] (else only to top up).
fn traps_read_count() -> bool {
    !continuous() || CLOCK_TRAPS.load(Ordering::Relaxed)
}

/// A new experiment, recording off-CPU events when `wanted`, armed as
/// `arming` says: counters from zero.
pub fn reset(wanted: bool, arming: Arming) {
    WANTED.store(wanted, Ordering::Release);
    CONTINUOUS.store(arming.continuous, Ordering::Relaxed);
    CLOCK_TRAPS.store(arming.clock_traps, Ordering::Relaxed);
    TRACER_FOUND.store(false, Ordering::Relaxed);
    NEXT_TRACER_CHECK_NS.store(0, Ordering::Relaxed);
    EVENTS.store(0, Ordering::Relaxed);
    OFF_NS.store(0, Ordering::Relaxed);
    RECOVERED.store(0, Ordering::Relaxed);
    DEFERRED.store(0, Ordering::Relaxed);
    FED.store(0, Ordering::Relaxed);
    WRITE_FAILURE_TOLD.store(false, Ordering::Relaxed);
}

/// One thread's context-switch event and the clocks of its last trap.
pub struct OffCpuSource {
    fd: AtomicI32,
    /// The event's count at the last trap handled (or when armed, or a
    /// lost trap recovered): a trap, or a tick looking for a lost one,
    /// finds by it whether the event overflowed since.
    seen_count: AtomicU64,
    /// The count when the overflow allowance was last topped up, and the
    /// allowance then: what is left of it is that less the overflows since.
    allowance_count: AtomicU64,
    allowance: AtomicU64,
    /// Traps handled since the last top-up.
    traps: AtomicU32,
    /// How many [`on_trap`]s of the thread are running (nested).
    trap_depth: AtomicU32,
    /// The run clock (hold.rs) and thread CPU time at the previous trap
    /// (or when armed): the next record's window.
    last_run_ns: AtomicU64,
    last_cpu_ns: AtomicU64,
}

impl OffCpuSource {
    pub const fn new() -> OffCpuSource {
        OffCpuSource {
            fd: AtomicI32::new(-1),
            seen_count: AtomicU64::new(0),
            allowance_count: AtomicU64::new(0),
            allowance: AtomicU64::new(0),
            traps: AtomicU32::new(0),
            trap_depth: AtomicU32::new(0),
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
        self.seen_count.store(0, Ordering::Relaxed);
        self.allowance_count.store(0, Ordering::Relaxed);
        let allowance = target_allowance();
        self.allowance.store(allowance, Ordering::Relaxed);
        self.traps.store(0, Ordering::Relaxed);
        self.trap_depth.store(0, Ordering::Relaxed);
        self.fd.store(fd, Ordering::Release);
        // SAFETY: our perf descriptor: enabled for `allowance` overflows.
        unsafe { libc::ioctl(fd, PERF_EVENT_IOC_REFRESH, allowance as libc::c_int) };
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

    /// The event's count when it overflowed since the last trap handled
    /// (a one-shot event is off then), None when it did not.
    /// Async-signal-safe.
    fn fired(&self) -> Option<u64> {
        let fd = self.fd.load(Ordering::Acquire);
        if fd < 0 {
            return None;
        }
        let count = self.count(fd)?;
        (count != self.seen_count.load(Ordering::Relaxed)).then_some(count)
    }

    /// Whether this trap tops the allowance up: every trap of a one-shot
    /// event (it is armed again), every [`TOP_UP_TRAPS`]th of an enabled
    /// one.
    fn top_up_due(&self) -> bool {
        !continuous() || self.traps.load(Ordering::Relaxed) + 1 >= TOP_UP_TRAPS
    }

    /// A trap was handled; `count` is the event's count when the trap read
    /// it, and `due` says the allowance is to be topped up (the count was
    /// read then). Async-signal-safe.
    fn trap_handled(&self, count: Option<u64>, due: bool) {
        self.traps.fetch_add(1, Ordering::Relaxed);
        let Some(count) = count else {
            return;
        };
        // A nested trap may have seen a later count already.
        self.seen_count.fetch_max(count, Ordering::Relaxed);
        // An enabled event whose count was read for a lost trap's sake is
        // topped up as well when little is left (it was one-shot until
        // a tracer left).
        if due || self.allowance_left(count) < u64::from(TOP_UP_TRAPS) {
            self.top_up(count);
        }
    }

    /// What is left of the allowance at `count`.
    fn allowance_left(&self, count: u64) -> u64 {
        let used = count.saturating_sub(self.allowance_count.load(Ordering::Relaxed));
        self.allowance.load(Ordering::Relaxed).saturating_sub(used)
    }

    /// Tops the allowance up to [`target_allowance`] (re-arms a one-shot
    /// event that overflowed; one that did not is left alone). `count` is
    /// the event's count now. Async-signal-safe.
    fn top_up(&self, count: u64) {
        let fd = self.fd.load(Ordering::Acquire);
        // A nested trap topped it up at a later count already.
        if fd < 0 || count < self.allowance_count.load(Ordering::Relaxed) {
            return;
        }
        let left = self.allowance_left(count);
        let add = target_allowance().saturating_sub(left);
        // Stored first: a trap nested right after the ioctl counts from
        // these.
        self.allowance_count.store(count, Ordering::Relaxed);
        self.allowance.store(left + add, Ordering::Relaxed);
        self.traps.store(0, Ordering::Relaxed);
        if add > 0 {
            // SAFETY: our perf descriptor: `add` more overflows (and
            // enabled, if it had turned itself off).
            unsafe { libc::ioctl(fd, PERF_EVENT_IOC_REFRESH, add as libc::c_int) };
        }
    }
}

impl Default for OffCpuSource {
    fn default() -> Self {
        Self::new()
    }
}

/// The SIGTRAP of a context-switch event (ours: si_perf_data is
/// OFFCPU_TAG); false for one our own handler or trap delivery made,
/// dropped. Async-signal-safe.
pub fn on_trap(context: *mut c_void) -> bool {
    let Some(slot) = threads::find(sys::gettid()) else {
        return false;
    };
    let source = &slot.offcpu;
    let depth = source.trap_depth.fetch_add(1, Ordering::AcqRel);
    let fed = depth >= MAX_TRAP_DEPTH || interrupted_offcpu_delivery(context);
    if !fed {
        handle_trap(slot, context);
    }
    source.trap_depth.fetch_sub(1, Ordering::AcqRel);
    if fed {
        // A tracer stops the thread at each signal (strace at each system
        // call too): the stop was a switch. Nothing more here (no system
        // call that would be one more stop, but a rare look at TracerPid),
        // and nothing armed.
        FED.fetch_add(1, Ordering::Relaxed);
        if continuous() {
            suspect_tracer();
        }
    }
    !fed
}

fn handle_trap(slot: &threads::Slot, context: *mut c_void) {
    let now = hold::now();
    let now_cpu = sys::thread_cpu_ns();
    let source = &slot.offcpu;
    let due = source.top_up_due();
    let count = if traps_read_count() || due {
        let Some(count) = source.fired() else {
            // Not an overflow since the last trap (one delivered late by a
            // debugger, after a recovery): the event is armed already,
            // and the time goes to the next record.
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
    // those: their traps come nested, their time goes to the next
    // record.)
    source.trap_handled(count, due);
}

/// Whether the interrupted code is the very start of the handler of
/// another off-CPU trap of this thread: the kernel set up that trap's
/// frame, then this one's on top before the first ran (the stop that
/// delivered the first, under a tracer, queued this one). `context` is
/// the handler's ucontext: the interrupted registers hold the other
/// handler's arguments (signal, siginfo), on the stack just above.
fn interrupted_offcpu_delivery(context: *mut c_void) -> bool {
    if context.is_null() {
        return false;
    }
    // SAFETY: the kernel's ucontext for this handler.
    let gregs = unsafe { &(*context.cast::<libc::ucontext_t>()).uc_mcontext.gregs };
    let register = |index: libc::c_int| {
        usize::try_from(index)
            .ok()
            .and_then(|i| gregs.get(i))
            .map_or(0, |&value| value as usize)
    };
    let handler = profile::on_profile_signal as *const () as usize;
    if register(libc::REG_RIP) != handler || register(libc::REG_RDI) != libc::SIGTRAP as usize {
        return false;
    }
    let (info, sp) = (register(libc::REG_RSI), register(libc::REG_RSP));
    // The other frame's siginfo is a few hundred bytes above its stack
    // pointer.
    if info <= sp || info - sp > 8192 {
        return false;
    }
    // SAFETY: a siginfo inside the signal frame the kernel just wrote on
    // this thread's stack.
    profile::is_offcpu_trap(unsafe { &*(info as *const libc::siginfo_t) })
}

/// A trap our own handler or delivery made: TracerPid is read (at most
/// every TRACER_CHECK_NS), and a process found traced gets one-shot
/// events. Async-signal-safe.
fn suspect_tracer() {
    if !tracer_check_due() || !sys::traced() {
        return;
    }
    CONTINUOUS.store(false, Ordering::Relaxed);
    if !TRACER_FOUND.swap(true, Ordering::Relaxed) {
        log::warning(
            "a tracer attached to the process: off-CPU events are one-shot while it is there \
             (each of its stops is a switch off the CPU)",
        );
    }
}

/// Whether TracerPid may be read now (and the next look is put off).
fn tracer_check_due() -> bool {
    let now = sys::monotonic_ns();
    let next = NEXT_TRACER_CHECK_NS.load(Ordering::Relaxed);
    now >= next
        && NEXT_TRACER_CHECK_NS
            .compare_exchange(
                next,
                now + TRACER_CHECK_NS,
                Ordering::Relaxed,
                Ordering::Relaxed,
            )
            .is_ok()
}

/// From the clock handler: once a tracer made the events one-shot,
/// whether it is gone (TracerPid read at most every TRACER_CHECK_NS);
/// then the events are enabled again (each at its next trap, or found
/// off by [`check_lost`]). Async-signal-safe.
pub fn check_tracer_gone() {
    if !TRACER_FOUND.load(Ordering::Relaxed) || !tracer_check_due() || sys::traced() {
        return;
    }
    TRACER_FOUND.store(false, Ordering::Relaxed);
    CONTINUOUS.store(true, Ordering::Relaxed);
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

/// From the thread's clock handler or a counter's trap handler
/// (`context`: its ucontext): a trap of ours that was lost (dropped because
/// another SIGTRAP was pending, or by a debugger) is found here (the event
/// fired, nothing is pending, and no handler of ours is about to run for
/// it), and the event armed again. Async-signal-safe: one read, and
/// sigpending when it fired.
pub fn check_lost(slot: &threads::Slot, context: *mut c_void) {
    let source = &slot.offcpu;
    // An enabled event's traps may not read its count: none to compare.
    if !traps_read_count()
        || source.trap_depth.load(Ordering::Acquire) > 0
        || interrupted_offcpu_delivery(context)
    {
        return;
    }
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
    source.seen_count.store(count, Ordering::Relaxed);
    source.top_up(count);
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
        line.u64("fed", FED.load(Ordering::Relaxed));
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_allowance_left_is_less_the_overflows_since_the_top_up() {
        let source = OffCpuSource::new();
        source.allowance_count.store(100, Ordering::Relaxed);
        source.allowance.store(ALLOWANCE, Ordering::Relaxed);
        assert_eq!(source.allowance_left(100), ALLOWANCE);
        assert_eq!(source.allowance_left(100 + 5), ALLOWANCE - 5);
        // Overflows the kernel counted before it turned the event off.
        assert_eq!(source.allowance_left(100 + ALLOWANCE + 3), 0);
    }

    #[test]
    fn a_trap_reads_the_count_to_top_up_every_few_traps() {
        let source = OffCpuSource::new();
        CONTINUOUS.store(true, Ordering::Relaxed);
        for _ in 1..TOP_UP_TRAPS {
            assert!(!source.top_up_due());
            source.trap_handled(None, false);
        }
        assert!(source.top_up_due());
        CONTINUOUS.store(false, Ordering::Relaxed);
        assert!(source.top_up_due(), "one-shot: every trap arms again");
    }
}
