//! Call sites (DW_TAG_call_site, DWARF 4's DW_TAG_GNU_call_site): what a
//! call calls, whether it is a tail call, and the values it passed. gdb
//! rebuilds the frames tail calls removed from them and resolves
//! DW_OP_entry_value with them; so do we.

use gimli::{AttributeValue, DebugInfoOffset, UnitOffset};

use super::dwarf::CuData;
use super::eval::{EvalContext, Place};
use super::functions::scope_chain;
use super::{FrameContext, ObjectFile, R};

/// One call site of a function.
#[derive(Debug, Clone)]
pub struct CallSite {
    cu: DebugInfoOffset,
    return_pc: u64,
    tail_call: bool,
    target: CallTarget,
    /// DW_AT_call_target (or the GNU one), for an indirect call.
    target_expression: Option<AttributeValue<R>>,
    /// The registers the call passed: DW_TAG_call_site_parameter's
    /// register and its DW_AT_call_value.
    parameters: Vec<(u16, AttributeValue<R>)>,
    /// DW_AT_frame_base of the calling function, for those expressions.
    frame_base: Option<AttributeValue<R>>,
}

/// What a call site calls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallTarget {
    /// The entry (file address) of a function of this object; several
    /// when the function is in pieces (DW_AT_ranges).
    Entries(Vec<u64>),
    /// A function this unit only declares, by its (linkage) name: the
    /// symbol tables say where it is.
    Named(String),
    /// An indirect call: DW_AT_call_target, computed in the caller's frame.
    Computed,
    /// DWARF does not say (no target, or an abstract origin without code).
    Unknown,
}

impl CallSite {
    /// The address after the call instruction (a file address): the
    /// caller's return address, or for a tail call the pc gdb gives the
    /// frame it rebuilds.
    pub fn return_pc(&self) -> u64 {
        self.return_pc
    }

    pub fn is_tail_call(&self) -> bool {
        self.tail_call
    }

    pub fn target(&self) -> &CallTarget {
        &self.target
    }
}

/// A call site DIE's return pc: DW_AT_call_return_pc, or DW_AT_low_pc for
/// the GNU extension.
fn site_return_pc(
    dwarf: &gimli::Dwarf<R>,
    unit: &gimli::Unit<R>,
    entry: &gimli::DebuggingInformationEntry<R>,
) -> Option<u64> {
    let attr = [gimli::DW_AT_call_return_pc, gimli::DW_AT_low_pc]
        .into_iter()
        .find_map(|at| entry.attr_value(at).ok().flatten())?;
    dwarf.attr_address(unit, attr).ok().flatten()
}

fn flag(entry: &gimli::DebuggingInformationEntry<R>, names: &[gimli::DwAt]) -> bool {
    names
        .iter()
        .any(|at| matches!(entry.attr_value(*at), Ok(Some(AttributeValue::Flag(true)))))
}

/// The target of a call site, in gdb's order of attributes: DW_AT_call_target
/// (an expression), then DW_AT_call_origin (DW_AT_abstract_origin for the GNU
/// extension).
fn site_target(
    dwarf: &gimli::Dwarf<R>,
    unit: &gimli::Unit<R>,
    entry: &gimli::DebuggingInformationEntry<R>,
) -> CallTarget {
    let computed = [gimli::DW_AT_call_target, gimli::DW_AT_GNU_call_site_target]
        .into_iter()
        .find_map(|at| entry.attr_value(at).ok().flatten());
    match computed {
        Some(AttributeValue::Exprloc(e)) if !e.0.is_empty() => return CallTarget::Computed,
        Some(_) => return CallTarget::Unknown,
        None => {}
    }
    let origin = [gimli::DW_AT_call_origin, gimli::DW_AT_abstract_origin]
        .into_iter()
        .find_map(|at| entry.attr_value(at).ok().flatten());
    match origin {
        Some(AttributeValue::UnitRef(offset)) => origin_target(dwarf, unit, offset),
        _ => CallTarget::Unknown,
    }
}

/// The function a call's origin DIE names: a declaration by its name, a
/// definition by the start of its code.
fn origin_target(dwarf: &gimli::Dwarf<R>, unit: &gimli::Unit<R>, offset: UnitOffset) -> CallTarget {
    let Ok(entry) = unit.entry(offset) else {
        return CallTarget::Unknown;
    };
    if flag(&entry, &[gimli::DW_AT_declaration]) {
        let name = [
            gimli::DW_AT_linkage_name,
            gimli::DW_AT_MIPS_linkage_name,
            gimli::DW_AT_name,
        ]
        .into_iter()
        .find_map(|at| entry.attr_value(at).ok().flatten())
        .and_then(|v| dwarf.attr_string(unit, v).ok())
        .map(|s| s.to_string_lossy().into_owned());
        return name.map_or(CallTarget::Unknown, CallTarget::Named);
    }
    let mut starts = Vec::new();
    if let Ok(mut ranges) = dwarf.die_ranges(unit, &entry) {
        while let Ok(Some(range)) = ranges.next() {
            if range.end > range.begin {
                starts.push(range.begin);
            }
        }
    }
    if starts.is_empty() {
        CallTarget::Unknown
    } else {
        CallTarget::Entries(starts)
    }
}

