//! Values in the syntax of their source language, from DWARF alone.
//!
//! Rust: structs `r::P {x: 5, name: "five"}`, tuples `(1, 2.5)`, tuple
//! structs, enums (`DW_TAG_variant_part`, niche layouts included) as
//! `r::Shape::Square(4)` / `Some(7)`, `&str` and `String` as strings, slices
//! `[1, 2]`, `Vec<T>` as `vec![1, 2]`, qualified C-like enumerators.
//! C++: references as gdb shows them, `(int &) @0x7ffe...: 5`.
//!
//! [`render`] is called by the generic decoder for every type it decodes
//! and returns `None` to let the generic (C-style) rendering do its work.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use gimli::{AttributeValue, Section, UnitOffset};

use super::dwarf::DieRef;
use super::types::child_ref;

use super::types::Types;
use super::R;
use crate::value::Value;

type Die<'a> = gimli::DebuggingInformationEntry<'a, 'a, R>;

/// Longest string or element list shown (gdb's `print elements`).
const ELEMENT_LIMIT: usize = 200;
/// How deep nested aggregates are expanded before `{...}`.
const MAX_DEPTH: usize = 8;

/// The language-specific value of `bytes` as the type at `offset`
/// (typedefs already stripped), or `None` for the generic rendering.
pub(crate) fn render(
    types: &Types,
    offset: DieRef,
    entry: &Die,
    bytes: &[u8],
    depth: usize,
) -> Option<Value> {
    if types.language == Some(gimli::DW_LANG_Rust) {
        render_rust(types, offset, entry, bytes, depth)
    } else if is_cpp(types.language) {
        render_cpp(types, offset, entry, bytes)
    } else {
        None
    }
}

// ---------------------------------------------------------------------------
// DWARF helpers (the generic decoder keeps its own private)
// ---------------------------------------------------------------------------

fn member_offset(member: &Die) -> u64 {
    member
        .attr_value(gimli::DW_AT_data_member_location)
        .ok()
        .flatten()
        .and_then(|v| v.udata_value())
        .unwrap_or(0)
}

fn le_unsigned(bytes: &[u8]) -> u128 {
    let mut buf = [0u8; 16];
    let n = bytes.len().min(16);
    buf[..n].copy_from_slice(&bytes[..n]);
    u128::from_le_bytes(buf)
}

/// All ones in the low `size` bytes.
fn mask_of(size: usize) -> u128 {
    if size >= 16 {
        u128::MAX
    } else {
        (1u128 << (8 * size)) - 1
    }
}

/// A data member (or the discriminant of a variant part).
struct Member {
    name: Option<String>,
    ty: Option<DieRef>,
    offset: u64,
}

/// The children of a struct that describe its layout.
#[derive(Default)]
struct Layout {
    members: Vec<Member>,
    /// The `DW_TAG_variant_part`, for Rust enums.
    variant_part: Option<DieRef>,
    /// `DW_TAG_template_type_parameter`s, by name (`T` of `Vec<T>`).
    type_parameters: Vec<(String, Option<DieRef>)>,
}

fn layout(types: &Types, offset: DieRef) -> Layout {
    let mut out = Layout::default();
    let Some(mut tree) = types.tree(offset) else {
        return out;
    };
    let Ok(root) = tree.root() else { return out };
    let mut children = root.children();
    while let Ok(Some(child)) = children.next() {
        let e = child.entry();
        let at = child_ref(offset, e);
        match e.tag() {
            gimli::DW_TAG_member | gimli::DW_TAG_inheritance => {
                if e.attr_value(gimli::DW_AT_external).ok().flatten().is_some() {
                    continue; // statics live elsewhere
                }
                out.members.push(Member {
                    name: types.name_of(at, e),
                    ty: types.type_of(at, e),
                    offset: member_offset(e),
                });
            }
            gimli::DW_TAG_variant_part => out.variant_part = Some(at),
            gimli::DW_TAG_template_type_parameter => {
                out.type_parameters.push((
                    types.name_of(at, e).unwrap_or_default(),
                    types.type_of(at, e),
                ));
            }
            _ => {}
        }
    }
    out
}

