//! The debugger engine: one debugged program, its process, breakpoints and
//! signal policy. The state machine that turns ptrace events into the
//! stops a user sees is in `machine`; this module holds the program's
//! state and the operations on it that do not run the program.
//!
//! Threads are all-stop: when one thread stops for the user, every other
//! thread is stopped too, and all are resumed together.

use crate::breakpoints::{Action, Breakpoint, Breakpoints, LocationSpec, Owner};
use crate::disasm::{Disassembler, Instruction};
use crate::inferior::{Inferior, LaunchSpec};
use crate::objects::LoadedObjects;
use crate::ptrace::Tid;
use crate::pump::{Event, Pump};
use crate::signals::{Disposition, SignalTable};
use crate::value::Value;
use crate::{Error, Result};
use std::collections::VecDeque;
use std::path::{Path, PathBuf};

/// Something that happened and should be told, without stopping.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    NewThread { number: u32, tid: Tid },
    ThreadExited { number: u32, tid: Tid },
    ForkDetached { child: i32 },
    Exec { pid: i32, path: PathBuf },
    BreakpointResolved { id: u32, addresses: Vec<u64> },
    Warning(String),
}

#[derive(Debug, Clone, PartialEq)]
pub enum StopReason {
    /// User breakpoints whose conditions held and counts were reached.
    Breakpoint {
        ids: Vec<u32>,
    },
    /// A step, next, stepi or nexti finished.
    Step,
    /// `step up` / `finish` returned from `function`.
    Finished {
        function: String,
        value: Option<Value>,
    },
    Signal {
        signal: i32,
    },
    /// Stopped by job control (`kill -STOP`, Ctrl-Z): every thread is in
    /// a group-stop. `cont` sets it running again.
    JobControl {
        signal: i32,
    },
    /// Ctrl-C (or an attach): every thread stopped where it was.
    Interrupted,
    Exited {
        code: i32,
    },
    Killed {
        signal: i32,
    },
    /// The executable's entry point was reached (asked for with
    /// [`Debugger::stop_at_entry`]); no user breakpoint is there.
    EntryPoint,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Stop {
    pub tid: Tid,
    pub reason: StopReason,
}

impl Stop {
    pub fn process_ended(&self) -> bool {
        matches!(
            self.reason,
            StopReason::Exited { .. } | StopReason::Killed { .. }
        )
    }
}

/// A pending `next`/`finish` target: stop when `tid` reaches `address`
/// with its stack pointer at or above `min_sp` (deeper recursive
/// activations reach the same address with a lower stack pointer).
#[derive(Debug, Clone, Copy)]
pub(crate) struct StepResume {
    pub tid: Tid,
    pub address: u64,
    pub min_sp: u64,
}

/// Checks a breakpoint condition in the context of the stopped thread.
/// The engine cannot evaluate expressions over frames by itself without
/// the stack layer, so the evaluator is passed in.
pub type ConditionEvaluator<'a> = &'a dyn Fn(&Debugger, &str) -> Result<bool>;

/// Where notices go as they happen (a thread starting while the program
/// runs is told at once, not at the next stop).
pub type NoticeSink = Box<dyn FnMut(&Notice)>;

pub struct Debugger {
    pub(crate) program: Option<PathBuf>,
    pub(crate) objects: LoadedObjects,
    pub(crate) breakpoints: Breakpoints,
    signals: SignalTable,
    pub(crate) process: Option<Inferior>,
    pub(crate) current_tid: Tid,
    /// The frame `up`/`down`/`frame` selected (0 = innermost).
    pub(crate) selected_frame: usize,
    notices: VecDeque<Notice>,
    notice_sink: Option<NoticeSink>,
    last_launch: Option<LaunchSpec>,
    /// How long an injected call may run before it is abandoned (call.rs).
    pub(crate) call_timeout: std::time::Duration,
    pub(crate) disassembler: Disassembler,
    pub(crate) pump: Pump,
    pub(crate) step_resume: Option<StepResume>,
    /// Events seen while stopping, stepping or calling, handled at the
    /// next resume (a signal for a thread, the process's end).
    pub(crate) deferred: VecDeque<Event>,
    /// A vfork child shares our memory: breakpoints are out until it execs or exits.
    pub(crate) vfork_in_progress: bool,
    /// Conditions that failed to evaluate at the last stop, with why.
    pub(crate) condition_failures: Vec<(u32, String)>,
    /// Forked children whose first stop came before the fork event.
    pub(crate) early_children: Vec<i32>,
    /// The entry-point stop asked for by `stop_at_entry` has happened and
    /// nobody has taken note of it yet.
    pub(crate) entry_reached: bool,
    /// A Ctrl-C was reported as SIGINT while the terminal's copy of it was
    /// still queued in the program: its delivery is not a new stop.
    pub(crate) sigint_reported: bool,
    /// The program was reported stopped by job control: `cont` sends it
    /// SIGCONT as it resumes it.
    pub(crate) job_stopped: bool,
    /// Inlined calls starting where a thread stopped, shown as not
    /// entered yet (see inline_stop.rs).
    pub(crate) inline_skips: crate::inline_stop::InlineSkips,
    /// Frames below `main` are shown (`stack_past_main`): `main` then has
    /// a caller, whose call site may give its entry values.
    pub(crate) stack_past_main: bool,
    /// How long every thread has been stopped, for the collector (hold.rs).
    pub(crate) hold: crate::hold::Hold,
    /// The current thread's whole stack while it stays where it is.
    pub(crate) stack_cache: std::cell::RefCell<Option<crate::stack::CachedStack>>,
    /// Functions (by entry) found to reach, or not, themselves by tail
    /// calls, while the stop lasts.
    pub(crate) tail_call_loops: std::cell::RefCell<std::collections::HashMap<u64, bool>>,
}

impl Debugger {
    pub fn new() -> Result<Debugger> {
        Ok(Debugger {
            program: None,
            objects: LoadedObjects::default(),
            breakpoints: Breakpoints::default(),
            signals: SignalTable::default(),
            process: None,
            current_tid: 0,
            selected_frame: 0,
            notices: VecDeque::new(),
            notice_sink: None,
            last_launch: None,
            call_timeout: crate::call::DEFAULT_CALL_TIMEOUT,
            stack_past_main: false,
            stack_cache: std::cell::RefCell::new(None),
            tail_call_loops: Default::default(),
            disassembler: Disassembler::new()?,
            pump: Pump::new()?,
            step_resume: None,
            deferred: VecDeque::new(),
            vfork_in_progress: false,
            condition_failures: Vec::new(),
            early_children: Vec::new(),
            entry_reached: false,
            sigint_reported: false,
            job_stopped: false,
            inline_skips: Default::default(),
            hold: Default::default(),
        })
    }

