//! Call frame information of one object file: `.eh_frame` (found through
//! `.eh_frame_hdr`'s binary-search table when there is one) and
//! `.debug_frame` (from the object or its separate debug file).

use std::sync::OnceLock;

use gimli::{
    BaseAddresses, CfaRule, DebugFrame, EhFrame, EhFrameHdr, EndianSlice, LittleEndian,
    ParsedEhFrameHdr, Register, RegisterRule, UnwindContext, UnwindSection,
};
use object::{Object, ObjectSection};

use crate::{Error, Result};

pub(crate) type Slice = EndianSlice<'static, LittleEndian>;
pub(crate) type Expression = gimli::Expression<Slice>;

/// How to find the CFA, with expressions already cut out of their section.
#[derive(Clone, Debug)]
pub(crate) enum CfaRecipe {
    RegisterOffset { register: u16, offset: i64 },
    Expression(Expression),
}

/// How to find a caller's register, with expressions already cut out.
#[derive(Clone, Debug)]
pub(crate) enum RegisterRecipe {
    Undefined,
    SameValue,
    AtCfaOffset(i64),
    CfaOffset(i64),
    InRegister(u16),
    AtExpression(Expression),
    Expression(Expression),
    Constant(u64),
}

/// The CFI row for one address, owned so that it outlives the gimli context.
#[derive(Clone, Debug)]
pub(crate) struct FrameRecipe {
    pub(crate) cfa: CfaRecipe,
    pub(crate) registers: Vec<(u16, RegisterRecipe)>,
    pub(crate) return_address_register: u16,
    pub(crate) encoding: gimli::Encoding,
}

impl FrameRecipe {
    pub(crate) fn register(&self, register: u16) -> &RegisterRecipe {
        self.registers
            .iter()
            .find(|(r, _)| *r == register)
            .map(|(_, recipe)| recipe)
            .unwrap_or(&RegisterRecipe::Undefined)
    }
}

/// Reused between lookups so that unwinding allocates little.
pub(crate) type Context = UnwindContext<usize>;

/// An FDE's address range and where it is in its section, for sections
/// without a binary-search table.
#[derive(Clone, Copy, Debug)]
struct FdeSpan {
    start: u64,
    end: u64,
    offset: usize,
}

struct EhFrameSource {
    section: EhFrame<Slice>,
    bases: BaseAddresses,
    header: Option<ParsedEhFrameHdr<Slice>>,
    index: OnceLock<Vec<FdeSpan>>,
}

struct DebugFrameSource {
    section: DebugFrame<Slice>,
    bases: BaseAddresses,
    index: OnceLock<Vec<FdeSpan>>,
}

/// The call frame information of one object file. Addresses are file
/// (link-time) addresses; the caller removes the load bias first.
pub struct CfiTable {
    eh_frame: Option<EhFrameSource>,
    debug_frame: Option<DebugFrameSource>,
}

impl std::fmt::Debug for CfiTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CfiTable")
            .field("eh_frame", &self.eh_frame.is_some())
            .field("debug_frame", &self.debug_frame.is_some())
            .finish()
    }
}

fn section_of(file: &object::File<'static>, name: &str) -> Option<(&'static [u8], u64)> {
    let section = file.section_by_name(name)?;
    let data = section.data().ok()?;
    (!data.is_empty()).then_some((data, section.address()))
}

fn section_address(file: &object::File<'static>, name: &str) -> Option<u64> {
    file.section_by_name(name).map(|s| s.address())
}

impl CfiTable {
    /// `elf`: the object's bytes; `debug`: its separate debug file's bytes,
    /// if any, whose `.debug_frame` is used when `.eh_frame` has nothing.
    pub fn new(elf: &'static [u8], debug: Option<&'static [u8]>) -> Result<CfiTable> {
        let file = object::File::parse(elf)
            .map_err(|e| Error::Unwind(format!("cannot parse object for CFI: {e}")))?;
        let mut bases = BaseAddresses::default();
        if let Some(text) = section_address(&file, ".text") {
            bases = bases.set_text(text);
        }
        if let Some(got) = section_address(&file, ".got") {
            bases = bases.set_got(got);
        }
        let eh_frame = section_of(&file, ".eh_frame").map(|(data, address)| {
            let mut section = EhFrame::new(data, LittleEndian);
            section.set_address_size(8);
            let mut bases = bases.clone().set_eh_frame(address);
            let header = section_of(&file, ".eh_frame_hdr").and_then(|(data, address)| {
                bases = bases.clone().set_eh_frame_hdr(address);
                EhFrameHdr::new(data, LittleEndian).parse(&bases, 8).ok()
            });
            EhFrameSource {
                section,
                bases,
                header,
                index: OnceLock::new(),
            }
        });
        let debug_file = debug.and_then(|bytes| object::File::parse(bytes).ok());
        let debug_frame = debug_file
            .as_ref()
            .and_then(|f| section_of(f, ".debug_frame"))
            .or_else(|| section_of(&file, ".debug_frame"))
            .map(|(data, _)| {
                let mut section = DebugFrame::new(data, LittleEndian);
                section.set_address_size(8);
                DebugFrameSource {
                    section,
                    bases: bases.clone(),
                    index: OnceLock::new(),
                }
            });
        Ok(CfiTable {
            eh_frame,
            debug_frame,
        })
    }

