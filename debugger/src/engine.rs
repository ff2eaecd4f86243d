//! The debugger engine: one debugged program, its process, breakpoints and
//! signal policy. It turns ptrace events into the stops a user sees; every
//! other event (library loads, new threads, forks, breakpoint conditions
//! that are false) is handled here and the program resumed.
//!
//! Threads are all-stop: when one thread stops for the user, every other
//! thread is stopped too, and all are resumed together.

use crate::breakpoints::{Action, Breakpoint, Breakpoints, LocationSpec, Owner};
use crate::disasm::{Disassembler, Instruction};
use crate::inferior::{Inferior, LaunchSpec, StopCause, ThreadState};
use crate::objects::LoadedObjects;
use crate::ptrace::{self, Tid, WaitEvent};
use crate::relocate::Displacement;
use crate::signals::SignalTable;
use crate::value::Value;
use crate::{Error, Result};
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

/// Set by the binary's SIGINT handler: the user pressed Ctrl-C.
pub static INTERRUPT: AtomicBool = AtomicBool::new(false);

/// Something that happened and should be told, without stopping.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    NewThread { number: u32, tid: Tid },
    ThreadExited { number: u32, tid: Tid },
    ForkDetached { child: i32 },
    Exec { path: PathBuf },
    BreakpointResolved { id: u32 },
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

/// What a SIGTRAP turned out to be.
enum Trap {
    /// One of ours, handled; the thread was resumed.
    Handled,
    /// One of ours, and the user must see it.
    Stop(Stop),
    /// Not ours: the program's own trap, handled as a signal.
    NotOurs,
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

pub struct Debugger {
    pub program: Option<PathBuf>,
    pub objects: LoadedObjects,
    pub breakpoints: Breakpoints,
    pub signals: SignalTable,
    pub process: Option<Inferior>,
    pub current_tid: Tid,
    /// The frame `up`/`down`/`frame` selected (0 = innermost).
    pub selected_frame: usize,
    pub notices: VecDeque<Notice>,
    pub last_launch: Option<LaunchSpec>,
    /// How long an injected call may run before it is abandoned (call.rs).
    pub call_timeout: std::time::Duration,
    pub(crate) disassembler: Disassembler,
    pub(crate) step_resume: Option<StepResume>,
    pub(crate) deferred: VecDeque<WaitEvent>,
    /// A vfork child shares our memory: breakpoints are out until it execs or exits.
    pub(crate) vfork_in_progress: bool,
    /// Conditions that failed to evaluate at the last stop, with why.
    condition_failures: Vec<(u32, String)>,
    /// Forked children whose first stop came before the fork event.
    pub(crate) early_children: Vec<i32>,
    /// The entry-point stop asked for by `stop_at_entry` has happened and
    /// nobody has taken note of it yet.
    pub(crate) entry_reached: bool,
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
            last_launch: None,
            call_timeout: crate::call::DEFAULT_CALL_TIMEOUT,
            disassembler: Disassembler::new()?,
            step_resume: None,
            deferred: VecDeque::new(),
            vfork_in_progress: false,
            condition_failures: Vec::new(),
            early_children: Vec::new(),
            entry_reached: false,
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

    pub fn is_running(&self) -> bool {
        self.process.is_some()
    }

    pub fn process(&self) -> Result<&Inferior> {
        self.process.as_ref().ok_or(Error::NoProcess)
    }

    pub fn process_mut(&mut self) -> Result<&mut Inferior> {
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
        let pid = inferior.pid;
        self.last_launch = Some(spec);
        self.process = Some(inferior);
        self.current_tid = pid;
        self.selected_frame = 0;
        self.breakpoints.forget_sites();
        self.objects.refresh(pid)?;
        self.insert_loader_breakpoint();
        self.resolve_all_breakpoints();
        Ok(pid)
    }

    /// Kills the process we started (or detaches from one we attached to).
    pub fn kill(&mut self) {
        if self.process.as_ref().is_some_and(|p| !p.started_here) {
            // Never kill a process we attached to: it goes on running. A
            // failed detach has already let go of every thread it could.
            let _ = self.detach();
            return;
        }
        if let Some(mut process) = self.process.take() {
            process.kill();
        }
        self.after_process_gone();
    }