/// The bytes of a member inside its parent's bytes.
fn member_bytes<'b>(types: &Types, member: &Member, bytes: &'b [u8]) -> Option<&'b [u8]> {
    let size = types.size(member.ty?)? as usize;
    let start = member.offset as usize;
    bytes.get(start..start.checked_add(size)?)
}

fn decode_member(types: &Types, member: &Member, bytes: &[u8], depth: usize) -> Value {
    match member_bytes(types, member, bytes) {
        Some(slice) => types.decode(member.ty, slice, depth + 1),
        None => Value::Unavailable("out of bounds".into()),
    }
}

fn tag_of(types: &Types, offset: Option<DieRef>) -> Option<(DieRef, gimli::DwTag)> {
    let stripped = types.strip(offset?)?;
    Some((stripped, types.entry(stripped)?.tag()))
}

// ---------------------------------------------------------------------------
// Qualified names (`r::Shape`): the namespaces and types around a DIE
// ---------------------------------------------------------------------------

type QualifiedNames = HashMap<UnitOffset, String>;
/// Keyed by (address of the .debug_info data, unit offset in it).
type NameCache = Mutex<HashMap<(usize, usize), Arc<QualifiedNames>>>;

/// Per unit (keyed by the .debug_info it lives in and its offset there),
/// the qualified name of every named type: one pass over the unit instead
/// of one per value shown.
fn qualified_names(types: &Types, at: DieRef) -> Option<Arc<QualifiedNames>> {
    static CACHE: OnceLock<NameCache> = OnceLock::new();
    let section = types.units.dwarf().debug_info.reader().slice().as_ptr() as usize;
    let key = (section, at.unit.0);
    let cache = CACHE.get_or_init(Default::default);
    if let Some(found) = cache.lock().ok().and_then(|c| c.get(&key).cloned()) {
        return Some(found);
    }
    let names = Arc::new(scan_qualified_names(types, at)?);
    if let Ok(mut c) = cache.lock() {
        c.insert(key, names.clone());
    }
    Some(names)
}

fn scan_qualified_names(types: &Types, at: DieRef) -> Option<QualifiedNames> {
    let unit = types.units.unit_of(at)?;
    let mut names = HashMap::new();
    // (depth, name) of the enclosing scopes.
    let mut scopes: Vec<(isize, String)> = Vec::new();
    let mut depth = 0isize;
    let mut entries = unit.entries();
    while let Ok(Some((delta, entry))) = entries.next_dfs() {
        depth += delta;
        while scopes.last().is_some_and(|(d, _)| *d >= depth) {
            scopes.pop();
        }
        let is_scope = matches!(
            entry.tag(),
            gimli::DW_TAG_namespace
                | gimli::DW_TAG_structure_type
                | gimli::DW_TAG_union_type
                | gimli::DW_TAG_enumeration_type
                | gimli::DW_TAG_class_type
        );
        if !is_scope {
            continue;
        }
        let Some(name) = types.name_of(child_ref(at, entry), entry) else {
            continue;
        };
        let mut path: Vec<&str> = scopes.iter().map(|(_, n)| n.as_str()).collect();
        path.push(&name);
        let qualified = path.join("::");
        if entry.tag() != gimli::DW_TAG_namespace {
            names.insert(entry.offset(), qualified);
        }
        scopes.push((depth, name));
    }
    Some(names)
}

/// The name of a struct, class, union or enum type with its namespaces
/// (`geo::Base`, `r::Shape`) for the languages that have them; `None` for
/// C and for other types.
pub(crate) fn qualified_type_name(types: &Types, offset: DieRef) -> Option<String> {
    if !has_namespaces(types.language) {
        return None;
    }
    qualified_names(types, offset)?.get(&offset.offset).cloned()
}

fn has_namespaces(language: Option<gimli::DwLang>) -> bool {
    is_cpp(language) || language == Some(gimli::DW_LANG_Rust)
}

