//! Attaching to a process that is already running, and detaching from it
//! so that it goes on as if it had never been traced.
//!
//! Every thread is seized (PTRACE_SEIZE, which sets our tracing options
//! at once, so a seized thread's clones, forks and execs are traced from
//! their first instruction) and then stopped with PTRACE_INTERRUPT. No
//! signal is sent to the program: nothing it can observe changes, and a
//! signal that arrives meanwhile is simply the stop of the thread it is
//! for, delivered when the thread runs again. A thread created by a thread
//! not seized yet is found by scanning /proc/PID/task again until a scan
//! finds nothing new.
//!
//! Detaching goes through `rescue::release`, the procedure that also lets
//! the process go when rdbx dies: breakpoint bytes written back, threads
//! moved out of out-of-line slots, every thread detached with the signal
//! it was stopped by and has not received.

use crate::engine::Debugger;
use crate::inferior::{Inferior, Resume, ThreadState};
use crate::machine::thread_group_of;
use crate::ptrace::{self, Tid};
use crate::pump::Event;
use crate::{Error, Result};
use nix::errno::Errno;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

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
        let threads = seize_all_threads(pid)?;
        let mut inferior = match Inferior::attached(pid) {
            Ok(inferior) => inferior,
            Err(e) => {
                release_seized(&threads);
                return Err(e);
            }
        };
        // The leader is t@1; the others are numbered in tid order.
        let leader_first = threads
            .iter()
            .filter(|&&t| t == pid)
            .chain(threads.iter().filter(|&&t| t != pid));
        for &tid in leader_first {
            inferior.add_thread(tid, ThreadState::Running(Resume::Continue));
        }
        crate::rescue::begin(pid, inferior.memory().raw_fd());
        crate::rescue::note_not_passed(self.signals().not_passed_mask());
        self.process = Some(inferior);
        self.current_tid = pid;
        self.selected_frame = 0;
        self.step_resume = None;
        self.deferred.clear();
        self.early_children.clear();
        self.vfork_in_progress = false;
        self.entry_reached = false;
        self.sigint_reported = false;
        self.job_stopped = false;
        self.breakpoints.forget_sites();
        let stopped = self.stop_all().and_then(|()| {
            if !self.process()?.has_thread(pid) {
                return Err(exited_during_attach(pid));
            }
            self.objects.refresh(pid)
        });
        if let Err(e) = stopped {
            let _ = self.detach();
            return Err(e);
        }
        self.insert_loader_breakpoint();
        self.resolve_all_breakpoints();
        Ok(())
    }

    /// Lets go of the process: our breakpoints are taken out of its memory
    /// (they stay defined for a later run or attach), a thread standing in
    /// one of our out-of-line slots is put back on its instruction, and
    /// every thread is detached with the signal it was stopped by and has
    /// not received yet.
    pub fn detach(&mut self) -> Result<()> {
        self.process()?;
        let outcome = self.decide_before_detach();
        self.hold_ends();
        crate::rescue::release();
        self.after_process_gone();
        outcome
    }

    /// Stops every thread and decides what the events kept for later mean,
    /// so that the release delivers exactly the signals the program is owed.
    fn decide_before_detach(&mut self) -> Result<()> {
        self.step_resume = None;
        self.stop_all()?;
        let pid = self.process()?.pid();
        while let Some(event) = self.deferred.pop_front() {
            match event {
                Event::Exited { tid, .. } | Event::Killed { tid, .. } if tid == pid => {
                    return Ok(())
                }
                Event::Signal { tid, signal } => {
                    let pass = self.signals().get(signal).pass;
                    self.process_mut()?
                        .set_pending(tid, if pass { signal } else { 0 }, None);
                }
                Event::Breakpoint { tid } => {
                    if !self.rewind_if_breakpoint(tid)? {
                        // The program's own int3: its SIGTRAP is its own.
                        self.process_mut()?.set_pending(tid, libc::SIGTRAP, None);
                    }
                }
                other => self.absorb(other)?,
            }
        }
        self.process_mut()?.settle_owed_traps()
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
                self.notify(crate::engine::Notice::Warning(format!(
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

/// Seizes every thread of `pid`, scanning its task list again until a
/// scan finds no thread not seized yet. On failure every thread already
/// seized is let go.
fn seize_all_threads(pid: i32) -> Result<Vec<Tid>> {
    let mut seized: Vec<Tid> = Vec::new();
    // Threads that exited before we could seize them (still listed a while).
    let mut gone: Vec<Tid> = Vec::new();
    loop {
        let tasks = match task_ids(pid) {
            Ok(tasks) => tasks,
            Err(e) => {
                release_seized(&seized);
                return Err(e);
            }
        };
        let new: Vec<Tid> = tasks
            .into_iter()
            .filter(|tid| !gone.contains(tid) && !seized.contains(tid))
            .collect();
        if new.is_empty() {
            return Ok(seized);
        }
        for tid in new {
            match seize_thread(pid, tid) {
                Ok(true) => seized.push(tid),
                Ok(false) => gone.push(tid),
                Err(e) => {
                    release_seized(&seized);
                    return Err(e);
                }
            }
        }
    }
}

/// Seizes one thread. `false`: the thread (not the leader) exited first.
fn seize_thread(pid: i32, tid: Tid) -> Result<bool> {
    match ptrace::seize(tid, ptrace::OPTIONS) {
        Ok(()) => Ok(true),
        Err(Error::Os(Errno::ESRCH)) if tid == pid => Err(exited_during_attach(pid)),
        Err(Error::Os(Errno::ESRCH)) => Ok(false),
        Err(Error::Os(Errno::EPERM)) => {
            let ours = std::process::id() as i32;
            match tracer_of(tid) {
                // Traced already by us: a clone of a seized thread.
                Some((tracer, _)) if tracer == ours => Ok(true),
                Some((tracer, comm)) => Err(Error::Other(format!(
                    "process {pid} is already traced by PID {tracer} ({comm})"
                ))),
                None if tid != pid && !Path::new(&format!("/proc/{pid}/task/{tid}")).exists() => {
                    Ok(false)
                }
                None => Err(refused(pid, Errno::EPERM)),
            }
        }
        Err(Error::Os(errno)) => Err(refused(pid, errno)),
        Err(e) => Err(e),
    }
}

/// Lets go of threads seized by an attach that is given up (they were
/// never stopped, so nothing else is to be undone).
fn release_seized(threads: &[Tid]) {
    for &tid in threads {
        // A running tracee cannot be detached: stop it first.
        if ptrace::interrupt(tid).is_ok() {
            let mut status = 0;
            // SAFETY: waitpid for our own tracee into a local.
            unsafe { libc::waitpid(tid, &mut status, libc::__WALL) };
        }
        let _ = ptrace::detach(tid, 0);
    }
}

/// Whether two paths reach the same file (device and inode).
fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}
