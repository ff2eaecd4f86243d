//! The time rdbx holds the process stopped, told to the collector in it so
//! that its off-CPU, sync-wait and I/O times leave it out: a thread asleep
//! while the user sat at a breakpoint was not waiting for the program. The
//! other side is collector-lib/src/hold.rs: `__rdbx_collector_hold`, two
//! words, the nanoseconds of the holds that ended and the start of the one
//! in progress on the process's CLOCK_MONOTONIC (0 when none is).
//!
//! A hold begins when rdbx stops every thread (`stop_all`: a breakpoint,
//! the end of a step, Ctrl-C, an attach) and ends when it resumes every
//! thread (`resume_all`) or lets the process go (`detach`). Threads are
//! all-stop, so every thread is held the same span. What runs inside a
//! hold does not end it: an injected call, a single step (the other
//! threads stay stopped; the calling or stepped thread's own CPU time
//! there is left out twice, microseconds). The stops that pass the
//! collector's perf SIGTRAPs on, or find a breakpoint's condition false,
//! stop one thread while the others run: they are not holds.
//!
//! This is the clock's one writer, always with every thread stopped: the
//! start of a hold before code of the program runs in it (when every
//! thread has stopped, and again before an injected call, which may be
//! the one that loaded the library), its end just before the threads run
//! again. The start word is journalled (rescue.rs), so a dying rdbx lets
//! the process go with no hold in progress. Without the library in the
//! process nothing is written.

use crate::engine::Debugger;
use crate::objects::LoadedObjects;

/// The collector's clock: `#[repr(C)] { held_ns: u64, since_ns: u64 }`.
const CLOCK_SYMBOL: &str = "__rdbx_collector_hold";
const CLOCK_SIZE: u64 = 16;
const SINCE_OFFSET: u64 = 8;

/// The hold in progress and where the collector's clock is.
#[derive(Default)]
pub(crate) struct Hold {
    /// When the hold in progress began, on rdbx's CLOCK_MONOTONIC.
    since_ns: Option<u64>,
    /// The address of the start word, once written in this hold.
    shown_at: Option<u64>,
    clock: Option<Clock>,
}

/// The collector's clock as found in one generation of the objects.
struct Clock {
    generation: u64,
    address: Option<u64>,
    /// The process's CLOCK_MONOTONIC less rdbx's (time namespaces).
    offset_ns: i64,
}

impl Debugger {
    /// Every thread is about to be stopped: a hold begins (unless one is
    /// in progress).
    pub(crate) fn hold_begins(&mut self) {
        self.hold.since_ns.get_or_insert_with(monotonic_ns);
    }

    /// Code of the program is about to run in a hold (every thread is
    /// stopped): the collector learns when the hold began, once per hold.
    pub(crate) fn show_hold(&mut self) {
        let Some(since) = self.hold.since_ns else {
            return;
        };
        if self.hold.shown_at.is_some() {
            return;
        }
        let Some((address, offset_ns)) = self.hold_clock() else {
            return;
        };
        let Some(process) = self.process.as_ref() else {
            return;
        };
        let at = address + SINCE_OFFSET;
        let start = since.saturating_add_signed(offset_ns).max(1);
        crate::rescue::note_patch(at, &[0; 8]);
        match process.memory().write(at, &start.to_le_bytes()) {
            Ok(()) => self.hold.shown_at = Some(at),
            Err(_) => crate::rescue::forget_patch(at, 8),
        }
    }

    /// Every thread is about to run again, or be let go: the hold ends,
    /// its length added to the collector's clock.
    pub(crate) fn hold_ends(&mut self) {
        let Some(since) = self.hold.since_ns.take() else {
            return;
        };
        let shown_at = self.hold.shown_at.take();
        if let Some(at) = shown_at {
            crate::rescue::forget_patch(at, 8);
        }
        let clock = self.hold_clock();
        let Some(process) = self.process.as_ref() else {
            return;
        };
        let memory = process.memory();
        let Some((address, _)) = clock else {
            if let Some(at) = shown_at {
                let _ = memory.write(at, &[0; 8]);
            }
            return;
        };
        let Ok(held) = memory.read_u64(address) else {
            return;
        };
        let held = held.saturating_add(monotonic_ns().saturating_sub(since));
        let mut words = [0u8; CLOCK_SIZE as usize];
        words[..8].copy_from_slice(&held.to_le_bytes());
        let _ = memory.write(address, &words);
    }