fn is_cpp(language: Option<gimli::DwLang>) -> bool {
    matches!(
        language,
        Some(
            gimli::DW_LANG_C_plus_plus
                | gimli::DW_LANG_C_plus_plus_03
                | gimli::DW_LANG_C_plus_plus_11
                | gimli::DW_LANG_C_plus_plus_14
        )
    )
}

/// The file-scope variables of `unit` whose name with its namespaces is
/// `qualified` (`geo::global`, `lang_rust::COUNTER`): declarations inside
/// namespaces and the definitions that complete them
/// (`DW_AT_specification`).
pub(crate) fn variables_named(
    dwarf: &gimli::Dwarf<R>,
    unit: &gimli::Unit<R>,
    qualified: &str,
) -> Vec<UnitOffset> {
    let mut found = Vec::new();
    let mut scopes: Vec<(isize, String)> = Vec::new();
    let mut depth = 0isize;
    let mut entries = unit.entries();
    while let Ok(Some((delta, entry))) = entries.next_dfs() {
        depth += delta;
        while scopes.last().is_some_and(|(d, _)| *d >= depth) {
            scopes.pop();
        }
        let name = || super::dwarf::die_string(dwarf, unit, entry, gimli::DW_AT_name);
        match entry.tag() {
            gimli::DW_TAG_namespace | gimli::DW_TAG_module => {
                if let Some(name) = name() {
                    scopes.push((depth, name));
                }
            }
            gimli::DW_TAG_variable => {
                let Some(name) = name() else {
                    // A definition completing a declaration seen before.
                    if let Ok(Some(AttributeValue::UnitRef(spec))) =
                        entry.attr_value(gimli::DW_AT_specification)
                    {
                        if found.contains(&spec) {
                            found.push(entry.offset());
                        }
                    }
                    continue;
                };
                let in_namespaces = scopes.len() as isize == depth - 1;
                let mut path: Vec<&str> = scopes.iter().map(|(_, n)| n.as_str()).collect();
                path.push(&name);
                if in_namespaces && path.join("::") == qualified {
                    found.push(entry.offset());
                }
            }
            _ => {}
        }
    }
    found
}

/// The struct, class, union, enum or typedef of `unit` named `qualified`
/// with its namespaces (`geo::Base`, `lang_rust::Point`), for casts in the
/// languages that name types without a `struct` keyword.
pub(crate) fn type_named(
    dwarf: &gimli::Dwarf<R>,
    unit: &gimli::Unit<R>,
    qualified: &str,
) -> Option<UnitOffset> {
    let mut scopes: Vec<(isize, String)> = Vec::new();
    let mut depth = 0isize;
    let mut entries = unit.entries();
    while let Ok(Some((delta, entry))) = entries.next_dfs() {
        depth += delta;
        while scopes.last().is_some_and(|(d, _)| *d >= depth) {
            scopes.pop();
        }
        if depth == 0 {
            let language = match entry.attr_value(gimli::DW_AT_language) {
                Ok(Some(AttributeValue::Language(l))) => Some(l),
                _ => None,
            };
            if !has_namespaces(language) {
                return None;
            }
            continue;
        }
        let is_type = matches!(
            entry.tag(),
            gimli::DW_TAG_structure_type
                | gimli::DW_TAG_class_type
                | gimli::DW_TAG_union_type
                | gimli::DW_TAG_enumeration_type
                | gimli::DW_TAG_typedef
        );
        let is_scope = matches!(entry.tag(), gimli::DW_TAG_namespace | gimli::DW_TAG_module);
        if !is_type && !is_scope {
            continue;
        }
        let Some(name) = super::dwarf::die_string(dwarf, unit, entry, gimli::DW_AT_name) else {
            continue;
        };
        let in_scopes = scopes.len() as isize == depth - 1;
        let mut path: Vec<&str> = scopes.iter().map(|(_, n)| n.as_str()).collect();
        path.push(&name);
        let declaration = entry
            .attr_value(gimli::DW_AT_declaration)
            .ok()
            .flatten()
            .is_some();
        if is_type && in_scopes && !declaration && path.join("::") == qualified {
            return Some(entry.offset());
        }
        // Nested types are named through their class too (`A::B`).
        scopes.push((depth, name));
    }
    None
}

