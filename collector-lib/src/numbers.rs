//! dbx's thread numbers (`t@N`), written in `thread-start` lines so that
//! the analyzer's `thread_list` and the debugger's `threads` give the same
//! thread the same number: the process's first thread is 1, and each
//! thread created after it takes the next number, in order of creation
//! (a number is never reused, even when its thread has exited).
//!
//! The collector sees creation where it interposes `pthread_create`: the
//! new thread's number is taken under a lock held across the real
//! `pthread_create`, so concurrent creators are numbered in the order
//! their clones happen, which is the order the debugger sees them in.
//! Threads it did not see created (those that exist when collection
//! starts in a process it was loaded into, those the watcher finds later,
//! the watcher itself) take the next numbers when they are found, several
//! found at once in tid order: how the debugger numbers the threads of a
//! process it attaches to.
//!
//! The numbers of live threads are kept in a fixed table keyed by tid (no
//! allocation: the fork child and the watcher use it too).

use crate::threads::MAX_THREADS;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

/// The last number given; the first thread's is 1.
static LAST: AtomicU32 = AtomicU32::new(1);
/// Held while a `pthread_create` we interpose runs.
static CREATING: AtomicBool = AtomicBool::new(false);
/// `(tid << 32) | number` of live threads; 0 is an empty entry.
static KNOWN: [AtomicU64; MAX_THREADS] = [const { AtomicU64::new(0) }; MAX_THREADS];
const TOMBSTONE: u64 = u64::MAX;

/// Takes the next number for a thread the collector finds already there.
pub fn next() -> u32 {
    LAST.fetch_add(1, Ordering::AcqRel) + 1
}

/// A `pthread_create` in progress: holds the creation lock and the number
/// the new thread gets if the creation succeeds.
pub struct Creation {
    number: u32,
}

impl Creation {
    /// Waits for other creators, then reserves the next number.
    pub fn begin() -> Creation {
        while CREATING
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            // SAFETY: sched_yield has no preconditions.
            unsafe { libc::sched_yield() };
        }
        Creation {
            number: LAST.load(Ordering::Acquire) + 1,
        }
    }

    pub fn number(&self) -> u32 {
        self.number
    }

    /// The thread was created: its number is taken.
    pub fn created(self) {
        LAST.store(self.number, Ordering::Release);
    }
}

impl Drop for Creation {
    fn drop(&mut self) {
        CREATING.store(false, Ordering::Release);
    }
}

fn home(tid: i32) -> usize {
    (tid as u32).wrapping_mul(2_654_435_761) as usize % MAX_THREADS
}

fn tid_of(entry: u64) -> i32 {
    (entry >> 32) as i32
}

/// Remembers that thread `tid` is number `number`.
pub fn remember(tid: i32, number: u32) {
    let packed = (u64::from(tid as u32) << 32) | u64::from(number);
    let start = home(tid);
    let mut free = None;
    for step in 0..MAX_THREADS {
        let Some(entry) = KNOWN.get((start + step) % MAX_THREADS) else {
            return;
        };
        let current = entry.load(Ordering::Acquire);
        if current != 0 && current != TOMBSTONE && tid_of(current) == tid {
            entry.store(packed, Ordering::Release);
            return;
        }
        if current == TOMBSTONE && free.is_none() {
            free = Some(entry);
        }
        if current == 0 {
            free.get_or_insert(entry);
            break;
        }
    }
    // A full table drops the number: the thread is numbered again if
    // collection restarts while it lives.
    let Some(entry) = free else { return };
    let current = entry.load(Ordering::Acquire);
    if entry
        .compare_exchange(current, packed, Ordering::AcqRel, Ordering::Acquire)
        .is_err()
    {
        // Another thread took the entry meanwhile: try again from the start.
        remember(tid, number);
    }
}

/// The number of thread `tid`, if the collector knows it.
pub fn number_of(tid: i32) -> Option<u32> {
    let start = home(tid);
    for step in 0..MAX_THREADS {
        let current = KNOWN
            .get((start + step) % MAX_THREADS)?
            .load(Ordering::Acquire);
        match current {
            0 => return None,
            TOMBSTONE => {}
            c if tid_of(c) == tid => return Some(c as u32),
            _ => {}
        }
    }
    None
}

/// Thread `tid` is gone.
pub fn forget(tid: i32) {
    let start = home(tid);
    for step in 0..MAX_THREADS {
        let Some(entry) = KNOWN.get((start + step) % MAX_THREADS) else {
            return;
        };
        let current = entry.load(Ordering::Acquire);
        match current {
            0 => return,
            TOMBSTONE => {}
            c if tid_of(c) == tid => {
                let _ = entry.compare_exchange(c, TOMBSTONE, Ordering::AcqRel, Ordering::Acquire);
                return;
            }
            _ => {}
        }
    }
}

/// In a fork child: a new process whose only thread, the caller, is its
/// first. A creation lock held by a thread of the parent is released (that
/// thread does not exist here).
pub fn restart_in_fork_child(tid: i32) {
    for entry in KNOWN.iter() {
        entry.store(0, Ordering::Relaxed);
    }
    LAST.store(1, Ordering::Release);
    CREATING.store(false, Ordering::Release);
    remember(tid, 1);
}

#[cfg(test)]
mod tests {
    use super::*;

    // One test: the numbers are process-wide. A creation holds the lock,
    // so its number is the one after the last even if other threads of
    // the test binary create threads meanwhile.
    #[test]
    fn numbers_in_order_of_creation_and_by_tid() {
        restart_in_fork_child(1000);
        assert_eq!(number_of(1000), Some(1));
        let creation = Creation::begin();
        let first = creation.number();
        assert!(first >= 2);
        creation.created();
        // A failed creation takes no number.
        let failed = Creation::begin();
        let second = failed.number();
        assert!(second > first);
        drop(failed);
        let creation = Creation::begin();
        assert_eq!(creation.number(), LAST.load(Ordering::Acquire) + 1);
        creation.created();
        assert!(next() > first);
        remember(1003, 3);
        remember(1003 + MAX_THREADS as i32, 4);
        assert_eq!(number_of(1003), Some(3));
        assert_eq!(number_of(1003 + MAX_THREADS as i32), Some(4));
        forget(1003);
        assert_eq!(number_of(1003), None);
        // The entry after the tombstone is still found.
        assert_eq!(number_of(1003 + MAX_THREADS as i32), Some(4));
        remember(1003, 7);
        assert_eq!(number_of(1003), Some(7));
        assert_eq!(number_of(55), None);
    }
}
