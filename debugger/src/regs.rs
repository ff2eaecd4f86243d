//! The x86-64 register file of a stopped thread: ptrace's
//! `user_regs_struct`, register names as gdb spells them, and the DWARF
//! register numbering used by CFI and location expressions.

use libc::user_regs_struct;

/// General registers in the order gdb's `info registers` shows them.
pub const GENERAL_REGISTERS: [&str; 24] = [
    "rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rbp", "rsp", "r8", "r9", "r10", "r11", "r12", "r13",
    "r14", "r15", "rip", "eflags", "cs", "ss", "ds", "es", "fs", "gs",
];

/// DWARF register numbers 0..=16 mapped to names.
pub const DWARF_NAMES: [&str; 17] = [
    "rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp", "r8", "r9", "r10", "r11", "r12", "r13",
    "r14", "r15", "rip",
];

/// Reads a 64-bit register by name (also `pc`, `sp`, `fp`, `fs_base`).
pub fn get(regs: &user_regs_struct, name: &str) -> Option<u64> {
    Some(match name {
        "rax" => regs.rax,
        "rbx" => regs.rbx,
        "rcx" => regs.rcx,
        "rdx" => regs.rdx,
        "rsi" => regs.rsi,
        "rdi" => regs.rdi,
        "rbp" | "fp" => regs.rbp,
        "rsp" | "sp" => regs.rsp,
        "r8" => regs.r8,
        "r9" => regs.r9,
        "r10" => regs.r10,
        "r11" => regs.r11,
        "r12" => regs.r12,
        "r13" => regs.r13,
        "r14" => regs.r14,
        "r15" => regs.r15,
        "rip" | "pc" => regs.rip,
        "eflags" => regs.eflags,
        "cs" => regs.cs,
        "ss" => regs.ss,
        "ds" => regs.ds,
        "es" => regs.es,
        "fs" => regs.fs,
        "gs" => regs.gs,
        "fs_base" => regs.fs_base,
        "gs_base" => regs.gs_base,
        "orig_rax" => regs.orig_rax,
        _ => return sub_register(regs, name),
    })
}

/// `eax`, `r8d`... read as the low 32 bits of their full register.
fn sub_register(regs: &user_regs_struct, name: &str) -> Option<u64> {
    let (full, mask) = if let Some(stem) = name.strip_suffix('d').filter(|s| s.starts_with('r')) {
        (stem.to_string(), 0xffff_ffff)
    } else if let Some(stem) = name.strip_prefix('e') {
        (format!("r{stem}"), 0xffff_ffff)
    } else {
        return None;
    };
    get(regs, &full).map(|v| v & mask)
}

/// The full register a name stands for: `rip` for `pc`, `rax` for `eax`.
fn full_register(name: &str) -> Option<&'static str> {
    let stem = match name {
        "pc" => "rip",
        "sp" => "rsp",
        "fp" => "rbp",
        _ => name,
    };
    let full = if let Some(stem) = stem.strip_suffix('d').filter(|s| s.starts_with('r')) {
        stem.to_string()
    } else if let Some(stem) = stem.strip_prefix('e').filter(|s| *s != "flags") {
        format!("r{stem}")
    } else {
        stem.to_string()
    };
    DWARF_NAMES.iter().find(|n| **n == full).copied()
}

/// A register by name as one frame sees it: `regs` are the thread's,
/// `frame` what unwinding recovered for an outer frame (DWARF numbering),
/// which takes the place of the thread's. `Some(None)`: the register
/// exists but this frame's value of it was not saved.
pub fn frame_get(
    regs: &user_regs_struct,
    frame: Option<&[Option<u64>; 17]>,
    name: &str,
) -> Option<Option<u64>> {
    let Some(frame) = frame else {
        return get(regs, name).map(Some);
    };
    if let Some(full) = full_register(name) {
        let n = DWARF_NAMES.iter().position(|r| *r == full)?;
        if frame[n].is_none() {
            return Some(None);
        }
    }
    let mut seen = *regs;
    for (n, value) in frame.iter().enumerate() {
        if let Some(value) = value {
            set(&mut seen, DWARF_NAMES[n], *value);
        }
    }
    get(&seen, name).map(Some)
}