    pub(crate) fn after_process_gone(&mut self) {
        self.process = None;
        self.breakpoints.forget_sites();
        self.step_resume = None;
        self.deferred.clear();
        self.selected_frame = 0;
        self.entry_reached = false;
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
        if let Some(process) = &self.process {
            let mut installed = Vec::new();
            for &address in &addresses {
                match self
                    .breakpoints
                    .insert_site(&process.memory, address, Owner::User(id))
                {
                    Ok(()) => installed.push(address),
                    Err(e) => self.notices.push_back(Notice::Warning(format!(
                        "breakpoint ({id}) at 0x{address:x} could not be inserted: {e}"
                    ))),
                }
            }
            if let Some(bp) = self.breakpoints.user.get_mut(&id) {
                bp.addresses = installed;
            }
        } else if let Some(bp) = self.breakpoints.user.get_mut(&id) {
            // Not running: remember where it will go (file addresses).
            bp.addresses = addresses;
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
                let inserted_everywhere = bp
                    .addresses
                    .iter()
                    .all(|a| self.breakpoints.sites.contains_key(a));
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
                    self.notices.push_back(Notice::BreakpointResolved { id });
                }
            }
        }
    }

    pub fn delete_breakpoint(&mut self, id: u32) -> Result<()> {
        let bp = self
            .breakpoints
            .user
            .remove(&id)
            .ok_or_else(|| Error::Other(format!("no breakpoint ({id})")))?;
        let memory = self.process.as_ref().map(|p| &p.memory);
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
                .insert_site(&process.memory, address, Owner::LoaderEvent);
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
            .insert_site(&process.memory, entry, Owner::EntryPoint)?;
        self.entry_reached = false;
        Ok(())
    }

    /// True once after the entry-point stop asked for by `stop_at_entry`.
    pub fn take_entry_reached(&mut self) -> bool {
        std::mem::take(&mut self.entry_reached)
    }

    // ----- running -----------------------------------------------------

    /// Resumes every thread and runs until something the user must see.
    pub fn cont(&mut self, conditions: ConditionEvaluator) -> Result<Stop> {
        self.process()?;
        self.selected_frame = 0;
        self.run_until_stop(conditions)
    }

    pub(crate) fn run_until_stop(&mut self, conditions: ConditionEvaluator) -> Result<Stop> {
        while let Some(event) = self.deferred.pop_front() {
            if let Some(stop) = self.handle_event(event, conditions)? {
                return self.finish_stop(stop);
            }
        }
        self.resume_all()?;
        loop {
            // Events seen while one thread was single-stepped come first.
            if let Some(event) = self.deferred.pop_front() {
                if let Some(stop) = self.handle_event(event, conditions)? {
                    return self.finish_stop(stop);
                }
                continue;
            }
            let event = match ptrace::wait(-1, false)? {
                Some(event) => event,
                None => {
                    if let Some(stop) = self.check_interrupt()? {
                        return self.finish_stop(stop);
                    }
                    continue;
                }
            };
            if let Some(stop) = self.handle_event(event, conditions)? {
                return self.finish_stop(stop);
            }
        }
    }

    /// Ctrl-C while the program runs: the terminal sent SIGINT to the
    /// program too, and its stop normally arrives at once. If it does not
    /// (the program is not on our terminal), stop it ourselves.
    fn check_interrupt(&mut self) -> Result<Option<Stop>> {
        if !INTERRUPT.swap(false, Ordering::SeqCst) {
            return Ok(None);
        }
        for _ in 0..20 {
            std::thread::sleep(std::time::Duration::from_millis(5));
            if let Some(event) = ptrace::wait(-1, true)? {
                self.deferred.push_back(event);
                return Ok(None);
            }
        }
        Ok(Some(Stop {
            tid: self.current_tid,
            reason: StopReason::Interrupted,
        }))
    }

    /// After a user stop: stop every other thread and select the stopped one.
    fn finish_stop(&mut self, stop: Stop) -> Result<Stop> {
        if stop.process_ended() {
            return Ok(stop);
        }
        self.stop_all()?;
        if let Some(process) = &self.process {
            if process.threads.contains_key(&stop.tid) {
                self.current_tid = stop.tid;
            }
        }
        Ok(stop)
    }

    /// Resumes every stopped thread, each over the breakpoint it stands on.
    fn resume_all(&mut self) -> Result<()> {
        let tids: Vec<Tid> = match &self.process {
            Some(p) => p
                .threads
                .values()
                .filter(|t| t.state == ThreadState::Stopped)
                .map(|t| t.tid)
                .collect(),
            None => return Err(Error::NoProcess),
        };
        // Prepare every out-of-line slot first: that may run an injected
        // system call, which must happen while no thread runs.
        for &tid in &tids {
            let pc = self.process()?.pc(tid)?;
            let will_pass = tid == self.current_tid
                || self.process()?.thread(tid).and_then(|t| t.pass_at) == Some(pc);
            if will_pass && self.breakpoints.sites.contains_key(&pc) {
                self.displacement_for(tid, pc)?;
            }
        }
        // A thread with an event not handled yet stays stopped until it is.
        let waiting: Vec<Tid> = self.deferred.iter().map(|e| e.tid()).collect();
        for tid in tids {
            if !waiting.contains(&tid) {
                self.resume_thread(tid)?;
            }
        }
        Ok(())
    }

    /// Resumes one thread. If it stands at one of our breakpoint sites it
    /// gets past it by executing the displaced instruction out of line.
    pub(crate) fn resume_thread(&mut self, tid: Tid) -> Result<()> {
        let stopped = self
            .process()?
            .thread(tid)
            .is_some_and(|t| t.state == ThreadState::Stopped);
        if !stopped {
            return Ok(());
        }
        let mut regs = self.process()?.regs(tid)?;
        if ptrace::trace_enabled() {
            eprintln!("[rdbx trace] resume {tid} at 0x{:x}", regs.rip);
        }
        let trapped_here = self
            .process_mut()?
            .thread_mut(tid)
            .and_then(|t| t.pass_at.take())
            == Some(regs.rip);
        let pass = trapped_here || tid == self.current_tid;
        if pass && self.breakpoints.sites.contains_key(&regs.rip) && !self.vfork_in_progress {
            match self.displacement_for(tid, regs.rip)? {
                Displacement::OutOfLine { .. } => {
                    let slot = self.breakpoints.sites[&regs.rip].slot.unwrap_or(regs.rip);
                    regs.rip = slot;
                    self.process()?.set_regs(tid, &regs)?;
                }
                Displacement::EmulateCall {
                    target,
                    return_address,
                } => {
                    let sp = regs.rsp - 8;
                    self.process()?
                        .memory
                        .write(sp, &return_address.to_le_bytes())?;
                    regs.rsp = sp;
                    regs.rip = target;
                    self.process()?.set_regs(tid, &regs)?;
                }
                Displacement::EmulateJump { target } => {
                    regs.rip = target;
                    self.process()?.set_regs(tid, &regs)?;
                }
                // Whatever else happens during the step is deferred and
                // handled through the normal path.
                Displacement::SingleStep => self.step_over_site(tid)?,
            }
        }
        self.process_mut()?.resume_thread(tid)
    }

    /// How to get past the site at `address`, allocating scratch memory
    /// near it in the target the first time.
    fn displacement_for(&mut self, tid: Tid, address: u64) -> Result<Displacement> {
        if let Some(d) = self.breakpoints.sites[&address].displacement.clone() {
            return Ok(d);
        }
        if !self.breakpoints.has_scratch_near(address) {
            match self.allocate_scratch(tid, address) {
                Ok(base) => self.breakpoints.add_scratch_page(base),
                Err(e) => {
                    if ptrace::trace_enabled() {
                        eprintln!("[rdbx trace] no scratch page near 0x{address:x}: {e}");
                    }
                }
            }
        }
        let mut code = [0u8; 16];
        let n = self
            .breakpoints
            .read_code(&self.process()?.memory, address, &mut code);
        let len = self
            .disassembler
            .decode_one(&code[..n], address)
            .map(|i| i.bytes.len())
            .unwrap_or(0);
        if len == 0 {
            return Ok(Displacement::SingleStep);
        }
        let process = self.process.as_ref().ok_or(Error::NoProcess)?;
        let displacement = self
            .breakpoints
            .prepare_displacement(&process.memory, address, len)?;
        if ptrace::trace_enabled() {
            eprintln!("[rdbx trace] displacement at 0x{address:x}: {displacement:?}");
        }
        Ok(displacement)
    }

    /// Maps a page for out-of-line slots near `near` by making the
    /// stopped thread `tid` execute an `mmap` system call.
    fn allocate_scratch(&mut self, tid: Tid, near: u64) -> Result<u64> {
        let hint = near.saturating_sub(0x10_0000) & !0xfff;
        let prot = (libc::PROT_READ | libc::PROT_EXEC) as u64;
        let flags = (libc::MAP_PRIVATE | libc::MAP_ANONYMOUS) as u64;
        let result = self.inject_syscall(
            tid,
            libc::SYS_mmap as u64,
            [
                hint,
                crate::breakpoints::SCRATCH_SIZE as u64,
                prot,
                flags,
                u64::MAX,
                0,
            ],
        )?;
        if (result as i64) < 0 && (result as i64) > -4096 {
            return Err(Error::Other(format!(
                "mmap in the target failed: {}",
                nix::errno::Errno::from_raw(-(result as i64) as i32)
            )));
        }
        Ok(result)
    }

    /// Runs one system call in the stopped thread `tid` and returns its
    /// result, leaving registers and memory as they were. The thread
    /// executes a `syscall` instruction written over the program's entry
    /// point, which no thread executes again once the program has started
    /// (writing at the thread's own pc could be seen by another thread).
    pub fn inject_syscall(&mut self, tid: Tid, number: u64, args: [u64; 6]) -> Result<u64> {
        let at = self.entry_point()?;
        let process = self.process.as_ref().ok_or(Error::NoProcess)?;
        let saved = process.regs(tid)?;
        let mut original = [0u8; 2];
        process.memory.read(at, &mut original)?;
        process.memory.write(at, &[0x0f, 0x05])?;
        let mut regs = saved;
        regs.rip = at;
        regs.rax = number;
        regs.rdi = args[0];
        regs.rsi = args[1];
        regs.rdx = args[2];
        regs.r10 = args[3];
        regs.r8 = args[4];
        regs.r9 = args[5];
        // No syscall restart for our call: the kernel must not rewind rip.
        regs.orig_rax = u64::MAX;
        let outcome = process.set_regs(tid, &regs).and_then(|()| {
            ptrace::single_step(tid, 0)?;
            self.wait_for_step(tid)
        });
        let process = self.process.as_ref().ok_or(Error::NoProcess)?;
        let result = process.regs(tid).map(|r| r.rax);
        process.memory.write(at, &original)?;
        process.set_regs(tid, &saved)?;
        outcome?;
        result
    }

    /// Waits for `tid`'s single-step to complete; other events are deferred.
    pub(crate) fn wait_for_step(&mut self, tid: Tid) -> Result<()> {
        let mut reraise = Vec::new();
        let outcome = self.wait_for_step_inner(tid, &mut reraise);
        if let Some(pid) = self.process.as_ref().map(|p| p.pid) {
            for signal in reraise {
                let _ = ptrace::tgkill(pid, tid, signal);
            }
        }
        outcome
    }

    fn wait_for_step_inner(&mut self, tid: Tid, reraise: &mut Vec<i32>) -> Result<()> {
        loop {
            let Some(event) = ptrace::wait(-1, false)? else {
                continue;
            };
            match event {
                WaitEvent::Signal { tid: t, signal } if t == tid => {
                    if let Some(p) = self.process.as_mut() {
                        if let Some(thread) = p.thread_mut(tid) {
                            thread.state = ThreadState::Stopped;
                            if signal == libc::SIGTRAP && is_perf_trap(tid) {
                                // The collector's clock ticked before the
                                // instruction ran: deliver it on resume.
                                thread.pending_signal = signal;
                                thread.pending_siginfo = ptrace::siginfo(tid).ok();
                                ptrace::single_step(tid, 0)?;
                                continue;
                            }
                            if signal != libc::SIGTRAP {
                                if signal == libc::SIGSTOP && thread.sigstop_expected {
                                    thread.sigstop_expected = false;
                                } else if self.signals.get(signal).stop {
                                    // The user must see it: raise it again
                                    // after our step so it stops the thread.
                                    reraise.push(signal);
                                } else if self.signals.get(signal).pass {
                                    // Delivered, with its siginfo, on resume.
                                    thread.pending_signal = signal;
                                    thread.pending_siginfo = ptrace::siginfo(tid).ok();
                                }
                                // The instruction did not run; step again.
                                ptrace::single_step(tid, 0)?;
                                continue;
                            }
                        }
                    }
                    return Ok(());
                }
                other => {
                    let gone = matches!(other, WaitEvent::Exited { tid: t, .. } | WaitEvent::Killed { tid: t, .. } if t == tid);
                    self.deferred.push_back(other);
                    if gone {
                        return Err(Error::Other("the thread exited during a step".into()));
                    }
                    if let WaitEvent::Event { tid: t, .. } = other {
                        if t == tid {
                            // A fork/clone/exec event mid-step: handled later;
                            // the step itself is over.
                            return Ok(());
                        }
                    }
                }
            }
        }
    }

    /// Executes the original instruction at a breakpoint site by
    /// single-stepping with the int3 removed (only this thread runs).
    pub(crate) fn step_over_site(&mut self, tid: Tid) -> Result<()> {
        let process = self.process.as_ref().ok_or(Error::NoProcess)?;
        let pc = process.pc(tid)?;
        let original = self.breakpoints.sites.get(&pc).map(|s| s.original[0]);
        if let Some(byte) = original {
            process.memory.write(pc, &[byte])?;
        }
        let signal = self.take_pending_signal(tid);
        let stepped = ptrace::single_step(tid, signal).and_then(|()| self.wait_for_step(tid));
        if original.is_some() && self.breakpoints.sites.contains_key(&pc) {
            if let Some(process) = &self.process {
                let _ = process.memory.write(pc, &[0xcc]);
            }
        }
        stepped
    }

    /// Stops every running thread and waits until each has stopped.
    /// Breakpoint traps that race with the stop are rewound so they are
    /// seen again; other events are deferred.
    pub(crate) fn stop_all(&mut self) -> Result<()> {
        let Some(process) = self.process.as_mut() else {
            return Ok(());
        };
        let pid = process.pid;
        for thread in process.threads.values_mut() {
            if thread.state == ThreadState::Running
                && !thread.sigstop_expected
                && ptrace::tgkill(pid, thread.tid, libc::SIGSTOP).is_ok()
            {
                thread.sigstop_expected = true;
            }
        }
        loop {
            let still_running = self
                .process
                .as_ref()
                .is_some_and(|p| p.threads.values().any(|t| t.state == ThreadState::Running));
            if !still_running {
                return Ok(());
            }
            let Some(event) = ptrace::wait(-1, false)? else {
                continue;
            };
            let tid = event.tid();
            let expected_stop = self
                .process
                .as_ref()
                .and_then(|p| p.thread(tid))
                .is_some_and(|t| t.sigstop_expected);
            match event {
                WaitEvent::Signal { signal, .. } if signal == libc::SIGSTOP && expected_stop => {
                    let process = self.process.as_mut().ok_or(Error::NoProcess)?;
                    let thread = process.thread_mut(tid).expect("checked");
                    thread.sigstop_expected = false;
                    thread.state = ThreadState::Stopped;
                    thread.cause = StopCause::Stopped;
                }
                WaitEvent::Signal { signal, .. }
                    if signal == libc::SIGTRAP && self.rewind_if_breakpoint(tid)? =>
                {
                    // Its hit will be taken again when it resumes; our
                    // SIGSTOP is still pending and is swallowed then.
                    if let Some(thread) = self.process.as_mut().and_then(|p| p.thread_mut(tid)) {
                        thread.state = ThreadState::Stopped;
                    }
                }
                _ => {
                    let process = self.process.as_mut().ok_or(Error::NoProcess)?;
                    if let Some(thread) = process.thread_mut(tid) {
                        thread.state = ThreadState::Stopped;
                    }
                    let process_gone = tid == process.pid
                        && matches!(event, WaitEvent::Exited { .. } | WaitEvent::Killed { .. });
                    if process_gone {
                        process.threads.clear();
                    }
                    self.deferred.push_back(event);
                }
            }
        }
    }

    /// If `tid` just trapped on one of our int3s, puts its pc back on the
    /// breakpoint and returns true.
    pub(crate) fn rewind_if_breakpoint(&mut self, tid: Tid) -> Result<bool> {
        let process = self.process.as_ref().ok_or(Error::NoProcess)?;
        let mut regs = process.regs(tid)?;
        let address = regs.rip.wrapping_sub(1);
        if !self.breakpoints.sites.contains_key(&address) {
            return Ok(false);
        }
        let info = ptrace::siginfo(tid)?;
        if info.si_code != libc::SI_KERNEL && info.si_code != 1 {
            return Ok(false);
        }
        regs.rip = address;
        process.set_regs(tid, &regs)?;
        Ok(true)
    }

    // ----- events ------------------------------------------------------

    /// Handles one wait event. Internal events resume the thread and
    /// return `None`; anything the user must see returns a `Stop`.
    pub(crate) fn handle_event(
        &mut self,
        event: WaitEvent,
        conditions: ConditionEvaluator,
    ) -> Result<Option<Stop>> {
        let pid = self.process()?.pid;
        match event {
            WaitEvent::Exited { tid, code } if tid == pid => {
                self.after_process_gone();
                Ok(Some(Stop {
                    tid,
                    reason: StopReason::Exited { code },
                }))
            }
            WaitEvent::Killed { tid, signal } if tid == pid => {
                self.after_process_gone();
                Ok(Some(Stop {
                    tid,
                    reason: StopReason::Killed { signal },
                }))
            }
            WaitEvent::Exited { tid, .. } | WaitEvent::Killed { tid, .. } => {
                if let Some(thread) = self.process_mut()?.threads.remove(&tid) {
                    self.notices.push_back(Notice::ThreadExited {
                        number: thread.number,
                        tid,
                    });
                }
                Ok(None)
            }
            WaitEvent::Event { tid, event } => self.handle_ptrace_event(tid, event),
            WaitEvent::Signal { tid, signal } => self.handle_signal(tid, signal, conditions),
        }
    }

    pub(crate) fn handle_ptrace_event(&mut self, tid: Tid, event: i32) -> Result<Option<Stop>> {
        match event {
            libc::PTRACE_EVENT_CLONE => {
                let new_tid = ptrace::event_message(tid)? as Tid;
                let process = self.process_mut()?;
                let known = process.threads.contains_key(&new_tid);
                let thread = process.add_thread(new_tid, ThreadState::Running);
                let number = thread.number;
                if !known {
                    // Its first stop (SIGSTOP) is still to come.
                    thread.sigstop_expected = true;
                }
                // (A thread whose first stop was seen already was resumed then.)
                self.notices.push_back(Notice::NewThread {
                    number,
                    tid: new_tid,
                });
                self.resume_after_event(tid)
            }
            libc::PTRACE_EVENT_FORK | libc::PTRACE_EVENT_VFORK => {
                let child = ptrace::event_message(tid)? as i32;
                self.release_child(child, event == libc::PTRACE_EVENT_VFORK)?;
                self.notices.push_back(Notice::ForkDetached { child });
                self.resume_after_event(tid)
            }
            libc::PTRACE_EVENT_VFORK_DONE => {
                // The child has exec'd or exited: our memory is ours again.
                self.vfork_in_progress = false;
                self.reinsert_sites();
                self.resume_after_event(tid)
            }
            libc::PTRACE_EVENT_EXEC => {
                let pid = self.process()?.pid;
                self.process_mut()?.reset_threads_after_exec();
                self.current_tid = pid;
                let path = std::fs::read_link(format!("/proc/{pid}/exe")).unwrap_or_default();
                self.notices.push_back(Notice::Exec { path: path.clone() });
                self.breakpoints.forget_sites();
                self.step_resume = None;
                self.program = Some(path.clone());
                self.objects.list.clear();
                self.objects.refresh(pid)?;
                self.insert_loader_breakpoint();
                self.resolve_all_breakpoints();
                self.resume_after_event(pid)
            }
            _ => self.resume_after_event(tid),
        }
    }

    /// A thread stopped at an event we handle ourselves goes on at once.
    fn resume_after_event(&mut self, tid: Tid) -> Result<Option<Stop>> {
        if let Some(thread) = self.process.as_mut().and_then(|p| p.thread_mut(tid)) {
            thread.state = ThreadState::Stopped;
        }
        self.resume_thread(tid)?;
        Ok(None)
    }

    /// A forked child runs free: take our breakpoints out of its memory
    /// and detach. A vfork child shares our memory, so the breakpoints are
    /// taken out of it until the child execs or exits (VFORK_DONE).
    pub(crate) fn release_child(&mut self, child: i32, shares_memory: bool) -> Result<()> {
        // The child starts with a SIGSTOP; wait for it before touching it
        // (unless it was already seen).
        if let Some(i) = self.early_children.iter().position(|&c| c == child) {
            self.early_children.swap_remove(i);
        } else {
            loop {
                match ptrace::wait(child, false)? {
                    Some(WaitEvent::Signal { .. }) | Some(WaitEvent::Event { .. }) => break,
                    Some(_) => return Ok(()),
                    None => continue,
                }
            }
        }
        let restore: Vec<(u64, u8)> = self
            .breakpoints
            .sites
            .values()
            .map(|s| (s.address, s.original[0]))
            .collect();
        if shares_memory {
            self.vfork_in_progress = true;
            if let Some(process) = &self.process {
                for &(address, byte) in &restore {
                    let _ = process.memory.write(address, &[byte]);
                }
            }
        } else if let Ok(memory) = crate::memory::Memory::open(child) {
            for &(address, byte) in &restore {
                let _ = memory.write(address, &[byte]);
            }
        }
        // A child stopped on a slot address would be lost; it never is,
        // since only the forking thread is copied and it is at the syscall.
        let _ = ptrace::detach(child, 0);
        Ok(())
    }

    fn reinsert_sites(&mut self) {
        if let Some(process) = &self.process {
            for address in self.breakpoints.sites.keys() {
                let _ = process.memory.write(*address, &[0xcc]);
            }
        }
    }

    fn handle_signal(
        &mut self,
        tid: Tid,
        signal: i32,
        conditions: ConditionEvaluator,
    ) -> Result<Option<Stop>> {
        if ptrace::trace_enabled() {
            let pc = ptrace::get_regs(tid).map(|r| r.rip).unwrap_or(0);
            eprintln!("[rdbx trace] signal {signal} in {tid} at 0x{pc:x}");
        }
        let process = self.process_mut()?;
        if !process.threads.contains_key(&tid) {
            if thread_group_of(tid) != Some(process.pid) {
                // A new child's first stop, seen before its parent's fork
                // event: the fork event releases it.
                self.early_children.push(tid);
                return Ok(None);
            }
            // A new thread's first stop, seen before its parent's clone event.
            let thread = process.add_thread(tid, ThreadState::Stopped);
            if signal == libc::SIGSTOP {
                thread.sigstop_expected = false;
                self.resume_thread(tid)?;
                return Ok(None);
            }
        }
        let thread = process.thread_mut(tid).expect("present");
        thread.state = ThreadState::Stopped;
        if signal == libc::SIGSTOP && thread.sigstop_expected {
            thread.sigstop_expected = false;
            self.resume_thread(tid)?;
            return Ok(None);
        }
        if signal == libc::SIGTRAP {
            match self.handle_trap(tid, conditions)? {
                Trap::Stop(stop) => return Ok(Some(stop)),
                Trap::Handled => return Ok(None),
                Trap::NotOurs => {}
            }
        }
        self.translate_slot_pc(tid)?;
        let disposition = self.signals.get(signal);
        let thread = self.process_mut()?.thread_mut(tid).expect("present");
        thread.pending_signal = if disposition.pass { signal } else { 0 };
        if disposition.stop {
            thread.cause = StopCause::Signal(signal);
            return Ok(Some(Stop {
                tid,
                reason: StopReason::Signal { signal },
            }));
        }
        self.resume_thread(tid)?;
        Ok(None)
    }

    /// If a thread stopped inside an out-of-line slot (a signal while the
    /// displaced instruction ran), put its pc back into the program.
    fn translate_slot_pc(&mut self, tid: Tid) -> Result<()> {
        let process = self.process()?;
        let mut regs = process.regs(tid)?;
        if let Some((address, _)) = self.breakpoints.translate_slot_pc(regs.rip) {
            regs.rip = address;
            process.set_regs(tid, &regs)?;
        }
        Ok(())
    }

    /// A SIGTRAP: one of our breakpoints, or the program's own trap.
    fn handle_trap(&mut self, tid: Tid, conditions: ConditionEvaluator) -> Result<Trap> {
        if !self.rewind_if_breakpoint(tid)? {
            let info = ptrace::siginfo(tid)?;
            // A stray single-step trap (TRAP_TRACE) is ours too.
            if info.si_code == ptrace::TRAP_TRACE {
                self.resume_thread(tid)?;
                return Ok(Trap::Handled);
            }
            if info.si_code == ptrace::TRAP_PERF {
                // The collector's perf-event clock (sigtrap delivery): the
                // program's own tick, passed on silently like SIGPROF
                // whatever the SIGTRAP disposition says.
                if let Some(thread) = self.process_mut()?.thread_mut(tid) {
                    thread.pending_signal = libc::SIGTRAP;
                }
                self.resume_thread(tid)?;
                return Ok(Trap::Handled);
            }
            return Ok(Trap::NotOurs);
        }
        let pc = self.process()?.pc(tid)?;
        if let Some(thread) = self.process_mut()?.thread_mut(tid) {
            thread.pass_at = Some(pc);
        }
        let owners = self.breakpoints.sites[&pc].owners.clone();
        if owners.contains(&Owner::LoaderEvent) {
            self.library_event()?;
        }
        let at_entry = owners.contains(&Owner::EntryPoint);
        if at_entry {
            let memory = self.process.as_ref().map(|p| &p.memory);
            self.breakpoints.remove_owner(memory, pc, Owner::EntryPoint);
            self.entry_reached = true;
        }
        let mut hit = Vec::new();
        for owner in &owners {
            if let Owner::User(id) = owner {
                if self.user_breakpoint_triggers(*id, tid, conditions) {
                    hit.push(*id);
                }
            }
        }
        if !hit.is_empty() {
            for &id in &hit {
                if self.breakpoints.user.get(&id).is_some_and(|b| b.temporary) {
                    let _ = self.delete_breakpoint(id);
                }
            }
            if let Some(t) = self.process_mut()?.thread_mut(tid) {
                t.cause = StopCause::Breakpoint;
            }
            return Ok(Trap::Stop(Stop {
                tid,
                reason: StopReason::Breakpoint { ids: hit },
            }));
        }
        if at_entry {
            return Ok(Trap::Stop(Stop {
                tid,
                reason: StopReason::EntryPoint,
            }));
        }
        if owners.contains(&Owner::StepResume) {
            if let Some(target) = self.step_resume {
                let sp = self.process()?.regs(tid)?.rsp;
                if target.tid == tid && target.address == pc && sp >= target.min_sp {
                    if let Some(t) = self.process_mut()?.thread_mut(tid) {
                        t.cause = StopCause::Step;
                    }
                    return Ok(Trap::Stop(Stop {
                        tid,
                        reason: StopReason::Step,
                    }));
                }
            }
        }
        self.resume_thread(tid)?;
        Ok(Trap::Handled)
    }

    /// Counts a hit of breakpoint `id` if its condition holds; true when
    /// the user should see it (count reached).
    fn user_breakpoint_triggers(
        &mut self,
        id: u32,
        tid: Tid,
        conditions: ConditionEvaluator,
    ) -> bool {
        let Some(bp) = self.breakpoints.user.get(&id) else {
            return false;
        };
        if !bp.enabled {
            return false;
        }
        if let Some(condition) = bp.condition.clone() {
            let previous = self.current_tid;
            self.current_tid = tid;
            let verdict = conditions(self, &condition);
            self.current_tid = previous;
            match verdict {
                Ok(true) => {}
                Ok(false) => return false,
                Err(e) => {
                    // A condition that cannot be evaluated stops, saying why.
                    self.condition_failures.push((id, e.to_string()));
                    return true;
                }
            }
        }
        let bp = self.breakpoints.user.get_mut(&id).expect("present");
        bp.hits += 1;
        match bp.count {
            Some(n) => bp.hits >= n,
            None => true,
        }
    }

    /// Conditions that could not be evaluated at the last stop.
    pub fn take_condition_failures(&mut self) -> Vec<(u32, String)> {
        std::mem::take(&mut self.condition_failures)
    }

    /// The loader added or removed objects: refresh and resolve.
    fn library_event(&mut self) -> Result<()> {
        let pid = self.process()?.pid;
        let before: Vec<(PathBuf, u64, u64)> = self
            .objects
            .list
            .iter()
            .map(|o| (o.path.clone(), o.start, o.end))
            .collect();
        self.objects.refresh(pid)?;
        // Sites in objects that went away (dlclose) are gone with them.
        for (path, start, end) in before {
            if !self
                .objects
                .list
                .iter()
                .any(|o| o.path == path && o.start == start)
            {
                let dead: Vec<u64> = self
                    .breakpoints
                    .sites
                    .range(start..end)
                    .map(|(a, _)| *a)
                    .collect();
                for address in dead {
                    self.breakpoints.sites.remove(&address);
                    for bp in self.breakpoints.user.values_mut() {
                        bp.addresses.retain(|&a| a != address);
                    }
                }
            }
        }
        self.resolve_all_breakpoints();
        Ok(())
    }

    // ----- helpers for the other engine modules -------------------------

    /// The runtime address of the executable's entry point.
    pub(crate) fn entry_point(&self) -> Result<u64> {
        let pid = self.process()?.pid;
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

    /// The signal `tid` is to receive when resumed, taken (0 for none).
    pub(crate) fn take_pending_signal(&mut self, tid: Tid) -> i32 {
        self.process
            .as_mut()
            .and_then(|p| p.thread_mut(tid))
            .map(|t| std::mem::take(&mut t.pending_signal))
            .unwrap_or(0)
    }

    pub(crate) fn take_deferred(&mut self) -> Option<WaitEvent> {
        self.deferred.pop_front()
    }

    /// Keeps an event for the next resume to handle.
    pub(crate) fn defer(&mut self, event: WaitEvent) {
        self.deferred.push_back(event);
    }

    /// The process has ended and the next resume will report it (after an
    /// injected call during which it exited, for instance).
    pub fn process_has_ended(&self) -> bool {
        let Some(pid) = self.process.as_ref().map(|p| p.pid) else {
            return false;
        };
        self.deferred.iter().any(|e| {
            matches!(e, WaitEvent::Exited { tid, .. } | WaitEvent::Killed { tid, .. } if *tid == pid)
        })
    }

    /// Decodes the program's instruction at `address` (our int3s hidden).
    pub fn instruction_at(&self, address: u64) -> Option<Instruction> {
        let process = self.process.as_ref()?;
        let mut code = [0u8; 16];
        let n = self
            .breakpoints
            .read_code(&process.memory, address, &mut code);
        self.disassembler.decode_one(&code[..n], address)
    }

    /// Reads memory as the program sees it (our int3s hidden).
    /// Writes the program's memory (`assign`, `set var`). Bytes under one of
    /// our breakpoints are refused: the int3 would be lost, or the saved
    /// instruction would no longer be the program's.
    pub fn write_memory(&self, address: u64, bytes: &[u8]) -> Result<()> {
        if let Some(site) = self.breakpoints.site_overlapping(address, bytes.len()) {
            return Err(Error::Other(format!(
                "cannot write {} byte(s) at 0x{address:x}: a breakpoint is at 0x{site:x} \
                 (delete it first)",
                bytes.len()
            )));
        }
        self.process()?.memory.write(address, bytes)
    }

    pub fn read_memory(&self, address: u64, buf: &mut [u8]) -> Result<()> {
        let process = self.process()?;
        process.memory.read(address, buf)?;
        self.breakpoints.unpatch(address, buf);
        Ok(())
    }

    pub fn disassembler(&self) -> &Disassembler {
        &self.disassembler
    }
}

/// A SIGTRAP stop of `tid` raised by a perf event (the collector's clock).
fn is_perf_trap(tid: Tid) -> bool {
    ptrace::siginfo(tid).is_ok_and(|info| info.si_code == ptrace::TRAP_PERF)
}

/// The process a task belongs to (its thread group), from /proc.
pub(crate) fn thread_group_of(tid: Tid) -> Option<i32> {
    let status = std::fs::read_to_string(format!("/proc/{tid}/status")).ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("Tgid:"))
        .and_then(|value| value.trim().parse().ok())
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