fn qualified_name(types: &Types, offset: DieRef) -> String {
    qualified_names(types, offset)
        .and_then(|names| names.get(&offset.offset).cloned())
        .or_else(|| types.name_of(offset, &types.entry(offset)?))
        .unwrap_or_else(|| "<anonymous>".into())
}

// ---------------------------------------------------------------------------
// Rust
// ---------------------------------------------------------------------------

fn render_rust(
    types: &Types,
    offset: DieRef,
    entry: &Die,
    bytes: &[u8],
    depth: usize,
) -> Option<Value> {
    match entry.tag() {
        gimli::DW_TAG_structure_type | gimli::DW_TAG_union_type => {
            let type_name = qualified_name(types, offset);
            let text = if depth >= MAX_DEPTH {
                "{...}".to_string()
            } else {
                rust_struct(types, offset, &type_name, bytes, depth)
            };
            Some(Value::Composite {
                type_name,
                text,
                parts: None,
            })
        }
        gimli::DW_TAG_array_type => {
            let element = types.type_of(offset, entry);
            let element_size = types.size(element?)? as usize;
            let count = bytes.len().checked_div(element_size)?;
            let items = (0..count.min(ELEMENT_LIMIT))
                .map(|i| {
                    let slice = &bytes[i * element_size..(i + 1) * element_size];
                    types.decode(element, slice, depth + 1).to_string()
                })
                .collect::<Vec<_>>();
            Some(Value::Composite {
                type_name: types.name(Some(offset)),
                text: format!("[{}]", element_list(&items, count)),
                parts: None,
            })
        }
        gimli::DW_TAG_enumeration_type => {
            // gdb qualifies Rust's C-like enumerators: `r::Color::Green`.
            let raw = le_unsigned(bytes);
            let mask = mask_of(bytes.len());
            let type_name = qualified_name(types, offset);
            let name = types
                .enumerators(offset)
                .into_iter()
                .find(|(_, v)| (*v as i128 as u128) & mask == raw)
                .map(|(n, _)| format!("{type_name}::{n}"));
            Some(Value::Enum {
                value: raw as i64,
                name,
                type_name,
            })
        }
        _ => None,
    }
}

fn rust_struct(
    types: &Types,
    offset: DieRef,
    type_name: &str,
    bytes: &[u8],
    depth: usize,
) -> String {
    let layout = layout(types, offset);
    if let Some(part) = layout.variant_part {
        return rust_enum(types, part, type_name, bytes, depth);
    }
    if let Some(text) = rust_slice(types, type_name, &layout, bytes, depth) {
        return text;
    }
    if type_name == "alloc::string::String" {
        if let Some(text) = rust_string_struct(types, &layout, bytes) {
            return text;
        }
    }
    if type_name.starts_with("alloc::vec::Vec<") {
        if let Some(text) = rust_vec(types, &layout, bytes, depth) {
            return text;
        }
    }
    let name = if type_name.starts_with('(') {
        "" // tuples have only their fields
    } else {
        type_name
    };
    rust_fields(types, name, &layout.members, bytes, depth, " ")
}

