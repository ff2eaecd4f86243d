//! The engine's state machine: what each event from the pump means in
//! what the engine is doing, and how threads are set running and stopped.
//! docs/architecture.md ("The event pump and the state machine") has the
//! table this code implements.
//!
//! The engine is in one of four activities, each a loop over
//! `Pump::wait`: running the program (`run_until_stop`), stopping every
//! thread (`stop_all`), single-stepping one thread (`wait_for_step`), and
//! an injected call (call.rs). Every event first goes through the same
//! bookkeeping (a stop is noted, new threads are added, dead ones
//! removed); then the activity decides: resume the thread, report a stop,
//! or keep the event for later (`deferred`).
//!
//! Ctrl-C reaches the engine through the pump as `Wake::Interrupt` and
//! travels up as `Error::Interrupted`; the public entry points turn it into
//! the stop it is (`settle`), after stopping every thread.

use crate::breakpoints::Owner;
use crate::engine::{ConditionEvaluator, Debugger, Notice, Stop, StopReason};
use crate::inferior::{Resume, StopCause, ThreadState};
use crate::ptrace::{self, Tid};
use crate::pump::{self, Event, Wait, Wake};
use crate::relocate::Displacement;
use crate::{Error, Result};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// What a SIGTRAP at an int3 turned out to be.
enum Trap {
    /// One of ours, handled; the thread was resumed.
    Handled,
    /// One of ours, and the user must see it.
    Stop(Stop),
    /// Not ours: the program's own trap, handled as a signal.
    NotOurs,
}

/// How long `kill` waits for the process to be reaped.
const KILL_WAIT: Duration = Duration::from_secs(5);
/// How long a forked child's first stop may take.
const CHILD_WAIT: Duration = Duration::from_secs(5);

impl Debugger {
    // ----- public entry points -------------------------------------------

    /// Resumes every thread and runs until something the user must see.
    pub fn cont(&mut self, conditions: ConditionEvaluator) -> Result<Stop> {
        self.process()?;
        self.selected_frame = 0;
        let outcome = self.run_until_stop(conditions);
        self.settle(outcome)
    }

    /// Turns a Ctrl-C that ended an operation into the stop it is: every
    /// thread stopped, the SIGINT the program got from the terminal (if
    /// it shares rdbx's) reported as such, else an interrupt.
    pub(crate) fn settle(&mut self, outcome: Result<Stop>) -> Result<Stop> {
        match outcome {
            Err(Error::Interrupted) => self.interrupted_stop(),
            other => other,
        }
    }

    fn interrupted_stop(&mut self) -> Result<Stop> {
        self.step_resume = None;
        self.stop_all()?;
        let pid = self.process()?.pid();
        if let Some(end) = self.take_deferred(|e| e.is_end() && e.tid() == pid) {
            let stop = self.handle_event(end, &|_, _| Ok(false))?;
            return stop.ok_or(Error::NoProcess);
        }
        if !self.process()?.has_thread(self.current_tid) {
            self.current_tid = pid;
        }
        let sigint_stop = Stop {
            tid: self.current_tid,
            reason: StopReason::Signal {
                signal: libc::SIGINT,
            },
        };
        let stop = if let Some(event) = self.take_deferred(|e| e.signal() == Some(libc::SIGINT)) {
            // The terminal's SIGINT reached a thread first: that is the stop.
            let tid = event.tid();
            let pass = self.signals().get(libc::SIGINT).pass;
            self.process_mut()?
                .set_pending(tid, if pass { libc::SIGINT } else { 0 }, None);
            self.current_tid = tid;
            Stop { tid, ..sigint_stop }
        } else if sigint_queued(pid) {
            // Still queued: taken at the next resume, where it must not
            // stop the program a second time.
            if ptrace::trace_enabled() {
                eprintln!("[rdbx trace] the terminal's SIGINT is still queued");
            }
            self.sigint_reported = true;
            sigint_stop
        } else {
            Stop {
                tid: self.current_tid,
                reason: StopReason::Interrupted,
            }
        };
        let cause = match stop.reason {
            StopReason::Signal { signal } => StopCause::Signal(signal),
            _ => StopCause::Stopped,
        };
        self.process_mut()?.set_cause(stop.tid, cause);
        Ok(stop)
    }

    /// Removes and returns the first event kept for later that `which` picks.
    fn take_deferred(&mut self, which: impl Fn(&Event) -> bool) -> Option<Event> {
        let i = self.deferred.iter().position(which)?;
        self.deferred.remove(i)
    }

