//! The profile signal handler (SIGPROF, and SIGTRAP when the clock is a
//! `sigtrap` perf event or off-CPU or counter profiling is on):
//! clock-profile events, periodic samples, off-CPU events (offcpu.rs),
//! counter overflows (counters.rs), and forwarding of signals that are not
//! ours to the program's own handler.
//!
//! Everything reachable from `on_profile_signal` is async-signal-safe:
//! atomics, raw system calls, stack buffers, the unwinder's prepared
//! tables.

use crate::blocks::WriteError;
use crate::clock::{self, PROFILE_TAG};
use crate::{lifecycle, log, samples, state, sys, threads, unwind};
use experiment::layout::{ClockEvent, SampleCause, StackStatus, CLOCK_EVENT_SIZE, CPU_UNKNOWN};
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

/// The program's own disposition of a signal the collector handles
/// (handler address or SIG_DFL / SIG_IGN, and its sa_flags), kept by our
/// sigaction wrapper.
pub struct UserDisposition {
    pub handler: AtomicUsize,
    pub flags: AtomicUsize,
}

impl UserDisposition {
    const fn new() -> UserDisposition {
        UserDisposition {
            handler: AtomicUsize::new(libc::SIG_DFL),
            flags: AtomicUsize::new(0),
        }
    }
}

pub static USER_SIGPROF: UserDisposition = UserDisposition::new();
pub static USER_SIGTRAP: UserDisposition = UserDisposition::new();

/// The program's disposition of `signal`, for the signals we handle.
pub fn user_disposition(signal: c_int) -> Option<&'static UserDisposition> {
    match signal {
        libc::SIGPROF => Some(&USER_SIGPROF),
        libc::SIGTRAP => Some(&USER_SIGTRAP),
        _ => None,
    }
}

/// Next periodic sample due (CLOCK_MONOTONIC ns); 0 = periodic samples off.
pub static NEXT_SAMPLE_NS: AtomicU64 = AtomicU64::new(0);
pub static SAMPLE_PERIOD_NS: AtomicU64 = AtomicU64::new(0);

/// Profile events and stacks written, for status and tests.
pub static EVENTS: AtomicU64 = AtomicU64::new(0);
static WRITE_FAILURE_TOLD: AtomicBool = AtomicBool::new(false);

const SI_TIMER: c_int = -2;
const POLL_IN: c_int = 1;
const TRAP_PERF: c_int = 6;
/// A SIGTRAP of our perf events that a debugger had to queue again
/// (rt_tgsigqueueinfo keeps si_perf_data but may not forge TRAP_PERF).
const SI_QUEUE: c_int = -1;

enum Origin {
    ProfileTick,
    /// A context-switch event's trap (off-CPU profiling).
    OffCpu,
    /// Counter `n`'s trap (counter overflow profiling).
    Counter(usize),
    /// A tick of a clock closed since it was sent (the experiment was
    /// disabled while the signal was queued): dropped.
    Stale,
    Foreign,
}

/// The handler of SIGPROF and (with a sigtrap clock) SIGTRAP.
pub extern "C" fn on_profile_signal(
    signal: c_int,
    info: *mut libc::siginfo_t,
    context: *mut c_void,
) {
    let saved_errno = sys::errno();
    match origin(signal, info) {
        Origin::ProfileTick => {
            profile_tick(context);
            periodic_sample_if_due();
            if signal == libc::SIGTRAP {
                crate::counters::sweep(context);
            }
        }
        Origin::OffCpu => {
            if crate::offcpu::on_trap(context) {
                crate::counters::sweep(context);
            }
        }
        Origin::Counter(index) => crate::counters::on_trap(index, info, context),
        Origin::Stale => {}
        Origin::Foreign => forward(signal, info, context),
    }
    sys::set_errno(saved_errno);
}

/// Whether `info` is the siginfo of an off-CPU trap (a context-switch
/// event's SIGTRAP, or one a debugger queued again).
pub fn is_offcpu_trap(info: &libc::siginfo_t) -> bool {
    matches!(origin(libc::SIGTRAP, info), Origin::OffCpu)
}

