//! The experiment's life cycle: one state word, owned here. The signal
//! handler and the heap hooks read it with one load; `state` moves it
//! through its transitions (start, pause, resume, stop, a fork child's
//! reset) and the writers of each kind of data turn their own kind off
//! after a write error. Nothing else stores to it.
//!
//! ```text
//!            begin_start          finish_start
//!   Idle ───────────────▶ Starting ─────────────▶ Active ◀─┐ pause/resume
//!    ▲  ◀─────────────────────┘ abort_start         │    ──┘ (the paused bit)
//!    │                                               │ begin_stop
//!    └──────────────── finish_stop ◀──── Stopping ◀──┘
//!   (a fork child: any phase → Idle)
//! ```
//!
//! Data is recorded only while Active and not paused, and only the kinds
//! whose bit is on: `clock` (clock profiling wanted and still possible),
//! `heap` (heap tracing wanted, set up, and still possible), `sync` (sync
//! wait tracing, the same), `io` (I/O tracing, the same), `offcpu` (off-CPU
//! profiling, the same), `counters` (counter overflow profiling, the same),
//! `mpi` (MPI tracing, the same).

use std::sync::atomic::{AtomicU32, Ordering};

/// Where an experiment is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Idle,
    Starting,
    Active,
    Stopping,
}

const PHASE_MASK: u32 = 0b11;
const PAUSED: u32 = 1 << 2;
const CLOCK: u32 = 1 << 3;
const HEAP: u32 = 1 << 4;
/// Loaded into a running process (an injected dlopen): nothing of ours is
/// interposed. Set while Idle, for the next experiment.
const LIVE: u32 = 1 << 5;
const SYNC: u32 = 1 << 6;
const IO: u32 = 1 << 8;
const OFFCPU: u32 = 1 << 7;
const COUNTERS: u32 = 1 << 9;
const MPI: u32 = 1 << 10;

static WORD: AtomicU32 = AtomicU32::new(0);

fn phase_of(word: u32) -> Phase {
    match word & PHASE_MASK {
        0 => Phase::Idle,
        1 => Phase::Starting,
        2 => Phase::Active,
        _ => Phase::Stopping,
    }
}

fn code(phase: Phase) -> u32 {
    match phase {
        Phase::Idle => 0,
        Phase::Starting => 1,
        Phase::Active => 2,
        Phase::Stopping => 3,
    }
}

/// Moves `from` → `to` (other bits changed by `bits`), atomically; false
/// when the phase was not `from`.
fn transition(from: Phase, to: Phase, bits: impl Fn(u32) -> u32) -> bool {
    WORD.fetch_update(Ordering::AcqRel, Ordering::Acquire, |word| {
        (phase_of(word) == from).then(|| bits(word & !PHASE_MASK) | code(to))
    })
    .is_ok()
}

pub fn phase() -> Phase {
    phase_of(WORD.load(Ordering::Acquire))
}

/// Idle → Starting; false when an experiment is already under way.
pub fn begin_start() -> bool {
    transition(Phase::Idle, Phase::Starting, |bits| bits & LIVE)
}

/// Starting → Active, recording clock profiles when `clock`, paused when
/// `paused`. (Heap tracing joins once it is set up: [`heap_on`].)
pub fn finish_start(paused: bool, clock: bool) -> bool {
    transition(Phase::Starting, Phase::Active, |bits| {
        let mut bits = bits & LIVE;
        if paused {
            bits |= PAUSED;
        }
        if clock {
            bits |= CLOCK;
        }
        bits
    })
}

/// Starting → Idle: the start failed.
pub fn abort_start() {
    transition(Phase::Starting, Phase::Idle, |bits| bits & LIVE);
}

/// Active → Stopping: nothing more is recorded.
pub fn begin_stop() -> bool {
    transition(Phase::Active, Phase::Stopping, |bits| bits & LIVE)
}

/// Stopping → Idle.
pub fn finish_stop() {
    transition(Phase::Stopping, Phase::Idle, |bits| bits & LIVE);
}