/// Writes a 64-bit register by name; false if there is no such register.
pub fn set(regs: &mut user_regs_struct, name: &str, value: u64) -> bool {
    let slot = match name {
        "rax" => &mut regs.rax,
        "rbx" => &mut regs.rbx,
        "rcx" => &mut regs.rcx,
        "rdx" => &mut regs.rdx,
        "rsi" => &mut regs.rsi,
        "rdi" => &mut regs.rdi,
        "rbp" | "fp" => &mut regs.rbp,
        "rsp" | "sp" => &mut regs.rsp,
        "r8" => &mut regs.r8,
        "r9" => &mut regs.r9,
        "r10" => &mut regs.r10,
        "r11" => &mut regs.r11,
        "r12" => &mut regs.r12,
        "r13" => &mut regs.r13,
        "r14" => &mut regs.r14,
        "r15" => &mut regs.r15,
        "rip" | "pc" => &mut regs.rip,
        "eflags" => &mut regs.eflags,
        _ => return false,
    };
    *slot = value;
    true
}

/// The register with DWARF number `n` (0..=16).
pub fn dwarf_get(regs: &user_regs_struct, n: u16) -> Option<u64> {
    DWARF_NAMES.get(n as usize).and_then(|name| get(regs, name))
}

/// All DWARF registers 0..=16, as the unwinder takes them.
pub fn to_dwarf_array(regs: &user_regs_struct) -> [Option<u64>; 17] {
    let mut out = [None; 17];
    for (n, slot) in out.iter_mut().enumerate() {
        *slot = dwarf_get(regs, n as u16);
    }
    out
}

/// Floating-point and vector state (`PTRACE_GETFPREGS`): what `finish`
/// needs to show a `double` return value from xmm0.
pub fn xmm_low(fpregs: &libc::user_fpregs_struct, n: usize) -> u64 {
    let words = &fpregs.xmm_space[n * 4..n * 4 + 2];
    u64::from(words[0]) | (u64::from(words[1]) << 32)
}

/// Where the FXSAVE legacy area keeps xmm0 (16 bytes per register).
const FXSAVE_XMM: usize = 160;
/// Where it keeps ST0 (16 bytes per x87 register, 10 used).
const FXSAVE_ST: usize = 32;
/// The XSAVE header's XSTATE_BV: which components the area holds.
const XSTATE_BV: usize = 512;
/// XSTATE_BV bit of the SSE component (xmm registers and MXCSR).
const XFEATURE_SSE: u64 = 1 << 1;

/// A thread's whole floating-point and vector state, read before an
/// injected call clobbers it and written back after: the XSAVE area when
/// the kernel offers it (ymm/zmm upper halves included), else the FXSAVE
/// area of `PTRACE_GETFPREGS`.
#[derive(Clone)]
pub enum VectorState {
    Xsave(Vec<u8>),
    Fxsave(Box<libc::user_fpregs_struct>),
}

impl VectorState {
    /// The XSAVE area, when that is the form read.
    pub fn xsave_area(&self) -> Option<&[u8]> {
        match self {
            VectorState::Xsave(area) => Some(area),
            VectorState::Fxsave(_) => None,
        }
    }

    pub fn read(tid: crate::ptrace::Tid) -> crate::Result<VectorState> {
        match crate::ptrace::get_xstate(tid) {
            Ok(area) if area.len() >= XSTATE_BV + 8 => Ok(VectorState::Xsave(area)),
            _ => Ok(VectorState::Fxsave(Box::new(crate::ptrace::get_fpregs(
                tid,
            )?))),
        }
    }

