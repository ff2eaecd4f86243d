//! Synchronization wait tracing: the pthread wait family (mutex,
//! condition variable, rwlock, semaphore, join, barrier), interposed like
//! the malloc family (heap.rs) and recorded while an experiment traces
//! waits, as the manual's "Synchronization Wait Tracing Data" describes
//! it: each call that waited at least the threshold, with how long, on
//! which object, and the call stack.
//!
//! The hooks forward to the next definition (libc's), resolved once in
//! the constructor (attached: what the program's own calls reached, and
//! the GOT entries are redirected, see got.rs).
//!
//! A call that does not wait must cost little: for the mutex, rwlock and
//! semaphore the non-blocking form is tried first, and when it succeeds
//! the call returns at once without reading the clock (so it is never
//! recorded, whatever the threshold). Only a call that would block reads
//! CLOCK_MONOTONIC before and after the real blocking call (the real
//! clock, not the coarse one heap events use: waits are microseconds).
//! A condition wait, a join and a barrier always wait for something else:
//! they are always timed.
//!
//! What runs on a recorded wait allocates nothing and takes no lock of
//! ours: the thread's slot, busy flag, walk memo and stack cache are
//! heap.rs's (one flag against recursion for both kinds of hook: the
//! collector's own calls made inside a hook, and a signal handler's wait
//! during a recorded one, are not recorded), records go into the thread's
//! block of the `sync` file.

use crate::blocks::WriteError;
use crate::hold::{self, Moment};
use crate::real;
use crate::{heap, lifecycle, log, state, sys};
use experiment::sync::{SyncEvent, SyncOp, SYNC_RECORD_SIZE};
use experiment::text::SyncTrace;
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicU64, Ordering};

extern "C" {
    fn pthread_testcancel();
}

/// What pthread_barrier_wait returns to one of the threads (glibc's value).
const PTHREAD_BARRIER_SERIAL_THREAD: c_int = -1;

/// A wait is recorded when it took at least this long.
static THRESHOLD_NS: AtomicU64 = AtomicU64::new(0);

/// The least threshold `calibrate` sets.
const MIN_CALIBRATED_NS: u64 = 1_000;
/// `calibrate`'s threshold is this many times the uncontended lock + unlock.
const CALIBRATE_FACTOR: u64 = 5;

// ---- starting and stopping ----------------------------------------------

/// The threshold chosen at start: `(threshold_ns, calibrated_ns)`, the
/// latter 0 unless measured.
#[derive(Clone, Copy, Debug)]
pub struct Threshold {
    pub threshold_ns: u64,
    pub calibrated_ns: u64,
}

/// Before an experiment that traces waits starts (ordinary context):
/// the real functions (attached: what the program's calls reach now), the
/// slots' prerequisites, and the threshold, measured when asked.
pub fn prepare(setting: SyncTrace) -> Threshold {
    heap::prepare_slots();
    if state::live() {
        crate::got::resolve_reals(crate::got::Set::Sync);
    }
    let threshold = match setting {
        SyncTrace::ThresholdUs(us) => Threshold {
            threshold_ns: us.saturating_mul(1_000),
            calibrated_ns: 0,
        },
        // (Off is not prepared: tracing is on.)
        SyncTrace::Calibrate | SyncTrace::Off => {
            let calibrated = calibrate();
            Threshold {
                threshold_ns: CALIBRATE_FACTOR
                    .saturating_mul(calibrated)
                    .max(MIN_CALIBRATED_NS),
                calibrated_ns: calibrated,
            }
        }
    };
    THRESHOLD_NS.store(threshold.threshold_ns, Ordering::Relaxed);
    threshold
}

/// The `sync` log line: what a wait must take to be recorded.
pub fn log_threshold(threshold: Threshold) {
    log::write("sync", |line| {
        line.u64("threshold_ns", threshold.threshold_ns);
        line.u64("calibrated_ns", threshold.calibrated_ns);
    });
}

