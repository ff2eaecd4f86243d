//! Attaching to a process that is already running, and detaching from it
//! so that it goes on as if it had never been traced.
//!
//! Threads are attached with PTRACE_ATTACH, not PTRACE_SEIZE: the rest of
//! the engine is built on PTRACE_ATTACH/TRACEME semantics (a new clone's
//! first stop is a SIGSTOP, group stops look like signal stops, threads are
//! stopped with SIGSTOP). A seized tracee's clones would start with
//! PTRACE_EVENT_STOP instead, and every stop path would need to know which
//! kind of tracee it deals with. What PTRACE_SEIZE would buy (options set
//! atomically, so no clone escapes) is had by rescanning /proc/PID/task
//! until no new thread appears: a thread is stopped before its options are
//! set and never runs again during the attach, so any thread it created in
//! between is listed by the next scan.

use crate::engine::{thread_group_of, Debugger};
use crate::inferior::{Inferior, ThreadState};
use crate::ptrace::{self, Tid, WaitEvent};
use crate::{Error, Result};
use nix::errno::Errno;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// One thread stopped by the attach, with the real signal (if any) that
/// stopped it before our SIGSTOP did: that signal was taken from the
/// thread and must be delivered when it is resumed or detached.
struct AttachedThread {
    tid: Tid,
    pending: Option<(i32, Option<libc::siginfo_t>)>,
}

/// Signals found pending during the attach beyond the one a thread can
/// hold: raised again once the attach is done (rare: two real signals
/// arriving while one thread stops).
type Reraise = Vec<(Tid, i32)>;

/// What became of the process while we let go of it.
#[derive(PartialEq, Eq)]
enum Fate {
    Alive,
    Gone,
}

impl Debugger {
    /// Attaches to the running process `pid` and stops every one of its
    /// threads. `program` is its executable; without it the one in
    /// /proc/PID/exe is used. Breakpoints already defined are inserted.
    pub fn attach(&mut self, pid: i32, program: Option<&Path>) -> Result<()> {
        if self.process.is_some() {
            return Err(Error::Other(
                "a process is already being debugged (kill or detach first)".into(),
            ));
        }
        check_attachable(pid)?;
        self.load_attached_program(pid, program)?;
        let mut reraise = Reraise::new();
        let threads = attach_all_threads(pid, &mut reraise)?;
        let mut inferior = match Inferior::attached(pid) {
            Ok(inferior) => inferior,
            Err(e) => {
                release(&threads);
                return Err(e);
            }
        };
        // The leader is t@1; the others are numbered in tid order.
        let leader_first = threads
            .iter()
            .filter(|t| t.tid == pid)
            .chain(threads.iter().filter(|t| t.tid != pid));
        for attached in leader_first {
            let thread = inferior.add_thread(attached.tid, ThreadState::Stopped);
            if let Some((signal, info)) = attached.pending {
                thread.pending_signal = signal;
                thread.pending_siginfo = info;
            }
        }
        self.process = Some(inferior);
        self.current_tid = pid;
        self.selected_frame = 0;
        self.step_resume = None;
        self.deferred.clear();
        self.early_children.clear();
        self.vfork_in_progress = false;
        self.entry_reached = false;
        self.breakpoints.forget_sites();
        if let Err(e) = self.objects.refresh(pid) {
            let _ = self.detach();
            return Err(e);
        }
        self.insert_loader_breakpoint();
        self.resolve_all_breakpoints();
        for (tid, signal) in reraise {
            let _ = ptrace::tgkill(pid, tid, signal);
        }
        Ok(())
    }

    /// Lets go of the process: our breakpoints are taken out of its memory
    /// (they stay defined for a later run or attach), a thread standing in
    /// one of our out-of-line slots is put back on its instruction, SIGSTOPs
    /// we sent and have not seen are collected, and every thread is
    /// detached with the signal it was stopped by and has not received yet.
    pub fn detach(&mut self) -> Result<()> {
        self.process()?;
        let outcome = self.detach_threads();
        if outcome.is_err() {
            // Whatever went wrong, no thread stays stopped by us.
            if let Some(process) = &self.process {
                for &tid in process.threads.keys() {
                    let _ = ptrace::detach(tid, 0);
                }
            }
        }
        self.after_process_gone();
        outcome
    }

