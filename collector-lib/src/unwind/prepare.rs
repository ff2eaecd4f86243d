//! Preparing unwind tables, outside any signal handler.
//!
//! For every load object `dl_iterate_phdr` reports, the `.eh_frame` is read from memory
//! (PT_GNU_EH_FRAME gives `.eh_frame_hdr`, whose `eh_frame_ptr` and binary-search table
//! lead to every FDE; this works for the vdso too, which has no file), every FDE's rows
//! are evaluated with gimli, and the rules the handler can follow are compiled into a
//! sorted [`Row`] array. Section base addresses are the runtime addresses, so every
//! address gimli gives back is already a runtime address.

use std::collections::BTreeMap;
use std::ffi::CStr;
use std::sync::Mutex;

use gimli::{
    BaseAddresses, CallFrameInstruction, EhFrame, EhFrameHdr, NativeEndian, Pointer, Register,
    RegisterRule, UnwindContext, UnwindSection,
};

use super::table::{self, CfaRule, ModuleTable, RaRule, RbpRule, Row, Rule};
use super::UnwindError;

type Slice<'a> = gimli::EndianSlice<'a, NativeEndian>;

const RBP: Register = Register(6);
const RSP: Register = Register(7);
const RA: Register = Register(16);

/// What one [`refresh_tables`](super::refresh_tables) call did.
#[derive(Debug, Default)]
pub struct RefreshSummary {
    /// Load objects present now.
    pub objects: usize,
    /// Objects prepared by this call (new since the previous call).
    pub prepared: usize,
    /// Objects that were prepared before and are gone now (dlclose).
    pub removed: usize,
    /// Rows in the published snapshot, all objects together.
    pub rows: usize,
    /// Objects, new in this call, that have no usable CFI: unwinding through them fails.
    pub without_cfi: Vec<SkippedObject>,
}

/// A load object without a table, and why.
#[derive(Debug)]
pub struct SkippedObject {
    pub name: String,
    pub bias: u64,
    pub reason: UnwindError,
}

/// A load object is identified by its name and load bias (a reload at another address is
/// another object).
type ObjectKey = (Vec<u8>, u64);

/// Prepared objects; `None` marks an object without usable CFI, so it is not retried.
static BUILDER: Mutex<BTreeMap<ObjectKey, Option<ModuleTable>>> = Mutex::new(BTreeMap::new());

/// Prepare tables for load objects that are new since the last call, forget the ones that
/// are gone, and publish a new snapshot for the signal handler.
///
/// Not async-signal-safe (allocates, locks): call it at start and after each
/// dlopen/dlclose. Also records the signal restorer if none is known yet.
pub fn refresh_tables() -> Result<RefreshSummary, UnwindError> {
    let mut prepared = BUILDER.lock().map_err(|_| UnwindError::BuilderPoisoned)?;
    let mut visit = Visit {
        previous: &mut prepared,
        current: BTreeMap::new(),
        summary: RefreshSummary::default(),
    };
    // SAFETY: the callback only reads the dl_phdr_info it is given, while the loader lock
    // keeps the object mapped.
    unsafe {
        libc::dl_iterate_phdr(Some(visit_object), (&mut visit as *mut Visit).cast());
    }
    let Visit {
        current,
        mut summary,
        previous,
    } = visit;
    summary.removed = previous.len();
    summary.objects = current.len();
    let mut modules: Vec<ModuleTable> = current.values().flatten().copied().collect();
    modules.sort_by_key(|module| module.lo);
    summary.rows = modules.iter().map(|module| module.rows.len()).sum();
    table::publish(modules);
    *prepared = current;
    if super::signal_restorer().is_none() {
        if let Some(restorer) = super::discover_signal_restorer() {
            super::set_signal_restorer(restorer);
        }
    }
    Ok(summary)
}

struct Visit<'a> {
    /// Objects prepared by earlier calls; the ones still present move to `current`.
    previous: &'a mut BTreeMap<ObjectKey, Option<ModuleTable>>,
    current: BTreeMap<ObjectKey, Option<ModuleTable>>,
    summary: RefreshSummary,
}

