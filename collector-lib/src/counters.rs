//! Counter overflow profiling (the manual's "Hardware Counter Overflow
//! Profiling Data"): each counter of the experiment counts per thread and,
//! every `interval` events, the thread is interrupted and its call stack
//! recorded with the count since its previous record, and with the event's
//! data address when one was asked for (and the stack frame holding it when
//! it is on the thread's own stack). Records go to the thread's block of
//! the `counters` file (kind 7, see experiment::counters).
//!
//! How: a perf event per counter and thread, as the config's `counter` key
//! gives it (type, config, config1, config2), sample_period = interval,
//! with `sigtrap`: at each overflow the kernel queues task work and the
//! thread gets SIGTRAP (si_code TRAP_PERF, si_perf_data = [`COUNTER_TAG`] |
//! the counter's index, si_addr = the data address with PERF_SAMPLE_ADDR)
//! when it returns to user mode: right after a page fault, at the faulting
//! instruction; after the system call for an event counted in kernel mode.
//!
//! The events stay enabled (never one-shot): SIGTRAP is a standard signal,
//! so one sent while another is pending (the clock's, off-CPU's, another
//! counter's at the same event) is dropped, and overflows that came while
//! one was pending are merged by the kernel. Nothing is lost for all that:
//! the handler reads the counter (read(2): value, time enabled, time
//! running) and a record's count is the value less the value at the
//! thread's previous record, and every SIGTRAP of the collector sweeps the
//! thread's other counters too, recording those that passed a multiple of
//! their interval since their last record (their own trap was dropped).
//!
//! Kernel mode: counted when the kernel lets us (root, CAP_PERFMON, or
//! perf_event_paranoid ≤ 1), as getrusage counts a page fault taken inside
//! read(2) copying to an untouched buffer; otherwise user mode only, which
//! the `counter` line says (`kernel=0`) with a warning. Context switches and
//! CPU migrations happen only in the kernel: refused there, they are off.
//! An event counted in kernel mode can overflow inside execve, before the
//! kernel removes it from the old image (remove_on_exec), and its SIGTRAP
//! would then kill the new image, whose SIGTRAP is back to the default:
//! exec.rs stops the thread's events around the exec family.
//!
//! A `context-switches` counter at interval 1 is refused: under a debugger
//! every delivery of its SIGTRAP is a ptrace stop, itself a switch off the
//! CPU, which would overflow the counter again, forever (off-CPU profiling
//! records every switch; at interval 2 a record costs one switch of the
//! two that make the next).
//!
//! Pause: the events keep counting and the records are dropped (the
//! handler still moves the thread's baselines), as off-CPU profiling does;
//! resume moves every thread's baselines to the counters' values then.

use crate::blocks::WriteError;
use crate::clock::{
    self, PerfEvent, ATTR_DISABLED, ATTR_EXCLUDE_HV, ATTR_EXCLUDE_KERNEL, ATTR_REMOVE_ON_EXEC,
    ATTR_SIGTRAP, PERF_EVENT_IOC_DISABLE, PERF_EVENT_IOC_ENABLE, PERF_TYPE_SOFTWARE,
};
use crate::unwind::HoldingFrame;
use crate::{lifecycle, log, profile, state, sys, threads};
use experiment::counters::{
    CounterEvent, CounterSpec, COUNTER_RECORD_SIZE, FLAG_DATA_ADDRESS, FLAG_IN_FRAME, FLAG_SCALED,
    MAX_COUNTERS,
};
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU64, AtomicU8, Ordering};

/// si_perf_data of counter `i`'s events is `COUNTER_TAG | i` ("RDBXHWC"
/// and the index); the clock's is `clock::PROFILE_TAG`, off-CPU's
/// `offcpu::OFFCPU_TAG`.
pub const COUNTER_TAG: u64 = 0x5244_4258_4857_4300;

/// The counter a trap's si_perf_data names, if it is one of ours.
pub fn counter_of_tag(tag: u64) -> Option<usize> {
    let index = (tag & 0xff) as usize;
    (tag & !0xff == COUNTER_TAG && index < MAX_COUNTERS).then_some(index)
}

