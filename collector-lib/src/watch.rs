//! Threads of a process the collector was loaded into while it ran
//! (`collector enable` on a live process: an injected dlopen, so none of
//! our interposers apply and `pthread_create` does not tell us about new
//! threads).
//!
//! A small watcher thread reads /proc/self/task every `POLL_NS` and
//! starts the clock of each thread it has not seen (`register_thread`
//! works for another thread of the process: the clock is created for its
//! tid). The first event of a thread found this way carries the CPU time
//! it used since it was created, so per-thread totals stay right; what is
//! lost is the stack of that first stretch (at most one poll interval).
//! Threads that disappear from the list get their blocks retired and a
//! `thread-end` line; the CPU they used after their last tick (less than
//! one interval) is not recorded (their exit cannot be hooked).
//!
//! Alternatives considered: patching every object's GOT entry of
//! pthread_create (catches threads from their first instruction, but
//! writes into the program's relocated data and misses raw clone);
//! inherited perf events (their overflow signal goes to the thread that
//! opened the parent event, not to the new thread). Polling is simple,
//! needs nothing from the program and sees every thread however created.
//!
//! It also follows the objects the program loads and unloads: their
//! unwind tables, `object` lines and GOT entries, as a dlopen does where
//! the collector is preloaded.
//!
//! The watcher never profiles itself, has every signal blocked (a
//! process-directed signal of the program is never delivered to it), takes
//! no lock shared with the program's threads or with the debugger's
//! injected calls but the loader's (to list the objects) and, when they
//! changed, the collector's own, as a start does, and exits when the
//! experiment it was started for ends.

use crate::{log, numbers, state, sys, threads};
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};

/// How often the task list is read.
pub const POLL_NS: u64 = 5_000_000;
/// At most this many threads are looked at per poll.
const MAX_TIDS: usize = threads::MAX_THREADS;

/// The experiment generation the running watcher serves; a watcher whose
/// generation is not the current one exits.
static GENERATION: AtomicU64 = AtomicU64::new(0);
/// The watcher's own tid (0 when none): never profiled.
static WATCHER_TID: AtomicI32 = AtomicI32::new(0);
/// The generation whose watcher's `collector-thread` line is written.
static ANNOUNCED: AtomicU64 = AtomicU64::new(0);

pub fn watcher_tid() -> i32 {
    WATCHER_TID.load(Ordering::Acquire)
}

/// Starts a watcher for the experiment just started. Every signal is
/// blocked while it is created, so it starts with all of them blocked.
pub fn start() -> Result<(), String> {
    let generation = GENERATION.fetch_add(1, Ordering::SeqCst) + 1;
    // The debugger sees the watcher created now, after the threads that
    // exist: it takes the next number (see `numbers`).
    let number = numbers::next();
    let before = task_tids();
    // SAFETY: plain sigset operations on the calling thread's mask.
    let old = unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
        old
    };
    let spawned = std::thread::Builder::new()
        .name("rdbx-collector".into())
        .stack_size(256 * 1024)
        .spawn(move || watch(generation, number));
    // SAFETY: restoring the mask saved above.
    unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut()) };
    spawned.map_err(|e| format!("cannot start the thread watcher: {e}"))?;
    // The debugger lists the new thread at once, and may keep it stopped
    // until the program continues: name it from here when it is the one
    // thread that appeared, so an analysis at the stop right after
    // `collector enable` knows it is rdbx's.
    let after = task_tids();
    if let [watcher] = after.difference(&before).copied().collect::<Vec<i32>>()[..] {
        announce(generation, watcher, number);
    }
    Ok(())
}

