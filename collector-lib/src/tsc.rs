//! CLOCK_MONOTONIC from the processor's timestamp counter, for the I/O
//! hooks, which read the time twice around every traced call.
//!
//! The vDSO's clock_gettime reads the counter with RDTSCP, which waits for
//! every earlier instruction, and converts it under a sequence lock: about
//! 21 ns a read on this project's VM, the two reads of a call as much as
//! the rest of its record. A plain RDTSC, converted here, costs a fraction
//! of that (bench/RESULTS.md, "I/O tracing cost").
//!
//! Used only where it gives CLOCK_MONOTONIC (checked at start, ordinary
//! context):
//! - the counter is invariant (CPUID 0x80000007 EDX bit 8: one rate, also
//!   in deep sleep states);
//! - the kernel's clocksource is `tsc`: the kernel computes
//!   CLOCK_MONOTONIC from this counter on every CPU itself, which it does
//!   only after finding the CPUs' counters in step, so a thread moved to
//!   another CPU between its two reads still gets a right difference.
//!
//! Elsewhere the hooks read clock_gettime, as [`stamp`] says in its value.
//!
//! Conversion: ns = anchor ns + (ticks - anchor ticks) × factor. The
//! factor (ns per tick, 32.32 fixed point) is measured against
//! CLOCK_MONOTONIC over [`CALIBRATION_NS`] at start, then again over the
//! whole run so far each time that has doubled, so it follows the kernel's
//! clock (NTP's slewing included). Each thread takes a new anchor, a
//! (counter, clock_gettime) pair, when its last one is [`REFRESH_NS`] old,
//! and checks the old one's extrapolation against it: off by more than
//! [`TOLERANCE_NS`] (a counter out of step with the kernel's clock) turns
//! the counter off for the rest of the experiment. A converted time is
//! right to the error of a pair, some tens of ns (so a call's start may
//! come that much before the end of the thread's call before it).
//!
//! Async-signal-safe but [`prepare`]: loads, stores, the vDSO.

use crate::sys;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// The counter is read (else clock_gettime).
static USABLE: AtomicBool = AtomicBool::new(false);
/// A thread found the counter out of step with the kernel's clock.
static DISAGREED: AtomicBool = AtomicBool::new(false);
/// ns per tick × 2^32 (0: never calibrated).
static FACTOR: AtomicU64 = AtomicU64::new(0);
/// The calibration's first pair, and the span the factor was measured on.
static BASE_TICKS: AtomicU64 = AtomicU64::new(0);
static BASE_NS: AtomicU64 = AtomicU64::new(0);
static SPAN_NS: AtomicU64 = AtomicU64::new(0);

/// How long the first calibration runs (a busy wait at start): a pair is
/// exact to a few tens of ns, so the first factor to about 1e-5.
pub const CALIBRATION_NS: u64 = 2_000_000;
/// A thread's anchor is taken again after this long.
pub const REFRESH_NS: u64 = 4_000_000;
/// An anchor's extrapolation this far from the kernel's clock turns the
/// counter off (NTP slews 500 ppm at most: 2 µs over REFRESH_NS).
pub const TOLERANCE_NS: u64 = 20_000;
/// A pair whose two counter reads are further apart was interrupted.
const MAX_PAIR_TICKS: u64 = 5_000;

/// Decides for a new experiment whether the counter is read, and
/// calibrates it. Ordinary context: reads sysfs, waits [`CALIBRATION_NS`].
pub fn prepare() {
    USABLE.store(false, Ordering::Relaxed);
    DISAGREED.store(false, Ordering::Relaxed);
    if !invariant_counter() || !kernel_clock_is_tsc() {
        return;
    }
    let Some((ticks, ns)) = pair() else {
        return;
    };
    let until = ns + CALIBRATION_NS;
    let later = loop {
        match pair() {
            Some(later) if later.1 >= until => break later,
            Some(_) => {}
            None => return,
        }
    };
    let Some(factor) = factor_of(later.0.wrapping_sub(ticks), later.1 - ns) else {
        return;
    };
    BASE_TICKS.store(ticks, Ordering::Relaxed);
    BASE_NS.store(ns, Ordering::Relaxed);
    SPAN_NS.store(later.1 - ns, Ordering::Relaxed);
    FACTOR.store(factor, Ordering::Relaxed);
    USABLE.store(true, Ordering::Release);
}

