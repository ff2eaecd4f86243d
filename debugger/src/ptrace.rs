//! A thin layer over the raw ptrace and wait system calls.
//!
//! nix's `Signal` and `WaitStatus` cannot represent real-time signals
//! (glibc itself uses signals 32 and 33 in every threaded program), so the
//! calls that carry a signal number or decode a wait status are made here
//! with plain integers.

use crate::Result;
use nix::errno::Errno;

pub type Tid = i32;

/// The tracing options every traced process gets, set atomically by
/// PTRACE_SEIZE so that no clone, fork or exec escapes between the attach
/// and the options. TRACESYSGOOD tells the system-call stops of
/// [`syscall`] from SIGTRAPs.
pub const OPTIONS: libc::c_int = libc::PTRACE_O_TRACECLONE
    | libc::PTRACE_O_TRACEFORK
    | libc::PTRACE_O_TRACEVFORK
    | libc::PTRACE_O_TRACEVFORKDONE
    | libc::PTRACE_O_TRACEEXEC
    | libc::PTRACE_O_TRACESYSGOOD;

/// WSTOPSIG (and si_code) of a system-call entry or exit stop.
pub const SYSCALL_STOP: i32 = libc::SIGTRAP | 0x80;

/// The kernel's codes for a system call a signal or a stop interrupted and
/// that it restarts by itself when no handler runs.
const ERESTARTSYS: i64 = -512;
const ERESTARTNOINTR: i64 = -513;
const ERESTARTNOHAND: i64 = -514;
const ERESTART_RESTARTBLOCK: i64 = -516;

/// Whether a thread stopped with `regs` is in a system call that the
/// kernel restarts on its way back to user mode (the call was interrupted
/// by a stop or a signal; the user never sees it unless a handler runs).
pub fn restart_pending(regs: &libc::user_regs_struct) -> bool {
    (regs.orig_rax as i64) >= 0
        && [
            ERESTARTSYS,
            ERESTARTNOINTR,
            ERESTARTNOHAND,
            ERESTART_RESTARTBLOCK,
        ]
        .contains(&(regs.rax as i64))
}

/// Whether delivering the perf event's SIGTRAP `info` now, to a thread
/// stopped with `regs`, would make the system call it is in fail with
/// EINTR where the kernel would restart it by itself: a handler that runs
/// first always does that to ERESTARTNOHAND and ERESTART_RESTARTBLOCK (a
/// sleep, a poll or select with a timeout), to ERESTARTSYS (a read, a
/// futex wait) only without SA_RESTART, never to ERESTARTNOINTR. The
/// collector's handler has SA_RESTART: after it the call starts again as
/// it would without it; a program's own perf event may have a handler
/// without.
pub fn delivery_cuts_short(regs: &libc::user_regs_struct, info: &libc::siginfo_t) -> bool {
    if (regs.orig_rax as i64) < 0 {
        return false;
    }
    match regs.rax as i64 {
        ERESTARTNOHAND | ERESTART_RESTARTBLOCK => true,
        ERESTARTSYS => !is_collector_perf_tag(perf_data(info)),
        _ => false,
    }
}

/// `si_code` of a SIGTRAP raised by a perf event with `sigtrap` set (the
/// collector's clock); not in libc yet.
pub const TRAP_PERF: i32 = 6;

/// `si_code` of a signal queued with rt_sigqueueinfo / rt_tgsigqueueinfo.
pub const SI_QUEUE: i32 = -1;

/// `sig_data` of the collector's perf events, which the kernel passes as
/// si_perf_data: its clock ("RDBXPROF") and off-CPU profiling
/// ("RDBXOFFC"); kept in step with collector-lib's clock.rs and offcpu.rs.
pub const COLLECTOR_PERF_TAGS: [u64; 2] = [0x5244_4258_5052_4f46, OFFCPU_TAG];

/// `sig_data` of the collector's context-switch events (off-CPU profiling).
pub const OFFCPU_TAG: u64 = 0x5244_4258_4f46_4643;

/// `sig_data` of the collector's counter events: "RDBXHWC" and the
/// counter's index in the low byte (0..8); kept in step with
/// collector-lib's counters.rs.
const COLLECTOR_COUNTER_TAG: u64 = 0x5244_4258_4857_4300;
const COLLECTOR_COUNTERS: u64 = 8;

/// Whether si_perf_data is one of the collector's perf events' tags.
pub fn is_collector_perf_tag(tag: u64) -> bool {
    COLLECTOR_PERF_TAGS.contains(&tag)
        || (tag & !0xff == COLLECTOR_COUNTER_TAG && tag & 0xff < COLLECTOR_COUNTERS)
}