/// In a fork child: whatever the parent was doing is not the child's.
pub fn reset_after_fork() {
    WORD.fetch_and(LIVE, Ordering::AcqRel);
}

/// Sets the paused bit while Active; false when not Active or already so.
pub fn set_paused(paused: bool) -> bool {
    WORD.fetch_update(Ordering::AcqRel, Ordering::Acquire, |word| {
        let active = phase_of(word) == Phase::Active;
        let already = word & PAUSED != 0;
        (active && already != paused).then_some(word ^ PAUSED)
    })
    .is_ok()
}

/// Heap tracing is set up (while Active).
pub fn heap_on() {
    WORD.fetch_or(HEAP, Ordering::AcqRel);
}

/// Turns a kind off (a write error, or the experiment closing); true for
/// the caller that did it (to say why once).
pub fn heap_off() -> bool {
    WORD.fetch_and(!HEAP, Ordering::AcqRel) & HEAP != 0
}

/// Sync wait tracing is set up (while Active).
pub fn sync_on() {
    WORD.fetch_or(SYNC, Ordering::AcqRel);
}

pub fn sync_off() -> bool {
    WORD.fetch_and(!SYNC, Ordering::AcqRel) & SYNC != 0
}

/// I/O tracing is set up (while Active).
pub fn io_on() {
    WORD.fetch_or(IO, Ordering::AcqRel);
}

pub fn io_off() -> bool {
    WORD.fetch_and(!IO, Ordering::AcqRel) & IO != 0
}

/// MPI tracing is set up (while Active).
pub fn mpi_on() {
    WORD.fetch_or(MPI, Ordering::AcqRel);
}

pub fn mpi_off() -> bool {
    WORD.fetch_and(!MPI, Ordering::AcqRel) & MPI != 0
}

/// Whether MPI calls are traced: the kind set up (whatever the phase).
pub fn mpi_traced() -> bool {
    WORD.load(Ordering::Acquire) & MPI != 0
}

/// Whether an MPI call is recorded now. One load.
pub fn recording_mpi() -> bool {
    recording(MPI)
}

/// Off-CPU profiling is set up (while Active).
pub fn offcpu_on() {
    WORD.fetch_or(OFFCPU, Ordering::AcqRel);
}

pub fn offcpu_off() -> bool {
    WORD.fetch_and(!OFFCPU, Ordering::AcqRel) & OFFCPU != 0
}

/// Whether switches off the CPU are recorded: the kind set up (whatever
/// the phase).
pub fn offcpu_traced() -> bool {
    WORD.load(Ordering::Acquire) & OFFCPU != 0
}

/// Whether an off-CPU event is recorded now. Async-signal-safe: one load.
pub fn recording_offcpu() -> bool {
    recording(OFFCPU)
}

/// Counter overflow profiling is set up (while Active).
pub fn counters_on() {
    WORD.fetch_or(COUNTERS, Ordering::AcqRel);
}

pub fn counters_off() -> bool {
    WORD.fetch_and(!COUNTERS, Ordering::AcqRel) & COUNTERS != 0
}

/// Whether counters are profiled: the kind set up (whatever the phase).
pub fn counters_traced() -> bool {
    WORD.load(Ordering::Acquire) & COUNTERS != 0
}

/// Whether a counter overflow is recorded now. Async-signal-safe: one load.
pub fn recording_counters() -> bool {
    recording(COUNTERS)
}

pub fn clock_off() -> bool {
    WORD.fetch_and(!CLOCK, Ordering::AcqRel) & CLOCK != 0
}

/// Says whether the next experiment starts in a live process.
pub fn set_live(live: bool) {
    if live {
        WORD.fetch_or(LIVE, Ordering::AcqRel);
    } else {
        WORD.fetch_and(!LIVE, Ordering::AcqRel);
    }
}

pub fn live() -> bool {
    WORD.load(Ordering::Acquire) & LIVE != 0
}

