//! The walk itself, run inside the SIGPROF handler.
//!
//! Everything here is async-signal-safe: no allocation, no locks, no I/O except the
//! documented /proc/self/maps lookup in `memory`, no formatting, and no panics (checked
//! arithmetic, `get` instead of indexing).

use std::mem::offset_of;
use std::sync::atomic::{AtomicU64, Ordering};

use super::memory::{StackCache, StackMemory, StackReader};
use super::table::{current_snapshot, CfaRule, RaRule, RbpRule, Rule};

/// How a walk ended; the codes are the `status` field of a stack record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnwindStatus {
    /// The outermost frame was reached (its CFI marks the return address undefined).
    Complete,
    /// The output was full and more frames exist.
    Truncated,
    /// The next frame could not be found with certainty (no CFI, a rule we do not follow,
    /// unreadable memory, a CFA that does not grow): the frames listed are right, the rest
    /// is unknown.
    Failed,
}

impl UnwindStatus {
    /// The status code of a stack record: 0 complete, 1 truncated, 2 failed.
    pub const fn code(self) -> u16 {
        match self {
            UnwindStatus::Complete => 0,
            UnwindStatus::Truncated => 1,
            UnwindStatus::Failed => 2,
        }
    }
}

/// The result of one walk: `out[..depth]` holds the frames, leaf first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Unwound {
    pub depth: usize,
    pub status: UnwindStatus,
}

/// The address `__restore_rt` (or whatever the signal handlers return to); 0 = unknown.
pub(super) static SIGNAL_RESTORER: AtomicU64 = AtomicU64::new(0);

/// Record the address signal handlers return to (the kernel's `sa_restorer`). A return
/// address equal to it marks a signal frame, whose registers are read from the ucontext
/// the kernel saved on the stack.
pub fn set_signal_restorer(address: u64) {
    SIGNAL_RESTORER.store(address, Ordering::Release);
}

/// The recorded signal restorer, if any.
pub fn signal_restorer() -> Option<u64> {
    match SIGNAL_RESTORER.load(Ordering::Acquire) {
        0 => None,
        address => Some(address),
    }
}

/// Find the restorer glibc installs with every handler: ask the kernel (raw rt_sigaction,
/// so glibc cannot hide it) for the `sa_restorer` of any installed handler. None when no
/// handler with SA_RESTORER is installed yet (install the profiling handler first).
pub fn discover_signal_restorer() -> Option<u64> {
    /// The kernel's struct sigaction on x86-64.
    #[repr(C)]
    struct KernelSigaction {
        handler: u64,
        flags: u64,
        restorer: u64,
        mask: u64,
    }
    const SA_RESTORER: u64 = 0x0400_0000;
    (1..=64).find_map(|signal: libc::c_long| {
        let mut action = KernelSigaction {
            handler: 0,
            flags: 0,
            restorer: 0,
            mask: 0,
        };
        // SAFETY: a query (no new action) into our own struct of the kernel's layout.
        let result = unsafe {
            libc::syscall(
                libc::SYS_rt_sigaction,
                signal,
                std::ptr::null::<KernelSigaction>(),
                &mut action as *mut KernelSigaction,
                8usize,
            )
        };
        let installed = action.handler > 1; // neither SIG_DFL (0) nor SIG_IGN (1)
        (result == 0 && installed && action.flags & SA_RESTORER != 0 && action.restorer != 0)
            .then_some(action.restorer)
    })
}

/// Unwind the stack of the context a signal interrupted.
///
/// `out[0]` receives the interrupted pc; the callers' return addresses follow (after a
/// signal frame: the restorer's address, then the pc the signal interrupted, which is an
/// exact pc, not a return address). Tables must have been prepared with
/// [`refresh_tables`](super::refresh_tables); without them the walk fails after frame 0.
///
/// Async-signal-safe: no allocation, no locks, no panics; reads the stack directly only
/// inside the mapping known to hold it, otherwise through process_vm_readv; reads
/// /proc/self/maps (open/read/close) at most once per new stack per `StackCache`; errno is
/// preserved.
///
/// # Safety
/// `ucontext` must be null or the `ucontext_t` the kernel passed to an SA_SIGINFO handler
/// running on this thread.
pub unsafe fn unwind_from_signal(
    ucontext: *const libc::c_void,
    stack: &mut StackCache,
    out: &mut [u64],
) -> Unwound {
    // SAFETY: the caller's contract.
    unsafe { unwind_signal_context(ucontext, stack, out, &mut NoWatch) }
}

