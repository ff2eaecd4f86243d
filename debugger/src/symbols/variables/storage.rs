//! Where variables live without a process: at a fixed address (globals,
//! file statics, static locals) or at a fixed offset from their frame's
//! CFA (locals and parameters kept in memory). A profiler that recorded a
//! data address, and for a stack address the frame's CFA, names the
//! variable from these alone.

use gimli::{AttributeValue, Operation, UnitOffset};

use super::{block_members, make_variable, Variable};
use crate::symbols::dwarf::{CuData, DwarfData};
use crate::symbols::eval::expression_at;
use crate::symbols::{ObjectFile, R};

impl ObjectFile {
    /// Every variable of every unit that DWARF places at a fixed address
    /// (a lone `DW_OP_addr`), with that file address. Thread-local
    /// variables and those without a location are left out.
    pub fn static_variables(&self) -> Vec<(Variable, u64)> {
        let Some(data) = self.dwarf.as_ref() else {
            return Vec::new();
        };
        let mut found = Vec::new();
        for offset in data.all_cu_offsets() {
            let Some(cu) = data.cu_at(offset) else {
                continue;
            };
            for die in variable_dies(&cu.unit) {
                let Some(var) = make_variable(data, &cu, die, None) else {
                    continue;
                };
                if let Some(address) = fixed_address(data, &cu, var.location.as_ref()) {
                    found.push((var, address));
                }
            }
        }
        found
    }

    /// The locals and parameters in scope at file address `pc` (of the
    /// function there and of the calls inlined into it) that are in memory
    /// at a fixed offset from the frame's CFA at that pc, each with the
    /// offset: `DW_OP_fbreg N` under a frame base of
    /// `DW_OP_call_frame_cfa`, as gcc describes x86-64 frames. Variables in
    /// registers, or described from another base, are left out.
    pub fn cfa_variables_at(&self, pc: u64) -> Vec<(Variable, i64)> {
        let (Some(data), Some((cu, chain, frame_base))) = (self.dwarf.as_ref(), self.scopes_at(pc))
        else {
            return Vec::new();
        };
        let base_is_cfa = frame_base
            .as_ref()
            .and_then(|base| single_operation(data, &cu, base, pc))
            .is_some_and(|op| matches!(op, Operation::CallFrameCFA));
        if !base_is_cfa {
            return Vec::new();
        }
        let mut found = Vec::new();
        for scope in &chain {
            for tag in [gimli::DW_TAG_variable, gimli::DW_TAG_formal_parameter] {
                for (member_cu, die) in block_members(data, &cu, scope.offset, tag) {
                    let Some(var) = make_variable(data, &member_cu, die, frame_base) else {
                        continue;
                    };
                    let op = var
                        .location
                        .as_ref()
                        .and_then(|location| single_operation(data, &member_cu, location, pc));
                    if let Some(Operation::FrameOffset { offset }) = op {
                        found.push((var, offset));
                    }
                }
            }
        }
        found
    }
}

/// Every DW_TAG_variable DIE of a unit, at any depth.
fn variable_dies(unit: &gimli::Unit<R>) -> Vec<UnitOffset> {
    let mut dies = Vec::new();
    let mut entries = unit.entries();
    while let Ok(Some((_, entry))) = entries.next_dfs() {
        if entry.tag() == gimli::DW_TAG_variable {
            dies.push(entry.offset());
        }
    }
    dies
}

/// The file address of a location that is exactly `DW_OP_addr A` (or
/// `DW_OP_addrx`).
fn fixed_address(
    data: &DwarfData,
    cu: &CuData,
    location: Option<&AttributeValue<R>>,
) -> Option<u64> {
    let AttributeValue::Exprloc(_) = location? else {
        return None;
    };
    match single_operation(data, cu, location?, 0)? {
        Operation::Address { address } => Some(address),
        Operation::AddressIndex { index } => data.dwarf.address(&cu.unit, index).ok(),
        _ => None,
    }
}

/// The one operation of the location expression that applies at `pc`;
/// None when there is none there or it has more than one.
fn single_operation(
    data: &DwarfData,
    cu: &CuData,
    location: &AttributeValue<R>,
    pc: u64,
) -> Option<Operation<R>> {
    let expr = expression_at(&data.dwarf, &cu.unit, location, Some(pc)).ok()??;
    let mut ops = expr.operations(cu.unit.encoding());
    let first = ops.next().ok()??;
    matches!(ops.next(), Ok(None)).then_some(first)
}
