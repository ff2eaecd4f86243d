//! Injected function calls: the stopped program runs one of its own
//! functions for the debugger (dbx's interactive function call), e.g. the
//! collector library's `__rdbx_collector_start`.
//!
//! The calling thread gets a fresh frame below its red zone with a return
//! address pointing at an `int3` written over the executable's entry point
//! (which no thread executes again once the program has started), runs
//! alone until that trap, and gets every register back. Signals that
//! arrive meanwhile (the profiler's SIGPROF) are delivered to the program;
//! a crash, a breakpoint or Ctrl-C inside the call abandons it.

use crate::engine::Debugger;
use crate::inferior::ThreadState;
use crate::ptrace::{self, Tid, WaitEvent};
use crate::{Error, Result};

/// The System V integer argument registers, in order.
const MAX_INTEGER_ARGS: usize = 6;
/// Bytes below the stack pointer a leaf function may use without moving it.
const RED_ZONE: u64 = 128;
/// Signals that mean the called function crashed.
const CRASH_SIGNALS: [i32; 6] = [
    libc::SIGSEGV,
    libc::SIGBUS,
    libc::SIGILL,
    libc::SIGFPE,
    libc::SIGABRT,
    libc::SIGSYS,
];

/// One argument of an injected call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallArg {
    Integer(u64),
    /// Copied (with a terminating NUL) onto the call's stack; the function
    /// gets its address. Valid only during the call.
    CString(Vec<u8>),
}

/// What the thread was doing before the call, to be put back after it.
struct SavedThread {
    regs: libc::user_regs_struct,
    fpregs: Option<libc::user_fpregs_struct>,
    pending_signal: i32,
    pending_siginfo: Option<libc::siginfo_t>,
    pass_at: Option<u64>,
    /// The byte under the return trap (the entry point).
    trap: u64,
    trap_byte: u8,
}

impl Debugger {
    /// Calls the function at `address` in the stopped thread `tid` with
    /// integer arguments (at most six) and returns its `rax`. Registers,
    /// the thread's pending signal and memory under the trap are restored;
    /// the other threads stay stopped.
    pub fn call_function(&mut self, tid: Tid, address: u64, args: &[u64]) -> Result<u64> {
        let args: Vec<CallArg> = args.iter().map(|&a| CallArg::Integer(a)).collect();
        self.call_function_with(tid, address, &args)
    }

    /// Like `call_function`, with C strings among the arguments.
    pub fn call_function_with(&mut self, tid: Tid, address: u64, args: &[CallArg]) -> Result<u64> {
        if args.len() > MAX_INTEGER_ARGS {
            return Err(Error::Other(format!(
                "a call takes at most {MAX_INTEGER_ARGS} arguments"
            )));
        }
        let stopped = self
            .process()?
            .thread(tid)
            .is_some_and(|t| t.state == ThreadState::Stopped);
        if !stopped {
            return Err(Error::Other(format!("thread {tid} is not stopped")));
        }
        let saved = self.save_thread(tid)?;
        let outcome = self
            .set_up_call(tid, address, args, &saved)
            .and_then(|()| self.run_call(tid, saved.trap));
        match outcome {
            Ok(value) => {
                self.restore_thread(tid, &saved)?;
                Ok(value)
            }
            Err(CallFailure::Abandoned(message)) => {
                self.restore_thread(tid, &saved)?;
                Err(Error::Other(message))
            }
            Err(CallFailure::ProcessChanged(message)) => {
                // Nothing to restore: the process is gone or is another program.
                Err(Error::Other(message))
            }
        }
    }

