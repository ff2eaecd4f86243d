//! The event pump: the one place where rdbx learns what its traced tasks
//! did. Every stop, exit and ptrace event of every task is received by
//! [`Pump::wait`], decoded into an [`Event`] and handed back to the engine,
//! which decides what it means (see docs/architecture.md, "The event pump").
//!
//! A wait must end for two things: a task changing state, and the user
//! pressing Ctrl-C. The pump blocks in `waitpid` itself, one system call
//! per event, as a breakpoint-heavy run needs; SIGINT's handler (installed
//! without SA_RESTART) makes that `waitpid` fail with EINTR. That alone
//! would lose a Ctrl-C arriving after the pump checked the flag and before
//! it entered `waitpid`, so the handler also closes that window: when the
//! pump is waiting, [`request_interrupt`] stops one of the running traced
//! threads (PTRACE_INTERRUPT), which gives `waitpid` an event to return
//! whenever it is entered. The engine treats that stop as any stale
//! interrupt. A handler that runs on another thread forwards the signal to
//! the waiting one, since only the tracer thread may make ptrace requests.
//! Waits with a deadline (injected calls, kill) poll instead, sleeping at
//! most a millisecond between looks.

use crate::ptrace::{self, Tid, WaitStatus};
use crate::{Error, Result};
use nix::errno::Errno;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::time::{Duration, Instant};

/// The user asked to stop the program (Ctrl-C); consumed by the pump.
static INTERRUPT: AtomicBool = AtomicBool::new(false);
/// The thread waiting in (or about to enter) `waitpid`, 0 when none.
static WAITER: AtomicI32 = AtomicI32::new(0);
/// A traced thread running during that wait: interrupting it ends the wait.
static KICK: AtomicI32 = AtomicI32::new(0);

/// Asks the engine to stop the running program, as Ctrl-C does. Safe to
/// call from a signal handler: atomics, `gettid`, `tgkill` and one ptrace
/// request.
pub fn request_interrupt() {
    INTERRUPT.store(true, Ordering::SeqCst);
    let waiter = WAITER.load(Ordering::SeqCst);
    if waiter == 0 {
        // Nobody waits: the next wait sees the flag before it blocks.
        return;
    }
    // SAFETY: gettid and getpid cannot fail.
    let (me, pid) = unsafe { (libc::syscall(libc::SYS_gettid) as Tid, libc::getpid()) };
    if me != waiter {
        // Only the waiting (tracer) thread may interrupt a tracee, and only
        // a signal on it ends its waitpid: hand the signal over.
        let _ = ptrace::tgkill(pid, waiter, libc::SIGINT);
        return;
    }
    let kick = KICK.load(Ordering::SeqCst);
    if kick > 0 {
        let _ = ptrace::interrupt(kick);
    }
}

/// Forgets an interrupt nobody has acted on (one that came while rdbx was
/// waiting for a command, when there was nothing to interrupt).
pub fn clear_interrupt() {
    INTERRUPT.store(false, Ordering::SeqCst);
}

/// Whether an interrupt is waiting to be acted on.
pub fn interrupt_requested() -> bool {
    INTERRUPT.load(Ordering::SeqCst)
}

pub(crate) fn take_interrupt() -> bool {
    INTERRUPT.swap(false, Ordering::SeqCst)
}

/// What a traced task did, as the engine needs to know it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    Exited {
        tid: Tid,
        code: i32,
    },
    Killed {
        tid: Tid,
        signal: i32,
    },
    /// About to receive `signal` (a signal-delivery stop).
    Signal {
        tid: Tid,
        signal: i32,
    },
    /// Executed an `int3`: one of ours, or one in the program.
    Breakpoint {
        tid: Tid,
    },
    /// Finished a single-step.
    Stepped {
        tid: Tid,
    },
    /// A perf event's SIGTRAP (TRAP_PERF: the collector's clock ticked or
    /// a thread ran again after a switch off the CPU; or one rdbx queued
    /// again, see `ptrace::requeue_perf_trap`): the program's own signal,
    /// never a stop. `info` is what must be delivered.
    ClockTick {
        tid: Tid,
        info: ptrace::RawSiginfo,
    },
    /// Stopped by PTRACE_INTERRUPT, or a new task's first stop.
    Interrupted {
        tid: Tid,
    },
    /// At a system call's entry or exit: a thread resumed with
    /// PTRACE_SYSCALL because it owes a perf trap (see
    /// `Inferior::keep_perf_trap`).
    SyscallStop {
        tid: Tid,
    },
    /// Stopped by job control (`signal` is SIGSTOP, SIGTSTP, SIGTTIN or SIGTTOU).
    GroupStop {
        tid: Tid,
        signal: i32,
    },
    Clone {
        tid: Tid,
        new: Tid,
    },
    Fork {
        tid: Tid,
        child: i32,
        vfork: bool,
    },
    /// A vfork child exec'd or exited: the parent's memory is its own again.
    VforkDone {
        tid: Tid,
    },
    /// The process runs a new program; `former` is the thread that called
    /// exec (now known by the process id).
    Exec {
        tid: Tid,
        former: Tid,
    },
}

