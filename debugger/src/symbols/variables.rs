//! Variables and parameters: scope lookup and reading values.

use gimli::{AttributeValue, DebugInfoOffset, UnitOffset};

use super::dwarf::{CuData, DieRef, DwarfData};
use super::eval::{expression_at, read_place, EvalContext, Place};
use super::functions::{attr_through_origin_anywhere, scope_chain, Scope};
use super::types::{find_named_type, TypeRef, Types};
use super::{FrameContext, ObjectFile, R};
use crate::error::{Error, Result};
use crate::value::{SyntheticTarget, Typed, Value};

mod storage;

/// How many synthetic pointers deep targets are read (`ppp` -> `pp` -> `p`).
const SYNTHETIC_DEPTH: usize = 3;

/// A DWARF variable or parameter with its type and location.
#[derive(Debug, Clone)]
pub struct Variable {
    name: String,
    parameter: bool,
    pub(crate) cu: DebugInfoOffset,
    die: UnitOffset,
    /// The variable's type, in its unit or another.
    type_offset: Option<DieRef>,
    pub(crate) location: Option<AttributeValue<R>>,
    const_value: Option<AttributeValue<R>>,
    /// DW_AT_frame_base of the enclosing subprogram (locals only).
    pub(crate) frame_base: Option<AttributeValue<R>>,
    /// A label whose code is gone: listed among locals, no variable.
    lost_label: bool,
}

impl Variable {
    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn is_parameter(&self) -> bool {
        self.parameter
    }

    /// Whether this is a file-level (static or global) variable.
    pub fn is_global(&self) -> bool {
        self.frame_base.is_none()
    }

    /// Whether the variable lives at a fixed address (`DW_OP_addr`), as
    /// globals and static locals do.
    pub fn is_static_storage(&self) -> bool {
        match &self.location {
            Some(AttributeValue::Exprloc(e)) => e.0.slice().first() == Some(&0x03),
            _ => false,
        }
    }

    /// The variable's DIE, as (CU offset, unit offset) in .debug_info.
    pub fn die_offset(&self) -> (usize, usize) {
        (self.cu.0, self.die.0)
    }
}

/// A DIE anywhere in .debug_info: its unit and its offset there.
type UnitDie = (std::sync::Arc<CuData>, UnitOffset);

/// Where a reference of a DIE of `cu` points: in `cu`, or by section
/// offset (DW_FORM_ref_addr) in another unit, as rustc's inlined generics
/// refer to their abstract instances.
fn follow_ref(
    data: &DwarfData,
    cu: &std::sync::Arc<CuData>,
    value: AttributeValue<R>,
) -> Option<UnitDie> {
    match value {
        AttributeValue::UnitRef(o) => Some((cu.clone(), o)),
        AttributeValue::DebugInfoRef(o) => match o.to_unit_offset(&cu.unit.header) {
            Some(local) => Some((cu.clone(), local)),
            None => {
                let other = data.unit_containing(o)?;
                let local = o.to_unit_offset(&other.unit.header)?;
                Some((other, local))
            }
        },
        _ => None,
    }
}

/// A DIE's attribute, looked up through DW_AT_abstract_origin and
/// DW_AT_specification, in whatever unit they lead to; with the unit it
/// was found in.
fn attr_across_units(
    data: &DwarfData,
    cu: &std::sync::Arc<CuData>,
    offset: UnitOffset,
    name: gimli::DwAt,
) -> Option<(std::sync::Arc<CuData>, AttributeValue<R>)> {
    let (mut cu, mut offset) = (cu.clone(), offset);
    for _ in 0..8 {
        let entry = cu.unit.entry(offset).ok()?;
        if let Some(value) = entry.attr_value(name).ok()? {
            return Some((cu, value));
        }
        let next = [gimli::DW_AT_abstract_origin, gimli::DW_AT_specification]
            .iter()
            .find_map(|&at| entry.attr_value(at).ok().flatten())?;
        (cu, offset) = follow_ref(data, &cu, next)?;
    }
    None
}

