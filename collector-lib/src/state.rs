//! The collector's process-wide state and the experiment life cycle:
//! start (founder or descendant), pause, resume, stop.
//!
//! The flags and counters read by the signal handler are atomics. The
//! rest (paths, configuration) changes only in start/stop, which run in
//! ordinary context and are serialized by `CONTROL`.

use crate::blocks::{BlockFile, Budget};
use crate::clock::{self, ClockKind};
use crate::sys::FixedBuf;
use crate::{
    counters, exec, heap, io, lifecycle, log, mpi, numbers, objects, offcpu, profile, samples,
    sync, sys, threads, tsc, unwind, watch,
};
use experiment::layout::{
    SampleCause, KIND_COUNTERS, KIND_HEAP, KIND_IO, KIND_MPI, KIND_OFFCPU, KIND_PROFILE,
    KIND_STACKS, KIND_SYNC, MAX_STACK_DEPTH,
};
use experiment::text::{Config, Mode};
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

pub static PROFILE: BlockFile = BlockFile::new(KIND_PROFILE);
pub static STACKS: BlockFile = BlockFile::new(KIND_STACKS);
pub static HEAP: BlockFile = BlockFile::new(KIND_HEAP);
pub static SYNC: BlockFile = BlockFile::new(KIND_SYNC);
pub static IO: BlockFile = BlockFile::new(KIND_IO);
pub static OFFCPU: BlockFile = BlockFile::new(KIND_OFFCPU);
pub static COUNTERS: BlockFile = BlockFile::new(KIND_COUNTERS);
pub static MPI: BlockFile = BlockFile::new(KIND_MPI);
pub static BUDGET: Budget = Budget::new();

static DEPTH_LIMIT: AtomicUsize = AtomicUsize::new(256);

/// The experiment this process writes, and how it was configured.
struct Current {
    config: Config,
    expt: PathBuf,
}

static CONTROL: Mutex<Option<Current>> = Mutex::new(None);

pub const CONFIG_VAR: &str = "RDBX_COLLECTOR_CONFIG";

// The life cycle's state is lifecycle.rs's; these read it for the rest
// of the collector.

pub fn active() -> bool {
    lifecycle::active()
}

pub fn paused() -> bool {
    lifecycle::paused()
}

/// Whether a profile tick should be recorded now. Async-signal-safe.
pub fn recording() -> bool {
    lifecycle::recording_clock()
}

/// Says whether the next experiment starts in a live process without
/// interposition (an injected dlopen).
pub fn set_live(live: bool) {
    lifecycle::set_live(live);
}

pub fn live() -> bool {
    lifecycle::live()
}

pub fn depth_limit() -> usize {
    DEPTH_LIMIT.load(Ordering::Relaxed)
}

/// Called from the handler after a write error.
pub fn stop_profiling() {
    lifecycle::clock_off();
}

// ---- stack de-duplication ---------------------------------------------

const STACK_TABLE_SIZE: usize = 1 << 16;
const STACK_PROBES: usize = 64;
static STACK_TABLE: [AtomicU64; STACK_TABLE_SIZE] = [const { AtomicU64::new(0) }; STACK_TABLE_SIZE];

/// Records `id` as written; true when the caller must write the stack
/// (first sight, or the table is too full to tell). Async-signal-safe.
pub fn stack_table_insert(id: u64) -> bool {
    let start = (id as usize) % STACK_TABLE_SIZE;
    for probe in 0..STACK_PROBES {
        let Some(entry) = STACK_TABLE.get((start + probe) % STACK_TABLE_SIZE) else {
            return true;
        };
        // A plain load first: a known stack (the common case) costs no
        // locked instruction.
        match entry.load(Ordering::Acquire) {
            existing if existing == id => return false,
            0 => {}
            _ => continue,
        }
        match entry.compare_exchange(0, id, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => return true,
            Err(existing) if existing == id => return false,
            Err(_) => {}
        }
    }
    true
}

/// The id of a stack (from the thread's cache of ids, when it has one),
/// its record written to `cursor`'s block of the `stacks` file the first
/// time it is seen. Async-signal-safe.
pub fn record_stack(
    cursor: &mut crate::blocks::Cursor,
    ids: Option<&mut crate::stack_ids::IdCache>,
    tid: i32,
    timestamp_ns: u64,
    status: experiment::layout::StackStatus,
    pcs: &[u64],
) -> Result<u64, crate::blocks::WriteError> {
    let id = match ids {
        Some(ids) => ids.id(status, pcs),
        None => experiment::layout::stack_id(status.code(), pcs),
    };
    if stack_table_insert(id) {
        STACKS.append(
            cursor,
            &BUDGET,
            tid,
            timestamp_ns,
            experiment::layout::stack_record_size(pcs.len()),
            |w| w.push_stack(status, pcs),
        )?;
    }
    Ok(id)
}