const PERF_SAMPLE_ADDR: u64 = 1 << 3;
const PERF_FORMAT_TOTAL_TIME_ENABLED: u64 = 1 << 0;
const PERF_FORMAT_TOTAL_TIME_RUNNING: u64 = 1 << 1;
const PERF_COUNT_SW_CONTEXT_SWITCHES: u64 = 3;
const PERF_COUNT_SW_CPU_MIGRATIONS: u64 = 4;

/// One counter of the experiment, as every thread opens it: set at start
/// (ordinary context), read by thread starts and the handler.
struct Counter {
    on: AtomicBool,
    kind: AtomicU32,
    config: AtomicU64,
    config1: AtomicU64,
    config2: AtomicU64,
    interval: AtomicU64,
    address: AtomicBool,
    /// Counted in kernel mode too (else user mode only).
    kernel: AtomicBool,
    /// Its `precise_ip` (see [`Counting`]).
    precise: AtomicU8,
    /// Records written and the sum of their counts.
    records: AtomicU64,
    events: AtomicU64,
    /// Records whose count was scaled: the PMU multiplexed the counter.
    scaled: AtomicU64,
    /// Its traps that came while the thread was in another of the
    /// collector's handlers (their events went to the counter's next record).
    deferred: AtomicU64,
    /// Threads whose event could not be opened, and whether a warning said so.
    unopened: AtomicU64,
    unopened_told: AtomicBool,
}

impl Counter {
    const fn new() -> Counter {
        Counter {
            on: AtomicBool::new(false),
            kind: AtomicU32::new(0),
            config: AtomicU64::new(0),
            config1: AtomicU64::new(0),
            config2: AtomicU64::new(0),
            interval: AtomicU64::new(1),
            address: AtomicBool::new(false),
            kernel: AtomicBool::new(false),
            precise: AtomicU8::new(0),
            records: AtomicU64::new(0),
            events: AtomicU64::new(0),
            scaled: AtomicU64::new(0),
            deferred: AtomicU64::new(0),
            unopened: AtomicU64::new(0),
            unopened_told: AtomicBool::new(false),
        }
    }

    fn set(&self, spec: &CounterSpec, how: Counting) {
        self.kind.store(spec.kind, Ordering::Relaxed);
        self.config.store(spec.config, Ordering::Relaxed);
        self.config1.store(spec.config1, Ordering::Relaxed);
        self.config2.store(spec.config2, Ordering::Relaxed);
        self.interval.store(spec.interval.max(1), Ordering::Relaxed);
        self.address.store(spec.data_address, Ordering::Relaxed);
        self.kernel.store(how.kernel, Ordering::Relaxed);
        self.precise.store(how.precise, Ordering::Relaxed);
        self.on.store(true, Ordering::Release);
    }

    fn is_on(&self) -> bool {
        self.on.load(Ordering::Acquire)
    }

    fn interval(&self) -> u64 {
        self.interval.load(Ordering::Relaxed).max(1)
    }

    /// The perf event every thread opens for this counter (index `index`).
    fn event(&self, index: usize) -> PerfEvent {
        let how = Counting {
            kernel: self.kernel.load(Ordering::Relaxed),
            precise: self.precise.load(Ordering::Relaxed),
        };
        event_of(
            self.kind.load(Ordering::Relaxed),
            [
                self.config.load(Ordering::Relaxed),
                self.config1.load(Ordering::Relaxed),
                self.config2.load(Ordering::Relaxed),
            ],
            self.interval(),
            self.address.load(Ordering::Relaxed),
            how,
            index,
        )
    }
}

/// How the kernel counts a counter for every thread: in kernel mode too,
/// and with which `precise_ip` (0: the interrupted instruction may be a
/// few past the one that caused the event; 1 to 3: the PMU's precise
/// sampling, which is what gives a memory event its data address).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counting {
    pub kernel: bool,
    pub precise: u8,
}

