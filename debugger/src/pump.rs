//! The event pump: the one place where rdbx learns what its traced tasks
//! did. Every stop, exit and ptrace event of every task is received by
//! [`Pump::wait`], decoded into an [`Event`] and handed back to the engine,
//! which decides what it means (see docs/architecture.md, "The event pump").
//!
//! Waiting must wake for two things: a task changing state, and the user
//! pressing Ctrl-C. Blocking in `waitpid` and counting on EINTR loses a
//! Ctrl-C that arrives between checking the flag and entering the call, so
//! the pump never blocks in `waitpid`. It asks with WNOHANG, and when
//! nothing is ready it sleeps in `poll` on a self-pipe that two
//! async-signal-safe writers fill: our SIGCHLD handler (the kernel sends
//! SIGCHLD to the tracer for every stop and exit of a tracee) and
//! [`request_interrupt`] (the binary's SIGINT handler). A state change or a
//! Ctrl-C after the WNOHANG check leaves a byte in the pipe, so the poll
//! returns at once: no wake-up can be lost.

use crate::ptrace::{self, Tid, WaitStatus};
use crate::{Error, Result};
use nix::errno::Errno;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::OnceLock;
use std::time::Instant;

static WAKE_READ: AtomicI32 = AtomicI32::new(-1);
static WAKE_WRITE: AtomicI32 = AtomicI32::new(-1);
/// The user asked to stop the program (Ctrl-C); consumed by the pump.
static INTERRUPT: AtomicBool = AtomicBool::new(false);

/// Asks the engine to stop the running program, as Ctrl-C does. Safe to
/// call from a signal handler: an atomic store and a `write(2)`.
pub fn request_interrupt() {
    INTERRUPT.store(true, Ordering::SeqCst);
    wake();
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

fn wake() {
    let fd = WAKE_WRITE.load(Ordering::Relaxed);
    if fd >= 0 {
        let byte = 1u8;
        // SAFETY: write(2) of one byte from a live local; a full pipe
        // (EAGAIN) already guarantees a wake-up.
        unsafe { libc::write(fd, (&byte as *const u8).cast(), 1) };
    }
}

extern "C" fn on_sigchld(_: libc::c_int) {
    let saved = Errno::last_raw();
    wake();
    Errno::set_raw(saved);
}

/// Creates the self-pipe and installs the SIGCHLD handler, once per process.
fn install() -> Result<()> {
    static INSTALLED: OnceLock<std::result::Result<(), Errno>> = OnceLock::new();
    let outcome = INSTALLED.get_or_init(|| {
        let mut fds = [0; 2];
        // SAFETY: pipe2 writes two descriptors into the array.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_NONBLOCK | libc::O_CLOEXEC) } != 0 {
            return Err(Errno::last());
        }
        WAKE_READ.store(fds[0], Ordering::Relaxed);
        WAKE_WRITE.store(fds[1], Ordering::Relaxed);
        // SAFETY: the handler only calls write(2) and saves errno. No
        // SA_NOCLDSTOP: ptrace stops must be signalled too. SA_RESTART
        // keeps the rest of rdbx's system calls unaware of it.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_sigchld as *const () as usize;
            libc::sigemptyset(&mut action.sa_mask);
            action.sa_flags = libc::SA_RESTART;
            if libc::sigaction(libc::SIGCHLD, &action, std::ptr::null_mut()) != 0 {
                return Err(Errno::last());
            }
        }
        Ok(())
    });
    outcome.map_err(|e| Error::Other(format!("cannot set up the event pump: {e}")))
}