unsafe extern "C" fn visit_object(
    info: *mut libc::dl_phdr_info,
    _size: usize,
    data: *mut libc::c_void,
) -> libc::c_int {
    // SAFETY: `data` is the `Visit` passed by refresh_tables; `info` comes from the loader.
    let (visit, info) = unsafe { (&mut *data.cast::<Visit>(), &*info) };
    let name = if info.dlpi_name.is_null() {
        Vec::new()
    } else {
        // SAFETY: the loader gives a NUL-terminated name.
        unsafe { CStr::from_ptr(info.dlpi_name) }
            .to_bytes()
            .to_vec()
    };
    let key = (name, info.dlpi_addr);
    if let Some(table) = visit.previous.remove(&key) {
        visit.current.insert(key, table);
        return 0;
    }
    visit.summary.prepared += 1;
    // SAFETY: the program headers and the memory they describe stay mapped during the callback.
    let table = match unsafe { compile_object(info) } {
        Ok(table) => Some(table),
        Err(reason) => {
            visit.summary.without_cfi.push(SkippedObject {
                name: String::from_utf8_lossy(&key.0).into_owned(),
                bias: key.1,
                reason,
            });
            None
        }
    };
    visit.current.insert(key, table);
    0
}

/// Compile the CFI of one loaded object, read from its memory image.
///
/// # Safety
/// `info` must describe an object that stays mapped during the call.
unsafe fn compile_object(info: &libc::dl_phdr_info) -> Result<ModuleTable, UnwindError> {
    let bias = info.dlpi_addr;
    let phdrs: &[libc::Elf64_Phdr] = if info.dlpi_phdr.is_null() {
        &[]
    } else {
        // SAFETY: the loader gives dlpi_phnum headers at dlpi_phdr.
        unsafe { std::slice::from_raw_parts(info.dlpi_phdr, usize::from(info.dlpi_phnum)) }
    };
    let hdr_phdr = phdrs
        .iter()
        .find(|phdr| phdr.p_type == libc::PT_GNU_EH_FRAME)
        .ok_or(UnwindError::NoEhFrameHdr)?;
    let hdr_address = bias.wrapping_add(hdr_phdr.p_vaddr);
    let hdr_end = loaded_end(phdrs, bias, hdr_address).ok_or(UnwindError::NotLoaded)?;
    let hdr_len = hdr_phdr.p_memsz.min(hdr_end - hdr_address);
    // SAFETY: inside a loaded, readable segment of a mapped object.
    let hdr_bytes = unsafe { memory_slice(hdr_address, hdr_len) };
    let bases = BaseAddresses::default().set_eh_frame_hdr(hdr_address);
    let hdr = EhFrameHdr::new(hdr_bytes, NativeEndian).parse(&bases, 8)?;
    let Pointer::Direct(eh_frame_address) = hdr.eh_frame_ptr() else {
        return Err(UnwindError::IndirectEhFramePointer);
    };
    let eh_frame_end = loaded_end(phdrs, bias, eh_frame_address).ok_or(UnwindError::NotLoaded)?;
    // The section length is not recorded anywhere in memory: the FDEs the table points to
    // lie between eh_frame_ptr and the end of its segment.
    // SAFETY: inside a loaded, readable segment of a mapped object.
    let eh_frame_bytes = unsafe { memory_slice(eh_frame_address, eh_frame_end - eh_frame_address) };
    let bases = bases.set_eh_frame(eh_frame_address);
    let eh_frame = EhFrame::new(eh_frame_bytes, NativeEndian);
    let fde_table = hdr.table().ok_or(UnwindError::NoSearchTable)?;

    let mut spans = Vec::new();
    let mut context = UnwindContext::new();
    let mut entries = fde_table.iter(&bases);
    while let Some((_, fde_pointer)) = entries.next()? {
        // A damaged FDE only leaves a gap (unwinding through it fails); the rest is usable.
        let Ok(offset) = fde_table.pointer_to_offset(fde_pointer) else {
            continue;
        };
        let Ok(fde) = eh_frame.fde_from_offset(&bases, offset, EhFrame::cie_from_offset) else {
            continue;
        };
        let before = spans.len();
        if compile_fde(&eh_frame, &bases, &mut context, &fde, &mut spans).is_err() {
            spans.truncate(before);
        }
    }
    let rows = rows_from_spans(spans);
    let (Some(first), Some(last)) = (rows.first(), rows.last()) else {
        return Err(UnwindError::NoFdes);
    };
    Ok(ModuleTable {
        lo: first.start,
        hi: last.start,
        rows: Box::leak(rows.into_boxed_slice()),
    })
}

