//! Samples: process-wide resource figures at a moment, with a number, a
//! label and a cause (the manual's "Performance Data" chapter: start, end, pause, resume, periodic,
//! `collector sample record`, debugger stops, the API, a signal, fork).
//! Async-signal-safe: getrusage and a raw read of /proc/self/statm.

use crate::{log, sys};
use experiment::layout::SampleCause;
use std::sync::atomic::{AtomicU64, Ordering};

static NUMBER: AtomicU64 = AtomicU64::new(0);

/// Starts numbering again (a new experiment).
pub fn reset() {
    NUMBER.store(0, Ordering::Relaxed);
}

/// Records one sample. Async-signal-safe.
pub fn record(cause: SampleCause, label: &[u8]) {
    if !log::is_open() {
        return;
    }
    // SAFETY: rusage is plain data filled by the kernel.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: valid out-pointer.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    let rss_kb = resident_kb().unwrap_or(0);
    let number = NUMBER.fetch_add(1, Ordering::Relaxed) + 1;
    log::write("sample", |line| {
        line.u64("number", number);
        line.str("cause", cause.name().as_bytes());
        line.str("label", label);
        line.u64("utime_ns", timeval_ns(&usage.ru_utime));
        line.u64("stime_ns", timeval_ns(&usage.ru_stime));
        line.u64("minflt", usage.ru_minflt as u64);
        line.u64("majflt", usage.ru_majflt as u64);
        line.u64("nvcsw", usage.ru_nvcsw as u64);
        line.u64("nivcsw", usage.ru_nivcsw as u64);
        line.u64("inblock", usage.ru_inblock as u64);
        line.u64("oublock", usage.ru_oublock as u64);
        line.u64("rss_kb", rss_kb);
        line.u64("heap_order", crate::heap::order_now());
    });
}

fn timeval_ns(tv: &libc::timeval) -> u64 {
    (tv.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add((tv.tv_usec as u64).saturating_mul(1000))
}

/// Current resident set size: the second field of /proc/self/statm, in
/// pages.
fn resident_kb() -> Option<u64> {
    let mut buf = [0u8; 128];
    let text = sys::read_small_file(c"/proc/self/statm", &mut buf)?;
    let (_, rest) = sys::parse_u64(text)?;
    let (pages, _) = sys::parse_u64(rest)?;
    // SAFETY: sysconf has no side effects.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    Some(pages * (page.max(4096) as u64) / 1024)
}