/// Where `precise_ip`'s two bits sit in perf_event_attr's flags.
const ATTR_PRECISE_SHIFT: u32 = 15;

static COUNTERS: [Counter; MAX_COUNTERS] = [const { Counter::new() }; MAX_COUNTERS];
static WRITE_FAILURE_TOLD: AtomicBool = AtomicBool::new(false);
/// Whether the experiment being started profiles a counter (so SIGTRAP is
/// the collector's to handle).
static WANTED: AtomicBool = AtomicBool::new(false);

fn event_of(
    kind: u32,
    [config, config1, config2]: [u64; 3],
    interval: u64,
    address: bool,
    how: Counting,
    index: usize,
) -> PerfEvent {
    // sigtrap needs remove_on_exec (the kernel insists). Opened disabled:
    // enabled once the descriptor is stored, so that no trap comes before
    // the handler can find it.
    let mut flags = ATTR_DISABLED | ATTR_EXCLUDE_HV | ATTR_SIGTRAP | ATTR_REMOVE_ON_EXEC;
    if !how.kernel {
        flags |= ATTR_EXCLUDE_KERNEL;
    }
    flags |= u64::from(how.precise & 3) << ATTR_PRECISE_SHIFT;
    PerfEvent {
        kind,
        config,
        config1,
        config2,
        sample_period: interval,
        sample_type: if address { PERF_SAMPLE_ADDR } else { 0 },
        read_format: PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING,
        flags,
        sig_data: COUNTER_TAG | index as u64,
    }
}

pub fn wanted() -> bool {
    WANTED.load(Ordering::Acquire)
}

// ---- start ---------------------------------------------------------------

/// What became of one counter of the config at start.
pub enum Opened {
    /// Opened; counted in kernel mode too when `kernel`.
    On(Counting),
    /// Refused: why (the `error` line's message after `counter NAME is off: `).
    Off(String),
}

/// A new experiment: opens each counter of `specs` on the calling thread
/// to learn whether (and how) the kernel counts it, and sets them up for
/// every thread. Ordinary context.
pub fn prepare(specs: &[CounterSpec]) -> Vec<Opened> {
    for counter in &COUNTERS {
        counter.on.store(false, Ordering::Release);
        counter.records.store(0, Ordering::Relaxed);
        counter.events.store(0, Ordering::Relaxed);
        counter.scaled.store(0, Ordering::Relaxed);
        counter.deferred.store(0, Ordering::Relaxed);
        counter.unopened.store(0, Ordering::Relaxed);
        counter.unopened_told.store(false, Ordering::Relaxed);
    }
    WRITE_FAILURE_TOLD.store(false, Ordering::Relaxed);
    let opened: Vec<Opened> = specs
        .iter()
        .take(MAX_COUNTERS)
        .enumerate()
        .map(|(index, spec)| probe(index, spec))
        .collect();
    for ((spec, opened), counter) in specs.iter().zip(&opened).zip(&COUNTERS) {
        if let Opened::On(how) = opened {
            counter.set(spec, *how);
        }
    }
    WANTED.store(
        opened.iter().any(|o| matches!(o, Opened::On(_))),
        Ordering::Release,
    );
    opened
}

/// Whether the kernel opens `spec` for this thread, and how.
fn probe(index: usize, spec: &CounterSpec) -> Opened {
    if spec.kind == PERF_TYPE_SOFTWARE
        && spec.config == PERF_COUNT_SW_CONTEXT_SWITCHES
        && spec.interval == 1
    {
        return Opened::Off(
            "an interval of 1 is refused for context switches: under a debugger each of its \
             signals is a switch itself, which would be counted again, forever; use an interval \
             of 2 or more, or off-CPU profiling to record every switch"
                .into(),
        );
    }
    let open = |how: Counting| {
        let event = event_of(
            spec.kind,
            [spec.config, spec.config1, spec.config2],
            spec.interval,
            spec.data_address,
            how,
            index,
        );
        clock::open_event(sys::gettid(), &event)
            .map(sys::close_raw)
            .map(|_| how)
    };
    let precise = precise_opened(spec, &open);
    let errno = match open(Counting {
        kernel: true,
        precise,
    }) {
        Ok(how) => return Opened::On(how),
        Err(errno) => errno,
    };
    let privilege = errno == libc::EACCES || errno == libc::EPERM;
    let user_only = Counting {
        kernel: false,
        precise,
    };
    if privilege && !only_in_kernel(spec) && open(user_only).is_ok() {
        return Opened::On(user_only);
    }
    Opened::Off(refusal(spec, errno))
}

