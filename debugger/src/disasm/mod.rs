//! x86-64 disassembly with capstone, printed in AT&T syntax the way gdb
//! (and objdump) print it: `mov    %rsp,%rbp`, `call   0x1139`.
//!
//! Callers add `<symbol+offset>` after branch targets and rip-relative
//! addresses themselves; this module knows nothing about symbols.

use capstone::arch::x86::{ArchMode, ArchSyntax, X86Insn, X86OperandType, X86Reg};
use capstone::arch::{ArchDetail, ArchOperand, BuildsCapstone, BuildsCapstoneSyntax};
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

    /// `syscall`, `sysenter` or `int 0x80`: the thread may wait in the
    /// kernel for as long as another thread takes.
    pub fn is_system_call(&self) -> bool {
        matches!(
            self.bytes.as_slice(),
            [0x0f, 0x05] | [0x0f, 0x34] | [0xcd, 0x80]
        )
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
            Ok(instructions) => instructions
                .iter()
                .map(|insn| self.describe(insn))
                .collect(),
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
        let mut style = StyleDetails::default();
        if let Ok(detail) = self.capstone.insn_detail(insn) {
            if let ArchDetail::X86Detail(x86) = detail.arch_detail() {
                let (mode, rm) = (x86.modrm() >> 6, x86.modrm() & 7);
                let sib_without_base = mode == 0 && rm == 4 && x86.sib() & 7 == 5;
                let displacement_encoded = mode == 1 || mode == 2 || sib_without_base;
                style.zero_displacement = displacement_encoded && x86.disp() == 0;
                style.shift_by_one = matches!(x86.opcode()[0], 0xd0 | 0xd1);
            }
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
        style.operand_size_prefixes = insn.bytes().iter().take_while(|b| **b == 0x66).count();
        let (mnemonic, operands) = gdb_style(
            insn.mnemonic().unwrap_or("(bad)"),
            insn.op_str().unwrap_or(""),
            &style,
        );
        decoded.instruction.mnemonic = mnemonic;
        decoded.instruction.operands = operands;
        decoded.interrupt |= matches!(
            insn.id().0,
            x if x == X86Insn::X86_INS_SYSCALL as u32
                || x == X86Insn::X86_INS_SYSENTER as u32
                || x == X86Insn::X86_INS_UD0 as u32
                || x == X86Insn::X86_INS_UD1 as u32
                || x == X86Insn::X86_INS_UD2 as u32
                || x == X86Insn::X86_INS_HLT as u32
        );
        decoded
    }
}

/// Mnemonics whose AT&T size suffix objdump leaves out when a register
/// operand already gives the size.
const SUFFIXED: &[&str] = &[
    "mov", "add", "sub", "and", "or", "xor", "cmp", "test", "lea", "push", "pop", "inc", "dec",
    "neg", "not", "shl", "shr", "sar", "sal", "rol", "ror", "rcl", "rcr", "imul", "mul", "div",
    "idiv", "adc", "sbb", "xchg", "bt", "bts", "btr", "btc", "bsf", "bsr", "xadd", "cmpxchg",
    "cvtsi2sd", "cvtsi2ss", "shld", "shrd", "tzcnt", "lzcnt", "popcnt", "bswap", "movnti", "crc32",
    "andn", "blsr", "blsi", "bzhi", "shlx", "shrx", "sarx", "rorx", "pdep", "pext",
];

/// Control transfers that objdump prints without a suffix in 64-bit code.
const NO_SUFFIX: &[(&str, &str)] = &[
    ("callq", "call"),
    ("jmpq", "jmp"),
    ("retq", "ret"),
    ("leaveq", "leave"),
    ("pushfq", "pushf"),
    ("popfq", "popf"),
    ("iretq", "iretq"),
];