/// Build a Variable from a DW_TAG_variable / DW_TAG_formal_parameter DIE,
/// taking name and type from its abstract origin when it has one.
fn make_variable(
    data: &DwarfData,
    cu: &std::sync::Arc<CuData>,
    offset: UnitOffset,
    frame_base: Option<AttributeValue<R>>,
) -> Option<Variable> {
    let unit = &cu.unit;
    let entry = unit.entry(offset).ok()?;
    let (name_cu, name_attr) = attr_across_units(data, cu, offset, gimli::DW_AT_name)?;
    let name = data
        .dwarf
        .attr_string(&name_cu.unit, name_attr)
        .ok()?
        .to_string_lossy()
        .into_owned();
    let type_ref = attr_across_units(data, cu, offset, gimli::DW_AT_type)
        .and_then(|(found_in, value)| follow_ref(data, &found_in, value));
    let type_offset = type_ref.map(|(type_cu, offset)| DieRef {
        unit: type_cu.offset,
        offset,
    });
    Some(Variable {
        name,
        parameter: entry.tag() == gimli::DW_TAG_formal_parameter,
        cu: cu.offset,
        die: offset,
        type_offset,
        location: entry.attr_value(gimli::DW_AT_location).ok().flatten(),
        const_value: attr_across_units(data, cu, offset, gimli::DW_AT_const_value).map(|(_, v)| v),
        frame_base,
        lost_label: entry.tag() == gimli::DW_TAG_label,
    })
}

/// Direct children of a DIE with one of the given tags.
pub(crate) fn children_with_tag(
    unit: &gimli::Unit<R>,
    parent: UnitOffset,
    tags: &[gimli::DwTag],
) -> Vec<UnitOffset> {
    let mut out = Vec::new();
    let Ok(mut tree) = unit.entries_tree(Some(parent)) else {
        return out;
    };
    let Ok(root) = tree.root() else { return out };
    let mut children = root.children();
    while let Ok(Some(child)) = children.next() {
        if tags.contains(&child.entry().tag()) {
            out.push(child.entry().offset());
        }
    }
    out
}

/// The DIE a DW_AT_abstract_origin of `offset` refers to, in this unit
/// or another.
fn abstract_origin(
    data: &DwarfData,
    cu: &std::sync::Arc<CuData>,
    offset: UnitOffset,
) -> Option<UnitDie> {
    let value = cu
        .unit
        .entry(offset)
        .ok()?
        .attr_value(gimli::DW_AT_abstract_origin)
        .ok()??;
    follow_ref(data, cu, value)
}

/// Whether a DIE says where its code is (low_pc or ranges).
fn has_code(unit: &gimli::Unit<R>, offset: UnitOffset) -> bool {
    unit.entry(offset).is_ok_and(|entry| {
        [gimli::DW_AT_low_pc, gimli::DW_AT_ranges]
            .iter()
            .any(|at| matches!(entry.attr_value(*at), Ok(Some(_))))
    })
}

/// Whether two references name the same DIE.
fn same_die(a: &UnitDie, b: &UnitDie) -> bool {
    a.0.offset == b.0.offset && a.1 == b.1
}

/// The DIEs with `tag` that gdb puts in the block of `scope`, in its
/// order: the scope's own, those of a lexical block without code among
/// them (gdb takes its children as the parent's), then those of the
/// abstract origin that the concrete DIE does not repeat (a variable
/// optimized away entirely is still listed, optimized out). The abstract
/// origin may be in another unit.
fn block_members(
    data: &DwarfData,
    cu: &std::sync::Arc<CuData>,
    scope: UnitOffset,
    tag: gimli::DwTag,
) -> Vec<UnitDie> {
    let mut members = Vec::new();
    let mut repeated = Vec::new();
    let kinds = [tag, gimli::DW_TAG_lexical_block, gimli::DW_TAG_label];
    for child in children_with_tag(&cu.unit, scope, &kinds) {
        repeated.extend(abstract_origin(data, cu, child));
        collect_member(data, cu, child, tag, &mut members);
    }
    if let Some((origin_cu, origin)) = abstract_origin(data, cu, scope) {
        // Children that refer to the origin are repeated whatever their tag.
        for child in children_with_tag(&cu.unit, scope, &[gimli::DW_TAG_inlined_subroutine]) {
            repeated.extend(abstract_origin(data, cu, child));
        }
        for child in children_with_tag(&origin_cu.unit, origin, &kinds) {
            let child_ref = (origin_cu.clone(), child);
            if !repeated.iter().any(|r| same_die(r, &child_ref)) {
                collect_member(data, &origin_cu, child, tag, &mut members);
            }
        }
    }
    members
}