/// [`unwind_from_signal`], also finding the frame that holds `address` when it lies on the
/// walked stack: the first frame whose CFA is above it, provided it is not below that
/// frame's stack pointer (the frame's extent is from its stack pointer up to its CFA; a
/// frame that was interrupted, the leaf, also owns the 128-byte red zone below its stack
/// pointer, where a leaf function keeps locals without moving it). None when the address
/// is not in any frame the walk went through (heap, another thread's stack, a frame above
/// where the walk ended).
///
/// # Safety
/// As for [`unwind_from_signal`].
pub unsafe fn unwind_from_signal_locating(
    ucontext: *const libc::c_void,
    stack: &mut StackCache,
    out: &mut [u64],
    address: u64,
) -> (Unwound, Option<HoldingFrame>) {
    let mut locate = Locate {
        address,
        found: None,
    };
    // SAFETY: the caller's contract.
    let unwound = unsafe { unwind_signal_context(ucontext, stack, out, &mut locate) };
    (unwound, locate.found)
}

/// # Safety
/// As for [`unwind_from_signal`].
unsafe fn unwind_signal_context(
    ucontext: *const libc::c_void,
    stack: &mut StackCache,
    out: &mut [u64],
    watch: &mut impl FrameWatch,
) -> Unwound {
    let ucontext = ucontext.cast::<libc::ucontext_t>();
    if ucontext.is_null() {
        return Unwound {
            depth: 0,
            status: UnwindStatus::Failed,
        };
    }
    // SAFETY: the kernel's ucontext of the running handler is valid, readable memory.
    let registers = unsafe { Registers::from_ucontext(ucontext) };
    // SAFETY: errno is a thread-local int, always accessible.
    let errno = unsafe { *libc::__errno_location() };
    let unwound = walk(registers, stack, out, watch);
    // SAFETY: as above.
    unsafe { *libc::__errno_location() = errno };
    unwound
}

/// The frame that holds an address (see [`unwind_from_signal_locating`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HoldingFrame {
    /// The frame's index in the walk's output, leaf = 0.
    pub index: usize,
    /// The frame's canonical frame address: its variables are at fixed offsets from it.
    pub cfa: u64,
}

/// Bytes below an interrupted frame's stack pointer that are still its own (the x86-64
/// System V red zone).
const RED_ZONE: u64 = 128;

/// Told each frame's extent as the walk finds it. The clock's walk has nothing to watch:
/// [`NoWatch`] compiles to nothing.
trait FrameWatch {
    /// Frame `index` spans `[low, cfa)`.
    fn frame(&mut self, index: usize, low: u64, cfa: u64);
}

struct NoWatch;

impl FrameWatch for NoWatch {
    #[inline(always)]
    fn frame(&mut self, _index: usize, _low: u64, _cfa: u64) {}
}

struct Locate {
    address: u64,
    found: Option<HoldingFrame>,
}

impl FrameWatch for Locate {
    fn frame(&mut self, index: usize, low: u64, cfa: u64) {
        if self.found.is_none() && (low..cfa).contains(&self.address) {
            self.found = Some(HoldingFrame { index, cfa });
        }
    }
}

/// The (pc, rsp, rbp) a signal interrupted, from its handler's ucontext, as
/// [`unwind_memoized`](super::unwind_memoized) starts from them; None for a null context.
///
/// # Safety
/// `ucontext` must be null or the `ucontext_t` the kernel passed to an SA_SIGINFO handler
/// running on this thread.
pub unsafe fn signal_registers(ucontext: *const libc::c_void) -> Option<(u64, u64, u64)> {
    let ucontext = ucontext.cast::<libc::ucontext_t>();
    if ucontext.is_null() {
        return None;
    }
    // SAFETY: the kernel's ucontext of the running handler is valid, readable memory.
    let registers = unsafe { Registers::from_ucontext(ucontext) };
    Some((registers.pc, registers.rsp, registers.rbp.unwrap_or(0)))
}