    // ----- running ---------------------------------------------------------

    pub(crate) fn run_until_stop(&mut self, conditions: ConditionEvaluator) -> Result<Stop> {
        if let Some(stop) = self.handle_deferred(conditions)? {
            return self.finish_stop(stop);
        }
        self.resume_all()?;
        loop {
            // Events seen while one thread was single-stepped come first.
            if let Some(stop) = self.handle_deferred(conditions)? {
                return self.finish_stop(stop);
            }
            let kick = self.process()?.first_running();
            match self.pump.wait(Wait::any().interruptible().kicking(kick))? {
                Wake::Event(event) => {
                    if let Some(stop) = self.handle_event(event, conditions)? {
                        return self.finish_stop(stop);
                    }
                }
                Wake::Interrupt => {
                    // Stop everything now, while the sites of this run
                    // (a `next`'s return address) still exist: a thread
                    // that just trapped on one is rewound, not left one
                    // byte into an instruction once the site is gone.
                    self.stop_all()?;
                    return Err(Error::Interrupted);
                }
                Wake::Timeout => {}
            }
        }
    }

    /// Handles the events kept from before; the first stop the user must
    /// see ends it.
    fn handle_deferred(&mut self, conditions: ConditionEvaluator) -> Result<Option<Stop>> {
        while let Some(event) = self.deferred.pop_front() {
            if let Some(stop) = self.handle_event(event, conditions)? {
                return Ok(Some(stop));
            }
        }
        Ok(None)
    }

    /// After a user stop: stop every other thread and select the stopped one.
    pub(crate) fn finish_stop(&mut self, stop: Stop) -> Result<Stop> {
        if stop.process_ended() {
            return Ok(stop);
        }
        self.stop_all()?;
        if let Some(process) = &self.process {
            if process.has_thread(stop.tid) {
                self.current_tid = stop.tid;
            }
        }
        Ok(stop)
    }