    pub fn write(&self, tid: crate::ptrace::Tid) -> crate::Result<()> {
        match self {
            VectorState::Xsave(area) => crate::ptrace::set_xstate(tid, area),
            VectorState::Fxsave(fx) => crate::ptrace::set_fpregs(tid, fx),
        }
    }

    /// The 512-byte FXSAVE layout both forms start with.
    fn legacy(&self) -> Vec<u8> {
        match self {
            VectorState::Xsave(area) => area[..512].to_vec(),
            VectorState::Fxsave(fx) => fxsave_bytes(fx),
        }
    }

    /// Register xmm`n` (0..16), all 16 bytes.
    pub fn xmm(&self, n: usize) -> [u8; 16] {
        let legacy = self.legacy();
        let mut out = [0u8; 16];
        out.copy_from_slice(&legacy[FXSAVE_XMM + 16 * n..FXSAVE_XMM + 16 * (n + 1)]);
        out
    }

    /// x87 ST0 (80-bit extended), where `long double` results come back.
    pub fn st0(&self) -> [u8; 10] {
        let legacy = self.legacy();
        let mut out = [0u8; 10];
        out.copy_from_slice(&legacy[FXSAVE_ST..FXSAVE_ST + 10]);
        out
    }

    /// Sets xmm`n` (0..16) to `value`, marking the SSE state as present
    /// (an XSAVE area in its initial state would otherwise ignore it).
    pub fn set_xmm(&mut self, n: usize, value: [u8; 16]) {
        let at = FXSAVE_XMM + 16 * n;
        match self {
            VectorState::Xsave(area) => {
                area[at..at + 16].copy_from_slice(&value);
                let mut bv = [0u8; 8];
                bv.copy_from_slice(&area[XSTATE_BV..XSTATE_BV + 8]);
                let bv = u64::from_le_bytes(bv) | XFEATURE_SSE;
                area[XSTATE_BV..XSTATE_BV + 8].copy_from_slice(&bv.to_le_bytes());
            }
            VectorState::Fxsave(fx) => {
                for (i, word) in value.chunks_exact(4).enumerate() {
                    let mut bytes = [0u8; 4];
                    bytes.copy_from_slice(word);
                    fx.xmm_space[n * 4 + i] = u32::from_le_bytes(bytes);
                }
            }
        }
    }
}

/// `user_fpregs_struct` as the FXSAVE bytes it mirrors.
fn fxsave_bytes(fx: &libc::user_fpregs_struct) -> Vec<u8> {
    let mut out = Vec::with_capacity(512);
    out.extend(fx.cwd.to_le_bytes());
    out.extend(fx.swd.to_le_bytes());
    out.extend(fx.ftw.to_le_bytes());
    out.extend(fx.fop.to_le_bytes());
    out.extend(fx.rip.to_le_bytes());
    out.extend(fx.rdp.to_le_bytes());
    out.extend(fx.mxcsr.to_le_bytes());
    out.extend(fx.mxcr_mask.to_le_bytes());
    for word in fx.st_space.iter().chain(fx.xmm_space.iter()) {
        out.extend(word.to_le_bytes());
    }
    out.resize(512, 0);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zeroed() -> user_regs_struct {
        // SAFETY: user_regs_struct is plain integers; all-zero is valid.
        unsafe { std::mem::zeroed() }
    }

    #[test]
    fn names_and_subregisters() {
        let mut regs = zeroed();
        assert!(set(&mut regs, "rax", 0x1_2345_6789));
        assert_eq!(get(&regs, "eax"), Some(0x2345_6789));
        assert!(set(&mut regs, "r8", 0xffff_ffff_0000_0001));
        assert_eq!(get(&regs, "r8d"), Some(1));
        assert_eq!(get(&regs, "pc"), Some(0));
        assert_eq!(get(&regs, "bogus"), None);
        assert_eq!(dwarf_get(&regs, 0), Some(0x1_2345_6789));
        assert_eq!(dwarf_get(&regs, 8), Some(0xffff_ffff_0000_0001));
    }
}
