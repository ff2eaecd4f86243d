//! A traced process: how it is started, its threads, and the primitive
//! operations on them. This module owns every thread's state; the engine
//! changes it only through the transitions below (stopped, resumed,
//! interrupted, a signal kept for delivery), so what we believe about a
//! thread and what the kernel did to it cannot drift apart.

use crate::memory::Memory;
use crate::ptrace::{self, Tid};
use crate::{Error, Result};
use std::collections::BTreeMap;
use std::ffi::{CString, OsStr};
use std::fs::{File, OpenOptions};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// How to start the program.
#[derive(Debug, Clone, Default)]
pub struct LaunchSpec {
    pub program: PathBuf,
    pub args: Vec<String>,
    pub stdin: Option<PathBuf>,
    pub stdout: Option<PathBuf>,
    pub append_stdout: bool,
    /// Extra environment variables (LD_PRELOAD for the collector).
    pub env: Vec<(String, String)>,
}

/// How a thread was last set running: a stale interrupt stop (see
/// [`Inferior::interrupt`]) sets it running again the same way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resume {
    Continue,
    Step,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ThreadState {
    Running(Resume),
    /// In a ptrace-stop we have seen.
    Stopped,
}

/// Why a thread is stopped, as `threads` shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopCause {
    Breakpoint,
    Signal(i32),
    Step,
    /// Stopped by job control (`kill -STOP`, Ctrl-Z).
    JobControl(i32),
    /// Stopped because another thread stopped, or by Ctrl-C.
    Stopped,
}

/// A signal to deliver when the thread is next resumed, with its siginfo
/// when that must be set again before delivery (it was taken from a stop
/// other than the thread's own delivery stop of it).
#[derive(Debug, Clone, Copy)]
pub struct PendingSignal {
    pub signal: i32,
    pub info: Option<libc::siginfo_t>,
}

#[derive(Debug, Clone)]
pub struct Thread {
    tid: Tid,
    number: u32,
    state: ThreadState,
    cause: StopCause,
    pending: Option<PendingSignal>,
    /// PTRACE_INTERRUPT was sent and the thread has not stopped since.
    interrupt_sent: bool,
    /// The thread trapped at this breakpoint site itself: resuming must
    /// step past it. A thread that merely stands on a site (stopped there
    /// by us, or rewound after a trap that raced with stopping) executes
    /// the int3 again so that its hit is not lost.
    pass_at: Option<u64>,
    /// A perf event's SIGTRAP held back until the system call the thread
    /// is in returns (see [`Inferior::keep_perf_trap`]).
    owed: Option<libc::siginfo_t>,
}

impl Thread {
    pub fn tid(&self) -> Tid {
        self.tid
    }

    /// dbx's `t@N` number, in order of creation.
    pub fn number(&self) -> u32 {
        self.number
    }

    pub fn state(&self) -> ThreadState {
        self.state
    }

    pub fn is_stopped(&self) -> bool {
        self.state == ThreadState::Stopped
    }

    pub fn cause(&self) -> StopCause {
        self.cause
    }

    /// The signal the thread gets when it is resumed (0 for none).
    pub fn pending_signal(&self) -> i32 {
        self.pending.map_or(0, |p| p.signal)
    }
}

pub struct Inferior {
    pid: i32,
    memory: Memory,
    threads: BTreeMap<Tid, Thread>,
    next_thread_number: u32,
    /// Started by us rather than attached to.
    started_here: bool,
}

impl Inferior {
    /// Starts `spec.program` traced (PTRACE_SEIZE with our options), stopped
    /// at its first instruction (the dynamic loader's entry) with ASLR
    /// disabled as gdb does.
    ///
    /// The child is made with fork and execve by hand rather than with
    /// `std::process::Command`: it must wait between the fork and the exec
    /// until we have seized it, and `Command::spawn` returns only after the
    /// exec.
    pub(crate) fn spawn(spec: &LaunchSpec) -> Result<Inferior> {
        let child = ChildSetup::prepare(spec)?;
        let pid = child.fork()?;
        let memory = Memory::open(pid).inspect_err(|_| kill_and_reap(pid))?;
        let mut inferior = Inferior {
            pid,
            memory,
            threads: BTreeMap::new(),
            next_thread_number: 1,
            started_here: true,
        };
        inferior.add_thread(pid, ThreadState::Stopped);
        Ok(inferior)
    }