    fn detach_threads(&mut self) -> Result<()> {
        let mut reraise = Reraise::new();
        while let Some(event) = self.deferred.pop_front() {
            if self.absorb_before_detach(event, &mut reraise)? == Fate::Gone {
                return Ok(());
            }
        }
        self.step_resume = None;
        self.take_out_breakpoints()?;
        if self.collect_expected_sigstops(&mut reraise)? == Fate::Gone {
            return Ok(());
        }
        let process = self.process()?;
        let pid = process.pid;
        for thread in process.threads.values() {
            let signal = thread.pending_signal;
            if signal != 0 {
                if let Some(info) = &thread.pending_siginfo {
                    let _ = ptrace::set_siginfo(thread.tid, info);
                }
            }
            match ptrace::detach(thread.tid, signal) {
                // A thread that exited meanwhile has nothing to let go.
                Ok(()) | Err(Error::Os(Errno::ESRCH)) => {}
                Err(e) => return Err(e),
            }
        }
        for (tid, signal) in reraise {
            let _ = ptrace::tgkill(pid, tid, signal);
        }
        Ok(())
    }

    /// Puts back every byte our breakpoints replaced, and moves a thread
    /// whose pc is in an out-of-line slot back into the program.
    fn take_out_breakpoints(&mut self) -> Result<()> {
        let process = self.process()?;
        for &tid in process.threads.keys() {
            let Ok(mut regs) = process.regs(tid) else {
                continue;
            };
            if let Some((address, _)) = self.breakpoints.translate_slot_pc(regs.rip) {
                regs.rip = address;
                process.set_regs(tid, &regs)?;
            }
        }
        for site in self.breakpoints.sites.values() {
            process.memory.write(site.address, &site.original[..1])?;
        }
        Ok(())
    }

    /// Takes note of an event seen (and deferred) but not handled yet, so
    /// that detaching loses nothing: a signal becomes the thread's pending
    /// signal, a new thread is added, a forked child is released.
    fn absorb_before_detach(&mut self, event: WaitEvent, reraise: &mut Reraise) -> Result<Fate> {
        let pid = self.process()?.pid;
        match event {
            WaitEvent::Exited { tid, .. } | WaitEvent::Killed { tid, .. } if tid == pid => {
                return Ok(Fate::Gone)
            }
            WaitEvent::Exited { tid, .. } | WaitEvent::Killed { tid, .. } => {
                self.process_mut()?.threads.remove(&tid);
            }
            WaitEvent::Signal { tid, signal } => self.absorb_signal(tid, signal, reraise)?,
            WaitEvent::Event { tid, event } => {
                if let Some(thread) = self.process_mut()?.thread_mut(tid) {
                    thread.state = ThreadState::Stopped;
                }
                self.absorb_ptrace_event(tid, event)?
            }
        }
        Ok(Fate::Alive)
    }

    fn absorb_signal(&mut self, tid: Tid, signal: i32, reraise: &mut Reraise) -> Result<()> {
        let process = self.process_mut()?;
        let pid = process.pid;
        if !process.threads.contains_key(&tid) {
            if thread_group_of(tid) != Some(pid) {
                // A forked child's first stop: its fork event releases it.
                self.early_children.push(tid);
                return Ok(());
            }
            // A new thread's first stop (its SIGSTOP), before its clone event.
            process.add_thread(tid, ThreadState::Stopped);
            if signal == libc::SIGSTOP {
                return Ok(());
            }
        }
        let thread = process.thread_mut(tid).ok_or(Error::NoProcess)?;
        thread.state = ThreadState::Stopped;
        if signal == libc::SIGSTOP && thread.sigstop_expected {
            thread.sigstop_expected = false;
            return Ok(());
        }
        if signal == libc::SIGTRAP {
            if self.rewind_if_breakpoint(tid)? {
                // It executes the instruction for real once we are gone.
                return Ok(());
            }
            if ptrace::siginfo(tid).is_ok_and(|i| i.si_code == ptrace::TRAP_TRACE) {
                return Ok(());
            }
        } else if !self.signals.get(signal).pass {
            return Ok(());
        }
        self.keep_pending(tid, signal, reraise);
        Ok(())
    }