/// What the experiment's hooks read: "tsc", or "vdso" (clock_gettime;
/// also after the counter was found out of step).
pub fn source() -> &'static [u8] {
    if USABLE.load(Ordering::Relaxed) {
        b"tsc"
    } else {
        b"vdso"
    }
}

/// Whether the counter was turned off during the experiment.
pub fn disagreed() -> bool {
    DISAGREED.load(Ordering::Relaxed)
}

/// A moment as a hook takes it: counter ticks, or CLOCK_MONOTONIC ns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stamp {
    Ticks(u64),
    Ns(u64),
}

/// Now, the cheap way this experiment can.
#[inline(always)]
pub fn stamp() -> Stamp {
    if USABLE.load(Ordering::Relaxed) {
        Stamp::Ticks(ticks())
    } else {
        Stamp::Ns(sys::monotonic_ns())
    }
}

/// One thread's conversion of its stamps (plain data, the thread's own).
#[derive(Clone, Copy, Debug)]
pub struct Anchor {
    ticks: u64,
    ns: u64,
    /// The factor when the anchor was taken (0: no anchor yet).
    factor: u64,
    /// Ticks after `ticks` when the anchor is taken again.
    refresh_ticks: u64,
}

impl Anchor {
    pub const fn new() -> Anchor {
        Anchor {
            ticks: 0,
            ns: 0,
            factor: 0,
            refresh_ticks: 0,
        }
    }

    /// (start, duration) in ns of a call stamped `start` and `end`.
    pub fn span(&mut self, start: Stamp, end: Stamp) -> (u64, u64) {
        let (start_ns, time_ns) = match (start, end) {
            (Stamp::Ticks(first), Stamp::Ticks(last)) => {
                let end_ns = self.ns_at(last);
                let time_ns = to_ns(last.saturating_sub(first), self.factor_now());
                (end_ns.saturating_sub(time_ns), time_ns)
            }
            _ => {
                let start_ns = self.ns_of(start);
                (start_ns, self.ns_of(end).saturating_sub(start_ns))
            }
        };
        (start_ns, time_ns)
    }

    fn ns_of(&mut self, stamp: Stamp) -> u64 {
        match stamp {
            Stamp::Ns(ns) => ns,
            Stamp::Ticks(ticks) => self.ns_at(ticks),
        }
    }

    /// CLOCK_MONOTONIC at counter value `ticks` (taken lately).
    fn ns_at(&mut self, ticks: u64) -> u64 {
        if self.factor == 0 || ticks.wrapping_sub(self.ticks) > self.refresh_ticks {
            self.refresh();
        }
        if self.factor == 0 {
            return sys::monotonic_ns();
        }
        self.extrapolate(ticks)
    }

    fn factor_now(&self) -> u64 {
        match self.factor {
            0 => FACTOR.load(Ordering::Relaxed),
            factor => factor,
        }
    }

    fn extrapolate(&self, ticks: u64) -> u64 {
        let since = i128::from(ticks) - i128::from(self.ticks);
        let ns = i128::from(self.ns) + ((since * i128::from(self.factor)) >> 32);
        u64::try_from(ns.max(0)).unwrap_or(u64::MAX)
    }

    /// A new anchor, the old one checked against it.
    fn refresh(&mut self) {
        let Some((ticks, ns)) = pair() else {
            return;
        };
        if self.factor != 0 && self.extrapolate(ticks).abs_diff(ns) > TOLERANCE_NS {
            USABLE.store(false, Ordering::Relaxed);
            DISAGREED.store(true, Ordering::Relaxed);
        }
        let factor = refine(ticks, ns);
        if factor == 0 {
            return;
        }
        self.ticks = ticks;
        self.ns = ns;
        self.factor = factor;
        self.refresh_ticks =
            u64::try_from((u128::from(REFRESH_NS) << 32) / u128::from(factor)).unwrap_or(u64::MAX);
    }
}

impl Default for Anchor {
    fn default() -> Self {
        Anchor::new()
    }
}

/// The factor, measured again over the whole run when the run has grown
/// to twice the span of the current one. Threads may race here: each
/// stores a measure as good as the other's.
fn refine(ticks: u64, ns: u64) -> u64 {
    let base_ns = BASE_NS.load(Ordering::Relaxed);
    let span = ns.saturating_sub(base_ns);
    if span >= 2 * SPAN_NS.load(Ordering::Relaxed) {
        let base_ticks = BASE_TICKS.load(Ordering::Relaxed);
        if let Some(factor) = factor_of(ticks.wrapping_sub(base_ticks), span) {
            FACTOR.store(factor, Ordering::Relaxed);
            SPAN_NS.store(span, Ordering::Relaxed);
            return factor;
        }
    }
    FACTOR.load(Ordering::Relaxed)
}