/// si_perf_data of a TRAP_PERF siginfo (offset 24 on x86-64, where a
/// queued signal has its si_value; the libc crate has no accessor).
pub fn perf_data(info: &libc::siginfo_t) -> u64 {
    let base = (info as *const libc::siginfo_t).cast::<u8>();
    // SAFETY: siginfo_t is 128 bytes; offset 24..32 is inside it.
    unsafe { std::ptr::read_unaligned(base.add(24).cast::<u64>()) }
}

/// Whether a SIGTRAP's siginfo is a perf event's (the collector's clock or
/// off-CPU events, or a program's own `sigtrap` event), or one of the
/// collector's that rdbx had to queue again ([`requeue_perf_trap`]):
/// passed on silently, never a stop.
pub fn is_perf_trap(info: &libc::siginfo_t) -> bool {
    info.si_code == TRAP_PERF
        || (info.si_code == SI_QUEUE && is_collector_perf_tag(perf_data(info)))
}

/// A siginfo_t as plain words, for events that must be Copy + Eq.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawSiginfo(pub [u64; 16]);

const _: () = assert!(std::mem::size_of::<libc::siginfo_t>() == 128);

impl RawSiginfo {
    pub fn from_info(info: &libc::siginfo_t) -> RawSiginfo {
        // SAFETY: siginfo_t is 128 bytes of plain data.
        RawSiginfo(unsafe { std::mem::transmute_copy(info) })
    }

    pub fn info(&self) -> libc::siginfo_t {
        // SAFETY: 16 words are a siginfo_t.
        unsafe { std::mem::transmute_copy(&self.0) }
    }
}

/// Queues a perf event's SIGTRAP again for a thread that is not in its
/// signal-delivery stop any more (a resume gives a signal to the thread
/// only from there). The kernel lets nobody forge TRAP_PERF for another
/// process, but a queued signal keeps the payload: SI_QUEUE with
/// si_perf_data where it was, which the collector accepts as its own.
pub fn requeue_perf_trap(pid: i32, tid: Tid, info: &libc::siginfo_t) -> Result<()> {
    let mut copy = *info;
    copy.si_code = SI_QUEUE;
    // SAFETY: the kernel reads a siginfo_t from the pointer.
    check(unsafe {
        libc::syscall(
            libc::SYS_rt_tgsigqueueinfo,
            pid,
            tid,
            libc::SIGTRAP,
            &copy as *const libc::siginfo_t,
        )
    })
    .map(drop)
}

/// `si_code` of a single-step trap.
pub const TRAP_TRACE: i32 = 2;

/// `si_code` of a hardware breakpoint trap (an `int3` gives SI_KERNEL).
pub const TRAP_BRKPT: i32 = 1;

/// What `waitpid` reported for one task, before the engine knows what it
/// means (see `pump::Event` for that).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitStatus {
    Exited {
        tid: Tid,
        code: i32,
    },
    Killed {
        tid: Tid,
        signal: i32,
    },
    /// A signal-delivery stop.
    Signal {
        tid: Tid,
        signal: i32,
    },
    /// A PTRACE_EVENT_* stop; `signal` is WSTOPSIG (for PTRACE_EVENT_STOP:
    /// SIGTRAP for an interrupt or a new task, the stop signal for a
    /// group-stop).
    Event {
        tid: Tid,
        event: i32,
        signal: i32,
    },
}

fn check(ret: libc::c_long) -> Result<libc::c_long> {
    if ret == -1 {
        Err(Errno::last().into())
    } else {
        Ok(ret)
    }
}

/// One non-blocking `waitpid` for any traced task (`tid` = -1) or one.
/// Only the event pump (and the rescue path, which cannot use it) calls it.
pub(crate) fn try_wait(tid: Tid) -> Result<Option<WaitStatus>> {
    let mut status = 0;
    // SAFETY: status is a valid out-pointer.
    let ret = unsafe { libc::waitpid(tid, &mut status, libc::__WALL | libc::WNOHANG) };
    if ret == -1 {
        let errno = Errno::last();
        if errno == Errno::EINTR {
            return Ok(None);
        }
        return Err(errno.into());
    }
    if ret == 0 {
        return Ok(None);
    }
    let decoded = decode_status(ret, status);
    if trace_enabled() {
        eprintln!("[rdbx trace] {decoded:?}");
    }
    Ok(Some(decoded))
}