/// `Name {a: 1, b: 2}`, `Name (1, 2)` for tuple structs, `(1, 2)` for
/// tuples, `Name` for unit structs. `gap` goes between a tuple struct's
/// name and its fields (gdb: a space for structs, none for variants).
fn rust_fields(
    types: &Types,
    name: &str,
    members: &[Member],
    bytes: &[u8],
    depth: usize,
    gap: &str,
) -> String {
    if members.is_empty() {
        return if name.is_empty() { "()" } else { name }.to_string();
    }
    let positional = members
        .iter()
        .all(|m| m.name.as_deref().is_some_and(is_positional));
    let values = members
        .iter()
        .map(|m| decode_member(types, m, bytes, depth).to_string());
    if positional {
        let fields: Vec<String> = values.collect();
        let trailing = if name.is_empty() && fields.len() == 1 {
            "," // a 1-tuple
        } else {
            ""
        };
        let gap = if name.is_empty() { "" } else { gap };
        return format!("{name}{gap}({}{trailing})", fields.join(", "));
    }
    let fields: Vec<String> = members
        .iter()
        .zip(values)
        .map(|(m, v)| format!("{}: {v}", m.name.as_deref().unwrap_or("?")))
        .collect();
    if name.is_empty() {
        format!("{{{}}}", fields.join(", "))
    } else if gap.is_empty() {
        format!("{name}{{{}}}", fields.join(", "))
    } else {
        format!("{name} {{{}}}", fields.join(", "))
    }
}

