//! Call-stack unwinding for x86-64 Linux: DWARF CFI (`.eh_frame`,
//! `.debug_frame`), signal trampolines, and frame pointers as a fallback.
//!
//! The unwinder knows nothing about processes: it reads the target through
//! [`UnwindMemory`] and finds each object's CFI through [`ObjectLookup`].

mod cfi;

pub use cfi::CfiTable;

use cfi::{CfaRecipe, Context, Expression, FrameRecipe, RegisterRecipe};
use gimli::{EvaluationResult, Location, Value};

/// DWARF register numbers of the registers the unwinder cares about.
pub const RIP: usize = 16;
pub const RSP: usize = 7;
pub const RBP: usize = 6;

/// Number of registers tracked: DWARF 0..=16.
pub const REGISTER_COUNT: usize = 17;

/// Register values of one frame in DWARF numbering: 0 rax 1 rdx 2 rcx 3 rbx
/// 4 rsi 5 rdi 6 rbp 7 rsp 8..15 r8..r15 16 rip. `None` means unknown.
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct UnwindRegs {
    pub regs: [Option<u64>; REGISTER_COUNT],
}

impl UnwindRegs {
    pub fn get(&self, register: usize) -> Option<u64> {
        self.regs.get(register).copied().flatten()
    }

    pub fn set(&mut self, register: usize, value: Option<u64>) {
        if let Some(slot) = self.regs.get_mut(register) {
            *slot = value;
        }
    }

    pub fn pc(&self) -> Option<u64> {
        self.get(RIP)
    }

    pub fn sp(&self) -> Option<u64> {
        self.get(RSP)
    }
}

/// Read access to the stopped target's memory.
pub trait UnwindMemory {
    fn read_u64(&self, addr: u64) -> Option<u64>;
}

/// Finds the object containing a runtime address.
pub trait ObjectLookup {
    /// The CFI table and load bias (runtime - file address) of the object
    /// containing runtime address `pc`.
    fn cfi_for(&self, pc: u64) -> Option<(&CfiTable, u64)>;
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameKind {
    Normal,
    /// This frame is the kernel's signal trampoline (`__restore_rt`), shown
    /// as "<signal handler called>".
    SignalHandlerCaller,
}

/// How a frame's registers were recovered from the frame below it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnwindMethod {
    Initial,
    Cfi,
    SignalContext,
    FramePointer,
}

#[derive(Clone, Debug)]
pub struct Frame {
    /// The frame's pc: for frames above 0 a return address (use `pc - 1`
    /// for line lookup unless the frame below is a signal frame).
    pub pc: u64,
    /// The canonical frame address: the caller's stack pointer. `None` for
    /// the outermost frame if it could not be computed.
    pub cfa: Option<u64>,
    pub regs: UnwindRegs,
    pub kind: FrameKind,
    pub method: UnwindMethod,
}

impl Frame {
    /// The address to use for symbol and line lookups: inside the call
    /// instruction for ordinary callers, the pc itself for frame 0 and
    /// for a frame interrupted by a signal.
    pub fn lookup_pc(&self) -> u64 {
        match self.method {
            UnwindMethod::Initial | UnwindMethod::SignalContext => self.pc,
            UnwindMethod::Cfi | UnwindMethod::FramePointer => self.pc.saturating_sub(1),
        }
    }
}

/// Unwind from the registers of a stopped thread. Frame 0 is `initial`.
/// Never loops: stops at a zero or unreadable pc, a stack pointer that
/// does not grow, an end-of-stack marker in the CFI, or `max_frames`.
pub fn unwind(
    objects: &dyn ObjectLookup,
    memory: &dyn UnwindMemory,
    initial: UnwindRegs,
    max_frames: usize,
) -> Vec<Frame> {
    let mut frames = Vec::new();
    let Some(pc) = initial.pc() else {
        return frames;
    };
    if max_frames == 0 {
        return frames;
    }
    frames.push(Frame {
        pc,
        cfa: None,
        regs: initial,
        kind: frame_kind(memory, pc),
        method: UnwindMethod::Initial,
    });
    let mut context = Box::new(Context::new());
    while frames.len() < max_frames {
        let Some(callee) = frames.last_mut() else {
            break;
        };
        let Some(step) = step(objects, memory, &mut context, callee) else {
            break;
        };
        callee.cfa = Some(step.cfa);
        let Some(caller) = step.caller else { break };
        if !plausible_caller(callee, &caller, step.method) {
            break;
        }
        let Some(pc) = caller.pc() else { break };
        frames.push(Frame {
            pc,
            cfa: None,
            regs: caller,
            kind: frame_kind(memory, pc),
            method: step.method,
        });
    }
    frames
}

