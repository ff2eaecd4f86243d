//! The lifeline: what rdbx has changed in the traced process, kept where
//! code that runs while rdbx is dying can read it, and the one procedure
//! that undoes it all and lets the process go ([`release`]).
//!
//! A debugger that crashes must not take the program with it. If rdbx
//! simply died, the kernel would detach its tracees, which would then run
//! into our `int3`s (and die of SIGTRAP), lose the signals we were holding
//! for them, and stay on the pc of an out-of-line slot. So everything the
//! engine writes into the target (breakpoint bytes, the syscall and return
//! trap written over the entry point, out-of-line slots), every signal it
//! holds for a thread and the registers saved for an injected call are
//! journalled here as they change, in fixed tables of atomics that a
//! signal handler can read without allocating or locking. The engine's own
//! structures stay the owners of that state; this journal is what must be
//! undone, as a database keeps an undo log beside its tables.
//!
//! [`release`] is used by every detach, the ordinary one included, so the
//! rescue path is exercised by every test that detaches. In an emergency it
//! runs from the panic hook or a fatal-signal handler ([`rescue`]). Only
//! the tracer thread may make ptrace requests, so a dying thread that is
//! not the tracer asks the tracer to do it, with a signal, and waits.
//!
//! Everything reachable from [`release`] and [`rescue`] is async-signal-safe:
//! raw system calls on static memory.

use crate::ptrace::{self, Tid};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::time::Duration;

/// Bytes of the target we may have changed (one entry per byte).
const PATCHES: usize = 1 << 16;
/// Out-of-line slots a thread may stand in.
const SLOTS: usize = 1 << 14;
/// Threads with a signal held for them.
const THREADS: usize = 1 << 12;
/// The largest XSAVE area we keep for an injected call.
const XSTATE: usize = 16 * 1024;
/// How long the rescue waits for running threads to stop.
const STOP_WAIT: Duration = Duration::from_millis(1500);

const EMPTY: u64 = 0;
const TOMBSTONE: u64 = u64::MAX;

struct Patch {
    address: AtomicU64,
    original: AtomicU8,
    /// How many of our writes cover this byte.
    uses: AtomicU32,
}

struct Slot {
    start: AtomicU64,
    /// The breakpoint address the slot's instruction came from.
    site: AtomicU64,
    /// Length of that instruction: a pc past it in the slot has run it.
    length: AtomicU32,
}

struct HeldSignal {
    tid: AtomicI32,
    /// Decided by the engine: deliver this (0: nothing).
    signal: AtomicI32,
    /// Seen by the pump, not decided yet: deliver it unless the signal
    /// table says not to pass it.
    undecided: AtomicI32,
    has_info: AtomicBool,
    info: [AtomicU64; 16],
}

struct SavedCall {
    tid: AtomicI32,
    regs: [AtomicU64; REGS_WORDS],
    xstate_len: AtomicU32,
}

const REGS_WORDS: usize = std::mem::size_of::<libc::user_regs_struct>() / 8;

/// The one journal of the process rdbx traces (rdbx traces one at a time).
struct Journal {
    pid: AtomicI32,
    /// /proc/PID/mem, opened by the engine; written with pwrite.
    memory: AtomicI32,
    /// The thread that seized the process: only it may use ptrace.
    tracer: AtomicI32,
    /// Signals the user told us not to pass (bit n for signal n).
    not_passed: AtomicU64,
    patches: [Patch; PATCHES],
    slots: [Slot; SLOTS],
    held: [HeldSignal; THREADS],
    call: SavedCall,
    /// Set by the first rescue; a second one does nothing.
    rescuing: AtomicBool,
    /// Set when a rescue (or a release) has finished.
    released: AtomicBool,
}

#[allow(clippy::declare_interior_mutable_const)]
const NO_PATCH: Patch = Patch {
    address: AtomicU64::new(EMPTY),
    original: AtomicU8::new(0),
    uses: AtomicU32::new(0),
};
#[allow(clippy::declare_interior_mutable_const)]
const NO_SLOT: Slot = Slot {
    start: AtomicU64::new(EMPTY),
    site: AtomicU64::new(0),
    length: AtomicU32::new(0),
};
#[allow(clippy::declare_interior_mutable_const)]
const ZERO: AtomicU64 = AtomicU64::new(0);
#[allow(clippy::declare_interior_mutable_const)]
const NO_SIGNAL: HeldSignal = HeldSignal {
    tid: AtomicI32::new(0),
    signal: AtomicI32::new(0),
    undecided: AtomicI32::new(0),
    has_info: AtomicBool::new(false),
    info: [ZERO; 16],
};

static JOURNAL: Journal = Journal {
    pid: AtomicI32::new(0),
    memory: AtomicI32::new(-1),
    tracer: AtomicI32::new(0),
    not_passed: AtomicU64::new(0),
    patches: [NO_PATCH; PATCHES],
    slots: [NO_SLOT; SLOTS],
    held: [NO_SIGNAL; THREADS],
    call: SavedCall {
        tid: AtomicI32::new(0),
        regs: [ZERO; REGS_WORDS],
        xstate_len: AtomicU32::new(0),
    },
    rescuing: AtomicBool::new(false),
    released: AtomicBool::new(false),
};