/// The thread ids in /proc/self/task (ordinary context: allocates).
fn task_tids() -> std::collections::BTreeSet<i32> {
    std::fs::read_dir("/proc/self/task")
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|e| e.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// Writes the `collector-thread` line of the watcher of `generation`,
/// once: from `start` when it could tell the new thread, else from the
/// watcher itself.
fn announce(generation: u64, tid: i32, number: u32) {
    if ANNOUNCED.swap(generation, Ordering::AcqRel) == generation {
        return;
    }
    numbers::remember(tid, number);
    // Not a thread of the program, but one the debugger lists (and
    // numbers): the analyzer shows it as rdbx's.
    log::write("collector-thread", |line| {
        line.u64("tid", tid as u64);
        line.u64("number", u64::from(number));
    });
}

/// Makes any running watcher exit (at its next poll).
pub fn stop() {
    GENERATION.fetch_add(1, Ordering::SeqCst);
}

fn current(generation: u64) -> bool {
    GENERATION.load(Ordering::SeqCst) == generation && state::active()
}

fn watch(generation: u64, number: u32) {
    // What libc allocates for the watcher is not the program's.
    let _held = crate::heap::hold_current_thread();
    let me = sys::gettid();
    WATCHER_TID.store(me, Ordering::Release);
    announce(generation, me, number);
    let dir = sys::open_raw(
        c"/proc/self/task",
        libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
        0,
    );
    if dir < 0 {
        log::warning("cannot read /proc/self/task: threads created from now on are not profiled");
        return;
    }
    let mut tids = [0i32; MAX_TIDS];
    let sleep = crate::clock::timespec(POLL_NS);
    while current(generation) {
        let count = read_tids(dir, &mut tids);
        if let Some(seen) = tids.get_mut(..count) {
            register_new(seen, generation);
            retire_gone(seen);
        }
        if objects_changed() {
            // What the program's dlopen does where the collector is
            // preloaded: the objects' unwind tables and `object` lines
            // (else their frames end its stacks, unnamed), then the GOT
            // entries of what is traced (the calls they trace find the
            // tables).
            crate::interpose::after_objects_changed();
            crate::got::follow_new_objects();
        }
        // SAFETY: valid timespec; an interruption just shortens the sleep.
        unsafe { libc::nanosleep(&sleep, std::ptr::null_mut()) };
    }
    sys::close_raw(dir);
    numbers::forget(me);
    let _ = WATCHER_TID.compare_exchange(me, 0, Ordering::AcqRel, Ordering::Acquire);
}

/// The thread ids in /proc/self/task (read again from its start), the
/// watcher's own excepted. No allocation.
fn read_tids(dir: i32, tids: &mut [i32]) -> usize {
    // Rewinding a /proc directory lists it anew.
    if sys::lseek_raw(dir, 0, libc::SEEK_SET) != 0 {
        return 0;
    }
    let me = sys::gettid();
    let mut count = 0;
    let mut buf = [0u8; 8192];
    loop {
        // SAFETY: buf is writable for its length.
        let n = unsafe {
            libc::syscall(
                libc::SYS_getdents64,
                dir,
                buf.as_mut_ptr(),
                buf.len() as libc::c_uint,
            )
        };
        if n <= 0 {
            return count;
        }
        let mut at = 0usize;
        while let Some(record) = buf.get(at..n as usize) {
            // struct linux_dirent64: ino u64, off i64, reclen u16, type u8, name.
            let Some(reclen) = record
                .get(16..18)
                .map(|b| u16::from_le_bytes([b[0], b[1]]) as usize)
            else {
                break;
            };
            if reclen == 0 {
                break;
            }
            let name = record.get(19..reclen.min(record.len())).unwrap_or(&[]);
            let name = name.split(|b| *b == 0).next().unwrap_or(&[]);
            if let Some((tid, rest)) = sys::parse_u64(name) {
                if rest.is_empty() && tid as i32 != me {
                    if let Some(slot) = tids.get_mut(count) {
                        *slot = tid as i32;
                        count += 1;
                    }
                }
            }
            at += reclen;
        }
    }
}

/// Starts the clocks of the threads in `seen` not registered yet. Those
/// the collector has no number for are numbered in tid order (`seen` is
/// sorted in place).
fn register_new(seen: &mut [i32], generation: u64) {
    seen.sort_unstable();
    for &tid in seen.iter() {
        if threads::find(tid).is_some() {
            continue;
        }
        let number = numbers::number_of(tid).unwrap_or_else(|| {
            let number = numbers::next();
            numbers::remember(tid, number);
            number
        });
        // A thread born after the start: its whole CPU time is new (while
        // paused, resume moves the baseline anyway).
        let baseline = if state::paused() {
            sys::other_thread_cpu_ns(tid).unwrap_or(0)
        } else {
            0
        };
        state::register_thread(tid, baseline, number);
        // The experiment may have ended while this clock was being armed
        // (stop disarms only the clocks it sees): disarm it ourselves.
        if !current(generation) {
            if let Some(slot) = threads::find(tid) {
                slot.clock.disarm();
                slot.offcpu.disarm();
                slot.counters().disarm();
            }
            return;
        }
    }
}

fn retire_gone(seen: &[i32]) {
    for slot in threads::registered() {
        let tid = slot.tid();
        if seen.contains(&tid) || tid == sys::gettid() {
            continue;
        }
        // Gone from the task list: its handler cannot run any more, so its
        // owned parts are free to touch.
        if sys::other_thread_cpu_ns(tid).is_none() {
            state::retire_dead_thread(slot, tid);
        }
    }
}

/// Whether objects were loaded or unloaded since the last call (glibc's
/// counts of loads and unloads, as dl_iterate_phdr reports them: both
/// only grow, so their sum moves with either).
fn objects_changed() -> bool {
    static SEEN: AtomicU64 = AtomicU64::new(0);
    extern "C" fn changes(info: *mut libc::dl_phdr_info, _size: usize, data: *mut c_void) -> c_int {
        // SAFETY: valid info; data is our counter.
        unsafe { *data.cast::<u64>() = (*info).dlpi_adds.wrapping_add((*info).dlpi_subs) };
        1
    }
    let mut count = 0u64;
    // SAFETY: the callback writes our local counter only.
    unsafe { libc::dl_iterate_phdr(Some(changes), (&mut count as *mut u64).cast()) };
    SEEN.swap(count, Ordering::Relaxed) != count
}