/// The end of the file-backed part of the PT_LOAD segment holding `address`.
fn loaded_end(phdrs: &[libc::Elf64_Phdr], bias: u64, address: u64) -> Option<u64> {
    phdrs
        .iter()
        .filter(|phdr| phdr.p_type == libc::PT_LOAD && phdr.p_flags & libc::PF_R != 0)
        .find_map(|phdr| {
            let start = bias.wrapping_add(phdr.p_vaddr);
            let end = start.checked_add(phdr.p_filesz)?;
            (start <= address && address < end).then_some(end)
        })
}

/// # Safety
/// `[address, address + len)` must be mapped and readable for the lifetime of the result.
unsafe fn memory_slice<'a>(address: u64, len: u64) -> &'a [u8] {
    // SAFETY: guaranteed by the caller.
    unsafe { std::slice::from_raw_parts(address as *const u8, len as usize) }
}

/// A rule that holds over `[start, end)`.
type Span = (u64, u64, Rule);

fn compile_fde(
    eh_frame: &EhFrame<Slice>,
    bases: &BaseAddresses,
    context: &mut UnwindContext<usize>,
    fde: &gimli::FrameDescriptionEntry<Slice>,
    spans: &mut Vec<Span>,
) -> gimli::Result<()> {
    let cie = fde.cie();
    // An explicit "RA undefined" marks the outermost frame; an RA rule that is merely
    // missing (a CIE that never defines it) is not a proof of anything.
    let ra_usable = cie.return_address_register() == RA && cie_defines_ra(eh_frame, bases, cie);
    let mut rows = fde.rows(eh_frame, bases, context)?;
    while let Some(row) = rows.next_row()? {
        let rule = Rule {
            cfa: compile_cfa(eh_frame, row.cfa()),
            rbp: compile_rbp(&row.register(RBP)),
            ra: if ra_usable {
                compile_ra(&row.register(RA))
            } else {
                RaRule::Unknown
            },
        };
        spans.push((row.start_address(), row.end_address(), rule));
    }
    Ok(())
}

fn cie_defines_ra(
    eh_frame: &EhFrame<Slice>,
    bases: &BaseAddresses,
    cie: &gimli::CommonInformationEntry<Slice>,
) -> bool {
    let mut instructions = cie.instructions(eh_frame, bases);
    while let Ok(Some(instruction)) = instructions.next() {
        match instruction {
            CallFrameInstruction::Offset { register, .. }
            | CallFrameInstruction::OffsetExtendedSf { register, .. }
                if register == RA =>
            {
                return true
            }
            _ => {}
        }
    }
    false
}

fn compile_cfa(eh_frame: &EhFrame<Slice>, cfa: &gimli::CfaRule<usize>) -> CfaRule {
    match cfa {
        gimli::CfaRule::RegisterAndOffset { register, offset } => {
            let Ok(offset) = i32::try_from(*offset) else {
                return CfaRule::Unknown;
            };
            match *register {
                RSP => CfaRule::RspOffset(offset),
                RBP => CfaRule::RbpOffset(offset),
                _ => CfaRule::Unknown,
            }
        }
        gimli::CfaRule::Expression(expression) => match expression.get(eh_frame) {
            Ok(expression) => cfa_from_expression(expression.0.slice()),
            Err(_) => CfaRule::Unknown,
        },
    }
}

// DWARF expression opcodes of the patterns we recognize.
const DW_OP_DEREF: u8 = 0x06;
const DW_OP_AND: u8 = 0x1a;
const DW_OP_PLUS: u8 = 0x22;
const DW_OP_SHL: u8 = 0x24;
const DW_OP_GE: u8 = 0x2a;
const DW_OP_LIT0: u8 = 0x30;
const DW_OP_LIT31: u8 = 0x4f;
const DW_OP_BREG6: u8 = 0x76;
const DW_OP_BREG7: u8 = 0x77;
const DW_OP_BREG16: u8 = 0x80;

/// Recognize the CFA expressions real x86-64 code uses:
/// - the linker's PLT pattern `breg7 N; breg16 0; litM; and; litK; ge; lit3; shl; plus`
/// - gcc's DRAP pattern `breg6 N; deref`.
///
/// Anything else is `Unknown` (the handler then fails the unwind instead of guessing).
pub(crate) fn cfa_from_expression(bytes: &[u8]) -> CfaRule {
    let mut reader = ExprReader { bytes };
    let rule = match reader.byte() {
        Some(DW_OP_BREG7) => plt_rule(&mut reader),
        Some(DW_OP_BREG6) => drap_rule(&mut reader),
        _ => None,
    };
    match rule {
        Some(rule) if reader.bytes.is_empty() => rule,
        _ => CfaRule::Unknown,
    }
}