fn origin(signal: c_int, info: *const libc::siginfo_t) -> Origin {
    if info.is_null() {
        return Origin::Foreign;
    }
    // SAFETY: the kernel passes a valid siginfo.
    let info = unsafe { &*info };
    if signal == libc::SIGTRAP {
        // A breakpoint, a single step, or somebody else's perf event
        // carries another code or sig_data.
        if info.si_code != TRAP_PERF && info.si_code != SI_QUEUE {
            return Origin::Foreign;
        }
        return match perf_data(info) {
            data if data == PROFILE_TAG as u64 => Origin::ProfileTick,
            crate::offcpu::OFFCPU_TAG => Origin::OffCpu,
            data => crate::counters::counter_of_tag(data).map_or(Origin::Foreign, Origin::Counter),
        };
    }
    match info.si_code {
        SI_TIMER => {
            // SAFETY: SI_TIMER signals carry si_value.
            let tag = unsafe { info.si_value().sival_ptr } as usize;
            if tag == PROFILE_TAG {
                Origin::ProfileTick
            } else {
                Origin::Foreign
            }
        }
        POLL_IN if clock::is_our_perf_fd(poll_fd(info)) => Origin::ProfileTick,
        // Ours, queued before its descriptor was closed: the program's own
        // SIGPROF descriptors are open and set to send it.
        POLL_IN if !sends_sigprof(poll_fd(info)) => Origin::Stale,
        _ => Origin::Foreign,
    }
}

/// Whether descriptor `fd` is open and signals SIGPROF (F_GETSIG).
/// Async-signal-safe: one fcntl.
fn sends_sigprof(fd: i32) -> bool {
    const F_GETSIG: c_int = 11;
    // SAFETY: fcntl on a number; a closed descriptor is EBADF.
    unsafe { libc::fcntl(fd, F_GETSIG) == libc::SIGPROF }
}

/// si_fd of a SIGPOLL-style siginfo: `long si_band; int si_fd;` after the
/// three leading ints and padding (offset 24 on x86-64). The libc crate
/// has no accessor for it.
fn poll_fd(info: &libc::siginfo_t) -> i32 {
    let base = (info as *const libc::siginfo_t).cast::<u8>();
    // SAFETY: siginfo_t is 128 bytes; offset 24 is inside it.
    unsafe { std::ptr::read_unaligned(base.add(24).cast::<i32>()) }
}

/// si_perf_data of a TRAP_PERF siginfo: after si_addr, where si_fd is in
/// a SIGPOLL one (offset 24 on x86-64; no libc crate accessor either).
fn perf_data(info: &libc::siginfo_t) -> u64 {
    let base = (info as *const libc::siginfo_t).cast::<u8>();
    // SAFETY: siginfo_t is 128 bytes; offset 24..32 is inside it.
    unsafe { std::ptr::read_unaligned(base.add(24).cast::<u64>()) }
}

fn profile_tick(context: *mut c_void) {
    let Some(slot) = threads::find(sys::gettid()) else {
        return;
    };
    if slot.in_handler.swap(true, Ordering::AcqRel) {
        // It interrupted the thread's off-CPU or counter handler, which
        // records it when done (`deferred_tick`).
        slot.tick_deferred.store(true, Ordering::Release);
        return;
    }
    // A tick put off earlier is covered by this one (its CPU time is in
    // this one's weight).
    slot.tick_deferred.store(false, Ordering::Relaxed);
    tick_on_slot(slot, context);
    slot.in_handler.store(false, Ordering::Release);
}

/// From a handler that holds the thread's `in_handler` (off-CPU, counter),
/// before it lets go: the clock tick that came meanwhile, recorded at the
/// program's stack that handler interrupted (`context`, its ucontext).
/// Async-signal-safe.
pub fn deferred_tick(slot: &threads::Slot, context: *mut c_void) {
    if slot.tick_deferred.swap(false, Ordering::AcqRel) {
        tick_on_slot(slot, context);
    }
}

