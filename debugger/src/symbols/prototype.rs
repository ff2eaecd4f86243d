//! Function prototypes from DWARF, for injected calls: the class of each
//! parameter (how System V passes it), the return type, and decoding the
//! returned bytes into a value.

use gimli::{AttributeValue, UnitOffset};

use super::dwarf::{CuData, DieRef, Units};
use super::functions::{attr_through_origin, scope_chain};
use super::types::Types;
use super::{FrameContext, ObjectFile, R};
use crate::value::Value;

/// How a value travels in a System V call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueClass {
    Void,
    /// Integers, characters, bool and enums: a general register.
    Integer {
        size: u8,
        signed: bool,
    },
    /// Pointers and references: a general register.
    Pointer,
    /// `float` (4), `double` (8): an xmm register; `long double` (16): memory/x87.
    Float {
        size: u8,
    },
    /// Structures, unions, arrays and anything else passed by value.
    Aggregate {
        size: u64,
    },
}

/// One parameter or return type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallType {
    pub class: ValueClass,
    /// As `whatis` would print it.
    pub name: String,
}

/// What a call needs to know about a function.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prototype {
    pub return_type: CallType,
    pub parameters: Vec<CallType>,
    /// Declared with `...`.
    pub variadic: bool,
    /// Declared with a prototype (DW_AT_prototyped): arguments convert to
    /// the parameter types. Otherwise C's default promotions apply.
    pub prototyped: bool,
}

type Die<'a> = gimli::DebuggingInformationEntry<'a, 'a, R>;

impl ObjectFile {
    /// The prototype of the function whose code starts at `function_low_pc`
    /// (a file address), when DWARF describes it.
    pub fn prototype(&self, function_low_pc: u64) -> Option<Prototype> {
        let data = self.dwarf.as_ref()?;
        let cu = data
            .cu_for_address(function_low_pc)
            .filter(|cu| has_prototypes(cu))?;
        let function = subprogram_at(&data.dwarf, &cu, function_low_pc)?;
        let types = types_of(data.units(), &cu, None, &|_| None);
        Some(prototype_of(&types, &cu, function))
    }

    /// The prototype of an external function `name` as this object's DWARF
    /// declares it (a library function the program calls: gcc describes
    /// the declarations it saw for the call sites). Scans the units once
    /// per lookup; only used for functions without DWARF of their own.
    pub fn declared_prototype(&self, name: &str) -> Option<Prototype> {
        let data = self.dwarf.as_ref()?;
        for offset in data.all_cu_offsets() {
            let Some(cu) = data.cu_at(offset) else {
                continue;
            };
            let Some(declaration) = find_declaration(&data.dwarf, &cu, name) else {
                continue;
            };
            let types = types_of(data.units(), &cu, None, &|_| None);
            return Some(prototype_of(&types, &cu, declaration));
        }
        None
    }

    /// Decodes `bytes` (the returned register's low bytes) as the return
    /// type of the function at `function_low_pc`. `frame` reads memory for
    /// what pointers point to (a `char *` result shows its string).
    pub fn decode_return(
        &self,
        function_low_pc: u64,
        bytes: &[u8],
        frame: &dyn FrameContext,
    ) -> Option<Value> {
        let data = self.dwarf.as_ref()?;
        let cu = data
            .cu_for_address(function_low_pc)
            .filter(|cu| has_prototypes(cu))?;
        let function = subprogram_at(&data.dwarf, &cu, function_low_pc)?;
        let return_type = match attr_through_origin(&cu.unit, function, gimli::DW_AT_type)? {
            (_, AttributeValue::UnitRef(o)) => o,
            _ => return None,
        };
        let bias = frame.load_bias();
        let symbolizer = |runtime: u64| self.symbolic_name(runtime.wrapping_sub(bias));
        let types = types_of(data.units(), &cu, Some(frame), &symbolizer);
        let return_type = DieRef {
            unit: cu.offset,
            offset: return_type,
        };
        let size = (types.size(return_type)? as usize).min(bytes.len());
        Some(types.decode(Some(return_type), &bytes[..size], 0))
    }
}

/// Whether a unit's functions have types: not the ones an assembler
/// describes (glibc's system call stubs), which have none.
fn has_prototypes(cu: &CuData) -> bool {
    cu.language != Some(gimli::DW_LANG_Mips_Assembler)
}

fn types_of<'a>(
    units: &'a Units,
    cu: &'a CuData,
    frame: Option<&'a dyn FrameContext>,
    symbolizer: &'a dyn Fn(u64) -> Option<String>,
) -> Types<'a> {
    Types {
        units,
        language: cu.language,
        frame,
        symbolizer,
    }
}

/// A top-level `DW_TAG_subprogram` declaration named `name` in a unit.
fn find_declaration(dwarf: &gimli::Dwarf<R>, cu: &CuData, name: &str) -> Option<UnitOffset> {
    let mut tree = cu.unit.entries_tree(None).ok()?;
    let root = tree.root().ok()?;
    let mut children = root.children();
    while let Ok(Some(child)) = children.next() {
        let entry = child.entry();
        if entry.tag() != gimli::DW_TAG_subprogram {
            continue;
        }
        let declared = matches!(
            entry.attr_value(gimli::DW_AT_declaration),
            Ok(Some(AttributeValue::Flag(true)))
        );
        if declared
            && super::dwarf::die_string(dwarf, &cu.unit, entry, gimli::DW_AT_name).as_deref()
                == Some(name)
        {
            return Some(entry.offset());
        }
    }
    None
}