    /// A process we attached to (see `Debugger::attach`), no thread known yet.
    pub(crate) fn attached(pid: i32) -> Result<Inferior> {
        Ok(Inferior {
            pid,
            memory: Memory::open(pid)?,
            threads: BTreeMap::new(),
            next_thread_number: 1,
            started_here: false,
        })
    }

    pub fn pid(&self) -> i32 {
        self.pid
    }

    pub fn memory(&self) -> &Memory {
        &self.memory
    }

    /// Started by rdbx (killed by `kill`), rather than attached to.
    pub fn started_here(&self) -> bool {
        self.started_here
    }

    pub fn threads(&self) -> impl Iterator<Item = &Thread> {
        self.threads.values()
    }

    pub fn thread_count(&self) -> usize {
        self.threads.len()
    }

    pub fn thread(&self, tid: Tid) -> Option<&Thread> {
        self.threads.get(&tid)
    }

    pub fn has_thread(&self, tid: Tid) -> bool {
        self.threads.contains_key(&tid)
    }

    pub fn thread_by_number(&self, number: u32) -> Option<&Thread> {
        self.threads.values().find(|t| t.number == number)
    }

    pub fn regs(&self, tid: Tid) -> Result<libc::user_regs_struct> {
        ptrace::get_regs(tid)
    }

    pub fn set_regs(&self, tid: Tid, regs: &libc::user_regs_struct) -> Result<()> {
        ptrace::set_regs(tid, regs)
    }

    pub fn pc(&self, tid: Tid) -> Result<u64> {
        Ok(self.regs(tid)?.rip)
    }

    // ----- transitions ---------------------------------------------------

    /// Adds a thread (numbered in order of creation); an existing one is kept.
    pub(crate) fn add_thread(&mut self, tid: Tid, state: ThreadState) {
        if self.threads.contains_key(&tid) {
            return;
        }
        let number = self.next_thread_number;
        self.next_thread_number += 1;
        self.threads.insert(
            tid,
            Thread {
                tid,
                number,
                state,
                cause: StopCause::Stopped,
                pending: None,
                interrupt_sent: false,
                pass_at: None,
                owed: None,
            },
        );
    }

    pub(crate) fn remove_thread(&mut self, tid: Tid) -> Option<Thread> {
        crate::rescue::forget_thread(tid);
        self.threads.remove(&tid)
    }

    /// The kernel reported a stop of `tid`. Any stop consumes an
    /// interrupt request made before it.
    pub(crate) fn note_stopped(&mut self, tid: Tid) {
        if let Some(thread) = self.threads.get_mut(&tid) {
            thread.state = ThreadState::Stopped;
            thread.interrupt_sent = false;
        }
    }

    pub(crate) fn set_cause(&mut self, tid: Tid, cause: StopCause) {
        if let Some(thread) = self.threads.get_mut(&tid) {
            thread.cause = cause;
        }
    }

    /// Keeps `signal` for delivery at the thread's next resume, replacing
    /// any other (0 cancels it).
    pub(crate) fn set_pending(&mut self, tid: Tid, signal: i32, info: Option<libc::siginfo_t>) {
        if let Some(thread) = self.threads.get_mut(&tid) {
            thread.pending = (signal != 0).then_some(PendingSignal { signal, info });
        }
        crate::rescue::note_pending(tid, signal, info.as_ref());
    }

    pub(crate) fn take_pending(&mut self, tid: Tid) -> Option<PendingSignal> {
        let taken = self.threads.get_mut(&tid).and_then(|t| t.pending.take());
        if taken.is_some() {
            crate::rescue::note_pending(tid, 0, None);
        }
        taken
    }