/// `RDBX_TRACE=1` prints every wait event on stderr, for debugging the engine.
pub(crate) fn trace_enabled() -> bool {
    static ENABLED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ENABLED.get_or_init(|| std::env::var_os("RDBX_TRACE").is_some())
}

pub(crate) fn decode_status(tid: Tid, status: i32) -> WaitStatus {
    if libc::WIFEXITED(status) {
        WaitStatus::Exited {
            tid,
            code: libc::WEXITSTATUS(status),
        }
    } else if libc::WIFSIGNALED(status) {
        WaitStatus::Killed {
            tid,
            signal: libc::WTERMSIG(status),
        }
    } else {
        let signal = libc::WSTOPSIG(status);
        let event = (status >> 16) & 0xff;
        if event != 0 {
            WaitStatus::Event { tid, event, signal }
        } else {
            WaitStatus::Signal { tid, signal }
        }
    }
}

/// PTRACE_SEIZE with our options: the task is traced but not stopped.
pub fn seize(tid: Tid, options: libc::c_int) -> Result<()> {
    // SAFETY: options go in the data argument; no pointers.
    check(unsafe { libc::ptrace(libc::PTRACE_SEIZE, tid, 0usize, options as usize) }).map(drop)
}

/// PTRACE_INTERRUPT: the seized task stops (PTRACE_EVENT_STOP) without any
/// signal being sent. If it is in a ptrace-stop already, it stops again
/// right after its next resume; any other stop before that also consumes
/// the request.
pub fn interrupt(tid: Tid) -> Result<()> {
    // SAFETY: no pointers are passed.
    check(unsafe { libc::ptrace(libc::PTRACE_INTERRUPT, tid, 0usize, 0usize) }).map(drop)
}

/// PTRACE_LISTEN: a seized task in a group-stop stays stopped but is
/// reported again when it would resume (SIGCONT) or is interrupted.
pub fn listen(tid: Tid) -> Result<()> {
    // SAFETY: no pointers are passed.
    check(unsafe { libc::ptrace(libc::PTRACE_LISTEN, tid, 0usize, 0usize) }).map(drop)
}

pub fn cont(tid: Tid, signal: i32) -> Result<()> {
    // SAFETY: PTRACE_CONT takes the signal in the data argument.
    check(unsafe { libc::ptrace(libc::PTRACE_CONT, tid, 0usize, signal as usize) }).map(drop)
}

/// Whether `tid` is in a signal-delivery stop, the only stop from which a
/// signal given to PTRACE_CONT or PTRACE_DETACH is delivered. A thread in
/// a PTRACE_EVENT stop (an interrupt, a group-stop, a clone) has an event
/// code in its siginfo; a system-call stop has its stop signal as si_code.
pub fn in_signal_delivery_stop(tid: Tid) -> bool {
    siginfo(tid).is_ok_and(|info| (info.si_code >> 8) <= 0 && info.si_code != SYSCALL_STOP)
}

/// PTRACE_SYSCALL: runs on like PTRACE_CONT, stopping at the next system
/// call's entry and at its exit ([`SYSCALL_STOP`]).
pub fn syscall(tid: Tid, signal: i32) -> Result<()> {
    // SAFETY: as for cont.
    check(unsafe { libc::ptrace(libc::PTRACE_SYSCALL, tid, 0usize, signal as usize) }).map(drop)
}

/// Whether `tid` is stopped at a system call's entry: the call has not
/// run yet (PTRACE_GET_SYSCALL_INFO; false for any other stop).
pub fn at_syscall_entry(tid: Tid) -> bool {
    // struct ptrace_syscall_info: op is the first byte of 88.
    let mut info = [0u64; 11];
    // SAFETY: the kernel writes at most `addr` bytes to the buffer.
    let written = unsafe {
        libc::ptrace(
            libc::PTRACE_GET_SYSCALL_INFO,
            tid,
            std::mem::size_of_val(&info),
            info.as_mut_ptr(),
        )
    };
    written > 0 && info[0] as u8 == libc::PTRACE_SYSCALL_INFO_ENTRY
}

pub fn single_step(tid: Tid, signal: i32) -> Result<()> {
    // SAFETY: as for cont.
    check(unsafe { libc::ptrace(libc::PTRACE_SINGLESTEP, tid, 0usize, signal as usize) }).map(drop)
}

pub fn detach(tid: Tid, signal: i32) -> Result<()> {
    // SAFETY: as for cont.
    check(unsafe { libc::ptrace(libc::PTRACE_DETACH, tid, 0usize, signal as usize) }).map(drop)
}