    /// Loads a program's symbols without starting it.
    pub fn load(&mut self, program: &Path) -> Result<()> {
        let program = std::fs::canonicalize(program).map_err(|source| Error::Io {
            path: program.to_path_buf(),
            source,
        })?;
        self.objects.set_static(&program)?;
        check_executable(&program)?;
        self.program = Some(program);
        Ok(())
    }

    // ----- what the session reads ---------------------------------------

    /// The program being debugged (its executable).
    pub fn program(&self) -> Option<&Path> {
        self.program.as_deref()
    }

    pub fn objects(&self) -> &LoadedObjects {
        &self.objects
    }

    pub fn breakpoints(&self) -> &Breakpoints {
        &self.breakpoints
    }

    pub fn breakpoint(&self, id: u32) -> Option<&Breakpoint> {
        self.breakpoints.user.get(&id)
    }

    pub fn signals(&self) -> &SignalTable {
        &self.signals
    }

    /// Sets what a signal does (dbx `catch`/`ignore`, gdb `handle`).
    pub fn set_signal_disposition(&mut self, signal: i32, disposition: Disposition) {
        self.signals.set(signal, disposition);
        crate::rescue::note_not_passed(self.signals.not_passed_mask());
    }

    /// The thread commands act on (the one that stopped, or `thread N`'s).
    pub fn current_thread(&self) -> Tid {
        self.current_tid
    }

