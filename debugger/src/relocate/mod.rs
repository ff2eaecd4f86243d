//! Executing a breakpoint's displaced instruction out of line.
//!
//! To resume from a breakpoint with one ptrace stop per hit (no
//! single-step), the debugger copies the original instruction into a slot
//! of a scratch page in the target, followed by a jump back to the next
//! instruction, and sets rip to the slot. Instructions whose meaning
//! depends on where they sit are rewritten, emulated or single-stepped.

use capstone::arch::x86::X86Insn;

use crate::disasm::{Decoded, Disassembler};

/// Bytes reserved per breakpoint in the scratch page: the longest x86
/// instruction (15) plus the longest jump back (14), rounded up.
pub const SLOT_SIZE: usize = 32;

/// The longest x86-64 instruction.
pub const MAX_INSTRUCTION_LEN: usize = 15;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Displacement {
    /// Copy these bytes to the slot; they end with a jump back to
    /// `original + len`.
    OutOfLine { code: Vec<u8> },
    /// A direct `call rel32`: push `return_address` and jump to `target`
    /// (the debugger emulates it with registers).
    EmulateCall { target: u64, return_address: u64 },
    /// A direct unconditional jmp: just set rip.
    EmulateJump { target: u64 },
    /// Cannot be moved (rip-relative out of ±2 GiB of the slot, jcc, loop,
    /// jrcxz, syscall, indirect call, undecodable...): single-step instead.
    SingleStep,
}

thread_local! {
    static DISASSEMBLER: Option<Disassembler> = Disassembler::new().ok();
}

/// Decide how to execute the instruction at `original` (whose bytes, with
/// the int3 already removed, start `instruction_bytes`) from the slot at
/// `slot_address`.
pub fn displace(instruction_bytes: &[u8], original: u64, slot_address: u64) -> Displacement {
    DISASSEMBLER.with(|disassembler| match disassembler {
        Some(disassembler) => {
            displace_with(disassembler, instruction_bytes, original, slot_address)
        }
        None => Displacement::SingleStep,
    })
}

fn displace_with(
    disassembler: &Disassembler,
    bytes: &[u8],
    original: u64,
    slot: u64,
) -> Displacement {
    let Some(decoded) = disassembler.decode_detailed(bytes, original, 1).pop() else {
        return Displacement::SingleStep;
    };
    let instruction = &decoded.instruction;
    let next = instruction.end_address();
    if decoded.interrupt {
        return Displacement::SingleStep;
    }
    if decoded.relative_branch {
        return match (decoded.id, instruction.branch_target) {
            (id, Some(target)) if id == X86Insn::X86_INS_CALL as u32 => Displacement::EmulateCall {
                target,
                return_address: next,
            },
            (id, Some(target)) if id == X86Insn::X86_INS_JMP as u32 => {
                Displacement::EmulateJump { target }
            }
            _ => Displacement::SingleStep,
        };
    }
    if instruction.is_call {
        // An indirect call would push the slot's address as return address.
        return Displacement::SingleStep;
    }
    let mut code = instruction.bytes.clone();
    if let Some(displacement) = decoded.rip_displacement {
        let Some(()) = rewrite_rip_relative(disassembler, &decoded, &mut code, displacement, slot)
        else {
            return Displacement::SingleStep;
        };
    }
    let jump_from = slot.wrapping_add(code.len() as u64);
    code.extend(jump(jump_from, next));
    Displacement::OutOfLine { code }
}

/// Point the rip-relative operand of `code` (moved to `slot`) at the same
/// address as at its original place. `None` when out of ±2 GiB.
fn rewrite_rip_relative(
    disassembler: &Disassembler,
    decoded: &Decoded,
    code: &mut [u8],
    displacement: i64,
    slot: u64,
) -> Option<()> {
    let target = decoded.instruction.rip_relative_target?;
    let slot_next = slot.wrapping_add(code.len() as u64);
    let new_displacement = i32::try_from(target.wrapping_sub(slot_next) as i64).ok()?;
    let offset = displacement_offset(disassembler, decoded, code, displacement)?;
    code[offset..offset + 4].copy_from_slice(&new_displacement.to_le_bytes());
    Some(())
}

/// Where the disp32 of the rip-relative operand sits in the encoding.
/// It is followed only by an immediate (0, 1, 2 or 4 bytes), so only a
/// few places are possible; the right one is the place where changing the
/// bytes changes the displacement capstone decodes, and nothing else.
fn displacement_offset(
    disassembler: &Disassembler,
    decoded: &Decoded,
    code: &[u8],
    displacement: i64,
) -> Option<usize> {
    let displacement = i32::try_from(displacement).ok()?;
    let probe = displacement ^ 0x0101_0101;
    [4usize, 5, 6, 8].into_iter().find_map(|from_end| {
        let offset = code.len().checked_sub(from_end)?;
        if code[offset..offset + 4] != displacement.to_le_bytes() {
            return None;
        }
        let mut changed = code.to_vec();
        changed[offset..offset + 4].copy_from_slice(&probe.to_le_bytes());
        let address = decoded.instruction.address;
        let probe_decoded = disassembler.decode_detailed(&changed, address, 1).pop()?;
        let same_instruction = probe_decoded.id == decoded.id
            && probe_decoded.instruction.len() == code.len()
            && probe_decoded.rip_displacement == Some(i64::from(probe));
        same_instruction.then_some(offset)
    })
}

/// A jump from `from` to `to`: `jmp rel32` when in range, else
/// `jmp *0(%rip)` followed by the absolute address.
fn jump(from: u64, to: u64) -> Vec<u8> {
    let relative = to.wrapping_sub(from.wrapping_add(5)) as i64;
    match i32::try_from(relative) {
        Ok(relative) => {
            let mut code = vec![0xe9];
            code.extend(relative.to_le_bytes());
            code
        }
        Err(_) => {
            let mut code = vec![0xff, 0x25, 0, 0, 0, 0];
            code.extend(to.to_le_bytes());
            code
        }
    }
}

#[cfg(test)]
mod tests;