pub fn set_options(tid: Tid, options: libc::c_int) -> Result<()> {
    // SAFETY: options go in the data argument.
    check(unsafe { libc::ptrace(libc::PTRACE_SETOPTIONS, tid, 0usize, options as usize) }).map(drop)
}

/// The message of the last PTRACE_EVENT stop (new tid, child pid...).
pub fn event_message(tid: Tid) -> Result<u64> {
    let mut message: libc::c_ulong = 0;
    // SAFETY: the kernel writes one unsigned long to the pointer.
    check(unsafe {
        libc::ptrace(
            libc::PTRACE_GETEVENTMSG,
            tid,
            0usize,
            &mut message as *mut libc::c_ulong,
        )
    })?;
    Ok(message)
}

pub fn siginfo(tid: Tid) -> Result<libc::siginfo_t> {
    // SAFETY: zeroed siginfo_t is valid; the kernel fills it.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    check(unsafe {
        libc::ptrace(
            libc::PTRACE_GETSIGINFO,
            tid,
            0usize,
            &mut info as *mut libc::siginfo_t,
        )
    })?;
    Ok(info)
}

/// The signals queued for `tid` alone (not the process), oldest first,
/// into `buf`; how many there are (at most `buf.len()`). PTRACE_PEEKSIGINFO
/// does not allocate, so the rescue can use it too.
pub fn queued_signals(tid: Tid, buf: &mut [libc::siginfo_t]) -> Result<usize> {
    #[repr(C)]
    struct PeekArgs {
        off: u64,
        flags: u32,
        nr: i32,
    }
    let args = PeekArgs {
        off: 0,
        flags: 0,
        nr: buf.len() as i32,
    };
    // SAFETY: the kernel reads the arguments and writes at most `nr`
    // siginfo_t into `buf`.
    let n = check(unsafe {
        libc::ptrace(
            libc::PTRACE_PEEKSIGINFO,
            tid,
            &args as *const PeekArgs,
            buf.as_mut_ptr(),
        )
    })?;
    Ok(n as usize)
}

/// Whether a SIGTRAP is queued for `tid`: an int3 or single-step trap it
/// has taken but not reported yet (an interrupt stop came first).
pub fn trap_queued(tid: Tid) -> bool {
    // SAFETY: zeroed siginfo_t is valid; the kernel fills what it returns.
    let mut queued: [libc::siginfo_t; 8] = unsafe { std::mem::zeroed() };
    queued_signals(tid, &mut queued)
        .is_ok_and(|n| queued[..n].iter().any(|i| i.si_signo == libc::SIGTRAP))
}

pub fn set_siginfo(tid: Tid, info: &libc::siginfo_t) -> Result<()> {
    // SAFETY: the kernel reads a siginfo_t from the pointer.
    check(unsafe {
        libc::ptrace(
            libc::PTRACE_SETSIGINFO,
            tid,
            0usize,
            info as *const libc::siginfo_t,
        )
    })
    .map(drop)
}

pub fn get_regs(tid: Tid) -> Result<libc::user_regs_struct> {
    // SAFETY: user_regs_struct is plain integers.
    let mut regs: libc::user_regs_struct = unsafe { std::mem::zeroed() };
    check(unsafe {
        libc::ptrace(
            libc::PTRACE_GETREGS,
            tid,
            0usize,
            &mut regs as *mut libc::user_regs_struct,
        )
    })?;
    Ok(regs)
}

pub fn set_regs(tid: Tid, regs: &libc::user_regs_struct) -> Result<()> {
    // SAFETY: the kernel reads a user_regs_struct from the pointer.
    check(unsafe {
        libc::ptrace(
            libc::PTRACE_SETREGS,
            tid,
            0usize,
            regs as *const libc::user_regs_struct,
        )
    })
    .map(drop)
}

pub fn get_fpregs(tid: Tid) -> Result<libc::user_fpregs_struct> {
    // SAFETY: user_fpregs_struct is plain integers.
    let mut regs: libc::user_fpregs_struct = unsafe { std::mem::zeroed() };
    check(unsafe {
        libc::ptrace(
            libc::PTRACE_GETFPREGS,
            tid,
            0usize,
            &mut regs as *mut libc::user_fpregs_struct,
        )
    })?;
    Ok(regs)
}

