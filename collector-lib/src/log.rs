//! The experiment's `log` file: one line per event, each appended with a
//! single write(2) on an O_APPEND descriptor, so lines from threads,
//! signal handlers and the debugger's injected calls never interleave.
//! Async-signal-safe: lines are formatted into a stack buffer.

use crate::sys;
use experiment::text::LineWriter;
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};

static LOG_FD: AtomicI32 = AtomicI32::new(-1);
/// Lines that could not be written (disk full): counted, never retried.
static LOST_LINES: AtomicU64 = AtomicU64::new(0);

pub const LINE_MAX: usize = 4096;

pub fn open(fd: i32) {
    let old = LOG_FD.swap(fd, Ordering::AcqRel);
    if old >= 0 {
        sys::close_raw(old);
    }
}

pub fn close() {
    open(-1);
}

pub fn is_open() -> bool {
    LOG_FD.load(Ordering::Acquire) >= 0
}

/// Formats one line with `fill` and appends it. Async-signal-safe.
pub fn write(event: &str, fill: impl FnOnce(&mut LineWriter)) {
    let fd = LOG_FD.load(Ordering::Acquire);
    if fd < 0 {
        return;
    }
    let mut buf = [0u8; LINE_MAX];
    let mut line = LineWriter::new(&mut buf);
    line.event(sys::monotonic_ns(), event);
    fill(&mut line);
    match line.finish() {
        Some(bytes) => {
            if !sys::write_all(fd, bytes) {
                LOST_LINES.fetch_add(1, Ordering::Relaxed);
            }
        }
        None => {
            // Too long (a huge label or path): say so rather than vanish.
            let mut buf = [0u8; 256];
            let mut line = LineWriter::new(&mut buf);
            line.event(sys::monotonic_ns(), "warning");
            line.str("msg", b"a log line was too long and was dropped");
            line.str("event", event.as_bytes());
            if let Some(bytes) = line.finish() {
                sys::write_all(fd, bytes);
            }
        }
    }
}

pub fn warning(message: &str) {
    write("warning", |line| {
        line.str("msg", message.as_bytes());
    });
}

pub fn error(message: &str) {
    write("error", |line| {
        line.str("msg", message.as_bytes());
    });
}
