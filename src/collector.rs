//! Collector settings (dbx's defaults), the checks made before a target
//! starts, and the config string the library reads (collector design:
//! `key=value;...`, percent-encoded values).

use anyhow::{anyhow, bail, Result};
use commands::{ArchiveMode, CounterInterval, CounterRequest, ShowWhat, SyncThreshold};
use experiment::counters::CounterSpec;
use experiment::{Config, Mode, SyncTrace, TerminatedHow};
use perfevents::{Catalog, Interval};
use std::path::{Path, PathBuf};

/// Default sample period (1 s) and stack depth limit.
pub const DEFAULT_SAMPLE_NS: u64 = 1_000_000_000;
pub const DEFAULT_DEPTH: u32 = 256;

/// What the next experiment will be like.
#[derive(Debug, Clone)]
pub struct Settings {
    /// `collector enable` was given (and not disabled since).
    pub enabled: bool,
    /// Clock-profiling interval; `None` = profiling off.
    pub profile_ns: Option<u64>,
    /// The interval `profile on` goes back to.
    pub profile_timer_ns: u64,
    /// Periodic samples; `false` = manual only.
    pub sample_periodic: bool,
    pub sample_ns: u64,
    pub dbxsample: bool,
    /// Bytes; `None` = no limit.
    pub limit: Option<u64>,
    pub archive: ArchiveMode,
    pub directory: PathBuf,
    /// `None`: the next free `test.N.er`.
    pub filename: Option<String>,
    pub group: Option<String>,
    pub follow: bool,
    pub depth: u32,
    pub pause_signal: i32,
    pub sample_signal: i32,
    pub start_paused: bool,
    /// Heap tracing (`collector heaptrace on`, `collect -H on`).
    pub heaptrace: bool,
    /// Synchronization wait tracing (`collector synctrace on`, `collect -s`).
    pub synctrace: bool,
    /// The wait a call must reach to be recorded (`collector synctrace threshold`).
    pub sync_threshold: SyncThreshold,
    /// I/O tracing (`collector iotrace on`, `collect -i on`).
    pub iotrace: bool,
    /// Off-CPU profiling (`collector offcpu on`, `collect --off-cpu on`).
    pub offcpu: bool,
    /// MPI tracing (`collector mpitrace on`, `collect -M on`).
    pub mpitrace: bool,
    /// Counter overflow profiling (`collector hwprofile on`, `collect -h`).
    pub hwprofile: bool,
    /// The counters, resolved against this machine's when chosen.
    pub counters: Vec<CounterSpec>,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            enabled: false,
            profile_ns: Some(commands::PROFILE_ON_NS),
            profile_timer_ns: commands::PROFILE_ON_NS,
            sample_periodic: true,
            sample_ns: DEFAULT_SAMPLE_NS,
            dbxsample: true,
            limit: None,
            archive: ArchiveMode::On,
            directory: PathBuf::from("."),
            filename: None,
            group: None,
            follow: true,
            depth: DEFAULT_DEPTH,
            pause_signal: 0,
            sample_signal: 0,
            start_paused: false,
            heaptrace: false,
            synctrace: false,
            sync_threshold: SyncThreshold::Calibrate,
            iotrace: false,
            offcpu: false,
            mpitrace: false,
            hwprofile: false,
            counters: Vec::new(),
        }
    }
}

impl Settings {
    /// `hwprofile counter ...` and `collect -h`: checks the counters
    /// against this machine's and turns counter profiling on; an empty
    /// list turns it off. A counter asked for `if_available` that needs a
    /// hardware PMU this machine lacks is left out: what is returned says
    /// so (a misspelt name is still an error).
    pub fn choose_counters(&mut self, requests: &[CounterRequest]) -> Result<Vec<String>> {
        let catalog = Catalog::probe();
        let mut skipped = Vec::new();
        let mut wanted: Vec<(String, Interval)> = Vec::new();
        for request in requests {
            let interval = interval_of(request.interval);
            match catalog.resolve(&request.name, interval) {
                Err(e @ perfevents::Error::NoPmu { .. }) if request.if_available => {
                    skipped.push(format!(
                        "{e}; going on without it, as {}? asks",
                        request.name
                    ));
                }
                _ => wanted.push((request.name.clone(), interval)),
            }
        }
        self.counters = catalog.resolve_all(&wanted)?;
        self.hwprofile = !self.counters.is_empty();
        Ok(skipped)
    }