    /// Makes `tid` the current thread (its innermost frame selected).
    pub fn select_thread(&mut self, tid: Tid) -> Result<()> {
        if !self.process()?.has_thread(tid) {
            return Err(Error::Other(format!("no thread with lwp {tid}")));
        }
        self.current_tid = tid;
        self.selected_frame = 0;
        Ok(())
    }

    /// The frame `up`/`down`/`frame` selected (0 is the innermost).
    pub fn selected_frame_number(&self) -> usize {
        self.selected_frame
    }

    /// Whether frames below `main` count as its callers (gdb's
    /// `backtrace past-main`).
    pub fn set_stack_past_main(&mut self, past_main: bool) {
        self.stack_past_main = past_main;
    }

    pub fn select_frame(&mut self, number: usize) {
        self.selected_frame = number;
    }

    pub fn last_launch(&self) -> Option<&LaunchSpec> {
        self.last_launch.as_ref()
    }

    pub fn call_timeout(&self) -> std::time::Duration {
        self.call_timeout
    }

    pub fn set_call_timeout(&mut self, timeout: std::time::Duration) {
        self.call_timeout = timeout;
    }

    /// The signal the current thread gets when resumed: `Some(0)` cancels
    /// the one it was stopped by, `Some(n)` sends signal n instead (dbx
    /// `cont -sig`, gdb `signal N`).
    pub fn set_resume_signal(&mut self, signal: i32) -> Result<()> {
        let tid = self.current_tid;
        let process = self.process_mut()?;
        let info = process
            .pending(tid)
            .filter(|p| p.signal == signal)
            .and_then(|p| p.info);
        process.set_pending(tid, signal, info);
        Ok(())
    }

    // ----- notices ------------------------------------------------------

    /// Where notices go from now on (as they happen), instead of the queue
    /// `take_notices` empties.
    pub fn set_notice_sink(&mut self, sink: NoticeSink) {
        self.notice_sink = Some(sink);
    }

    pub(crate) fn notify(&mut self, notice: Notice) {
        match &mut self.notice_sink {
            Some(sink) => sink(&notice),
            None => self.notices.push_back(notice),
        }
    }

    /// Notices not told yet (without a sink).
    pub fn take_notices(&mut self) -> Vec<Notice> {
        self.notices.drain(..).collect()
    }

    // ----- the process --------------------------------------------------

    pub fn is_running(&self) -> bool {
        self.process.is_some()
    }

    pub fn process(&self) -> Result<&Inferior> {
        self.process.as_ref().ok_or(Error::NoProcess)
    }

    pub(crate) fn process_mut(&mut self) -> Result<&mut Inferior> {
        self.process.as_mut().ok_or(Error::NoProcess)
    }

    /// Starts the program, stopped at its first instruction with every
    /// breakpoint that can be resolved inserted. Returns the process id.
    pub fn start(&mut self, mut spec: LaunchSpec) -> Result<i32> {
        if self.process.is_some() {
            self.kill();
        }
        let program = self.program.clone().ok_or_else(|| {
            Error::Other("no program loaded; give one on the command line".into())
        })?;
        spec.program = program;
        let inferior = Inferior::spawn(&spec)?;
        let pid = inferior.pid();
        crate::rescue::begin(pid, inferior.memory().raw_fd());
        crate::rescue::note_not_passed(self.signals.not_passed_mask());
        self.last_launch = Some(spec);
        self.process = Some(inferior);
        self.current_tid = pid;
        self.selected_frame = 0;
        self.sigint_reported = false;
        self.breakpoints.forget_sites();
        self.objects.refresh(pid)?;
        self.insert_loader_breakpoint();
        self.resolve_all_breakpoints();
        Ok(pid)
    }