/// Every call site in the subtree of `function` (inlined code included),
/// in DIE order.
fn call_sites_under(dwarf: &gimli::Dwarf<R>, cu: &CuData, function: UnitOffset) -> Vec<CallSite> {
    let unit = &cu.unit;
    let mut sites = Vec::new();
    let frame_base = unit
        .entry(function)
        .ok()
        .and_then(|e| e.attr_value(gimli::DW_AT_frame_base).ok().flatten());
    let Ok(mut entries) = unit.entries_at_offset(function) else {
        return sites;
    };
    let mut depth = 0isize;
    let mut first = true;
    while let Ok(Some((delta, entry))) = entries.next_dfs() {
        depth += delta;
        if !first && depth <= 0 {
            break;
        }
        first = false;
        if !matches!(
            entry.tag(),
            gimli::DW_TAG_call_site | gimli::DW_TAG_GNU_call_site
        ) {
            continue;
        }
        let Some(return_pc) = site_return_pc(dwarf, unit, entry) else {
            continue;
        };
        sites.push(CallSite {
            cu: cu.offset,
            return_pc,
            tail_call: flag(
                entry,
                &[gimli::DW_AT_call_tail_call, gimli::DW_AT_GNU_tail_call],
            ),
            target: site_target(dwarf, unit, entry),
            target_expression: [gimli::DW_AT_call_target, gimli::DW_AT_GNU_call_site_target]
                .into_iter()
                .find_map(|at| entry.attr_value(at).ok().flatten()),
            parameters: site_parameters(unit, entry.offset()),
            frame_base,
        });
    }
    sites
}

/// The registers a call site's DW_TAG_call_site_parameter children say
/// the call passed, with the expressions of their values.
fn site_parameters(unit: &gimli::Unit<R>, site: UnitOffset) -> Vec<(u16, AttributeValue<R>)> {
    let kinds = [
        gimli::DW_TAG_call_site_parameter,
        gimli::DW_TAG_GNU_call_site_parameter,
    ];
    super::variables::children_with_tag(unit, site, &kinds)
        .into_iter()
        .filter_map(|param| {
            let entry = unit.entry(param).ok()?;
            let register = match entry.attr_value(gimli::DW_AT_location).ok()?? {
                AttributeValue::Exprloc(e) => super::eval::entry_register(e)?,
                _ => return None,
            };
            let value = [gimli::DW_AT_call_value, gimli::DW_AT_GNU_call_site_value]
                .into_iter()
                .find_map(|at| entry.attr_value(at).ok().flatten())?;
            Some((register, value))
        })
        .collect()
}

/// The entry of a subprogram DIE: DW_AT_entry_pc, else its first range.
fn subprogram_entry(
    dwarf: &gimli::Dwarf<R>,
    unit: &gimli::Unit<R>,
    die: UnitOffset,
) -> Option<u64> {
    let entry = unit.entry(die).ok()?;
    if let Ok(Some(AttributeValue::Addr(pc))) = entry.attr_value(gimli::DW_AT_entry_pc) {
        return Some(pc);
    }
    let mut ranges = dwarf.die_ranges(unit, &entry).ok()?;
    while let Some(range) = ranges.next().ok()? {
        if range.end > range.begin {
            return Some(range.begin);
        }
    }
    None
}

/// A value DW_AT_call_value or DW_AT_call_target computed to: an
/// expression, not a location, so an "address" result is the value.
fn place_value(place: Place, frame: &dyn FrameContext) -> Option<u64> {
    match place {
        Place::Memory(v) => Some(v),
        Place::Register(r) => frame.register(r),
        Place::Bytes(b) if !b.is_empty() => {
            let mut raw = [0u8; 8];
            let n = b.len().min(8);
            raw[..n].copy_from_slice(&b[..n]);
            Some(u64::from_le_bytes(raw))
        }
        _ => None,
    }
}

/// The call sites of one function, shared.
pub(crate) type Sites = std::sync::Arc<Vec<CallSite>>;

impl ObjectFile {
    /// The outermost function at `addr` (a file address): its CU and DIE.
    fn subprogram_at(&self, addr: u64) -> Option<(std::sync::Arc<CuData>, UnitOffset)> {
        let data = self.dwarf.as_ref()?;
        let cu = data.cu_for_address(addr)?;
        let function = cu.subprograms(&data.dwarf).containing(addr)?;
        Some((cu, function))
    }