    pub(crate) fn pending(&self, tid: Tid) -> Option<PendingSignal> {
        self.threads.get(&tid).and_then(|t| t.pending)
    }

    pub(crate) fn set_pass_at(&mut self, tid: Tid, address: Option<u64>) {
        if let Some(thread) = self.threads.get_mut(&tid) {
            thread.pass_at = address;
        }
    }

    pub(crate) fn take_pass_at(&mut self, tid: Tid) -> Option<u64> {
        self.threads.get_mut(&tid).and_then(|t| t.pass_at.take())
    }

    pub(crate) fn pass_at(&self, tid: Tid) -> Option<u64> {
        self.threads.get(&tid).and_then(|t| t.pass_at)
    }

    /// Sets a stopped thread running (`how`), delivering its pending
    /// signal. A thread already running is left alone.
    pub(crate) fn resume(&mut self, tid: Tid, how: Resume) -> Result<()> {
        if self
            .thread(tid)
            .is_none_or(|t| t.state != ThreadState::Stopped)
        {
            return Ok(());
        }
        let follow_syscall = self.settle_owed_trap(tid)? && how == Resume::Continue;
        let Some(thread) = self.threads.get_mut(&tid) else {
            return Ok(());
        };
        let pending = thread.pending.take();
        let perf_trap = pending
            .and_then(|p| p.info)
            .filter(|info| info.si_signo == libc::SIGTRAP && ptrace::is_perf_trap(info));
        if how == Resume::Step && perf_trap.is_some() {
            // A step must not run the collector's handler: the trap waits
            // for a resume that is not a step.
            thread.pending = pending;
            return match ptrace::single_step(tid, 0) {
                Ok(()) | Err(Error::Os(nix::errno::Errno::ESRCH)) => {
                    thread.state = ThreadState::Running(how);
                    Ok(())
                }
                Err(e) => Err(e),
            };
        }
        let mut signal = pending.map_or(0, |p| p.signal);
        if signal != 0 && !ptrace::in_signal_delivery_stop(tid) {
            // A signal given to a resume is delivered only from a
            // signal-delivery stop; from any other stop (an interrupt) it
            // is queued again instead, without its original siginfo (a
            // perf event's SIGTRAP keeps its payload, as SI_QUEUE).
            match &perf_trap {
                Some(info) => ptrace::requeue_perf_trap(self.pid, tid, info)?,
                None => ptrace::tgkill(self.pid, tid, signal)?,
            }
            signal = 0;
        } else if let Some(info) = pending.and_then(|p| p.info) {
            ptrace::set_siginfo(tid, &info)?;
        }
        let resumed = match how {
            Resume::Continue if follow_syscall => ptrace::syscall(tid, signal),
            Resume::Continue => ptrace::cont(tid, signal),
            Resume::Step => ptrace::single_step(tid, signal),
        };
        match resumed {
            // The thread died under us (ESRCH): its end is reported by wait.
            Ok(()) | Err(Error::Os(nix::errno::Errno::ESRCH)) => {
                thread.state = ThreadState::Running(how);
                if signal != 0 {
                    crate::rescue::note_pending(tid, 0, None);
                }
                Ok(())
            }
            Err(e) => {
                thread.pending = pending;
                Err(e)
            }
        }
    }