/// The result of unwinding one frame: its CFA and, unless it is the
/// outermost frame, its caller's registers.
struct Step {
    cfa: u64,
    caller: Option<UnwindRegs>,
    method: UnwindMethod,
}

fn step(
    objects: &dyn ObjectLookup,
    memory: &dyn UnwindMemory,
    context: &mut Context,
    frame: &Frame,
) -> Option<Step> {
    if frame.kind == FrameKind::SignalHandlerCaller {
        return signal_step(memory, &frame.regs);
    }
    let lookup_pc = frame.lookup_pc();
    let recipe = objects
        .cfi_for(lookup_pc)
        .and_then(|(table, bias)| table.recipe_for(context, lookup_pc.wrapping_sub(bias)));
    match recipe {
        Some(recipe) => cfi_step(memory, &frame.regs, &recipe),
        None => frame_pointer_step(memory, &frame.regs),
    }
}

/// A caller is believable when it has a non-zero pc and its stack pointer
/// lies above the callee's. Across a signal frame the interrupted code may
/// run on another stack (sigaltstack), so only a non-zero sp is required.
fn plausible_caller(callee: &Frame, caller: &UnwindRegs, method: UnwindMethod) -> bool {
    match (caller.pc(), caller.sp()) {
        (Some(pc), Some(sp)) if pc != 0 && sp != 0 => {}
        _ => return false,
    }
    if method == UnwindMethod::SignalContext {
        return true;
    }
    match (callee.regs.sp(), caller.sp()) {
        (Some(callee_sp), Some(caller_sp)) => caller_sp > callee_sp,
        _ => false,
    }
}

fn cfi_step(memory: &dyn UnwindMemory, regs: &UnwindRegs, recipe: &FrameRecipe) -> Option<Step> {
    let cfa = match &recipe.cfa {
        CfaRecipe::RegisterOffset { register, offset } => regs
            .get(usize::from(*register))?
            .wrapping_add(*offset as u64),
        CfaRecipe::Expression(expression) => {
            evaluate(expression, recipe.encoding, regs, memory, None)?
        }
    };
    let return_address_rule = recipe.register(recipe.return_address_register);
    if matches!(return_address_rule, RegisterRecipe::Undefined) {
        // DW_CFA_undefined rip: _start, clone, clone3 — the end of the stack.
        return Some(Step {
            cfa,
            caller: None,
            method: UnwindMethod::Cfi,
        });
    }
    let mut caller = UnwindRegs::default();
    for register in 0..REGISTER_COUNT {
        let rule = recipe.register(register as u16);
        let value = match rule {
            RegisterRecipe::Undefined if register == RSP => Some(cfa),
            // A register the CFI says nothing about keeps its value in the
            // caller, callee-saved or not (gdb's rule too). gcc relies on it:
            // with -fipa-ra it knows which caller-saved registers a callee
            // leaves alone and describes variables as living in them across
            // the call (gimli cannot tell DW_CFA_undefined from unspecified).
            RegisterRecipe::Undefined => regs.get(register),
            _ => recover(rule, register, cfa, regs, memory, recipe.encoding),
        };
        caller.set(register, value);
    }
    caller.set(
        RIP,
        recover(return_address_rule, RIP, cfa, regs, memory, recipe.encoding),
    );
    Some(Step {
        cfa,
        caller: Some(caller),
        method: UnwindMethod::Cfi,
    })
}

fn recover(
    rule: &RegisterRecipe,
    register: usize,
    cfa: u64,
    regs: &UnwindRegs,
    memory: &dyn UnwindMemory,
    encoding: gimli::Encoding,
) -> Option<u64> {
    match rule {
        RegisterRecipe::Undefined => None,
        RegisterRecipe::SameValue => regs.get(register),
        RegisterRecipe::AtCfaOffset(offset) => memory.read_u64(cfa.wrapping_add(*offset as u64)),
        RegisterRecipe::CfaOffset(offset) => Some(cfa.wrapping_add(*offset as u64)),
        RegisterRecipe::InRegister(other) => regs.get(usize::from(*other)),
        RegisterRecipe::AtExpression(expression) => {
            memory.read_u64(evaluate(expression, encoding, regs, memory, Some(cfa))?)
        }
        RegisterRecipe::Expression(expression) => {
            evaluate(expression, encoding, regs, memory, Some(cfa))
        }
        RegisterRecipe::Constant(value) => Some(*value),
    }
}

