//! DWARF types: gdb-style names, sizes, and decoding bytes into `Value`s.

use gimli::{AttributeValue, UnitOffset};

use std::sync::Arc;

use super::dwarf::{CuData, DieRef, Units};
use super::{FrameContext, R};
use crate::error::Result;
use crate::value::{char_literal, compress_repeats, Aggregate, Value, REPEAT_THRESHOLD};

mod shape;
pub use shape::{AggregateKind, Field, TypeShape};

/// Longest string or element list shown, as gdb's default `print elements`.
pub(crate) const ELEMENT_LIMIT: usize = 200;
/// How deep nested aggregates are expanded.
const MAX_DEPTH: usize = 4;
/// Most typedefs, qualifiers and array levels followed from one type to
/// the type it is made of: malformed DWARF can make them a loop.
const MAX_TYPE_CHAIN: usize = 32;
/// Deepest anonymous structures and unions `ptype` writes out in place.
const MAX_BODY_NESTING: usize = 16;

type Die<'a> = gimli::DebuggingInformationEntry<'a, 'a, R>;

pub(crate) struct Types<'a> {
    /// Where type references lead, in this unit or another.
    pub(crate) units: &'a Units,
    /// The language of the unit the value comes from.
    pub(crate) language: Option<gimli::DwLang>,
    /// For `char *` strings; `None` when decoding registers only.
    pub(crate) frame: Option<&'a dyn FrameContext>,
    /// The `<symbol>` shown after code pointers (runtime address in).
    pub(crate) symbolizer: &'a dyn Fn(u64) -> Option<String>,
}

fn udata(entry: &Die, name: gimli::DwAt) -> Option<u64> {
    entry.attr_value(name).ok()??.udata_value()
}

/// A child DIE of the DIE at `parent` (children share their parent's unit).
pub(crate) fn child_ref(parent: DieRef, entry: &Die) -> DieRef {
    DieRef {
        unit: parent.unit,
        offset: entry.offset(),
    }
}

fn le_unsigned(bytes: &[u8]) -> u128 {
    let mut buf = [0u8; 16];
    let n = bytes.len().min(16);
    buf[..n].copy_from_slice(&bytes[..n]);
    u128::from_le_bytes(buf)
}

fn le_signed(bytes: &[u8]) -> i128 {
    let n = bytes.len().clamp(1, 16);
    let shift = 128 - 8 * n as u32;
    ((le_unsigned(bytes) << shift) as i128) >> shift
}