/// The XSAVE area of the thread in an injected call. Written only by the
/// tracer thread outside any handler, read only by the rescue (which runs
/// on the tracer thread too, or while it is parked).
struct XstateBuffer(std::cell::UnsafeCell<[u8; XSTATE]>);
// SAFETY: see the type's comment: one writer, and the reader runs only
// when the writer cannot be writing (a handler on the same thread
// interrupting `note_call` would see a length of 0, set before the copy).
unsafe impl Sync for XstateBuffer {}
static XSTATE_AREA: XstateBuffer = XstateBuffer(std::cell::UnsafeCell::new([0; XSTATE]));

fn gettid() -> Tid {
    // SAFETY: gettid has no arguments and cannot fail.
    unsafe { libc::syscall(libc::SYS_gettid) as Tid }
}

fn hash(key: u64, size: usize) -> usize {
    (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 32) as usize & (size - 1)
}

// ----- the journal, written by the engine (tracer thread only) ----------

/// A process is now traced by this thread: start a fresh journal.
/// `memory` is its /proc/PID/mem descriptor (valid as long as the process
/// is traced, or until `memory_reopened`).
pub(crate) fn begin(pid: i32, memory: i32) {
    clear_tables();
    JOURNAL.memory.store(memory, Ordering::SeqCst);
    JOURNAL.tracer.store(gettid(), Ordering::SeqCst);
    JOURNAL.released.store(false, Ordering::SeqCst);
    JOURNAL.pid.store(pid, Ordering::SeqCst);
}

/// The process is gone or let go: nothing to undo any more.
pub(crate) fn end() {
    JOURNAL.pid.store(0, Ordering::SeqCst);
    clear_tables();
}

/// The process exec'd: its memory is new, none of our bytes are in it.
pub(crate) fn memory_replaced(memory: i32) {
    clear_patches();
    JOURNAL.memory.store(memory, Ordering::SeqCst);
}

fn clear_tables() {
    clear_patches();
    for held in &JOURNAL.held {
        held.tid.store(0, Ordering::Relaxed);
    }
    JOURNAL.call.tid.store(0, Ordering::SeqCst);
}

fn clear_patches() {
    for patch in &JOURNAL.patches {
        patch.address.store(EMPTY, Ordering::Relaxed);
        patch.uses.store(0, Ordering::Relaxed);
    }
    for slot in &JOURNAL.slots {
        slot.start.store(EMPTY, Ordering::Relaxed);
    }
}

/// Signals not to deliver when letting the process go (the user's
/// `ignore`/`handle nopass`), as a bit mask by signal number.
pub(crate) fn note_not_passed(mask: u64) {
    JOURNAL.not_passed.store(mask, Ordering::Relaxed);
}

fn find_patch(address: u64) -> Option<&'static Patch> {
    let mut i = hash(address, PATCHES);
    for _ in 0..PATCHES {
        let patch = &JOURNAL.patches[i];
        match patch.address.load(Ordering::Acquire) {
            a if a == address => return Some(patch),
            EMPTY => return None,
            _ => i = (i + 1) & (PATCHES - 1),
        }
    }
    None
}

/// We are about to write over `original`, the bytes at `address`.
/// Overlapping writes keep the first original of each byte.
pub(crate) fn note_patch(address: u64, original: &[u8]) {
    for (i, &byte) in original.iter().enumerate() {
        let at = address + i as u64;
        if let Some(patch) = find_patch(at) {
            patch.uses.fetch_add(1, Ordering::Relaxed);
            continue;
        }
        let mut slot = hash(at, PATCHES);
        for _ in 0..PATCHES {
            let patch = &JOURNAL.patches[slot];
            let current = patch.address.load(Ordering::Relaxed);
            if current == EMPTY || current == TOMBSTONE {
                patch.original.store(byte, Ordering::Relaxed);
                patch.uses.store(1, Ordering::Relaxed);
                patch.address.store(at, Ordering::Release);
                break;
            }
            slot = (slot + 1) & (PATCHES - 1);
        }
    }
}

/// The bytes at `address` are the program's again (as far as this write
/// is concerned).
pub(crate) fn forget_patch(address: u64, len: usize) {
    for i in 0..len as u64 {
        if let Some(patch) = find_patch(address + i) {
            if patch.uses.fetch_sub(1, Ordering::Relaxed) <= 1 {
                patch.address.store(TOMBSTONE, Ordering::Release);
            }
        }
    }
}

/// An out-of-line slot at `start` now holds the instruction of the
/// breakpoint at `site` (`length` bytes long).
pub(crate) fn note_slot(start: u64, site: u64, length: usize) {
    let mut i = hash(start, SLOTS);
    for _ in 0..SLOTS {
        let slot = &JOURNAL.slots[i];
        let current = slot.start.load(Ordering::Relaxed);
        if current == EMPTY || current == TOMBSTONE || current == start {
            slot.site.store(site, Ordering::Relaxed);
            slot.length.store(length as u32, Ordering::Relaxed);
            slot.start.store(start, Ordering::Release);
            return;
        }
        i = (i + 1) & (SLOTS - 1);
    }
}

