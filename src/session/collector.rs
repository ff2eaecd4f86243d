//! The `collector` commands in a debugging session: settings, and the
//! experiment of the process being debugged. rdbx creates the experiment
//! directory and preloads libcollector.so at `run`; at the executable's
//! entry point it calls `__rdbx_collector_start(config)` in the target, and
//! later `__rdbx_collector_*` for pause, resume, samples and disable.
//! After `collector disable`, `collector enable` starts a new experiment in
//! the same (still running) process with another `__rdbx_collector_start`.
//! In a process started without collection (or attached to), `collector
//! enable` first loads the library with an injected dlopen
//! (debugger::inject) and starts it with `attach=1`: clock profiling of
//! every thread, no interposition (docs/architecture.md).

use super::Session;
use crate::collector::{self, Termination};
use crate::collector_lib;
use anyhow::{anyhow, bail, Result};
use commands::{
    ArchiveMode, CollectorCommand, HwProfileSetting, ProfileSetting, SampleSetting, StoreSetting,
    SyncTraceSetting,
};
use debugger::call::CallArg;
use debugger::inject::InjectOptions;
use experiment::Mode;
use std::path::PathBuf;

/// Sample cause codes of the collector design.
const CAUSE_MANUAL: u64 = 5;
const CAUSE_DBX_STOP: u64 = 6;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ExperimentState {
    /// Created; the collector starts at the entry point.
    Starting,
    Active,
    Paused,
    /// Closed by `collector disable`, or the process ended.
    Closed,
    /// The collector could not be started; the program ran without it.
    Failed,
    /// rdbx detached while collecting: the collector goes on in the
    /// process and closes the experiment (`end`) when the process exits.
    Detached,
}

impl ExperimentState {
    fn name(self) -> &'static str {
        match self {
            ExperimentState::Starting => "starting",
            ExperimentState::Active => "active",
            ExperimentState::Paused => "paused",
            ExperimentState::Closed => "closed",
            ExperimentState::Failed => "failed (no data collected)",
            ExperimentState::Detached => "left collecting in the detached process",
        }
    }
}

/// An experiment of the current (or last) process.
#[derive(Debug, Clone)]
pub(super) struct Experiment {
    path: PathBuf,
    state: ExperimentState,
    archive: ArchiveMode,
    /// The `terminated` line and archives are written.
    finished: bool,
}

impl Experiment {
    pub(super) fn path(&self) -> &std::path::Path {
        &self.path
    }
}