/// How long an uncontended pthread_mutex_lock + unlock takes here: the
/// best of 50 rounds of 100 pairs (the best round is the one no
/// interrupt or preemption disturbed), after a warm-up.
fn calibrate() -> u64 {
    let lock = real::PTHREAD_MUTEX_LOCK.address();
    if lock == 0 {
        return 0;
    }
    // SAFETY: the real pthread_mutex_lock, by its signature.
    let lock: MutexFn = unsafe { std::mem::transmute::<usize, MutexFn>(lock) };
    let mut mutex = libc::PTHREAD_MUTEX_INITIALIZER;
    let pointer = (&mut mutex as *mut libc::pthread_mutex_t).cast::<c_void>();
    let pair = || {
        // SAFETY: a valid, initialized mutex of ours, locked and unlocked
        // by this thread only.
        unsafe {
            lock(pointer);
            libc::pthread_mutex_unlock(pointer.cast());
        }
    };
    for _ in 0..1_000 {
        pair();
    }
    let mut best = u64::MAX;
    for _ in 0..50 {
        let start = sys::monotonic_ns();
        for _ in 0..100 {
            pair();
        }
        best = best.min(sys::monotonic_ns().saturating_sub(start) / 100);
    }
    // SAFETY: unlocked, and not used again.
    unsafe { libc::pthread_mutex_destroy(pointer.cast()) };
    best
}

/// Tracing starts. Attached, the GOT entries of the wait family are
/// redirected to the hooks first.
pub fn start_tracing() {
    if state::live() {
        crate::got::patch_all(crate::got::Set::Sync);
    }
    lifecycle::sync_on();
}

pub fn stop_tracing() {
    lifecycle::sync_off();
    if state::live() {
        crate::got::restore_all(crate::got::Set::Sync);
    }
}

// ---- recording ------------------------------------------------------------

/// A wait from `start` to `end` is over: recorded when it reached the
/// threshold and the experiment records now. Its time leaves out the time
/// rdbx held the process stopped (hold.rs). errno is the program's again
/// afterwards (a block claim may set it).
#[inline(never)]
fn finish(op: SyncOp, object: usize, start: Moment, end: Moment) {
    let wait = end.run_ns.saturating_sub(start.run_ns);
    let (start, end) = (start.wall_ns, end.wall_ns);
    if wait < THRESHOLD_NS.load(Ordering::Relaxed) || !lifecycle::recording_sync() {
        return;
    }
    let saved = sys::errno();
    let recorded = heap::record_sync(end, |cursor, tid, stack_id| {
        let record = SyncEvent {
            op,
            start_ns: start,
            wait_ns: wait,
            object: object as u64,
            stack_id,
        }
        .encode();
        state::SYNC.append(
            cursor,
            &state::BUDGET,
            tid,
            end,
            SYNC_RECORD_SIZE,
            |writer| writer.push_bytes(&record),
        )
    });
    if let Err(err) = recorded {
        failed(err);
    }
    sys::set_errno(saved);
}

/// Tracing stops (the program runs on); the log says why, once.
fn failed(err: WriteError) {
    if !lifecycle::sync_off() {
        return;
    }
    match err {
        WriteError::Limit => log::warning("data limit reached: sync wait tracing stopped"),
        WriteError::Disk => log::warning(
            "cannot extend the sync or stacks file (disk full?): sync wait tracing stopped",
        ),
        WriteError::TooLarge => {
            log::warning("a sync record did not fit a block: sync wait tracing stopped")
        }
        WriteError::Closed => {}
    }
}

/// Whether a lock-like call's result means it acquired the object (or
/// timed out) after waiting; the errors returned without waiting
/// (EDEADLK of an errorcheck mutex the caller owns, EINVAL) are no wait.
fn lock_waited(rc: c_int) -> bool {
    matches!(rc, 0 | libc::EOWNERDEAD | libc::ETIMEDOUT)
}