    /// `tid` stands at the delivery stop of `signal`: deliver it when the
    /// thread is let go (or raise it again if one is already waiting).
    fn keep_pending(&mut self, tid: Tid, signal: i32, reraise: &mut Reraise) {
        let info = ptrace::siginfo(tid).ok();
        let Some(thread) = self.process.as_mut().and_then(|p| p.thread_mut(tid)) else {
            return;
        };
        if thread.pending_signal == 0 {
            thread.pending_signal = signal;
            thread.pending_siginfo = info;
        } else if thread.pending_signal != signal {
            reraise.push((tid, signal));
        }
    }

    fn absorb_ptrace_event(&mut self, tid: Tid, event: i32) -> Result<()> {
        match event {
            libc::PTRACE_EVENT_CLONE => {
                let new_tid = ptrace::event_message(tid)? as Tid;
                let process = self.process_mut()?;
                if !process.threads.contains_key(&new_tid) {
                    let thread = process.add_thread(new_tid, ThreadState::Running);
                    thread.sigstop_expected = true;
                }
            }
            libc::PTRACE_EVENT_FORK | libc::PTRACE_EVENT_VFORK => {
                let child = ptrace::event_message(tid)? as i32;
                self.release_child(child, event == libc::PTRACE_EVENT_VFORK)?;
            }
            libc::PTRACE_EVENT_EXEC => {
                // The old image and our breakpoints in it are gone.
                self.process_mut()?.reset_threads_after_exec();
                self.breakpoints.forget_sites();
            }
            _ => {}
        }
        Ok(())
    }

    /// A SIGSTOP we sent and have not seen would stop the process after we
    /// are gone: resume each thread that has one coming until it arrives
    /// (it is taken before any user code runs). A thread's pending signal
    /// is delivered on the way, as detaching would have done.
    fn collect_expected_sigstops(&mut self, reraise: &mut Reraise) -> Result<Fate> {
        let expecting: Vec<Tid> = self
            .process()?
            .threads
            .values()
            .filter(|t| t.sigstop_expected && t.state == ThreadState::Stopped)
            .map(|t| t.tid)
            .collect();
        for tid in expecting {
            self.process_mut()?.resume_thread(tid)?;
        }
        loop {
            let waiting = self
                .process()?
                .threads
                .values()
                .any(|t| t.sigstop_expected || t.state == ThreadState::Running);
            if !waiting {
                return Ok(Fate::Alive);
            }
            let Some(event) = ptrace::wait(-1, false)? else {
                continue;
            };
            if self.absorb_before_detach(event, reraise)? == Fate::Gone {
                return Ok(Fate::Gone);
            }
            // A thread stopped for anything but its SIGSTOP goes on to it;
            // what stopped it is pending now (or released, for a fork).
            let tid = event.tid();
            let process = self.process_mut()?;
            let Some(thread) = process.thread_mut(tid) else {
                continue;
            };
            if thread.sigstop_expected && thread.state == ThreadState::Stopped {
                let signal = std::mem::take(&mut thread.pending_signal);
                let info = thread.pending_siginfo.take();
                // Keep the signal for the detach, not delivered here.
                ptrace::cont(tid, 0)?;
                thread.state = ThreadState::Running;
                thread.pending_signal = signal;
                thread.pending_siginfo = info;
            }
        }
    }