impl<'a> Types<'a> {
    pub(crate) fn entry(&self, at: DieRef) -> Option<Die<'a>> {
        self.units.entry(at)
    }

    /// The type of the DIE at `at`, in whichever unit it is.
    pub(crate) fn type_of(&self, at: DieRef, entry: &Die) -> Option<DieRef> {
        self.units.attr_ref(at, entry, gimli::DW_AT_type)
    }

    pub(crate) fn name_of(&self, at: DieRef, entry: &Die) -> Option<String> {
        self.units.string(at, entry, gimli::DW_AT_name)
    }

    /// The DIE at `at` with its children.
    pub(crate) fn tree(&self, at: DieRef) -> Option<gimli::EntriesTree<'a, 'a, R>> {
        self.units.unit_of(at)?.entries_tree(Some(at.offset)).ok()
    }

    fn is_c(&self) -> bool {
        matches!(
            self.language,
            Some(gimli::DW_LANG_C89)
                | Some(gimli::DW_LANG_C)
                | Some(gimli::DW_LANG_C99)
                | Some(gimli::DW_LANG_C11)
                | Some(gimli::DW_LANG_C17)
                | None
        )
    }

    /// Follow typedefs and cv-qualifiers to the underlying type.
    pub(crate) fn strip(&self, mut offset: DieRef) -> Option<DieRef> {
        for _ in 0..MAX_TYPE_CHAIN {
            let entry = self.entry(offset)?;
            match entry.tag() {
                gimli::DW_TAG_typedef
                | gimli::DW_TAG_const_type
                | gimli::DW_TAG_volatile_type
                | gimli::DW_TAG_restrict_type
                | gimli::DW_TAG_atomic_type => offset = self.type_of(offset, &entry)?,
                _ => return Some(offset),
            }
        }
        None
    }

    /// The type's size in bytes; `None` when unknown or too large for a
    /// `u64`. Arrays multiply their dimensions; typedefs and qualifiers
    /// are followed, a bounded number of times (DWARF can loop).
    pub(crate) fn size(&self, mut offset: DieRef) -> Option<u64> {
        let mut elements = 1u64;
        for _ in 0..MAX_TYPE_CHAIN {
            let entry = self.entry(offset)?;
            if let Some(size) = udata(&entry, gimli::DW_AT_byte_size) {
                return size.checked_mul(elements);
            }
            match entry.tag() {
                gimli::DW_TAG_pointer_type
                | gimli::DW_TAG_reference_type
                | gimli::DW_TAG_rvalue_reference_type => return elements.checked_mul(8),
                // GNU C: sizeof a function is 1.
                gimli::DW_TAG_subprogram | gimli::DW_TAG_subroutine_type => return Some(elements),
                gimli::DW_TAG_array_type => {
                    elements = self
                        .dimensions(offset)
                        .into_iter()
                        .try_fold(elements, u64::checked_mul)?;
                    offset = self.type_of(offset, &entry)?;
                }
                _ => offset = self.type_of(offset, &entry)?,
            }
        }
        None
    }

    fn dimensions(&self, array: DieRef) -> Vec<u64> {
        let mut dims = Vec::new();
        let Some(mut tree) = self.tree(array) else {
            return dims;
        };
        let Ok(root) = tree.root() else { return dims };
        let mut children = root.children();
        while let Ok(Some(child)) = children.next() {
            let e = child.entry();
            if e.tag() != gimli::DW_TAG_subrange_type {
                continue;
            }
            let count = udata(e, gimli::DW_AT_count).or_else(|| {
                let upper = e.attr_value(gimli::DW_AT_upper_bound).ok()??;
                let lower = udata(e, gimli::DW_AT_lower_bound).unwrap_or(0);
                Some((upper.sdata_value()? - lower as i64 + 1).max(0) as u64)
            });
            dims.push(count.unwrap_or(0));
        }
        dims
    }

    /// The type's name as gdb's `whatis` prints it.
    pub(crate) fn name(&self, offset: Option<DieRef>) -> String {
        let (base, suffix) = self.name_parts(offset, 0);
        if suffix.is_empty() {
            base
        } else if base.ends_with('*') || suffix.starts_with('[') || suffix.starts_with('(') {
            format!("{base} {suffix}")
        } else {
            format!("{base}{suffix}")
        }
    }

    /// (prefix, declarator suffix) so that pointers to arrays/functions
    /// read `int (*)[3]` as in C.
    pub(crate) fn name_parts(&self, offset: Option<DieRef>, depth: usize) -> (String, String) {
        self.declarator_parts(offset, depth, false)
    }

    /// [`Types::name_parts`], with typedefs seen through when `strip`
    /// (ptype shows what a typedef stands for).
    fn declarator_parts(
        &self,
        offset: Option<DieRef>,
        depth: usize,
        strip: bool,
    ) -> (String, String) {
        let Some(offset) = offset else {
            return ("void".into(), String::new());
        };
        let Some(entry) = self.entry(offset) else {
            return ("<unknown type>".into(), String::new());
        };
        if depth > 16 {
            return ("...".into(), String::new());
        }
        let inner = self.type_of(offset, &entry);
        match entry.tag() {
            gimli::DW_TAG_pointer_type
            | gimli::DW_TAG_reference_type
            | gimli::DW_TAG_rvalue_reference_type => {
                let sigil = match entry.tag() {
                    gimli::DW_TAG_pointer_type => "*",
                    gimli::DW_TAG_reference_type => "&",
                    _ => "&&",
                };
                if let Some(name) = self.name_of(offset, &entry) {
                    // Rust names its pointer types (`&str`, `*const u8`).
                    if !self.is_c() {
                        return (name, String::new());
                    }
                }
                let (base, suffix) = self.declarator_parts(inner, depth + 1, strip);
                if suffix.starts_with('[') || suffix.starts_with('(') {
                    (base, format!("({sigil}){suffix}"))
                } else if base.ends_with('*') {
                    (format!("{base}{sigil}"), suffix)
                } else {
                    (format!("{base} {sigil}"), suffix)
                }
            }
            gimli::DW_TAG_const_type | gimli::DW_TAG_volatile_type => {
                let qual = if entry.tag() == gimli::DW_TAG_const_type {
                    "const"
                } else {
                    "volatile"
                };
                let (base, suffix) = self.declarator_parts(inner, depth + 1, strip);
                if base.ends_with('*') {
                    (format!("{base} {qual}"), suffix)
                } else {
                    (format!("{qual} {base}"), suffix)
                }
            }
            gimli::DW_TAG_array_type => {
                let (base, suffix) = self.declarator_parts(inner, depth + 1, strip);
                let dims: String = self
                    .dimensions(offset)
                    .iter()
                    .map(|d| format!("[{d}]"))
                    .collect();
                (base, format!("{dims}{suffix}"))
            }
            gimli::DW_TAG_subroutine_type => {
                let (ret, _) = self.declarator_parts(inner, depth + 1, strip);
                (ret, format!("({})", self.parameter_list(offset)))
            }
            // A function named in an expression has its subprogram as type.
            gimli::DW_TAG_subprogram => {
                let (ret, _) = self.declarator_parts(inner, depth + 1, strip);
                (ret, format!("({})", self.parameter_list(offset)))
            }
            gimli::DW_TAG_typedef if strip => self.declarator_parts(inner, depth + 1, strip),
            tag => {
                let anonymous = if matches!(
                    tag,
                    gimli::DW_TAG_structure_type
                        | gimli::DW_TAG_union_type
                        | gimli::DW_TAG_enumeration_type
                        | gimli::DW_TAG_class_type
                ) {
                    "{...}"
                } else {
                    "<anonymous>"
                };
                let name = super::lang::qualified_type_name(self, offset)
                    .or_else(|| self.name_of(offset, &entry))
                    .unwrap_or_else(|| anonymous.into());
                if tag == gimli::DW_TAG_base_type && self.is_c() {
                    return (gdb_base_name(&name).to_string(), String::new());
                }
                let keyword = match tag {
                    gimli::DW_TAG_structure_type => "struct ",
                    gimli::DW_TAG_union_type => "union ",
                    gimli::DW_TAG_enumeration_type => "enum ",
                    gimli::DW_TAG_class_type => "class ",
                    _ => "",
                };
                if self.is_c() && !keyword.is_empty() {
                    (format!("{keyword}{name}"), String::new())
                } else {
                    (name, String::new())
                }
            }
        }
    }

    /// gdb's `ptype` text for a type: typedefs seen through, and the
    /// struct, union or enum it is made from written out with its members
    /// (`struct point {\n    int x;\n    int y;\n} *`).
    pub(crate) fn expanded(&self, offset: Option<DieRef>) -> String {
        let (base, suffix) = self.expanded_parts(offset);
        join_declarator(&base, &suffix)
    }

    /// [`Types::expanded`] as (prefix, declarator suffix), like
    /// [`Types::name_parts`].
    pub(crate) fn expanded_parts(&self, offset: Option<DieRef>) -> (String, String) {
        let (base, suffix) = self.declarator_parts(offset, 0, true);
        let base = match self.leaf_aggregate(offset) {
            Some(leaf) => {
                let short = self.name(Some(leaf));
                let body = self.body(leaf, 0);
                base.replacen(&short, &body, 1)
            }
            None => base,
        };
        (base, suffix)
    }

    /// The struct, union or enum under pointers, arrays, qualifiers and
    /// typedefs, if that is what the type is made from.
    fn leaf_aggregate(&self, mut offset: Option<DieRef>) -> Option<DieRef> {
        for _ in 0..MAX_TYPE_CHAIN {
            let entry = self.entry(offset?)?;
            match entry.tag() {
                gimli::DW_TAG_structure_type
                | gimli::DW_TAG_union_type
                | gimli::DW_TAG_class_type
                | gimli::DW_TAG_enumeration_type => return offset,
                gimli::DW_TAG_subroutine_type
                | gimli::DW_TAG_subprogram
                | gimli::DW_TAG_base_type => return None,
                _ => offset = self.type_of(offset?, &entry),
            }
        }
        None
    }

    /// `struct point {...}` written out, members indented by `indent + 4`;
    /// enums on one line: `enum color {RED, GREEN, BLUE}`.
    fn body(&self, offset: DieRef, indent: usize) -> String {
        let Some(entry) = self.entry(offset) else {
            return "<unknown type>".into();
        };
        let head = self.name(Some(offset));
        if indent / 4 > MAX_BODY_NESTING {
            return head;
        }
        if entry.tag() == gimli::DW_TAG_enumeration_type {
            return format!("{head} {{{}}}", enumerator_list(&self.enumerators(offset)));
        }
        if entry
            .attr_value(gimli::DW_AT_declaration)
            .ok()
            .flatten()
            .is_some()
        {
            return format!(
                "{head} {{\n{:indent$}    <incomplete type>\n{:indent$}}}",
                "", ""
            );
        }
        let head = head.trim_end_matches(" {...}");
        let mut text = format!("{head} {{\n");
        let Some(mut tree) = self.tree(offset) else {
            return format!("{head} {{}}");
        };
        let Ok(root) = tree.root() else {
            return format!("{head} {{}}");
        };
        let mut children = root.children();
        while let Ok(Some(child)) = children.next() {
            let e = child.entry();
            if e.tag() != gimli::DW_TAG_member {
                continue;
            }
            let declaration = self.member_declaration(child_ref(offset, e), e, indent + 4);
            text.push_str(&format!("{:w$}{declaration};\n", "", w = indent + 4));
        }
        text.push_str(&format!("{:indent$}}}", ""));
        text
    }

    /// `int x`, `struct node *next`, `int (*area)(int, int)`, `unsigned
    /// int a : 3`; anonymous structs and unions written out in place.
    fn member_declaration(&self, at: DieRef, member: &Die, indent: usize) -> String {
        let name = self.name_of(at, member).unwrap_or_default();
        let ty = self.type_of(at, member);
        let anonymous = ty
            .and_then(|t| Some((t, self.entry(t)?)))
            .filter(|(t, e)| {
                matches!(
                    e.tag(),
                    gimli::DW_TAG_structure_type
                        | gimli::DW_TAG_union_type
                        | gimli::DW_TAG_enumeration_type
                ) && self.name_of(*t, e).is_none()
            })
            .is_some();
        let (base, suffix) = match ty {
            Some(t) if anonymous => (self.body(t, indent), String::new()),
            _ => self.name_parts(ty, 0),
        };
        let mut declaration = declare(&base, &suffix, &name);
        if let Some(bits) = udata(member, gimli::DW_AT_bit_size) {
            declaration.push_str(&format!(" : {bits}"));
        }
        declaration
    }

    fn parameter_list(&self, offset: DieRef) -> String {
        let mut params = Vec::new();
        let Some(mut tree) = self.tree(offset) else {
            return String::new();
        };
        let Ok(root) = tree.root() else {
            return String::new();
        };
        let mut children = root.children();
        while let Ok(Some(child)) = children.next() {
            match child.entry().tag() {
                gimli::DW_TAG_formal_parameter => {
                    params.push(self.name(self.type_of(offset, child.entry())));
                }
                gimli::DW_TAG_unspecified_parameters => params.push("...".into()),
                _ => {}
            }
        }
        if params.is_empty() && self.is_c() {
            "void".into()
        } else {
            params.join(", ")
        }
    }

    /// Decode `bytes` of which only the bits set in `known` (one mask per
    /// byte) are available, as gdb does: a value with nothing known is
    /// `<optimized out>`; inside an aggregate, structures and arrays are
    /// shown member by member and a scalar missing any bit is
    /// `<optimized out>`.
    pub(crate) fn decode_known(
        &self,
        offset: Option<DieRef>,
        bytes: &[u8],
        known: Option<&[u8]>,
        depth: usize,
    ) -> Value {
        let Some(known) = known.filter(|k| k.iter().any(|b| *b != 0xff)) else {
            return self.decode(offset, bytes, depth);
        };
        if depth == 0 && known.iter().all(|b| *b == 0) {
            return Value::OptimizedOut;
        }
        let type_name = self.name(offset);
        let Some((stripped, entry)) = offset
            .and_then(|o| self.strip(o))
            .and_then(|o| Some((o, self.entry(o)?)))
        else {
            return Value::OptimizedOut;
        };
        let (text, parts) = match entry.tag() {
            gimli::DW_TAG_structure_type | gimli::DW_TAG_class_type | gimli::DW_TAG_union_type => {
                self.render_struct(stripped, bytes, Some(known), depth)
            }
            gimli::DW_TAG_array_type => {
                self.render_array(stripped, &entry, bytes, Some(known), depth)
            }
            _ => return Value::OptimizedOut,
        };
        Value::Composite {
            text,
            type_name,
            parts,
        }
    }

    /// Decode `bytes` (exactly the type's size, when known) as the type.
    pub(crate) fn decode(&self, offset: Option<DieRef>, bytes: &[u8], depth: usize) -> Value {
        let type_name = self.name(offset);
        let Some(stripped) = offset.and_then(|o| self.strip(o)) else {
            return Value::Unavailable("no type".into());
        };
        let Some(entry) = self.entry(stripped) else {
            return Value::Unavailable("bad type".into());
        };
        if let Some(value) = super::lang::render(self, stripped, &entry, bytes, depth) {
            return value;
        }
        match entry.tag() {
            gimli::DW_TAG_base_type => self.decode_base(&entry, bytes, type_name),
            gimli::DW_TAG_pointer_type
            | gimli::DW_TAG_reference_type
            | gimli::DW_TAG_rvalue_reference_type => {
                let address = le_unsigned(bytes) as u64;
                let detail = self.pointer_detail(self.type_of(stripped, &entry), address);
                Value::Pointer {
                    address,
                    type_name,
                    detail,
                }
            }
            gimli::DW_TAG_enumeration_type => self.decode_enum(stripped, &entry, bytes, type_name),
            gimli::DW_TAG_structure_type | gimli::DW_TAG_class_type | gimli::DW_TAG_union_type => {
                let (text, parts) = self.render_struct(stripped, bytes, None, depth);
                Value::Composite {
                    text,
                    type_name,
                    parts,
                }
            }
            gimli::DW_TAG_array_type => {
                let (text, parts) = self.render_array(stripped, &entry, bytes, None, depth);
                Value::Composite {
                    text,
                    type_name,
                    parts,
                }
            }
            _ => Value::Unavailable(format!("cannot decode type {type_name}")),
        }
    }

    fn decode_base(&self, entry: &Die, bytes: &[u8], type_name: String) -> Value {
        let encoding = match entry.attr_value(gimli::DW_AT_encoding) {
            Ok(Some(AttributeValue::Encoding(e))) => e,
            _ => gimli::DW_ATE_signed,
        };
        let size = bytes.len() as u8;
        match encoding {
            gimli::DW_ATE_boolean => Value::Bool(le_unsigned(bytes) != 0),
            gimli::DW_ATE_float => Value::Float {
                value: decode_float(bytes),
                size,
                type_name,
            },
            gimli::DW_ATE_signed_char => Value::Char {
                value: le_signed(bytes) as i64,
                size,
                type_name,
            },
            gimli::DW_ATE_unsigned_char | gimli::DW_ATE_UTF => Value::Char {
                value: le_unsigned(bytes) as i64,
                size,
                type_name,
            },
            gimli::DW_ATE_signed => Value::Integer {
                value: le_signed(bytes),
                size,
                signed: true,
                type_name,
            },
            _ => Value::Integer {
                value: le_unsigned(bytes) as i128,
                size,
                signed: false,
                type_name,
            },
        }
    }

    fn decode_enum(&self, offset: DieRef, entry: &Die, bytes: &[u8], type_name: String) -> Value {
        let signed = self
            .type_of(offset, entry)
            .and_then(|t| self.entry(t))
            .and_then(|t| match t.attr_value(gimli::DW_AT_encoding) {
                Ok(Some(AttributeValue::Encoding(e))) => Some(e == gimli::DW_ATE_signed),
                _ => None,
            })
            .unwrap_or(true);
        let value = if signed {
            le_signed(bytes) as i64
        } else {
            le_unsigned(bytes) as i64
        };
        let enumerators = self.enumerators(offset);
        let name = enumerators
            .iter()
            .find(|(_, v)| *v == value)
            .map(|(n, _)| n.clone())
            .or_else(|| flag_names(&enumerators, value));
        Value::Enum {
            value,
            name,
            type_name,
        }
    }

    /// The (name, value) pairs of an enumeration type.
    pub(crate) fn enumerators(&self, offset: DieRef) -> Vec<(String, i64)> {
        let mut out = Vec::new();
        let Some(mut tree) = self.tree(offset) else {
            return out;
        };
        let Ok(root) = tree.root() else { return out };
        let mut children = root.children();
        while let Ok(Some(child)) = children.next() {
            let e = child.entry();
            let Some(v) = e.attr_value(gimli::DW_AT_const_value).ok().flatten() else {
                continue;
            };
            let Some(v) = v.sdata_value().or(v.udata_value().map(|u| u as i64)) else {
                continue;
            };
            out.push((self.name_of(offset, e).unwrap_or_default(), v));
        }
        out
    }

    /// What gdb shows after a pointer: a string for `char *`, `<symbol>`
    /// for code pointers.
    fn pointer_detail(&self, pointee: Option<DieRef>, address: u64) -> Option<String> {
        let stripped = pointee.and_then(|p| self.strip(p))?;
        let entry = self.entry(stripped)?;
        match entry.tag() {
            gimli::DW_TAG_subroutine_type | gimli::DW_TAG_subprogram => {
                (self.symbolizer)(address).map(|s| format!("<{s}>"))
            }
            gimli::DW_TAG_base_type if address != 0 => {
                let enc = match entry.attr_value(gimli::DW_AT_encoding) {
                    Ok(Some(AttributeValue::Encoding(e))) => e,
                    _ => return None,
                };
                let is_char =
                    matches!(enc, gimli::DW_ATE_signed_char | gimli::DW_ATE_unsigned_char)
                        && udata(&entry, gimli::DW_AT_byte_size) == Some(1);
                if !is_char || !self.is_c_like_strings() {
                    return self.data_symbol(address);
                }
                // gdb: `0x4005d4 <greeting> "hello"`.
                let text = self.read_c_string(address);
                Some(match self.data_symbol(address) {
                    Some(symbol) => format!("{symbol} {text}"),
                    None => text,
                })
            }
            // A pointer to data shows the variable it points into, as gdb
            // does (`0x5555555a0530 <absentkey>`).
            _ if address != 0 => self.data_symbol(address),
            _ => None,
        }
    }

    /// `<name>` or `<name+offset>` of the data symbol at `address`.
    fn data_symbol(&self, address: u64) -> Option<String> {
        (self.symbolizer)(address).map(|s| format!("<{s}>"))
    }

    fn is_c_like_strings(&self) -> bool {
        self.language != Some(gimli::DW_LANG_Rust)
    }

    fn read_c_string(&self, address: u64) -> String {
        let Some(frame) = self.frame else {
            return String::new();
        };
        let mut bytes = Vec::new();
        let mut chunk = [0u8; 64];
        let mut terminated = false;
        'outer: while bytes.len() < ELEMENT_LIMIT {
            let at = address + bytes.len() as u64;
            if frame.read_memory(at, &mut chunk).is_err() {
                // Near the end of a mapping: fall back to single bytes.
                let mut one = [0u8; 1];
                if frame.read_memory(at, &mut one).is_err() {
                    if bytes.is_empty() {
                        return format!("<error: Cannot access memory at address 0x{at:x}>");
                    }
                    break;
                }
                chunk[0] = one[0];
                if one[0] == 0 {
                    terminated = true;
                    break;
                }
                bytes.push(one[0]);
                continue;
            }
            for &b in &chunk {
                if b == 0 {
                    terminated = true;
                    break 'outer;
                }
                bytes.push(b);
                if bytes.len() == ELEMENT_LIMIT {
                    break 'outer;
                }
            }
        }
        let mut text = format_char_sequence(&bytes);
        if !terminated && bytes.len() >= ELEMENT_LIMIT {
            text.push_str("...");
        }
        text
    }

    /// The struct's text as `print` shows it, and its members.
    fn render_struct(
        &self,
        offset: DieRef,
        bytes: &[u8],
        known: Option<&[u8]>,
        depth: usize,
    ) -> (String, Option<Box<Aggregate>>) {
        if depth >= MAX_DEPTH {
            return ("{...}".into(), None);
        }
        let mut members = Vec::new();
        let Some(mut tree) = self.tree(offset) else {
            return ("{}".into(), None);
        };
        let Ok(root) = tree.root() else {
            return ("{}".into(), None);
        };
        let mut children = root.children();
        while let Ok(Some(child)) = children.next() {
            let e = child.entry();
            if e.tag() != gimli::DW_TAG_member && e.tag() != gimli::DW_TAG_inheritance {
                continue;
            }
            if e.attr_value(gimli::DW_AT_external).ok().flatten().is_some() {
                continue; // static members live elsewhere
            }
            let member = child_ref(offset, e);
            let member_type = self.type_of(member, e);
            let start = member_offset(e).unwrap_or(0) as usize;
            let size = member_type.and_then(|t| self.size(t)).unwrap_or(0) as usize;
            let value = match (
                self.bitfield_position(member, e),
                bytes.get(start..start + size),
            ) {
                (Some(bitfield), _) => self.decode_bitfield(member_type, bytes, known, bitfield),
                (None, Some(slice)) => {
                    let known = known.and_then(|k| k.get(start..start + size));
                    self.decode_known(member_type, slice, known, depth + 1)
                }
                (None, None) => Value::Unavailable("out of bounds".into()),
            };
            let name = if e.tag() == gimli::DW_TAG_inheritance {
                format!("<{}>", self.name(member_type))
            } else {
                self.name_of(member, e).unwrap_or_default()
            };
            members.push((name, value));
        }
        let fields: Vec<String> = members
            .iter()
            .map(|(name, value)| {
                if name.is_empty() {
                    value.to_string()
                } else {
                    format!("{name} = {value}")
                }
            })
            .collect();
        let text = format!("{{{}}}", fields.join(", "));
        (text, Some(Box::new(Aggregate::Struct(members))))
    }

    /// Where a bitfield member's bits are in its structure; `None` for
    /// other members. DWARF 4 and later say it with DW_AT_data_bit_offset,
    /// counted from the structure's first bit; DWARF 2 and 3 (and gcc's
    /// `-gdwarf-4`) with DW_AT_bit_offset, counted from the most
    /// significant bit of a storage unit of DW_AT_byte_size bytes at
    /// DW_AT_data_member_location, which on a little-endian machine is
    /// the unit's last bit.
    pub(crate) fn bitfield_position(&self, at: DieRef, member: &Die) -> Option<Bitfield> {
        let bits = udata(member, gimli::DW_AT_bit_size)?;
        let unit_start = member_offset(member).unwrap_or(0).checked_mul(8)?;
        let first = if let Some(offset) = udata(member, gimli::DW_AT_data_bit_offset) {
            unit_start.checked_add(offset)?
        } else if let Some(from_top) = signed_constant(member, gimli::DW_AT_bit_offset) {
            let unit_bytes = udata(member, gimli::DW_AT_byte_size)
                .or_else(|| self.size(self.type_of(at, member)?))?;
            let unit_end = i128::from(unit_start) + 8 * i128::from(unit_bytes);
            u64::try_from(unit_end - i128::from(from_top) - i128::from(bits)).ok()?
        } else {
            unit_start
        };
        Some(Bitfield { first, bits })
    }

    /// A bitfield member's value out of its structure's bytes: its bits,
    /// sign-extended when its type is signed, decoded as its type (an
    /// integer, a `char`, an enum, a `_Bool`).
    pub(crate) fn decode_bitfield(
        &self,
        member_type: Option<DieRef>,
        struct_bytes: &[u8],
        known: Option<&[u8]>,
        bitfield: Bitfield,
    ) -> Value {
        if !bitfield.is_known(known) {
            return Value::OptimizedOut;
        }
        let Some(raw) = bitfield.extract(struct_bytes) else {
            return Value::Unavailable("bitfield out of bounds".into());
        };
        let bits = bitfield.bits as u32;
        let value = if self.is_signed(member_type) && bits > 0 && raw >> (bits - 1) & 1 == 1 {
            raw as i128 - (1i128 << bits)
        } else {
            raw as i128
        };
        let size = member_type.and_then(|t| self.size(t)).unwrap_or(4) as usize;
        let mut buf = value.to_le_bytes().to_vec();
        buf.truncate(size);
        self.decode(member_type, &buf, MAX_DEPTH)
    }

    /// Whether values of the type are signed: signed integers and
    /// characters, and enums whose underlying type is.
    fn is_signed(&self, ty: Option<DieRef>) -> bool {
        let Some((at, entry)) = ty
            .and_then(|t| self.strip(t))
            .and_then(|t| Some((t, self.entry(t)?)))
        else {
            return false;
        };
        let entry = if entry.tag() == gimli::DW_TAG_enumeration_type {
            // An enum is as signed as its underlying type.
            let underlying = self
                .type_of(at, &entry)
                .and_then(|t| self.strip(t))
                .and_then(|t| self.entry(t));
            match underlying {
                Some(underlying) => underlying,
                None => return false,
            }
        } else {
            entry
        };
        matches!(
            entry.attr_value(gimli::DW_AT_encoding),
            Ok(Some(AttributeValue::Encoding(
                gimli::DW_ATE_signed | gimli::DW_ATE_signed_char
            )))
        )
    }

    /// The array's text as `print` shows it, and its elements.
    fn render_array(
        &self,
        offset: DieRef,
        entry: &Die,
        bytes: &[u8],
        known: Option<&[u8]>,
        depth: usize,
    ) -> (String, Option<Box<Aggregate>>) {
        let element_type = self.type_of(offset, entry);
        let element_size = element_type.and_then(|t| self.size(t)).unwrap_or(0) as usize;
        let dims = self.dimensions(offset);
        if element_size == 0 || dims.is_empty() {
            return ("{}".into(), None);
        }
        self.render_dims(element_type, element_size, &dims, bytes, known, depth)
    }

    fn render_dims(
        &self,
        element_type: Option<DieRef>,
        element_size: usize,
        dims: &[u64],
        bytes: &[u8],
        known: Option<&[u8]>,
        depth: usize,
    ) -> (String, Option<Box<Aggregate>>) {
        let count = usize::try_from(dims[0]).unwrap_or(usize::MAX);
        let inner_elements = dims[1..]
            .iter()
            .try_fold(1u64, |n, d| n.checked_mul(*d))
            .and_then(|n| usize::try_from(n).ok())
            .unwrap_or(usize::MAX);
        let stride = element_size.saturating_mul(inner_elements);
        let elements: Vec<Value> = (0..count.min(ELEMENT_LIMIT))
            .map(|i| {
                let range = i.saturating_mul(stride)..(i + 1).saturating_mul(stride);
                let slice = bytes.get(range.clone()).unwrap_or(&[]);
                let known = known.and_then(|k| k.get(range));
                if dims.len() > 1 {
                    let (text, parts) = self.render_dims(
                        element_type,
                        element_size,
                        &dims[1..],
                        slice,
                        known,
                        depth + 1,
                    );
                    let inner: String = dims[1..].iter().map(|d| format!("[{d}]")).collect();
                    Value::Composite {
                        type_name: format!("{} {inner}", self.name(element_type)),
                        text,
                        parts,
                    }
                } else {
                    self.decode_known(element_type, slice, known, depth + 1)
                }
            })
            .collect();
        let more = count > ELEMENT_LIMIT;
        // The innermost dimension of `char`s reads as a string.
        let strings =
            dims.len() == 1 && self.is_char_type(element_type) && self.is_c_like_strings();
        let text = if strings && known.is_none() {
            format_char_array(&bytes[..count.min(bytes.len())])
        } else {
            let items: Vec<String> = elements.iter().map(Value::to_string).collect();
            let more_text = if more { "..." } else { "" };
            format!("{{{}{more_text}}}", compress_repeats(&items))
        };
        (text, Some(Box::new(Aggregate::Array { elements, more })))
    }

    fn is_char_type(&self, offset: Option<DieRef>) -> bool {
        let Some(entry) = offset
            .and_then(|o| self.strip(o))
            .and_then(|o| self.entry(o))
        else {
            return false;
        };
        entry.tag() == gimli::DW_TAG_base_type
            && udata(&entry, gimli::DW_AT_byte_size) == Some(1)
            && matches!(
                entry.attr_value(gimli::DW_AT_encoding),
                Ok(Some(AttributeValue::Encoding(
                    gimli::DW_ATE_signed_char | gimli::DW_ATE_unsigned_char
                )))
            )
    }
}