/// The same for a semaphore call (-1 and errno on failure): a timeout and
/// an interruption by a signal come after a wait.
fn sem_waited(rc: c_int) -> bool {
    rc == 0 || matches!(sys::errno(), libc::ETIMEDOUT | libc::EINTR)
}

/// A blocking call timed: the clock around it, then [`finish`] when
/// `waited` says the result came after a wait.
#[inline(always)]
fn timed(
    op: SyncOp,
    object: usize,
    call: impl FnOnce() -> c_int,
    waited: fn(c_int) -> bool,
) -> c_int {
    let start = hold::now();
    let rc = call();
    let end = hold::now();
    if waited(rc) {
        finish(op, object, start, end);
    }
    rc
}

/// A call that always waits for something else (a condition variable's
/// signal, a thread's end, the other threads at a barrier): not
/// recording, the real call alone; else timed.
#[inline(always)]
fn always_timed(
    op: SyncOp,
    object: usize,
    call: impl FnOnce() -> c_int,
    waited: fn(c_int) -> bool,
) -> c_int {
    if !lifecycle::recording_sync() {
        return call();
    }
    timed(op, object, call, waited)
}

/// A lock-like call: not recording, the real call alone; else the
/// non-blocking form first, and only when it finds the object busy
/// (EBUSY; any other result, a robust mutex's EOWNERDEAD included, is
/// what the blocking form would give and is returned as it is), the real
/// blocking call, timed.
#[inline(always)]
fn lock_like(
    op: SyncOp,
    object: usize,
    attempt: impl FnOnce() -> c_int,
    call: impl FnOnce() -> c_int,
) -> c_int {
    if !lifecycle::recording_sync() {
        return call();
    }
    let rc = attempt();
    if rc != libc::EBUSY {
        return rc;
    }
    timed(op, object, call, lock_waited)
}

/// sem_wait and its timed forms: sem_trywait first (errno kept as it was
/// when it fails: the blocking call's errno is what the program sees). A
/// pending cancellation is acted on first, as sem_wait does even when it
/// need not block.
#[inline(always)]
fn sem_like(object: usize, call: impl FnOnce() -> c_int) -> c_int {
    if !lifecycle::recording_sync() {
        return call();
    }
    // SAFETY: no arguments; a cancellation point like the call it precedes.
    unsafe { pthread_testcancel() };
    let saved = sys::errno();
    // SAFETY: the program's semaphore, as it gave it to sem_wait.
    if unsafe { libc::sem_trywait(object as *mut libc::sem_t) } == 0 {
        return 0;
    }
    if sys::errno() != libc::EAGAIN {
        // EINVAL and the like: sem_wait says the same.
        sys::set_errno(saved);
        return call();
    }
    sys::set_errno(saved);
    timed(SyncOp::SemWait, object, call, sem_waited)
}

// ---- the real functions ---------------------------------------------------

type MutexFn = unsafe extern "C" fn(*mut c_void) -> c_int;
type TimedFn = unsafe extern "C" fn(*mut c_void, *const libc::timespec) -> c_int;
type ClockFn = unsafe extern "C" fn(*mut c_void, libc::clockid_t, *const libc::timespec) -> c_int;
type CondFn = unsafe extern "C" fn(*mut c_void, *mut c_void) -> c_int;
type CondTimedFn = unsafe extern "C" fn(*mut c_void, *mut c_void, *const libc::timespec) -> c_int;
type CondClockFn =
    unsafe extern "C" fn(*mut c_void, *mut c_void, libc::clockid_t, *const libc::timespec) -> c_int;
type JoinFn = unsafe extern "C" fn(libc::pthread_t, *mut *mut c_void) -> c_int;

// ---- the hooks ------------------------------------------------------------