/// Unwind the calling thread's own stack from registers read at one instruction of the
/// caller (`pc` that instruction, `rsp` and `rbp` their values there): how the heap hooks
/// find who called malloc. `out[0]` receives `pc`.
///
/// Async-signal-safe, as [`unwind_from_signal`]; errno is preserved.
pub fn unwind_from_registers(
    pc: u64,
    rsp: u64,
    rbp: u64,
    stack: &mut StackCache,
    out: &mut [u64],
) -> Unwound {
    let registers = Registers {
        pc,
        rsp,
        rbp: Some(rbp),
    };
    // SAFETY: errno is a thread-local int, always accessible.
    let errno = unsafe { *libc::__errno_location() };
    let unwound = walk(registers, stack, out, &mut NoWatch);
    // SAFETY: as above.
    unsafe { *libc::__errno_location() = errno };
    unwound
}

/// The registers the walk follows; rbp is None once no rule tells where it is.
#[derive(Clone, Copy, Debug)]
pub(super) struct Registers {
    pub(super) pc: u64,
    pub(super) rsp: u64,
    pub(super) rbp: Option<u64>,
}

/// Byte offset of `gregs[index]` inside a `ucontext_t`.
const fn greg_offset(index: libc::c_int) -> u64 {
    (offset_of!(libc::ucontext_t, uc_mcontext) + offset_of!(libc::mcontext_t, gregs)) as u64
        + 8 * index as u64
}

impl Registers {
    /// # Safety
    /// `ucontext` must point to a readable `ucontext_t`.
    unsafe fn from_ucontext(ucontext: *const libc::ucontext_t) -> Registers {
        // SAFETY: guaranteed by the caller.
        let gregs = unsafe { &(*ucontext).uc_mcontext.gregs };
        let greg = |index: libc::c_int| {
            usize::try_from(index)
                .ok()
                .and_then(|index| gregs.get(index))
                .map_or(0, |&value| value as u64)
        };
        Registers {
            pc: greg(libc::REG_RIP),
            rsp: greg(libc::REG_RSP),
            rbp: Some(greg(libc::REG_RBP)),
        }
    }

    /// The registers saved in the `ucontext_t` at `address` (a signal frame on the stack).
    fn from_signal_frame(reader: &StackReader, address: u64) -> Option<Registers> {
        let read = |index| reader.read_u64(address.checked_add(greg_offset(index))?);
        Some(Registers {
            pc: read(libc::REG_RIP)?,
            rsp: read(libc::REG_RSP)?,
            rbp: Some(read(libc::REG_RBP)?),
        })
    }
}

/// The frames written so far.
struct Frames<'a> {
    out: &'a mut [u64],
    depth: usize,
}

impl Frames<'_> {
    /// Append a frame; false when the output is full.
    fn push(&mut self, pc: u64) -> bool {
        match self.out.get_mut(self.depth) {
            Some(slot) => {
                *slot = pc;
                self.depth += 1;
                true
            }
            None => false,
        }
    }

    fn end(&self, status: UnwindStatus) -> Unwound {
        Unwound {
            depth: self.depth,
            status,
        }
    }
}

/// One step up: the caller's frame, or the end of the stack.
pub(super) enum Step {
    Caller {
        return_address: u64,
        cfa: u64,
        rbp: Option<u64>,
    },
    Outermost,
}