/// Tuple fields are named `__0`, `__1`...
fn is_positional(name: &str) -> bool {
    name.strip_prefix("__")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// An enum: the discriminant picks a `DW_TAG_variant`; a variant without
/// `DW_AT_discr_value` is the default (the dataful variant of niche
/// layouts, whose discriminant is a niche inside its data).
fn rust_enum(types: &Types, part: DieRef, type_name: &str, bytes: &[u8], depth: usize) -> String {
    let Some(variant) = chosen_variant(types, part, bytes) else {
        return format!("{type_name}::<unknown variant>");
    };
    let Some(payload_type) = variant.ty.and_then(|t| types.strip(t)) else {
        return format!("{type_name}::<unknown variant>");
    };
    let variant_name = variant.name.unwrap_or_default();
    let full = match type_name.split('<').next() {
        // The prelude's enums read as in source: `Some(7)`, `Err(e)`.
        Some("core::option::Option" | "core::result::Result") => variant_name,
        _ => format!("{type_name}::{variant_name}"),
    };
    let payload = layout(types, payload_type);
    let start = (variant.offset as usize).min(bytes.len());
    rust_fields(types, &full, &payload.members, &bytes[start..], depth, "")
}

fn chosen_variant(types: &Types, part: DieRef, bytes: &[u8]) -> Option<Member> {
    let part_entry = types.entry(part)?;
    let discr_die = types.units.attr_ref(part, &part_entry, gimli::DW_AT_discr);
    let mut tree = types.tree(part)?;
    let root = tree.root().ok()?;
    let mut children = root.children();
    // (value, mask of its width)
    let mut discriminant: Option<(u128, u128)> = None;
    let mut default = None;
    while let Ok(Some(child)) = children.next() {
        let e = child.entry();
        let at = child_ref(part, e);
        if Some(at) == discr_die {
            let size = types.size(types.type_of(at, e)?)? as usize;
            let start = member_offset(e) as usize;
            let value = le_unsigned(bytes.get(start..start.checked_add(size)?)?);
            discriminant = Some((value, mask_of(size)));
            continue;
        }
        if e.tag() != gimli::DW_TAG_variant {
            continue;
        }
        let offset = at;
        match e.attr_value(gimli::DW_AT_discr_value).ok().flatten() {
            Some(v) => {
                // Negative values come as sdata: compare at the
                // discriminant's width.
                let wanted = v
                    .udata_value()
                    .map(u128::from)
                    .or_else(|| v.sdata_value().map(|s| s as i128 as u128));
                if let (Some(wanted), Some((value, mask))) = (wanted, discriminant) {
                    if wanted & mask == value {
                        return variant_member(types, offset);
                    }
                }
            }
            None => default = variant_member(types, offset),
        }
    }
    default
}

/// The one member of a `DW_TAG_variant`: the variant's name and payload.
fn variant_member(types: &Types, variant: DieRef) -> Option<Member> {
    let mut tree = types.tree(variant)?;
    let root = tree.root().ok()?;
    let mut children = root.children();
    while let Ok(Some(child)) = children.next() {
        let e = child.entry();
        if e.tag() == gimli::DW_TAG_member {
            let at = child_ref(variant, e);
            return Some(Member {
                name: types.name_of(at, e),
                ty: types.type_of(at, e),
                offset: member_offset(e),
            });
        }
    }
    None
}

/// `&str`, `&[T]`, `Box<[T]>`...: a `data_ptr` and a `length`.
fn rust_slice(
    types: &Types,
    type_name: &str,
    layout: &Layout,
    bytes: &[u8],
    depth: usize,
) -> Option<String> {
    let find = |name: &str| {
        layout
            .members
            .iter()
            .find(|m| m.name.as_deref() == Some(name))
    };
    let (data, length) = (find("data_ptr")?, find("length")?);
    let address = le_unsigned(member_bytes(types, data, bytes)?) as u64;
    let count = le_unsigned(member_bytes(types, length, bytes)?) as u64;
    let (pointer, _) = tag_of(types, data.ty)?;
    let element = types.type_of(pointer, &types.entry(pointer)?);
    let is_str = type_name.ends_with("str") || type_name.starts_with("alloc::boxed::Box<str");
    if is_str {
        return Some(read_utf8(types, address, count));
    }
    Some(format!(
        "[{}]",
        read_elements(types, element, address, count, depth)
    ))
}

/// `String`: its `vec` member holds the bytes.
fn rust_string_struct(types: &Types, layout: &Layout, bytes: &[u8]) -> Option<String> {
    let vec = layout
        .members
        .iter()
        .find(|m| m.name.as_deref() == Some("vec"))?;
    let (vec_type, _) = tag_of(types, vec.ty)?;
    let inner = layout_of_vec(types, vec_type, member_bytes(types, vec, bytes)?)?;
    Some(read_utf8(types, inner.data, inner.len))
}

fn rust_vec(types: &Types, layout: &Layout, bytes: &[u8], depth: usize) -> Option<String> {
    let parts = VecParts::find(types, layout, bytes)?;
    Some(format!(
        "vec![{}]",
        read_elements(types, parts.element, parts.data, parts.len, depth)
    ))
}

/// Where a `Vec`'s elements are: the data pointer, the length and the
/// element type.
struct VecParts {
    data: u64,
    len: u64,
    element: Option<DieRef>,
}

fn layout_of_vec(types: &Types, vec_type: DieRef, bytes: &[u8]) -> Option<VecParts> {
    VecParts::find(types, &layout(types, vec_type), bytes)
}

impl VecParts {
    /// `len` is a member; the data pointer is the first pointer inside `buf`
    /// (however many wrappers rustc puts around it); the element type is
    /// the template parameter `T`, else the pointer's target.
    fn find(types: &Types, layout: &Layout, bytes: &[u8]) -> Option<VecParts> {
        let len_member = layout
            .members
            .iter()
            .find(|m| m.name.as_deref() == Some("len"))?;
        let len = le_unsigned(member_bytes(types, len_member, bytes)?) as u64;
        let buf = layout
            .members
            .iter()
            .find(|m| m.name.as_deref() == Some("buf"))?;
        let (pointer, data) = first_pointer(types, buf, bytes, 0)?;
        let element = layout
            .type_parameters
            .iter()
            .find(|(n, _)| n == "T")
            .map(|(_, t)| *t)
            .unwrap_or_else(|| {
                types
                    .entry(pointer)
                    .and_then(|e| types.type_of(pointer, &e))
            });
        Some(VecParts { data, len, element })
    }
}

/// Depth-first through the members of `member` to the first pointer:
/// (its pointer type, its value).
fn first_pointer(
    types: &Types,
    member: &Member,
    parent: &[u8],
    depth: usize,
) -> Option<(DieRef, u64)> {
    if depth > 8 {
        return None;
    }
    let bytes = member_bytes(types, member, parent)?;
    let (offset, tag) = tag_of(types, member.ty)?;
    match tag {
        gimli::DW_TAG_pointer_type => Some((offset, le_unsigned(bytes) as u64)),
        gimli::DW_TAG_structure_type => layout(types, offset)
            .members
            .iter()
            .find_map(|m| first_pointer(types, m, bytes, depth + 1)),
        _ => None,
    }
}

fn read_memory(types: &Types, address: u64, len: usize) -> Result<Vec<u8>, String> {
    let Some(frame) = types.frame else {
        return Err("memory not available".into());
    };
    let mut buf = vec![0u8; len];
    if len > 0 {
        frame
            .read_memory(address, &mut buf)
            .map_err(|_| format!("error: Cannot access memory at address 0x{address:x}"))?;
    }
    Ok(buf)
}

/// A Rust string: `"text"` with Rust's escapes, capped like gdb's.
fn read_utf8(types: &Types, address: u64, len: u64) -> String {
    let shown = len.min(ELEMENT_LIMIT as u64) as usize;
    match read_memory(types, address, shown) {
        Ok(bytes) => {
            let text = format!("{:?}", String::from_utf8_lossy(&bytes));
            if (shown as u64) < len {
                format!("{text}...")
            } else {
                text
            }
        }
        Err(why) => format!("<{why}>"),
    }
}

/// `count` elements at `address`, read in one go and rendered `1, 2, 3`.
fn read_elements(
    types: &Types,
    element: Option<DieRef>,
    address: u64,
    count: u64,
    depth: usize,
) -> String {
    let Some(size) = element.and_then(|e| types.size(e)) else {
        return "<unknown element type>".into();
    };
    let shown = count.min(ELEMENT_LIMIT as u64) as usize;
    if size == 0 {
        // Zero-sized elements (`Vec<()>`) have no memory to read.
        let items = vec![types.decode(element, &[], depth + 1).to_string(); shown];
        return element_list(&items, count as usize);
    }
    let bytes = match read_memory(types, address, shown * size as usize) {
        Ok(bytes) => bytes,
        Err(why) => return format!("<{why}>"),
    };
    let items: Vec<String> = bytes
        .chunks_exact(size as usize)
        .map(|chunk| types.decode(element, chunk, depth + 1).to_string())
        .collect();
    element_list(&items, count as usize)
}

/// Elements joined, runs of equal ones folded as gdb does, `...` when
/// there are more than shown.
fn element_list(items: &[String], total: usize) -> String {
    let mut text = crate::value::compress_repeats(items);
    if total > items.len() {
        text.push_str("...");
    }
    text
}

// ---------------------------------------------------------------------------
// C++
// ---------------------------------------------------------------------------

/// References show where they refer and the referred value:
/// `(int &) @0x7ffe...: 5`.
fn render_cpp(types: &Types, at: DieRef, entry: &Die, bytes: &[u8]) -> Option<Value> {
    if !matches!(
        entry.tag(),
        gimli::DW_TAG_reference_type | gimli::DW_TAG_rvalue_reference_type
    ) {
        return None;
    }
    let address = le_unsigned(bytes) as u64;
    let target = types.type_of(at, entry);
    let size = types.size(target?)? as usize;
    let referred = match read_memory(types, address, size) {
        Ok(data) => types.decode(target, &data, 1).to_string(),
        Err(why) => format!("<{why}>"),
    };
    Some(Value::Composite {
        type_name: types.name(Some(at)),
        text: format!("@0x{address:x}: {referred}"),
        parts: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tuple_field_names() {
        assert!(is_positional("__0"));
        assert!(is_positional("__12"));
        assert!(!is_positional("__"));
        assert!(!is_positional("x"));
        assert!(!is_positional("__x"));
    }

    #[test]
    fn element_lists_fold_and_cap() {
        let items: Vec<String> = std::iter::repeat_n("0".to_string(), 12).collect();
        assert_eq!(element_list(&items, 12), "0 <repeats 12 times>");
        let items = vec!["1".to_string(), "2".to_string()];
        assert_eq!(element_list(&items, 2), "1, 2");
        assert_eq!(element_list(&items, 5), "1, 2...");
    }
}