/// # Safety
/// libc's pthread_mutex_lock contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_mutex_lock(mutex: *mut c_void) -> c_int {
    lock_like(
        SyncOp::MutexLock,
        mutex as usize,
        // SAFETY: the program's mutex.
        || unsafe { libc::pthread_mutex_trylock(mutex.cast()) },
        || call_real!(real::PTHREAD_MUTEX_LOCK, MutexFn, libc::ENOSYS; mutex),
    )
}

/// # Safety
/// libc's pthread_mutex_timedlock contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_mutex_timedlock(
    mutex: *mut c_void,
    until: *const libc::timespec,
) -> c_int {
    lock_like(
        SyncOp::MutexLock,
        mutex as usize,
        // SAFETY: the program's mutex.
        || unsafe { libc::pthread_mutex_trylock(mutex.cast()) },
        || call_real!(real::PTHREAD_MUTEX_TIMEDLOCK, TimedFn, libc::ENOSYS; mutex, until),
    )
}

/// # Safety
/// libc's pthread_mutex_clocklock contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_mutex_clocklock(
    mutex: *mut c_void,
    clock: libc::clockid_t,
    until: *const libc::timespec,
) -> c_int {
    lock_like(
        SyncOp::MutexLock,
        mutex as usize,
        // SAFETY: the program's mutex.
        || unsafe { libc::pthread_mutex_trylock(mutex.cast()) },
        || call_real!(real::PTHREAD_MUTEX_CLOCKLOCK, ClockFn, libc::ENOSYS; mutex, clock, until),
    )
}

/// # Safety
/// libc's pthread_cond_wait contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_cond_wait(cond: *mut c_void, mutex: *mut c_void) -> c_int {
    let call = || call_real!(real::PTHREAD_COND_WAIT, CondFn, libc::ENOSYS; cond, mutex);
    always_timed(SyncOp::CondWait, cond as usize, call, lock_waited)
}

/// # Safety
/// libc's pthread_cond_timedwait contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_cond_timedwait(
    cond: *mut c_void,
    mutex: *mut c_void,
    until: *const libc::timespec,
) -> c_int {
    let call = || {
        call_real!(real::PTHREAD_COND_TIMEDWAIT, CondTimedFn, libc::ENOSYS;
            cond,
            mutex,
            until
        )
    };
    always_timed(SyncOp::CondWait, cond as usize, call, lock_waited)
}

/// # Safety
/// libc's pthread_cond_clockwait contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_cond_clockwait(
    cond: *mut c_void,
    mutex: *mut c_void,
    clock: libc::clockid_t,
    until: *const libc::timespec,
) -> c_int {
    let call = || {
        call_real!(real::PTHREAD_COND_CLOCKWAIT, CondClockFn, libc::ENOSYS;
            cond,
            mutex,
            clock,
            until
        )
    };
    always_timed(SyncOp::CondWait, cond as usize, call, lock_waited)
}

/// # Safety
/// libc's pthread_rwlock_rdlock contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_rwlock_rdlock(lock: *mut c_void) -> c_int {
    lock_like(
        SyncOp::RwlockRead,
        lock as usize,
        // SAFETY: the program's rwlock.
        || unsafe { libc::pthread_rwlock_tryrdlock(lock.cast()) },
        || call_real!(real::PTHREAD_RWLOCK_RDLOCK, MutexFn, libc::ENOSYS; lock),
    )
}

/// # Safety
/// libc's pthread_rwlock_wrlock contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_rwlock_wrlock(lock: *mut c_void) -> c_int {
    lock_like(
        SyncOp::RwlockWrite,
        lock as usize,
        // SAFETY: the program's rwlock.
        || unsafe { libc::pthread_rwlock_trywrlock(lock.cast()) },
        || call_real!(real::PTHREAD_RWLOCK_WRLOCK, MutexFn, libc::ENOSYS; lock),
    )
}