/// Where a bitfield's bits are: `bits` bits from bit `first` of its
/// structure, bit 0 being the least significant bit of byte 0 (x86-64 is
/// little-endian).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Bitfield {
    pub(crate) first: u64,
    pub(crate) bits: u64,
}

/// Widest bitfield read: its bytes must fit in a `u128` with the bits
/// before it in the first byte.
const MAX_BITFIELD_BITS: u64 = 120;

impl Bitfield {
    /// The bytes of the structure that hold the bitfield.
    pub(crate) fn byte_range(&self) -> Option<std::ops::Range<usize>> {
        if self.bits == 0 || self.bits > MAX_BITFIELD_BITS {
            return None;
        }
        let start = usize::try_from(self.first / 8).ok()?;
        let end = usize::try_from(self.first.checked_add(self.bits)?.div_ceil(8)).ok()?;
        Some(start..end)
    }

    /// The bitfield's bits, unsigned, out of the structure's bytes.
    pub(crate) fn extract(&self, struct_bytes: &[u8]) -> Option<u128> {
        let window = struct_bytes.get(self.byte_range()?)?;
        Some((le_unsigned(window) >> (self.first % 8)) & self.mask())
    }

    /// The structure's bytes of [`Bitfield::byte_range`] with the
    /// bitfield's bits replaced by the low bits of `value`.
    pub(crate) fn insert(&self, struct_bytes: &[u8], value: u128) -> Option<Vec<u8>> {
        let window = struct_bytes.get(self.byte_range()?)?;
        let shift = self.first % 8;
        let mask = self.mask() << shift;
        let merged = (le_unsigned(window) & !mask) | ((value << shift) & mask);
        Some(merged.to_le_bytes()[..window.len()].to_vec())
    }

