//! `rdbx collect [OPTIONS] PROGRAM [ARGS...]`: run a program with the
//! collector preloaded, no ptrace (like `gprofng collect app`). rdbx makes
//! the experiment directory, forks, execs the program with LD_PRELOAD and
//! RDBX_COLLECTOR_CONFIG (mode=collect: the library's constructor starts
//! the experiment), waits, appends `terminated`, writes the archives and
//! exits with the program's status.

use crate::collector::{self, Settings, Termination};
use crate::collector_lib;
use anyhow::{anyhow, bail, Context as _, Result};
use clap::Parser;
use commands::ArchiveMode;
use experiment::Mode;
use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI32, Ordering};

#[derive(Parser, Debug)]
#[command(
    name = "rdbx collect",
    about = "Run a program with the performance collector (no debugger)",
    // -h is gprofng's counter flag; help is --help only.
    disable_help_flag = true
)]
pub struct CollectOptions {
    /// Print help.
    #[arg(long = "help", action = clap::ArgAction::Help)]
    help: Option<bool>,
    /// Experiment name (must end in .er; default test.N.er, N going up); a path puts it in
    /// that directory (relative to -d), which must exist.
    #[arg(short = 'o', value_name = "[DIR/]NAME.er")]
    output: Option<PathBuf>,
    /// Directory the experiment is created in (default: the current one).
    #[arg(short = 'd', value_name = "DIR")]
    directory: Option<PathBuf>,
    /// Clock profiling: on (10 ms), off, hi (1 ms), lo (100 ms) or a number of ms (suffix u: µs).
    #[arg(short = 'p', value_name = "on|off|hi|lo|MS")]
    profile: Option<String>,
    /// Call-stack depth limit in frames (default 256, at most 2048).
    #[arg(short = 'D', value_name = "FRAMES")]
    depth: Option<String>,
    /// Periodic samples: on (every second), off (manual only) or a period in seconds.
    #[arg(short = 'S', value_name = "on|off|SECONDS")]
    sample: Option<String>,
    /// A comment for the experiment's notes (repeatable).
    #[arg(short = 'C', value_name = "COMMENT")]
    comments: Vec<String>,
    /// Heap tracing: on or off (default): every malloc, free and anonymous mmap with its stack.
    #[arg(short = 'H', value_name = "on|off")]
    heaptrace: Option<String>,
    /// Synchronization wait tracing: on (= calibrate), off (default), calibrate, all or a
    /// threshold in microseconds: each wait for a mutex, condition variable, rwlock,
    /// semaphore, join or barrier at least that long, with its stack.
    #[arg(short = 's', value_name = "on|off|calibrate|all|US")]
    synctrace: Option<String>,
    /// I/O tracing: on or off (default): every file I/O call (open, read, write, seek, sync,
    /// close, fopen, fread, fwrite, ...) with its bytes, time and stack.
    #[arg(short = 'i', value_name = "on|off")]
    iotrace: Option<String>,
    /// Off-CPU profiling: on or off (default): each switch off the CPU (a block, a sleep, a
    /// wait, a preemption) with its stack and how long. Needs root, CAP_PERFMON or
    /// kernel.perf_event_paranoid <= 1.
    #[arg(long = "off-cpu", value_name = "on|off")]
    off_cpu: Option<String>,
    /// MPI tracing: on or off (default): every MPI call (sends, receives, waits,
    /// collectives) with its time, messages, bytes, peer ranks and stack. Under mpirun
    /// (`mpirun -np 4 rdbx collect -o job.er ./prog`) rank N writes job.N.er and lists it
    /// in the group job.erg.
    #[arg(short = 'M', value_name = "on|off")]
    mpitrace: Option<String>,
    /// Counter overflow profiling: NAME[,INTERVAL][,NAME2[,INTERVAL2]...] (up to 8
    /// counters; INTERVAL on, hi, lo or a number of events; NAME? if the machine
    /// can count it, else a warning), on (this machine's default counters), off,
    /// or list (what this machine offers; also -h alone).
    #[arg(
        short = 'h',
        value_name = "NAME[,INTERVAL]...|on|off|list",
        num_args = 0..=1,
        default_missing_value = "list"
    )]
    counters: Option<String>,
    /// Follow descendants (fork, exec): on (default) or off.
    #[arg(short = 'F', value_name = "on|off")]
    follow: Option<String>,
    /// Data limit in megabytes (profile data stop past it).
    #[arg(short = 'L', value_name = "MB")]
    limit: Option<String>,
    /// Archive load objects at the end: on (default), off, or copy.
    #[arg(short = 'A', value_name = "on|off|copy")]
    archive: Option<String>,
    /// A signal that toggles pause/resume; the experiment starts paused.
    #[arg(short = 'y', value_name = "SIGNAL")]
    pause_signal: Option<String>,
    /// A signal that records a sample.
    #[arg(short = 'l', value_name = "SIGNAL")]
    sample_signal: Option<String>,
    /// The program and its arguments.
    #[arg(
        required_unless_present = "counters",
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "PROGRAM [ARGS]"
    )]
    program: Vec<String>,
}