    /// Loads the symbols of the attached program: the given executable, or
    /// the one the process runs. A path that does not reach the process's
    /// own file (deleted, replaced, or inside a container's file system)
    /// is read through /proc/PID/exe instead.
    fn load_attached_program(&mut self, pid: i32, program: Option<&Path>) -> Result<()> {
        let exe = PathBuf::from(format!("/proc/{pid}/exe"));
        if let Some(program) = program {
            self.load(program)?;
            if !same_file(program, &exe) {
                self.notices
                    .push_back(crate::engine::Notice::Warning(format!(
                        "{} is not the executable process {pid} runs",
                        program.display()
                    )));
            }
            return Ok(());
        }
        let link = std::fs::read_link(&exe).map_err(|source| Error::Io {
            path: exe.clone(),
            source,
        })?;
        if same_file(&link, &exe) {
            return self.load(&link);
        }
        self.objects.set_static(&exe)?;
        self.program = Some(exe);
        Ok(())
    }
}

/// Refuses a pid that is not a process we may attach to, with a message
/// that says why.
fn check_attachable(pid: i32) -> Result<()> {
    if pid <= 0 || !Path::new(&format!("/proc/{pid}")).exists() {
        return Err(Error::Other(format!("no process {pid}")));
    }
    if thread_group_of(pid) != Some(pid) {
        let leader = thread_group_of(pid).unwrap_or(0);
        return Err(Error::Other(format!(
            "{pid} is a thread of process {leader}; attach to the process"
        )));
    }
    if pid == std::process::id() as i32 {
        return Err(Error::Other("rdbx cannot attach to itself".into()));
    }
    if let Some((tracer, comm)) = tracer_of(pid) {
        return Err(Error::Other(format!(
            "process {pid} is already traced by PID {tracer} ({comm})"
        )));
    }
    // The kernel guards /proc/PID/exe with the same check as ptrace: not
    // being allowed to read it means the attach would be refused too.
    if let Err(e) = std::fs::read_link(format!("/proc/{pid}/exe")) {
        if e.kind() == std::io::ErrorKind::PermissionDenied {
            return Err(refused(pid, Errno::EPERM));
        }
    }
    Ok(())
}

/// The process tracing `tid` (TracerPid in /proc) and its command name.
fn tracer_of(tid: Tid) -> Option<(i32, String)> {
    let status = std::fs::read_to_string(format!("/proc/{tid}/status")).ok()?;
    let tracer: i32 = status
        .lines()
        .find_map(|line| line.strip_prefix("TracerPid:"))?
        .trim()
        .parse()
        .ok()?;
    if tracer == 0 {
        return None;
    }
    let comm = std::fs::read_to_string(format!("/proc/{tracer}/comm")).unwrap_or_default();
    Some((tracer, comm.trim().to_string()))
}

fn task_ids(pid: i32) -> Result<Vec<Tid>> {
    let dir = format!("/proc/{pid}/task");
    let entries = std::fs::read_dir(&dir).map_err(|_| exited_during_attach(pid))?;
    let mut tids: Vec<Tid> = entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    tids.sort_unstable();
    Ok(tids)
}

fn exited_during_attach(pid: i32) -> Error {
    Error::Other(format!("process {pid} exited during attach"))
}

fn refused(pid: i32, errno: Errno) -> Error {
    Error::Other(format!(
        "ptrace refused to attach to process {pid}: {} (another user's process, or kernel.yama.ptrace_scope)",
        errno.desc()
    ))
}

/// Attaches every thread of `pid`, scanning its task list again until a
/// scan finds no thread not attached yet. On failure every thread already
/// attached is let go.
fn attach_all_threads(pid: i32, reraise: &mut Reraise) -> Result<Vec<AttachedThread>> {
    let mut attached: Vec<AttachedThread> = Vec::new();
    // Threads that exited before we could attach them (still listed a while).
    let mut gone: Vec<Tid> = Vec::new();
    loop {
        let tasks = match task_ids(pid) {
            Ok(tasks) => tasks,
            Err(e) => {
                release(&attached);
                return Err(e);
            }
        };
        let new: Vec<Tid> = tasks
            .into_iter()
            .filter(|tid| !gone.contains(tid) && !attached.iter().any(|t| t.tid == *tid))
            .collect();
        if new.is_empty() {
            return Ok(attached);
        }
        for tid in new {
            match attach_thread(pid, tid, reraise) {
                Ok(Some(thread)) => attached.push(thread),
                Ok(None) => gone.push(tid),
                Err(e) => {
                    release(&attached);
                    return Err(e);
                }
            }
        }
    }
}