    /// Resumes every stopped thread, each over the breakpoint it stands on.
    pub(crate) fn resume_all(&mut self) -> Result<()> {
        let process = self.process()?;
        let pid = process.pid();
        let tids: Vec<Tid> = process
            .threads()
            .filter(|t| t.is_stopped())
            .map(|t| t.tid())
            .collect();
        // Prepare every out-of-line slot first: that may run an injected
        // system call, which must happen while no thread runs.
        for &tid in &tids {
            let pc = self.process()?.pc(tid)?;
            let will_pass = tid == self.current_tid || self.process()?.pass_at(tid) == Some(pc);
            if will_pass && self.breakpoints.is_site(pc) {
                self.displacement_for(tid, pc)?;
            }
        }
        if std::mem::take(&mut self.job_stopped) {
            // `cont` after a job-control stop goes on as `kill -CONT` would:
            // the process is no longer stopped, and a SIGCONT handler runs.
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGCONT,
            );
        }
        self.hold_ends();
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
        let stopped = self.process()?.thread(tid).is_some_and(|t| t.is_stopped());
        if !stopped {
            return Ok(());
        }
        self.inline_skips.forget(tid);
        let mut regs = self.process()?.regs(tid)?;
        if ptrace::trace_enabled() {
            eprintln!("[rdbx trace] resume {tid} at 0x{:x}", regs.rip);
        }
        let trapped_here = self.process_mut()?.take_pass_at(tid) == Some(regs.rip);
        let pass = trapped_here || tid == self.current_tid;
        if pass && self.breakpoints.is_site(regs.rip) && !self.vfork_in_progress {
            match self.displacement_for(tid, regs.rip)? {
                Displacement::OutOfLine { .. } => {
                    regs.rip = self.breakpoints.slot_of(regs.rip).unwrap_or(regs.rip);
                    self.process()?.set_regs(tid, &regs)?;
                }
                Displacement::EmulateCall {
                    target,
                    return_address,
                } => {
                    let sp = regs.rsp - 8;
                    self.process()?
                        .memory()
                        .write(sp, &return_address.to_le_bytes())?;
                    regs.rsp = sp;
                    regs.rip = target;
                    self.process()?.set_regs(tid, &regs)?;
                }
                Displacement::EmulateJump { target } => {
                    regs.rip = target;
                    self.process()?.set_regs(tid, &regs)?;
                }
                // Whatever else happens during the step is handled by the
                // step's own wait.
                Displacement::SingleStep => self.step_over_site(tid)?,
            }
        }
        self.process_mut()?.resume(tid, Resume::Continue)
    }

    /// How to get past the site at `address`, allocating scratch memory
    /// near it in the target the first time.
    fn displacement_for(&mut self, tid: Tid, address: u64) -> Result<Displacement> {
        if let Some(d) = self.breakpoints.displacement_of(address) {
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
            .read_code(self.process()?.memory(), address, &mut code);
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
            .prepare_displacement(process.memory(), address, len)?;
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
        process.memory().read(at, &mut original)?;
        crate::rescue::note_call(tid, &saved, None);
        crate::rescue::note_patch(at, &original);
        process.memory().write(at, &[0x0f, 0x05])?;
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
            self.process_mut()?
                .resume_keeping_pending(tid, Resume::Step)?;
            self.wait_for_step(tid)
        });
        let process = self.process.as_ref().ok_or(Error::NoProcess)?;
        let result = process.regs(tid).map(|r| r.rax);
        process.memory().write(at, &original)?;
        crate::rescue::forget_patch(at, original.len());
        process.set_regs(tid, &saved)?;
        crate::rescue::end_call();
        outcome?;
        result
    }

    // ----- single steps -------------------------------------------------

    /// Waits for `tid`'s single-step to complete (only it runs). Events of
    /// other threads are noted or kept for later; a signal for `tid` that
    /// came before the instruction ran is kept for delivery (or, if it
    /// must stop the program, raised again after the step) and the step
    /// made again. Ctrl-C stops the thread and ends with `Interrupted`.
    pub(crate) fn wait_for_step(&mut self, tid: Tid) -> Result<()> {
        let mut reraise = Vec::new();
        let outcome = self.wait_for_step_inner(tid, &mut reraise);
        if let Some(pid) = self.process.as_ref().map(|p| p.pid()) {
            for signal in reraise {
                let _ = ptrace::tgkill(pid, tid, signal);
            }
        }
        outcome
    }

    fn wait_for_step_inner(&mut self, tid: Tid, reraise: &mut Vec<i32>) -> Result<()> {
        loop {
            let wait = Wait::any().interruptible().kicking(Some(tid));
            let event = match self.pump.wait(wait)? {
                Wake::Event(event) => event,
                Wake::Interrupt => {
                    self.halt_thread(tid)?;
                    return Err(Error::Interrupted);
                }
                Wake::Timeout => continue,
            };
            if event.tid() != tid {
                self.absorb(event)?;
                continue;
            }
            if event.is_end() {
                self.defer(event);
                return Err(Error::Other("the thread exited during a step".into()));
            }
            self.process_mut()?.note_stopped(tid);
            match event {
                Event::Stepped { .. } | Event::Breakpoint { .. } => return Ok(()),
                Event::ClockTick { info, .. } => {
                    // A collector trap (its clock, or the thread ran again
                    // after a switch off the CPU: the stop before this step
                    // was one) before the instruction ran: kept, with its
                    // siginfo, for the next resume that is not a step (its
                    // handler is the collector's, not the user's to step).
                    self.process_mut()?.keep_perf_trap(tid, &info.info())?;
                }
                Event::Signal { signal, .. } => {
                    if !self.already_reported_sigint(tid, signal)? {
                        let disposition = self.signals().get(signal);
                        if disposition.stop {
                            // The user must see it: raise it again after
                            // our step so it stops the thread.
                            reraise.push(signal);
                        } else if disposition.pass {
                            let info = ptrace::siginfo(tid).ok();
                            self.process_mut()?.set_pending(tid, signal, info);
                        }
                    }
                }
                // A stale interrupt: the instruction has not run yet.
                Event::Interrupted { .. } => {}
                Event::GroupStop { .. } => {
                    // Stopped by job control before the instruction ran:
                    // the step is over; the stop is the user's to see.
                    self.defer(event);
                    return Ok(());
                }
                Event::Exec { .. } => {
                    self.absorb(event)?;
                    return Ok(());
                }
                _ => self.absorb(event)?,
            }
            // Step again, keeping what is pending for the resume after.
            self.process_mut()?
                .resume_keeping_pending(tid, Resume::Step)?;
        }
    }

    /// Executes the original instruction at a breakpoint site by
    /// single-stepping with the int3 removed (only this thread runs).
    pub(crate) fn step_over_site(&mut self, tid: Tid) -> Result<()> {
        let process = self.process.as_ref().ok_or(Error::NoProcess)?;
        let pc = process.pc(tid)?;
        let original = self.breakpoints.original_byte(pc);
        if let Some(byte) = original {
            process.memory().write(pc, &[byte])?;
        }
        let stepped = self
            .process_mut()?
            .resume(tid, Resume::Step)
            .and_then(|()| self.wait_for_step(tid));
        if original.is_some() && self.breakpoints.is_site(pc) {
            if let Some(process) = &self.process {
                let _ = process.memory().write(pc, &[0xcc]);
            }
        }
        stepped
    }

    /// Stops one running thread and waits until it has (Ctrl-C during a
    /// step, an injected call that must end).
    pub(crate) fn halt_thread(&mut self, tid: Tid) -> Result<()> {
        self.interrupt_and_wait(tid, Wait::any().kicking(Some(tid)))
    }

    /// Interrupts one running thread and absorbs the events `wait` lets
    /// through until that thread has stopped (or is gone).
    fn interrupt_and_wait(&mut self, tid: Tid, wait: Wait) -> Result<()> {
        if !self.process_mut()?.interrupt(tid) {
            return Ok(());
        }
        while self
            .process
            .as_ref()
            .and_then(|p| p.thread(tid))
            .is_some_and(|t| !t.is_stopped())
        {
            if let Wake::Event(event) = self.pump.wait(wait)? {
                self.absorb(event)?;
            }
        }
        Ok(())
    }

    // ----- stopping everything ------------------------------------------

    /// Stops every running thread and waits until each has stopped: the
    /// process is held (hold.rs) until `resume_all` or a detach.
    pub(crate) fn stop_all(&mut self) -> Result<()> {
        if self.process.is_none() {
            return Ok(());
        }
        self.hold_begins();
        self.stop_every_thread()?;
        self.show_hold();
        Ok(())
    }

    /// Breakpoint traps that race with the stop are rewound so they are
    /// seen again; signals are kept for the next resume. A second Ctrl-C
    /// gives up on threads that do not stop (a thread blocked in an
    /// uninterruptible wait).
    fn stop_every_thread(&mut self) -> Result<()> {
        let Some(process) = self.process.as_mut() else {
            return Ok(());
        };
        // A Ctrl-C from before is the one this stop answers (its SIGINT
        // reached the program, and the pump, before rdbx's own handler
        // ran): only one pressed from now on gives up.
        pump::clear_interrupt();
        for tid in process.running() {
            process.interrupt(tid);
        }
        while let Some(running) = self.process.as_ref().and_then(|p| p.first_running()) {
            match self
                .pump
                .wait(Wait::any().interruptible().kicking(Some(running)))?
            {
                Wake::Event(event) => self.absorb(event)?,
                Wake::Interrupt => {
                    let stuck = self.process()?.running();
                    self.notify(Notice::Warning(format!(
                        "{} thread(s) did not stop (lwp {stuck:?}); they are left running",
                        stuck.len()
                    )));
                    return Ok(());
                }
                Wake::Timeout => {}
            }
        }
        Ok(())
    }

    /// One event while the program is being held stopped (stopping all,
    /// single-stepping one thread, an injected call): it is noted and the
    /// thread stays stopped; what needs a decision is kept for the next
    /// resume.
    pub(crate) fn absorb(&mut self, event: Event) -> Result<()> {
        let pid = self.process()?.pid();
        let tid = event.tid();
        if event.is_end() {
            if tid == pid {
                // Reported by the next resume; no thread waits any more.
                self.process_mut()?.forget_threads();
                self.defer(event);
            } else {
                self.thread_exited(tid)?;
            }
            return Ok(());
        }
        if !self.known_task(tid)? {
            return Ok(());
        }
        self.process_mut()?.note_stopped(tid);
        match event {
            Event::Interrupted { .. } | Event::GroupStop { .. } if trap_to_take(tid) => {
                // It executed an int3 (or finished a step) and was
                // interrupted before reporting it: let it take that trap
                // now, so the hit is seen and its pc is not left one byte
                // into an instruction. It runs none of its code before.
                self.process_mut()?
                    .resume_keeping_pending(tid, Resume::Continue)?;
            }
            Event::Interrupted { .. } => {}
            Event::GroupStop { signal, .. } => {
                self.process_mut()?
                    .set_cause(tid, StopCause::JobControl(signal));
                self.job_stopped = true;
            }
            Event::Breakpoint { .. } => {
                if self.rewind_if_breakpoint(tid)? {
                    // Its hit is taken again when it resumes.
                    return Ok(());
                }
                self.defer(event);
            }
            Event::Stepped { .. } => {}
            Event::ClockTick { info, .. } => {
                self.process_mut()?.keep_perf_trap(tid, &info.info())?;
            }
            Event::SyscallStop { .. } if ptrace::at_syscall_entry(tid) => {
                self.hold_in_system_call(tid)?;
            }
            Event::SyscallStop { .. } => {}
            Event::Signal { .. } => self.defer(event),
            Event::Clone { new, .. } => {
                // The program is held stopped: so is the new thread, once
                // its first stop is in (until then the kernel shows it
                // runnable, though it will not run code of its own).
                self.thread_created(new)?;
                self.halt_thread(new)?;
            }
            Event::Fork { child, vfork, .. } => self.fork_event(child, vfork)?,
            Event::VforkDone { .. } => self.vfork_done(),
            Event::Exec { .. } => self.exec_event()?,
            Event::Exited { .. } | Event::Killed { .. } => {}
        }
        Ok(())
    }

    /// A thread owing a perf trap, caught entering its system call while
    /// the program is held: it is held inside the call instead (resumed
    /// into it and interrupted there, the call stops at its exit, to be
    /// restarted), where a call injected into it or a step cannot take the
    /// system call's place. Only its own stop is waited for: the events of
    /// the others stay for whoever waits for them (a step of another
    /// thread in progress).
    fn hold_in_system_call(&mut self, tid: Tid) -> Result<()> {
        self.process_mut()?.resume(tid, Resume::Continue)?;
        self.interrupt_and_wait(tid, Wait::task(tid))
    }

    // ----- events while the program runs ----------------------------------

    /// Handles one event while the program runs. Internal events resume
    /// the thread and return `None`; anything the user must see returns a
    /// `Stop`.
    pub(crate) fn handle_event(
        &mut self,
        event: Event,
        conditions: ConditionEvaluator,
    ) -> Result<Option<Stop>> {
        let pid = self.process()?.pid();
        let tid = event.tid();
        match event {
            Event::Exited { code, .. } if tid == pid => {
                self.after_process_gone();
                Ok(Some(Stop {
                    tid,
                    reason: StopReason::Exited { code },
                }))
            }
            Event::Killed { signal, .. } if tid == pid => {
                self.after_process_gone();
                Ok(Some(Stop {
                    tid,
                    reason: StopReason::Killed { signal },
                }))
            }
            Event::Exited { .. } | Event::Killed { .. } => {
                self.thread_exited(tid)?;
                Ok(None)
            }
            _ if !self.known_task(tid)? => Ok(None),
            _ => {
                self.process_mut()?.note_stopped(tid);
                self.handle_stop(event, conditions)
            }
        }
    }

    fn handle_stop(
        &mut self,
        event: Event,
        conditions: ConditionEvaluator,
    ) -> Result<Option<Stop>> {
        let tid = event.tid();
        match event {
            Event::Clone { new, .. } => {
                self.thread_created(new)?;
                self.resume_after_event(tid)
            }
            Event::Fork { child, vfork, .. } => {
                self.fork_event(child, vfork)?;
                self.resume_after_event(tid)
            }
            Event::VforkDone { .. } => {
                self.vfork_done();
                self.resume_after_event(tid)
            }
            Event::Exec { .. } => {
                self.exec_event()?;
                let pid = self.process()?.pid();
                self.resume_after_event(pid)
            }
            // A stale interrupt, or a new thread's first stop.
            Event::Interrupted { .. } | Event::Stepped { .. } => self.resume_after_event(tid),
            // A thread owing a perf trap at its system call's entry or
            // exit: on to the exit, or the trap is delivered now. Its pc
            // is the call's return address, not a place to pass a
            // breakpoint from.
            Event::SyscallStop { .. } => {
                self.process_mut()?.resume(tid, Resume::Continue)?;
                Ok(None)
            }
            Event::GroupStop { signal, .. } => self.group_stop(tid, signal),
            Event::ClockTick { info, .. } => {
                // A perf event's SIGTRAP (the collector's clock or off-CPU
                // events): the program's own, passed on silently like
                // SIGPROF whatever the SIGTRAP disposition says. Off-CPU
                // profiling makes one per switch off the CPU, so this is
                // the short way: delivered from this very stop, where
                // nothing else is to be done (unless it would cut a
                // restarted system call short: then after it).
                self.process_mut()?.deliver_perf_trap(tid, &info.info())?;
                Ok(None)
            }
            Event::Breakpoint { .. } => match self.handle_trap(tid, conditions)? {
                Trap::Stop(stop) => Ok(Some(stop)),
                Trap::Handled => Ok(None),
                Trap::NotOurs => self.handle_signal(tid, libc::SIGTRAP),
            },
            Event::Signal { signal, .. } => self.handle_signal(tid, signal),
            Event::Exited { .. } | Event::Killed { .. } => Ok(None),
        }
    }

    /// A thread stopped at an event we handle ourselves goes on at once.
    fn resume_after_event(&mut self, tid: Tid) -> Result<Option<Stop>> {
        self.resume_thread(tid)?;
        Ok(None)
    }

    /// Whether an event of `tid` is for a thread we know. A task we do not
    /// know yet is a new thread whose first stop came before its clone
    /// event (added now), or a forked child whose first stop came before
    /// the fork event (kept for the fork event to release).
    fn known_task(&mut self, tid: Tid) -> Result<bool> {
        let process = self.process_mut()?;
        if process.has_thread(tid) {
            return Ok(true);
        }
        if thread_group_of(tid) == Some(process.pid()) {
            process.add_thread(tid, ThreadState::Stopped);
            return Ok(true);
        }
        self.early_children.push(tid);
        Ok(false)
    }

    fn thread_created(&mut self, new: Tid) -> Result<()> {
        let process = self.process_mut()?;
        // Its first stop is still to come (unless it came already and the
        // thread was added then).
        process.add_thread(new, ThreadState::Running(Resume::Continue));
        let number = process.thread(new).map_or(0, |t| t.number());
        self.notify(Notice::NewThread { number, tid: new });
        Ok(())
    }

    fn thread_exited(&mut self, tid: Tid) -> Result<()> {
        if let Some(thread) = self.process_mut()?.remove_thread(tid) {
            self.notify(Notice::ThreadExited {
                number: thread.number(),
                tid,
            });
        }
        Ok(())
    }

    fn fork_event(&mut self, child: i32, vfork: bool) -> Result<()> {
        self.release_child(child, vfork)?;
        self.notify(Notice::ForkDetached { child });
        Ok(())
    }

    /// The vfork child has exec'd or exited: our memory is ours again.
    fn vfork_done(&mut self) {
        self.vfork_in_progress = false;
        if let Some(process) = &self.process {
            self.breakpoints.write_traps(process.memory());
        }
    }

    /// The process runs a new program: reload everything.
    fn exec_event(&mut self) -> Result<()> {
        let process = self.process_mut()?;
        process.reset_threads_after_exec();
        let pid = process.pid();
        crate::rescue::memory_replaced(process.memory().raw_fd());
        self.current_tid = pid;
        let path = std::fs::read_link(format!("/proc/{pid}/exe")).unwrap_or_default();
        self.notify(Notice::Exec {
            pid,
            path: path.clone(),
        });
        self.breakpoints.forget_sites();
        self.step_resume = None;
        self.program = Some(path);
        self.objects.list.clear();
        self.objects.refresh(pid)?;
        self.insert_loader_breakpoint();
        self.resolve_all_breakpoints();
        Ok(())
    }

    /// A forked child runs free: take our breakpoints out of its memory
    /// and detach. A vfork child shares our memory, so the breakpoints are
    /// taken out of it until the child execs or exits (VFORK_DONE).
    pub(crate) fn release_child(&mut self, child: i32, shares_memory: bool) -> Result<()> {
        // The child starts stopped; wait for that stop before touching it
        // (unless it was seen already).
        if let Some(i) = self.early_children.iter().position(|&c| c == child) {
            self.early_children.swap_remove(i);
        } else {
            let deadline = Instant::now() + CHILD_WAIT;
            loop {
                match self.pump.wait(Wait::task(child).until(deadline))? {
                    Wake::Event(event) if event.is_end() => return Ok(()),
                    Wake::Event(_) => break,
                    Wake::Timeout => break,
                    Wake::Interrupt => {}
                }
            }
        }
        if shares_memory {
            self.vfork_in_progress = true;
            if let Some(process) = &self.process {
                self.breakpoints.write_originals(process.memory());
            }
        } else if let Ok(memory) = crate::memory::Memory::open(child) {
            self.breakpoints.write_originals(&memory);
            // Forked in a hold (an injected call, a step): the child's copy of
            // the collector's clock must not stay held.
            if let Some(at) = self.hold_shown_at() {
                let _ = memory.write(at, &[0; 8]);
            }
        }
        // A child stopped on a slot address would be lost; it never is,
        // since only the forking thread is copied and it is at the syscall.
        let _ = ptrace::detach(child, 0);
        Ok(())
    }

    /// Job control stopped the process (`kill -STOP`, Ctrl-Z). With the
    /// signal's `stop` disposition the user sees it; otherwise the thread
    /// stays stopped as job control wants (PTRACE_LISTEN) until SIGCONT.
    fn group_stop(&mut self, tid: Tid, signal: i32) -> Result<Option<Stop>> {
        self.process_mut()?
            .set_cause(tid, StopCause::JobControl(signal));
        if self.signals().get(signal).stop {
            self.job_stopped = true;
            return Ok(Some(Stop {
                tid,
                reason: StopReason::JobControl { signal },
            }));
        }
        self.process_mut()?.listen(tid)?;
        Ok(None)
    }

    fn handle_signal(&mut self, tid: Tid, signal: i32) -> Result<Option<Stop>> {
        if ptrace::trace_enabled() {
            let pc = ptrace::get_regs(tid).map(|r| r.rip).unwrap_or(0);
            eprintln!("[rdbx trace] signal {signal} in {tid} at 0x{pc:x}");
        }
        if self.already_reported_sigint(tid, signal)? {
            self.resume_thread(tid)?;
            return Ok(None);
        }
        self.translate_slot_pc(tid)?;
        let disposition = self.signals().get(signal);
        let pid = self.process()?.pid();
        if disposition.stop && disposition.pass && stops_the_process(pid, signal) {
            // A stop signal starts a group-stop once delivered: deliver it,
            // and the group-stop that follows is what the user sees.
            self.process_mut()?.set_pending(tid, signal, None);
            self.resume_thread(tid)?;
            return Ok(None);
        }
        let process = self.process_mut()?;
        process.set_pending(tid, if disposition.pass { signal } else { 0 }, None);
        if disposition.stop {
            process.set_cause(tid, StopCause::Signal(signal));
            return Ok(Some(Stop {
                tid,
                reason: StopReason::Signal { signal },
            }));
        }
        self.resume_thread(tid)?;
        Ok(None)
    }

    /// The SIGINT the terminal sent with a Ctrl-C that was reported already
    /// (it was still queued then): passed or not as the user said, never
    /// a second stop.
    fn already_reported_sigint(&mut self, tid: Tid, signal: i32) -> Result<bool> {
        if signal != libc::SIGINT || !std::mem::take(&mut self.sigint_reported) {
            return Ok(false);
        }
        let pass = self.signals().get(signal).pass;
        self.process_mut()?
            .set_pending(tid, if pass { signal } else { 0 }, None);
        Ok(true)
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

    /// An int3 trap: one of our breakpoints, or the program's own.
    fn handle_trap(&mut self, tid: Tid, conditions: ConditionEvaluator) -> Result<Trap> {
        if !self.rewind_if_breakpoint(tid)? {
            return Ok(Trap::NotOurs);
        }
        let pc = self.process()?.pc(tid)?;
        self.process_mut()?.set_pass_at(tid, Some(pc));
        let owners = self.breakpoints.owners(pc);
        if owners.contains(&Owner::LoaderEvent) {
            self.library_event()?;
        }
        let at_entry = owners.contains(&Owner::EntryPoint);
        if at_entry {
            let memory = self.process.as_ref().map(|p| p.memory());
            self.breakpoints.remove_owner(memory, pc, Owner::EntryPoint);
            self.entry_reached = true;
        }
        if owners.iter().any(|o| matches!(o, Owner::User(_))) {
            // Conditions see the frames the user will see.
            self.skip_inlined_calls_at(tid, pc);
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
            self.process_mut()?.set_cause(tid, StopCause::Breakpoint);
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
                    self.process_mut()?.set_cause(tid, StopCause::Step);
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

    /// If `tid` stopped just past one of our int3s, puts its pc back on
    /// the breakpoint and returns true. (The pump already told an int3
    /// trap from other SIGTRAPs.)
    pub(crate) fn rewind_if_breakpoint(&mut self, tid: Tid) -> Result<bool> {
        let process = self.process.as_ref().ok_or(Error::NoProcess)?;
        let mut regs = process.regs(tid)?;
        let address = regs.rip.wrapping_sub(1);
        if !self.breakpoints.is_site(address) {
            return Ok(false);
        }
        regs.rip = address;
        process.set_regs(tid, &regs)?;
        Ok(true)
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
    pub(crate) fn library_event(&mut self) -> Result<()> {
        let pid = self.process()?.pid();
        let before: Vec<(PathBuf, u64, u64)> = self
            .objects
            .list
            .iter()
            .map(|o| (o.path.clone(), o.start, o.end))
            .collect();
        self.objects.refresh(pid)?;
        self.objects_changed();
        // Sites in objects that went away (dlclose) are gone with them.
        for (path, start, end) in before {
            let still_there = self
                .objects
                .list
                .iter()
                .any(|o| o.path == path && o.start == start);
            if !still_there {
                self.breakpoints.forget_sites_in(start..end);
            }
        }
        self.resolve_all_breakpoints();
        Ok(())
    }

    // ----- ending ---------------------------------------------------------

    /// Kills the process we started and reaps every task, so nothing is
    /// left behind.
    pub(crate) fn kill_process(&mut self) {
        let Some(pid) = self.process.as_ref().map(|p| p.pid()) else {
            return;
        };
        // SAFETY: plain kill(2) of our own child.
        unsafe { libc::kill(pid, libc::SIGKILL) };
        let deadline = Instant::now() + KILL_WAIT;
        loop {
            match self.pump.wait(Wait::any().until(deadline)) {
                Ok(Wake::Event(event)) if event.is_end() && event.tid() == pid => break,
                Ok(Wake::Event(_)) | Ok(Wake::Interrupt) => {}
                Ok(Wake::Timeout) | Err(_) => break,
            }
        }
        if let Some(process) = self.process.as_mut() {
            process.forget_threads();
        }
    }
}

/// The process a task belongs to (its thread group), from /proc.
pub(crate) fn thread_group_of(tid: Tid) -> Option<i32> {
    proc_status_field(&format!("/proc/{tid}/status"), "Tgid:")?
        .parse()
        .ok()
}

fn proc_status_field(path: &str, field: &str) -> Option<String> {
    let status = std::fs::read_to_string(path).ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix(field))
        .map(|value| value.trim().to_string())
}

/// Whether `signal` is queued for the process or one of its threads (the
/// terminal's copy of a Ctrl-C, not taken yet).
fn sigint_queued(pid: i32) -> bool {
    let bit = 1u64 << (libc::SIGINT - 1);
    let pending = |path: &str, field: &str| {
        proc_status_field(path, field)
            .and_then(|mask| u64::from_str_radix(&mask, 16).ok())
            .is_some_and(|mask| mask & bit != 0)
    };
    if pending(&format!("/proc/{pid}/status"), "ShdPnd:") {
        return true;
    }
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return false;
    };
    tasks.filter_map(|t| t.ok()).any(|task| {
        let path = task.path().join("status");
        pending(&path.to_string_lossy(), "SigPnd:")
    })
}

/// Whether `tid` has a SIGTRAP queued that it would take as soon as it
/// runs (one it blocks would let it run on instead).
fn trap_to_take(tid: Tid) -> bool {
    let blocked = || {
        proc_status_field(&format!("/proc/{tid}/status"), "SigBlk:")
            .and_then(|mask| u64::from_str_radix(&mask, 16).ok())
            .is_some_and(|mask| mask & (1 << (libc::SIGTRAP - 1)) != 0)
    };
    ptrace::trap_queued(tid) && !blocked()
}

/// Whether delivering `signal` stops the process (job control): SIGSTOP
/// always; SIGTSTP, SIGTTIN and SIGTTOU when the program neither catches
/// nor ignores them.
fn stops_the_process(pid: i32, signal: i32) -> bool {
    match signal {
        libc::SIGSTOP => true,
        libc::SIGTSTP | libc::SIGTTIN | libc::SIGTTOU => {
            let bit = 1u64 << (signal - 1);
            let path = format!("/proc/{pid}/status");
            let mask = |field| {
                proc_status_field(&path, field)
                    .and_then(|m| u64::from_str_radix(&m, 16).ok())
                    .unwrap_or(0)
            };
            (mask("SigCgt:") | mask("SigIgn:")) & bit == 0
        }
        _ => false,
    }
}