/// ns per tick × 2^32 of `ticks` lasting `ns`.
fn factor_of(ticks: u64, ns: u64) -> Option<u64> {
    if ticks == 0 || ns == 0 {
        return None;
    }
    u64::try_from((u128::from(ns) << 32) / u128::from(ticks))
        .ok()
        .filter(|&factor| factor != 0)
}

fn to_ns(ticks: u64, factor: u64) -> u64 {
    u64::try_from((u128::from(ticks) * u128::from(factor)) >> 32).unwrap_or(u64::MAX)
}

#[inline(always)]
fn ticks() -> u64 {
    // SAFETY: RDTSC reads the counter; user mode may (the kernel's
    // clocksource being tsc, CR4.TSD is clear).
    unsafe { core::arch::x86_64::_rdtsc() }
}

/// (ticks, CLOCK_MONOTONIC ns) read together: the clock between two
/// counter reads, their middle, of the closest of a few tries (the
/// clock's own counter read is somewhere between them: the pair is right
/// to half their distance, some tens of ns); None when every try was
/// interrupted.
fn pair() -> Option<(u64, u64)> {
    let mut best: Option<(u64, u64, u64)> = None;
    for _ in 0..4 {
        let before = ticks();
        let ns = sys::monotonic_ns();
        let after = ticks();
        let apart = after.wrapping_sub(before);
        if apart <= MAX_PAIR_TICKS && best.is_none_or(|(closest, _, _)| apart < closest) {
            best = Some((apart, before + apart / 2, ns));
        }
    }
    best.map(|(_, ticks, ns)| (ticks, ns))
}

fn invariant_counter() -> bool {
    use core::arch::x86_64::__cpuid;
    // The extended leaf is read only when the processor has it.
    let highest = __cpuid(0x8000_0000).eax;
    highest >= 0x8000_0007 && __cpuid(0x8000_0007).edx & (1 << 8) != 0
}

fn kernel_clock_is_tsc() -> bool {
    let path = c"/sys/devices/system/clocksource/clocksource0/current_clocksource";
    let mut buf = [0u8; 64];
    sys::read_small_file(path, &mut buf).is_some_and(|text| text.trim_ascii() == b"tsc")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_agree_with_clock_gettime() {
        prepare();
        if invariant_counter() && kernel_clock_is_tsc() {
            assert_eq!(source(), b"tsc");
        }
        let mut anchor = Anchor::new();
        for _ in 0..200 {
            let before = sys::monotonic_ns();
            let start = stamp();
            std::thread::sleep(std::time::Duration::from_micros(50));
            let end = stamp();
            let after = sys::monotonic_ns();
            let (start_ns, time_ns) = anchor.span(start, end);
            // Within the clock reads around it (to a few µs: the
            // conversion's error, and the reads are not simultaneous).
            assert!(
                start_ns + 5_000 >= before && start_ns + time_ns <= after + 5_000,
                "{before} <= {start_ns} + {time_ns} <= {after} ({})",
                std::str::from_utf8(source()).unwrap()
            );
            assert!(
                time_ns >= 50_000 && time_ns <= after - before + 5_000,
                "{time_ns}"
            );
        }
        assert!(!disagreed());
    }

    #[test]
    fn clock_gettime_stamps_are_taken_as_they_are() {
        let mut anchor = Anchor::new();
        assert_eq!(
            anchor.span(Stamp::Ns(2_000), Stamp::Ns(3_000)),
            (2_000, 1_000)
        );
        assert_eq!(anchor.span(Stamp::Ns(1_000), Stamp::Ns(900)), (1_000, 0));
    }

    #[test]
    fn factor_and_conversion_round_trip() {
        // 3 GHz: a third of a ns per tick.
        let factor = factor_of(3_000_000_000, 1_000_000_000).unwrap();
        assert_eq!(to_ns(3_000, factor), 999);
        assert_eq!(to_ns(3_000_000_000, factor), 999_999_999);
        assert_eq!(factor_of(0, 5), None);
    }
}