/// A child of a block: a member itself, or a lexical block without code
/// whose members are the block's.
fn collect_member(
    data: &DwarfData,
    cu: &std::sync::Arc<CuData>,
    child: UnitOffset,
    tag: gimli::DwTag,
    members: &mut Vec<UnitDie>,
) {
    let Ok(entry) = cu.unit.entry(child) else {
        return;
    };
    // A label whose code is gone is, for gdb, a local optimized out.
    let lost_label = entry.tag() == gimli::DW_TAG_label
        && tag == gimli::DW_TAG_variable
        && !has_code(&cu.unit, child);
    if entry.tag() == tag || lost_label {
        members.push((cu.clone(), child));
    } else if entry.tag() == gimli::DW_TAG_lexical_block && !has_code(&cu.unit, child) {
        members.extend(block_members(data, cu, child, tag));
    }
}

/// gdb keeps a lexical block's symbols in a hash table (a function's in a
/// list) and lists them in its order: bucket by bucket, in the order they
/// were added within one. Listing them so keeps `info locals` as gdb's.
fn in_gdb_hash_order(variables: &mut [Variable]) {
    let count = variables.len();
    variables.sort_by_key(|v| gdb_bucket(&v.name, count));
}

/// The bucket of gdb's hash table of `count` symbols that `name` is in.
fn gdb_bucket(name: &str, count: usize) -> u32 {
    let buckets = u32::try_from(count / 5 + 1).unwrap_or(u32::MAX);
    gdb_name_hash(name) % buckets
}

/// One step of gdb's symbol hash (SYMBOL_HASH_NEXT).
fn hash_next(hash: u32, c: u8) -> u32 {
    hash.wrapping_mul(67)
        .wrapping_add(u32::from(c.to_ascii_lowercase()))
        .wrapping_sub(113)
}

/// gdb's hash of a whole name, spaces skipped, up to a parenthesis.
fn gdb_whole_name_hash(name: &str) -> u32 {
    name.bytes()
        .take_while(|c| *c != b'(')
        .filter(|c| *c != b' ')
        .fold(0, hash_next)
}

/// gdb's default hash of a symbol's search name (default_search_name_hash),
/// which stops at Ada's encoding marks.
fn gdb_name_hash(name: &str) -> u32 {
    let bytes = name.as_bytes();
    let mut at = 0;
    if bytes.first() == Some(&b'_') {
        if !name.starts_with("_ada_") {
            return gdb_whole_name_hash(name);
        }
        at = 5;
    }
    let mut hash = 0u32;
    while let Some(&c) = bytes.get(at) {
        match c {
            b'$' | b'.' | b'X' if at == 0 => return gdb_whole_name_hash(name),
            b'$' | b'.' | b'X' => return hash,
            b' ' | b'(' => return gdb_whole_name_hash(name),
            b'_' if at != 0 && bytes.get(at + 1) == Some(&b'_') => {
                let next = bytes.get(at + 2).copied().unwrap_or(0);
                if !next.is_ascii_lowercase() && next != b'O' {
                    return hash;
                }
                hash = 0;
                at += 2;
                continue;
            }
            b'T' if &bytes[at..] == b"TKB" => return hash,
            _ => {}
        }
        hash = hash_next(hash, c);
        at += 1;
    }
    hash
}

/// Variables at file scope: children of the CU and of namespaces (not of
/// functions, whose variables are locals).
fn file_scope_variables(node: gimli::EntriesTreeNode<R>, out: &mut Vec<UnitOffset>) {
    let mut children = node.children();
    while let Ok(Some(child)) = children.next() {
        match child.entry().tag() {
            gimli::DW_TAG_variable => out.push(child.entry().offset()),
            gimli::DW_TAG_namespace | gimli::DW_TAG_module => file_scope_variables(child, out),
            _ => {}
        }
    }
}

/// The CU at an address, its scope chain, and the real function's frame base.
type ScopesAt = (
    std::sync::Arc<CuData>,
    Vec<Scope>,
    Option<AttributeValue<R>>,
);

fn is_function_scope(scope: &Scope) -> bool {
    matches!(
        scope.tag,
        gimli::DW_TAG_subprogram | gimli::DW_TAG_inlined_subroutine
    )
}

impl ObjectFile {
    /// The CU at `addr`, its scope chain and the frame base of the real
    /// (outermost) function.
    fn scopes_at(&self, addr: u64) -> Option<ScopesAt> {
        let data = self.dwarf.as_ref()?;
        let cu = data.cu_for_address(addr)?;
        let chain = scope_chain(&data.dwarf, &cu, addr);
        let frame_base = chain
            .iter()
            .find(|s| s.tag == gimli::DW_TAG_subprogram)
            .and_then(|s| cu.unit.entry(s.offset).ok())
            .and_then(|e| e.attr_value(gimli::DW_AT_frame_base).ok().flatten());
        Some((cu, chain, frame_base))
    }