/// # Safety
/// libc's pthread_rwlock_timedrdlock contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_rwlock_timedrdlock(
    lock: *mut c_void,
    until: *const libc::timespec,
) -> c_int {
    lock_like(
        SyncOp::RwlockRead,
        lock as usize,
        // SAFETY: the program's rwlock.
        || unsafe { libc::pthread_rwlock_tryrdlock(lock.cast()) },
        || call_real!(real::PTHREAD_RWLOCK_TIMEDRDLOCK, TimedFn, libc::ENOSYS; lock, until),
    )
}

/// # Safety
/// libc's pthread_rwlock_timedwrlock contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_rwlock_timedwrlock(
    lock: *mut c_void,
    until: *const libc::timespec,
) -> c_int {
    lock_like(
        SyncOp::RwlockWrite,
        lock as usize,
        // SAFETY: the program's rwlock.
        || unsafe { libc::pthread_rwlock_trywrlock(lock.cast()) },
        || call_real!(real::PTHREAD_RWLOCK_TIMEDWRLOCK, TimedFn, libc::ENOSYS; lock, until),
    )
}

/// # Safety
/// libc's pthread_rwlock_clockrdlock contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_rwlock_clockrdlock(
    lock: *mut c_void,
    clock: libc::clockid_t,
    until: *const libc::timespec,
) -> c_int {
    lock_like(
        SyncOp::RwlockRead,
        lock as usize,
        // SAFETY: the program's rwlock.
        || unsafe { libc::pthread_rwlock_tryrdlock(lock.cast()) },
        || {
            call_real!(real::PTHREAD_RWLOCK_CLOCKRDLOCK, ClockFn, libc::ENOSYS;
                lock,
                clock,
                until
            )
        },
    )
}

/// # Safety
/// libc's pthread_rwlock_clockwrlock contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_rwlock_clockwrlock(
    lock: *mut c_void,
    clock: libc::clockid_t,
    until: *const libc::timespec,
) -> c_int {
    lock_like(
        SyncOp::RwlockWrite,
        lock as usize,
        // SAFETY: the program's rwlock.
        || unsafe { libc::pthread_rwlock_trywrlock(lock.cast()) },
        || {
            call_real!(real::PTHREAD_RWLOCK_CLOCKWRLOCK, ClockFn, libc::ENOSYS;
                lock,
                clock,
                until
            )
        },
    )
}

/// # Safety
/// libc's sem_wait contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_sem_wait(sem: *mut c_void) -> c_int {
    sem_like(
        sem as usize,
        || call_real!(real::SEM_WAIT, MutexFn, sys::no_such_function(-1); sem),
    )
}

/// # Safety
/// libc's sem_timedwait contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_sem_timedwait(
    sem: *mut c_void,
    until: *const libc::timespec,
) -> c_int {
    sem_like(
        sem as usize,
        || call_real!(real::SEM_TIMEDWAIT, TimedFn, sys::no_such_function(-1); sem, until),
    )
}

/// # Safety
/// libc's sem_clockwait contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_sem_clockwait(
    sem: *mut c_void,
    clock: libc::clockid_t,
    until: *const libc::timespec,
) -> c_int {
    sem_like(
        sem as usize,
        || call_real!(real::SEM_CLOCKWAIT, ClockFn, sys::no_such_function(-1); sem, clock, until),
    )
}

/// # Safety
/// libc's pthread_join contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_join(
    thread: libc::pthread_t,
    result: *mut *mut c_void,
) -> c_int {
    let call = || call_real!(real::PTHREAD_JOIN, JoinFn, libc::ENOSYS; thread, result);
    always_timed(SyncOp::Join, thread as usize, call, |rc| rc == 0)
}

/// # Safety
/// libc's pthread_barrier_wait contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_barrier_wait(barrier: *mut c_void) -> c_int {
    let call = || call_real!(real::PTHREAD_BARRIER_WAIT, MutexFn, libc::ENOSYS; barrier);
    always_timed(SyncOp::Barrier, barrier as usize, call, |rc| {
        rc == 0 || rc == PTHREAD_BARRIER_SERIAL_THREAD
    })
}