fn tick_on_slot(slot: &threads::Slot, context: *mut c_void) {
    let now_cpu = sys::thread_cpu_ns();
    let last = slot.last_cpu_ns.swap(now_cpu, Ordering::Relaxed);
    slot.clock.top_up();
    if lifecycle::offcpu_traced() {
        crate::offcpu::check_tracer_gone();
        crate::offcpu::check_lost(slot, context);
    }
    if !state::recording() {
        return;
    }
    let weight = now_cpu.saturating_sub(last);
    let timestamp = sys::monotonic_ns();
    // SAFETY: we are the slot's thread, inside its profile signal handler,
    // and a thread's clock sends one signal, blocked (with SIGPROF, for a
    // SIGTRAP clock) while its handler runs: nothing else touches `owned`.
    let owned = unsafe { slot.owned() };
    let tid = slot.tid();
    // SAFETY: context is this handler's ucontext.
    let id = match unsafe { record_signal_stack(owned, tid, context, timestamp) } {
        Ok(id) => id,
        Err(err) => return write_failed(err),
    };
    slot.last_stack.store(id, Ordering::Relaxed);
    write_event(owned, tid, timestamp, id, weight);
}

/// Unwinds the interrupted code of the calling thread's signal (`context`,
/// the handler's ucontext) into the thread's buffer and records the stack;
/// its id. Async-signal-safe: the clock and off-CPU handlers share it.
///
/// # Safety
/// `context` is the ucontext the kernel passed to the running handler, and
/// `owned` is the calling thread's, touched by nothing else meanwhile.
pub unsafe fn record_signal_stack(
    owned: &mut threads::Owned,
    tid: i32,
    context: *mut c_void,
    timestamp: u64,
) -> Result<u64, WriteError> {
    // SAFETY: the caller's contract.
    unsafe { record_signal_stack_locating(owned, tid, context, timestamp, None) }.map(|(id, _)| id)
}

/// [`record_signal_stack`], also finding the frame of the recorded stack
/// that holds `address` when there is one (see
/// `unwind::unwind_from_signal_locating`).
///
/// # Safety
/// As for [`record_signal_stack`].
pub unsafe fn record_signal_stack_locating(
    owned: &mut threads::Owned,
    tid: i32,
    context: *mut c_void,
    timestamp: u64,
    address: Option<u64>,
) -> Result<(u64, Option<unwind::HoldingFrame>), WriteError> {
    let mut fallback = [0u64; 64];
    let threads::Owned {
        pcs,
        walk,
        stack_cache,
        stacks,
        ..
    } = owned;
    let buffer: &mut [u64] = match pcs.as_deref_mut() {
        Some(pcs) => pcs,
        None => &mut fallback,
    };
    let limit = state::depth_limit().min(buffer.len());
    let out = &mut buffer[..limit];
    let mut walk = walk.as_deref_mut();
    // SAFETY: context is the ucontext the kernel passed to this handler.
    // A walk that looks for the frame holding an address goes frame by
    // frame (the memo skips the frames it remembers); the others use the
    // thread's memo.
    let (unwound, holding) = match (address, walk.as_deref_mut(), unsafe {
        unwind::signal_registers(context)
    }) {
        // SAFETY: as above.
        (Some(address), _, _) => unsafe {
            unwind::unwind_from_signal_locating(context, stack_cache, out, address)
        },
        (None, Some(walk), Some(registers)) => (
            unwind::unwind_memoized(
                registers,
                stack_cache,
                &mut walk.memo,
                &mut walk.scratch,
                out,
            ),
            None,
        ),
        // SAFETY: as above.
        (None, _, _) => (
            unsafe { unwind::unwind_from_signal(context, stack_cache, out) },
            None,
        ),
    };
    let pcs = out.get(..unwound.depth).unwrap_or(&[]);
    let status = status_of(unwound.status);
    let ids = walk.map(|walk| &mut walk.ids);
    let id = state::record_stack(stacks, ids, tid, timestamp, status, pcs)?;
    Ok((id, holding))
}

fn write_event(owned: &mut threads::Owned, tid: i32, timestamp: u64, stack: u64, weight: u64) {
    let event = ClockEvent {
        timestamp_ns: timestamp,
        stack_id: stack,
        weight_ns: weight.min(u64::from(u32::MAX)) as u32,
        cpu: sys::current_cpu().unwrap_or(CPU_UNKNOWN),
        reserved: 0,
    };
    match state::PROFILE.append(
        &mut owned.profile,
        &state::BUDGET,
        tid,
        timestamp,
        CLOCK_EVENT_SIZE,
        |w| w.push_clock_event(&event),
    ) {
        Ok(()) => {
            EVENTS.fetch_add(1, Ordering::Relaxed);
        }
        Err(err) => write_failed(err),
    }
}