impl Session {
    pub(super) fn collector(&mut self, command: CollectorCommand) -> Result<()> {
        match command {
            CollectorCommand::Enable => self.collector_enable(),
            CollectorCommand::Disable => self.collector_disable(),
            CollectorCommand::Pause => self.collector_pause_resume(true),
            CollectorCommand::Resume => self.collector_pause_resume(false),
            CollectorCommand::Sample(SampleSetting::Record(name)) => self.collector_record(name),
            CollectorCommand::Sample(setting) => {
                self.collector_sample_setting(setting);
                Ok(())
            }
            CollectorCommand::DbxSample(on) => {
                self.collector_settings.dbxsample = on;
                Ok(())
            }
            CollectorCommand::HeapTrace(on) => {
                self.refuse_while_active("heaptrace")?;
                self.collector_settings.heaptrace = on;
                Ok(())
            }
            CollectorCommand::IoTrace(on) => {
                self.refuse_while_active("iotrace")?;
                self.collector_settings.iotrace = on;
                Ok(())
            }
            CollectorCommand::OffCpu(on) => {
                self.refuse_while_active("offcpu")?;
                self.collector_settings.offcpu = on;
                Ok(())
            }
            CollectorCommand::SyncTrace(setting) => {
                self.refuse_while_active("synctrace")?;
                let settings = &mut self.collector_settings;
                match setting {
                    SyncTraceSetting::On => settings.synctrace = true,
                    SyncTraceSetting::Off => settings.synctrace = false,
                    SyncTraceSetting::Threshold(threshold) => settings.sync_threshold = threshold,
                }
                Ok(())
            }
            CollectorCommand::Profile(setting) => {
                self.refuse_while_active("profile")?;
                let settings = &mut self.collector_settings;
                match setting {
                    ProfileSetting::On => settings.profile_ns = Some(settings.profile_timer_ns),
                    ProfileSetting::Off => settings.profile_ns = None,
                    ProfileSetting::Timer(ns) => {
                        settings.profile_timer_ns = ns;
                        settings.profile_ns = Some(ns);
                    }
                    ProfileSetting::Depth(frames) => settings.depth = frames,
                }
                Ok(())
            }
            CollectorCommand::Limit(limit) => {
                self.refuse_while_active("limit")?;
                self.collector_settings.limit = limit;
                Ok(())
            }
            CollectorCommand::Archive(mode) => {
                self.refuse_while_active("archive")?;
                self.collector_settings.archive = mode;
                Ok(())
            }
            CollectorCommand::Store(store) => {
                self.refuse_while_active("store")?;
                let settings = &mut self.collector_settings;
                match store {
                    StoreSetting::Directory(dir) => settings.directory = PathBuf::from(dir),
                    StoreSetting::Filename(name) => settings.filename = Some(name),
                    StoreSetting::Group(name) => settings.group = Some(name),
                }
                Ok(())
            }
            CollectorCommand::Show(what) => {
                print!("{}", self.collector_settings.show(what));
                Ok(())
            }
            CollectorCommand::Status => {
                self.collector_status();
                Ok(())
            }
            CollectorCommand::Version => {
                let library = collector_lib::locate()?;
                println!("{} at {}", library.version, library.path.display());
                Ok(())
            }
            CollectorCommand::HwProfile(setting) => {
                if setting == HwProfileSetting::List {
                    print!("{}", perfevents::Catalog::probe().listing());
                    return Ok(());
                }
                self.refuse_while_active("hwprofile")?;
                let settings = &mut self.collector_settings;
                match setting {
                    HwProfileSetting::On => settings
                        .hwprofile_on()
                        .map_err(|e| anyhow!("collector hwprofile on: {e}")),
                    HwProfileSetting::Off => {
                        settings.hwprofile = false;
                        Ok(())
                    }
                    HwProfileSetting::Counters(requests) => settings
                        .choose_counters(&requests)
                        .map(|skipped| {
                            for problem in skipped {
                                eprintln!("rdbx: warning: collector hwprofile counter: {problem}");
                            }
                        })
                        .map_err(|e| anyhow!("collector hwprofile counter: {e}")),
                    HwProfileSetting::List => Ok(()),
                }
            }
            CollectorCommand::MpiTrace(on) => {
                self.refuse_while_active("mpitrace")?;
                self.collector_settings.mpitrace = on;
                Ok(())
            }
        }
    }

    /// An experiment is open in a live process.
    fn experiment_active(&self) -> bool {
        self.dbg.is_running()
            && self.experiment.as_ref().is_some_and(|e| {
                matches!(
                    e.state,
                    ExperimentState::Starting | ExperimentState::Active | ExperimentState::Paused
                )
            })
    }

    /// dbx refuses settings that shape the data while an experiment runs.
    fn refuse_while_active(&self, what: &str) -> Result<()> {
        if self.experiment_active() {
            bail!(
                "collector {what}: not changed while an experiment is active; settings apply to the next experiment (collector disable or kill first)"
            );
        }
        Ok(())
    }

    fn collector_enable(&mut self) -> Result<()> {
        if self.experiment_active() {
            bail!("collector enable: an experiment is already active");
        }
        if self.dbg.is_running() {
            self.start_experiment_in_live_process()?;
        }
        self.collector_settings.enabled = true;
        Ok(())
    }