    /// The address of a function symbol `name` in the loaded objects: a
    /// definition in a shared library or the executable, the executable's
    /// PLT stub only as a last resort.
    pub fn function_address(&self, name: &str) -> Option<u64> {
        let main = self.objects.main().map(|o| o.path.clone());
        let defined_in = |object: &crate::objects::LoadedObject| {
            object
                .file
                .lookup_symbol(name)
                .into_iter()
                .find(|s| s.is_function && s.address != 0)
                .map(|s| object.runtime_address(s.address))
        };
        let libraries = self
            .objects
            .list
            .iter()
            .filter(|o| Some(&o.path) != main.as_ref());
        let executable = self
            .objects
            .list
            .iter()
            .filter(|o| Some(&o.path) == main.as_ref());
        libraries.chain(executable).find_map(defined_in)
    }

    fn save_thread(&mut self, tid: Tid) -> Result<SavedThread> {
        let trap = self.entry_point()?;
        let process = self.process()?;
        let regs = process.regs(tid)?;
        let fpregs = ptrace::get_fpregs(tid).ok();
        let mut byte = [0u8];
        process.memory.read(trap, &mut byte)?;
        let thread = self
            .process_mut()?
            .thread_mut(tid)
            .ok_or(Error::NoProcess)?;
        let saved = SavedThread {
            regs,
            fpregs,
            pending_signal: std::mem::take(&mut thread.pending_signal),
            pending_siginfo: thread.pending_siginfo.take(),
            pass_at: thread.pass_at.take(),
            trap,
            trap_byte: byte[0],
        };
        Ok(saved)
    }

    fn restore_thread(&mut self, tid: Tid, saved: &SavedThread) -> Result<()> {
        let process = self.process_mut()?;
        process.memory.write(saved.trap, &[saved.trap_byte])?;
        process.set_regs(tid, &saved.regs)?;
        if let Some(fpregs) = &saved.fpregs {
            set_fpregs(tid, fpregs)?;
        }
        if let Some(thread) = process.thread_mut(tid) {
            thread.state = ThreadState::Stopped;
            thread.pending_signal = saved.pending_signal;
            thread.pending_siginfo = saved.pending_siginfo;
            thread.pass_at = saved.pass_at;
        }
        Ok(())
    }

    /// Writes the frame (strings, return address) and the registers.
    fn set_up_call(
        &mut self,
        tid: Tid,
        address: u64,
        args: &[CallArg],
        saved: &SavedThread,
    ) -> std::result::Result<(), CallFailure> {
        let process = self.process().map_err(CallFailure::abandoned)?;
        let memory = &process.memory;
        let mut sp = saved.regs.rsp.wrapping_sub(RED_ZONE);
        let mut values = Vec::with_capacity(args.len());
        for arg in args {
            match arg {
                CallArg::Integer(value) => values.push(*value),
                CallArg::CString(bytes) => {
                    let mut text = bytes.clone();
                    text.push(0);
                    sp = sp.wrapping_sub(text.len() as u64);
                    memory.write(sp, &text).map_err(CallFailure::abandoned)?;
                    values.push(sp);
                }
            }
        }
        // At the callee's first instruction rsp + 8 is 16-byte aligned.
        sp &= !0xf;
        sp = sp.wrapping_sub(8);
        memory
            .write(sp, &saved.trap.to_le_bytes())
            .and_then(|()| memory.write(saved.trap, &[0xcc]))
            .map_err(CallFailure::abandoned)?;
        let mut regs = saved.regs;
        let slots = [
            &mut regs.rdi,
            &mut regs.rsi,
            &mut regs.rdx,
            &mut regs.rcx,
            &mut regs.r8,
            &mut regs.r9,
        ];
        for (slot, value) in slots.into_iter().zip(values) {
            *slot = value;
        }
        regs.rsp = sp;
        regs.rip = address;
        // No vector registers carry arguments (for variadic callees).
        regs.rax = 0;
        // Not inside a system call any more: the kernel must not restart
        // one when the thread resumes (the saved orig_rax restarts it later).
        regs.orig_rax = u64::MAX;
        process
            .set_regs(tid, &regs)
            .map_err(CallFailure::abandoned)?;
        Ok(())
    }