/// The child's pid, for forwarding SIGTERM/SIGHUP from our handler.
static CHILD: AtomicI32 = AtomicI32::new(0);

/// Runs `rdbx collect` with the arguments after `collect`; the exit status.
pub fn main(args: Vec<String>) -> i32 {
    let options = match CollectOptions::try_parse_from(
        std::iter::once("rdbx collect".to_string()).chain(args),
    ) {
        Ok(options) => options,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return code;
        }
    };
    match run(options) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("rdbx collect: {e:#}");
            // Like a shell that cannot start the command.
            127
        }
    }
}

fn run(options: CollectOptions) -> Result<i32> {
    if options.counters.as_deref() == Some("list") {
        print!("{}", perfevents::Catalog::probe().listing());
        return Ok(0);
    }
    let (settings, comments) = settings_from(&options)?;
    let (program_name, args) = options
        .program
        .split_first()
        .ok_or_else(|| anyhow!("no program given"))?;
    let program = crate::session::find_program(program_name)?;
    let rank = mpi_rank_from_environment();
    let name = match rank {
        Some(rank) => ranked_name(settings.filename.as_deref(), rank),
        None => settings.experiment_name(),
    };
    collector::check_before_start(&settings.directory, &name, &program)?;
    let library = collector_lib::locate()?;
    let expt = collector::create_experiment(&settings.directory, &name)?;
    if rank.is_some() {
        join_group(&expt)?;
    }
    if !comments.is_empty() {
        experiment::write_notes(&expt, &(comments.join("\n") + "\n"))?;
    }
    let launch = Launch::new(
        &program,
        program_name,
        args,
        &settings,
        &expt,
        &library.path,
    )?;
    let termination = launch.run()?;
    for problem in collector::finish_experiment(&expt, termination, settings.archive) {
        eprintln!("rdbx collect: warning: {problem}");
    }
    // What the collector met is said here too, not only in the log: heap
    // tracing hidden by the program's own malloc, a data limit reached.
    for problem in collector_problems(&expt) {
        eprintln!("rdbx collect: {problem}");
    }
    if settings.mpitrace && !any_called_mpi_init(&expt) {
        eprintln!(
            "rdbx collect: warning: -M on, but no process of the run called MPI_Init: no MPI data"
        );
    }
    eprintln!("rdbx collect: experiment {}", expt.display());
    Ok(match termination {
        Termination::Exit(code) => code,
        Termination::Signal(signal) => 128 + signal,
    })
}

/// The environment variables through which MPI launchers tell a process its rank in
/// MPI_COMM_WORLD: Open MPI's mpirun, then PMIx and PMI launchers (srun, Hydra).
const RANK_VARIABLES: [&str; 3] = ["OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"];

/// This process's rank when an MPI launcher started it (`mpirun rdbx collect ...`).
fn mpi_rank_from_environment() -> Option<u32> {
    RANK_VARIABLES
        .iter()
        .find_map(|name| std::env::var(name).ok()?.trim().parse().ok())
}

/// The experiment a rank writes: `job.er` → `job.N.er` (`test.N.er` without `-o`), so
/// that the ranks of one job do not race for one name.
fn ranked_name(filename: Option<&str>, rank: u32) -> String {
    let stem = filename
        .and_then(|name| name.strip_suffix(".er"))
        .unwrap_or("test");
    format!("{stem}.{rank}.er")
}

/// Lists a rank's experiment `job.N.er` in the group `job.erg` beside it.
fn join_group(expt: &Path) -> Result<()> {
    let name = expt
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| anyhow!("{}: no experiment name", expt.display()))?;
    let stem = name.strip_suffix(".er").unwrap_or(name);
    let group_stem = stem.rsplit_once('.').map_or(stem, |(job, _)| job);
    let group = expt.with_file_name(format!("{group_stem}.erg"));
    experiment::append_to_group(&group, name)
        .with_context(|| format!("cannot add {name} to the group {}", group.display()))
}