/// The most precise `precise_ip` the PMU takes for a hardware event whose
/// records should carry a data address (a memory event: its address
/// comes only with precise sampling, as perf's `:ppp` tries the levels
/// down), else 0. Software events (page faults) give their address
/// without it, and a PMU refuses levels it lacks.
fn precise_opened(spec: &CounterSpec, open: &impl Fn(Counting) -> Result<Counting, i32>) -> u8 {
    if !spec.data_address || spec.kind == PERF_TYPE_SOFTWARE {
        return 0;
    }
    (1..=3u8)
        .rev()
        .find(|&precise| {
            [true, false]
                .into_iter()
                .any(|kernel| open(Counting { kernel, precise }).is_ok())
        })
        .unwrap_or(0)
}

/// Software events that happen only in kernel mode: counting user mode
/// only would count nothing.
fn only_in_kernel(spec: &CounterSpec) -> bool {
    spec.kind == PERF_TYPE_SOFTWARE
        && matches!(
            spec.config,
            PERF_COUNT_SW_CONTEXT_SWITCHES | PERF_COUNT_SW_CPU_MIGRATIONS
        )
}

fn paranoid_level() -> String {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .map(|text| text.trim().to_string())
        .unwrap_or_else(|_| "?".into())
}

/// Why the kernel refused `spec` (errno `errno`), and what to do.
fn refusal(spec: &CounterSpec, errno: i32) -> String {
    let why = std::io::Error::from_raw_os_error(errno);
    match errno {
        libc::EACCES | libc::EPERM => {
            let mode = if only_in_kernel(spec) {
                "it happens only in kernel mode, which"
            } else {
                "it"
            };
            format!(
                "the kernel refused it ({why}; kernel.perf_event_paranoid is {}): {mode} needs \
                 root, CAP_PERFMON, or kernel.perf_event_paranoid set to 1 or less",
                paranoid_level()
            )
        }
        libc::ENOENT | libc::EOPNOTSUPP => format!(
            "this machine cannot count it with overflow interrupts ({why}): no such event here, \
             or no hardware counters (a virtual machine often has none)"
        ),
        libc::EINVAL => format!(
            "the kernel refused its settings ({why}): an event, config or interval it does not \
             take, or a kernel older than Linux 5.13 (signals from perf events)"
        ),
        libc::EMFILE | libc::ENFILE => format!("no file descriptor left for it ({why})"),
        _ => format!("the kernel refused it ({why})"),
    }
}

/// Writes the `counter` line of each counter opened (after `start`), the
/// `error` line of each refused, and a warning for each counted in user
/// mode only.
pub fn log_prepared(specs: &[CounterSpec], opened: &[Opened]) {
    for (index, (spec, opened)) in specs.iter().zip(opened).enumerate() {
        match opened {
            Opened::On(Counting { kernel, precise }) => {
                log::write("counter", |line| {
                    line.u64("index", index as u64);
                    line.str("name", spec.name.as_bytes());
                    line.u64("type", u64::from(spec.kind));
                    line.u64("config", spec.config);
                    line.u64("config1", spec.config1);
                    line.u64("config2", spec.config2);
                    line.u64("interval", spec.interval);
                    line.u64("address", u64::from(spec.data_address));
                    line.u64("kernel", u64::from(*kernel));
                    if *precise > 0 {
                        line.u64("precise", u64::from(*precise));
                    }
                });
                if !kernel {
                    log::warning(&format!(
                        "counter {} counts in user mode only: the kernel refused to count it in \
                         kernel mode (kernel.perf_event_paranoid is {}; root, CAP_PERFMON or a \
                         setting of 1 or less allows it), so events the kernel takes for the \
                         program inside system calls (a page fault in read(2)) are not counted",
                        spec.name,
                        paranoid_level()
                    ));
                }
            }
            Opened::Off(why) => log::error(&format!("counter {} is off: {why}", spec.name)),
        }
    }
}