pub(crate) fn forget_slot(start: u64) {
    let mut i = hash(start, SLOTS);
    for _ in 0..SLOTS {
        let slot = &JOURNAL.slots[i];
        match slot.start.load(Ordering::Relaxed) {
            s if s == start => {
                slot.start.store(TOMBSTONE, Ordering::Release);
                return;
            }
            EMPTY => return,
            _ => i = (i + 1) & (SLOTS - 1),
        }
    }
}

fn held_entry(tid: Tid, create: bool) -> Option<&'static HeldSignal> {
    let mut i = hash(tid as u64, THREADS);
    let mut free = None;
    for _ in 0..THREADS {
        let held = &JOURNAL.held[i];
        match held.tid.load(Ordering::Acquire) {
            t if t == tid => return Some(held),
            0 => {
                free = free.or(Some(held));
                break;
            }
            -1 => free = free.or(Some(held)),
            _ => {}
        }
        i = (i + 1) & (THREADS - 1);
    }
    let held = free.filter(|_| create)?;
    held.signal.store(0, Ordering::Relaxed);
    held.undecided.store(0, Ordering::Relaxed);
    held.has_info.store(false, Ordering::Relaxed);
    held.tid.store(tid, Ordering::Release);
    Some(held)
}

/// The engine decided `tid` gets `signal` (0: none) when it next runs.
pub(crate) fn note_pending(tid: Tid, signal: i32, info: Option<&libc::siginfo_t>) {
    let Some(held) = held_entry(tid, signal != 0) else {
        return;
    };
    held.undecided.store(0, Ordering::Relaxed);
    if let Some(info) = info {
        let words = siginfo_words(info);
        for (slot, word) in held.info.iter().zip(words) {
            slot.store(word, Ordering::Relaxed);
        }
    }
    held.has_info.store(info.is_some(), Ordering::Relaxed);
    held.signal.store(signal, Ordering::Release);
}

/// The pump saw `tid` stop to receive `signal`; the engine has not decided
/// about it yet.
pub(crate) fn note_undecided(tid: Tid, signal: i32) {
    if let Some(held) = held_entry(tid, true) {
        held.undecided.store(signal, Ordering::Release);
    }
}

/// `tid` is gone.
pub(crate) fn forget_thread(tid: Tid) {
    if let Some(held) = held_entry(tid, false) {
        held.tid.store(-1, Ordering::Release);
    }
}

/// An injected call is about to change `tid`'s registers: these are the
/// ones to put back.
pub(crate) fn note_call(tid: Tid, regs: &libc::user_regs_struct, xstate: Option<&[u8]>) {
    JOURNAL.call.tid.store(0, Ordering::SeqCst);
    JOURNAL.call.xstate_len.store(0, Ordering::SeqCst);
    for (slot, word) in JOURNAL.call.regs.iter().zip(regs_words(regs)) {
        slot.store(word, Ordering::Relaxed);
    }
    if let Some(area) = xstate.filter(|a| a.len() <= XSTATE) {
        // SAFETY: only this thread writes the buffer; the length is 0 while
        // it does, so a rescue does not read it half-written.
        unsafe { (&mut (*XSTATE_AREA.0.get()))[..area.len()].copy_from_slice(area) };
        JOURNAL
            .call
            .xstate_len
            .store(area.len() as u32, Ordering::SeqCst);
    }
    JOURNAL.call.tid.store(tid, Ordering::SeqCst);
}

/// The injected call is over (its registers are back).
pub(crate) fn end_call() {
    JOURNAL.call.tid.store(0, Ordering::SeqCst);
}

fn siginfo_words(info: &libc::siginfo_t) -> [u64; 16] {
    // SAFETY: siginfo_t is 128 bytes of plain data.
    unsafe { std::mem::transmute_copy(info) }
}

fn regs_words(regs: &libc::user_regs_struct) -> [u64; REGS_WORDS] {
    // SAFETY: user_regs_struct is REGS_WORDS plain 64-bit integers.
    unsafe { std::mem::transmute_copy(regs) }
}

// ----- letting go -----------------------------------------------------

/// Whether a rescue has run (the engine must not touch the process again).
pub fn released() -> bool {
    JOURNAL.released.load(Ordering::SeqCst)
}

/// The process rdbx traces, if any (0 for none).
pub fn traced_process() -> i32 {
    JOURNAL.pid.load(Ordering::SeqCst)
}