    fn mask(&self) -> u128 {
        (1u128 << self.bits.min(MAX_BITFIELD_BITS)) - 1
    }

    /// Whether every bit is known (`known` has a mask per byte of the
    /// structure).
    fn is_known(&self, known: Option<&[u8]>) -> bool {
        let Some(known) = known else { return true };
        let end = self.first.saturating_add(self.bits.min(MAX_BITFIELD_BITS));
        (self.first..end).all(|bit| {
            usize::try_from(bit / 8)
                .ok()
                .and_then(|i| known.get(i))
                .is_some_and(|mask| mask >> (bit % 8) & 1 == 1)
        })
    }

    /// The same bitfield seen from a structure that holds its own at
    /// `offset` bytes (an anonymous member around it).
    fn shifted(self, offset: u64) -> Option<Bitfield> {
        Some(Bitfield {
            first: self.first.checked_add(offset.checked_mul(8)?)?,
            bits: self.bits,
        })
    }
}

/// A constant attribute that may be negative (DW_FORM_sdata), as an `i64`.
fn signed_constant(entry: &Die, name: gimli::DwAt) -> Option<i64> {
    match entry.attr_value(name).ok()?? {
        AttributeValue::Sdata(value) => Some(value),
        other => other.udata_value().and_then(|v| i64::try_from(v).ok()),
    }
}