fn clear_stack_table() {
    for entry in STACK_TABLE.iter() {
        entry.store(0, Ordering::Relaxed);
    }
}

// ---- starting -----------------------------------------------------------

/// How this process came to write an experiment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Founder,
    Fork,
    Exec,
    Spawn,
}

impl Role {
    fn letter(self) -> &'static str {
        match self {
            Role::Founder => "",
            Role::Fork => "f",
            Role::Exec => "x",
            Role::Spawn => "c",
        }
    }

    fn name(self) -> &'static str {
        match self {
            Role::Founder => "founder",
            Role::Fork => "fork",
            Role::Exec => "exec",
            Role::Spawn => "spawn",
        }
    }
}

/// What a process that finds `config` in its environment is: the founder
/// it was made for, or a descendant the collector did not see coming
/// (an exec keeps the pid; posix_spawn or vfork+exec make a new one).
pub fn role_from_environment(config: &Config) -> Role {
    if config.pid as i32 != sys::getpid() {
        return Role::Spawn;
    }
    if config.expt.join("manifest").exists() {
        Role::Exec
    } else {
        Role::Founder
    }
}

#[derive(Debug)]
pub struct StartError(pub String);

impl std::fmt::Display for StartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Where a start runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Context {
    Ordinary,
    /// Right after fork, in the child. The parent's other threads vanished
    /// with whatever locks they held: nothing here may take the loader's
    /// lock (dl_iterate_phdr) or a lock of ours they could have held. The
    /// unwind tables and the object list are the parent's, which are this
    /// process's too, and are used as they are.
    ForkChild,
}

/// Starts writing an experiment. For a descendant, `config.expt` is the
/// parent's experiment and a new one is made inside the founder's.
pub fn start(config: Config, role: Role) -> Result<(), StartError> {
    start_in(config, role, Context::Ordinary)
}

fn start_in(config: Config, role: Role, context: Context) -> Result<(), StartError> {
    // What libc allocates for the collector while it starts is not the
    // program's.
    let _held = heap::hold_current_thread();
    let mut control = CONTROL.lock().unwrap_or_else(|e| e.into_inner());
    if !lifecycle::begin_start() {
        return Err(StartError("an experiment is already active".into()));
    }
    let started = start_steps(config, role, context, &mut control);
    if started.is_err() {
        lifecycle::abort_start();
    }
    started
}