    /// `collector enable` at a stop of a process that has libcollector.so
    /// (it was started with collection, whose experiment was then closed):
    /// a new experiment, started here by `__rdbx_collector_start`.
    fn start_experiment_in_live_process(&mut self) -> Result<()> {
        let pid = self.dbg.process()?.pid();
        let settings = &self.collector_settings;
        let name = settings.experiment_name();
        collector::check_new_experiment(&settings.directory, &name)?;
        let loaded_here = self
            .dbg
            .function_address("__rdbx_collector_start")
            .is_none();
        if loaded_here {
            self.load_collector_into_process(pid)?;
        }
        let settings = &self.collector_settings;
        let path = collector::create_experiment(&settings.directory, &name)?;
        let mut config = settings.config(&path, pid, Mode::Debugger);
        if loaded_here {
            config.push_str(";attach=1");
        }
        let config = config.into_bytes();
        let archive = settings.archive;
        self.collector_settings.advance_filename();
        println!("Creating experiment database {} ...", path.display());
        // The closed experiment still gets its `terminated` line and
        // archives when the process ends.
        if let Some(closed) = self.experiment.take().filter(|e| !e.finished) {
            self.earlier_experiments.push(closed);
        }
        self.experiment = Some(Experiment {
            path,
            state: ExperimentState::Starting,
            archive,
            finished: false,
        });
        let status = self.collector_call("__rdbx_collector_start", &[CallArg::CString(config)]);
        self.after_collector_call();
        match status.and_then(|s| check_status("__rdbx_collector_start", s)) {
            Ok(()) => {
                self.set_experiment_state(ExperimentState::Active);
                Ok(())
            }
            Err(e) => {
                self.set_experiment_state(ExperimentState::Failed);
                Err(e.context("collector enable: the collector did not start"))
            }
        }
    }

    /// Loads libcollector.so into the stopped process `pid` (not started
    /// with collection). The experiment directory must be visible to it.
    fn load_collector_into_process(&mut self, pid: i32) -> Result<()> {
        let library = collector_lib::locate()?;
        let directory = std::fs::canonicalize(&self.collector_settings.directory)
            .unwrap_or_else(|_| self.collector_settings.directory.clone());
        if !debugger::inject::sees_same_file(pid, &directory) {
            bail!(
                "collector enable: process {pid} does not see {} (another mount namespace); store the experiment in a directory it shares with rdbx",
                directory.display()
            );
        }
        let options = InjectOptions {
            allow_seccomp_filter: std::env::var_os("RDBX_INJECT_SECCOMP").is_some_and(|v| v == "1"),
        };
        let tid = self.dbg.current_thread();
        let loaded = self.dbg.load_library(tid, &library.path, options);
        self.after_collector_call();
        loaded.map_err(|e| anyhow!("collector enable: {e}"))?;
        Ok(())
    }

    fn collector_disable(&mut self) -> Result<()> {
        self.collector_settings.enabled = false;
        if !self.experiment_active() {
            return Ok(());
        }
        let state = self.experiment.as_ref().map(|e| e.state);
        if state != Some(ExperimentState::Starting) {
            let status = self.collector_call("__rdbx_collector_stop", &[]);
            self.after_collector_call();
            check_status("__rdbx_collector_stop", status?)?;
        }
        if let Some(e) = self.experiment.as_mut() {
            e.state = ExperimentState::Closed;
            println!("experiment {} closed", e.path.display());
        }
        Ok(())
    }

    fn collector_pause_resume(&mut self, pause: bool) -> Result<()> {
        let name = if pause { "pause" } else { "resume" };
        let state = self.running_experiment_state(name)?;
        let wanted = if pause {
            ExperimentState::Paused
        } else {
            ExperimentState::Active
        };
        if state == wanted {
            return Ok(());
        }
        let function = format!("__rdbx_collector_{name}");
        let status = self.collector_call(&function, &[]);
        self.after_collector_call();
        check_status(&function, status?)?;
        if let Some(e) = self.experiment.as_mut() {
            e.state = wanted;
        }
        Ok(())
    }

    fn collector_record(&mut self, name: Option<String>) -> Result<()> {
        self.running_experiment_state("sample record")?;
        let label = name.unwrap_or_default().into_bytes();
        let status = self.collector_call(
            "__rdbx_collector_sample",
            &[CallArg::CString(label), CallArg::Integer(CAUSE_MANUAL)],
        );
        self.after_collector_call();
        check_status("__rdbx_collector_sample", status?)
    }

    fn collector_sample_setting(&mut self, setting: SampleSetting) {
        let settings = &mut self.collector_settings;
        match setting {
            SampleSetting::Periodic => settings.sample_periodic = true,
            SampleSetting::Manual => settings.sample_periodic = false,
            SampleSetting::Period(ns) => settings.sample_ns = ns,
            SampleSetting::Record(_) => {}
        }
        if self.experiment_active() {
            eprintln!("rdbx: warning: collector sample: applies to the next experiment");
        }
    }