/// Undoes every change recorded in the journal and detaches every thread
/// of the traced process, which goes on as if it had never been traced:
/// running threads are stopped first; a thread on one of our traps is put
/// back on its instruction, one in an out-of-line slot back in the
/// program, one in an injected call gets its registers back; each is
/// detached with the signal held for it. A forked child still being
/// released gets its bytes back and is detached too. Must run on the
/// tracer thread. Async-signal-safe.
pub(crate) fn release() {
    let pid = JOURNAL.pid.load(Ordering::SeqCst);
    if pid <= 0 {
        return;
    }
    let mut tasks = TaskList::new();
    stop_every_thread(pid, &mut tasks);
    restore_bytes(JOURNAL.memory.load(Ordering::SeqCst));
    for &tid in tasks.tids() {
        take_queued_trap(tid);
        put_thread_back(tid);
        let signal = signal_for(tid);
        // A perf trap whose handler would make the system call the kernel
        // is about to restart fail with EINTR (see Inferior::keep_perf_trap)
        // is dropped: the collector finds it lost.
        let signal = if signal == libc::SIGTRAP && perf_trap_over_restart(tid) {
            0
        } else {
            signal
        };
        // The signal given to PTRACE_DETACH is delivered only from a
        // signal-delivery stop; from any other stop it is queued instead.
        if signal != 0 && !ptrace::in_signal_delivery_stop(tid) {
            // A perf event's SIGTRAP must keep its payload (see
            // ptrace::requeue_perf_trap): a plain one kills the program.
            match held_perf_trap(tid).filter(|_| signal == libc::SIGTRAP) {
                Some(info) => {
                    let _ = ptrace::requeue_perf_trap(pid, tid, &info);
                }
                None => {
                    let _ = ptrace::tgkill(pid, tid, signal);
                }
            }
            let _ = ptrace::detach(tid, 0);
        } else {
            let _ = ptrace::detach(tid, signal);
        }
    }
    JOURNAL.pid.store(0, Ordering::SeqCst);
    JOURNAL.released.store(true, Ordering::SeqCst);
}

/// Interrupts every thread and collects stops until all are stopped (or
/// gone), handling what the engine never saw: a breakpoint trap is rewound
/// so the instruction runs for real, a signal is kept for the detach, a
/// forked child is cleaned and let go, an exec forgets our bytes.
fn stop_every_thread(pid: i32, tasks: &mut TaskList) {
    let started = monotonic();
    tasks.scan(pid);
    for &tid in tasks.tids() {
        let _ = ptrace::interrupt(tid);
    }
    loop {
        let mut saw_event = false;
        while let Some(status) = wait_any() {
            saw_event = true;
            absorb(pid, status, tasks);
        }
        let before = tasks.len();
        tasks.scan(pid);
        for &tid in &tasks.tids()[before..] {
            let _ = ptrace::interrupt(tid);
        }
        let all_stopped = tasks.tids().iter().all(|&tid| task_stopped(pid, tid));
        if (all_stopped && !saw_event) || monotonic().saturating_sub(started) > STOP_WAIT {
            return;
        }
        sleep_briefly();
    }
}

fn absorb(pid: i32, status: ptrace::WaitStatus, tasks: &mut TaskList) {
    use ptrace::WaitStatus;
    match status {
        WaitStatus::Exited { tid, .. } | WaitStatus::Killed { tid, .. } => {
            tasks.remove(tid);
            if tid == pid {
                JOURNAL.pid.store(0, Ordering::SeqCst);
            }
        }
        // A thread followed to its system call's exit: nothing to deliver.
        WaitStatus::Signal { signal, .. } if signal == ptrace::SYSCALL_STOP => {}
        WaitStatus::Signal { tid, signal } if signal == libc::SIGTRAP => {
            if !rewind_trap(tid)
                && ptrace::siginfo(tid).is_ok_and(|info| ptrace::is_perf_trap(&info))
            {
                note_undecided_raw(tid, libc::SIGTRAP);
            }
        }
        WaitStatus::Signal { tid, signal } => {
            if thread_group(tid) != Some(pid) {
                return;
            }
            note_undecided_raw(tid, signal);
        }
        WaitStatus::Event { tid, event, .. } => {
            let message = ptrace::event_message(tid).unwrap_or(0) as Tid;
            match event {
                libc::PTRACE_EVENT_FORK | libc::PTRACE_EVENT_VFORK if message > 0 => {
                    release_child(message, event == libc::PTRACE_EVENT_VFORK)
                }
                libc::PTRACE_EVENT_EXEC => clear_patches(),
                _ => {}
            }
        }
    }
}

/// A signal seen by the rescue itself: delivered at the detach unless a
/// decision is already recorded.
fn note_undecided_raw(tid: Tid, signal: i32) {
    if let Some(held) = held_entry(tid, true) {
        if held.signal.load(Ordering::Acquire) == 0 {
            held.undecided.store(signal, Ordering::Release);
        }
    }
}

/// A forked child still carries our bytes: put them back in its memory and
/// let it go (a vfork child shares our memory, which is restored anyway).
fn release_child(child: i32, shares_memory: bool) {
    // Its first stop must be collected before it can be detached.
    let mut status = 0;
    for _ in 0..1000 {
        // SAFETY: waitpid on a task we trace, into a local.
        let got = unsafe { libc::waitpid(child, &mut status, libc::__WALL | libc::WNOHANG) };
        if got != 0 {
            break;
        }
        sleep_briefly();
    }
    if !shares_memory {
        let mut path = PathBuf::new();
        path.push(b"/proc/");
        path.push_number(child as u64);
        path.push(b"/mem");
        if let Some(fd) = path.open(libc::O_RDWR) {
            restore_bytes(fd);
            // SAFETY: closing the descriptor opened above.
            unsafe { libc::close(fd) };
        }
    }
    let _ = ptrace::detach(child, 0);
}