/// What a start does, in the Starting phase (see lifecycle.rs).
fn start_steps(
    mut config: Config,
    role: Role,
    context: Context,
    control: &mut std::sync::MutexGuard<'_, Option<Current>>,
) -> Result<(), StartError> {
    let parent_expt = config.expt.clone();
    let expt = match role {
        Role::Founder => config.expt.clone(),
        _ => make_descendant_dir(&config.founder, &parent_expt, role)?,
    };
    let lineage = lineage_of(&config.founder, &expt);
    let heaptrace = config.heaptrace;
    let synctrace = config.synctrace.is_on();
    let iotrace = config.iotrace;
    let mpitrace = config.mpitrace;
    // Off-CPU profiling needs the kernel's consent (see offcpu.rs): when
    // refused, the experiment says why and goes on without it.
    let offcpu_refused = if config.offcpu {
        offcpu::check_available().err()
    } else {
        None
    };
    config.offcpu = config.offcpu && offcpu_refused.is_none();
    let offcpu_on = config.offcpu;
    // Each counter the kernel refuses is off, with an error line.
    let counters_opened = counters::prepare(&config.counters);
    let counters_on = counters::wanted();
    open_files(
        &expt,
        Traced {
            heap: heaptrace,
            sync: synctrace,
            io: iotrace,
            offcpu: offcpu_on,
            counters: counters_on,
            mpi: mpitrace,
        },
    )?;
    config.expt = expt.clone();
    config.pid = sys::getpid() as u32;
    BUDGET.limit.store(config.limit_bytes, Ordering::Relaxed);
    BUDGET.claimed.store(0, Ordering::Relaxed);
    BUDGET.exhausted.store(false, Ordering::Relaxed);
    DEPTH_LIMIT.store(
        (config.depth as usize).clamp(1, MAX_STACK_DEPTH),
        Ordering::Relaxed,
    );
    clear_stack_table();
    samples::reset();
    profile::reset_write_failure();

    // Signals that would stop a tracer at every tick or switch (and look
    // like breakpoints to it) only when nobody traces us.
    let untraced = config.mode == Mode::Collect && !sys::traced();
    let clock_kind = if config.profile_ns > 0 {
        Some(clock::choose(config.profile_ns, untraced))
    } else {
        None
    };
    offcpu::reset(
        offcpu_on,
        offcpu::Arming {
            continuous: untraced,
            clock_traps: clock_kind.is_some() && clock::uses_sigtrap(),
        },
    );
    // The threshold goes in the start line: measured first when asked.
    let sync_threshold = synctrace.then(|| sync::prepare(config.synctrace));
    write_start_line(
        &config,
        &lineage,
        clock_kind.map(|(k, _)| k),
        sync_threshold.map(|t| t.threshold_ns),
    );
    if let Some(refused) = &offcpu_refused {
        log::error(refused);
    }
    counters::log_prepared(&config.counters, &counters_opened);
    // Threads are registered (and their clocks, events, counters started)
    // for any of these.
    let per_thread = config.profile_ns > 0 || offcpu_on || counters_on;
    if live() {
        write_kinds_line(per_thread, [heaptrace, synctrace, iotrace, mpitrace]);
    }
    if heaptrace {
        heap::prepare();
    }
    if iotrace || mpitrace {
        // The I/O and MPI hooks stamp calls with the TSC: calibrated once
        // (a busy wait) for both.
        tsc::prepare();
    }
    if iotrace {
        io::prepare();
    }
    if mpitrace {
        mpi::prepare();
    }
    if let Some(threshold) = sync_threshold {
        sync::log_threshold(threshold);
    }
    if role != Role::Founder {
        let parent = founder_relative_or_dot(&config.founder, &parent_expt);
        log::write("descendant", |line| {
            line.str("parent_expt", parent.as_bytes());
            line.str("kind", role.name().as_bytes());
        });
    }
    if let Some((_, Some(rounded))) = clock_kind {
        log::warning(&format!(
            "profile interval {} ns is finer than the kernel can do with a POSIX timer; rounded to {} ns",
            config.profile_ns, rounded
        ));
    }
    if let Err(err) = crate::interpose::install_profile_handlers() {
        log::error(&err);
    }
    match context {
        Context::Ordinary => {
            match unwind::refresh_tables() {
                Ok(_) => {}
                Err(err) => log::warning(&format!("unwind tables: {err}")),
            }
            if let Some(restorer) = unwind::discover_signal_restorer() {
                unwind::set_signal_restorer(restorer);
            }
            objects::reset();
            objects::log_all_new();
        }
        Context::ForkChild => objects::log_inherited(),
    }

    let period = config.sample_ns;
    profile::SAMPLE_PERIOD_NS.store(period, Ordering::Relaxed);
    profile::NEXT_SAMPLE_NS.store(
        if period > 0 {
            sys::monotonic_ns() + period
        } else {
            0
        },
        Ordering::Relaxed,
    );
    lifecycle::finish_start(config.paused, config.profile_ns > 0);
    if offcpu_on {
        lifecycle::offcpu_on();
    }
    if counters_on {
        lifecycle::counters_on();
    }
    samples::record(SampleCause::Start, b"");
    if config.paused {
        log::write("pause", |line| {
            line.str("cause", b"start");
        });
    }
    if per_thread {
        register_existing_threads();
    }
    if live() {
        start_live_parts(per_thread || heaptrace || synctrace || iotrace || mpitrace);
    }
    update_environment(&config, control);
    **control = Some(Current { config, expt });
    if heaptrace {
        heap::start_tracing();
    }
    if synctrace {
        sync::start_tracing();
        if !per_thread {
            // No clock to start, but the threads' `thread-start` lines
            // name the threads that joins wait for.
            register_existing_threads();
        }
    }
    if iotrace {
        io::start_tracing();
    }
    if mpitrace {
        mpi::start_tracing(context == Context::ForkChild);
    }
    if counters_on || offcpu_on {
        exec::start_guarding();
    }
    Ok(())
}

/// The `kinds` line of a live start: what cannot be collected without
/// interposition, and how new threads are found.
fn write_kinds_line(profiling: bool, [heap, sync, io, mpi]: [bool; 4]) {
    let mut available = vec!["clock-profile", "samples"];
    let mut unavailable = Vec::new();
    for (kind, on) in [("heap", heap), ("sync", sync), ("io", io), ("mpi", mpi)] {
        if on {
            available.push(kind);
        } else {
            unavailable.push(kind);
        }
    }
    log::write("kinds", |line| {
        line.str("available", available.join(",").as_bytes());
        line.str("unavailable", unavailable.join(",").as_bytes());
        line.str("how", b"attached");
        line.str("new_threads", if profiling { b"polled" } else { b"none" });
        line.u64("poll_ns", watch::POLL_NS);
    });
}