    /// The state of the experiment a command acts on now; an error if none
    /// is running in a live process.
    fn running_experiment_state(&self, what: &str) -> Result<ExperimentState> {
        match (&self.experiment, self.experiment_active()) {
            (Some(e), true) if e.state == ExperimentState::Starting => Err(anyhow!(
                "collector {what}: the collector has not started yet (it starts at the program's entry point)"
            )),
            (Some(e), true) => Ok(e.state),
            _ => Err(anyhow!(
                "collector {what}: no experiment is active (collector enable, then run)"
            )),
        }
    }

    fn collector_status(&self) {
        let Some(e) = &self.experiment else {
            if self.collector_settings.enabled {
                println!("no experiment yet; one starts at the next run");
            } else {
                println!("no experiment (collector enable, then run)");
            }
            return;
        };
        match collector::figures(&e.path) {
            Ok(figures) => {
                match figures.descendants {
                    0 => println!("experiment: {}", e.path.display()),
                    1 => println!("experiment: {} (1 descendant)", e.path.display()),
                    n => println!("experiment: {} ({n} descendants)", e.path.display()),
                }
                println!("state: {}", e.state.name());
                println!("clock events: {}", figures.clock_events);
                if let Some(events) = figures.offcpu_events {
                    println!("off-CPU events: {events}");
                }
                println!("samples: {}", figures.samples);
                println!("data bytes: {}", figures.data_bytes);
            }
            // Before the collector wrote the manifest, or not its data.
            Err(problem) => {
                println!("experiment: {}", e.path.display());
                println!("state: {}", e.state.name());
                println!("no data to read yet: {problem}");
            }
        }
    }

    // ----- the life of an experiment -------------------------------------

    /// Before `run`: checks, creates the experiment directory and returns
    /// the environment of the target (nothing when collection is off).
    pub(super) fn prepare_collection(
        &mut self,
        program: &std::path::Path,
    ) -> Result<Vec<(String, String)>> {
        if !self.collector_settings.enabled {
            return Ok(Vec::new());
        }
        let settings = &self.collector_settings;
        let name = settings.experiment_name();
        collector::check_before_start(&settings.directory, &name, program)?;
        let library = collector_lib::locate()?;
        let path = collector::create_experiment(&settings.directory, &name)?;
        self.collector_settings.advance_filename();
        let config = self.collector_settings.config(&path, 0, Mode::Debugger);
        println!("Creating experiment database {} ...", path.display());
        self.experiment = Some(Experiment {
            path,
            state: ExperimentState::Starting,
            archive: self.collector_settings.archive,
            finished: false,
        });
        Ok(vec![
            (
                "LD_PRELOAD".to_string(),
                collector::ld_preload(&library.path),
            ),
            ("RDBX_COLLECTOR_CONFIG".to_string(), config),
        ])
    }

    /// Right after the target started: ask for the entry-point stop.
    pub(super) fn collection_started(&mut self) {
        if self.experiment.as_ref().map(|e| e.state) != Some(ExperimentState::Starting) {
            return;
        }
        if let Err(e) = self.dbg.stop_at_entry() {
            eprintln!("rdbx: the collector cannot be started: {e}");
            self.set_experiment_state(ExperimentState::Failed);
        }
    }

    /// At the entry point: `__rdbx_collector_start(config)`.
    pub(super) fn start_collector_at_entry(&mut self) {
        let Some(e) = &self.experiment else { return };
        if e.state != ExperimentState::Starting {
            return;
        }
        let Ok(pid) = self.dbg.process().map(|p| p.pid()) else {
            return;
        };
        let config = self
            .collector_settings
            .config(&e.path, pid, Mode::Debugger)
            .into_bytes();
        // (If the process ends during the call, `resume` reports it.)
        let status = self.collector_call("__rdbx_collector_start", &[CallArg::CString(config)]);
        match status.and_then(|s| check_status("__rdbx_collector_start", s)) {
            Ok(()) => self.set_experiment_state(ExperimentState::Active),
            Err(e) => {
                eprintln!(
                    "rdbx: the collector did not start: {e:#}; the program runs without collection"
                );
                self.set_experiment_state(ExperimentState::Failed);
            }
        }
    }