/// Writes back the original byte of every patched address.
fn restore_bytes(memory: i32) {
    if memory < 0 {
        return;
    }
    for patch in &JOURNAL.patches {
        let address = patch.address.load(Ordering::Acquire);
        if address == EMPTY || address == TOMBSTONE {
            continue;
        }
        let byte = patch.original.load(Ordering::Relaxed);
        // SAFETY: pwrite of one byte from a local into /proc/PID/mem.
        unsafe { libc::pwrite(memory, (&byte as *const u8).cast(), 1, address as i64) };
    }
}

/// If `tid` just executed one of our `int3`s, puts its pc back on it: with
/// the original byte restored, the instruction runs for real.
fn rewind_trap(tid: Tid) -> bool {
    let Ok(mut regs) = ptrace::get_regs(tid) else {
        return false;
    };
    let address = regs.rip.wrapping_sub(1);
    let ours = find_patch(address).is_some();
    let code = ptrace::siginfo(tid).map(|i| i.si_code).unwrap_or(0);
    if !ours || !(code == libc::SI_KERNEL || code == ptrace::TRAP_BRKPT) {
        return false;
    }
    regs.rip = address;
    ptrace::set_regs(tid, &regs).is_ok()
}

/// A thread interrupted right after it executed one of our int3s (or
/// finished a single-step) still has that SIGTRAP queued: let go, it would
/// die of it. Let it take the signal now (it runs no code of its own
/// before that: signals are taken on the way back to user mode), rewind
/// it onto the instruction, and detach it from that stop with no signal.
/// A real signal queued before it is taken the same way and delivered.
fn take_queued_trap(tid: Tid) {
    let mut deliver = 0;
    for _ in 0..8 {
        if !ptrace::trap_queued(tid) || ptrace::cont(tid, deliver).is_err() {
            break;
        }
        let mut status = 0;
        let started = monotonic();
        // SAFETY: waitpid for our own tracee into a local.
        while unsafe { libc::waitpid(tid, &mut status, libc::__WALL | libc::WNOHANG) } == 0 {
            if monotonic().saturating_sub(started) > STOP_WAIT {
                return;
            }
            sleep_briefly();
        }
        match ptrace::decode_status(tid, status) {
            ptrace::WaitStatus::Signal { signal, .. } if signal == libc::SIGTRAP => {
                rewind_trap(tid);
                deliver = 0;
            }
            ptrace::WaitStatus::Signal { signal, .. } => deliver = signal,
            ptrace::WaitStatus::Event { .. } => deliver = 0,
            _ => return,
        }
    }
    if deliver != 0 {
        note_undecided_raw(tid, deliver);
    }
}

/// Registers of an injected call back; a pc in a slot back in the program.
fn put_thread_back(tid: Tid) {
    if JOURNAL.call.tid.load(Ordering::SeqCst) == tid {
        let mut words = [0u64; REGS_WORDS];
        for (word, slot) in words.iter_mut().zip(&JOURNAL.call.regs) {
            *word = slot.load(Ordering::Relaxed);
        }
        // SAFETY: REGS_WORDS plain integers make a user_regs_struct.
        let regs: libc::user_regs_struct = unsafe { std::mem::transmute_copy(&words) };
        let _ = ptrace::set_regs(tid, &regs);
        let len = JOURNAL.call.xstate_len.load(Ordering::SeqCst) as usize;
        if len > 0 {
            // SAFETY: the writer (this thread, outside handlers) is not
            // writing: see XstateBuffer.
            let area = unsafe { &(&(*XSTATE_AREA.0.get()))[..len] };
            let _ = ptrace::set_xstate(tid, area);
        }
        return;
    }
    let Ok(mut regs) = ptrace::get_regs(tid) else {
        return;
    };
    if let Some(address) = program_address_of_slot_pc(regs.rip) {
        regs.rip = address;
        let _ = ptrace::set_regs(tid, &regs);
    }
}

/// For a pc inside an out-of-line slot: where in the program it stands.
fn program_address_of_slot_pc(pc: u64) -> Option<u64> {
    for slot in &JOURNAL.slots {
        let start = slot.start.load(Ordering::Acquire);
        if start == EMPTY || start == TOMBSTONE {
            continue;
        }
        if pc == start {
            return Some(slot.site.load(Ordering::Relaxed));
        }
        if pc > start && pc < start + crate::relocate::SLOT_SIZE as u64 {
            let length = slot.length.load(Ordering::Relaxed) as u64;
            return Some(slot.site.load(Ordering::Relaxed) + length);
        }
    }
    None
}

/// The siginfo kept for `tid` when it is a perf event's SIGTRAP.
fn held_perf_trap(tid: Tid) -> Option<libc::siginfo_t> {
    let held = held_entry(tid, false)?;
    if !held.has_info.load(Ordering::Relaxed) {
        return None;
    }
    let mut words = [0u64; 16];
    for (word, slot) in words.iter_mut().zip(&held.info) {
        *word = slot.load(Ordering::Relaxed);
    }
    let info = ptrace::RawSiginfo(words).info();
    ptrace::is_perf_trap(&info).then_some(info)
}