/// The `counter_totals` line of each counter opened, before `end`.
pub fn log_totals() {
    for (index, counter) in COUNTERS.iter().enumerate() {
        if !counter.is_on() {
            continue;
        }
        log::write("counter_totals", |line| {
            line.u64("index", index as u64);
            line.u64("records", counter.records.load(Ordering::Relaxed));
            line.u64("events", counter.events.load(Ordering::Relaxed));
            line.u64("scaled", counter.scaled.load(Ordering::Relaxed));
            line.u64("deferred", counter.deferred.load(Ordering::Relaxed));
            line.u64("unopened", counter.unopened.load(Ordering::Relaxed));
        });
    }
}

// ---- one thread's counters ---------------------------------------------

/// What read(2) of a counter returns with our read_format.
#[derive(Clone, Copy, Default)]
struct Reading {
    value: u64,
    enabled: u64,
    running: u64,
}

/// One counter of one thread: its descriptor and the reading at the
/// thread's previous record (or when the counter was opened).
struct Source {
    /// The descriptor + 1 (0: none), so that a slot starts as zeros.
    fd_plus_one: AtomicI32,
    last_value: AtomicU64,
    last_enabled: AtomicU64,
    last_running: AtomicU64,
}

impl Source {
    const fn new() -> Source {
        Source {
            fd_plus_one: AtomicI32::new(0),
            last_value: AtomicU64::new(0),
            last_enabled: AtomicU64::new(0),
            last_running: AtomicU64::new(0),
        }
    }

    fn fd(&self) -> Option<i32> {
        match self.fd_plus_one.load(Ordering::Acquire) {
            0 => None,
            n => Some(n - 1),
        }
    }

    fn close(&self) {
        let n = self.fd_plus_one.swap(0, Ordering::AcqRel);
        if n > 0 {
            // A raw close: with I/O tracing on, libc's would be ours.
            sys::close_raw(n - 1);
        }
    }

    fn read(&self) -> Option<Reading> {
        read_counter(self.fd()?)
    }

    /// The baseline of the next record is `reading`; the previous one.
    fn advance(&self, reading: Reading) -> Reading {
        Reading {
            value: self.last_value.swap(reading.value, Ordering::Relaxed),
            enabled: self.last_enabled.swap(reading.enabled, Ordering::Relaxed),
            running: self.last_running.swap(reading.running, Ordering::Relaxed),
        }
    }
}

/// read(2) of a counter: value, time enabled, time running.
/// Async-signal-safe: one raw system call.
fn read_counter(fd: i32) -> Option<Reading> {
    let mut bytes = [0u8; 24];
    if sys::read_raw(fd, &mut bytes) != 24 {
        return None;
    }
    let word = |at: usize| {
        bytes
            .get(at..at + 8)
            .and_then(|b| b.try_into().ok())
            .map_or(0, u64::from_le_bytes)
    };
    Some(Reading {
        value: word(0),
        enabled: word(8),
        running: word(16),
    })
}

/// A thread's counters (one per counter of the experiment).
pub struct CounterSources {
    sources: [Source; MAX_COUNTERS],
}

impl CounterSources {
    pub const fn new() -> CounterSources {
        CounterSources {
            sources: [const { Source::new() }; MAX_COUNTERS],
        }
    }