    /// The scope of the function `inline_depth` levels out at `addr` (0:
    /// the innermost, inlined or not), its unit and the real function's
    /// frame base.
    fn function_scope_at(
        &self,
        addr: u64,
        inline_depth: usize,
    ) -> Option<(
        std::sync::Arc<CuData>,
        UnitOffset,
        Option<AttributeValue<R>>,
    )> {
        let (cu, chain, frame_base) = self.scopes_at(addr)?;
        let function = chain
            .iter()
            .rev()
            .filter(|s| is_function_scope(s))
            .nth(inline_depth)?
            .offset;
        Some((cu, function, frame_base))
    }

    /// Parameters of a function active at `addr`: `inline_depth` 0 is the
    /// innermost (inlined or not), 1 the function it is inlined into, and
    /// so on, as `inline_frames_at` lists them.
    pub fn parameters_at(&self, addr: u64, inline_depth: usize) -> Vec<Variable> {
        let (Some(data), Some((cu, function, frame_base))) = (
            self.dwarf.as_ref(),
            self.function_scope_at(addr, inline_depth),
        ) else {
            return Vec::new();
        };
        block_members(data, &cu, function, gimli::DW_TAG_formal_parameter)
            .into_iter()
            .filter_map(|(member_cu, o)| make_variable(data, &member_cu, o, frame_base))
            .collect()
    }

    /// What gdb shows for the parameters of the function at `inline_depth`
    /// at `addr`: each parameter, unless the function's own block has a
    /// local of the same name, which gdb's lookup of the name finds first
    /// (inlined code keeps a parameter's value in such a local).
    pub fn shown_parameters_at(&self, addr: u64, inline_depth: usize) -> Vec<Variable> {
        let (Some(data), Some((cu, function, frame_base))) = (
            self.dwarf.as_ref(),
            self.function_scope_at(addr, inline_depth),
        ) else {
            return Vec::new();
        };
        let make = |(member_cu, o): UnitDie| make_variable(data, &member_cu, o, frame_base);
        let locals: Vec<Variable> = block_members(data, &cu, function, gimli::DW_TAG_variable)
            .into_iter()
            .filter_map(make)
            .filter(|v| !v.lost_label)
            .collect();
        block_members(data, &cu, function, gimli::DW_TAG_formal_parameter)
            .into_iter()
            .filter_map(make)
            .map(
                |param| match locals.iter().find(|local| local.name == param.name) {
                    Some(local) => Variable {
                        parameter: true,
                        ..local.clone()
                    },
                    None => param,
                },
            )
            .collect()
    }

    /// Locals in scope at `addr`, innermost block first, up to the
    /// innermost function.
    pub fn locals_at(&self, addr: u64) -> Vec<Variable> {
        self.frame_locals_at(addr, 0)
    }

    /// Locals in scope at `addr` in the function at `inline_depth` (as
    /// `parameters_at` counts), innermost block first: the blocks between
    /// that function and the call inlined into it.
    pub fn frame_locals_at(&self, addr: u64, inline_depth: usize) -> Vec<Variable> {
        let (Some(data), Some((cu, chain, frame_base))) =
            (self.dwarf.as_ref(), self.scopes_at(addr))
        else {
            return Vec::new();
        };
        let mut out = Vec::new();
        let mut functions_passed = 0;
        for scope in chain.iter().rev() {
            if functions_passed == inline_depth {
                let mut block: Vec<Variable> =
                    block_members(data, &cu, scope.offset, gimli::DW_TAG_variable)
                        .into_iter()
                        .filter_map(|(member_cu, o)| make_variable(data, &member_cu, o, frame_base))
                        .collect();
                if !is_function_scope(scope) {
                    in_gdb_hash_order(&mut block);
                }
                out.extend(block);
            }
            if is_function_scope(scope) {
                if functions_passed == inline_depth {
                    break;
                }
                functions_passed += 1;
            }
        }
        out
    }

    /// A local or parameter named `name` of the function at `inline_depth`
    /// at `addr`: locals first (innermost block first), as C scopes them.
    pub fn frame_variable(&self, addr: u64, inline_depth: usize, name: &str) -> Option<Variable> {
        self.frame_locals_at(addr, inline_depth)
            .into_iter()
            .chain(self.parameters_at(addr, inline_depth))
            .find(|v| v.name == name && !v.lost_label)
    }