impl Event {
    pub fn tid(&self) -> Tid {
        match *self {
            Event::Exited { tid, .. }
            | Event::Killed { tid, .. }
            | Event::Signal { tid, .. }
            | Event::Breakpoint { tid }
            | Event::Stepped { tid }
            | Event::ClockTick { tid, .. }
            | Event::Interrupted { tid }
            | Event::SyscallStop { tid }
            | Event::GroupStop { tid, .. }
            | Event::Clone { tid, .. }
            | Event::Fork { tid, .. }
            | Event::VforkDone { tid }
            | Event::Exec { tid, .. } => tid,
        }
    }

    /// The task ended (it is reaped; nothing more will come from it).
    pub fn is_end(&self) -> bool {
        matches!(self, Event::Exited { .. } | Event::Killed { .. })
    }

    /// The signal this stop would deliver if the task were resumed with
    /// it, for a signal-delivery stop.
    pub fn signal(&self) -> Option<i32> {
        match *self {
            Event::Signal { signal, .. } => Some(signal),
            _ => None,
        }
    }
}

/// Decodes one wait status. SIGTRAP stops are told apart by their
/// `si_code`; a SIGTRAP whose siginfo cannot be read (the task died) is
/// left a plain signal. A signal is journalled as undecided at once, so a
/// rescue before the engine decides delivers it rather than lose it.
fn decode(status: WaitStatus) -> Event {
    let event = decode_status(status);
    if let Event::Signal { tid, signal } = event {
        crate::rescue::note_undecided(tid, signal);
    }
    event
}

fn decode_status(status: WaitStatus) -> Event {
    match status {
        WaitStatus::Exited { tid, code } => Event::Exited { tid, code },
        WaitStatus::Killed { tid, signal } => Event::Killed { tid, signal },
        WaitStatus::Signal { tid, signal } if signal == libc::SIGTRAP => {
            match ptrace::siginfo(tid) {
                Ok(info) if ptrace::is_perf_trap(&info) => Event::ClockTick {
                    tid,
                    info: ptrace::RawSiginfo::from_info(&info),
                },
                Ok(info) => match info.si_code {
                    libc::SI_KERNEL | ptrace::TRAP_BRKPT => Event::Breakpoint { tid },
                    ptrace::TRAP_TRACE => Event::Stepped { tid },
                    _ => Event::Signal { tid, signal },
                },
                Err(_) => Event::Signal { tid, signal },
            }
        }
        WaitStatus::Signal { tid, signal } if signal == ptrace::SYSCALL_STOP => {
            Event::SyscallStop { tid }
        }
        WaitStatus::Signal { tid, signal } => Event::Signal { tid, signal },
        WaitStatus::Event { tid, event, signal } => decode_ptrace_event(tid, event, signal),
    }
}

fn decode_ptrace_event(tid: Tid, event: i32, signal: i32) -> Event {
    let message = || ptrace::event_message(tid).unwrap_or(0) as Tid;
    match event {
        libc::PTRACE_EVENT_STOP if signal == libc::SIGTRAP => Event::Interrupted { tid },
        libc::PTRACE_EVENT_STOP => Event::GroupStop { tid, signal },
        libc::PTRACE_EVENT_CLONE => Event::Clone {
            tid,
            new: message(),
        },
        libc::PTRACE_EVENT_FORK | libc::PTRACE_EVENT_VFORK => Event::Fork {
            tid,
            child: message(),
            vfork: event == libc::PTRACE_EVENT_VFORK,
        },
        libc::PTRACE_EVENT_VFORK_DONE => Event::VforkDone { tid },
        libc::PTRACE_EVENT_EXEC => Event::Exec {
            tid,
            former: message(),
        },
        // Events we do not ask for; a stop all the same.
        _ => Event::Interrupted { tid },
    }
}

/// What ended a wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wake {
    Event(Event),
    /// The user pressed Ctrl-C (only for waits that asked for it).
    Interrupt,
    /// The deadline passed.
    Timeout,
}