fn walk(
    mut registers: Registers,
    cache: &mut StackCache,
    out: &mut [u64],
    watch: &mut impl FrameWatch,
) -> Unwound {
    let mut frames = Frames { out, depth: 0 };
    if !frames.push(registers.pc) {
        return frames.end(UnwindStatus::Truncated);
    }
    let Some(snapshot) = current_snapshot() else {
        return frames.end(UnwindStatus::Failed);
    };
    let restorer = SIGNAL_RESTORER.load(Ordering::Acquire);
    let mut reader = StackReader::new();
    reader.set_window(0, registers.rsp, cache);
    // Frame 0 and a frame a signal interrupted hold an exact pc; the others hold return
    // addresses, whose call instruction ends one byte before.
    let mut exact_pc = true;
    loop {
        let lookup_pc = if exact_pc {
            registers.pc
        } else {
            registers.pc.wrapping_sub(1)
        };
        let Some(rule) = snapshot.rule_for(lookup_pc) else {
            return frames.end(UnwindStatus::Failed);
        };
        let (return_address, cfa, rbp) = match step(&rule, &registers, &reader) {
            Some(Step::Outermost) => return frames.end(UnwindStatus::Complete),
            Some(Step::Caller {
                return_address,
                cfa,
                rbp,
            }) => (return_address, cfa, rbp),
            None => return frames.end(UnwindStatus::Failed),
        };
        // Each caller's frame lies above its callee's: anything else is a corrupt stack
        // or wrong CFI, and following it could loop.
        if cfa <= registers.rsp {
            return frames.end(UnwindStatus::Failed);
        }
        // This frame, the last pushed, spans from its stack pointer (less the red zone
        // when it was interrupted rather than calling) up to its CFA.
        let low = if exact_pc {
            registers.rsp.saturating_sub(RED_ZONE)
        } else {
            registers.rsp
        };
        watch.frame(frames.depth.saturating_sub(1), low, cfa);
        // A zero return address is the conventional end of a stack, never a real caller.
        if return_address == 0 {
            return frames.end(UnwindStatus::Complete);
        }
        if !frames.push(return_address) {
            return frames.end(UnwindStatus::Truncated);
        }
        if restorer != 0 && return_address == restorer {
            // A signal handler returns to the restorer; the frame below is the signal
            // frame, with the interrupted registers in the ucontext right at the CFA.
            let Some(interrupted) = Registers::from_signal_frame(&reader, cfa) else {
                return frames.end(UnwindStatus::Failed);
            };
            registers = interrupted;
            reader.set_window(1, registers.rsp, cache);
            if !frames.push(registers.pc) {
                return frames.end(UnwindStatus::Truncated);
            }
            exact_pc = true;
        } else {
            registers = Registers {
                pc: return_address,
                rsp: cfa,
                rbp,
            };
            exact_pc = false;
        }
    }
}

/// Apply one row's rules to the current registers.
#[inline]
pub(super) fn step(rule: &Rule, registers: &Registers, reader: &impl StackMemory) -> Option<Step> {
    let cfa = match rule.cfa {
        CfaRule::NoInfo | CfaRule::Unknown => return None,
        CfaRule::RspOffset(offset) => registers.rsp.checked_add_signed(offset.into())?,
        CfaRule::RbpOffset(offset) => registers.rbp?.checked_add_signed(offset.into())?,
        CfaRule::DerefRbpOffset(offset) => {
            reader.read_u64(registers.rbp?.checked_add_signed(offset.into())?)?
        }
        CfaRule::Plt {
            rsp_offset,
            mask,
            threshold,
        } => {
            let pushed = if registers.pc & u64::from(mask) >= u64::from(threshold) {
                8
            } else {
                0
            };
            registers
                .rsp
                .checked_add_signed(rsp_offset.into())?
                .checked_add(pushed)?
        }
    };
    let return_address = match rule.ra {
        RaRule::Undefined => return Some(Step::Outermost),
        RaRule::Unknown => return None,
        RaRule::AtCfa(offset) => reader.read_u64(cfa.checked_add_signed(offset.into())?)?,
    };
    let rbp = match rule.rbp {
        RbpRule::Unchanged => registers.rbp,
        RbpRule::AtCfa(offset) => Some(reader.read_u64(cfa.checked_add_signed(offset.into())?)?),
        RbpRule::Unknown => None,
    };
    Some(Step::Caller {
        return_address,
        cfa,
        rbp,
    })
}