/// gdb's spelling of gcc's C base type names: `short` for `short int`,
/// `unsigned long` for `long unsigned int`.
fn gdb_base_name(name: &str) -> &str {
    match name {
        "short int" => "short",
        "short unsigned int" => "unsigned short",
        "long int" => "long",
        "long unsigned int" => "unsigned long",
        "long long int" => "long long",
        "long long unsigned int" => "unsigned long long",
        other => other,
    }
}

/// A type's name from its declarator parts, as [`Types::name`] joins them.
fn join_declarator(base: &str, suffix: &str) -> String {
    if suffix.is_empty() {
        base.to_string()
    } else if base.ends_with('*') || suffix.starts_with('[') || suffix.starts_with('(') {
        format!("{base} {suffix}")
    } else {
        format!("{base}{suffix}")
    }
}

/// Stands for the declared name while layers wrap a declarator around it.
const NAME_HOLE: char = '\u{1}';

/// The name of a type derived by `layers` (innermost first) from the type
/// whose declarator parts are `base` and `suffix`, in C's inside-out
/// syntax: an array of 3 `int *` is `int *[3]`, a pointer to an `int [3]`
/// is `int (*)[3]`.
fn derived_declaration(base: &str, suffix: &str, layers: &[Layer]) -> String {
    let hole = NAME_HOLE.to_string();
    let mut text = declare(base, suffix, &hole);
    for layer in layers {
        let Some(at) = text.find(NAME_HOLE) else {
            break;
        };
        let after = text[at..].chars().nth(1);
        let wrapped = match layer {
            Layer::Pointer if matches!(after, Some('[' | '(')) => format!("(*{hole})"),
            Layer::Pointer => format!("*{hole}"),
            Layer::Array(count) => format!("{hole}[{count}]"),
        };
        text.replace_range(at..at + NAME_HOLE.len_utf8(), &wrapped);
    }
    text.replace(NAME_HOLE, "").trim_end().to_string()
}

/// A declaration of `name` with a type's declarator parts: `int x`,
/// `char *s`, `int a[3]`, `int (*f)(void)`.
fn declare(base: &str, suffix: &str, name: &str) -> String {
    if name.is_empty() {
        return join_declarator(base, suffix);
    }
    // A pointer to an array or function: the name goes inside `(*)`.
    if suffix.starts_with('(') {
        if let Some(close) = suffix.find(')') {
            if suffix[1..close].chars().all(|c| matches!(c, '*' | '&')) {
                return format!("{base} {}{name}{}", &suffix[..close], &suffix[close..]);
            }
        }
    }
    if base.ends_with('*') || base.ends_with('&') {
        format!("{base}{name}{suffix}")
    } else {
        format!("{base} {name}{suffix}")
    }
}

/// gdb's enumerator list: a value is written only where it is not the
/// previous one plus one (the first is expected to be 0).
fn enumerator_list(enumerators: &[(String, i64)]) -> String {
    let mut expected = 0i64;
    let parts: Vec<String> = enumerators
        .iter()
        .map(|(name, value)| {
            let part = if *value == expected {
                name.clone()
            } else {
                format!("{name} = {value}")
            };
            expected = value.wrapping_add(1);
            part
        })
        .collect();
    parts.join(", ")
}

/// gdb's rendering of a value of a "flag enum" (enumerators that are
/// non-negative and share no bits) that is no single enumerator:
/// `(F_A | F_C)`, `(F_A | unknown: 0x8)`. `None` for other enums and 0.
fn flag_names(enumerators: &[(String, i64)], value: i64) -> Option<String> {
    let mut seen = 0i64;
    for (_, v) in enumerators {
        if *v < 0 || seen & v != 0 {
            return None;
        }
        seen |= v;
    }
    if value == 0 {
        return None;
    }
    let mut parts = Vec::new();
    let mut rest = value;
    for (name, v) in enumerators {
        if *v != 0 && value & v == *v {
            parts.push(name.clone());
            rest &= !v;
        }
    }
    if rest != 0 {
        parts.push(format!("unknown: 0x{rest:x}"));
    }
    Some(format!("({})", parts.join(" | ")))
}

/// A DWARF type that outlives the lookup that found it, so that values can
/// carry their type through an expression (`*pp`, `p.x`, `&a[1]`, casts).
/// `layers` derive types no DIE describes from the DIE's type: pointers
/// (`&x`, `(struct point *)p`) and arrays (gdb's `*p@3`, the `int [3]`
/// rows of an `int [2][3]`).
#[derive(Clone)]
pub struct TypeRef {
    units: Arc<Units>,
    /// The language of the unit the value comes from.
    language: Option<gimli::DwLang>,
    /// `None` is `void`.
    offset: Option<DieRef>,
    /// Applied to the DIE's type in order: the last is the outermost.
    layers: Vec<Layer>,
}

/// One derivation of a [`TypeRef`] from the type below it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Layer {
    Pointer,
    /// An array of this many elements.
    Array(u64),
}

/// Most array layers one type may have (`x@2@2@2...`): decoding and
/// printing recurse on them.
pub(crate) const MAX_ARRAY_LAYERS: usize = 32;

/// Most pointer layers, as many as a cast can write.
const MAX_POINTER_LAYERS: usize = 255;

impl std::fmt::Debug for TypeRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TypeRef({})", self.name())
    }
}

impl PartialEq for TypeRef {
    fn eq(&self, other: &TypeRef) -> bool {
        Arc::ptr_eq(&self.units, &other.units)
            && self.offset == other.offset
            && self.layers == other.layers
    }
}

/// What kind of type a [`TypeRef`] is once typedefs are stripped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TypeKind {
    Void,
    Scalar,
    Pointer,
    Struct,
    Array,
    Function,
}

/// A member found by name: where it is and what it is.
pub(crate) struct MemberRef {
    /// From the start of the structure it was looked up in.
    pub(crate) offset: u64,
    pub(crate) ty: TypeRef,
    /// Where its bits are, for a bitfield (from the same start).
    pub(crate) bitfield: Option<Bitfield>,
}

/// Memory reads for decoding outside a frame view (pointees in expressions).
struct MemoryOnly<'a>(&'a dyn Fn(u64, &mut [u8]) -> Result<()>);

