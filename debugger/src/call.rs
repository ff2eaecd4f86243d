//! Injected function calls: the stopped program runs one of its own
//! functions for the debugger (dbx's `call`, `print FUNC(ARGS)`, and the
//! collector library's `__rdbx_collector_start`).
//!
//! The calling thread gets a fresh System V frame below its red zone, with
//! a return address pointing at an `int3` written over the executable's
//! entry point (which no thread executes again once the program has
//! started). It runs alone until that trap and then gets every register
//! back: general registers (`orig_rax` and `rax` included, so a system
//! call it was stopped in restarts as the kernel would have restarted it)
//! and the whole x87/SSE/AVX state.
//!
//! During the call the profiler's signals (SIGPROF, and SIGTRAP from a
//! perf event) are delivered to the program. Anything else ends the call:
//! a crash, a breakpoint, another signal (left pending for the thread), the
//! timeout or Ctrl-C. The thread's state is restored in every case where
//! the thread still exists.

use crate::breakpoints::Owner;
use crate::engine::Debugger;
use crate::inferior::{PendingSignal, Resume};
use crate::ptrace::{self, Tid};
use crate::pump::{self, Event, Wait, Wake};
use crate::regs::VectorState;
use crate::signals::signal_name;
use crate::stack::FrameView;
use crate::symbols::{CallType, Prototype, ValueClass};
use crate::unwind::UnwindRegs;
use crate::value::Value;
use crate::{Error, Result};
use std::time::{Duration, Instant};

/// `Debugger::call_timeout` unless changed.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(10);
/// rdi, rsi, rdx, rcx, r8, r9.
const INTEGER_REGISTERS: usize = 6;
/// xmm0..xmm7.
const VECTOR_REGISTERS: usize = 8;
/// Bytes below the stack pointer a leaf function may use without moving it.
const RED_ZONE: u64 = 128;
/// Signals that mean the called function crashed (when the kernel raised
/// them; SIGABRT always, since abort() raises it itself).
const CRASH_SIGNALS: [i32; 6] = [
    libc::SIGSEGV,
    libc::SIGBUS,
    libc::SIGILL,
    libc::SIGFPE,
    libc::SIGABRT,
    libc::SIGSYS,
];
/// How long a call that must not be cut short (rdbx's own: dlopen, the
/// collector's entry points) may go on after a Ctrl-C.
const FINISH_AFTER_INTERRUPT: Duration = Duration::from_secs(2);
const EFLAGS_TRAP: u64 = 0x100;
const EFLAGS_DIRECTION: u64 = 0x400;

/// One argument of a call by address (`call_function_with`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallArg {
    Integer(u64),
    /// Copied (with a terminating NUL) onto the call's stack; the function
    /// gets its address. Valid only during the call.
    CString(Vec<u8>),
}

/// One argument of a call by name (`Debugger::call`), as an expression
/// gave it.
#[derive(Debug, Clone, PartialEq)]
pub enum Argument {
    Value(Value),
    /// A string literal: copied with a terminating NUL into the target for
    /// the duration of the call; the function gets a `char *`.
    String(Vec<u8>),
}

/// An argument converted to what travels in a register or stack slot.
#[derive(Debug, Clone, PartialEq)]
enum Passed {
    Integer(u64),
    Double(f64),
    Single(f32),
    String(Vec<u8>),
}

/// The registers a function returns its value in.
struct Returned {
    rax: u64,
    xmm0: [u8; 16],
    st0: [u8; 10],
}

/// What the thread was doing before the call, to be put back after it.
struct SavedThread {
    regs: libc::user_regs_struct,
    vector: Option<VectorState>,
    pending: Option<PendingSignal>,
    pass_at: Option<u64>,
    /// The byte under the return trap (the entry point).
    trap: u64,
    trap_byte: u8,
}

/// What Ctrl-C does to a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OnInterrupt {
    /// The user's own `call f()`: abandoned at once, the thread restored.
    Abandon,
    /// rdbx's own calls (dlopen, the collector's entry points): finished
    /// first, since one cut short could leave a lock held.
    Finish,
}

/// Why a call did not return normally.
enum CallFailure {
    /// The thread is still there: its state is put back, and `pending`
    /// (a signal that arrived during the call) is left for it to receive.
    Abandoned {
        message: String,
        pending: Option<Pending>,
        /// Abandoned because it did not return within `call_timeout`.
        timed_out: bool,
    },
    /// The process ended or exec'd: nothing can be put back.
    ProcessChanged(String),
}

impl CallFailure {
    fn abandoned(message: String) -> CallFailure {
        CallFailure::Abandoned {
            message,
            pending: None,
            timed_out: false,
        }
    }

    fn into_timeout(self) -> CallFailure {
        match self {
            CallFailure::Abandoned {
                message, pending, ..
            } => CallFailure::Abandoned {
                message,
                pending,
                timed_out: true,
            },
            other => other,
        }
    }

    fn from_error(error: Error) -> CallFailure {
        CallFailure::abandoned(format!("call abandoned: {error}"))
    }
}