    /// At a stop the user sees: a `dbx-stop` sample if dbxsample is on.
    pub(super) fn collector_at_stop(&mut self) {
        let active = self.experiment.as_ref().map(|e| e.state) == Some(ExperimentState::Active);
        if !active || !self.collector_settings.dbxsample || !self.dbg.is_running() {
            return;
        }
        let status = self.collector_call(
            "__rdbx_collector_sample",
            &[
                CallArg::CString(Vec::new()),
                CallArg::Integer(CAUSE_DBX_STOP),
            ],
        );
        if let Err(e) = status.and_then(|s| check_status("__rdbx_collector_sample", s)) {
            eprintln!("rdbx: warning: no sample at this stop: {e:#}");
        }
    }

    /// The process is gone: for each of its experiments, `terminated` in
    /// the log, then the archives.
    pub(super) fn collection_ended(&mut self, how: Termination) {
        let earlier = std::mem::take(&mut self.earlier_experiments);
        let current = self.experiment.as_mut().filter(|e| !e.finished);
        for e in earlier.into_iter().chain(current.as_deref().cloned()) {
            for problem in collector::finish_experiment(&e.path, how, e.archive) {
                eprintln!("rdbx: warning: {problem}");
            }
        }
        if let Some(e) = current {
            e.finished = true;
            if e.state != ExperimentState::Failed {
                e.state = ExperimentState::Closed;
            }
        }
    }

    /// Kills the process (kill, rerun, quit) and closes its experiment.
    /// A process we attached to is detached instead (see `detach`).
    pub(super) fn kill_process(&mut self) {
        if self.dbg.is_running() {
            if self.dbg.process().ok().is_some_and(|p| !p.started_here()) {
                self.collection_detached();
            }
            self.dbg.kill();
            if !self.dbg.is_running() && self.experiment_is_open() {
                self.collection_ended(Termination::Signal(libc::SIGKILL));
            }
        }
    }

    fn experiment_is_open(&self) -> bool {
        self.experiment.as_ref().is_some_and(|e| !e.finished)
            || !self.earlier_experiments.is_empty()
    }

    /// Before a detach: the experiments of this process stay with it. An
    /// active one goes on collecting and the collector writes `end` when
    /// the process exits; nobody will be there to see the exit, so the
    /// archive (of the objects loaded so far) is written now and no
    /// `terminated` line ever is.
    pub(super) fn collection_detached(&mut self) {
        let earlier = std::mem::take(&mut self.earlier_experiments);
        let current = self.experiment.as_mut().filter(|e| !e.finished);
        for e in earlier.iter().chain(current.as_deref()) {
            if e.archive != ArchiveMode::Off {
                let copy = e.archive == ArchiveMode::Copy;
                match experiment::archive::write_archive(&e.path, copy) {
                    Ok(summary) => {
                        for w in summary.warnings {
                            eprintln!("rdbx: warning: archive: {w}");
                        }
                    }
                    Err(problem) => eprintln!("rdbx: warning: archive: {problem}"),
                }
            }
        }
        if let Some(e) = current {
            e.finished = true;
            if matches!(e.state, ExperimentState::Active | ExperimentState::Paused) {
                e.state = ExperimentState::Detached;
                println!(
                    "collection goes on in the process; {} is closed when it exits",
                    e.path.display()
                );
            }
        }
    }

    fn set_experiment_state(&mut self, state: ExperimentState) {
        if let Some(e) = self.experiment.as_mut() {
            e.state = state;
        }
    }

    /// Calls a `__rdbx_collector_*` function in the current thread; its
    /// int result.
    fn collector_call(&mut self, function: &str, args: &[CallArg]) -> Result<i32> {
        let address = self.dbg.function_address(function).ok_or_else(|| {
            anyhow!("{function} is not in the process (was libcollector.so preloaded?)")
        })?;
        let tid = self.dbg.current_thread();
        let value = self.dbg.call_function_with(tid, address, args)?;
        // The functions return a C int.
        Ok(value as u32 as i32)
    }

    /// If the process ended during a call, report it as the stop it is.
    fn after_collector_call(&mut self) {
        if self.dbg.is_running() && self.dbg.process_has_ended() {
            if let Err(e) = self.resume(|dbg, conditions| dbg.cont(conditions)) {
                eprintln!("rdbx: {e:#}");
            }
        }
    }
}

fn check_status(function: &str, status: i32) -> Result<()> {
    if status != 0 {
        bail!("{function} returned {status}");
    }
    Ok(())
}