pub fn active() -> bool {
    phase() == Phase::Active
}

pub fn paused() -> bool {
    WORD.load(Ordering::Acquire) & PAUSED != 0
}

/// Whether clock profiling is on: wanted and still possible (whatever
/// the phase).
pub fn clock_traced() -> bool {
    WORD.load(Ordering::Acquire) & CLOCK != 0
}

/// Whether the heap is traced: the kind set up (whatever the phase).
pub fn heap_traced() -> bool {
    WORD.load(Ordering::Acquire) & HEAP != 0
}

/// Whether sync waits are traced: the kind set up (whatever the phase).
pub fn sync_traced() -> bool {
    WORD.load(Ordering::Acquire) & SYNC != 0
}

/// Whether file I/O calls are traced: the kind set up (whatever the phase).
pub fn io_traced() -> bool {
    WORD.load(Ordering::Acquire) & IO != 0
}

/// Whether an I/O call is recorded now. One load.
pub fn recording_io() -> bool {
    recording(IO)
}

/// Whether a sync wait is recorded now. One load.
pub fn recording_sync() -> bool {
    recording(SYNC)
}

/// Whether a clock tick is recorded now. Async-signal-safe: one load.
pub fn recording_clock() -> bool {
    recording(CLOCK)
}

/// Whether a heap event is recorded now. One load.
pub fn recording_heap() -> bool {
    recording(HEAP)
}

fn recording(kind: u32) -> bool {
    let word = WORD.load(Ordering::Acquire);
    phase_of(word) == Phase::Active && word & PAUSED == 0 && word & kind != 0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One test walks the whole cycle: the word is process-wide.
    #[test]
    fn the_cycle_and_its_refusals() {
        assert_eq!(phase(), Phase::Idle);
        assert!(!set_paused(true), "nothing to pause while idle");
        set_live(true);
        assert!(begin_start());
        assert!(!begin_start(), "one experiment at a time");
        assert!(!recording_clock(), "nothing recorded while starting");
        assert!(finish_start(false, true));
        assert!(recording_clock() && !recording_heap());
        heap_on();
        assert!(recording_heap());
        assert!(!recording_sync(), "each kind has its own bit");
        sync_on();
        assert!(recording_sync());
        assert!(!recording_io(), "each kind has its own bit");
        io_on();
        assert!(recording_io() && io_traced());
        assert!(!recording_offcpu());
        offcpu_on();
        assert!(recording_offcpu() && offcpu_traced());
        assert!(!recording_counters());
        counters_on();
        assert!(recording_counters() && counters_traced());
        assert!(!recording_mpi());
        mpi_on();
        assert!(recording_mpi() && mpi_traced());
        assert!(set_paused(true));
        assert!(!recording_mpi() && mpi_traced());
        assert!(!recording_offcpu());
        assert!(!recording_counters() && counters_traced());
        assert!(!set_paused(true));
        assert!(!recording_clock() && !recording_heap() && !recording_sync());
        assert!(!recording_io(), "paused: nothing recorded");
        assert!(set_paused(false));
        assert!(io_off());
        assert!(!io_off(), "said once");
        assert!(!recording_io() && recording_sync());
        io_on();
        assert!(clock_off());
        assert!(!clock_off(), "said once");
        assert!(!recording_clock() && recording_heap());
        assert!(begin_stop());
        assert!(!recording_heap(), "nothing recorded while stopping");
        assert!(!recording_sync(), "nothing recorded while stopping");
        assert!(!recording_io(), "nothing recorded while stopping");
        assert!(!recording_counters(), "nothing recorded while stopping");
        assert!(!recording_mpi(), "nothing recorded while stopping");
        finish_stop();
        assert_eq!(phase(), Phase::Idle);
        assert!(live(), "live is the process's, kept across experiments");
        assert!(begin_start());
        reset_after_fork();
        assert_eq!(phase(), Phase::Idle);
        set_live(false);
    }
}