    /// Kills the process we started (or detaches from one we attached to).
    pub fn kill(&mut self) {
        if self.process.as_ref().is_some_and(|p| !p.started_here()) {
            // Never kill a process we attached to: it goes on running. A
            // failed detach has already let go of every thread it could.
            let _ = self.detach();
            return;
        }
        self.kill_process();
        self.after_process_gone();
    }

    pub(crate) fn after_process_gone(&mut self) {
        crate::rescue::end();
        self.forget_hold();
        self.process = None;
        self.breakpoints.forget_sites();
        self.step_resume = None;
        self.deferred.clear();
        self.selected_frame = 0;
        self.entry_reached = false;
        self.vfork_in_progress = false;
        self.early_children.clear();
        self.sigint_reported = false;
        self.job_stopped = false;
        if let Some(program) = self.program.clone() {
            let _ = self.objects.set_static(&program);
        }
    }

    // ----- breakpoints -------------------------------------------------

    /// Creates a user breakpoint; it is pending when nothing resolves it yet.
    pub fn add_breakpoint(
        &mut self,
        location: LocationSpec,
        condition: Option<String>,
        count: Option<u64>,
        temporary: bool,
        action: Action,
    ) -> Result<u32> {
        // Validate what can be validated now: a line with no code, a bad address.
        let (addresses, resolved_line) = match self.resolve(&location) {
            Ok(found) => found,
            // A function may come with a library loaded later: pending.
            Err(Error::NoSuchFunction(_)) => (Vec::new(), None),
            Err(e) => return Err(e),
        };
        let id = self.breakpoints.next_id();
        self.breakpoints.user.insert(
            id,
            Breakpoint {
                id,
                location,
                condition,
                count,
                temporary,
                enabled: true,
                action,
                hits: 0,
                addresses: Vec::new(),
                resolved_line,
                ever_resolved: !addresses.is_empty(),
            },
        );
        if !addresses.is_empty() {
            self.install(id, addresses);
        }
        Ok(id)
    }

    /// Where a location spec resolves in the loaded objects (runtime
    /// addresses), and the line used if the requested one had no code.
    pub fn resolve(&self, location: &LocationSpec) -> Result<(Vec<u64>, Option<u32>)> {
        match location {
            LocationSpec::Address(address) => Ok((vec![*address], None)),
            LocationSpec::Function(name) => {
                let mut addresses = Vec::new();
                for object in &self.objects.list {
                    for function in object.file.find_functions(name) {
                        addresses.push(object.runtime_address(function.breakpoint_address));
                    }
                    if !addresses.is_empty() {
                        // The first object that defines it wins, as the
                        // dynamic linker's search order does.
                        break;
                    }
                }
                if addresses.is_empty() {
                    return Err(Error::NoSuchFunction(name.clone()));
                }
                addresses.sort_unstable();
                addresses.dedup();
                Ok((addresses, None))
            }
            LocationSpec::Line { file, line } => {
                let file = match file {
                    Some(file) => file.clone(),
                    None => self.default_source_file().ok_or_else(|| {
                        Error::Other("no default source file; say FILE:LINE".into())
                    })?,
                };
                let mut last_error = Error::NoSuchFile(file.clone());
                for object in &self.objects.list {
                    match object.file.lines_for(&file, *line) {
                        Ok(found) => {
                            let addresses = found
                                .addresses
                                .iter()
                                .map(|&a| object.runtime_address(a))
                                .collect();
                            let moved = (found.line != *line).then_some(found.line);
                            return Ok((addresses, moved));
                        }
                        Err(Error::NoSuchFile(_)) => {}
                        Err(e) => last_error = e,
                    }
                }
                Err(last_error)
            }
        }
    }

    /// The file `stop at LINE` means: the current one, else main's.
    pub fn default_source_file(&self) -> Option<String> {
        if let Some(process) = &self.process {
            if let Ok(pc) = process.pc(self.current_tid) {
                if let Some(loc) = self.objects.symbolize(pc).location {
                    return Some(loc.file.to_string_lossy().into_owned());
                }
            }
        }
        let main = self.objects.main()?;
        let function = main.file.find_functions("main").into_iter().next()?;
        function
            .location
            .map(|l| l.file.to_string_lossy().into_owned())
    }