/// What a live start adds once the clocks run: fork handlers and the
/// thread watcher.
fn start_live_parts(profiling: bool) {
    crate::interpose::install_fork_handlers();
    if profiling {
        if let Err(err) = watch::start() {
            log::error(&err);
        }
    }
}

/// The kinds of traced data an experiment records, each in its own file.
#[derive(Clone, Copy)]
struct Traced {
    heap: bool,
    sync: bool,
    io: bool,
    offcpu: bool,
    counters: bool,
    mpi: bool,
}

impl Traced {
    /// (file, manifest kind, on, the block file) of each traced kind.
    fn files(self) -> [(&'static str, &'static str, bool, &'static BlockFile); 6] {
        [
            ("heap", "heap-trace", self.heap, &HEAP),
            ("sync", "sync-trace", self.sync, &SYNC),
            ("io", "io-trace", self.io, &IO),
            ("offcpu", "off-cpu", self.offcpu, &OFFCPU),
            ("counters", "counters", self.counters, &COUNTERS),
            ("mpi", "mpi-trace", self.mpi, &MPI),
        ]
    }
}

fn open_files(expt: &Path, traced: Traced) -> Result<(), StartError> {
    let create = |name: &str, flags: i32| -> Result<i32, StartError> {
        let path = expt.join(name);
        let c_path = CString::new(path.as_os_str().as_bytes())
            .map_err(|_| StartError(format!("bad path {}", path.display())))?;
        let fd = sys::open_raw(&c_path, flags | libc::O_CLOEXEC | libc::O_CREAT, 0o644);
        if fd < 0 {
            return Err(StartError(format!(
                "cannot create {}: {}",
                path.display(),
                std::io::Error::last_os_error()
            )));
        }
        Ok(fd)
    };
    let log_fd = create("log", libc::O_WRONLY | libc::O_APPEND)?;
    let profile_fd = create("profile", libc::O_RDWR | libc::O_TRUNC)?;
    let stacks_fd = create("stacks", libc::O_RDWR | libc::O_TRUNC)?;
    let mut opened = Vec::new();
    for (name, _, on, file) in traced.files() {
        if on {
            opened.push((create(name, libc::O_RDWR | libc::O_TRUNC)?, file));
        }
    }
    write_manifest(expt, traced)?;
    log::open(log_fd);
    PROFILE.open(profile_fd);
    STACKS.open(stacks_fd);
    for (fd, file) in opened {
        file.open(fd);
    }
    Ok(())
}

fn write_manifest(expt: &Path, traced: Traced) -> Result<(), StartError> {
    let mut files = String::from("log,profile,stacks");
    let mut kinds = String::from("clock-profile");
    for (name, kind, on, _) in traced.files() {
        if on {
            files.push(',');
            files.push_str(name);
            kinds.push(',');
            kinds.push_str(kind);
        }
    }
    let created_by = format!("libcollector {}", crate::VERSION);
    write_manifest_text(expt, &files, &kinds, &created_by)
}

fn write_manifest_text(
    expt: &Path,
    files: &str,
    kinds: &str,
    created_by: &str,
) -> Result<(), StartError> {
    let mut buf = [0u8; 512];
    let len = experiment::text::write_manifest_into(&mut buf, files, kinds, created_by)
        .ok_or_else(|| StartError("the manifest does not fit its buffer".into()))?;
    let text = &buf[..len];
    let tmp = expt.join("manifest.tmp");
    std::fs::write(&tmp, text)
        .and_then(|()| std::fs::rename(&tmp, expt.join("manifest")))
        .map_err(|e| {
            StartError(format!(
                "cannot write the manifest in {}: {e}",
                expt.display()
            ))
        })
}

fn write_start_line(
    config: &Config,
    lineage: &str,
    clock: Option<ClockKind>,
    sync_threshold_ns: Option<u64>,
) {
    let exe = std::fs::read_link("/proc/self/exe").unwrap_or_default();
    let args: Vec<String> = std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let realtime = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    log::write("start", |line| {
        line.u64("pid", sys::getpid() as u64);
        // SAFETY: getppid cannot fail.
        line.u64("ppid", unsafe { libc::getppid() } as u64);
        line.str("lineage", lineage.as_bytes());
        line.str(
            "mode",
            if config.mode == Mode::Debugger {
                b"debugger"
            } else {
                b"collect"
            },
        );
        line.str("exe", exe.as_os_str().as_bytes());
        line.str("args", args.join(" ").as_bytes());
        line.u64(
            "profile_ns",
            if clock.is_some() {
                clock::interval_ns()
            } else {
                0
            },
        );
        line.str("clock", clock.map_or("off", ClockKind::name).as_bytes());
        line.u64("depth", config.depth as u64);
        line.u64("sample_ns", config.sample_ns);
        line.u64("realtime_ns", realtime);
        line.u64("heaptrace", u64::from(config.heaptrace));
        if let Some(threshold) = sync_threshold_ns {
            line.u64("synctrace", threshold);
        }
        line.u64("iotrace", u64::from(config.iotrace));
        line.u64("offcpu", u64::from(config.offcpu));
        line.u64("mpitrace", u64::from(config.mpitrace));
        line.str("host", host_name(&mut [0u8; 256]));
    });
}

/// The machine's name (gethostname), in `buf`.
fn host_name(buf: &mut [u8]) -> &[u8] {
    // SAFETY: gethostname writes at most `len` bytes into `buf`.
    if unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len() - 1) } != 0 {
        return b"";
    }
    let len = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    &buf[..len]
}