    /// A variable by name: local or parameter at `addr`, then the statics
    /// of that CU, then globals anywhere.
    pub fn lookup_variable(&self, addr: Option<u64>, name: &str) -> Option<Variable> {
        let data = self.dwarf.as_ref()?;
        if let Some(addr) = addr {
            if let Some(v) = self
                .locals_at(addr)
                .into_iter()
                .chain(self.parameters_at(addr, 0))
                .find(|v| v.name == name && !v.lost_label)
            {
                return Some(v);
            }
            let home_cu = data.cu_for_address(addr);
            if let Some(v) = home_cu.as_ref().and_then(|cu| self.global_in_cu(cu, name)) {
                return Some(v);
            }
        }
        // The home CU has no such name: searching every CU finds what
        // searching the others would.
        let mut known = self
            .globals_by_name
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        known
            .entry(name.to_string())
            .or_insert_with(|| self.global_in_any_cu(name))
            .clone()
    }

    /// A file-scope variable of any CU: a definition, else a declaration.
    fn global_in_any_cu(&self, name: &str) -> Option<Variable> {
        let data = self.dwarf.as_ref()?;
        let mut declaration = None;
        for offset in data.all_cu_offsets() {
            let Some(cu) = data.cu_at(offset) else {
                continue;
            };
            if let Some(v) = self.global_in_cu(&cu, name) {
                if v.location.is_some() || v.const_value.is_some() {
                    return Some(v);
                }
                declaration.get_or_insert(v);
            }
        }
        declaration
    }

    /// `'FILE'::name`: a global or file static of the CU compiled from
    /// FILE (matched by its name or its last path components).
    pub fn file_variable(&self, file: &str, name: &str) -> Option<Variable> {
        let data = self.dwarf.as_ref()?;
        data.all_cu_offsets().into_iter().find_map(|offset| {
            let cu = data.cu_at(offset)?;
            let unit_name = cu.unit.name.as_ref()?.to_string_lossy().into_owned();
            let matches = unit_name == file || unit_name.ends_with(&format!("/{file}"));
            if matches {
                self.global_in_cu(&cu, name)
            } else {
                None
            }
        })
    }

    /// `FUNC::name` without a frame of FUNC: a static local of the
    /// function whose entry is `low_pc` (locals on the stack need a frame).
    pub fn static_local(&self, low_pc: u64, name: &str) -> Option<Variable> {
        self.locals_at(low_pc)
            .into_iter()
            .find(|v| v.name == name && v.is_static_storage())
    }

    /// A function named in an expression: its entry (file address) and,
    /// when DWARF describes it, its type. The type is the subprogram DIE
    /// itself (or the declaration it completes), which reads as a function
    /// type: `int (int, double)`.
    pub fn function_value(&self, name: &str) -> Option<(u64, Option<TypeRef>)> {
        let found = self.find_functions(name);
        let entry = found
            .iter()
            .find(|f| {
                self.symbol_at(f.low_pc)
                    .is_some_and(|s| s.is_function && s.address == f.low_pc)
            })
            .or(found.first())?
            .low_pc;
        let ty = self.subprogram_type(entry);
        Some((entry, ty))
    }

    fn subprogram_type(&self, low_pc: u64) -> Option<TypeRef> {
        let data = self.dwarf.as_ref()?;
        let cu = data.cu_for_address(low_pc)?;
        let chain = scope_chain(&data.dwarf, &cu, low_pc);
        let mut die = chain
            .iter()
            .find(|s| s.tag == gimli::DW_TAG_subprogram)?
            .offset;
        // The parameters' and result's types are on the abstract instance or
        // the in-class declaration when the concrete DIE refers to one.
        for _ in 0..4 {
            let entry = cu.unit.entry(die).ok()?;
            let origin = [gimli::DW_AT_abstract_origin, gimli::DW_AT_specification]
                .into_iter()
                .find_map(|at| match entry.attr_value(at) {
                    Ok(Some(AttributeValue::UnitRef(o))) => Some(o),
                    _ => None,
                });
            match origin {
                Some(o) => die = o,
                None => break,
            }
        }
        let die = DieRef {
            unit: cu.offset,
            offset: die,
        };
        Some(TypeRef::new(data.units().clone(), &cu, Some(die)))
    }

    /// The file address of a file-scope variable DWARF only declares, from a
    /// data symbol of the same name.
    fn declared_global_address(&self, var: &Variable) -> Option<u64> {
        if !var.is_global() {
            return None;
        }
        self.lookup_symbol(&var.name)
            .into_iter()
            .find(|s| !s.is_function && s.address != 0)
            .map(|s| s.address)
    }