    /// The process is gone: no hold, no clock.
    pub(crate) fn forget_hold(&mut self) {
        self.hold = Hold::default();
    }

    /// The start word written in the hold in progress, if it was: a child
    /// forked meanwhile has a copy of it to clear.
    pub(crate) fn hold_shown_at(&self) -> Option<u64> {
        self.hold.shown_at
    }

    /// The objects changed (a loader event, a library loaded by an
    /// injected call): the clock is looked up now, in a stop no one waits
    /// for, rather than in the next one the user does (a Ctrl-C, a
    /// breakpoint), which reading a library's symbols would delay.
    pub(crate) fn objects_changed(&mut self) {
        let _ = self.hold_clock();
    }

    /// The clock's address and the clocks' offset, looked up again when
    /// the objects changed.
    fn hold_clock(&mut self) -> Option<(u64, i64)> {
        let generation = self.objects.generation();
        if self.hold.clock.as_ref().map(|c| c.generation) != Some(generation) {
            let pid = self.process.as_ref()?.pid();
            self.hold.clock = Some(Clock {
                generation,
                address: find_clock(&self.objects),
                offset_ns: clock_offset_ns(pid),
            });
        }
        let clock = self.hold.clock.as_ref()?;
        Some((clock.address?, clock.offset_ns))
    }
}

/// The collector's clock in the collector's library (`libcollector*.so`),
/// by linkage name. Only that library is searched: this runs in the first
/// stop after the objects changed, where building the symbol tables of
/// every library (libc's, the program's) would delay the stop the user
/// is waiting for, and a program without the collector would pay it for
/// nothing.
fn find_clock(objects: &LoadedObjects) -> Option<u64> {
    let is_collector = |path: &std::path::Path| {
        path.file_name()
            .and_then(|name| name.to_str())
            .is_some_and(|name| name.starts_with("libcollector"))
    };
    objects
        .list
        .iter()
        .filter(|o| is_collector(&o.path))
        .find_map(|o| {
            let symbol = o
                .file
                .lookup_linkage_name(CLOCK_SYMBOL)
                .into_iter()
                .find(|s| !s.is_function && s.address != 0 && s.size == CLOCK_SIZE)?;
            Some(o.runtime_address(symbol.address))
        })
}

/// The process's CLOCK_MONOTONIC less ours: not 0 when one of us is in a
/// time namespace the other is not in.
fn clock_offset_ns(pid: i32) -> i64 {
    monotonic_offset_ns(&format!("/proc/{pid}/timens_offsets"))
        - monotonic_offset_ns("/proc/self/timens_offsets")
}

/// The `monotonic SECONDS NANOSECONDS` line of a timens_offsets file (0
/// without one: no time namespaces here).
fn monotonic_offset_ns(path: &str) -> i64 {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    parse_monotonic_offset(&text).unwrap_or(0)
}

fn parse_monotonic_offset(text: &str) -> Option<i64> {
    text.lines().find_map(|line| {
        let mut fields = line.split_whitespace();
        if fields.next()? != "monotonic" {
            return None;
        }
        let seconds: i64 = fields.next()?.parse().ok()?;
        let nanoseconds: i64 = fields.next()?.parse().ok()?;
        Some(
            seconds
                .saturating_mul(1_000_000_000)
                .saturating_add(nanoseconds),
        )
    })
}

fn monotonic_ns() -> u64 {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now) };
    (now.tv_sec as u64) * 1_000_000_000 + now.tv_nsec as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_namespace_offsets() {
        let text = "monotonic           5    250\nboottime            0         0\n";
        assert_eq!(parse_monotonic_offset(text), Some(5_000_000_250));
        assert_eq!(
            parse_monotonic_offset("monotonic -2 0\n"),
            Some(-2_000_000_000)
        );
        assert_eq!(parse_monotonic_offset(""), None);
    }
}