fn plt_rule(reader: &mut ExprReader) -> Option<CfaRule> {
    let rsp_offset = i16::try_from(reader.sleb()?).ok()?;
    reader.expect(DW_OP_BREG16)?;
    (reader.sleb()? == 0).then_some(())?;
    let mask = reader.literal()?;
    reader.expect(DW_OP_AND)?;
    let threshold = reader.literal()?;
    reader.expect(DW_OP_GE)?;
    (reader.literal()? == 3).then_some(())?;
    reader.expect(DW_OP_SHL)?;
    reader.expect(DW_OP_PLUS)?;
    Some(CfaRule::Plt {
        rsp_offset,
        mask,
        threshold,
    })
}

fn drap_rule(reader: &mut ExprReader) -> Option<CfaRule> {
    let offset = i32::try_from(reader.sleb()?).ok()?;
    reader.expect(DW_OP_DEREF)?;
    Some(CfaRule::DerefRbpOffset(offset))
}

struct ExprReader<'a> {
    bytes: &'a [u8],
}

impl ExprReader<'_> {
    fn byte(&mut self) -> Option<u8> {
        let (&first, rest) = self.bytes.split_first()?;
        self.bytes = rest;
        Some(first)
    }

    fn expect(&mut self, opcode: u8) -> Option<()> {
        (self.byte()? == opcode).then_some(())
    }

    fn literal(&mut self) -> Option<u8> {
        let opcode = self.byte()?;
        (DW_OP_LIT0..=DW_OP_LIT31)
            .contains(&opcode)
            .then(|| opcode - DW_OP_LIT0)
    }

    fn sleb(&mut self) -> Option<i64> {
        let mut value: i64 = 0;
        let mut shift = 0;
        loop {
            let byte = self.byte()?;
            if shift >= 64 {
                return None;
            }
            value |= i64::from(byte & 0x7f) << shift;
            shift += 7;
            if byte & 0x80 == 0 {
                if shift < 64 && byte & 0x40 != 0 {
                    value |= -1i64 << shift;
                }
                return Some(value);
            }
        }
    }
}

fn compile_rbp(rule: &RegisterRule<usize>) -> RbpRule {
    match rule {
        // gimli reports a missing rule as Undefined; for a callee-saved register that
        // means "not touched by this frame".
        RegisterRule::Undefined | RegisterRule::SameValue => RbpRule::Unchanged,
        RegisterRule::Offset(offset) => match i32::try_from(*offset) {
            Ok(offset) => RbpRule::AtCfa(offset),
            Err(_) => RbpRule::Unknown,
        },
        _ => RbpRule::Unknown,
    }
}

fn compile_ra(rule: &RegisterRule<usize>) -> RaRule {
    match rule {
        RegisterRule::Undefined => RaRule::Undefined,
        RegisterRule::Offset(offset) => match i32::try_from(*offset) {
            Ok(offset) => RaRule::AtCfa(offset),
            Err(_) => RaRule::Unknown,
        },
        _ => RaRule::Unknown,
    }
}

/// Turn per-FDE spans into one sorted row array: gaps between FDEs become `NoInfo`
/// rows, equal neighbours merge, and a final `NoInfo` row marks the end of the object.
/// Where FDEs overlap (broken CFI) the later-starting one wins and the rest of the
/// earlier one becomes a gap, so no rule is ever applied outside its own FDE.
pub(crate) fn rows_from_spans(mut spans: Vec<Span>) -> Vec<Row> {
    spans.retain(|&(start, end, _)| start < end);
    spans.sort_by_key(|&(start, _, _)| start);
    let mut rows: Vec<Row> = Vec::with_capacity(spans.len() + 1);
    let mut covered_to = 0;
    for (start, end, rule) in spans {
        if !rows.is_empty() && start > covered_to {
            push_row(&mut rows, covered_to, Rule::NO_INFO);
        }
        push_row(&mut rows, start, rule);
        covered_to = end;
    }
    if !rows.is_empty() {
        push_row(&mut rows, covered_to, Rule::NO_INFO);
    }
    rows
}

fn push_row(rows: &mut Vec<Row>, start: u64, rule: Rule) {
    if let Some(last) = rows.last_mut() {
        if last.start == start {
            last.rule = rule;
            return;
        }
        if last.rule == rule {
            return;
        }
    }
    rows.push(Row { start, rule });
}