/// `_f1` for founder/_f1.er, empty for the founder itself.
fn lineage_of(founder: &Path, expt: &Path) -> String {
    if expt == founder {
        return String::new();
    }
    expt.file_name()
        .map(|n| n.to_string_lossy().trim_end_matches(".er").to_string())
        .unwrap_or_default()
}

/// Creates `<founder>/<parent lineage>_<letter><N>.er` with the first free
/// N (mkdir is the arbiter between racing processes).
pub fn make_descendant_dir(
    founder: &Path,
    parent_expt: &Path,
    role: Role,
) -> Result<PathBuf, StartError> {
    let parent_lineage = lineage_of(founder, parent_expt);
    for n in 1..100_000 {
        let dir = founder.join(format!("{parent_lineage}_{}{n}.er", role.letter()));
        match std::fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(StartError(format!("cannot create {}: {e}", dir.display()))),
        }
    }
    Err(StartError("too many descendant experiments".into()))
}

/// Starts the clock of every thread that exists now (all of them when
/// starting on a live process; only the main thread at program start).
/// Threads whose number the collector does not know (it did not see them
/// created) are numbered after the known ones in tid order, the process's
/// first thread being 1 (see `numbers`).
fn register_existing_threads() {
    let Ok(entries) = std::fs::read_dir("/proc/self/task") else {
        return;
    };
    let me = sys::gettid();
    let watcher = watch::watcher_tid();
    let mut tids: Vec<i32> = entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&tid| tid != watcher)
        .collect();
    tids.sort_unstable();
    let leader = sys::getpid();
    for tid in tids {
        let number = numbers::number_of(tid).unwrap_or_else(|| {
            let number = if tid == leader { 1 } else { numbers::next() };
            numbers::remember(tid, number);
            number
        });
        if tid == me {
            register_current_thread(number);
        } else {
            register_thread(tid, sys::other_thread_cpu_ns(tid).unwrap_or(0), number);
        }
    }
}

/// Registers the calling thread, dbx's number `number`, and starts its
/// clock. Its `thread-start` line gives its `pthread_t` too: what a
/// pthread_join of it names.
pub fn register_current_thread(number: u32) {
    // SAFETY: pthread_self has no preconditions.
    let pthread = unsafe { libc::pthread_self() } as u64;
    register(sys::gettid(), sys::thread_cpu_ns(), number, Some(pthread));
}

/// Registers thread `tid` of this process (dbx's number `number`) and
/// starts its clock; `cpu_now` is its CPU time to count from.
pub fn register_thread(tid: i32, cpu_now: u64, number: u32) {
    register(tid, cpu_now, number, None);
}

/// Starts what profiles thread `tid` per thread (when the experiment
/// does), then writes its `thread-start` line: also without profiling when
/// sync waits are traced, for the joins. `pthread` is known only to the
/// thread itself.
fn register(tid: i32, cpu_now: u64, number: u32, pthread: Option<u64>) {
    if !active() {
        return;
    }
    let profiled =
        lifecycle::clock_traced() || lifecycle::offcpu_traced() || lifecycle::counters_traced();
    if profiled && !start_profiling(tid, cpu_now) {
        return;
    }
    if !profiled && !lifecycle::sync_traced() {
        return;
    }
    // Attached, the threads created later are found by the watcher,
    // without their pthread_t: one that reused a logged thread's would be
    // taken for it. So none is logged there.
    let pthread = pthread.filter(|_| !live());
    log::write("thread-start", |line| {
        line.u64("tid", tid as u64);
        line.u64("number", u64::from(number));
        if let Some(pthread) = pthread {
            line.hex("pthread", pthread);
        }
    });
}