fn subprogram_at(dwarf: &gimli::Dwarf<R>, cu: &CuData, address: u64) -> Option<UnitOffset> {
    scope_chain(dwarf, cu, address)
        .iter()
        .find(|s| s.tag == gimli::DW_TAG_subprogram)
        .map(|s| s.offset)
}

fn prototype_of(types: &Types, cu: &CuData, function: UnitOffset) -> Prototype {
    let unit = &cu.unit;
    let call_type = |types: &Types, _: &gimli::Unit<R>, offset| {
        call_type(
            types,
            DieRef {
                unit: cu.offset,
                offset,
            },
        )
    };
    let return_type = match attr_through_origin(unit, function, gimli::DW_AT_type) {
        Some((_, AttributeValue::UnitRef(o))) => call_type(types, unit, o),
        _ => CallType {
            class: ValueClass::Void,
            name: "void".into(),
        },
    };
    let prototyped = matches!(
        attr_through_origin(unit, function, gimli::DW_AT_prototyped),
        Some((_, AttributeValue::Flag(true)))
    );
    // The parameters are children of the abstract instance when this is an
    // out-of-line copy of an inline function; follow the origin for them.
    let declaration = origin_of(unit, function).unwrap_or(function);
    let mut parameters = Vec::new();
    let mut variadic = false;
    if let Ok(mut tree) = unit.entries_tree(Some(declaration)) {
        if let Ok(root) = tree.root() {
            let mut children = root.children();
            while let Ok(Some(child)) = children.next() {
                let entry = child.entry();
                match entry.tag() {
                    gimli::DW_TAG_formal_parameter => {
                        let parameter = parameter_type(entry)
                            .map(|t| call_type(types, unit, t))
                            .unwrap_or(CallType {
                                class: ValueClass::Integer {
                                    size: 4,
                                    signed: true,
                                },
                                name: "int".into(),
                            });
                        parameters.push(parameter);
                    }
                    gimli::DW_TAG_unspecified_parameters => variadic = true,
                    _ => {}
                }
            }
        }
    }
    Prototype {
        return_type,
        parameters,
        variadic,
        prototyped,
    }
}

/// The DIE a concrete function instance was made from, followed as far
/// as it goes.
fn origin_of(unit: &gimli::Unit<R>, mut offset: UnitOffset) -> Option<UnitOffset> {
    let mut found = None;
    for _ in 0..8 {
        let entry = unit.entry(offset).ok()?;
        let next = [gimli::DW_AT_abstract_origin, gimli::DW_AT_specification]
            .iter()
            .find_map(|&at| match entry.attr_value(at) {
                Ok(Some(AttributeValue::UnitRef(o))) => Some(o),
                _ => None,
            });
        match next {
            Some(o) => {
                found = Some(o);
                offset = o;
            }
            None => break,
        }
    }
    found
}

fn parameter_type(entry: &Die) -> Option<UnitOffset> {
    match entry.attr_value(gimli::DW_AT_type).ok()?? {
        AttributeValue::UnitRef(o) => Some(o),
        _ => None,
    }
}

fn call_type(types: &Types, offset: DieRef) -> CallType {
    let name = types.name(Some(offset));
    let size = types.size(offset).unwrap_or(0);
    let stripped = types.strip(offset);
    let entry = stripped.and_then(|o| types.entry(o));
    let class = match entry.as_ref().map(|e| e.tag()) {
        Some(gimli::DW_TAG_base_type) => {
            let encoding = match entry.as_ref().map(|e| e.attr_value(gimli::DW_AT_encoding)) {
                Some(Ok(Some(AttributeValue::Encoding(e)))) => e,
                _ => gimli::DW_ATE_signed,
            };
            base_class(encoding, size)
        }
        Some(
            gimli::DW_TAG_pointer_type
            | gimli::DW_TAG_reference_type
            | gimli::DW_TAG_rvalue_reference_type
            | gimli::DW_TAG_ptr_to_member_type,
        ) => ValueClass::Pointer,
        Some(gimli::DW_TAG_enumeration_type) => ValueClass::Integer {
            size: size.clamp(1, 8) as u8,
            signed: false,
        },
        // A type with no DIE behind it (DW_AT_type of `void *` stripped to
        // nothing) cannot be passed; treat it as an aggregate of its size.
        _ => ValueClass::Aggregate { size },
    };
    CallType { class, name }
}

fn base_class(encoding: gimli::DwAte, size: u64) -> ValueClass {
    match encoding {
        gimli::DW_ATE_float if matches!(size, 4 | 8 | 16) => ValueClass::Float { size: size as u8 },
        gimli::DW_ATE_float | gimli::DW_ATE_complex_float => ValueClass::Aggregate { size },
        _ if size > 8 => ValueClass::Aggregate { size },
        gimli::DW_ATE_signed | gimli::DW_ATE_signed_char => ValueClass::Integer {
            size: size.max(1) as u8,
            signed: true,
        },
        _ => ValueClass::Integer {
            size: size.max(1) as u8,
            signed: false,
        },
    }
}