type CallResult<T> = std::result::Result<T, CallFailure>;

/// A signal that arrived during a call, with its siginfo, to be delivered
/// after it.
type Pending = Box<(i32, Option<libc::siginfo_t>)>;

impl Debugger {
    /// Calls the function at `address` in the stopped thread `tid` with
    /// integer arguments and returns its `rax`. Registers, the thread's
    /// pending signal and memory under the trap are restored; the other
    /// threads stay stopped.
    pub fn call_function(&mut self, tid: Tid, address: u64, args: &[u64]) -> Result<u64> {
        let args: Vec<CallArg> = args.iter().map(|&a| CallArg::Integer(a)).collect();
        self.call_function_with(tid, address, &args)
    }

    /// Like `call_function`, with C strings among the arguments.
    pub fn call_function_with(&mut self, tid: Tid, address: u64, args: &[CallArg]) -> Result<u64> {
        let passed: Vec<Passed> = args
            .iter()
            .map(|arg| match arg {
                CallArg::Integer(value) => Passed::Integer(*value),
                CallArg::CString(bytes) => Passed::String(bytes.clone()),
            })
            .collect();
        let name = self.function_name_at(address);
        Ok(self
            .call_passed(tid, address, &name, &passed, false, OnInterrupt::Finish)?
            .rax)
    }

    /// Calls the program's function `name` in the stopped thread `tid`, as
    /// `print name(ARGS)` does: arguments are converted to the parameter
    /// types of its DWARF prototype (C's default promotions without one),
    /// and the result is decoded with its return type (`int` when
    /// unknown). `None` for a void function.
    pub fn call(&mut self, tid: Tid, name: &str, args: &[Argument]) -> Result<Option<Value>> {
        let (address, ifunc) = self
            .callable_address(name)
            .ok_or_else(|| Error::NoSuchFunction(name.to_string()))?;
        let address = if ifunc {
            // An indirect function (glibc's strlen...): its resolver gives
            // the implementation for this machine.
            self.call_passed(tid, address, name, &[], false, OnInterrupt::Abandon)?
                .rax
        } else {
            address
        };
        let prototype = self.prototype_of(address, name);
        if let Some(p) = &prototype {
            check_return_type(name, &p.return_type)?;
        }
        let passed = pass_arguments(name, prototype.as_ref(), args)?;
        let float_result = prototype
            .as_ref()
            .is_some_and(|p| matches!(p.return_type.class, ValueClass::Float { .. }));
        let returned = self.call_passed(
            tid,
            address,
            name,
            &passed,
            float_result,
            OnInterrupt::Abandon,
        )?;
        Ok(self.decode_result(address, prototype.as_ref(), &returned))
    }

    /// The prototype of the function at runtime `address`: from its own
    /// DWARF, else from a declaration in some object's DWARF (a libc
    /// function the program calls is declared in the program's).
    pub fn prototype_of(&self, address: u64, name: &str) -> Option<Prototype> {
        if let Some(object) = self.objects.object_at(address) {
            if let Some(p) = object.file.prototype(object.file_address(address)) {
                return Some(p);
            }
        }
        self.objects
            .list
            .iter()
            .find_map(|o| o.file.declared_prototype(name))
    }

    /// The address a call of `name` goes to, and whether it is an
    /// indirect function's resolver: the executable's own definition
    /// first, then the libraries' (the dynamic linker's order).
    fn callable_address(&self, name: &str) -> Option<(u64, bool)> {
        let main = self.objects.main().map(|o| o.path.clone());
        let defined_in = |object: &crate::objects::LoadedObject| {
            defined_function(object, name)
                .map(|address| (address, is_indirect_function(object.file.elf_bytes(), name)))
        };
        let (executable, libraries): (Vec<_>, Vec<_>) = self
            .objects
            .list
            .iter()
            .partition(|o| Some(&o.path) == main.as_ref());
        executable
            .into_iter()
            .chain(libraries)
            .find_map(defined_in)
            .or_else(|| {
                // A static function the symbol table does not name.
                self.objects.list.iter().find_map(|object| {
                    let function = object.file.find_functions(name).into_iter().next()?;
                    Some((object.runtime_address(function.low_pc), false))
                })
            })
    }