impl FrameContext for MemoryOnly<'_> {
    fn read_memory(&self, addr: u64, buf: &mut [u8]) -> Result<()> {
        (self.0)(addr, buf)
    }
    fn register(&self, _: u16) -> Option<u64> {
        None
    }
    fn cfa(&self) -> Option<u64> {
        None
    }
    fn load_bias(&self) -> u64 {
        0
    }
}

impl TypeRef {
    /// The type at `offset` of a value of unit `cu`.
    pub(crate) fn new(units: Arc<Units>, cu: &CuData, offset: Option<DieRef>) -> TypeRef {
        TypeRef {
            units,
            language: cu.language,
            offset,
            layers: Vec::new(),
        }
    }

    fn types<'t>(
        &'t self,
        frame: Option<&'t dyn FrameContext>,
        symbolizer: &'t dyn Fn(u64) -> Option<String>,
    ) -> Types<'t> {
        Types {
            units: &self.units,
            language: self.language,
            frame,
            symbolizer,
        }
    }

    fn with<T>(&self, f: impl FnOnce(&Types) -> T) -> T {
        let none = |_| None;
        f(&self.types(None, &none))
    }

    fn at(&self, offset: Option<DieRef>) -> TypeRef {
        TypeRef {
            offset,
            layers: Vec::new(),
            ..self.clone()
        }
    }

    fn with_layer(&self, layer: Layer) -> TypeRef {
        let mut derived = self.clone();
        derived.layers.push(layer);
        derived
    }

    /// The type this one is derived from by its outermost layer.
    fn without_outer_layer(&self) -> TypeRef {
        let mut inner = self.clone();
        inner.layers.pop();
        inner
    }

    fn outer_layer(&self) -> Option<Layer> {
        self.layers.last().copied()
    }

    fn count_layers(&self, kind: fn(&Layer) -> bool) -> usize {
        self.layers.iter().filter(|l| kind(l)).count()
    }

    /// The type `T *` for this `T` (pointers beyond what a cast can write
    /// stay as they are).
    pub fn pointer_to(&self) -> TypeRef {
        if self.count_layers(|l| *l == Layer::Pointer) >= MAX_POINTER_LAYERS {
            return self.clone();
        }
        self.with_layer(Layer::Pointer)
    }

    /// The type `T [count]` for this `T`; `None` when arrays would nest
    /// deeper than [`MAX_ARRAY_LAYERS`].
    pub(crate) fn array_of(&self, count: u64) -> Option<TypeRef> {
        let arrays = self.count_layers(|l| matches!(l, Layer::Array(_)));
        (arrays < MAX_ARRAY_LAYERS).then(|| self.with_layer(Layer::Array(count)))
    }

    /// The gdb-style name, as `whatis` prints it.
    pub fn name(&self) -> String {
        if self.layers.is_empty() {
            return self.with(|t| t.name(self.offset));
        }
        let (base, suffix) = self.with(|t| t.name_parts(self.offset, 0));
        derived_declaration(&base, &suffix, &self.layers)
    }

    /// The type as gdb's `ptype` prints it (after `type = `).
    pub fn expanded(&self) -> String {
        if self.layers.is_empty() {
            return self.with(|t| t.expanded(self.offset));
        }
        let (base, suffix) = self.with(|t| t.expanded_parts(self.offset));
        derived_declaration(&base, &suffix, &self.layers)
    }

    /// What `whatis` prints for a type named by itself: a typedef is
    /// resolved one level (`whatis point_t` is `struct point`).
    pub fn one_level(&self) -> String {
        if !self.layers.is_empty() {
            return self.name();
        }
        let inner = self.with(|t| {
            let at = self.offset?;
            let entry = t.entry(at)?;
            (entry.tag() == gimli::DW_TAG_typedef).then(|| t.name(t.type_of(at, &entry)))
        });
        inner.unwrap_or_else(|| self.name())
    }

    /// The type's size in bytes, when known.
    pub fn size(&self) -> Option<u64> {
        let mut elements = 1u64;
        for layer in self.layers.iter().rev() {
            match layer {
                Layer::Pointer => return elements.checked_mul(8),
                Layer::Array(count) => elements = elements.checked_mul(*count)?,
            }
        }
        self.with(|t| t.size(self.offset?))?.checked_mul(elements)
    }

    fn stripped_tag(&self) -> Option<(DieRef, gimli::DwTag)> {
        let offset = self.with(|t| t.strip(self.offset?))?;
        let tag = self.units.entry(offset)?.tag();
        Some((offset, tag))
    }

    pub(crate) fn kind(&self) -> TypeKind {
        match self.outer_layer() {
            Some(Layer::Pointer) => return TypeKind::Pointer,
            Some(Layer::Array(_)) => return TypeKind::Array,
            None => {}
        }
        match self.stripped_tag() {
            None => TypeKind::Void,
            Some((_, tag)) => match tag {
                gimli::DW_TAG_pointer_type
                | gimli::DW_TAG_reference_type
                | gimli::DW_TAG_rvalue_reference_type => TypeKind::Pointer,
                gimli::DW_TAG_structure_type
                | gimli::DW_TAG_class_type
                | gimli::DW_TAG_union_type => TypeKind::Struct,
                gimli::DW_TAG_array_type => TypeKind::Array,
                gimli::DW_TAG_subroutine_type | gimli::DW_TAG_subprogram => TypeKind::Function,
                gimli::DW_TAG_unspecified_type => TypeKind::Void,
                _ => TypeKind::Scalar,
            },
        }
    }

    /// What a pointer type points to (`None` when this is no pointer).
    pub(crate) fn pointee(&self) -> Option<TypeRef> {
        match self.outer_layer() {
            Some(Layer::Pointer) => return Some(self.without_outer_layer()),
            Some(Layer::Array(_)) => return None,
            None => {}
        }
        let (offset, tag) = self.stripped_tag()?;
        if !matches!(
            tag,
            gimli::DW_TAG_pointer_type
                | gimli::DW_TAG_reference_type
                | gimli::DW_TAG_rvalue_reference_type
        ) {
            return None;
        }
        let entry = self.units.entry(offset)?;
        Some(self.at(self.with(|t| t.type_of(offset, &entry))))
    }

    /// Whether this is a C++ reference (`T &`, `T &&`).
    pub(crate) fn is_reference(&self) -> bool {
        self.layers.is_empty()
            && matches!(
                self.stripped_tag(),
                Some((
                    _,
                    gimli::DW_TAG_reference_type | gimli::DW_TAG_rvalue_reference_type
                ))
            )
    }

    /// The element type and count of an array (outermost dimension): the
    /// element of an `int [2][3]` is an `int [3]`.
    pub fn element(&self) -> Option<(TypeRef, u64)> {
        match self.outer_layer() {
            Some(Layer::Array(count)) => return Some((self.without_outer_layer(), count)),
            Some(Layer::Pointer) => return None,
            None => {}
        }
        let (offset, tag) = self.stripped_tag()?;
        if tag != gimli::DW_TAG_array_type {
            return None;
        }
        let entry = self.units.entry(offset)?;
        let dims = self.with(|t| t.dimensions(offset));
        let (count, inner_dims) = dims.split_first()?;
        // The inner dimensions have no DIE of their own: array layers over
        // the element's DIE, the last dimension innermost.
        let mut element = self.at(self.with(|t| t.type_of(offset, &entry)));
        for dim in inner_dims.iter().rev() {
            element = element.array_of(*dim)?;
        }
        Some((element, *count))
    }

    /// A member of a struct or union, looking into anonymous members.
    pub(crate) fn member(&self, name: &str) -> Option<MemberRef> {
        if self.kind() != TypeKind::Struct {
            return None;
        }
        let (offset, _) = self.stripped_tag()?;
        self.member_in(offset, name, 0)
    }

    fn member_in(&self, parent: DieRef, name: &str, depth: usize) -> Option<MemberRef> {
        if depth > 8 {
            return None;
        }
        let unit = self.units.unit_of(parent)?;
        let mut tree = unit.entries_tree(Some(parent.offset)).ok()?;
        let root = tree.root().ok()?;
        let mut children = root.children();
        let mut anonymous = Vec::new();
        while let Ok(Some(child)) = children.next() {
            let e = child.entry();
            if e.tag() == gimli::DW_TAG_inheritance {
                // C++ base classes: their members are the class's too.
                let ty = self.with(|t| t.type_of(child_ref(parent, e), e));
                anonymous.push((member_offset(e).unwrap_or(0), ty));
                continue;
            }
            if e.tag() != gimli::DW_TAG_member {
                continue;
            }
            let start = member_offset(e).unwrap_or(0);
            let at = child_ref(parent, e);
            let member_name = self.with(|t| t.name_of(at, e));
            let ty = self.with(|t| t.type_of(at, e));
            match member_name {
                Some(n) if n == name => {
                    return Some(MemberRef {
                        offset: start,
                        ty: self.at(ty),
                        bitfield: self.with(|t| t.bitfield_position(at, e)),
                    })
                }
                None => anonymous.push((start, ty)),
                _ => {}
            }
        }
        for (start, ty) in anonymous {
            let stripped = self.with(|t| t.strip(ty?));
            let Some(inner) = stripped else { continue };
            if let Some(mut found) = self.member_in(inner, name, depth + 1) {
                found.offset += start;
                found.bitfield = match found.bitfield {
                    Some(bitfield) => Some(bitfield.shifted(start)?),
                    None => None,
                };
                return Some(found);
            }
        }
        None
    }

    /// Whether two types are the same once typedefs and qualifiers are
    /// seen through (`point_t` and `struct point`).
    pub(crate) fn same_as(&self, other: &TypeRef) -> bool {
        if self.layers != other.layers {
            return false;
        }
        let stripped = |t: &TypeRef| t.with(|types| t.offset.and_then(|o| types.strip(o)));
        if Arc::ptr_eq(&self.units, &other.units) {
            return stripped(self) == stripped(other);
        }
        // Types of different units: the same definition shows the same.
        self.expanded() == other.expanded()
    }

    /// The value of an enumerator of this enumeration type.
    pub(crate) fn enumerator(&self, name: &str) -> Option<i64> {
        if !self.layers.is_empty() {
            return None;
        }
        let (offset, tag) = self.stripped_tag()?;
        if tag != gimli::DW_TAG_enumeration_type {
            return None;
        }
        self.with(|t| t.enumerators(offset))
            .into_iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v)
    }

    /// A bitfield member's value out of its structure's bytes.
    pub(crate) fn decode_bitfield_member(
        &self,
        member: &MemberRef,
        struct_bytes: &[u8],
        known: Option<&[u8]>,
    ) -> Value {
        let Some(bitfield) = member.bitfield else {
            return Value::Unavailable("not a bitfield".into());
        };
        self.with(|t| t.decode_bitfield(member.ty.offset, struct_bytes, known, bitfield))
    }

    /// Decodes bytes of this type into a value, reading pointees (strings)
    /// through `read`; only the bits set in `known` (a mask per byte) are
    /// available, when it is given.
    pub(crate) fn decode_known(
        &self,
        bytes: &[u8],
        known: Option<&[u8]>,
        read: &dyn Fn(u64, &mut [u8]) -> Result<()>,
        symbolizer: &dyn Fn(u64) -> Option<String>,
    ) -> Value {
        let partly_known = known.is_some_and(|k| k.iter().any(|b| *b != 0xff));
        match self.outer_layer() {
            None => {
                let memory = MemoryOnly(read);
                let types = self.types(Some(&memory), symbolizer);
                types.decode_known(self.offset, bytes, known, 0)
            }
            Some(Layer::Pointer) if partly_known => Value::OptimizedOut,
            Some(Layer::Pointer) => self.decode_pointer(bytes, read, symbolizer),
            Some(Layer::Array(count)) => {
                if known.is_some_and(|k| k.iter().all(|b| *b == 0)) {
                    return Value::OptimizedOut;
                }
                self.decode_array(
                    count,
                    bytes,
                    known.filter(|_| partly_known),
                    read,
                    symbolizer,
                )
            }
        }
    }

    /// A pointer layer's value: the string a `char *` points to, the
    /// function a code pointer points to.
    fn decode_pointer(
        &self,
        bytes: &[u8],
        read: &dyn Fn(u64, &mut [u8]) -> Result<()>,
        symbolizer: &dyn Fn(u64) -> Option<String>,
    ) -> Value {
        let address = le_unsigned(bytes) as u64;
        let to_die = self.layers.len() == 1;
        let detail = if to_die && address != 0 && self.is_char() {
            let memory = MemoryOnly(read);
            let none = |_| None;
            let types = self.types(Some(&memory), &none);
            let text = types.read_c_string(address);
            Some(match symbolizer(address) {
                Some(symbol) => format!("<{symbol}> {text}"),
                None => text,
            })
        } else if address != 0 {
            // `&func`: a code pointer shows the function it points to;
            // `&var` the variable.
            symbolizer(address).map(|s| format!("<{s}>"))
        } else {
            None
        };
        Value::Pointer {
            address,
            type_name: self.name(),
            detail,
        }
    }

    /// An array layer's value, as gdb prints arrays: `{1, 2, 3}`, runs
    /// folded, at most [`ELEMENT_LIMIT`] elements, `char`s as a string.
    fn decode_array(
        &self,
        count: u64,
        bytes: &[u8],
        known: Option<&[u8]>,
        read: &dyn Fn(u64, &mut [u8]) -> Result<()>,
        symbolizer: &dyn Fn(u64) -> Option<String>,
    ) -> Value {
        let element = self.without_outer_layer();
        let size = element.size().unwrap_or(0) as usize;
        let shown = usize::try_from(count)
            .unwrap_or(usize::MAX)
            .min(ELEMENT_LIMIT);
        let elements: Vec<Value> = (0..shown)
            .map(|i| {
                let range = i * size..(i + 1) * size;
                match bytes.get(range.clone()) {
                    Some(slice) => {
                        let known = known.and_then(|k| k.get(range));
                        element.decode_known(slice, known, read, symbolizer)
                    }
                    None => Value::Unavailable("out of bounds".into()),
                }
            })
            .collect();
        let more = count > shown as u64;
        let strings = self.language != Some(gimli::DW_LANG_Rust);
        let text = if known.is_none() && strings && element.layers.is_empty() && element.is_char() {
            let end = usize::try_from(count)
                .unwrap_or(usize::MAX)
                .min(bytes.len());
            format_char_array(&bytes[..end])
        } else {
            let items: Vec<String> = elements.iter().map(Value::to_string).collect();
            let more_text = if more { "..." } else { "" };
            format!("{{{}{more_text}}}", compress_repeats(&items))
        };
        Value::Composite {
            type_name: self.name(),
            text,
            parts: Some(Box::new(Aggregate::Array { elements, more })),
        }
    }

    fn is_char(&self) -> bool {
        self.with(|t| t.is_char_type(self.offset))
    }

    /// Whether the type is a floating-point base type.
    pub(crate) fn is_float(&self) -> bool {
        self.layers.is_empty()
            && self.with(|t| {
                let Some(entry) = self
                    .offset
                    .and_then(|o| t.strip(o))
                    .and_then(|o| t.entry(o))
                else {
                    return false;
                };
                matches!(
                    entry.attr_value(gimli::DW_AT_encoding),
                    Ok(Some(AttributeValue::Encoding(gimli::DW_ATE_float)))
                )
            })
    }

    /// A named type of this type's program: this unit first, then every
    /// unit. `name` is as C spells it (`struct point`, `unsigned int`,
    /// `mytypedef`).
    pub(crate) fn lookup(&self, name: &str) -> Option<TypeRef> {
        let home = self.offset.map(|o| o.unit);
        let units = home.into_iter().chain(
            self.units
                .starts()
                .iter()
                .copied()
                .filter(|u| Some(*u) != home),
        );
        for unit in units {
            let Some(cu) = self.units.cu(unit) else {
                continue;
            };
            if let Some(offset) = find_named_type(self.units.dwarf(), &cu.unit, name) {
                return Some(self.at(Some(DieRef { unit, offset })));
            }
        }
        None
    }
}