/// Whether the SIGTRAP held for `tid` is a perf event's whose delivery
/// would make the system call the thread is in fail with EINTR (see
/// ptrace::delivery_cuts_short).
fn perf_trap_over_restart(tid: Tid) -> bool {
    let held = held_perf_trap(tid).or_else(|| {
        ptrace::siginfo(tid)
            .ok()
            .filter(|info| ptrace::in_signal_delivery_stop(tid) && ptrace::is_perf_trap(info))
    });
    held.is_some_and(|info| {
        ptrace::get_regs(tid).is_ok_and(|regs| ptrace::delivery_cuts_short(&regs, &info))
    })
}

/// The signal to deliver to `tid` as we let it go.
fn signal_for(tid: Tid) -> i32 {
    let Some(held) = held_entry(tid, false) else {
        return 0;
    };
    let signal = held.signal.load(Ordering::Acquire);
    if signal != 0 {
        if held.has_info.load(Ordering::Relaxed) && ptrace::in_signal_delivery_stop(tid) {
            let mut words = [0u64; 16];
            for (word, slot) in words.iter_mut().zip(&held.info) {
                *word = slot.load(Ordering::Relaxed);
            }
            // SAFETY: 16 words are a siginfo_t.
            let info: libc::siginfo_t = unsafe { std::mem::transmute_copy(&words) };
            let _ = ptrace::set_siginfo(tid, &info);
        }
        return signal;
    }
    let undecided = held.undecided.load(Ordering::Acquire);
    let not_passed = JOURNAL.not_passed.load(Ordering::Relaxed);
    if undecided > 0 && undecided < 64 && not_passed & (1 << undecided) == 0 {
        return undecided;
    }
    0
}

fn wait_any() -> Option<ptrace::WaitStatus> {
    let mut status = 0;
    // SAFETY: waitpid into a local.
    let tid = unsafe { libc::waitpid(-1, &mut status, libc::__WALL | libc::WNOHANG) };
    (tid > 0).then(|| ptrace::decode_status(tid, status))
}

// ----- the emergency path ------------------------------------------------

/// The signal a dying thread sends the tracer thread to ask for a rescue.
fn rescue_signal() -> i32 {
    libc::SIGRTMIN() + 3
}

/// rdbx is dying: let the traced process go, from whatever thread this
/// is. On the tracer thread the release runs here; on another thread the
/// tracer is asked to run it (by a signal its handler answers) and this
/// thread waits for it, a few seconds at most. Async-signal-safe.
pub fn rescue() {
    if JOURNAL.pid.load(Ordering::SeqCst) <= 0 {
        return;
    }
    let tracer = JOURNAL.tracer.load(Ordering::SeqCst);
    if gettid() == tracer {
        if !JOURNAL.rescuing.swap(true, Ordering::SeqCst) {
            release();
            JOURNAL.released.store(true, Ordering::SeqCst);
        }
        return;
    }
    // SAFETY: getpid cannot fail.
    let own = unsafe { libc::getpid() };
    if ptrace::tgkill(own, tracer, rescue_signal()).is_err() {
        return;
    }
    let started = monotonic();
    while !JOURNAL.released.load(Ordering::SeqCst)
        && monotonic().saturating_sub(started) < STOP_WAIT * 3
    {
        sleep_briefly();
    }
}

extern "C" fn on_rescue_request(_: libc::c_int) {
    if JOURNAL.tracer.load(Ordering::SeqCst) != gettid() {
        return;
    }
    if !JOURNAL.rescuing.swap(true, Ordering::SeqCst) {
        release();
        JOURNAL.released.store(true, Ordering::SeqCst);
    }
    // The thread that asked is taking the process down. The engine code
    // this handler interrupted must not go on with a process it no longer
    // traces: wait here for the end.
    loop {
        // SAFETY: pause just sleeps until a signal.
        unsafe { libc::pause() };
    }
}

/// What `install` saved of the handlers it replaced, to chain to them.
static PREVIOUS: [AtomicU64; 32] = [ZERO; 32];

/// Signals after which rdbx cannot go on: its own faults and aborts, and
/// the requests to end it.
const FATAL: [i32; 8] = [
    libc::SIGSEGV,
    libc::SIGBUS,
    libc::SIGILL,
    libc::SIGFPE,
    libc::SIGABRT,
    libc::SIGTERM,
    libc::SIGHUP,
    libc::SIGQUIT,
];

/// Installs the handlers that rescue the traced process when rdbx dies of
/// a signal, and gives the calling (tracer) thread an alternate signal
/// stack large enough for the rescue after a stack overflow. The binary
/// calls this once at start; a panic hook should call [`rescue`].
pub fn install() {
    install_alternate_stack();
    // SAFETY: sigaction with handlers that only make async-signal-safe
    // calls; the previous actions are kept for chaining.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_fatal_signal as *const () as usize;
        libc::sigemptyset(&mut action.sa_mask);
        action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
        for signal in FATAL {
            let mut previous: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(signal, &action, &mut previous) == 0 {
                PREVIOUS[signal as usize].store(previous.sa_sigaction as u64, Ordering::SeqCst);
            }
        }
        let mut request: libc::sigaction = std::mem::zeroed();
        request.sa_sigaction = on_rescue_request as *const () as usize;
        libc::sigemptyset(&mut request.sa_mask);
        request.sa_flags = libc::SA_ONSTACK;
        libc::sigaction(rescue_signal(), &request, std::ptr::null_mut());
    }
}