/// Claims a slot for thread `tid` and arms its clock, off-CPU event and
/// counters (those the experiment has); false when no slot was free.
fn start_profiling(tid: i32, cpu_now: u64) -> bool {
    let offcpu_on = lifecycle::offcpu_traced();
    let counters_on = lifecycle::counters_traced();
    let Some(slot) = threads::claim(tid) else {
        log::warning("too many threads: a thread is not profiled");
        return false;
    };
    slot.last_cpu_ns.store(cpu_now, Ordering::Relaxed);
    slot.last_stack.store(0, Ordering::Relaxed);
    // SAFETY: the thread's clock is not armed yet (or it is us), so its
    // handler cannot be running on the owned parts.
    let owned = unsafe { slot.owned() };
    // A reused slot may remember another thread's stack mapping and walk.
    owned.stack_cache = unwind::StackCache::new();
    if owned.pcs.is_none() {
        owned.pcs = Some(vec![0u64; MAX_STACK_DEPTH].into_boxed_slice());
    }
    match owned.walk.as_deref_mut() {
        Some(walk) => walk.memo.forget(),
        None => owned.walk = threads::SignalWalk::boxed(),
    }
    slot.in_handler.store(false, Ordering::Relaxed);
    slot.tick_deferred.store(false, Ordering::Relaxed);
    if lifecycle::clock_traced() && !slot.clock.arm(tid) {
        log::warning(&format!("cannot start the profiling clock of thread {tid}"));
    }
    if offcpu_on && !slot.offcpu.arm(tid, cpu_now) {
        log::warning(&format!("cannot start off-CPU profiling of thread {tid}"));
    }
    if counters_on {
        slot.counters().arm(tid);
    }
    true
}

/// The calling thread is exiting: stop its clock, free its slot.
pub fn unregister_current_thread() {
    let tid = sys::gettid();
    let Some(slot) = threads::find(tid) else {
        return;
    };
    let blocked = crate::interpose::block_sigprof();
    slot.clock.disarm();
    slot.offcpu.disarm();
    slot.counters().disarm();
    // SAFETY: our own slot, SIGPROF blocked.
    unsafe { profile::flush_residual(slot) };
    // SAFETY: as above.
    let owned = unsafe { slot.owned() };
    PROFILE.retire(&mut owned.profile);
    STACKS.retire(&mut owned.stacks);
    OFFCPU.retire(&mut owned.offcpu);
    COUNTERS.retire(&mut owned.counters);
    threads::release(slot);
    crate::interpose::restore_mask(blocked);
    if active() {
        log::write("thread-end", |line| {
            line.u64("tid", tid as u64);
        });
    }
}

/// Thread `tid` (of `slot`) has exited without telling us (no
/// interposition): its clock stops, its blocks are retired.
pub fn retire_dead_thread(slot: &threads::Slot, tid: i32) {
    numbers::forget(tid);
    slot.clock.disarm();
    slot.offcpu.disarm();
    slot.counters().disarm();
    // SAFETY: the thread is gone, so its handler cannot run on the owned
    // parts any more; only the watcher calls this.
    let owned = unsafe { slot.owned() };
    PROFILE.retire(&mut owned.profile);
    STACKS.retire(&mut owned.stacks);
    OFFCPU.retire(&mut owned.offcpu);
    COUNTERS.retire(&mut owned.counters);
    threads::release(slot);
    if active() {
        log::write("thread-end", |line| {
            line.u64("tid", tid as u64);
        });
    }
}

/// Points the program's environment entry at the current configuration,
/// so that a descendant (exec, posix_spawn, system) finds where to write.
/// No setenv (its lock may be held by a thread that vanished in a fork, and
/// it races with the program's own getenv): the entry is written into one
/// of two static buffers (the other may be what a getenv is reading) and
/// the environment's pointer is swapped to it; without an entry, a new
/// environment array with it is installed, the old one left in place for
/// readers. Called under CONTROL, which is the buffers' owner.
fn update_environment(config: &Config, _control: &std::sync::MutexGuard<'_, Option<Current>>) {
    struct Entries(std::cell::UnsafeCell<[FixedBuf<8192>; 2]>);
    // SAFETY: only written under CONTROL (the guard above), and a buffer is
    // rewritten only when the environment points at the other one.
    unsafe impl Sync for Entries {}
    static ENTRIES: Entries = Entries(std::cell::UnsafeCell::new([
        FixedBuf::new(),
        FixedBuf::new(),
    ]));
    static NEXT: AtomicUsize = AtomicUsize::new(0);

    let mut descendant_config = config.clone();
    descendant_config.mode = Mode::Collect;
    descendant_config.paused = false;
    let text = format!("{CONFIG_VAR}={}", descendant_config.to_config_string());
    let index = NEXT.fetch_xor(1, Ordering::Relaxed) & 1;
    // SAFETY: see `Entries`.
    let entry = unsafe { &mut (*ENTRIES.0.get())[index] };
    entry.clear();
    if !entry.push(text.as_bytes()) || entry.as_cstr().is_none() {
        return;
    }
    let pointer = entry.as_bytes().as_ptr() as *mut libc::c_char;
    let prefix = format!("{CONFIG_VAR}=");
    // SAFETY: environ is a NULL-terminated array of C strings (or NULL).
    unsafe {
        if !replace_environment_entry(prefix.as_bytes(), pointer) {
            add_environment_entry(pointer);
        }
    }
}