    /// `hwprofile on`: the counters chosen, or the machine's defaults.
    pub fn hwprofile_on(&mut self) -> Result<()> {
        if self.counters.is_empty() {
            let catalog = Catalog::probe();
            self.counters = catalog.resolve_all(&catalog.defaults())?;
        }
        self.hwprofile = true;
        Ok(())
    }
}

fn interval_of(interval: CounterInterval) -> Interval {
    match interval {
        CounterInterval::On => Interval::On,
        CounterInterval::Hi => Interval::Hi,
        CounterInterval::Lo => Interval::Lo,
        CounterInterval::Events(n) => Interval::Events(n),
    }
}

/// How the founder process ended, for the `terminated` log line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Termination {
    Exit(i32),
    Signal(i32),
}

impl Termination {
    /// The fields of the `terminated` line.
    fn how_and_code(self) -> (TerminatedHow, i32) {
        match self {
            Termination::Exit(code) => (TerminatedHow::Exit, code),
            Termination::Signal(signal) => (TerminatedHow::Signal, signal),
        }
    }
}

impl Settings {
    /// The experiment name the next run gets.
    pub fn experiment_name(&self) -> String {
        self.filename.clone().unwrap_or_else(|| {
            let next = experiment::next_default_name(&self.directory);
            next.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default()
        })
    }

    /// After an experiment was made under an explicit name, the next one
    /// gets the name with its number one up (`run.1.er` → `run.2.er`), as dbx.
    pub fn advance_filename(&mut self) {
        if let Some(name) = &self.filename {
            self.filename = Some(next_numbered(name));
        }
    }

    /// The config string for a process (collector design); `expt` is both
    /// the experiment and the founder.
    pub fn config(&self, expt: &Path, pid: i32, mode: Mode) -> String {
        Config {
            expt: expt.to_path_buf(),
            founder: expt.to_path_buf(),
            pid: u32::try_from(pid).unwrap_or(0),
            mode,
            profile_ns: self.profile_ns.unwrap_or(0),
            depth: self.depth,
            sample_ns: if self.sample_periodic {
                self.sample_ns
            } else {
                0
            },
            limit_bytes: self.limit.unwrap_or(0),
            follow: self.follow,
            pause_signal: self.pause_signal,
            sample_signal: self.sample_signal,
            paused: self.start_paused,
            heaptrace: self.heaptrace,
            synctrace: match (self.synctrace, self.sync_threshold) {
                (false, _) => SyncTrace::Off,
                (true, SyncThreshold::Calibrate) => SyncTrace::Calibrate,
                (true, SyncThreshold::Microseconds(us)) => SyncTrace::ThresholdUs(us),
            },
            iotrace: self.iotrace,
            offcpu: self.offcpu,
            counters: if self.hwprofile {
                self.counters.clone()
            } else {
                Vec::new()
            },
            mpitrace: self.mpitrace,
        }
        .to_config_string()
    }