/// Evaluate a CFI expression; register rules start with the CFA pushed.
/// The result is the single address or value the expression leaves.
fn evaluate(
    expression: &Expression,
    encoding: gimli::Encoding,
    regs: &UnwindRegs,
    memory: &dyn UnwindMemory,
    initial: Option<u64>,
) -> Option<u64> {
    let mut evaluation = (*expression).evaluation(encoding);
    evaluation.set_max_iterations(10_000);
    if let Some(value) = initial {
        evaluation.set_initial_value(value);
    }
    let mut state = evaluation.evaluate().ok()?;
    loop {
        state = match state {
            EvaluationResult::Complete => break,
            EvaluationResult::RequiresMemory { address, size, .. } => {
                let word = memory.read_u64(address)?;
                let value = match size {
                    1..=7 => word & ((1u64 << (8 * u32::from(size))) - 1),
                    _ => word,
                };
                evaluation.resume_with_memory(Value::Generic(value)).ok()?
            }
            EvaluationResult::RequiresRegister { register, .. } => {
                let value = regs.get(usize::from(register.0))?;
                evaluation
                    .resume_with_register(Value::Generic(value))
                    .ok()?
            }
            _ => return None,
        };
    }
    let pieces = evaluation.result();
    match pieces.as_slice() {
        [piece] => match piece.location {
            Location::Address { address } => Some(address),
            Location::Value { value } => value.to_u64(u64::MAX).ok(),
            _ => None,
        },
        _ => None,
    }
}

/// `mov $15,%rax; syscall`: glibc's `__restore_rt`, the return address the
/// kernel gives signal handlers.
const SIGRETURN_TRAMPOLINE: [u8; 9] = [0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05];

fn frame_kind(memory: &dyn UnwindMemory, pc: u64) -> FrameKind {
    let first = memory.read_u64(pc).map(u64::to_le_bytes);
    let last = memory.read_u64(pc.wrapping_add(1)).map(u64::to_le_bytes);
    match (first, last) {
        (Some(first), Some(last))
            if first == SIGRETURN_TRAMPOLINE[..8] && last[7] == SIGRETURN_TRAMPOLINE[8] =>
        {
            FrameKind::SignalHandlerCaller
        }
        _ => FrameKind::Normal,
    }
}

/// Offset of `uc_mcontext.gregs` in `struct ucontext` (after uc_flags,
/// uc_link and the 24-byte uc_stack), which the trampoline's sp points at.
const UCONTEXT_GREGS: u64 = 40;

/// DWARF numbers of the first 17 mcontext gregs, in kernel order:
/// r8 r9 r10 r11 r12 r13 r14 r15 rdi rsi rbp rbx rdx rax rcx rsp rip.
const GREGS_DWARF: [usize; 17] = [8, 9, 10, 11, 12, 13, 14, 15, 5, 4, 6, 3, 1, 0, 2, 7, 16];

/// The interrupted registers, from the signal frame's ucontext.
fn signal_step(memory: &dyn UnwindMemory, regs: &UnwindRegs) -> Option<Step> {
    let sp = regs.sp()?;
    let gregs = sp.wrapping_add(UCONTEXT_GREGS);
    let mut caller = UnwindRegs::default();
    for (index, register) in GREGS_DWARF.iter().enumerate() {
        caller.set(
            *register,
            memory.read_u64(gregs.wrapping_add(8 * index as u64)),
        );
    }
    Some(Step {
        cfa: sp,
        caller: Some(caller),
        method: UnwindMethod::SignalContext,
    })
}

/// Largest believable distance from sp to rbp in a frame-pointer frame.
const MAX_FRAME_SIZE: u64 = 16 << 20;

/// Without CFI: follow the rbp chain while rbp looks like a frame pointer
/// (aligned, at or above sp, not absurdly far away).
fn frame_pointer_step(memory: &dyn UnwindMemory, regs: &UnwindRegs) -> Option<Step> {
    let rbp = regs.get(RBP)?;
    let sp = regs.sp()?;
    if rbp % 8 != 0 || rbp < sp || rbp - sp > MAX_FRAME_SIZE {
        return None;
    }
    let cfa = rbp.checked_add(16)?;
    let mut caller = UnwindRegs::default();
    caller.set(RBP, Some(memory.read_u64(rbp)?));
    caller.set(RIP, Some(memory.read_u64(rbp + 8)?));
    caller.set(RSP, Some(cfa));
    Some(Step {
        cfa,
        caller: Some(caller),
        method: UnwindMethod::FramePointer,
    })
}

#[cfg(test)]
pub(crate) mod test_support;
#[cfg(test)]
mod tests;