    /// Starts counting for `tid`: every counter of the experiment.
    pub fn arm(&self, tid: i32) {
        self.disarm();
        for (index, (counter, source)) in COUNTERS.iter().zip(&self.sources).enumerate() {
            if !counter.is_on() {
                continue;
            }
            match clock::open_event(tid, &counter.event(index)) {
                Ok(fd) => {
                    source.advance(Reading::default());
                    source.fd_plus_one.store(fd + 1, Ordering::Release);
                    // SAFETY: our perf descriptor; it signals at every
                    // overflow with no refresh (sigtrap).
                    unsafe { libc::ioctl(fd, PERF_EVENT_IOC_ENABLE, 0) };
                }
                Err(errno) => unopened(counter, index, tid, errno),
            }
        }
    }

    /// Stops counting. Safe to call when not armed.
    pub fn disarm(&self) {
        for source in &self.sources {
            source.close();
        }
    }

    /// In a fork child: the descriptors count the parent's thread.
    pub fn forget_after_fork(&self) {
        self.disarm();
    }

    /// The next records count from now (recording resumes).
    pub fn restart_baselines(&self) {
        for source in &self.sources {
            if let Some(reading) = source.read() {
                source.advance(reading);
            }
        }
    }

    /// Stops or starts counting (around an exec: see exec.rs). The counts
    /// stay where they are. Async-signal-safe.
    pub fn set_enabled(&self, enabled: bool) {
        let request = if enabled {
            PERF_EVENT_IOC_ENABLE
        } else {
            PERF_EVENT_IOC_DISABLE
        };
        for source in &self.sources {
            if let Some(fd) = source.fd() {
                // SAFETY: our perf descriptor.
                unsafe { libc::ioctl(fd, request, 0) };
            }
        }
    }
}

impl Default for CounterSources {
    fn default() -> Self {
        Self::new()
    }
}

/// A thread's event could not be opened: counted, said once per counter.
fn unopened(counter: &Counter, index: usize, tid: i32, errno: i32) {
    counter.unopened.fetch_add(1, Ordering::Relaxed);
    if counter.unopened_told.swap(true, Ordering::Relaxed) {
        return;
    }
    log::warning(&format!(
        "cannot start counter {index} for thread {tid} ({}): its events are not recorded \
         (counter_totals says for how many threads)",
        std::io::Error::from_raw_os_error(errno)
    ));
}

// ---- the handler --------------------------------------------------------

/// The SIGTRAP of counter `index` (si_perf_data = COUNTER_TAG | index).
/// Async-signal-safe.
pub fn on_trap(index: usize, info: *const libc::siginfo_t, context: *mut c_void) {
    let Some(slot) = threads::find(sys::gettid()) else {
        return;
    };
    let Some(counter) = COUNTERS.get(index) else {
        return;
    };
    let address = counter
        .address
        .load(Ordering::Relaxed)
        .then(|| data_address(info))
        .flatten();
    if lifecycle::offcpu_traced() {
        // Off-CPU's trap may have been dropped for this one.
        crate::offcpu::check_lost(slot, context);
    }
    if slot.in_handler.swap(true, Ordering::AcqRel) {
        // Another of the collector's handlers was interrupted: it owns the
        // stack buffers. The events go to the counter's next record.
        counter.deferred.fetch_add(1, Ordering::Relaxed);
        return;
    }
    record_overflows(slot, context, Some(Trapped { index, address }));
    profile::deferred_tick(slot, context);
    slot.in_handler.store(false, Ordering::Release);
}

/// After another of the collector's SIGTRAPs (the clock's, off-CPU's):
/// records the counters that overflowed without a trap of their own (it
/// was dropped because that one was pending). Async-signal-safe: one
/// read(2) per counter of the thread.
pub fn sweep(context: *mut c_void) {
    if !lifecycle::counters_traced() {
        return;
    }
    let Some(slot) = threads::find(sys::gettid()) else {
        return;
    };
    if slot.in_handler.swap(true, Ordering::AcqRel) {
        return;
    }
    record_overflows(slot, context, None);
    profile::deferred_tick(slot, context);
    slot.in_handler.store(false, Ordering::Release);
}

/// The counter whose trap this is, and the data address it carried.
#[derive(Clone, Copy)]
struct Trapped {
    index: usize,
    address: Option<u64>,
}