    /// True when the object has no call frame information at all.
    pub fn is_empty(&self) -> bool {
        self.eh_frame.is_none() && self.debug_frame.is_none()
    }

    /// The unwind recipe for the file address `address`, if any FDE covers it.
    pub(crate) fn recipe_for(&self, context: &mut Context, address: u64) -> Option<FrameRecipe> {
        if let Some(eh) = &self.eh_frame {
            if let Some(recipe) = eh.recipe_for(context, address) {
                return Some(recipe);
            }
        }
        let debug = self.debug_frame.as_ref()?;
        let index = debug
            .index
            .get_or_init(|| build_index(&debug.section, &debug.bases));
        let span = find_span(index, address)?;
        let fde = debug
            .section
            .fde_from_offset(
                &debug.bases,
                span.offset.into(),
                DebugFrame::cie_from_offset,
            )
            .ok()?;
        let row = fde
            .unwind_info_for_address(&debug.section, &debug.bases, context, address)
            .ok()?;
        Some(own_row(row, &fde, &debug.section))
    }
}

impl EhFrameSource {
    fn recipe_for(&self, context: &mut Context, address: u64) -> Option<FrameRecipe> {
        let fde = match self.header.as_ref().and_then(|h| h.table()) {
            Some(table) => table
                .fde_for_address(
                    &self.section,
                    &self.bases,
                    address,
                    EhFrame::cie_from_offset,
                )
                .ok()?,
            None => {
                let index = self
                    .index
                    .get_or_init(|| build_index(&self.section, &self.bases));
                let span = find_span(index, address)?;
                self.section
                    .fde_from_offset(&self.bases, span.offset.into(), EhFrame::cie_from_offset)
                    .ok()?
            }
        };
        let row = fde
            .unwind_info_for_address(&self.section, &self.bases, context, address)
            .ok()?;
        Some(own_row(row, &fde, &self.section))
    }
}

/// Walk every entry of the section once and sort the FDEs by address.
/// Entries that fail to parse are skipped rather than failing the table.
fn build_index<S>(section: &S, bases: &BaseAddresses) -> Vec<FdeSpan>
where
    S: UnwindSection<Slice>,
    S::Offset: gimli::UnwindOffset<usize>,
{
    let mut spans = Vec::new();
    let mut entries = section.entries(bases);
    loop {
        match entries.next() {
            Ok(Some(gimli::CieOrFde::Fde(partial))) => {
                if let Ok(fde) = partial.parse(S::cie_from_offset) {
                    if fde.len() > 0 {
                        spans.push(FdeSpan {
                            start: fde.initial_address(),
                            end: fde.end_address(),
                            offset: fde.offset(),
                        });
                    }
                }
            }
            Ok(Some(gimli::CieOrFde::Cie(_))) => {}
            Ok(None) | Err(_) => break,
        }
    }
    spans.sort_by_key(|span| span.start);
    spans
}

fn find_span(index: &[FdeSpan], address: u64) -> Option<FdeSpan> {
    let after = index.partition_point(|span| span.start <= address);
    let span = *index.get(after.checked_sub(1)?)?;
    (address < span.end).then_some(span)
}

fn own_row<S: UnwindSection<Slice>>(
    row: &gimli::UnwindTableRow<usize>,
    fde: &gimli::FrameDescriptionEntry<Slice>,
    section: &S,
) -> FrameRecipe {
    let expression = |e: &gimli::UnwindExpression<usize>| e.get(section).ok();
    let cfa = match row.cfa() {
        CfaRule::RegisterAndOffset { register, offset } => CfaRecipe::RegisterOffset {
            register: register.0,
            offset: *offset,
        },
        CfaRule::Expression(e) => match expression(e) {
            Some(e) => CfaRecipe::Expression(e),
            // An unreadable expression: a CFA that no register yields.
            None => CfaRecipe::RegisterOffset {
                register: u16::MAX,
                offset: 0,
            },
        },
    };
    let registers =
        row.registers()
            .map(|(Register(register), rule)| {
                let recipe = match rule {
                    RegisterRule::Undefined => RegisterRecipe::Undefined,
                    RegisterRule::SameValue => RegisterRecipe::SameValue,
                    RegisterRule::Offset(n) => RegisterRecipe::AtCfaOffset(*n),
                    RegisterRule::ValOffset(n) => RegisterRecipe::CfaOffset(*n),
                    RegisterRule::Register(Register(r)) => RegisterRecipe::InRegister(*r),
                    RegisterRule::Expression(e) => expression(e)
                        .map_or(RegisterRecipe::Undefined, RegisterRecipe::AtExpression),
                    RegisterRule::ValExpression(e) => {
                        expression(e).map_or(RegisterRecipe::Undefined, RegisterRecipe::Expression)
                    }
                    RegisterRule::Constant(c) => RegisterRecipe::Constant(*c),
                    _ => RegisterRecipe::Undefined,
                };
                (*register, recipe)
            })
            .collect();
    FrameRecipe {
        cfa,
        registers,
        return_address_register: fde.cie().return_address_register().0,
        encoding: fde.cie().encoding(),
    }
}