    /// The address of a function symbol `name` in the loaded objects: a
    /// definition in a shared library or the executable, the executable's
    /// PLT stub only as a last resort.
    pub fn function_address(&self, name: &str) -> Option<u64> {
        let main = self.objects.main().map(|o| o.path.clone());
        let defined_in = |object: &crate::objects::LoadedObject| defined_function(object, name);
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

    fn function_name_at(&self, address: u64) -> String {
        self.objects
            .symbolize(address)
            .function
            .unwrap_or_else(|| format!("0x{address:x}"))
    }

    /// The result as a value of the function's return type.
    fn decode_result(
        &self,
        address: u64,
        prototype: Option<&Prototype>,
        returned: &Returned,
    ) -> Option<Value> {
        let Some(prototype) = prototype else {
            // No prototype: C's implicit `int`.
            return Some(Value::Integer {
                value: i128::from(returned.rax as u32 as i32),
                size: 4,
                signed: true,
                type_name: "int".into(),
            });
        };
        let mut bytes = [0u8; 16];
        match prototype.return_type.class {
            ValueClass::Void => return None,
            ValueClass::Float { size: 16 } => bytes[..10].copy_from_slice(&returned.st0),
            ValueClass::Float { .. } => bytes = returned.xmm0,
            _ => bytes[..8].copy_from_slice(&returned.rax.to_le_bytes()),
        }
        let fallback = || raw_value(&prototype.return_type, &bytes);
        let Some(object) = self.objects.object_at(address) else {
            return Some(fallback());
        };
        let Ok(process) = self.process() else {
            return Some(fallback());
        };
        let frame = FrameView {
            memory: process.memory(),
            regs: UnwindRegs {
                regs: [None; crate::unwind::REGISTER_COUNT],
            },
            cfa: None,
            bias: object.bias,
            xmm: None,
            thread_pointer: None,
            objects: None,
        };
        let decoded = object
            .file
            .decode_return(object.file_address(address), &bytes, &frame);
        Some(decoded.unwrap_or_else(fallback))
    }

    /// Runs the call: saves the thread, sets up the frame, runs it to the
    /// return trap, and restores the thread whatever happened.
    fn call_passed(
        &mut self,
        tid: Tid,
        address: u64,
        name: &str,
        args: &[Passed],
        float_result: bool,
        on_interrupt: OnInterrupt,
    ) -> Result<Returned> {
        let stopped = self.process()?.thread(tid).is_some_and(|t| t.is_stopped());
        if !stopped {
            return Err(Error::Other(format!("thread {tid} is not stopped")));
        }
        let saved = self.save_thread(tid)?;
        let outcome = self
            .set_up_call(tid, address, args, &saved)
            .and_then(|()| self.run_call(tid, saved.trap, name, on_interrupt))
            .and_then(|()| read_returned(tid, float_result));
        match outcome {
            Ok(returned) => {
                self.restore_thread(tid, &saved, None)?;
                Ok(returned)
            }
            Err(CallFailure::Abandoned {
                message,
                pending,
                timed_out,
            }) => {
                self.restore_thread(tid, &saved, pending)?;
                Err(match timed_out {
                    true => Error::CallTimedOut(message),
                    false => Error::Other(message),
                })
            }
            Err(CallFailure::ProcessChanged(message)) => {
                // Nothing to restore: the process is gone or is another
                // program. Its end is reported by the next resume.
                crate::rescue::end_call();
                Err(Error::Other(message))
            }
        }
    }

    fn save_thread(&mut self, tid: Tid) -> Result<SavedThread> {
        let trap = self.entry_point()?;
        let process = self.process()?;
        let regs = process.regs(tid)?;
        let vector = VectorState::read(tid).ok();
        let mut byte = [0u8];
        process.memory().read(trap, &mut byte)?;
        crate::rescue::note_call(tid, &regs, vector.as_ref().and_then(|v| v.xsave_area()));
        let process = self.process_mut()?;
        Ok(SavedThread {
            regs,
            vector,
            pending: process.take_pending(tid),
            pass_at: process.take_pass_at(tid),
            trap,
            trap_byte: byte[0],
        })
    }

    /// Puts the thread back as it was; a signal that arrived during the
    /// call is left for it to receive when it resumes.
    fn restore_thread(
        &mut self,
        tid: Tid,
        saved: &SavedThread,
        pending: Option<Pending>,
    ) -> Result<()> {
        let process = self.process_mut()?;
        let pid = process.pid();
        process.memory().write(saved.trap, &[saved.trap_byte])?;
        crate::rescue::forget_patch(saved.trap, 1);
        process.set_regs(tid, &saved.regs)?;
        if let Some(vector) = &saved.vector {
            vector.write(tid)?;
        }
        crate::rescue::end_call();
        if !process.has_thread(tid) {
            return Ok(());
        }
        process.note_stopped(tid);
        process.set_pass_at(tid, saved.pass_at);
        match saved.pending {
            Some(p) => process.set_pending(tid, p.signal, p.info),
            None => process.set_pending(tid, 0, None),
        }
        if let Some((signal, info)) = pending.map(|p| *p) {
            if saved.pending.is_none() {
                process.set_pending(tid, signal, info);
            } else {
                // One signal is already waiting for delivery: queue this
                // one in the kernel (its siginfo becomes a tgkill's).
                ptrace::tgkill(pid, tid, signal)?;
            }
        }
        Ok(())
    }

    /// Writes the frame (strings, stack arguments, return address) and
    /// the registers.
    fn set_up_call(
        &mut self,
        tid: Tid,
        address: u64,
        args: &[Passed],
        saved: &SavedThread,
    ) -> CallResult<()> {
        let process = self.process().map_err(CallFailure::from_error)?;
        let memory = process.memory();
        let mut sp = saved.regs.rsp.wrapping_sub(RED_ZONE);
        let mut integers = Vec::new();
        let mut vectors: Vec<[u8; 16]> = Vec::new();
        let mut stack: Vec<u64> = Vec::new();
        for arg in args {
            let (slot, in_vector) = match arg {
                Passed::Integer(value) => (*value, false),
                Passed::Double(value) => (value.to_bits(), true),
                Passed::Single(value) => (u64::from(value.to_bits()), true),
                Passed::String(bytes) => {
                    let mut text = bytes.clone();
                    text.push(0);
                    sp = sp.wrapping_sub(text.len() as u64);
                    memory.write(sp, &text).map_err(CallFailure::from_error)?;
                    (sp, false)
                }
            };
            if in_vector && vectors.len() < VECTOR_REGISTERS {
                let mut register = [0u8; 16];
                register[..8].copy_from_slice(&slot.to_le_bytes());
                vectors.push(register);
            } else if !in_vector && integers.len() < INTEGER_REGISTERS {
                integers.push(slot);
            } else {
                stack.push(slot);
            }
        }
        // Stack arguments start at rsp + 8 on entry, which is 16-byte aligned.
        sp = sp.wrapping_sub(8 * stack.len() as u64) & !0xf;
        for (i, slot) in stack.iter().enumerate() {
            memory
                .write(sp + 8 * i as u64, &slot.to_le_bytes())
                .map_err(CallFailure::from_error)?;
        }
        sp = sp.wrapping_sub(8);
        memory
            .write(sp, &saved.trap.to_le_bytes())
            .map_err(CallFailure::from_error)?;
        crate::rescue::note_patch(saved.trap, &[saved.trap_byte]);
        memory
            .write(saved.trap, &[0xcc])
            .map_err(CallFailure::from_error)?;
        if !vectors.is_empty() {
            let mut vector = saved.vector.clone().ok_or_else(|| {
                CallFailure::abandoned(
                    "cannot pass floating-point arguments: the thread's vector registers \
                     cannot be read"
                        .into(),
                )
            })?;
            for (n, register) in vectors.iter().enumerate() {
                vector.set_xmm(n, *register);
            }
            vector.write(tid).map_err(CallFailure::from_error)?;
        }
        let mut regs = saved.regs;
        let slots = [
            &mut regs.rdi,
            &mut regs.rsi,
            &mut regs.rdx,
            &mut regs.rcx,
            &mut regs.r8,
            &mut regs.r9,
        ];
        for (slot, value) in slots.into_iter().zip(integers) {
            *slot = value;
        }
        regs.rsp = sp;
        regs.rip = address;
        // How many vector registers carry arguments (for variadic callees).
        regs.rax = vectors.len() as u64;
        // Not inside a system call any more: the kernel must not "restart"
        // one into our frame when the thread resumes (the saved orig_rax
        // and rax restart the real one after the call).
        regs.orig_rax = u64::MAX;
        // The ABI wants the direction flag clear at a call; no single-step.
        regs.eflags &= !(EFLAGS_DIRECTION | EFLAGS_TRAP);
        process
            .set_regs(tid, &regs)
            .map_err(CallFailure::from_error)?;
        Ok(())
    }

    /// Runs `tid` alone until it returns to the trap, the timeout passes
    /// or something ends the call.
    fn run_call(
        &mut self,
        tid: Tid,
        trap: u64,
        name: &str,
        on_interrupt: OnInterrupt,
    ) -> CallResult<()> {
        let pid = self.process().map_err(CallFailure::from_error)?.pid();
        // The collector may have been loaded by the call before this one.
        self.show_hold();
        self.process_mut()
            .and_then(|p| p.resume_keeping_pending(tid, Resume::Continue))
            .map_err(CallFailure::from_error)?;
        let mut deadline = Instant::now() + self.call_timeout;
        let mut interrupted = false;
        loop {
            let wake = self
                .pump
                .wait(Wait::any().interruptible().until(deadline))
                .map_err(CallFailure::from_error)?;
            match wake {
                Wake::Event(event) => {
                    if self.call_event(tid, pid, trap, name, event, on_interrupt)? {
                        return Ok(());
                    }
                }
                Wake::Interrupt if on_interrupt == OnInterrupt::Abandon => {
                    let message = format!(
                        "the call to {name} was interrupted; abandoned and the thread's \
                         state restored"
                    );
                    return self.halt_call(tid, pid, message, name);
                }
                Wake::Interrupt => {
                    // Cut short, the call could leave a lock it holds (the
                    // loader's, malloc's) held forever: let it finish, a
                    // little while at most.
                    interrupted = true;
                    deadline = deadline.min(Instant::now() + FINISH_AFTER_INTERRUPT);
                }
                Wake::Timeout if interrupted => {
                    let message = format!(
                        "the call to {name} was interrupted and did not finish within {} s; \
                         abandoned and the thread's state restored",
                        FINISH_AFTER_INTERRUPT.as_secs_f64()
                    );
                    return self.halt_call(tid, pid, message, name);
                }
                Wake::Timeout => {
                    let message = format!(
                        "the call to {name} did not return within {} s; abandoned and the \
                         thread's state restored",
                        self.call_timeout.as_secs_f64()
                    );
                    return self
                        .halt_call(tid, pid, message, name)
                        .map_err(CallFailure::into_timeout);
                }
            }
        }
    }

    /// One event during a call; true when the call has returned.
    fn call_event(
        &mut self,
        tid: Tid,
        pid: i32,
        trap: u64,
        name: &str,
        event: Event,
        on_interrupt: OnInterrupt,
    ) -> CallResult<bool> {
        let resume = |dbg: &mut Debugger| {
            dbg.process_mut()
                .and_then(|p| p.resume_keeping_pending(tid, Resume::Continue))
                .map(|()| false)
                .map_err(CallFailure::from_error)
        };
        let Some(event) = self.calling_thread_event(tid, pid, name, event)? else {
            return Ok(false);
        };
        match event {
            Event::Breakpoint { .. } => {
                let pc = ptrace::get_regs(tid).map_err(CallFailure::from_error)?.rip;
                if pc == trap.wrapping_add(1) {
                    return Ok(true);
                }
                let at = pc.wrapping_sub(1);
                if self.breakpoints.is_site(at) {
                    return self.call_breakpoint(tid, at, name);
                }
                // The program's own int3: a signal like any other.
                self.call_signal(tid, libc::SIGTRAP, name, on_interrupt)
            }
            // A collector trap (its clock, a switch): the program's own,
            // delivered at once, unless a system call of the called
            // function is to be restarted: then it waits for that call
            // (the thread's own pending signal waits for the call's end).
            Event::ClockTick { info, .. } => self
                .process_mut()
                .and_then(|p| match p.keep_perf_trap(tid, &info.info())? {
                    true => p.resume_keeping_pending(tid, Resume::Continue),
                    false => p.resume(tid, Resume::Continue),
                })
                .map(|()| false)
                .map_err(CallFailure::from_error),
            // A stray single-step trap or a stale interrupt is ours; so is
            // a system-call stop of a trap owed in the called function.
            Event::Stepped { .. } | Event::Interrupted { .. } | Event::SyscallStop { .. } => {
                resume(self)
            }
            Event::Signal { signal, .. } => self.call_signal(tid, signal, name, on_interrupt),
            Event::GroupStop { signal, .. } => Err(CallFailure::abandoned(format!(
                "the call to {name} was stopped by {} (job control); abandoned and the \
                 thread's state restored",
                signal_name(signal)
            ))),
            Event::Exec { .. } => {
                self.absorb(event).map_err(CallFailure::from_error)?;
                Err(CallFailure::ProcessChanged(format!(
                    "the program executed a new program during the call to {name}"
                )))
            }
            // A thread or process the called function made: noted, and on.
            _ => {
                self.absorb(event).map_err(CallFailure::from_error)?;
                resume(self)
            }
        }
    }

    /// The calling thread's stop, noted, or `None` for another thread's
    /// event (noted too: the other threads stay stopped, their business
    /// waits). The end of the process or of the calling thread fails the
    /// call; it is reported by the next resume.
    fn calling_thread_event(
        &mut self,
        tid: Tid,
        pid: i32,
        name: &str,
        event: Event,
    ) -> CallResult<Option<Event>> {
        if event.is_end() && (event.tid() == tid || event.tid() == pid) {
            self.defer(event);
            return Err(CallFailure::ProcessChanged(ended_during_call(
                event, pid, name,
            )));
        }
        if event.tid() != tid {
            self.absorb(event).map_err(CallFailure::from_error)?;
            return Ok(None);
        }
        self.process_mut()
            .map_err(CallFailure::from_error)?
            .note_stopped(tid);
        Ok(Some(event))
    }

    /// One signal stop of the calling thread: the profiler's signals are
    /// delivered; anything else abandons it.
    fn call_signal(
        &mut self,
        tid: Tid,
        signal: i32,
        name: &str,
        on_interrupt: OnInterrupt,
    ) -> CallResult<bool> {
        let regs = ptrace::get_regs(tid).map_err(CallFailure::from_error)?;
        let info = ptrace::siginfo(tid).ok();
        let code = info.map(|i| i.si_code).unwrap_or(0);
        let resume = |dbg: &mut Debugger, signal: i32| {
            let process = dbg.process_mut().map_err(CallFailure::from_error)?;
            process.set_pending(tid, signal, None);
            process
                .resume(tid, Resume::Continue)
                .map(|()| false)
                .map_err(CallFailure::from_error)
        };
        if signal == libc::SIGPROF {
            let deliver = if self.signals().get(signal).pass {
                signal
            } else {
                0
            };
            return resume(self, deliver);
        }
        let place = self.function_name_at(regs.rip);
        let crashed = signal == libc::SIGABRT || (CRASH_SIGNALS.contains(&signal) && code > 0);
        if crashed {
            return Err(CallFailure::abandoned(format!(
                "the call to {name} got {} in {place} at 0x{:x}; abandoned and the thread's \
                 state restored",
                signal_name(signal),
                regs.rip
            )));
        }
        let pass = self.signals().get(signal).pass;
        if signal == libc::SIGINT && !pass {
            // The terminal's copy of a Ctrl-C that reached us too: ours
            // to act on, not the program's.
            pump::clear_interrupt();
            if on_interrupt == OnInterrupt::Finish {
                return resume(self, 0);
            }
            return Err(CallFailure::abandoned(format!(
                "the call to {name} was interrupted; abandoned and the thread's state restored"
            )));
        }
        let kept = if pass {
            " (the signal stays pending)"
        } else {
            ""
        };
        Err(CallFailure::Abandoned {
            message: format!(
                "the call to {name} was interrupted by {} in {place}; abandoned and the \
                 thread's state restored{kept}",
                signal_name(signal)
            ),
            pending: pass.then(|| Box::new((signal, info))),
            timed_out: false,
        })
    }

    /// The calling thread trapped on one of our breakpoint sites at `at`.
    /// A user breakpoint ends the call; our own sites (the loader's event
    /// breakpoint during a dlopen, a `next` target) are stepped over.
    fn call_breakpoint(&mut self, tid: Tid, at: u64, name: &str) -> CallResult<bool> {
        let owners = self.breakpoints.owners(at);
        let ids: Vec<String> = owners
            .iter()
            .filter_map(|owner| match owner {
                Owner::User(id) if self.breakpoints.user.get(id).is_some_and(|b| b.enabled) => {
                    Some(format!("({id})"))
                }
                _ => None,
            })
            .collect();
        if !ids.is_empty() {
            let place = self.function_name_at(at);
            let which = if ids.len() == 1 {
                "breakpoint"
            } else {
                "breakpoints"
            };
            return Err(CallFailure::abandoned(format!(
                "the call to {name} hit {which} {} in {place}; abandoned and the thread's \
                 state restored",
                ids.join(" ")
            )));
        }
        let process = self.process().map_err(CallFailure::from_error)?;
        let pid = process.pid();
        let mut regs = process.regs(tid).map_err(CallFailure::from_error)?;
        regs.rip = at;
        process
            .set_regs(tid, &regs)
            .map_err(CallFailure::from_error)?;
        self.step_over_site(tid).map_err(CallFailure::from_error)?;
        if owners.contains(&Owner::LoaderEvent) {
            // A library came or went: its symbols are needed at once (the
            // collector's dlopen looks its functions up right after).
            let _ = self.objects.refresh(pid);
        }
        self.process_mut()
            .and_then(|p| p.resume_keeping_pending(tid, Resume::Continue))
            .map_err(CallFailure::from_error)?;
        Ok(false)
    }

    /// Stops the running calling thread (timeout, Ctrl-C) and abandons
    /// the call with `message`.
    fn halt_call(&mut self, tid: Tid, pid: i32, message: String, name: &str) -> CallResult<()> {
        self.process_mut()
            .map_err(CallFailure::from_error)?
            .interrupt(tid);
        loop {
            let event = match self.pump.wait(Wait::any().kicking(Some(tid))) {
                Ok(Wake::Event(event)) => event,
                Ok(_) => continue,
                Err(e) => return Err(CallFailure::from_error(e)),
            };
            let Some(event) = self.calling_thread_event(tid, pid, name, event)? else {
                continue;
            };
            // Stopped by a signal first: it is kept for the thread.
            let pending = match event {
                Event::Signal { signal, .. } if self.signals().get(signal).pass => {
                    Some(Box::new((signal, ptrace::siginfo(tid).ok())))
                }
                _ => None,
            };
            return Err(CallFailure::Abandoned {
                message,
                pending,
                timed_out: false,
            });
        }
    }
}

/// Whether `name` is an `STT_GNU_IFUNC` symbol of the ELF file `elf`.
fn is_indirect_function(elf: &[u8], name: &str) -> bool {
    use object::{Object, ObjectSymbol};
    const STT_GNU_IFUNC: u8 = 10;
    let Ok(file) = object::File::parse(elf) else {
        return false;
    };
    file.dynamic_symbols()
        .chain(file.symbols())
        .filter(|s| s.name() == Ok(name))
        .any(|s| {
            matches!(s.flags(), object::SymbolFlags::Elf { st_info, .. }
                if st_info & 0xf == STT_GNU_IFUNC)
        })
}

/// The error message for the process (or calling thread) ending in a call.
fn ended_during_call(event: Event, pid: i32, name: &str) -> String {
    match event {
        Event::Exited { tid, code } if tid == pid => {
            format!("the program exited with code {code} during the call to {name}")
        }
        Event::Killed { tid, signal } if tid == pid => format!(
            "the program was killed by {} during the call to {name}",
            signal_name(signal)
        ),
        other => format!("thread {} exited during the call to {name}", other.tid()),
    }
}

/// rax, xmm0 and st0 of the thread at the return trap.
fn read_returned(tid: Tid, float_result: bool) -> CallResult<Returned> {
    let rax = ptrace::get_regs(tid).map_err(CallFailure::from_error)?.rax;
    let (xmm0, st0) = if float_result {
        let vector = VectorState::read(tid).map_err(CallFailure::from_error)?;
        (vector.xmm(0), vector.st0())
    } else {
        ([0; 16], [0; 10])
    };
    Ok(Returned { rax, xmm0, st0 })
}

/// Refuses, before calling, what would need a hidden return buffer.
fn check_return_type(name: &str, return_type: &CallType) -> Result<()> {
    match return_type.class {
        ValueClass::Aggregate { .. } => Err(Error::Other(format!(
            "{name} returns a \"{}\" by value; calling it is not supported",
            return_type.name
        ))),
        _ => Ok(()),
    }
}

/// Converts the arguments as a C compiler would at a call of `name`.
fn pass_arguments(
    name: &str,
    prototype: Option<&Prototype>,
    args: &[Argument],
) -> Result<Vec<Passed>> {
    if let Some(p) = prototype {
        let wanted = p.parameters.len();
        let fixed = p.prototyped || wanted > 0;
        if args.len() < wanted && fixed {
            return Err(Error::Other(format!(
                "too few arguments in the call to {name}: it takes {wanted}{}, {} given",
                if p.variadic { " or more" } else { "" },
                args.len()
            )));
        }
        if args.len() > wanted && fixed && !p.variadic {
            return Err(Error::Other(format!(
                "too many arguments in the call to {name}: it takes {wanted}, {} given",
                args.len()
            )));
        }
    }
    args.iter()
        .enumerate()
        .map(|(i, arg)| {
            let parameter = prototype.and_then(|p| p.parameters.get(i).map(|t| (t, p.prototyped)));
            match parameter {
                Some((parameter, prototyped)) => convert(name, i, arg, parameter, prototyped),
                None => promote(name, i, arg),
            }
        })
        .collect()
}

/// An argument with no parameter type to go by: C's default promotions
/// (integers as they are, float to double).
fn promote(name: &str, index: usize, arg: &Argument) -> Result<Passed> {
    let value = match arg {
        Argument::String(bytes) => return Ok(Passed::String(bytes.clone())),
        Argument::Value(value) => value,
    };
    match value {
        Value::Float { value, size, .. } if *size <= 8 => Ok(Passed::Double(*value)),
        Value::Float { type_name, .. } => Err(unpassable(name, index, type_name)),
        Value::Composite { type_name, .. } => Err(unpassable(name, index, type_name)),
        other => scalar(name, index, other).map(|v| Passed::Integer(v as u64)),
    }
}

/// An argument converted to the type of its parameter.
fn convert(
    name: &str,
    index: usize,
    arg: &Argument,
    parameter: &CallType,
    prototyped: bool,
) -> Result<Passed> {
    let value = match (arg, parameter.class) {
        (Argument::String(bytes), ValueClass::Pointer) => return Ok(Passed::String(bytes.clone())),
        (Argument::String(_), _) => {
            return Err(Error::Other(format!(
                "argument {} of {name} is a \"{}\": a string cannot be passed there",
                index + 1,
                parameter.name
            )))
        }
        (Argument::Value(value), _) => value,
    };
    if let Value::Composite { type_name, .. } = value {
        return Err(unpassable(name, index, type_name));
    }
    match parameter.class {
        ValueClass::Integer { size, signed } => {
            let raw = scalar(name, index, value)?;
            Ok(Passed::Integer(extend(raw, size, signed)))
        }
        ValueClass::Pointer => Ok(Passed::Integer(scalar(name, index, value)? as u64)),
        ValueClass::Float { size: 4 } if prototyped => Ok(Passed::Single(float(value)? as f32)),
        ValueClass::Float { size: 4 | 8 } => Ok(Passed::Double(float(value)?)),
        ValueClass::Float { .. } => Err(Error::Other(format!(
            "argument {} of {name} is a \"{}\": long double arguments are not supported",
            index + 1,
            parameter.name
        ))),
        ValueClass::Aggregate { .. } | ValueClass::Void => Err(Error::Other(format!(
            "argument {} of {name} is a \"{}\" passed by value: not supported",
            index + 1,
            parameter.name
        ))),
    }
}

fn unpassable(name: &str, index: usize, type_name: &str) -> Error {
    Error::Other(format!(
        "argument {} of {name} is a \"{type_name}\": only numbers, pointers and strings can \
         be passed",
        index + 1
    ))
}

/// A scalar value as a (sign-extended) integer.
fn scalar(name: &str, index: usize, value: &Value) -> Result<i128> {
    match value {
        Value::OptimizedOut => Err(Error::Other(format!(
            "argument {} of {name} has been optimized out",
            index + 1
        ))),
        Value::Unavailable(why) => Err(Error::Other(format!(
            "argument {} of {name} is not available: {why}",
            index + 1
        ))),
        other => other
            .as_integer()
            .ok_or_else(|| unpassable(name, index, other.type_name())),
    }
}

fn float(value: &Value) -> Result<f64> {
    value
        .as_float()
        .ok_or_else(|| Error::Other(format!("\"{}\" is not a number", value.type_name())))
}

/// `value` converted to an integer of `size` bytes, widened to 64 bits as
/// a register holds it.
fn extend(value: i128, size: u8, signed: bool) -> u64 {
    let bits = u32::from(size.clamp(1, 8)) * 8;
    let low = (value as u128 as u64) & (u64::MAX >> (64 - bits));
    if signed && bits < 64 && low >> (bits - 1) & 1 == 1 {
        low | (u64::MAX << bits)
    } else {
        low
    }
}

/// A result decoded without DWARF's help (its object is gone).
fn raw_value(return_type: &CallType, bytes: &[u8; 16]) -> Value {
    let mut low = [0u8; 8];
    low.copy_from_slice(&bytes[..8]);
    let raw = u64::from_le_bytes(low);
    match return_type.class {
        ValueClass::Float { size: 4 } => Value::Float {
            value: f64::from(f32::from_bits(raw as u32)),
            size: 4,
            type_name: return_type.name.clone(),
        },
        ValueClass::Float { .. } => Value::Float {
            value: f64::from_bits(raw),
            size: 8,
            type_name: return_type.name.clone(),
        },
        ValueClass::Pointer => Value::Pointer {
            address: raw,
            type_name: return_type.name.clone(),
            detail: None,
        },
        ValueClass::Integer { size, signed } => Value::Integer {
            value: if signed {
                i128::from(extend(i128::from(raw), size, true) as i64)
            } else {
                i128::from(extend(i128::from(raw), size, false))
            },
            size,
            signed,
            type_name: return_type.name.clone(),
        },
        _ => Value::Unavailable("no value".into()),
    }
}

/// The runtime address of the function `name` that `object` defines.
pub(crate) fn defined_function(object: &crate::objects::LoadedObject, name: &str) -> Option<u64> {
    object
        .file
        .lookup_symbol(name)
        .into_iter()
        .find(|s| s.is_function && s.address != 0)
        .map(|s| object.runtime_address(s.address))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn integer(size: u8, signed: bool) -> CallType {
        CallType {
            class: ValueClass::Integer { size, signed },
            name: "int".into(),
        }
    }

    fn double() -> CallType {
        CallType {
            class: ValueClass::Float { size: 8 },
            name: "double".into(),
        }
    }

    fn prototype(parameters: Vec<CallType>, variadic: bool) -> Prototype {
        Prototype {
            return_type: integer(4, true),
            parameters,
            variadic,
            prototyped: true,
        }
    }

    #[test]
    fn integers_extend_as_registers_hold_them() {
        assert_eq!(extend(-1, 4, true), u64::MAX);
        assert_eq!(extend(-1, 4, false), 0xffff_ffff);
        assert_eq!(extend(0x1_0000_0005, 4, true), 5);
        assert_eq!(extend(200, 1, true), (-56i64) as u64);
        assert_eq!(extend(-2, 8, true), (-2i64) as u64);
    }

    #[test]
    fn arguments_convert_to_the_parameter_types() {
        let p = prototype(vec![integer(4, true), double()], false);
        let args = [
            Argument::Value(Value::Float {
                value: 2.9,
                size: 8,
                type_name: "double".into(),
            }),
            Argument::Value(Value::int(3)),
        ];
        assert_eq!(
            pass_arguments("f", Some(&p), &args).unwrap(),
            vec![Passed::Integer(2), Passed::Double(3.0)]
        );
        let error = pass_arguments("f", Some(&p), &args[..1]).unwrap_err();
        assert_eq!(
            error.to_string(),
            "too few arguments in the call to f: it takes 2, 1 given"
        );
        let three = [args[0].clone(), args[1].clone(), args[1].clone()];
        let error = pass_arguments("f", Some(&p), &three).unwrap_err();
        assert!(
            error.to_string().starts_with("too many arguments"),
            "{error}"
        );
    }

    #[test]
    fn without_a_prototype_floats_become_doubles() {
        let args = [
            Argument::Value(Value::Float {
                value: 1.5,
                size: 4,
                type_name: "float".into(),
            }),
            Argument::String(b"hi".to_vec()),
            Argument::Value(Value::int(-1)),
        ];
        assert_eq!(
            pass_arguments("g", None, &args).unwrap(),
            vec![
                Passed::Double(1.5),
                Passed::String(b"hi".to_vec()),
                Passed::Integer(u64::MAX)
            ]
        );
        // Variadic: the extra arguments are promoted.
        let p = prototype(vec![integer(4, true)], true);
        assert_eq!(
            pass_arguments("printf", Some(&p), &args[1..])
                .unwrap_err()
                .to_string(),
            "argument 1 of printf is a \"int\": a string cannot be passed there"
        );
    }
}