/// Whether the experiment or one of its descendants says MPI_Init completed (the
/// `mpi` line of MPI tracing).
fn any_called_mpi_init(expt: &Path) -> bool {
    let Ok(founder) = experiment::Experiment::open(expt) else {
        return false;
    };
    std::iter::once(expt.to_path_buf())
        .chain(founder.descendants())
        .filter_map(|path| experiment::Experiment::open(path).ok()?.mpi_rank().ok())
        .any(|rank| rank.is_some())
}

/// The warnings and errors in the experiment's log.
fn collector_problems(expt: &Path) -> Vec<String> {
    let Ok(bytes) = std::fs::read(expt.join("log")) else {
        return Vec::new();
    };
    experiment::log::parse_log(&bytes)
        .into_iter()
        .filter_map(|line| match line.event {
            experiment::log::Event::Warning(text) => Some(format!("warning: {text}")),
            experiment::log::Event::Error(text) => Some(format!("error: {text}")),
            _ => None,
        })
        .collect()
}

/// The settings the options describe, and the notes.
fn settings_from(options: &CollectOptions) -> Result<(Settings, Vec<String>)> {
    let mut settings = Settings::default();
    if let Some(dir) = &options.directory {
        settings.directory = dir.clone();
    }
    if let Some(output) = &options.output {
        let (directory, name) = split_output(output)?;
        settings.directory = match (&options.directory, directory) {
            (Some(base), Some(directory)) => base.join(directory),
            (None, Some(directory)) => directory,
            (_, None) => settings.directory,
        };
        settings.filename = Some(name);
    }
    if let Some(depth) = &options.depth {
        settings.depth = commands::stack_depth(depth).map_err(|p| anyhow!("-D: {p}"))?;
    }
    if let Some(profile) = &options.profile {
        settings.profile_ns = match profile.as_str() {
            "off" => None,
            value => Some(commands::profile_interval(value).map_err(|p| anyhow!("-p: {p}"))?),
        };
    }
    if let Some(sample) = &options.sample {
        match sample.as_str() {
            "on" => settings.sample_periodic = true,
            "off" => settings.sample_periodic = false,
            value => {
                settings.sample_ns = commands::seconds(value).map_err(|p| anyhow!("-S: {p}"))?
            }
        }
    }
    if let Some(follow) = &options.follow {
        settings.follow = on_off("-F", follow)?;
    }
    if let Some(heaptrace) = &options.heaptrace {
        settings.heaptrace = on_off("-H", heaptrace)?;
    }
    if let Some(synctrace) = &options.synctrace {
        match synctrace.as_str() {
            "off" => settings.synctrace = false,
            "on" => {
                settings.synctrace = true;
                settings.sync_threshold = commands::SyncThreshold::Calibrate;
            }
            value => {
                settings.sync_threshold = commands::sync_threshold(value)
                    .map_err(|problem| anyhow!("-s: {problem} (or on, off)"))?;
                settings.synctrace = true;
            }
        }
    }
    if let Some(iotrace) = &options.iotrace {
        settings.iotrace = on_off("-i", iotrace)?;
    }
    if let Some(mpitrace) = &options.mpitrace {
        settings.mpitrace = on_off("-M", mpitrace)?;
    }
    if let Some(off_cpu) = &options.off_cpu {
        settings.offcpu = on_off("--off-cpu", off_cpu)?;
    }
    if let Some(counters) = &options.counters {
        match counters.as_str() {
            "on" => settings.hwprofile_on(),
            list => {
                let requests = commands::parse_counter_list(list).map_err(|p| anyhow!("{p}"))?;
                settings.choose_counters(&requests).map(|skipped| {
                    for problem in skipped {
                        eprintln!("rdbx collect: warning: -h: {problem}");
                    }
                })
            }
        }
        .map_err(|e| anyhow!("-h: {e}"))?;
    }
    if let Some(limit) = &options.limit {
        settings.limit = match limit.parse::<u64>() {
            Ok(mb) if mb > 0 => Some(mb.saturating_mul(1 << 20)),
            _ if limit == "unlimited" || limit == "off" => None,
            _ => bail!("-L: expected a positive number of megabytes, got \"{limit}\""),
        };
    }
    if let Some(mode) = &options.archive {
        settings.archive = match mode.as_str() {
            "on" => ArchiveMode::On,
            "off" => ArchiveMode::Off,
            "copy" => ArchiveMode::Copy,
            other => bail!("-A: expected on, off or copy, got \"{other}\""),
        };
    }
    if let Some(signal) = &options.pause_signal {
        settings.pause_signal = signal_number("-y", signal)?;
        settings.start_paused = true;
    }
    if let Some(signal) = &options.sample_signal {
        settings.sample_signal = signal_number("-l", signal)?;
    }
    if settings.pause_signal != 0 && settings.pause_signal == settings.sample_signal {
        bail!("-y and -l need two different signals");
    }
    Ok((settings, options.comments.clone()))
}