    /// `collector show [WHAT]`.
    pub fn show(&self, what: ShowWhat) -> String {
        let all = what == ShowWhat::All;
        let mut out = String::new();
        let mut line = |text: String| {
            out.push_str(&text);
            out.push('\n');
        };
        if all {
            line(format!(
                "collection: {}",
                if self.enabled {
                    "enabled for the next run"
                } else {
                    "disabled"
                }
            ));
        }
        if all || what == ShowWhat::Profile {
            line(match self.profile_ns {
                Some(ns) => format!(
                    "profile: on, timer {}, stack depth {}",
                    milliseconds(ns),
                    self.depth
                ),
                None => format!(
                    "profile: off (timer {}, stack depth {})",
                    milliseconds(self.profile_timer_ns),
                    self.depth
                ),
            });
        }
        if all || what == ShowWhat::HeapTrace {
            line(format!("heaptrace: {}", on_off(self.heaptrace)));
        }
        if all || what == ShowWhat::OffCpu {
            line(format!("offcpu: {}", on_off(self.offcpu)));
        }
        if all || what == ShowWhat::HwProfile {
            let counters: Vec<String> = self
                .counters
                .iter()
                .map(|c| format!("{} every {}", c.name, c.interval))
                .collect();
            line(match (self.hwprofile, counters.is_empty()) {
                (false, true) => "hwprofile: off".to_string(),
                (false, false) => format!("hwprofile: off (counters {})", counters.join(", ")),
                (true, _) => format!("hwprofile: on, counters {}", counters.join(", ")),
            });
        }
        if all || what == ShowWhat::SyncTrace {
            let threshold = match self.sync_threshold {
                SyncThreshold::Calibrate => "calibrate".to_string(),
                SyncThreshold::Microseconds(0) => "all".to_string(),
                SyncThreshold::Microseconds(us) => format!("{us} us"),
            };
            line(format!(
                "synctrace: {}, threshold {threshold}",
                on_off(self.synctrace)
            ));
        }
        if all || what == ShowWhat::IoTrace {
            line(format!("iotrace: {}", on_off(self.iotrace)));
        }
        if all || what == ShowWhat::MpiTrace {
            line(format!("mpitrace: {}", on_off(self.mpitrace)));
        }

        if all || what == ShowWhat::Sample {
            line(if self.sample_periodic {
                format!("sample: periodic, period {} s", seconds(self.sample_ns))
            } else {
                format!("sample: manual (period {} s)", seconds(self.sample_ns))
            });
            line(format!("dbxsample: {}", on_off(self.dbxsample)));
        }
        if all || what == ShowWhat::Store {
            line(format!("store directory: {}", self.directory.display()));
            line(format!("store filename: {}", self.experiment_name()));
            if let Some(group) = &self.group {
                line(format!("store group: {group}"));
            }
        }
        if all || what == ShowWhat::Limit {
            line(match self.limit {
                Some(bytes) => format!("limit: {} MB", bytes >> 20),
                None => "limit: unlimited".to_string(),
            });
        }
        if all || what == ShowWhat::Archive {
            line(format!(
                "archive: {}",
                match self.archive {
                    ArchiveMode::On => "on",
                    ArchiveMode::Off => "off",
                    ArchiveMode::Copy => "copy",
                }
            ));
        }
        out
    }
}

/// `10 ms`, `2.5 ms`, `250 us`.
pub fn milliseconds(ns: u64) -> String {
    if ns.is_multiple_of(1_000_000) {
        format!("{} ms", ns / 1_000_000)
    } else if ns >= 1_000_000 {
        format!("{} ms", ns as f64 / 1e6)
    } else {
        format!("{} us", ns as f64 / 1e3)
    }
}

fn on_off(on: bool) -> &'static str {
    if on {
        "on"
    } else {
        "off"
    }
}

fn seconds(ns: u64) -> String {
    if ns.is_multiple_of(1_000_000_000) {
        (ns / 1_000_000_000).to_string()
    } else {
        (ns as f64 / 1e9).to_string()
    }
}

/// `x.3.er` → `x.4.er`; `x.er` → `x.1.er`.
fn next_numbered(name: &str) -> String {
    let stem = name.strip_suffix(".er").unwrap_or(name);
    if let Some((base, number)) = stem.rsplit_once('.') {
        if let Ok(n) = number.parse::<u64>() {
            return format!("{base}.{}.er", n + 1);
        }
    }
    format!("{stem}.1.er")
}

/// Creates the founder directory `directory/name` (which must not exist)
/// and returns its absolute path: the library is given absolute paths.
pub fn create_experiment(directory: &Path, name: &str) -> Result<PathBuf> {
    let directory = std::fs::canonicalize(directory)
        .map_err(|e| anyhow!("experiment directory {}: {e}", directory.display()))?;
    let path = directory.join(name);
    experiment::create_experiment_dir(&path)?;
    Ok(path)
}