    /// A file-level variable of one CU (also inside namespaces), preferring
    /// the definition over a declaration.
    fn global_in_cu(&self, cu: &CuData, name: &str) -> Option<Variable> {
        let data = self.dwarf.as_ref()?;
        let mut candidates = Vec::new();
        // `ns::name` (C++ namespaces, Rust modules): matched by the path.
        let qualified = name.contains("::");
        if qualified {
            candidates = super::lang::variables_named(&data.dwarf, &cu.unit, name);
        } else {
            let mut tree = cu.unit.entries_tree(None).ok()?;
            file_scope_variables(tree.root().ok()?, &mut candidates);
        }
        let arc_cu = data.cu_at(cu.offset)?;
        let mut declaration = None;
        for offset in candidates {
            let Some(v) = make_variable(data, &arc_cu, offset, None) else {
                continue;
            };
            if !qualified && v.name != name {
                continue;
            }
            if v.location.is_some() || v.const_value.is_some() {
                return Some(v);
            }
            declaration.get_or_insert(v);
        }
        declaration
    }

    /// Where this object's `__thread` variables start in the frame's
    /// thread. For the executable (TLS module 1) glibc's x86-64 layout
    /// (variant II) puts its block right below the thread pointer,
    /// `fs_base - round_up(p_memsz, p_align)`; a shared library's block is
    /// found by the frame (through the dynamic linker's module ids).
    /// `Err` says why it is not known, as the value shows it.
    fn tls_block(&self, frame: &dyn FrameContext) -> std::result::Result<u64, String> {
        if !self.is_executable() {
            return frame.library_tls_block();
        }
        let unknown = || super::TLS_UNKNOWN.to_string();
        let tls = self.tls_segment().ok_or_else(unknown)?;
        let align = tls.align.max(1);
        // glibc aligns the block's end so that p_vaddr keeps its alignment.
        let first_byte = tls.vaddr.wrapping_neg() & (align - 1);
        let offset = (tls.memsz + first_byte).div_ceil(align) * align;
        let thread_pointer = frame.register(FS_BASE).ok_or_else(unknown)?;
        Ok(thread_pointer.wrapping_sub(offset))
    }

    /// A named type (`struct point`, `mytypedef`, `unsigned int`) of any
    /// unit, for casts and `sizeof` (what `EvalContext::lookup_type`
    /// answers).
    pub fn lookup_type(&self, name: &str) -> Option<TypeRef> {
        let data = self.dwarf.as_ref()?;
        data.all_cu_offsets().into_iter().find_map(|offset| {
            let cu = data.cu_at(offset)?;
            let offset = find_named_type(&data.dwarf, &cu.unit, name)?;
            let die = DieRef {
                unit: cu.offset,
                offset,
            };
            Some(TypeRef::new(data.units().clone(), &cu, Some(die)))
        })
    }