/// `-o [DIR/]NAME.er`, as `gprofng collect app -o` takes it: the directory
/// part (None for a bare name) and the experiment's name. The directory is
/// not created: a missing one is refused before the program starts.
fn split_output(output: &Path) -> Result<(Option<PathBuf>, String)> {
    let shown = output.display();
    let name = output
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| anyhow!("-o {shown}: no experiment name (NAME.er) in it"))?;
    if name.len() <= 3 || !name.ends_with(".er") {
        bail!("-o {shown}: the experiment name \"{name}\" must end in .er");
    }
    let directory = output
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .map(Path::to_path_buf);
    Ok((directory, name.to_string()))
}

fn on_off(option: &str, word: &str) -> Result<bool> {
    match word {
        "on" => Ok(true),
        "off" => Ok(false),
        _ => bail!("{option}: expected on or off, got \"{word}\""),
    }
}

/// `SIGUSR1`, `USR1`, `usr1` or a number; not one the program cannot catch.
fn signal_number(option: &str, text: &str) -> Result<i32> {
    let signal = commands::Signal::parse(text)
        .ok_or_else(|| anyhow!("{option}: unknown signal \"{text}\""))?;
    let number = signal.number();
    if matches!(number, libc::SIGKILL | libc::SIGSTOP) {
        bail!("{option}: {signal} cannot be caught");
    }
    Ok(number)
}

/// Everything execve needs, made before fork: the child only patches its
/// pid into the config and calls execve (no allocation after fork).
struct Launch {
    program: CString,
    argv: Vec<CString>,
    envp: Vec<Vec<u8>>,
    /// Index in `envp` of RDBX_COLLECTOR_CONFIG and where its pid digits are.
    config_index: usize,
    pid_at: usize,
}

/// Width of the pid field written by the child (zero-padded).
const PID_DIGITS: usize = 10;

impl Launch {
    fn new(
        program: &Path,
        shown_name: &str,
        args: &[String],
        settings: &Settings,
        expt: &Path,
        library: &Path,
    ) -> Result<Launch> {
        let c = |bytes: &[u8]| CString::new(bytes).context("a NUL byte in an argument");
        let mut argv = vec![c(shown_name.as_bytes())?];
        for arg in args {
            argv.push(c(arg.as_bytes())?);
        }
        let config = settings.config(expt, 0, Mode::Collect);
        let placeholder = "0".repeat(PID_DIGITS);
        let config = config.replacen("pid=0;", &format!("pid={placeholder};"), 1);
        let prefix = "RDBX_COLLECTOR_CONFIG=";
        let pid_at = prefix.len()
            + config
                .find(&format!("pid={placeholder}"))
                .ok_or_else(|| anyhow!("no pid in the config"))?
            + "pid=".len();
        let mut envp: Vec<Vec<u8>> = std::env::vars_os()
            .filter(|(key, _)| key != "LD_PRELOAD" && key != "RDBX_COLLECTOR_CONFIG")
            .map(|(key, value)| {
                let mut entry = key.into_encoded_bytes();
                entry.push(b'=');
                entry.extend(value.into_encoded_bytes());
                entry
            })
            .filter(|entry| !entry.contains(&0))
            .collect();
        envp.push(format!("LD_PRELOAD={}", collector::ld_preload(library)).into_bytes());
        envp.push(format!("{prefix}{config}").into_bytes());
        let config_index = envp.len() - 1;
        for entry in &mut envp {
            entry.push(0);
        }
        Ok(Launch {
            program: c(program.as_os_str().as_encoded_bytes())?,
            argv,
            envp,
            config_index,
            pid_at,
        })
    }

    /// Forks, execs, waits; how the program ended.
    fn run(mut self) -> Result<Termination> {
        let pid_digits: *mut u8 = self.envp[self.config_index][self.pid_at..].as_mut_ptr();
        let mut argv: Vec<*const libc::c_char> = self.argv.iter().map(|a| a.as_ptr()).collect();
        argv.push(std::ptr::null());
        let mut envp: Vec<*const libc::c_char> =
            self.envp.iter().map(|e| e.as_ptr().cast()).collect();
        envp.push(std::ptr::null());
        // Signals from the terminal reach the program (same process group);
        // rdbx only waits. SIGTERM and SIGHUP sent to rdbx are passed on.
        ignore_signal(libc::SIGINT);
        ignore_signal(libc::SIGQUIT);
        forward_signal(libc::SIGTERM);
        forward_signal(libc::SIGHUP);
        // Held until CHILD is set: a SIGTERM right after the fork must
        // reach the program, not find no child to pass it to.
        let held = block_forwarded_signals();
        // SAFETY: rdbx collect is single-threaded here; the child only
        // writes into memory prepared before the fork and makes
        // async-signal-safe system calls.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            bail!("fork: {}", std::io::Error::last_os_error());
        }
        if pid == 0 {
            // SAFETY: as above; every pointer points into live buffers.
            unsafe { exec_child(&self.program, &argv, &envp, pid_digits, &held) };
        }
        CHILD.store(pid, Ordering::SeqCst);
        restore_signal_mask(&held);
        wait_for(pid)
    }
}