/// Attaches one thread and waits for it to stop. `None`: the thread (not
/// the leader) exited first.
fn attach_thread(pid: i32, tid: Tid, reraise: &mut Reraise) -> Result<Option<AttachedThread>> {
    match ptrace::attach(tid) {
        Ok(()) => {}
        Err(Error::Os(Errno::ESRCH)) if tid == pid => return Err(exited_during_attach(pid)),
        Err(Error::Os(Errno::ESRCH)) => return Ok(None),
        Err(Error::Os(Errno::EPERM)) => {
            let ours = std::process::id() as i32;
            match tracer_of(tid) {
                // Traced already by us: a clone of an attached thread.
                Some((tracer, _)) if tracer == ours => {}
                Some((tracer, comm)) => {
                    return Err(Error::Other(format!(
                        "process {pid} is already traced by PID {tracer} ({comm})"
                    )))
                }
                None if tid != pid && !Path::new(&format!("/proc/{pid}/task/{tid}")).exists() => {
                    return Ok(None)
                }
                None => return Err(refused(pid, Errno::EPERM)),
            }
        }
        Err(Error::Os(errno)) => return Err(refused(pid, errno)),
        Err(e) => return Err(e),
    }
    let pending = match wait_for_attach_stop(pid, tid, reraise) {
        Ok(Some(pending)) => pending,
        Ok(None) if tid == pid => return Err(exited_during_attach(pid)),
        Ok(None) => return Ok(None),
        Err(e) => {
            let _ = ptrace::detach(tid, 0);
            return Err(e);
        }
    };
    let thread = AttachedThread { tid, pending };
    if let Err(e) = ptrace::set_options(tid, ptrace::OPTIONS) {
        release(std::slice::from_ref(&thread));
        return Err(e);
    }
    Ok(Some(thread))
}

/// Waits until `tid` takes the SIGSTOP of PTRACE_ATTACH. A real signal
/// that stops it first is taken off it (and returned) to be delivered
/// later: suppressed now, the thread goes straight on to our SIGSTOP
/// without running any of its code. `None`: the thread exited.
#[allow(clippy::type_complexity)]
fn wait_for_attach_stop(
    pid: i32,
    tid: Tid,
    reraise: &mut Reraise,
) -> Result<Option<Option<(i32, Option<libc::siginfo_t>)>>> {
    let mut pending = None;
    loop {
        let event = match ptrace::wait(tid, false) {
            Ok(Some(event)) => event,
            Ok(None) => {
                if crate::engine::INTERRUPT.swap(false, std::sync::atomic::Ordering::SeqCst) {
                    return Err(Error::Other(format!(
                        "attach interrupted: thread {tid} of process {pid} did not stop"
                    )));
                }
                continue;
            }
            Err(Error::Os(Errno::ECHILD)) => return Ok(None),
            Err(e) => return Err(e),
        };
        match event {
            WaitEvent::Signal { signal, .. } if signal == libc::SIGSTOP => {
                return Ok(Some(pending));
            }
            WaitEvent::Signal { signal, .. } => {
                if pending.is_none() {
                    pending = Some((signal, ptrace::siginfo(tid).ok()));
                } else {
                    reraise.push((tid, signal));
                }
                ptrace::cont(tid, 0)?;
            }
            WaitEvent::Event { .. } => ptrace::cont(tid, 0)?,
            WaitEvent::Exited { .. } | WaitEvent::Killed { .. } => return Ok(None),
        }
    }
}

/// Detaches threads stopped by an attach that is given up, each with the
/// signal that was taken off it.
fn release(threads: &[AttachedThread]) {
    for thread in threads {
        let signal = match &thread.pending {
            Some((signal, info)) => {
                if let Some(info) = info {
                    let _ = ptrace::set_siginfo(thread.tid, info);
                }
                *signal
            }
            None => 0,
        };
        let _ = ptrace::detach(thread.tid, signal);
    }
}

/// Whether two paths reach the same file (device and inode).
fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}