    pub(crate) fn types_for<'a>(
        &'a self,
        cu: &'a CuData,
        frame: Option<&'a dyn FrameContext>,
        symbolizer: &'a dyn Fn(u64) -> Option<String>,
    ) -> Option<Types<'a>> {
        let data = self.dwarf.as_ref()?;
        Some(Types {
            units: data.units(),
            language: cu.language,
            frame,
            symbolizer,
        })
    }

    /// The gdb-style name of a variable's type (for `whatis`).
    pub fn variable_type_name(&self, var: &Variable) -> String {
        let Some(cu) = self.dwarf.as_ref().and_then(|d| d.cu_at(var.cu)) else {
            return String::new();
        };
        let none = |_| None;
        self.types_for(&cu, None, &none)
            .map(|t| t.name(var.type_offset))
            .unwrap_or_default()
    }

    /// A variable's type, for `ptype` and `whatis` without a process.
    pub fn variable_type(&self, var: &Variable) -> Option<TypeRef> {
        let data = self.dwarf.as_ref()?;
        let cu = data.cu_at(var.cu)?;
        Some(TypeRef::new(data.units().clone(), &cu, var.type_offset))
    }

    /// Read a variable's value in a stopped frame.
    pub fn read_variable(&self, var: &Variable, frame: &dyn FrameContext) -> Result<Value> {
        self.read_variable_at_depth(var, frame, 0)
    }

    /// [`ObjectFile::read_variable`], `depth` synthetic pointers down.
    fn read_variable_at_depth(
        &self,
        var: &Variable,
        frame: &dyn FrameContext,
        depth: usize,
    ) -> Result<Value> {
        let data = self
            .dwarf
            .as_ref()
            .ok_or(Error::NoSuchSymbol(var.name.clone()))?;
        let cu = data
            .cu_at(var.cu)
            .ok_or_else(|| Error::Dwarf("variable's unit is gone".into()))?;
        let bias = frame.load_bias();
        let symbolizer = |runtime: u64| self.symbolic_name(runtime.wrapping_sub(bias));
        let types = self
            .types_for(&cu, Some(frame), &symbolizer)
            .ok_or_else(|| Error::Dwarf("no types".into()))?;
        let size = var
            .type_offset
            .and_then(|t| types.size(t))
            .unwrap_or(8)
            .min(1 << 20) as usize;
        let context = EvalContext {
            dwarf: &data.dwarf,
            unit: &cu.unit,
            frame,
            frame_base: var.frame_base.as_ref(),
        };
        // No location at this pc (rather than one that evaluates to
        // nothing, as an unresolved entry value does).
        let no_location = match &var.location {
            Some(location) => {
                expression_at(&data.dwarf, &cu.unit, location, context.pc())?.is_none()
            }
            None => var.const_value.is_none(),
        };
        let place = match (&var.location, &var.const_value) {
            (Some(location), _) => match context.place_of(location)? {
                Place::ThreadLocal(offset) => match self.tls_block(frame) {
                    Ok(block) => Place::Memory(block.wrapping_add(offset)),
                    Err(why) if why == super::TLS_UNKNOWN => Place::ThreadLocal(offset),
                    Err(why) => Place::Unavailable(why),
                },
                place => place,
            },
            (None, Some(constant)) => Place::Bytes(constant_bytes(constant, size)),
            // Only declared in DWARF (libc's `environ`, defined under
            // another name): the ELF symbol says where it is, as gdb finds it.
            (None, None) => match self.declared_global_address(var) {
                Some(file_address) => Place::Memory(file_address.wrapping_add(frame.load_bias())),
                None => Place::OptimizedOut,
            },
        };
        // A variable with no location here still has its type: `p.x` of
        // an optimized-out struct is `<optimized out>`, `sizeof` works.
        let place = match place {
            // (A value of no size, a closure capturing nothing say, would
            // read as complete: gdb has it optimized out.)
            Place::OptimizedOut if no_location && var.type_offset.is_some() && size > 0 => {
                Place::Pieces {
                    bytes: vec![0; size],
                    known: vec![0; size],
                }
            }
            place => place,
        };
        let address = match place {
            Place::Memory(addr) => Some(addr),
            _ => None,
        };
        let register = match place {
            Place::Register(regno) => Some(regno),
            _ => None,
        };
        if let Place::ImplicitPointer { die, offset } = place {
            let target = die
                .to_unit_offset(&cu.unit.header)
                .filter(|_| depth < SYNTHETIC_DEPTH)
                .and_then(|o| make_variable(data, &cu, o, var.frame_base));
            let object = match target {
                Some(target) => self.read_variable_at_depth(&target, frame, depth + 1)?,
                None => Value::Unavailable("synthetic pointer target".into()),
            };
            let ty = TypeRef::new(data.units().clone(), &cu, var.type_offset);
            return Ok(Value::Typed(Box::new(Typed {
                value: Value::Unavailable("synthetic pointer".into()),
                absent_type_name: Some(ty.name()),
                ty,
                bytes: vec![0; size],
                known: None,
                address: None,
                register: None,
                synthetic: Some(Box::new(SyntheticTarget { object, offset })),
            })));
        }
        match read_place(&place, size, frame)? {
            Ok(contents) => {
                // Nothing of it is known: the whole value is optimized out
                // (a Rust enum would otherwise read its tag from zeros).
                let nothing_known = contents
                    .known
                    .as_ref()
                    .is_some_and(|known| known.iter().all(|k| *k == 0));
                let value = if nothing_known {
                    Value::OptimizedOut
                } else {
                    types.decode_known(
                        var.type_offset,
                        &contents.bytes,
                        contents.known.as_deref(),
                        0,
                    )
                };
                let ty = TypeRef::new(data.units().clone(), &cu, var.type_offset);
                Ok(Value::Typed(Box::new(Typed {
                    absent_type_name: Typed::absent_name(&value, &ty),
                    value,
                    ty,
                    bytes: contents.bytes,
                    known: contents.known,
                    address,
                    register,
                    synthetic: None,
                })))
            }
            Err(value) => Ok(value),
        }
    }

    /// Decode a function's return value from rax / xmm0 (for `finish`).
    pub fn return_value(&self, function_low_pc: u64, rax: u64, xmm0_low: u64) -> Option<Value> {
        let data = self.dwarf.as_ref()?;
        let cu = data.cu_for_address(function_low_pc)?;
        let chain = scope_chain(&data.dwarf, &cu, function_low_pc);
        let function = chain.iter().find(|s| s.tag == gimli::DW_TAG_subprogram)?;
        let function = DieRef {
            unit: cu.offset,
            offset: function.offset,
        };
        let units = data.units();
        let return_type = attr_through_origin_anywhere(units, function, gimli::DW_AT_type)
            .and_then(|(typed, value)| units.reference(typed.unit, value))?;
        let symbolizer = |addr: u64| self.symbolic_name(addr);
        let types = self.types_for(&cu, None, &symbolizer)?;
        let stripped = types.strip(return_type)?;
        let entry = types.entry(stripped)?;
        let size = types.size(return_type)? as usize;
        let is_float = entry.tag() == gimli::DW_TAG_base_type
            && matches!(
                entry.attr_value(gimli::DW_AT_encoding),
                Ok(Some(AttributeValue::Encoding(gimli::DW_ATE_float)))
            );
        let scalar = matches!(
            entry.tag(),
            gimli::DW_TAG_base_type
                | gimli::DW_TAG_pointer_type
                | gimli::DW_TAG_reference_type
                | gimli::DW_TAG_rvalue_reference_type
                | gimli::DW_TAG_enumeration_type
        );
        if !scalar || size > 8 {
            return None;
        }
        let register = if is_float { xmm0_low } else { rax };
        let bytes = &register.to_le_bytes()[..size];
        Some(types.decode(Some(return_type), bytes, 0))
    }
}