    fn install(&mut self, id: u32, addresses: Vec<u64>) {
        let mut failures = Vec::new();
        if let Some(process) = &self.process {
            let mut installed = Vec::new();
            for &address in &addresses {
                match self
                    .breakpoints
                    .insert_site(process.memory(), address, Owner::User(id))
                {
                    Ok(()) => installed.push(address),
                    Err(e) => failures.push(format!(
                        "breakpoint ({id}) at 0x{address:x} could not be inserted: {e}"
                    )),
                }
            }
            if let Some(bp) = self.breakpoints.user.get_mut(&id) {
                bp.addresses = installed;
            }
        } else if let Some(bp) = self.breakpoints.user.get_mut(&id) {
            // Not running: remember where it will go (file addresses).
            bp.addresses = addresses;
        }
        for failure in failures {
            self.notify(Notice::Warning(failure));
        }
    }

    /// Resolves and inserts every user breakpoint (after start, exec or a
    /// library load). Pending ones that resolve for the first time are
    /// announced.
    pub(crate) fn resolve_all_breakpoints(&mut self) {
        let ids: Vec<u32> = self.breakpoints.user.keys().copied().collect();
        for id in ids {
            let Some(bp) = self.breakpoints.user.get(&id) else {
                continue;
            };
            let was_pending = !bp.ever_resolved;
            if self.process.is_some() && !bp.addresses.is_empty() {
                let inserted_everywhere = bp.addresses.iter().all(|&a| self.breakpoints.is_site(a));
                if inserted_everywhere {
                    continue;
                }
            }
            let location = bp.location.clone();
            if let Ok((addresses, line)) = self.resolve(&location) {
                if let Some(bp) = self.breakpoints.user.get_mut(&id) {
                    bp.resolved_line = line.or(bp.resolved_line);
                    bp.ever_resolved = true;
                }
                self.install(id, addresses);
                if was_pending {
                    let addresses = self.breakpoints.user[&id].addresses.clone();
                    self.notify(Notice::BreakpointResolved { id, addresses });
                }
            }
        }
    }

    fn user_breakpoint_mut(&mut self, id: u32) -> Result<&mut Breakpoint> {
        self.breakpoints
            .user
            .get_mut(&id)
            .ok_or_else(|| Error::Other(format!("no breakpoint ({id})")))
    }

    /// dbx `-if` / gdb `condition`: stop only when `condition` holds (None
    /// removes it).
    pub fn set_breakpoint_condition(&mut self, id: u32, condition: Option<String>) -> Result<()> {
        self.user_breakpoint_mut(id)?.condition = condition;
        Ok(())
    }

    pub fn set_breakpoint_enabled(&mut self, id: u32, enabled: bool) -> Result<()> {
        self.user_breakpoint_mut(id)?.enabled = enabled;
        Ok(())
    }

    /// Stops at breakpoint `id` only after `count` more hits go by (gdb's
    /// `ignore`, `cont N`).
    pub fn ignore_breakpoint_hits(&mut self, id: u32, count: u64) -> Result<()> {
        let bp = self.user_breakpoint_mut(id)?;
        bp.count = Some(bp.hits + count + 1);
        Ok(())
    }

    pub fn delete_breakpoint(&mut self, id: u32) -> Result<()> {
        let bp = self
            .breakpoints
            .user
            .remove(&id)
            .ok_or_else(|| Error::Other(format!("no breakpoint ({id})")))?;
        let memory = self.process.as_ref().map(|p| p.memory());
        for address in bp.addresses {
            self.breakpoints
                .remove_owner(memory, address, Owner::User(id));
        }
        Ok(())
    }

    pub(crate) fn insert_loader_breakpoint(&mut self) {
        let Some(process) = &self.process else {
            return;
        };
        let found = self.objects.list.iter().find_map(|object| {
            let name = object.short_name();
            if !name.starts_with("ld-linux")
                && !name.starts_with("ld.so")
                && !name.starts_with("ld-")
            {
                return None;
            }
            let symbol = object
                .file
                .lookup_symbol("_dl_debug_state")
                .into_iter()
                .next()?;
            Some(object.runtime_address(symbol.address))
        });
        if let Some(address) = found {
            let _ = self
                .breakpoints
                .insert_site(process.memory(), address, Owner::LoaderEvent);
        }
    }