fn install_alternate_stack() {
    const SIZE: usize = 256 * 1024;
    // The stack lives as long as the thread: leaked on purpose.
    let stack = Box::leak(vec![0u8; SIZE].into_boxed_slice());
    let alternate = libc::stack_t {
        ss_sp: stack.as_mut_ptr().cast(),
        ss_flags: 0,
        ss_size: SIZE,
    };
    // SAFETY: the memory stays valid for the life of the process.
    unsafe { libc::sigaltstack(&alternate, std::ptr::null_mut()) };
}

extern "C" fn on_fatal_signal(
    signal: libc::c_int,
    info: *mut libc::siginfo_t,
    context: *mut libc::c_void,
) {
    let pid = traced_process();
    rescue();
    if pid > 0 && released() {
        say_released(signal, pid);
    }
    let previous = PREVIOUS
        .get(signal as usize)
        .map_or(0, |p| p.load(Ordering::SeqCst)) as usize;
    let is_handler = previous != libc::SIG_DFL && previous != libc::SIG_IGN;
    let fault = matches!(
        signal,
        libc::SIGSEGV | libc::SIGBUS | libc::SIGILL | libc::SIGFPE
    );
    if is_handler && fault {
        // Chain to the Rust runtime's handler: it reports a stack overflow
        // and aborts, or restores the default and returns to fault again.
        // SAFETY: the previous handler was installed with SA_SIGINFO.
        let handler: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
            unsafe { std::mem::transmute(previous) };
        handler(signal, info, context);
        return;
    }
    // Die of the signal, as without us.
    // SAFETY: resetting to the default action and raising again.
    unsafe {
        libc::signal(signal, libc::SIG_DFL);
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, signal);
        libc::sigprocmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
        libc::raise(signal);
    }
}

/// One line on stderr, written without allocating.
fn say_released(signal: i32, pid: i32) {
    let mut line = PathBuf::new();
    line.push(b"rdbx: ");
    line.push(match signal {
        libc::SIGSEGV => b"SIGSEGV",
        libc::SIGBUS => b"SIGBUS",
        libc::SIGILL => b"SIGILL",
        libc::SIGFPE => b"SIGFPE",
        libc::SIGABRT => b"SIGABRT",
        libc::SIGTERM => b"SIGTERM",
        libc::SIGHUP => b"SIGHUP",
        libc::SIGQUIT => b"SIGQUIT",
        _ => b"a fatal signal",
    });
    line.push(b"; process ");
    line.push_number(pid as u64);
    line.push(b" was let go and runs on untraced\n");
    // SAFETY: write(2) of a local buffer.
    unsafe { libc::write(2, line.bytes().as_ptr().cast(), line.bytes().len()) };
}

// ----- small async-signal-safe helpers --------------------------------

fn monotonic() -> Duration {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime into a local.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now) };
    Duration::new(now.tv_sec as u64, now.tv_nsec as u32)
}

fn sleep_briefly() {
    let pause = libc::timespec {
        tv_sec: 0,
        tv_nsec: 1_000_000,
    };
    // SAFETY: nanosleep with a local request.
    unsafe { libc::nanosleep(&pause, std::ptr::null_mut()) };
}

/// A path (or message) built in a fixed buffer.
struct PathBuf {
    bytes: [u8; 128],
    len: usize,
}

impl PathBuf {
    fn new() -> PathBuf {
        PathBuf {
            bytes: [0; 128],
            len: 0,
        }
    }

    fn push(&mut self, text: &[u8]) {
        for &b in text {
            if self.len < self.bytes.len() - 1 {
                self.bytes[self.len] = b;
                self.len += 1;
            }
        }
    }

    fn push_number(&mut self, mut n: u64) {
        let mut digits = [0u8; 20];
        let mut i = digits.len();
        loop {
            i -= 1;
            digits[i] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        self.push(&digits[i..]);
    }

    fn bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }

    /// open(2) of the path (NUL-terminated in place).
    fn open(&mut self, flags: i32) -> Option<i32> {
        self.bytes[self.len] = 0;
        // SAFETY: the buffer is NUL-terminated.
        let fd = unsafe { libc::open(self.bytes.as_ptr().cast(), flags | libc::O_CLOEXEC) };
        (fd >= 0).then_some(fd)
    }
}

/// Reads a small file into `buf`; the number of bytes read.
fn read_file(path: &mut PathBuf, buf: &mut [u8]) -> usize {
    let Some(fd) = path.open(libc::O_RDONLY) else {
        return 0;
    };
    // SAFETY: read into the caller's buffer, then close our descriptor.
    let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
    unsafe { libc::close(fd) };
    n.max(0) as usize
}