/// Turn capstone's AT&T text into objdump/gdb's: no space after operand
/// commas, hex immediates, an explicit scale, `0x0` for an encoded zero
/// displacement, and a size suffix only where objdump prints one.
fn gdb_style(mnemonic: &str, operands: &str, details: &StyleDetails) -> (String, String) {
    let mut operands: Vec<String> = split_operands(operands)
        .into_iter()
        .map(|operand| style_operand(operand, details))
        .collect();
    if details.shift_by_one && operands.first().is_some_and(|o| o == "$0x1") {
        operands.remove(0);
    }
    if let Some(nop) = style_nop(mnemonic, &operands, details) {
        return nop;
    }
    let has_register = operands.iter().any(|o| is_general_register(o));
    let has_vector = operands
        .iter()
        .any(|o| o.starts_with('%') && !is_general_register(o));
    let mut mnemonic = mnemonic.to_string();
    if let Some((_, plain)) = NO_SUFFIX.iter().find(|(suffixed, _)| *suffixed == mnemonic) {
        mnemonic = plain.to_string();
    } else if let Some(base) = strippable_base(&mnemonic) {
        // SSE movq between xmm and a general register keeps its suffix;
        // cvtsi2sd/ss lose it like the integer instructions do.
        let register_gives_size = has_register && (!has_vector || base.starts_with("cvtsi2"));
        let stack_quadword = (base == "push" || base == "pop") && mnemonic.ends_with('q');
        if register_gives_size || stack_quadword {
            mnemonic = base.to_string();
        }
    }
    (mnemonic, operands.join(","))
}

/// The mnemonic without its size suffix, if it has one objdump may drop.
fn strippable_base(mnemonic: &str) -> Option<&str> {
    let base = mnemonic.strip_suffix(['b', 'w', 'l', 'q'])?;
    SUFFIXED.contains(&base).then_some(base)
}

/// Encoding facts the text does not show.
#[derive(Default)]
struct StyleDetails {
    /// A memory operand with an explicit 8-bit displacement of zero.
    zero_displacement: bool,
    /// The D0/D1 shift-by-one forms, which objdump prints with one operand.
    shift_by_one: bool,
    /// Leading 0x66 bytes: objdump shows the extra ones on nops as data16.
    operand_size_prefixes: usize,
}

fn is_general_register(operand: &str) -> bool {
    operand.starts_with('%')
        && !["%xmm", "%ymm", "%zmm", "%mm", "%st", "%k"]
            .iter()
            .any(|p| operand.starts_with(p))
}

/// objdump's names for the padding nops: `xchg %ax,%ax` for 66 90 and
/// `data16 cs nopw 0x0(%rax,%rax,1)` for the long forms.
fn style_nop(
    mnemonic: &str,
    operands: &[String],
    details: &StyleDetails,
) -> Option<(String, String)> {
    if mnemonic == "nop" && operands.is_empty() && details.operand_size_prefixes == 1 {
        return Some(("xchg".to_string(), "%ax,%ax".to_string()));
    }
    let [operand] = operands else { return None };
    let without_segment = operand.strip_prefix("%cs:")?;
    if !mnemonic.starts_with("nop") {
        return None;
    }
    let data16 = "data16 ".repeat(details.operand_size_prefixes.saturating_sub(1));
    Some((
        format!("{data16}cs {mnemonic}"),
        without_segment.to_string(),
    ))
}

/// Split at the commas that are not inside parentheses.
fn split_operands(operands: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (i, c) in operands.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(operands[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    if !operands.trim().is_empty() {
        parts.push(operands[start..].trim());
    }
    parts
}

fn style_operand(operand: &str, details: &StyleDetails) -> String {
    if let Some(immediate) = operand.strip_prefix('$') {
        return match parse_number(immediate) {
            Some(value) if value >= 0 => format!("${value:#x}"),
            _ => operand.to_string(),
        };
    }
    let Some(open) = operand.find('(') else {
        return operand.to_string();
    };
    let (displacement, inner) = operand.split_at(open);
    let inner = inner.trim_start_matches('(').trim_end_matches(')');
    let parts: Vec<&str> = inner.split(',').map(str::trim).collect();
    let inner = match parts.as_slice() {
        [base, index] => format!("{base},{index},1"),
        _ => parts.join(","),
    };
    let (segment, displacement) = match displacement.rsplit_once(':') {
        Some((segment, displacement)) => (format!("{segment}:"), displacement),
        None => (String::new(), displacement),
    };
    let displacement = match parse_number(displacement) {
        Some(value) if value < 0 => format!("-{:#x}", value.unsigned_abs()),
        Some(value) => format!("{value:#x}"),
        None if details.zero_displacement => "0x0".to_string(),
        None => displacement.to_string(),
    };
    format!("{segment}{displacement}({inner})")
}

fn parse_number(text: &str) -> Option<i64> {
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let value = match digits.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok()? as i64,
        None => digits.parse::<i64>().ok()?,
    };
    Some(if negative {
        value.wrapping_neg()
    } else {
        value
    })
}

#[cfg(test)]
mod tests;