    /// Stops once at the executable's entry point (call right after
    /// `start`): every preloaded library is loaded and initialized there,
    /// and the program's own code has not run. The stop comes back as
    /// `StopReason::EntryPoint`, or, if a user breakpoint is at the entry
    /// too, as that breakpoint; either way `take_entry_reached` says so.
    pub fn stop_at_entry(&mut self) -> Result<()> {
        let entry = self.entry_point()?;
        let process = self.process.as_ref().ok_or(Error::NoProcess)?;
        self.breakpoints
            .insert_site(process.memory(), entry, Owner::EntryPoint)?;
        self.entry_reached = false;
        Ok(())
    }

    /// True once after the entry-point stop asked for by `stop_at_entry`.
    pub fn take_entry_reached(&mut self) -> bool {
        std::mem::take(&mut self.entry_reached)
    }

    // ----- helpers for the other engine modules -------------------------

    /// The runtime address of the executable's entry point.
    pub(crate) fn entry_point(&self) -> Result<u64> {
        let pid = self.process()?.pid();
        let program = std::fs::read_link(format!("/proc/{pid}/exe")).ok();
        let main = self
            .objects
            .list
            .iter()
            .find(|o| Some(&o.path) == program.as_ref())
            .or(self.objects.main())
            .ok_or_else(|| Error::Other("the executable is not mapped".into()))?;
        Ok(main.runtime_address(main.file.entry()))
    }

    /// Keeps an event for the next resume to handle.
    pub(crate) fn defer(&mut self, event: Event) {
        self.deferred.push_back(event);
    }

    /// The process has ended and the next resume will report it (after an
    /// injected call during which it exited, for instance).
    pub fn process_has_ended(&self) -> bool {
        let Some(pid) = self.process.as_ref().map(|p| p.pid()) else {
            return false;
        };
        self.deferred.iter().any(|e| e.is_end() && e.tid() == pid)
    }

    /// Decodes the program's instruction at `address` (our int3s hidden).
    pub fn instruction_at(&self, address: u64) -> Option<Instruction> {
        let process = self.process.as_ref()?;
        let mut code = [0u8; 16];
        let n = self
            .breakpoints
            .read_code(process.memory(), address, &mut code);
        self.disassembler.decode_one(&code[..n], address)
    }

    /// Reads memory as the program sees it (our int3s hidden).
    /// Writes the program's memory (`assign`, `set var`). Bytes under one of
    /// our breakpoints are refused: the int3 would be lost, or the saved
    /// instruction would no longer be the program's.
    pub fn write_memory(&self, address: u64, bytes: &[u8]) -> Result<()> {
        self.forget_stack();
        if let Some(site) = self.breakpoints.site_overlapping(address, bytes.len()) {
            return Err(Error::Other(format!(
                "cannot write {} byte(s) at 0x{address:x}: a breakpoint is at 0x{site:x} \
                 (delete it first)",
                bytes.len()
            )));
        }
        self.process()?.memory().write(address, bytes)
    }

    pub fn read_memory(&self, address: u64, buf: &mut [u8]) -> Result<()> {
        let process = self.process()?;
        process.memory().read(address, buf)?;
        self.breakpoints.unpatch(address, buf);
        Ok(())
    }

    pub fn disassembler(&self) -> &Disassembler {
        &self.disassembler
    }
}

/// Checks that `path` is an executable we can debug (ObjectFile::open has
/// already checked it is x86-64 ELF).
fn check_executable(path: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let metadata = std::fs::metadata(path).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })?;
    if metadata.is_dir() || metadata.permissions().mode() & 0o111 == 0 {
        return Err(Error::Other(format!("{}: not executable", path.display())));
    }
    Ok(())
}