/// What a wait waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wait {
    /// A task's id, or -1 for any.
    pid: Tid,
    interruptible: bool,
    deadline: Option<Instant>,
    kick: Option<Tid>,
}

impl Wait {
    /// The next event of any traced task.
    pub fn any() -> Wait {
        Wait {
            pid: -1,
            interruptible: false,
            deadline: None,
            kick: None,
        }
    }

    /// The next event of one task.
    pub fn task(tid: Tid) -> Wait {
        Wait {
            pid: tid,
            ..Wait::any()
        }
    }

    /// A Ctrl-C (past or during the wait) ends it with `Wake::Interrupt`
    /// and is consumed; otherwise it stays pending for whoever asks next.
    pub fn interruptible(self) -> Wait {
        Wait {
            interruptible: true,
            ..self
        }
    }

    /// Give up at `deadline` with `Wake::Timeout`.
    pub fn until(self, deadline: Instant) -> Wait {
        Wait {
            deadline: Some(deadline),
            ..self
        }
    }

    /// A traced thread that runs during the wait, which a Ctrl-C stops so
    /// that the wait cannot miss it (see the module comment).
    pub fn kicking(self, running: Option<Tid>) -> Wait {
        Wait {
            kick: running,
            ..self
        }
    }
}

/// The event pump. Cheap to make; nothing is set up per process.
pub struct Pump {
    _private: (),
}

/// Clears the pump's published state when a wait ends, however it ends.
struct Waiting;

impl Waiting {
    fn begin(kick: Option<Tid>) -> Waiting {
        // SAFETY: gettid cannot fail.
        let me = unsafe { libc::syscall(libc::SYS_gettid) as Tid };
        KICK.store(kick.unwrap_or(0), Ordering::SeqCst);
        WAITER.store(me, Ordering::SeqCst);
        Waiting
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        WAITER.store(0, Ordering::SeqCst);
        KICK.store(0, Ordering::SeqCst);
    }
}

impl Pump {
    pub fn new() -> Result<Pump> {
        Ok(Pump { _private: () })
    }

    /// Waits for the next event as `wait` says.
    pub fn wait(&self, wait: Wait) -> Result<Wake> {
        let _waiting = Waiting::begin(wait.kick);
        let mut nap = Duration::from_micros(20);
        loop {
            if wait.interruptible && take_interrupt() {
                return Ok(Wake::Interrupt);
            }
            match wait.deadline {
                None => {
                    if let Some(status) = blocking_wait(wait.pid)? {
                        return Ok(Wake::Event(decode(status)));
                    }
                }
                Some(deadline) => {
                    if let Some(status) = ptrace::try_wait(wait.pid)? {
                        return Ok(Wake::Event(decode(status)));
                    }
                    let now = Instant::now();
                    if now >= deadline {
                        return Ok(Wake::Timeout);
                    }
                    // A Ctrl-C cuts the sleep short (EINTR); one that comes
                    // just before it is seen at most a millisecond later.
                    std::thread::sleep(nap.min(deadline - now));
                    nap = (nap * 2).min(Duration::from_millis(1));
                }
            }
        }
    }

    /// The next event of `whom` that is already there, without waiting.
    pub fn poll(&self, wait: Wait) -> Result<Option<Event>> {
        Ok(ptrace::try_wait(wait.pid)?.map(decode))
    }
}

/// One blocking `waitpid`; `None` when a signal (Ctrl-C) interrupted it.
fn blocking_wait(pid: Tid) -> Result<Option<WaitStatus>> {
    let mut status = 0;
    // SAFETY: status is a valid out-pointer.
    let ret = unsafe { libc::waitpid(pid, &mut status, libc::__WALL) };
    if ret == -1 {
        let errno = Errno::last();
        if errno == Errno::EINTR {
            return Ok(None);
        }
        return Err(Error::Os(errno));
    }
    let decoded = ptrace::decode_status(ret, status);
    if ptrace::trace_enabled() {
        eprintln!("[rdbx trace] {decoded:?}");
    }
    Ok(Some(decoded))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_interrupt_before_the_wait_ends_it_at_once() {
        let pump = Pump::new().unwrap();
        request_interrupt();
        let started = Instant::now();
        let wake = pump
            .wait(
                Wait::any()
                    .interruptible()
                    .until(Instant::now() + Duration::from_secs(5)),
            )
            .unwrap();
        assert_eq!(wake, Wake::Interrupt);
        assert!(started.elapsed() < Duration::from_secs(1));
        assert!(!interrupt_requested());
    }
}