/// The calling thread's CPU time since its last event (less than one
/// interval), recorded when it exits or the experiment closes so totals
/// are not short by a tick per thread. It is charged to the thread's last
/// stack: where it was when last seen, the best evidence there is.
///
/// # Safety
/// `slot` is the calling thread's, and the profile signals are blocked.
pub unsafe fn flush_residual(slot: &threads::Slot) {
    let stack = slot.last_stack.load(Ordering::Relaxed);
    let now_cpu = sys::thread_cpu_ns();
    let last = slot.last_cpu_ns.swap(now_cpu, Ordering::Relaxed);
    if stack == 0 || !state::recording() {
        return;
    }
    let weight = now_cpu.saturating_sub(last);
    if weight > 0 {
        write_event(slot.owned(), slot.tid(), sys::monotonic_ns(), stack, weight);
    }
}

fn status_of(status: unwind::UnwindStatus) -> StackStatus {
    match status {
        unwind::UnwindStatus::Complete => StackStatus::Complete,
        unwind::UnwindStatus::Truncated => StackStatus::Truncated,
        unwind::UnwindStatus::Failed => StackStatus::Failed,
    }
}

/// Profiling stops; the target runs on; the log says why, once.
fn write_failed(err: WriteError) {
    state::stop_profiling();
    if WRITE_FAILURE_TOLD.swap(true, Ordering::Relaxed) {
        return;
    }
    match err {
        WriteError::Limit => {
            log::warning("data limit reached: clock profiling stopped, samples go on")
        }
        WriteError::Disk => {
            log::warning("cannot extend a data file (disk full?): clock profiling stopped")
        }
        WriteError::TooLarge => {
            log::warning("a stack record was larger than a block: clock profiling stopped")
        }
        WriteError::Closed => {}
    }
}

pub fn reset_write_failure() {
    WRITE_FAILURE_TOLD.store(false, Ordering::Relaxed);
}

fn periodic_sample_if_due() {
    let due = NEXT_SAMPLE_NS.load(Ordering::Relaxed);
    if due == 0 || !state::active() {
        return;
    }
    let now = sys::monotonic_ns();
    if now < due {
        return;
    }
    let period = SAMPLE_PERIOD_NS.load(Ordering::Relaxed).max(1);
    let next = now + period - (now - due) % period;
    if NEXT_SAMPLE_NS
        .compare_exchange(due, next, Ordering::Relaxed, Ordering::Relaxed)
        .is_ok()
    {
        samples::record(SampleCause::Periodic, b"");
    }
}

/// A signal that is not ours: do what the program asked for.
fn forward(signal: c_int, info: *mut libc::siginfo_t, context: *mut c_void) {
    let Some(user) = user_disposition(signal) else {
        return;
    };
    let handler = user.handler.load(Ordering::Acquire);
    let flags = user.flags.load(Ordering::Acquire) as c_int;
    match handler {
        libc::SIG_IGN => {}
        libc::SIG_DFL => die_by_default(signal),
        address if flags & libc::SA_SIGINFO != 0 => {
            // SAFETY: the program installed this as an SA_SIGINFO handler.
            let f: extern "C" fn(c_int, *mut libc::siginfo_t, *mut c_void) =
                unsafe { std::mem::transmute(address) };
            f(signal, info, context);
        }
        address => {
            // SAFETY: the program installed this as a plain handler.
            let f: extern "C" fn(c_int) = unsafe { std::mem::transmute(address) };
            f(signal);
        }
    }
}

/// SIGPROF's and SIGTRAP's default action is to terminate: the program
/// would have died without the collector, so it dies the same way with it.
fn die_by_default(signal: c_int) {
    // SAFETY: restoring the default disposition and re-raising.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = libc::SIG_DFL;
        crate::real::sigaction(signal, &action, std::ptr::null_mut());
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, signal);
        libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
        libc::raise(signal);
    }
}