// ---- the exported entry points -----------------------------------------
// What the program's calls reach when the collector is preloaded (an
// attached collector patches GOT entries with the hooks instead).

interposed! {
    pthread_mutex_lock(mutex: *mut c_void) -> c_int =
        hook_mutex_lock, Some(&real::PTHREAD_MUTEX_LOCK);
    pthread_mutex_timedlock(mutex: *mut c_void, until: *const libc::timespec) -> c_int =
        hook_mutex_timedlock, Some(&real::PTHREAD_MUTEX_TIMEDLOCK);
    pthread_mutex_clocklock(mutex: *mut c_void, clock: libc::clockid_t,
                            until: *const libc::timespec) -> c_int =
        hook_mutex_clocklock, Some(&real::PTHREAD_MUTEX_CLOCKLOCK);
    pthread_cond_wait(cond: *mut c_void, mutex: *mut c_void) -> c_int =
        hook_cond_wait, Some(&real::PTHREAD_COND_WAIT);
    pthread_cond_timedwait(cond: *mut c_void, mutex: *mut c_void,
                           until: *const libc::timespec) -> c_int =
        hook_cond_timedwait, Some(&real::PTHREAD_COND_TIMEDWAIT);
    pthread_cond_clockwait(cond: *mut c_void, mutex: *mut c_void, clock: libc::clockid_t,
                           until: *const libc::timespec) -> c_int =
        hook_cond_clockwait, Some(&real::PTHREAD_COND_CLOCKWAIT);
    pthread_rwlock_rdlock(lock: *mut c_void) -> c_int =
        hook_rwlock_rdlock, Some(&real::PTHREAD_RWLOCK_RDLOCK);
    pthread_rwlock_wrlock(lock: *mut c_void) -> c_int =
        hook_rwlock_wrlock, Some(&real::PTHREAD_RWLOCK_WRLOCK);
    pthread_rwlock_timedrdlock(lock: *mut c_void, until: *const libc::timespec) -> c_int =
        hook_rwlock_timedrdlock, Some(&real::PTHREAD_RWLOCK_TIMEDRDLOCK);
    pthread_rwlock_timedwrlock(lock: *mut c_void, until: *const libc::timespec) -> c_int =
        hook_rwlock_timedwrlock, Some(&real::PTHREAD_RWLOCK_TIMEDWRLOCK);
    pthread_rwlock_clockrdlock(lock: *mut c_void, clock: libc::clockid_t,
                               until: *const libc::timespec) -> c_int =
        hook_rwlock_clockrdlock, Some(&real::PTHREAD_RWLOCK_CLOCKRDLOCK);
    pthread_rwlock_clockwrlock(lock: *mut c_void, clock: libc::clockid_t,
                               until: *const libc::timespec) -> c_int =
        hook_rwlock_clockwrlock, Some(&real::PTHREAD_RWLOCK_CLOCKWRLOCK);
    sem_wait(sem: *mut c_void) -> c_int = hook_sem_wait, Some(&real::SEM_WAIT);
    sem_timedwait(sem: *mut c_void, until: *const libc::timespec) -> c_int =
        hook_sem_timedwait, Some(&real::SEM_TIMEDWAIT);
    sem_clockwait(sem: *mut c_void, clock: libc::clockid_t,
                  until: *const libc::timespec) -> c_int =
        hook_sem_clockwait, Some(&real::SEM_CLOCKWAIT);
    pthread_join(thread: libc::pthread_t, result: *mut *mut c_void) -> c_int =
        hook_join, Some(&real::PTHREAD_JOIN);
    pthread_barrier_wait(barrier: *mut c_void) -> c_int =
        hook_barrier_wait, Some(&real::PTHREAD_BARRIER_WAIT);
}