    /// Every call site of `function`, read once.
    fn sites_of(&self, cu: &CuData, function: UnitOffset) -> Sites {
        let mut known = self
            .call_sites
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        known
            .entry((cu.offset, function))
            .or_insert_with(|| match self.dwarf.as_ref() {
                Some(data) => std::sync::Arc::new(call_sites_under(&data.dwarf, cu, function)),
                None => Sites::default(),
            })
            .clone()
    }

    /// The entry (file address) of the function DWARF describes at `addr`,
    /// inlined calls looked through.
    pub fn function_entry_at(&self, addr: u64) -> Option<u64> {
        let data = self.dwarf.as_ref()?;
        let (cu, function) = self.subprogram_at(addr)?;
        subprogram_entry(&data.dwarf, &cu.unit, function)
    }

    /// The address ranges (file addresses) of the inlined call active at
    /// `addr` that is `depth` calls out from the innermost (0).
    pub fn inlined_call_ranges(&self, addr: u64, depth: usize) -> Vec<(u64, u64)> {
        let Some(data) = self.dwarf.as_ref() else {
            return Vec::new();
        };
        let Some(cu) = data.cu_for_address(addr) else {
            return Vec::new();
        };
        let chain = scope_chain(&data.dwarf, &cu, addr);
        let Some(scope) = chain
            .iter()
            .rev()
            .filter(|s| s.tag == gimli::DW_TAG_inlined_subroutine)
            .nth(depth)
        else {
            return Vec::new();
        };
        let mut out = Vec::new();
        if let Ok(entry) = cu.unit.entry(scope.offset) {
            if let Ok(mut ranges) = data.dwarf.die_ranges(&cu.unit, &entry) {
                while let Ok(Some(range)) = ranges.next() {
                    out.push((range.begin, range.end));
                }
            }
        }
        out
    }

    /// The call site whose return address is `return_pc` (a file
    /// address), in the function containing the call.
    pub fn call_site_returning_to(&self, return_pc: u64) -> Option<CallSite> {
        let (cu, function) = self.subprogram_at(return_pc.wrapping_sub(1))?;
        self.sites_of(&cu, function)
            .iter()
            .find(|site| site.return_pc == return_pc)
            .cloned()
    }

    /// The tail calls of the function that starts at `entry` (a file
    /// address); `None` when DWARF has no function starting there.
    pub fn tail_call_sites(&self, entry: u64) -> Option<Vec<CallSite>> {
        let data = self.dwarf.as_ref()?;
        let (cu, function) = self.subprogram_at(entry)?;
        if subprogram_entry(&data.dwarf, &cu.unit, function) != Some(entry) {
            return None;
        }
        let sites = self.sites_of(&cu, function);
        Some(sites.iter().filter(|s| s.is_tail_call()).cloned().collect())
    }

    /// The evaluation context of the function containing `site`, with
    /// `caller` its frame.
    fn with_site_context<T>(
        &self,
        site: &CallSite,
        caller: &dyn FrameContext,
        f: impl FnOnce(&EvalContext) -> T,
    ) -> Option<T> {
        let data = self.dwarf.as_ref()?;
        let cu = data.cu_at(site.cu)?;
        let context = EvalContext {
            dwarf: &data.dwarf,
            unit: &cu.unit,
            frame: caller,
            frame_base: site.frame_base.as_ref(),
        };
        Some(f(&context))
    }

    /// An indirect call's target (runtime address) computed in `caller`,
    /// the frame that made the call.
    pub fn computed_call_target(&self, site: &CallSite, caller: &dyn FrameContext) -> Option<u64> {
        let attr = site.target_expression.as_ref()?;
        self.with_site_context(site, caller, |context| {
            place_value(context.place_of(attr).ok()?, caller)
        })
        .flatten()
    }

    /// The registers a call passed, as its DW_TAG_call_site_parameter
    /// children describe them: (DWARF register, value or why it cannot be
    /// computed), the values computed in `caller`, the frame that made the
    /// call. A value DWARF does not give is left out.
    pub fn call_site_parameters(
        &self,
        site: &CallSite,
        caller: &dyn FrameContext,
    ) -> Vec<(u16, std::result::Result<u64, String>)> {
        self.with_site_context(site, caller, |context| {
            site.parameters
                .iter()
                .filter_map(|(register, value_attr)| {
                    let value = match context.place_of(value_attr) {
                        Ok(Place::Unavailable(why)) => Err(why),
                        Ok(place) => Ok(place_value(place, caller)?),
                        Err(e) => Err(e.to_string()),
                    };
                    Some((*register, value))
                })
                .collect()
        })
        .unwrap_or_default()
    }
}