/// Sends `signal` to one thread of process `pid`.
pub fn tgkill(pid: i32, tid: Tid, signal: i32) -> Result<()> {
    // SAFETY: plain system call with integer arguments.
    check(unsafe { libc::syscall(libc::SYS_tgkill, pid, tid, signal) }).map(drop)
}

// ----- register sets for injected calls (call.rs) ---------------------

/// `NT_X86_XSTATE`: the XSAVE area (x87, SSE, AVX... state).
const NT_X86_XSTATE: usize = 0x202;
/// Large enough for every XSAVE layout the kernel reports (AVX-512 and AMX
/// tile configuration included; tile data is not part of the ptrace view).
const XSTATE_BUFFER: usize = 16 * 1024;

/// The thread's XSAVE area (`PTRACE_GETREGSET NT_X86_XSTATE`), as long as
/// the kernel says it is.
pub fn get_xstate(tid: Tid) -> Result<Vec<u8>> {
    let mut buffer = vec![0u8; XSTATE_BUFFER];
    let mut iov = libc::iovec {
        iov_base: buffer.as_mut_ptr().cast(),
        iov_len: buffer.len(),
    };
    // SAFETY: the kernel writes at most iov_len bytes to iov_base and
    // stores the length it wrote in iov_len.
    check(unsafe {
        libc::ptrace(
            libc::PTRACE_GETREGSET,
            tid,
            NT_X86_XSTATE,
            &mut iov as *mut libc::iovec,
        )
    })?;
    buffer.truncate(iov.iov_len);
    Ok(buffer)
}

/// Writes back an XSAVE area read by `get_xstate`.
pub fn set_xstate(tid: Tid, state: &[u8]) -> Result<()> {
    let mut iov = libc::iovec {
        iov_base: state.as_ptr() as *mut libc::c_void,
        iov_len: state.len(),
    };
    // SAFETY: the kernel only reads iov_len bytes from iov_base.
    check(unsafe {
        libc::ptrace(
            libc::PTRACE_SETREGSET,
            tid,
            NT_X86_XSTATE,
            &mut iov as *mut libc::iovec,
        )
    })
    .map(drop)
}

pub fn set_fpregs(tid: Tid, regs: &libc::user_fpregs_struct) -> Result<()> {
    // SAFETY: the kernel reads a user_fpregs_struct from the pointer.
    check(unsafe {
        libc::ptrace(
            libc::PTRACE_SETFPREGS,
            tid,
            0usize,
            regs as *const libc::user_fpregs_struct,
        )
    })
    .map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn restarts_a_handler_would_cut_short() {
        // SAFETY: plain integers.
        let mut regs: libc::user_regs_struct = unsafe { std::mem::zeroed() };
        // SAFETY: a zeroed siginfo_t is valid.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        let with_tag = |info: &mut libc::siginfo_t, tag: u64| {
            let base = (info as *mut libc::siginfo_t).cast::<u8>();
            // SAFETY: offset 24..32 is inside the 128 bytes.
            unsafe { std::ptr::write_unaligned(base.add(24).cast::<u64>(), tag) };
        };
        with_tag(&mut info, OFFCPU_TAG);
        regs.orig_rax = libc::SYS_nanosleep as u64;
        for (rax, pending, cut) in [
            (-516i64, true, true),
            (-514, true, true),
            (-513, true, false),
            (-512, true, false),
            (-4, false, false),
            (0, false, false),
        ] {
            regs.rax = rax as u64;
            assert_eq!(restart_pending(&regs), pending, "{rax}");
            assert_eq!(delivery_cuts_short(&regs, &info), cut, "{rax}");
        }
        // A program's own perf event: its handler may lack SA_RESTART.
        with_tag(&mut info, 0x1234);
        regs.rax = -512i64 as u64;
        assert!(delivery_cuts_short(&regs, &info));
        // Not in a system call (an interrupt or fault).
        regs.orig_rax = u64::MAX;
        regs.rax = -516i64 as u64;
        assert!(!restart_pending(&regs) && !delivery_cuts_short(&regs, &info));
    }

    #[test]
    fn the_collectors_tags_are_known() {
        for tag in COLLECTOR_PERF_TAGS {
            assert!(is_collector_perf_tag(tag));
        }
        assert!(is_collector_perf_tag(COLLECTOR_COUNTER_TAG));
        assert!(is_collector_perf_tag(COLLECTOR_COUNTER_TAG | 7));
        assert!(!is_collector_perf_tag(COLLECTOR_COUNTER_TAG | 8));
        assert!(!is_collector_perf_tag(0x1234));
    }
}
