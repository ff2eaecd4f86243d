//! The time the debugger holds the process stopped, left out of the
//! durations the collector measures. At a breakpoint, after a step or a
//! Ctrl-C, rdbx stops every thread while the user looks around; a thread
//! that was sleeping, waiting on a lock or reading a pipe then seems to
//! wait as long, but a dbx user expects the program's off-CPU, sync-wait
//! and I/O times to be the program's own, not the minutes spent at the
//! prompt.
//!
//! rdbx keeps [`__rdbx_collector_hold`] up to date (debugger/src/hold.rs),
//! always with every thread stopped: when a hold begins (before any code
//! of the program runs in it: a step, an injected call), `since_ns` is its
//! start on CLOCK_MONOTONIC; when it ends (every thread resumed, or the
//! process let go), `held_ns` grows by its length and `since_ns` is 0 again.
//! The stops that deliver the collector's own perf SIGTRAPs stop one
//! thread, never every thread: they are not holds. The library only reads
//! the clock.
//!
//! [`now`] gives CLOCK_MONOTONIC and the run clock: CLOCK_MONOTONIC less
//! every nanosecond held, the hold in progress included (code runs in a
//! hold: `__rdbx_collector_start` arms each thread's off-CPU window in an
//! injected call). So the run-clock time between two readings leaves out
//! the holds between them exactly once, whichever thread reads, and
//! whether the hold began or ended while it was off the CPU.

use crate::sys;
use std::sync::atomic::{AtomicU64, Ordering};

/// Written by rdbx, read here; `#[repr(C)]`: rdbx writes the two words
/// at the symbol's address (held, then since).
#[repr(C)]
pub struct HoldClock {
    /// Nanoseconds of the holds that ended.
    held_ns: AtomicU64,
    /// CLOCK_MONOTONIC when the hold in progress began; 0 when none is.
    since_ns: AtomicU64,
}

/// The clock rdbx finds by this name in the process.
#[no_mangle]
#[used]
#[allow(non_upper_case_globals)]
pub static __rdbx_collector_hold: HoldClock = HoldClock {
    held_ns: AtomicU64::new(0),
    since_ns: AtomicU64::new(0),
};

/// One reading of both clocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Moment {
    /// CLOCK_MONOTONIC: for timestamps.
    pub wall_ns: u64,
    /// CLOCK_MONOTONIC less the time held: for durations.
    pub run_ns: u64,
}

/// Both clocks now. Async-signal-safe: loads and a vDSO clock read.
pub fn now() -> Moment {
    let clock = &__rdbx_collector_hold;
    let read = || {
        (
            clock.held_ns.load(Ordering::Acquire),
            clock.since_ns.load(Ordering::Acquire),
        )
    };
    // rdbx writes only while this thread is stopped: the same words on
    // both sides of the clock read mean no write came between. A thread
    // stopped and resumed in between reads again (a hold is seconds long,
    // so the first retry succeeds).
    let mut tries = 0;
    loop {
        let before = read();
        let wall_ns = sys::monotonic_ns();
        let (held_ns, since_ns) = read();
        tries += 1;
        if (held_ns, since_ns) == before || tries == 3 {
            return Moment {
                wall_ns,
                run_ns: run_ns(wall_ns, held_ns, since_ns),
            };
        }
    }
}

/// The clock's words as one reading saw them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mark {
    held_ns: u64,
    since_ns: u64,
}

/// A moment taken by another clock (the I/O hooks' TSC stamps) with the
/// hold words around it, so a duration between two such moments can
/// leave the holds out ([`held_between`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Marked<T> {
    pub at: T,
    pub mark: Mark,
}

/// `read` (a clock) with the hold words it fell between; read again
/// when rdbx wrote them meanwhile, as [`now`] does. Async-signal-safe
/// when `read` is.
#[inline(always)]
pub fn marked<T>(read: impl Fn() -> T) -> Marked<T> {
    let clock = &__rdbx_collector_hold;
    let words = || Mark {
        held_ns: clock.held_ns.load(Ordering::Acquire),
        since_ns: clock.since_ns.load(Ordering::Acquire),
    };
    let mut tries = 0;
    loop {
        let before = words();
        let at = read();
        tries += 1;
        if words() == before || tries == 3 {
            return Marked { at, mark: before };
        }
    }
}

/// The time held between a moment at `start_ns` with the words `start`
/// and one at `end_ns` with `end` (both CLOCK_MONOTONIC).
pub fn held_between(start: Mark, start_ns: u64, end: Mark, end_ns: u64) -> u64 {
    let held_at = |mark: Mark, at_ns: u64| {
        let holding = if mark.since_ns == 0 {
            0
        } else {
            at_ns.saturating_sub(mark.since_ns)
        };
        mark.held_ns.saturating_add(holding)
    };
    held_at(end, end_ns).saturating_sub(held_at(start, start_ns))
}

/// The run clock at `wall_ns`, given the clock's words.
fn run_ns(wall_ns: u64, held_ns: u64, since_ns: u64) -> u64 {
    let holding = if since_ns == 0 {
        0
    } else {
        wall_ns.saturating_sub(since_ns)
    };
    wall_ns.saturating_sub(held_ns.saturating_add(holding))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_run_clock_stands_still_during_a_hold() {
        // Held 50 before, a hold from 1_000: the clock stops there.
        assert_eq!(run_ns(900, 50, 0), 850);
        assert_eq!(run_ns(1_000, 50, 1_000), 950);
        assert_eq!(run_ns(1_700, 50, 1_000), 950);
        // Ended at 2_000 (held 50 + 1_000): it goes on from where it stood.
        assert_eq!(run_ns(2_000, 1_050, 0), 950);
        assert_eq!(run_ns(2_300, 1_050, 0), 1_250);
    }

    #[test]
    fn a_window_across_a_hold_leaves_it_out_once() {
        // A window from 500 to 2_300 around the hold 1_000..2_000, with a
        // record in an injected call at 1_400 splitting it in two.
        let start = run_ns(500, 50, 0);
        let middle = run_ns(1_400, 50, 1_000);
        let end = run_ns(2_300, 1_050, 0);
        assert_eq!(middle - start, 500);
        assert_eq!(end - middle, 300);
        assert_eq!(end - start, 1_800 - 1_000);
    }

    #[test]
    fn a_start_after_now_counts_nothing() {
        // A start after now (another clock's): no negative hold.
        assert_eq!(run_ns(100, 0, 500), 100);
    }

    #[test]
    fn held_between_agrees_with_the_run_clock() {
        let mark = |held_ns, since_ns| Mark { held_ns, since_ns };
        // The hold 1_000..2_000 between 500 and 2_300.
        assert_eq!(held_between(mark(50, 0), 500, mark(1_050, 0), 2_300), 1_000);
        // A window inside the hold: all of it held.
        assert_eq!(
            held_between(mark(50, 1_000), 1_200, mark(50, 1_000), 1_400),
            200
        );
        // From inside the hold to after it.
        assert_eq!(
            held_between(mark(50, 1_000), 1_400, mark(1_050, 0), 2_300),
            600
        );
        // No hold.
        assert_eq!(held_between(mark(50, 0), 500, mark(50, 0), 900), 0);
        let marked = marked(|| 7);
        assert_eq!((marked.at, marked.mark), (7, mark(0, 0)));
    }

    #[test]
    fn not_held_the_clocks_agree() {
        let moment = now();
        assert!(moment.wall_ns > 0);
        assert_eq!(moment.run_ns, moment.wall_ns);
    }
}