/// DWARF's number for the fs segment base on x86-64: the thread pointer.
pub const FS_BASE: u16 = 58;

/// The bytes of a DW_AT_const_value.
fn constant_bytes(value: &AttributeValue<R>, size: usize) -> Vec<u8> {
    let mut bytes = match value {
        AttributeValue::Block(b) => b.slice().to_vec(),
        AttributeValue::Sdata(v) => v.to_le_bytes().to_vec(),
        AttributeValue::Udata(v) => v.to_le_bytes().to_vec(),
        AttributeValue::Data1(v) => vec![*v],
        AttributeValue::Data2(v) => v.to_le_bytes().to_vec(),
        AttributeValue::Data4(v) => v.to_le_bytes().to_vec(),
        AttributeValue::Data8(v) => v.to_le_bytes().to_vec(),
        _ => Vec::new(),
    };
    bytes.resize(size, 0);
    bytes
}

#[cfg(test)]
mod tests {
    use super::{gdb_bucket, gdb_name_hash};

    /// Names in the order gdb's `info locals` lists a lexical block of them.
    fn gdb_order(names: &[&str]) -> Vec<String> {
        let mut sorted: Vec<&str> = names.to_vec();
        sorted.sort_by_key(|n| gdb_bucket(n, names.len()));
        sorted.into_iter().map(str::to_string).collect()
    }

    #[test]
    fn lexical_blocks_list_their_locals_in_gdbs_hash_order() {
        // As gdb 13 lists them in Lua 5.4's rehash (ltable.c) and in a
        // block of luaV_execute: bucket by bucket, declaration order within.
        assert_eq!(
            gdb_order(&["asize", "na", "nums", "i", "totaluse"]),
            ["i", "asize", "na", "nums", "totaluse"]
        );
        assert_eq!(
            gdb_order(&["ra", "slot", "rb", "rc", "key"]),
            ["slot", "rb", "key", "ra", "rc"]
        );
        // Fewer than five symbols share one bucket: declaration order.
        assert_eq!(gdb_order(&["n", "ci"]), ["n", "ci"]);
    }

    #[test]
    fn the_hash_stops_where_gdb_stops() {
        // Ada's encodings end the hashed part; a leading underscore hashes
        // the whole name.
        assert_eq!(gdb_name_hash("abc"), gdb_name_hash("abc.x"));
        assert_eq!(gdb_name_hash("abcX"), gdb_name_hash("abc"));
        assert_ne!(gdb_name_hash("_abc"), gdb_name_hash("abc"));
        assert_eq!(gdb_name_hash("ABC"), gdb_name_hash("abc"));
    }
}
