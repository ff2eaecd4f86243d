//! A traced process: how it is started, its threads, and the primitive
//! operations on them. Policy (what to do at a breakpoint, how to step)
//! lives in the engine; this module only keeps the kernel's view straight.

use crate::memory::Memory;
use crate::ptrace::{self, Tid, WaitEvent};
use crate::{Error, Result};
use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};

/// How to start the program.
#[derive(Debug, Clone, Default)]
pub struct LaunchSpec {
    pub program: PathBuf,
    pub args: Vec<String>,
    pub stdin: Option<PathBuf>,
    pub stdout: Option<PathBuf>,
    pub append_stdout: bool,
    /// Extra environment variables (LD_PRELOAD for the collector, later).
    pub env: Vec<(String, String)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ThreadState {
    Running,
    Stopped,
}

/// Why a thread is stopped, as `threads` shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopCause {
    Breakpoint,
    Signal(i32),
    Step,
    Stopped,
}

#[derive(Debug, Clone)]
pub struct Thread {
    pub tid: Tid,
    /// dbx's `t@N` number, in order of creation.
    pub number: u32,
    pub state: ThreadState,
    pub cause: StopCause,
    /// A signal to deliver when the thread is next resumed.
    pub pending_signal: i32,
    /// Its siginfo, when it was taken from a stop other than its own
    /// delivery stop (so it must be set again before delivery).
    pub pending_siginfo: Option<libc::siginfo_t>,
    /// We sent SIGSTOP and have not seen it yet; when it arrives it is ours.
    pub sigstop_expected: bool,
    /// The thread trapped at this breakpoint site itself: resuming must
    /// step past it. A thread that merely stands on a site (stopped there
    /// by us, or rewound after a trap that raced with stopping) executes
    /// the int3 again so that its hit is not lost.
    pub pass_at: Option<u64>,
}

pub struct Inferior {
    pub pid: i32,
    pub memory: Memory,
    pub threads: BTreeMap<Tid, Thread>,
    next_thread_number: u32,
    /// Started by us (killed on quit) rather than attached to.
    pub started_here: bool,
}

impl Inferior {
    /// Starts `spec.program` under ptrace, stopped at its first
    /// instruction (the dynamic loader's entry), with ASLR disabled like gdb.
    pub fn spawn(spec: &LaunchSpec) -> Result<Inferior> {
        let mut command = Command::new(&spec.program);
        command.args(&spec.args);
        for (key, value) in &spec.env {
            command.env(key, value);
        }
        if let Some(path) = &spec.stdin {
            command.stdin(open_file(path, OpenOptions::new().read(true))?);
        } else {
            command.stdin(Stdio::inherit());
        }
        if let Some(path) = &spec.stdout {
            let mut options = OpenOptions::new();
            options.create(true);
            if spec.append_stdout {
                options.append(true);
            } else {
                options.write(true).truncate(true);
            }
            command.stdout(open_file(path, &options)?);
        }
        // SAFETY: the closure only makes two system calls, which is
        // allowed between fork and exec.
        unsafe {
            command.pre_exec(|| {
                nix::sys::personality::set(nix::sys::personality::Persona::ADDR_NO_RANDOMIZE)
                    .map_err(std::io::Error::from)?;
                nix::sys::ptrace::traceme().map_err(std::io::Error::from)?;
                Ok(())
            });
        }
        let child = command.spawn().map_err(|source| Error::Io {
            path: spec.program.clone(),
            source,
        })?;
        let pid = child.id() as i32;
        // The Child handle is not used again: we reap the process ourselves.
        drop(child);
        match ptrace::wait(pid, false)? {
            Some(WaitEvent::Signal { signal, .. }) if signal == libc::SIGTRAP => {}
            other => {
                return Err(Error::Other(format!(
                    "the program did not stop after exec ({other:?})"
                )))
            }
        }
        ptrace::set_options(pid, ptrace::OPTIONS | libc::PTRACE_O_EXITKILL)?;
        let mut inferior = Inferior {
            pid,
            memory: Memory::open(pid)?,
            threads: BTreeMap::new(),
            next_thread_number: 1,
            started_here: true,
        };
        inferior.add_thread(pid, ThreadState::Stopped);
        Ok(inferior)
    }

    /// A process we attached to (see `Debugger::attach`), no thread known yet.
    pub fn attached(pid: i32) -> Result<Inferior> {
        Ok(Inferior {
            pid,
            memory: Memory::open(pid)?,
            threads: BTreeMap::new(),
            next_thread_number: 1,
            started_here: false,
        })
    }

    pub fn add_thread(&mut self, tid: Tid, state: ThreadState) -> &mut Thread {
        if !self.threads.contains_key(&tid) {
            let number = self.next_thread_number;
            self.next_thread_number += 1;
            self.threads.insert(
                tid,
                Thread {
                    tid,
                    number,
                    state,
                    cause: StopCause::Stopped,
                    pending_signal: 0,
                    pending_siginfo: None,
                    sigstop_expected: false,
                    pass_at: None,
                },
            );
        }
        self.threads.get_mut(&tid).expect("present")
    }

    /// After exec only the leader survives, under the process id.
    pub fn reset_threads_after_exec(&mut self) {
        self.threads.retain(|&tid, _| tid == self.pid);
        if self.threads.is_empty() {
            self.next_thread_number = 1;
            self.add_thread(self.pid, ThreadState::Stopped);
        }
        for thread in self.threads.values_mut() {
            thread.number = 1;
            thread.pass_at = None;
        }
        self.next_thread_number = 2;
        // The address space is new: /proc/PID/mem must be opened again.
        if let Ok(memory) = Memory::open(self.pid) {
            self.memory = memory;
        }
    }

    pub fn thread(&self, tid: Tid) -> Option<&Thread> {
        self.threads.get(&tid)
    }

    pub fn thread_mut(&mut self, tid: Tid) -> Option<&mut Thread> {
        self.threads.get_mut(&tid)
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

    /// Resumes one stopped thread with its pending signal.
    pub fn resume_thread(&mut self, tid: Tid) -> Result<()> {
        let Some(thread) = self.threads.get_mut(&tid) else {
            return Ok(());
        };
        if thread.state != ThreadState::Stopped {
            return Ok(());
        }
        let signal = std::mem::take(&mut thread.pending_signal);
        if let Some(info) = thread.pending_siginfo.take() {
            if signal != 0 {
                ptrace::set_siginfo(tid, &info)?;
            }
        }
        match ptrace::cont(tid, signal) {
            Ok(()) => {
                thread.state = ThreadState::Running;
                Ok(())
            }
            // The thread died under us (ESRCH): its exit is reported by wait.
            Err(Error::Os(nix::errno::Errno::ESRCH)) => {
                thread.state = ThreadState::Running;
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    /// Kills the process and reaps every task, so nothing is left behind.
    /// Only for a process we started: one we attached to is detached
    /// instead (`Debugger::kill` does that).
    pub fn kill(&mut self) {
        // SAFETY: plain kill(2).
        unsafe { libc::kill(self.pid, libc::SIGKILL) };
        loop {
            match ptrace::wait(-1, false) {
                Ok(Some(WaitEvent::Exited { tid, .. }))
                | Ok(Some(WaitEvent::Killed { tid, .. }))
                    if tid == self.pid =>
                {
                    break
                }
                Ok(_) => {}
                Err(_) => break,
            }
        }
        self.threads.clear();
    }
}

fn open_file(path: &PathBuf, options: &OpenOptions) -> Result<File> {
    options.open(path).map_err(|source| Error::Io {
        path: path.clone(),
        source,
    })
}