/// The process `tid` belongs to (Tgid in its status file).
fn thread_group(tid: Tid) -> Option<i32> {
    let mut path = PathBuf::new();
    path.push(b"/proc/");
    path.push_number(tid as u64);
    path.push(b"/status");
    let mut buf = [0u8; 1024];
    let n = read_file(&mut path, &mut buf);
    let text = &buf[..n];
    let at = text.windows(5).position(|w| w == b"Tgid:")? + 5;
    let mut value = 0i32;
    let mut seen = false;
    for &b in &text[at..] {
        match b {
            b' ' | b'\t' if !seen => {}
            b'0'..=b'9' => {
                seen = true;
                value = value * 10 + i32::from(b - b'0');
            }
            _ => break,
        }
    }
    seen.then_some(value)
}

/// Whether the kernel shows `tid` in a tracing stop ('t') or gone.
fn task_stopped(pid: i32, tid: Tid) -> bool {
    let mut path = PathBuf::new();
    path.push(b"/proc/");
    path.push_number(pid as u64);
    path.push(b"/task/");
    path.push_number(tid as u64);
    path.push(b"/stat");
    let mut buf = [0u8; 512];
    let n = read_file(&mut path, &mut buf);
    if n == 0 {
        return true;
    }
    let text = &buf[..n];
    let Some(close) = text.iter().rposition(|&b| b == b')') else {
        return true;
    };
    matches!(text.get(close + 2), Some(b't' | b'Z' | b'X'))
}

/// The tasks of the traced process, listed from /proc without allocating.
struct TaskList {
    tids: [Tid; THREADS],
    len: usize,
}

impl TaskList {
    fn new() -> TaskList {
        TaskList {
            tids: [0; THREADS],
            len: 0,
        }
    }

    fn tids(&self) -> &[Tid] {
        &self.tids[..self.len]
    }

    fn len(&self) -> usize {
        self.len
    }

    fn remove(&mut self, tid: Tid) {
        if let Some(i) = self.tids().iter().position(|&t| t == tid) {
            self.tids.copy_within(i + 1..self.len, i);
            self.len -= 1;
        }
    }

    /// Adds the tasks of /proc/PID/task not listed yet.
    fn scan(&mut self, pid: i32) {
        let mut path = PathBuf::new();
        path.push(b"/proc/");
        path.push_number(pid as u64);
        path.push(b"/task");
        let Some(fd) = path.open(libc::O_RDONLY | libc::O_DIRECTORY) else {
            return;
        };
        let mut buf = [0u8; 4096];
        loop {
            // SAFETY: getdents64 into a local buffer.
            let n = unsafe { libc::syscall(libc::SYS_getdents64, fd, buf.as_mut_ptr(), buf.len()) };
            if n <= 0 {
                break;
            }
            let mut at = 0usize;
            while at + 19 < n as usize {
                let record = u16::from_ne_bytes([buf[at + 16], buf[at + 17]]) as usize;
                let name = &buf[at + 19..at + record];
                let mut tid: Tid = 0;
                let mut digits = 0;
                for &b in name.iter().take_while(|&&b| b != 0) {
                    if !b.is_ascii_digit() {
                        digits = 0;
                        break;
                    }
                    tid = tid * 10 + Tid::from(b - b'0');
                    digits += 1;
                }
                if digits > 0 && !self.tids().contains(&tid) && self.len < THREADS {
                    self.tids[self.len] = tid;
                    self.len += 1;
                }
                if record == 0 {
                    break;
                }
                at += record;
            }
        }
        // SAFETY: closing the directory descriptor opened above.
        unsafe { libc::close(fd) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patches_are_refcounted_per_byte_and_keep_the_first_original() {
        let at = 0x5555_0000_1000;
        note_patch(at, &[0x55]);
        note_patch(at, &[0xcc, 0x48]);
        assert_eq!(
            find_patch(at).unwrap().original.load(Ordering::Relaxed),
            0x55
        );
        assert_eq!(
            find_patch(at + 1).unwrap().original.load(Ordering::Relaxed),
            0x48
        );
        forget_patch(at, 2);
        assert!(find_patch(at).is_some(), "the breakpoint still covers it");
        assert!(find_patch(at + 1).is_none());
        forget_patch(at, 1);
        assert!(find_patch(at).is_none());
    }

    #[test]
    fn slot_pcs_map_back_to_the_program() {
        note_slot(0x7000_0000, 0x40_1000, 3);
        assert_eq!(program_address_of_slot_pc(0x7000_0000), Some(0x40_1000));
        assert_eq!(program_address_of_slot_pc(0x7000_0005), Some(0x40_1003));
        forget_slot(0x7000_0000);
        assert_eq!(program_address_of_slot_pc(0x7000_0000), None);
    }

    #[test]
    fn task_list_reads_our_own_threads() {
        let mut tasks = TaskList::new();
        // SAFETY: getpid cannot fail.
        tasks.scan(unsafe { libc::getpid() });
        assert!(tasks.tids().contains(&gettid()));
        assert_eq!(thread_group(gettid()), Some(unsafe { libc::getpid() }));
    }
}