    /// Delivers a perf event's SIGTRAP (`info`) to a thread stopped in its
    /// signal-delivery stop for it, and lets the thread run on: the short
    /// way for the one stop off-CPU profiling makes at every switch (one
    /// PTRACE_CONT; the kernel delivers the stop's own siginfo). A signal
    /// already waiting for the thread goes first, the trap queued again;
    /// a system call about to be restarted goes first too (see
    /// [`Inferior::keep_perf_trap`]).
    pub(crate) fn deliver_perf_trap(&mut self, tid: Tid, info: &libc::siginfo_t) -> Result<()> {
        if self
            .thread(tid)
            .is_none_or(|t| t.state != ThreadState::Stopped)
        {
            return Ok(());
        }
        if ptrace::delivery_cuts_short(&self.regs(tid)?, info) {
            self.owe_perf_trap(tid, info);
            return self.resume(tid, Resume::Continue);
        }
        let Some(thread) = self.threads.get_mut(&tid) else {
            return Ok(());
        };
        if thread.pending.is_some() {
            ptrace::requeue_perf_trap(self.pid, tid, info)?;
            return self.resume(tid, Resume::Continue);
        }
        match ptrace::cont(tid, libc::SIGTRAP) {
            Ok(()) | Err(Error::Os(nix::errno::Errno::ESRCH)) => {
                thread.state = ThreadState::Running(Resume::Continue);
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    /// Keeps a perf event's SIGTRAP (`info`) that `tid` is stopped in its
    /// signal-delivery stop for, to be delivered at a later resume. When
    /// the thread is in a system call the kernel is about to restart (the
    /// stop that let the trap through interrupted a sleep or a poll),
    /// delivering it would run the handler first and the call would fail
    /// with EINTR where it would have gone on by itself (see
    /// ptrace::delivery_cuts_short): the trap is then owed, and the
    /// thread followed with PTRACE_SYSCALL until the restarted call has
    /// returned (see [`Inferior::resume`]), where the collector gets its
    /// trap as it would have without rdbx. True when the trap is owed.
    pub(crate) fn keep_perf_trap(&mut self, tid: Tid, info: &libc::siginfo_t) -> Result<bool> {
        let owed = ptrace::delivery_cuts_short(&self.regs(tid)?, info);
        if owed {
            self.owe_perf_trap(tid, info);
        } else {
            self.set_pending(tid, libc::SIGTRAP, Some(*info));
        }
        Ok(owed)
    }

    /// Two traps owed at once (a counter's and off-CPU's): the kernel
    /// would keep one SIGTRAP too. Off-CPU's is kept, since its event
    /// stays off until its trap is handled; a counter's events merge
    /// into its next record.
    fn owe_perf_trap(&mut self, tid: Tid, info: &libc::siginfo_t) {
        if let Some(thread) = self.threads.get_mut(&tid) {
            let keep_owed = thread
                .owed
                .is_some_and(|owed| ptrace::perf_data(&owed) == ptrace::OFFCPU_TAG);
            if !keep_owed {
                thread.owed = Some(*info);
            }
        }
    }

    /// For a thread that owes a perf trap: true while it is still entering
    /// or about to restart its system call (it runs on with
    /// PTRACE_SYSCALL, so its next stop is at that call's entry or exit);
    /// otherwise the call has returned and the trap is pending for this
    /// resume (queued again if another signal is), false.
    fn settle_owed_trap(&mut self, tid: Tid) -> Result<bool> {
        let Some(info) = self.threads.get(&tid).and_then(|t| t.owed) else {
            return Ok(false);
        };
        if self.in_system_call(tid)? {
            return Ok(true);
        }
        let pending = self.threads.get_mut(&tid).and_then(|thread| {
            thread.owed = None;
            thread.pending
        });
        match pending {
            None => self.set_pending(tid, libc::SIGTRAP, Some(info)),
            Some(_) => ptrace::requeue_perf_trap(self.pid, tid, &info)?,
        }
        Ok(false)
    }

    /// Before a detach: each trap owed by a thread whose system call has
    /// returned is pending again (the detach delivers it); one still owed
    /// is dropped (the collector finds it lost).
    pub(crate) fn settle_owed_traps(&mut self) -> Result<()> {
        let owing: Vec<Tid> = self
            .threads
            .values()
            .filter(|t| t.owed.is_some())
            .map(|t| t.tid)
            .collect();
        for tid in owing {
            self.settle_owed_trap(tid)?;
        }
        Ok(())
    }

    /// Whether `tid` is stopped at a system call's entry, or in one the
    /// kernel restarts when it resumes.
    fn in_system_call(&self, tid: Tid) -> Result<bool> {
        Ok(ptrace::at_syscall_entry(tid) || ptrace::restart_pending(&self.regs(tid)?))
    }

    /// Whether the thread owes a perf trap and is still in its system call.
    fn owes_in_system_call(&self, tid: Tid) -> bool {
        self.thread(tid).is_some_and(|t| t.owed.is_some())
            && self.in_system_call(tid).unwrap_or(false)
    }

    /// Sets a stopped thread running (`how`) without delivering its pending
    /// signal, which is kept for a later resume (a single-step made again
    /// after a signal arrived before the instruction ran). A thread that
    /// owes a perf trap is followed to its system call's return as by
    /// [`Inferior::resume`].
    pub(crate) fn resume_keeping_pending(&mut self, tid: Tid, how: Resume) -> Result<()> {
        let follow_syscall = how == Resume::Continue && self.owes_in_system_call(tid);
        let Some(thread) = self.threads.get_mut(&tid) else {
            return Ok(());
        };
        let resumed = match how {
            Resume::Continue if follow_syscall => ptrace::syscall(tid, 0),
            Resume::Continue => ptrace::cont(tid, 0),
            Resume::Step => ptrace::single_step(tid, 0),
        };
        match resumed {
            Ok(()) | Err(Error::Os(nix::errno::Errno::ESRCH)) => {
                thread.state = ThreadState::Running(how);
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    /// Leaves a thread in its group-stop, as job control wants, while still
    /// hearing of it (PTRACE_LISTEN): SIGCONT or an interrupt stops it again.
    pub(crate) fn listen(&mut self, tid: Tid) -> Result<()> {
        ptrace::listen(tid)?;
        if let Some(thread) = self.threads.get_mut(&tid) {
            thread.state = ThreadState::Running(Resume::Continue);
        }
        Ok(())
    }

    /// Asks a running thread to stop (PTRACE_INTERRUPT), once. True when
    /// a stop of it is to come.
    pub(crate) fn interrupt(&mut self, tid: Tid) -> bool {
        let Some(thread) = self.threads.get_mut(&tid) else {
            return false;
        };
        if thread.state == ThreadState::Stopped {
            return false;
        }
        if !thread.interrupt_sent {
            // ESRCH: it is exiting; its end is reported by wait.
            thread.interrupt_sent = ptrace::interrupt(tid).is_ok();
        }
        thread.interrupt_sent
    }

    pub(crate) fn running(&self) -> Vec<Tid> {
        self.threads
            .values()
            .filter(|t| t.state != ThreadState::Stopped)
            .map(|t| t.tid)
            .collect()
    }

    /// A thread set running and not seen stopped since (a Ctrl-C stops it
    /// to end the pump's wait).
    pub(crate) fn first_running(&self) -> Option<Tid> {
        self.threads
            .values()
            .find(|t| t.state != ThreadState::Stopped)
            .map(|t| t.tid)
    }

    /// After exec only the leader survives, under the process id.
    pub(crate) fn reset_threads_after_exec(&mut self) {
        self.threads.retain(|&tid, _| tid == self.pid);
        self.next_thread_number = 1;
        if self.threads.is_empty() {
            self.add_thread(self.pid, ThreadState::Stopped);
        }
        for thread in self.threads.values_mut() {
            thread.number = 1;
            thread.pass_at = None;
            // The new image has none of the collector's events.
            thread.owed = None;
            thread.state = ThreadState::Stopped;
        }
        self.next_thread_number = 2;
        // The address space is new: /proc/PID/mem must be opened again.
        if let Ok(memory) = Memory::open(self.pid) {
            self.memory = memory;
        }
    }

    /// Every thread is gone (the process ended).
    pub(crate) fn forget_threads(&mut self) {
        self.threads.clear();
    }
}

/// Kills a child we could not finish setting up, and reaps it.
fn kill_and_reap(pid: i32) {
    // SAFETY: kill and waitpid on our own child.
    unsafe {
        libc::kill(pid, libc::SIGKILL);
        libc::waitpid(pid, std::ptr::null_mut(), libc::__WALL);
    }
}

/// Everything the child needs between fork and exec, made before the
/// fork: after it, the child may only make async-signal-safe calls.
struct ChildSetup {
    program: CString,
    argv: Vec<CString>,
    envp: Vec<CString>,
    stdin: Option<File>,
    stdout: Option<File>,
    path: PathBuf,
}

impl ChildSetup {
    fn prepare(spec: &LaunchSpec) -> Result<ChildSetup> {
        let c_string = |bytes: &[u8]| {
            CString::new(bytes).map_err(|_| {
                Error::Other(format!(
                    "{}: a NUL byte in the program's arguments or environment",
                    spec.program.display()
                ))
            })
        };
        let program = c_string(spec.program.as_os_str().as_bytes())?;
        let mut argv = vec![program.clone()];
        for arg in &spec.args {
            argv.push(c_string(arg.as_bytes())?);
        }
        let mut env: Vec<(std::ffi::OsString, std::ffi::OsString)> = std::env::vars_os()
            .filter(|(key, _)| !spec.env.iter().any(|(k, _)| OsStr::new(k) == key))
            .collect();
        env.extend(spec.env.iter().map(|(k, v)| (k.into(), v.into())));
        let envp = env
            .iter()
            .map(|(k, v)| {
                let mut entry = k.as_bytes().to_vec();
                entry.push(b'=');
                entry.extend_from_slice(v.as_bytes());
                c_string(&entry)
            })
            .collect::<Result<Vec<_>>>()?;
        let stdin = match &spec.stdin {
            Some(path) => Some(open_file(path, OpenOptions::new().read(true))?),
            None => None,
        };
        let stdout = match &spec.stdout {
            Some(path) => {
                let mut options = OpenOptions::new();
                options.create(true);
                if spec.append_stdout {
                    options.append(true);
                } else {
                    options.write(true).truncate(true);
                }
                Some(open_file(path, &options)?)
            }
            None => None,
        };
        Ok(ChildSetup {
            program,
            argv,
            envp,
            stdin,
            stdout,
            path: spec.program.clone(),
        })
    }

    /// Forks; the child waits until it is seized, then execs. Returns the
    /// child's pid once it stands at the exec stop.
    fn fork(&self) -> Result<i32> {
        let (go_read, go_write) = cloexec_pipe()?;
        let (failed_read, failed_write) = cloexec_pipe()?;
        let argv = null_terminated(&self.argv);
        let envp = null_terminated(&self.envp);
        let stdin = self.stdin.as_ref().map(|f| f.as_raw_fd());
        let stdout = self.stdout.as_ref().map(|f| f.as_raw_fd());
        // SAFETY: the child branch below only makes async-signal-safe
        // system calls on memory prepared before the fork, then execs or
        // _exits.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(Error::Os(nix::errno::Errno::last()));
        }
        if pid == 0 {
            // SAFETY: see above.
            unsafe {
                exec_in_child(
                    go_read.as_raw_fd(),
                    failed_write.as_raw_fd(),
                    stdin,
                    stdout,
                    &self.program,
                    &argv,
                    &envp,
                )
            }
        }
        drop(go_read);
        drop(failed_write);
        if let Err(e) = ptrace::seize(pid, ptrace::OPTIONS | libc::PTRACE_O_EXITKILL) {
            kill_and_reap(pid);
            return Err(e);
        }
        // Let it exec, then learn whether the exec worked: the pipe closes
        // on a successful exec, or carries the errno of a failed one.
        write_byte(&go_write);
        drop(go_write);
        let mut errno = [0u8; 4];
        let got = read_full(&failed_read, &mut errno);
        if got == errno.len() {
            kill_and_reap(pid);
            let error = std::io::Error::from_raw_os_error(i32::from_ne_bytes(errno));
            return Err(Error::Io {
                path: self.path.clone(),
                source: error,
            });
        }
        wait_for_exec_stop(pid, &self.path)?;
        Ok(pid)
    }
}

/// The child's side: wait for the parent's go, set up, exec.
///
/// # Safety
/// Only to be called in a freshly forked child.
unsafe fn exec_in_child(
    go: i32,
    failed: i32,
    stdin: Option<i32>,
    stdout: Option<i32>,
    program: &CString,
    argv: &[*const libc::c_char],
    envp: &[*const libc::c_char],
) -> ! {
    let mut byte = 0u8;
    // The parent writes once it has seized us (or closes the pipe on failure).
    while libc::read(go, (&mut byte as *mut u8).cast(), 1) < 0 {}
    if let Some(fd) = stdin {
        libc::dup2(fd, 0);
    }
    if let Some(fd) = stdout {
        libc::dup2(fd, 1);
    }
    // rdbx's own signal setup must not leak into the program: the Rust
    // runtime ignores SIGPIPE, and ignored signals survive exec.
    let mut all: libc::sigset_t = std::mem::zeroed();
    libc::sigemptyset(&mut all);
    libc::sigprocmask(libc::SIG_SETMASK, &all, std::ptr::null_mut());
    libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    libc::personality(libc::ADDR_NO_RANDOMIZE as libc::c_ulong);
    libc::execve(program.as_ptr(), argv.as_ptr(), envp.as_ptr());
    let errno = *libc::__errno_location();
    let bytes = errno.to_ne_bytes();
    libc::write(failed, bytes.as_ptr().cast(), bytes.len());
    libc::_exit(127)
}

/// Waits for the PTRACE_EVENT_EXEC stop of a just-started child. Nothing
/// else is traced yet, so this wait for one task is the pump's business
/// only in name: it goes through it all the same.
fn wait_for_exec_stop(pid: i32, path: &Path) -> Result<()> {
    let pump = crate::pump::Pump::new()?;
    loop {
        match pump.wait(crate::pump::Wait::task(pid))? {
            crate::pump::Wake::Event(crate::pump::Event::Exec { .. }) => return Ok(()),
            crate::pump::Wake::Event(event) if event.is_end() => {
                return Err(Error::Other(format!(
                    "{}: the program ended before it started ({event:?})",
                    path.display()
                )))
            }
            // Its first stop may come before the exec (a signal): let it go on.
            crate::pump::Wake::Event(_) => ptrace::cont(pid, 0)?,
            _ => {}
        }
    }
}

fn null_terminated(strings: &[CString]) -> Vec<*const libc::c_char> {
    strings
        .iter()
        .map(|s| s.as_ptr())
        .chain(std::iter::once(std::ptr::null()))
        .collect()
}

fn cloexec_pipe() -> Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 writes two descriptors into the array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(Error::Os(nix::errno::Errno::last()));
    }
    // SAFETY: both descriptors are new and ours.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

fn write_byte(fd: &OwnedFd) {
    let byte = 1u8;
    // SAFETY: write of one byte from a live local.
    unsafe { libc::write(fd.as_raw_fd(), (&byte as *const u8).cast(), 1) };
}

/// Reads until `buf` is full or end of file; returns how much was read.
fn read_full(fd: &OwnedFd, buf: &mut [u8]) -> usize {
    let mut done = 0;
    while done < buf.len() {
        // SAFETY: reads into the live remainder of `buf`.
        let n = unsafe {
            libc::read(
                fd.as_raw_fd(),
                buf[done..].as_mut_ptr().cast(),
                buf.len() - done,
            )
        };
        if n > 0 {
            done += n as usize;
        } else if n == 0 || nix::errno::Errno::last() != nix::errno::Errno::EINTR {
            break;
        }
    }
    done
}

fn open_file(path: &Path, options: &OpenOptions) -> Result<File> {
    options.open(path).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })
}
