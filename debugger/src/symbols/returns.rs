//! Values functions return, found where the System V x86-64 ABI puts them:
//! the DWARF return type is classified eightbyte by eightbyte (INTEGER in
//! rax then rdx, SSE in xmm0 then xmm1); a type larger than 16 bytes (or
//! with a field the registers cannot hold) is returned in memory, at the
//! address the caller passed and the callee hands back in rax. Rust's
//! enums (`Result<usize, String>`), structs and tuples are classified by
//! their members, variants included.

use gimli::AttributeValue;

use super::dwarf::{CuData, DieRef, Units};
use super::functions::{attr_through_origin_anywhere, scope_chain};
use super::types::{child_ref, member_offset, Types};
use super::{FrameContext, ObjectFile};
use crate::value::Value;

type Die<'a> = gimli::DebuggingInformationEntry<'a, 'a, super::R>;

/// DWARF register numbers of the return registers.
const RAX: u16 = 0;
const RDX: u16 = 1;
const XMM0: u16 = 17;
const XMM1: u16 = 18;

/// Nesting deep enough for real types, bounded against DWARF loops.
const MAX_DEPTH: usize = 32;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    /// Padding only.
    Padding,
    Integer,
    Sse,
}

/// The classes of a type's (at most two) eightbytes; `None` when it is
/// returned in memory.
struct Classifier<'t, 'a> {
    types: &'t Types<'a>,
    classes: [Class; 2],
}

impl Classifier<'_, '_> {
    fn note(&mut self, at: u64, size: u64, class: Class) -> Option<()> {
        let first = (at / 8) as usize;
        let last = ((at + size.max(1) - 1) / 8) as usize;
        for eightbyte in first..=last {
            let slot = self.classes.get_mut(eightbyte)?;
            *slot = match (*slot, class) {
                (Class::Integer, _) | (_, Class::Integer) => Class::Integer,
                (Class::Sse, _) | (_, Class::Sse) => Class::Sse,
                _ => Class::Padding,
            };
        }
        Some(())
    }

    fn classify(&mut self, offset: DieRef, at: u64, depth: usize) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        let offset = self.types.strip(offset)?;
        let entry = self.types.entry(offset)?;
        let size = self.types.size(offset)?;
        match entry.tag() {
            gimli::DW_TAG_base_type => {
                let float = matches!(
                    entry.attr_value(gimli::DW_AT_encoding),
                    Ok(Some(AttributeValue::Encoding(
                        gimli::DW_ATE_float | gimli::DW_ATE_complex_float
                    )))
                );
                // long double and the complex types go through x87 or
                // pairs of registers rdbx does not read.
                if float && size > 8 {
                    return None;
                }
                self.note(at, size, if float { Class::Sse } else { Class::Integer })
            }
            gimli::DW_TAG_pointer_type
            | gimli::DW_TAG_reference_type
            | gimli::DW_TAG_rvalue_reference_type
            | gimli::DW_TAG_ptr_to_member_type
            | gimli::DW_TAG_enumeration_type => self.note(at, size, Class::Integer),
            gimli::DW_TAG_structure_type | gimli::DW_TAG_class_type | gimli::DW_TAG_union_type => {
                self.members(offset, at, depth)
            }
            gimli::DW_TAG_array_type => {
                let element = self.types.type_of(offset, &entry)?;
                let element_size = self.types.size(element)?;
                if element_size == 0 {
                    return Some(());
                }
                for i in 0..size / element_size {
                    self.classify(element, at + i * element_size, depth + 1)?;
                }
                Some(())
            }
            _ => None,
        }
    }

    /// The members of a struct or union at `at`, and those of every
    /// variant of a Rust enum's variant part.
    fn members(&mut self, offset: DieRef, at: u64, depth: usize) -> Option<()> {
        let mut tree = self.types.tree(offset)?;
        let member_type = |e: &Die| self.types.type_of(child_ref(offset, e), e);
        let root = tree.root().ok()?;
        let mut children = root.children();
        let mut nested = Vec::new();
        while let Ok(Some(child)) = children.next() {
            let entry = child.entry();
            match entry.tag() {
                gimli::DW_TAG_member | gimli::DW_TAG_inheritance => {
                    if is_static(entry) {
                        continue;
                    }
                    nested.push((member_type(entry)?, at + member_offset(entry).unwrap_or(0)));
                }
                gimli::DW_TAG_variant_part => {
                    let mut parts = child.children();
                    while let Ok(Some(part)) = parts.next() {
                        match part.entry().tag() {
                            gimli::DW_TAG_member => {
                                let e = part.entry();
                                nested.push((member_type(e)?, at + member_offset(e).unwrap_or(0)));
                            }
                            gimli::DW_TAG_variant => {
                                let mut fields = part.children();
                                while let Ok(Some(field)) = fields.next() {
                                    let e = field.entry();
                                    if e.tag() == gimli::DW_TAG_member {
                                        nested.push((
                                            member_type(e)?,
                                            at + member_offset(e).unwrap_or(0),
                                        ));
                                    }
                                }
                            }
                            _ => {}
                        }
                    }
                }
                _ => {}
            }
        }
        for (ty, member_at) in nested {
            self.classify(ty, member_at, depth + 1)?;
        }
        Some(())
    }
}