/// Empties the self-pipe (its bytes only say "look again").
fn drain() {
    let fd = WAKE_READ.load(Ordering::Relaxed);
    let mut buf = [0u8; 64];
    // SAFETY: reads into a live local buffer; the descriptor is non-blocking.
    while unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) } > 0 {}
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
    /// The collector's perf-event clock ticked (SIGTRAP with TRAP_PERF):
    /// the program's own signal, never a stop.
    ClockTick {
        tid: Tid,
    },
    /// Stopped by PTRACE_INTERRUPT, or a new task's first stop.
    Interrupted {
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
            | Event::ClockTick { tid }
            | Event::Interrupted { tid }
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
            match ptrace::siginfo(tid).map(|i| i.si_code) {
                Ok(libc::SI_KERNEL) | Ok(ptrace::TRAP_BRKPT) => Event::Breakpoint { tid },
                Ok(ptrace::TRAP_TRACE) => Event::Stepped { tid },
                Ok(ptrace::TRAP_PERF) => Event::ClockTick { tid },
                _ => Event::Signal { tid, signal },
            }
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

/// Whom to wait for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Whom {
    Any,
    Task(Tid),
}

/// The event pump. Cheap to make; the process-wide pipe and handler are
/// set up by the first one.
pub struct Pump {
    _private: (),
}

impl Pump {
    pub fn new() -> Result<Pump> {
        install()?;
        Ok(Pump { _private: () })
    }

    /// Waits for the next event of `whom`. With `interruptible`, a Ctrl-C
    /// (past or during the wait) ends it with `Wake::Interrupt` and is
    /// consumed; otherwise it stays pending for whoever asks next. Without
    /// a deadline the wait can last forever (until an event or Ctrl-C).
    pub fn wait(&self, whom: Whom, interruptible: bool, deadline: Option<Instant>) -> Result<Wake> {
        let pid = match whom {
            Whom::Any => -1,
            Whom::Task(tid) => tid,
        };
        loop {
            if interruptible && take_interrupt() {
                return Ok(Wake::Interrupt);
            }
            // Drain before asking: a byte written after this point means a
            // change we have not seen yet, and it will end the poll below.
            drain();
            if let Some(status) = ptrace::try_wait(pid)? {
                return Ok(Wake::Event(decode(status)));
            }
            if interruptible && interrupt_requested() {
                continue;
            }
            let timeout = match deadline {
                None => -1,
                Some(deadline) => {
                    let now = Instant::now();
                    if now >= deadline {
                        return Ok(Wake::Timeout);
                    }
                    // Round up so that we never wake just before the deadline.
                    let left = deadline - now;
                    left.as_millis().min(i32::MAX as u128) as i32 + 1
                }
            };
            poll_wake_pipe(timeout);
        }
    }

    /// The next event of `whom` that is already there, without waiting.
    pub fn poll(&self, whom: Whom) -> Result<Option<Event>> {
        let pid = match whom {
            Whom::Any => -1,
            Whom::Task(tid) => tid,
        };
        Ok(ptrace::try_wait(pid)?.map(decode))
    }
}

fn poll_wake_pipe(timeout_ms: i32) {
    let mut fds = [libc::pollfd {
        fd: WAKE_READ.load(Ordering::Relaxed),
        events: libc::POLLIN,
        revents: 0,
    }];
    // SAFETY: one valid pollfd; EINTR just means "look again".
    unsafe { libc::poll(fds.as_mut_ptr(), 1, timeout_ms) };
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn an_interrupt_before_the_wait_ends_it_at_once() {
        let pump = Pump::new().unwrap();
        request_interrupt();
        let started = Instant::now();
        let wake = pump
            .wait(
                Whom::Any,
                true,
                Some(Instant::now() + Duration::from_secs(5)),
            )
            .unwrap();
        assert_eq!(wake, Wake::Interrupt);
        assert!(started.elapsed() < Duration::from_secs(1));
        assert!(!interrupt_requested());
    }

    #[test]
    fn a_deadline_ends_a_wait_with_nothing_to_wait_for() {
        let pump = Pump::new().unwrap();
        clear_interrupt();
        // No traced children: waitpid says ECHILD.
        let wake = pump.wait(
            Whom::Any,
            false,
            Some(Instant::now() + Duration::from_millis(20)),
        );
        assert!(wake.is_err() || wake.unwrap() == Wake::Timeout);
    }
}