/// In the child: its pid into the config, default signal dispositions, execve.
///
/// # Safety
/// Only between fork and exec, with `pid_digits` pointing at PID_DIGITS
/// writable bytes inside one of the `envp` strings.
unsafe fn exec_child(
    program: &CString,
    argv: &[*const libc::c_char],
    envp: &[*const libc::c_char],
    pid_digits: *mut u8,
    mask: &libc::sigset_t,
) -> ! {
    let mut pid = libc::getpid() as u64;
    for index in (0..PID_DIGITS).rev() {
        *pid_digits.add(index) = b'0' + (pid % 10) as u8;
        pid /= 10;
    }
    for signal in [libc::SIGINT, libc::SIGQUIT, libc::SIGTERM, libc::SIGHUP] {
        libc::signal(signal, libc::SIG_DFL);
    }
    libc::sigprocmask(libc::SIG_SETMASK, mask, std::ptr::null_mut());
    libc::execve(program.as_ptr(), argv.as_ptr(), envp.as_ptr());
    let message = b"rdbx collect: cannot execute the program\n";
    libc::write(2, message.as_ptr().cast(), message.len());
    libc::_exit(127);
}

fn wait_for(pid: i32) -> Result<Termination> {
    loop {
        let mut status = 0;
        // SAFETY: status is a valid out-pointer.
        let ret = unsafe { libc::waitpid(pid, &mut status, 0) };
        if ret == -1 {
            let error = std::io::Error::last_os_error();
            if error.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            bail!("waitpid: {error}");
        }
        if libc::WIFEXITED(status) {
            return Ok(Termination::Exit(libc::WEXITSTATUS(status)));
        }
        if libc::WIFSIGNALED(status) {
            return Ok(Termination::Signal(libc::WTERMSIG(status)));
        }
    }
}

/// Blocks SIGTERM and SIGHUP; the mask before.
fn block_forwarded_signals() -> libc::sigset_t {
    // SAFETY: plain signal-mask calls on valid sets.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGTERM);
        libc::sigaddset(&mut set, libc::SIGHUP);
        libc::sigprocmask(libc::SIG_BLOCK, &set, &mut old);
        old
    }
}

fn restore_signal_mask(mask: &libc::sigset_t) {
    // SAFETY: restoring a mask we saved.
    unsafe { libc::sigprocmask(libc::SIG_SETMASK, mask, std::ptr::null_mut()) };
}

fn ignore_signal(signal: i32) {
    // SAFETY: setting a disposition to SIG_IGN.
    unsafe { libc::signal(signal, libc::SIG_IGN) };
}

extern "C" fn pass_on(signal: libc::c_int) {
    let child = CHILD.load(Ordering::SeqCst);
    if child > 0 {
        // SAFETY: kill(2) is async-signal-safe.
        unsafe { libc::kill(child, signal) };
    }
}

fn forward_signal(signal: i32) {
    // SAFETY: the handler only reads an atomic and calls kill(2).
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = pass_on as *const () as usize;
        libc::sigemptyset(&mut action.sa_mask);
        action.sa_flags = libc::SA_RESTART;
        libc::sigaction(signal, &action, std::ptr::null_mut());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rank_gets_its_own_name_in_the_jobs_group() {
        assert_eq!(ranked_name(Some("job.er"), 3), "job.3.er");
        assert_eq!(ranked_name(Some("run.2.er"), 0), "run.2.0.er");
        assert_eq!(ranked_name(None, 12), "test.12.er");
        let dir = std::env::temp_dir().join(format!("rdbx-collect-group-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for rank in [1, 0] {
            join_group(&dir.join(ranked_name(Some("run.2.er"), rank))).unwrap();
        }
        let group = std::fs::read_to_string(dir.join("run.2.erg")).unwrap();
        assert_eq!(
            group,
            format!("{}\nrun.2.1.er\nrun.2.0.er\n", experiment::GROUP_HEADER)
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