/// After the process of `expt` ended: the `terminated` line, then
/// `archives/`. What went wrong, as warnings: the experiment stays usable.
pub fn finish_experiment(expt: &Path, how: Termination, archive: ArchiveMode) -> Vec<String> {
    let mut warnings = Vec::new();
    let (how, code) = how.how_and_code();
    if let Err(problem) = experiment::append_terminated(expt, how, code) {
        warnings.push(problem.to_string());
    }
    if archive != ArchiveMode::Off {
        match experiment::archive::write_archive(expt, archive == ArchiveMode::Copy) {
            Ok(summary) => warnings.extend(
                summary
                    .warnings
                    .into_iter()
                    .map(|w| format!("archive: {w}")),
            ),
            Err(problem) => warnings.push(format!("archive: {problem}")),
        }
    }
    warnings
}

/// What `collector status` counts: an experiment and its descendants.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Figures {
    pub descendants: usize,
    pub clock_events: u64,
    pub samples: usize,
    pub data_bytes: u64,
    /// Off-CPU records, when an experiment records them.
    pub offcpu_events: Option<u64>,
}

/// Reads the founder `expt` (and every descendant that can be read: one
/// just being made has no manifest yet) as it is now.
pub fn figures(expt: &Path) -> experiment::Result<Figures> {
    let founder = experiment::Experiment::open(expt)?;
    let descendants = founder.descendants();
    let readable = descendants
        .iter()
        .filter_map(|d| experiment::Experiment::open(d).ok()?.summary().ok());
    let mut figures = Figures {
        descendants: descendants.len(),
        data_bytes: founder.total_data_bytes(),
        ..Figures::default()
    };
    for summary in std::iter::once(founder.summary()?).chain(readable) {
        figures.clock_events += summary.clock_events;
        figures.samples += summary.samples;
    }
    for expt in std::iter::once(founder).chain(
        descendants
            .iter()
            .filter_map(|d| experiment::Experiment::open(d).ok()),
    ) {
        if expt.manifest().files.iter().any(|f| f == "offcpu") {
            let stats = expt.for_each_offcpu_event(|_| {})?;
            *figures.offcpu_events.get_or_insert(0) += stats.records;
        }
    }
    Ok(figures)
}

/// Everything that must hold before a target starts with collection:
/// the directory is writable, the name is free and ends in .er, the
/// program can have a library preloaded.
pub fn check_before_start(directory: &Path, name: &str, program: &Path) -> Result<()> {
    check_new_experiment(directory, name)?;
    check_preload_possible(program)
}

/// The name ends in .er and is free, the directory is writable.
pub fn check_new_experiment(directory: &Path, name: &str) -> Result<()> {
    if let Err(problem) = commands::check_experiment_name(name) {
        bail!("{problem}");
    }
    check_directory(directory)?;
    let path = directory.join(name);
    if path.symlink_metadata().is_ok() {
        bail!(
            "experiment {} already exists; choose another name",
            path.display()
        );
    }
    Ok(())
}

fn check_directory(directory: &Path) -> Result<()> {
    let metadata = match std::fs::metadata(directory) {
        Ok(m) => m,
        Err(e) => bail!("experiment directory {}: {e}", directory.display()),
    };
    if !metadata.is_dir() {
        bail!(
            "experiment directory {}: not a directory",
            directory.display()
        );
    }
    let c_path = std::ffi::CString::new(directory.as_os_str().as_encoded_bytes())?;
    // SAFETY: access(2) on a NUL-terminated path.
    if unsafe { libc::access(c_path.as_ptr(), libc::W_OK | libc::X_OK) } != 0 {
        bail!(
            "cannot write experiments in {}: {}",
            directory.display(),
            std::io::Error::last_os_error()
        );
    }
    Ok(())
}

/// A static executable has no dynamic loader to preload the library; the
/// loader ignores LD_PRELOAD paths for a setuid or setgid program.
pub fn check_preload_possible(program: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let metadata =
        std::fs::metadata(program).map_err(|e| anyhow::anyhow!("{}: {e}", program.display()))?;
    if metadata.permissions().mode() & 0o6000 != 0 {
        bail!(
            "{} is setuid or setgid: the dynamic loader ignores LD_PRELOAD for it, so the collector cannot be loaded",
            program.display()
        );
    }
    let bytes =
        std::fs::read(program).map_err(|e| anyhow::anyhow!("{}: {e}", program.display()))?;
    if bytes.starts_with(b"#!") {
        // A script: its interpreter is what runs, and is checked by the loader.
        return Ok(());
    }
    match has_interpreter(&bytes) {
        Some(true) => Ok(()),
        Some(false) => bail!(
            "{} is statically linked: the collector library cannot be preloaded into it",
            program.display()
        ),
        None => bail!("{}: not an x86-64 ELF executable", program.display()),
    }
}