/// si_addr of a TRAP_PERF siginfo: the event's data address (0: none).
fn data_address(info: *const libc::siginfo_t) -> Option<u64> {
    if info.is_null() {
        return None;
    }
    // SAFETY: the kernel's siginfo of a SIGTRAP; si_addr is its first field
    // after the header.
    let address = unsafe { (*info).si_addr() } as u64;
    (address != 0).then_some(address)
}

/// Records every counter of the thread that moved on since its previous
/// record: the trapped one when it moved at all, the others when they
/// passed a multiple of their interval (an overflow whose trap was lost).
/// The stack is walked once, for all of them.
fn record_overflows(slot: &threads::Slot, context: *mut c_void, trapped: Option<Trapped>) {
    let now = sys::monotonic_ns();
    let mut stack = StackOnce::new(trapped.and_then(|t| t.address));
    for (index, (counter, source)) in COUNTERS.iter().zip(&slot.counters().sources).enumerate() {
        if !counter.is_on() {
            continue;
        }
        let Some(reading) = source.read() else {
            continue;
        };
        let last = source.last_value.load(Ordering::Relaxed);
        let own_trap = trapped.filter(|t| t.index == index);
        let overflowed = if own_trap.is_some() {
            reading.value > last
        } else {
            reading.value / counter.interval() > last / counter.interval()
        };
        if !overflowed {
            continue;
        }
        let previous = source.advance(reading);
        if !lifecycle::recording_counters() {
            continue;
        }
        let (count, scaled) = scaled_count(previous, reading);
        let address = own_trap.and_then(|t| t.address);
        if let Err(err) = write_record(
            slot, context, now, &mut stack, index, count, scaled, address,
        ) {
            return write_failed(err);
        }
        counter.records.fetch_add(1, Ordering::Relaxed);
        counter.events.fetch_add(count, Ordering::Relaxed);
        if scaled {
            counter.scaled.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// The events since `previous`, scaled by time enabled / time running when
/// the counter was multiplexed (not always on the PMU) meanwhile.
fn scaled_count(previous: Reading, now: Reading) -> (u64, bool) {
    let raw = now.value.saturating_sub(previous.value);
    let enabled = now.enabled.saturating_sub(previous.enabled);
    let running = now.running.saturating_sub(previous.running);
    if running == 0 || running >= enabled {
        return (raw, false);
    }
    let scaled = u128::from(raw) * u128::from(enabled) / u128::from(running);
    (u64::try_from(scaled).unwrap_or(u64::MAX), true)
}

/// The interrupted stack, walked at most once per trap (with the trapped
/// counter's data address as the probe).
struct StackOnce {
    probe: Option<u64>,
    walked: Option<(u64, Option<HoldingFrame>)>,
}

impl StackOnce {
    fn new(probe: Option<u64>) -> StackOnce {
        StackOnce {
            probe,
            walked: None,
        }
    }

    /// The stack id, and the frame holding the probe address.
    fn get(
        &mut self,
        slot: &threads::Slot,
        context: *mut c_void,
        now: u64,
    ) -> Result<(u64, Option<HoldingFrame>), WriteError> {
        if let Some(walked) = self.walked {
            return Ok(walked);
        }
        // SAFETY: we are the slot's thread in its SIGTRAP handler, and
        // `in_handler` keeps the collector's other handlers off `owned`.
        let owned = unsafe { slot.owned() };
        // SAFETY: context is this handler's ucontext.
        let walked = unsafe {
            profile::record_signal_stack_locating(owned, slot.tid(), context, now, self.probe)
        }?;
        self.walked = Some(walked);
        Ok(walked)
    }
}

#[allow(clippy::too_many_arguments)]
fn write_record(
    slot: &threads::Slot,
    context: *mut c_void,
    now: u64,
    stack: &mut StackOnce,
    index: usize,
    count: u64,
    scaled: bool,
    address: Option<u64>,
) -> Result<(), WriteError> {
    let (stack_id, holding) = stack.get(slot, context, now)?;
    let mut event = CounterEvent {
        time_ns: now,
        stack_id,
        count,
        counter: index as u16,
        ..CounterEvent::default()
    };
    if scaled {
        event.flags |= FLAG_SCALED;
    }
    if let Some(address) = address {
        event.data_addr = address;
        event.flags |= FLAG_DATA_ADDRESS;
        if let Some(frame) = holding.and_then(|h| Some((u16::try_from(h.index).ok()?, h.cfa))) {
            (event.frame, event.frame_cfa) = frame;
            event.flags |= FLAG_IN_FRAME;
        }
    }
    let record = event.encode();
    // SAFETY: as in StackOnce::get.
    let owned = unsafe { slot.owned() };
    state::COUNTERS.append(
        &mut owned.counters,
        &state::BUDGET,
        slot.tid(),
        now,
        COUNTER_RECORD_SIZE,
        |writer| writer.push_bytes(&record),
    )
}

/// Recording stops (the program runs on); the log says why, once.
fn write_failed(err: WriteError) {
    lifecycle::counters_off();
    if WRITE_FAILURE_TOLD.swap(true, Ordering::Relaxed) {
        return;
    }
    match err {
        WriteError::Limit => log::warning("data limit reached: counter profiling stopped"),
        WriteError::Disk => log::warning(
            "cannot extend the counters or stacks file (disk full?): counter profiling stopped",
        ),
        WriteError::TooLarge => {
            log::warning("a stack record was larger than a block: counter profiling stopped")
        }
        WriteError::Closed => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_name_their_counter() {
        assert_eq!(counter_of_tag(COUNTER_TAG), Some(0));
        assert_eq!(counter_of_tag(COUNTER_TAG | 7), Some(7));
        assert_eq!(counter_of_tag(COUNTER_TAG | 8), None);
        assert_eq!(counter_of_tag(clock::PROFILE_TAG as u64), None);
        assert_eq!(counter_of_tag(crate::offcpu::OFFCPU_TAG), None);
    }

    #[test]
    fn precise_sampling_sets_precise_ip() {
        let event = |precise| {
            event_of(
                4,
                [0x1cd, 3, 0],
                1000,
                true,
                Counting {
                    kernel: false,
                    precise,
                },
                0,
            )
        };
        assert_eq!(event(0).flags >> ATTR_PRECISE_SHIFT & 3, 0);
        assert_eq!(event(2).flags >> ATTR_PRECISE_SHIFT & 3, 2);
        assert_eq!(event(3).sample_type, PERF_SAMPLE_ADDR);
        assert_ne!(event(3).flags & ATTR_EXCLUDE_KERNEL, 0);
        // Software events never ask for precision.
        let faults = CounterSpec::parse("1:2:0:0:1:1:page-faults").unwrap();
        assert_eq!(precise_opened(&faults, &|how| Ok(how)), 0);
        let loads = CounterSpec::parse("4:461:3:0:1000:1:mem-loads").unwrap();
        assert_eq!(precise_opened(&loads, &|how| Ok(how)), 3);
        let two = |how: Counting| match how.precise <= 2 {
            true => Ok(how),
            false => Err(libc::EOPNOTSUPP),
        };
        assert_eq!(precise_opened(&loads, &two), 2);
        assert_eq!(precise_opened(&loads, &|_| Err(libc::EINVAL)), 0);
    }

    #[test]
    fn counts_are_scaled_only_when_multiplexed() {
        let at = |value, enabled, running| Reading {
            value,
            enabled,
            running,
        };
        assert_eq!(
            scaled_count(at(10, 100, 100), at(30, 200, 200)),
            (20, false)
        );
        // Running half the time it was enabled: twice the raw count.
        assert_eq!(scaled_count(at(10, 100, 100), at(30, 300, 200)), (40, true));
        // Never ran: nothing to scale.
        assert_eq!(scaled_count(at(0, 0, 0), at(0, 50, 0)), (0, false));
    }
}