extern "C" {
    static mut environ: *mut *mut libc::c_char;
}

/// Replaces the environment entry starting with `prefix` by `pointer`;
/// false if there is none.
///
/// # Safety
/// `environ` must be a valid environment and `pointer` a C string that
/// lives as long as it.
unsafe fn replace_environment_entry(prefix: &[u8], pointer: *mut libc::c_char) -> bool {
    let mut at = environ;
    while !at.is_null() && !(*at).is_null() {
        if std::ffi::CStr::from_ptr(*at).to_bytes().starts_with(prefix) {
            *at = pointer;
            return true;
        }
        at = at.add(1);
    }
    false
}

/// Installs a copy of the environment with `pointer` appended. The old
/// array stays valid for whoever is reading it (it is never freed).
///
/// # Safety
/// As for `replace_environment_entry`.
unsafe fn add_environment_entry(pointer: *mut libc::c_char) {
    let mut entries: Vec<*mut libc::c_char> = Vec::new();
    let mut at = environ;
    while !at.is_null() && !(*at).is_null() {
        entries.push(*at);
        at = at.add(1);
    }
    entries.push(pointer);
    entries.push(std::ptr::null_mut());
    environ = entries.leak().as_mut_ptr();
}

// ---- control while running --------------------------------------------

pub fn pause(cause: &str) -> bool {
    if !lifecycle::set_paused(true) {
        return false;
    }
    samples::record(SampleCause::Pause, b"");
    log::write("pause", |line| {
        line.str("cause", cause.as_bytes());
    });
    true
}

pub fn resume(cause: &str) -> bool {
    if !active() || !paused() {
        return false;
    }
    // Time used while paused is not recorded: every thread's baseline
    // moves to now before recording starts again.
    let run = crate::hold::now().run_ns;
    for slot in threads::registered() {
        if let Some(now) = sys::other_thread_cpu_ns(slot.tid()) {
            slot.last_cpu_ns.store(now, Ordering::Relaxed);
            slot.offcpu.restart_window(run, now);
        }
        slot.counters().restart_baselines();
    }
    if !lifecycle::set_paused(false) {
        return false;
    }
    log::write("resume", |line| {
        line.str("cause", cause.as_bytes());
    });
    samples::record(SampleCause::Resume, b"");
    true
}

/// Closes the experiment: end sample, `end` line, clocks stopped.
pub fn stop() -> bool {
    // Not active: nothing to stop, and the lock is not taken. A fork
    // child that found the lock held by a thread of its parent (which it
    // does not have) never started an experiment; its exit comes here.
    if !active() {
        return false;
    }
    let mut control = CONTROL.lock().unwrap_or_else(|e| e.into_inner());
    if !active() {
        return false;
    }
    if let Some(slot) = threads::find(sys::gettid()) {
        let blocked = crate::interpose::block_sigprof();
        // SAFETY: our own slot, SIGPROF blocked.
        unsafe { profile::flush_residual(slot) };
        // SAFETY: as above.
        let owned = unsafe { slot.owned() };
        PROFILE.retire(&mut owned.profile);
        STACKS.retire(&mut owned.stacks);
        OFFCPU.retire(&mut owned.offcpu);
        COUNTERS.retire(&mut owned.counters);
        crate::interpose::restore_mask(blocked);
    }
    samples::record(SampleCause::End, b"");
    lifecycle::begin_stop();
    watch::stop();
    heap::stop_tracing();
    sync::stop_tracing();
    io::stop_tracing();
    mpi::stop_tracing();
    exec::stop_guarding();
    heap::forget_current_thread();
    let offcpu_was_on = control.as_ref().is_some_and(|c| c.config.offcpu);
    for slot in threads::registered() {
        slot.clock.disarm();
        slot.offcpu.disarm();
        slot.counters().disarm();
    }
    heap::log_totals();
    if control
        .as_ref()
        .is_some_and(|current| current.config.iotrace)
    {
        io::log_totals();
    }
    if offcpu_was_on {
        offcpu::log_totals();
    }
    if control.as_ref().is_some_and(|c| c.config.mpitrace) {
        mpi::log_totals();
    }
    counters::log_totals();
    log::write("end", |_| {});
    PROFILE.close();
    STACKS.close();
    HEAP.close();
    SYNC.close();
    IO.close();
    OFFCPU.close();
    COUNTERS.close();
    MPI.close();
    log::close();
    *control = None;
    lifecycle::finish_stop();
    true
}