/// Splits `struct point` into its tag and name; plain names have no tag.
fn tag_and_name(name: &str) -> (Option<gimli::DwTag>, &str) {
    for (keyword, tag) in [
        ("struct ", gimli::DW_TAG_structure_type),
        ("union ", gimli::DW_TAG_union_type),
        ("enum ", gimli::DW_TAG_enumeration_type),
        ("class ", gimli::DW_TAG_class_type),
    ] {
        if let Some(rest) = name.strip_prefix(keyword) {
            return (Some(tag), rest.trim());
        }
    }
    (None, name)
}

/// The first complete type DIE of `unit` named `name`.
pub(crate) fn find_named_type(
    dwarf: &gimli::Dwarf<R>,
    unit: &gimli::Unit<R>,
    name: &str,
) -> Option<UnitOffset> {
    let (tag, bare) = tag_and_name(name);
    let mut entries = unit.entries();
    while let Ok(Some((_, entry))) = entries.next_dfs() {
        let wanted = match tag {
            Some(t) => entry.tag() == t,
            None => matches!(entry.tag(), gimli::DW_TAG_base_type | gimli::DW_TAG_typedef),
        };
        if !wanted
            || entry
                .attr_value(gimli::DW_AT_declaration)
                .ok()
                .flatten()
                .is_some()
        {
            continue;
        }
        let found = super::dwarf::die_string(dwarf, unit, entry, gimli::DW_AT_name);
        if found.as_deref() == Some(bare)
            || (tag.is_none() && found.as_deref().is_some_and(|f| same_base_type(f, bare)))
        {
            return Some(entry.offset());
        }
    }
    if tag.is_none() {
        return super::lang::type_named(dwarf, unit, bare);
    }
    None
}