fn is_static(entry: &Die) -> bool {
    entry
        .attr_value(gimli::DW_AT_external)
        .ok()
        .flatten()
        .is_some()
        || entry
            .attr_value(gimli::DW_AT_declaration)
            .ok()
            .flatten()
            .is_some()
}

impl ObjectFile {
    /// The value the function starting at `function_low_pc` returned, read
    /// from `frame` (the caller's, right after the return): registers by
    /// the ABI's classes, or memory at rax. `None` for a function returning
    /// nothing or a type rdbx cannot place.
    pub fn returned_value(&self, function_low_pc: u64, frame: &dyn FrameContext) -> Option<Value> {
        let data = self.dwarf.as_ref()?;
        let cu = data.cu_for_address(function_low_pc)?;
        let return_type = return_type(data.units(), &cu, function_low_pc)?;
        let symbolizer = |addr: u64| self.symbolic_name(addr);
        let types = self.types_for(&cu, Some(frame), &symbolizer)?;
        let size = types.size(return_type)?;
        if size == 0 {
            return None;
        }
        let mut classifier = Classifier {
            types: &types,
            classes: [Class::Padding; 2],
        };
        let in_registers = size <= 16 && classifier.classify(return_type, 0, 0).is_some();
        let bytes = if in_registers {
            register_bytes(&classifier.classes, size, frame)?
        } else {
            let address = frame.register(RAX)?;
            let mut buf = vec![0u8; usize::try_from(size).ok()?];
            frame.read_memory(address, &mut buf).ok()?;
            buf
        };
        Some(types.decode(Some(return_type), &bytes, 0))
    }
}

/// The bytes of a value returned in registers, eightbyte by eightbyte.
fn register_bytes(classes: &[Class; 2], size: u64, frame: &dyn FrameContext) -> Option<Vec<u8>> {
    let mut integer = [RAX, RDX].into_iter();
    let mut sse = [XMM0, XMM1].into_iter();
    let mut bytes = Vec::with_capacity(16);
    for class in classes.iter().take(size.div_ceil(8) as usize) {
        let register = match class {
            Class::Sse => sse.next()?,
            Class::Integer | Class::Padding => integer.next()?,
        };
        bytes.extend_from_slice(&frame.register(register)?.to_le_bytes());
    }
    bytes.truncate(size as usize);
    Some(bytes)
}

/// The DWARF return type of the function starting at `low_pc`.
fn return_type(units: &Units, cu: &CuData, low_pc: u64) -> Option<DieRef> {
    let chain = scope_chain(units.dwarf(), cu, low_pc);
    let function = chain.iter().find(|s| s.tag == gimli::DW_TAG_subprogram)?;
    let function = DieRef {
        unit: cu.offset,
        offset: function.offset,
    };
    let (typed, value) = attr_through_origin_anywhere(units, function, gimli::DW_AT_type)?;
    units.reference(typed.unit, value)
}