/// Whether an ELF64 little-endian file has a PT_INTERP program header.
fn has_interpreter(bytes: &[u8]) -> Option<bool> {
    const PT_INTERP: u32 = 3;
    if bytes.get(..4)? != b"\x7fELF" || *bytes.get(4)? != 2 || *bytes.get(5)? != 1 {
        return None;
    }
    let u16_at = |at: usize| Some(u16::from_le_bytes(bytes.get(at..at + 2)?.try_into().ok()?));
    let u32_at = |at: usize| Some(u32::from_le_bytes(bytes.get(at..at + 4)?.try_into().ok()?));
    let u64_at = |at: usize| Some(u64::from_le_bytes(bytes.get(at..at + 8)?.try_into().ok()?));
    let phoff = usize::try_from(u64_at(0x20)?).ok()?;
    let entry_size = usize::from(u16_at(0x36)?);
    let count = usize::from(u16_at(0x38)?);
    for index in 0..count {
        if u32_at(phoff.checked_add(index.checked_mul(entry_size)?)?)? == PT_INTERP {
            return Some(true);
        }
    }
    Some(false)
}

/// LD_PRELOAD with the collector first and the user's own after it.
pub fn ld_preload(library: &Path) -> String {
    let mut value = library.display().to_string();
    if let Some(user) = std::env::var_os("LD_PRELOAD").filter(|v| !v.is_empty()) {
        value.push(':');
        value.push_str(&user.to_string_lossy());
    }
    value
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbered_names() {
        assert_eq!(next_numbered("run.1.er"), "run.2.er");
        assert_eq!(next_numbered("run.er"), "run.1.er");
        assert_eq!(next_numbered("a.b.er"), "a.b.1.er");
    }

    #[test]
    fn config_string() {
        let settings = Settings::default();
        let config = settings.config(Path::new("/tmp/x y.er"), 42, Mode::Collect);
        assert_eq!(
            config,
            "expt=/tmp/x%20y.er;founder=/tmp/x%20y.er;pid=42;mode=collect;profile=10000000;depth=256;\
             sample=1000000000;limit=0;follow=1;pause_signal=0;sample_signal=0;paused=0;heaptrace=0;synctrace=off;\
             iotrace=0;offcpu=0;mpitrace=0"
        );
        let traced = Settings {
            synctrace: true,
            sync_threshold: SyncThreshold::Microseconds(1000),
            ..Settings::default()
        };
        let config = traced.config(Path::new("/e.er"), 1, Mode::Collect);
        assert!(config.contains(";heaptrace=0;synctrace=1000;"), "{config}");
        let io = Settings {
            iotrace: true,
            ..Settings::default()
        };
        let config = io.config(Path::new("/e.er"), 1, Mode::Collect);
        assert!(config.contains(";iotrace=1"), "{config}");
        assert!(
            experiment::Config::parse(&config).unwrap().iotrace,
            "{config}"
        );
        let off_cpu = Settings {
            offcpu: true,
            ..Settings::default()
        };
        let config = off_cpu.config(Path::new("/e.er"), 1, Mode::Collect);
        assert!(config.ends_with(";offcpu=1;mpitrace=0"), "{config}");
        let mpi = Settings {
            mpitrace: true,
            ..Settings::default()
        };
        let config = mpi.config(Path::new("/e.er"), 1, Mode::Collect);
        assert!(
            experiment::Config::parse(&config).unwrap().mpitrace,
            "{config}"
        );
    }

    #[test]
    fn shown_intervals() {
        assert_eq!(milliseconds(10_000_000), "10 ms");
        assert_eq!(milliseconds(2_500_000), "2.5 ms");
        assert_eq!(milliseconds(250_000), "250 us");
    }
}