/// The experiment's control held by the fork wrapper from before the fork
/// to after it, in both processes, with the directory reserved for the
/// child: no other thread of the parent holds the lock at the instant of
/// the fork, so the child finds it free. (A lock a thread of the parent
/// held would stay held in the child forever.)
pub struct ForkHold {
    control: std::sync::MutexGuard<'static, Option<Current>>,
    reserved: Option<PathBuf>,
}

impl ForkHold {
    /// In the parent, after the fork: the lock released, the directory.
    pub fn release(self) -> Option<PathBuf> {
        self.reserved
    }
}

/// Before the fork wrapper's fork: the lock, and the directory the child
/// will write (None when not following descendants or not active).
pub fn hold_for_fork() -> ForkHold {
    let control = CONTROL.lock().unwrap_or_else(|e| e.into_inner());
    let reserved = control
        .as_ref()
        .filter(|current| current.config.follow && active())
        .and_then(|current| {
            make_descendant_dir(&current.config.founder, &current.expt, Role::Fork).ok()
        });
    ForkHold { control, reserved }
}

/// In the fork wrapper's child, right after fork (see [`after_fork_in_child`]).
pub fn after_fork_in_child_holding(mut hold: ForkHold) {
    let previous = hold.control.take();
    let reserved = hold.reserved.take();
    // Released before the child's own experiment takes it.
    drop(hold);
    forget_parent_experiment();
    start_fork_child(reserved, previous);
}

/// In a fork child, right after fork (pthread_atfork's child handler):
/// drop everything inherited from the parent's experiment, then start the
/// child's own (when following).
pub fn after_fork_in_child(reserved: Option<PathBuf>) {
    forget_parent_experiment();
    // try_lock: a lock held by a thread of the parent stays held forever
    // here (that thread does not exist in the child); then no experiment.
    let previous = match CONTROL.try_lock() {
        Ok(mut control) => control.take(),
        Err(std::sync::TryLockError::Poisoned(e)) => e.into_inner().take(),
        Err(std::sync::TryLockError::WouldBlock) => None,
    };
    start_fork_child(reserved, previous);
}

fn forget_parent_experiment() {
    let blocked = crate::interpose::block_sigprof();
    numbers::restart_in_fork_child(sys::gettid());
    lifecycle::reset_after_fork();
    threads::forget_all_after_fork();
    heap::forget_after_fork();
    PROFILE.close_after_fork();
    STACKS.close_after_fork();
    HEAP.close_after_fork();
    SYNC.close_after_fork();
    IO.close_after_fork();
    OFFCPU.close_after_fork();
    COUNTERS.close_after_fork();
    MPI.close_after_fork();
    log::close();
    crate::interpose::restore_mask(blocked);
}

fn start_fork_child(reserved: Option<PathBuf>, previous: Option<Current>) {
    let (Some(dir), Some(previous)) = (reserved, previous) else {
        return;
    };
    let mut config = previous.config;
    config.expt = dir;
    config.paused = false;
    let _ = start_reserved_child(config, &previous.expt);
}

fn start_reserved_child(config: Config, parent_expt: &Path) -> Result<(), StartError> {
    // The parent made the directory (so it could log its name): start as
    // a founder of that directory, then say whose child it is.
    let parent = founder_relative_or_dot(&config.founder, parent_expt);
    start_in(config, Role::Founder, Context::ForkChild)?;
    log::write("descendant", |line| {
        line.str("parent_expt", parent.as_bytes());
        line.str("kind", b"fork");
    });
    Ok(())
}

/// For pthread_atfork's prepare handler: the directory the child will
/// write (None when not following descendants or not active). The
/// handler cannot keep the lock to the child: it is held only to copy the
/// paths, not while making the directory.
pub fn reserve_fork_child_dir() -> Option<PathBuf> {
    let (founder, expt) = {
        let control = CONTROL.lock().unwrap_or_else(|e| e.into_inner());
        let current = control.as_ref()?;
        if !current.config.follow || !active() {
            return None;
        }
        (current.config.founder.clone(), current.expt.clone())
    };
    make_descendant_dir(&founder, &expt, Role::Fork).ok()
}

/// `.` for the founder, else the experiment's name inside it.
fn founder_relative_or_dot(founder: &Path, expt: &Path) -> String {
    if expt == founder {
        ".".to_string()
    } else {
        founder_relative(expt)
    }
}

/// Lineage relative name of `dir` inside the founder, for the fork line.
pub fn founder_relative(dir: &Path) -> String {
    dir.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}