/// `unsigned` and `unsigned int`, `long` and `long int`...: the spellings
/// C allows for one base type.
fn same_base_type(dwarf_name: &str, wanted: &str) -> bool {
    canonical_base_name(dwarf_name) == canonical_base_name(wanted)
}

fn canonical_base_name(name: &str) -> String {
    let mut words: Vec<&str> = name.split_whitespace().collect();
    let has_int_partner = words
        .iter()
        .any(|w| matches!(*w, "short" | "long" | "unsigned" | "signed"));
    if has_int_partner && words.len() > 1 {
        words.retain(|w| *w != "int");
    }
    if words == ["unsigned"] || words == ["signed"] {
        words.push("int");
    }
    if words.first() == Some(&"signed") && words.len() > 1 && words[1] != "char" {
        words.remove(0);
    }
    words.sort_unstable();
    words.join(" ")
}

pub(crate) fn member_offset(member: &Die) -> Option<u64> {
    match member
        .attr_value(gimli::DW_AT_data_member_location)
        .ok()??
    {
        AttributeValue::Exprloc(expr) => {
            // gcc's old style: DW_OP_plus_uconst N.
            let mut ops = expr.operations(gimli::Encoding {
                format: gimli::Format::Dwarf32,
                version: 4,
                address_size: 8,
            });
            match ops.next().ok()?? {
                gimli::Operation::PlusConstant { value } => Some(value),
                _ => None,
            }
        }
        other => other.udata_value(),
    }
}

fn decode_float(bytes: &[u8]) -> f64 {
    match bytes.len() {
        4 => f64::from(f32::from_le_bytes(bytes.try_into().unwrap_or([0; 4]))),
        8 => f64::from_le_bytes(bytes.try_into().unwrap_or([0; 8])),
        10 | 12 | 16 => x87_extended_to_f64(bytes),
        _ => 0.0,
    }
}

/// The x87 80-bit format of `long double`, rounded to a double.
fn x87_extended_to_f64(bytes: &[u8]) -> f64 {
    let mantissa = le_unsigned(&bytes[..8]) as u64;
    let se = u16::from_le_bytes([bytes[8], bytes[9]]);
    let sign = if se & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exponent = i32::from(se & 0x7fff);
    if exponent == 0 && mantissa == 0 {
        return 0.0 * sign;
    }
    if exponent == 0x7fff {
        return if mantissa << 1 == 0 {
            sign * f64::INFINITY
        } else {
            f64::NAN
        };
    }
    sign * (mantissa as f64) * 2f64.powi(exponent - 16383 - 63)
}

/// Escape one byte inside a double-quoted gdb string.
fn escape_in_string(b: u8) -> String {
    match b {
        b'"' => "\\\"".into(),
        b'\\' => "\\\\".into(),
        b'\n' => "\\n".into(),
        b'\t' => "\\t".into(),
        b'\r' => "\\r".into(),
        0x07 => "\\a".into(),
        0x08 => "\\b".into(),
        0x0c => "\\f".into(),
        0x0b => "\\v".into(),
        0x1b => "\\033".into(),
        0x20..=0x7e => (b as char).to_string(),
        _ => format!("\\{b:03o}"),
    }
}

/// gdb's rendering of a character sequence: quoted runs, with runs of more
/// than ten equal characters as `'c' <repeats N times>`.
pub(crate) fn format_char_sequence(bytes: &[u8]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut quoted = String::new();
    let mut i = 0;
    while i < bytes.len() {
        let run = bytes[i..].iter().take_while(|&&b| b == bytes[i]).count();
        if run > REPEAT_THRESHOLD {
            if !quoted.is_empty() {
                parts.push(format!("\"{quoted}\""));
                quoted.clear();
            }
            parts.push(format!(
                "{} <repeats {run} times>",
                char_literal(i64::from(bytes[i]))
            ));
            i += run;
        } else {
            quoted.push_str(&escape_in_string(bytes[i]));
            i += 1;
        }
    }
    if !quoted.is_empty() || parts.is_empty() {
        parts.push(format!("\"{quoted}\""));
    }
    parts.join(", ")
}

/// A `char[N]` as gdb prints it: the whole array, minus one trailing NUL.
pub(crate) fn format_char_array(bytes: &[u8]) -> String {
    let shown = match bytes.last() {
        Some(0) => &bytes[..bytes.len() - 1],
        _ => bytes,
    };
    // gdb stops at the first NUL when everything after it is NUL too...
    // but prints them as repeats; keep the simple, faithful form.
    let limited = &shown[..shown.len().min(ELEMENT_LIMIT)];
    let mut text = format_char_sequence(limited);
    if shown.len() > ELEMENT_LIMIT {
        text.push_str("...");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_escape_and_fold_like_gdb() {
        assert_eq!(format_char_sequence(b"hi\n\"x\""), "\"hi\\n\\\"x\\\"\"");
        assert_eq!(format_char_sequence(&[0x01, b'a']), "\"\\001a\"");
        let mut long = b"ab".to_vec();
        long.extend([b'z'; 12]);
        assert_eq!(
            format_char_sequence(&long),
            "\"ab\", 'z' <repeats 12 times>"
        );
        assert_eq!(format_char_array(b"hi\0\0\0"), "\"hi\\000\\000\"");
        let mut buf = b"hi".to_vec();
        buf.extend([0u8; 20]);
        assert_eq!(
            format_char_array(&buf),
            "\"hi\", '\\000' <repeats 19 times>"
        );
    }

    #[test]
    fn flag_enums_show_their_parts() {
        let flags = [
            ("F_A".to_string(), 1),
            ("F_B".to_string(), 2),
            ("F_C".to_string(), 4),
        ];
        assert_eq!(flag_names(&flags, 5).as_deref(), Some("(F_A | F_C)"));
        assert_eq!(
            flag_names(&flags, 9).as_deref(),
            Some("(F_A | unknown: 0x8)")
        );
        assert_eq!(flag_names(&flags, 8).as_deref(), Some("(unknown: 0x8)"));
        assert_eq!(flag_names(&flags, 0), None);
        let plain = [
            ("RED".to_string(), 0),
            ("GREEN".to_string(), 1),
            ("BLUE".to_string(), 2),
            ("X".to_string(), 3),
        ];
        assert_eq!(flag_names(&plain, 7), None);
        let negative = [("N".to_string(), -1)];
        assert_eq!(flag_names(&negative, 4), None);
    }

    #[test]
    fn declarations_put_the_name_in_place() {
        assert_eq!(declare("int", "", "x"), "int x");
        assert_eq!(declare("struct node *", "", "next"), "struct node *next");
        assert_eq!(declare("int", "[3]", "counts"), "int counts[3]");
        assert_eq!(
            declare("int", "(*)(int, int)", "area"),
            "int (*area)(int, int)"
        );
        assert_eq!(join_declarator("int", "(*)(void)"), "int (*)(void)");
        let e = |n: &str, v| (n.to_string(), v);
        assert_eq!(
            enumerator_list(&[e("A", 1), e("B", 2), e("C", 4)]),
            "A = 1, B, C = 4"
        );
        assert_eq!(enumerator_list(&[e("R", 0), e("G", 1)]), "R, G");
    }

    #[test]
    fn base_type_spellings_match() {
        assert!(same_base_type("long unsigned int", "unsigned long"));
        assert!(same_base_type("int", "signed"));
        assert!(same_base_type("unsigned int", "unsigned"));
        assert!(!same_base_type("char", "unsigned char"));
        assert!(same_base_type("long int", "long"));
    }

    #[test]
    fn integers_sign_extend() {
        assert_eq!(le_signed(&[0xff]), -1);
        assert_eq!(le_signed(&[0xfe, 0xff, 0xff, 0xff]), -2);
        assert_eq!(le_unsigned(&[0xff, 0x01]), 0x1ff);
        assert_eq!(decode_float(&1.5f32.to_le_bytes()), 1.5);
    }
}