    /// Runs `tid` alone until it returns to the trap.
    fn run_call(&mut self, tid: Tid, trap: u64) -> std::result::Result<u64, CallFailure> {
        let pid = self.process().map_err(CallFailure::abandoned)?.pid;
        ptrace::cont(tid, 0).map_err(CallFailure::abandoned)?;
        loop {
            let event = match ptrace::wait(-1, false) {
                Ok(Some(event)) => event,
                Ok(None) => continue,
                Err(e) => return Err(CallFailure::abandoned(e)),
            };
            match event {
                WaitEvent::Signal { tid: t, signal } if t == tid => {
                    if let Some(value) = self.call_signal(tid, signal, trap)? {
                        return Ok(value);
                    }
                }
                WaitEvent::Event { tid: t, event } if t == tid => {
                    self.handle_ptrace_event(tid, event)
                        .map_err(CallFailure::abandoned)?;
                    if event == libc::PTRACE_EVENT_EXEC {
                        return Err(CallFailure::ProcessChanged(
                            "the program executed a new program during the call".into(),
                        ));
                    }
                }
                WaitEvent::Exited { tid: t, .. } | WaitEvent::Killed { tid: t, .. }
                    if t == tid || t == pid =>
                {
                    // Reported to the user by the next resume.
                    self.defer(event);
                    return Err(CallFailure::ProcessChanged(
                        "the program ended during the call".into(),
                    ));
                }
                // Other threads' business waits until the program resumes.
                other => self.defer(other),
            }
        }
    }

    /// One signal stop of the calling thread: the return trap gives the
    /// result; other signals are delivered, or end the call.
    fn call_signal(
        &mut self,
        tid: Tid,
        signal: i32,
        trap: u64,
    ) -> std::result::Result<Option<u64>, CallFailure> {
        let regs = ptrace::get_regs(tid).map_err(CallFailure::abandoned)?;
        if signal == libc::SIGTRAP {
            if regs.rip == trap.wrapping_add(1) {
                return Ok(Some(regs.rax));
            }
            let at = regs.rip.wrapping_sub(1);
            let message = if self.breakpoints.sites.contains_key(&at) {
                format!("the called function hit a breakpoint at 0x{at:x}; call abandoned")
            } else {
                format!(
                    "the called function stopped with SIGTRAP at 0x{:x}; call abandoned",
                    regs.rip
                )
            };
            return Err(CallFailure::Abandoned(message));
        }
        if CRASH_SIGNALS.contains(&signal) {
            return Err(CallFailure::Abandoned(format!(
                "the called function got {} at 0x{:x}; call abandoned",
                crate::signals::signal_name(signal),
                regs.rip
            )));
        }
        if signal == libc::SIGINT {
            return Err(CallFailure::Abandoned("call interrupted".into()));
        }
        let expected_stop = self
            .process
            .as_mut()
            .and_then(|p| p.thread_mut(tid))
            .is_some_and(|t| std::mem::take(&mut t.sigstop_expected));
        let deliver = if signal == libc::SIGSTOP && expected_stop {
            0
        } else if self.signals.get(signal).pass {
            signal
        } else {
            0
        };
        ptrace::cont(tid, deliver).map_err(CallFailure::abandoned)?;
        Ok(None)
    }
}

/// Why a call did not return normally.
enum CallFailure {
    /// The thread is still there: its registers are put back.
    Abandoned(String),
    /// The process ended or exec'd: nothing can be put back.
    ProcessChanged(String),
}

impl CallFailure {
    fn abandoned(error: Error) -> CallFailure {
        CallFailure::Abandoned(format!("call abandoned: {error}"))
    }
}

fn set_fpregs(tid: Tid, regs: &libc::user_fpregs_struct) -> Result<()> {
    // SAFETY: the kernel reads a user_fpregs_struct from the pointer.
    let ret = unsafe {
        libc::ptrace(
            libc::PTRACE_SETFPREGS,
            tid,
            0usize,
            regs as *const libc::user_fpregs_struct,
        )
    };
    if ret == -1 {
        return Err(nix::errno::Errno::last().into());
    }
    Ok(())
}
