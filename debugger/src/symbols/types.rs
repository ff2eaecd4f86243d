//! DWARF types: gdb-style names, sizes, and decoding bytes into `Value`s.

use gimli::{AttributeValue, UnitOffset};

use super::{FrameContext, R};
use crate::value::{char_literal, Value};

/// Longest string or element list shown, as gdb's default `print elements`.
pub(crate) const ELEMENT_LIMIT: usize = 200;
/// Runs longer than this print as `<repeats N times>` (gdb's threshold).
const REPEAT_THRESHOLD: usize = 10;
/// How deep nested aggregates are expanded.
const MAX_DEPTH: usize = 4;

type Die<'a> = gimli::DebuggingInformationEntry<'a, 'a, R>;

pub(crate) struct Types<'a> {
    pub(crate) dwarf: &'a gimli::Dwarf<R>,
    pub(crate) unit: &'a gimli::Unit<R>,
    pub(crate) language: Option<gimli::DwLang>,
    /// For `char *` strings; `None` when decoding registers only.
    pub(crate) frame: Option<&'a dyn FrameContext>,
    /// The `<symbol>` shown after code pointers (runtime address in).
    pub(crate) symbolizer: &'a dyn Fn(u64) -> Option<String>,
}

fn udata(entry: &Die, name: gimli::DwAt) -> Option<u64> {
    entry.attr_value(name).ok()??.udata_value()
}

fn type_ref(entry: &Die) -> Option<UnitOffset> {
    match entry.attr_value(gimli::DW_AT_type).ok()?? {
        AttributeValue::UnitRef(o) => Some(o),
        _ => None,
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
    fn entry(&self, offset: UnitOffset) -> Option<Die<'a>> {
        self.unit.entry(offset).ok()
    }

    fn name_of(&self, entry: &Die) -> Option<String> {
        super::dwarf::die_string(self.dwarf, self.unit, entry, gimli::DW_AT_name)
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
    pub(crate) fn strip(&self, mut offset: UnitOffset) -> Option<UnitOffset> {
        for _ in 0..32 {
            let entry = self.entry(offset)?;
            match entry.tag() {
                gimli::DW_TAG_typedef
                | gimli::DW_TAG_const_type
                | gimli::DW_TAG_volatile_type
                | gimli::DW_TAG_restrict_type
                | gimli::DW_TAG_atomic_type => offset = type_ref(&entry)?,
                _ => return Some(offset),
            }
        }
        None
    }

    pub(crate) fn size(&self, offset: UnitOffset) -> Option<u64> {
        let entry = self.entry(offset)?;
        if let Some(size) = udata(&entry, gimli::DW_AT_byte_size) {
            return Some(size);
        }
        match entry.tag() {
            gimli::DW_TAG_pointer_type
            | gimli::DW_TAG_reference_type
            | gimli::DW_TAG_rvalue_reference_type => Some(8),
            gimli::DW_TAG_array_type => {
                let element = self.size(type_ref(&entry)?)?;
                Some(self.dimensions(offset).iter().product::<u64>() * element)
            }
            _ => self.size(type_ref(&entry)?),
        }
    }

    fn dimensions(&self, array: UnitOffset) -> Vec<u64> {
        let mut dims = Vec::new();
        let Ok(mut tree) = self.unit.entries_tree(Some(array)) else {
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
    pub(crate) fn name(&self, offset: Option<UnitOffset>) -> String {
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
    fn name_parts(&self, offset: Option<UnitOffset>, depth: usize) -> (String, String) {
        let Some(offset) = offset else {
            return ("void".into(), String::new());
        };
        let Some(entry) = self.entry(offset) else {
            return ("<unknown type>".into(), String::new());
        };
        if depth > 16 {
            return ("...".into(), String::new());
        }
        let inner = type_ref(&entry);
        match entry.tag() {
            gimli::DW_TAG_pointer_type
            | gimli::DW_TAG_reference_type
            | gimli::DW_TAG_rvalue_reference_type => {
                let sigil = match entry.tag() {
                    gimli::DW_TAG_pointer_type => "*",
                    gimli::DW_TAG_reference_type => "&",
                    _ => "&&",
                };
                if let Some(name) = self.name_of(&entry) {
                    // Rust names its pointer types (`&str`, `*const u8`).
                    if !self.is_c() {
                        return (name, String::new());
                    }
                }
                let (base, suffix) = self.name_parts(inner, depth + 1);
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
                let (base, suffix) = self.name_parts(inner, depth + 1);
                if base.ends_with('*') {
                    (format!("{base} {qual}"), suffix)
                } else {
                    (format!("{qual} {base}"), suffix)
                }
            }
            gimli::DW_TAG_array_type => {
                let (base, suffix) = self.name_parts(inner, depth + 1);
                let dims: String = self
                    .dimensions(offset)
                    .iter()
                    .map(|d| format!("[{d}]"))
                    .collect();
                (base, format!("{dims}{suffix}"))
            }
            gimli::DW_TAG_subroutine_type => {
                let (ret, _) = self.name_parts(inner, depth + 1);
                (ret, format!("({})", self.parameter_list(offset)))
            }
            tag => {
                let name = self.name_of(&entry).unwrap_or_else(|| "<anonymous>".into());
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

    fn parameter_list(&self, offset: UnitOffset) -> String {
        let mut params = Vec::new();
        let Ok(mut tree) = self.unit.entries_tree(Some(offset)) else {
            return String::new();
        };
        let Ok(root) = tree.root() else {
            return String::new();
        };
        let mut children = root.children();
        while let Ok(Some(child)) = children.next() {
            match child.entry().tag() {
                gimli::DW_TAG_formal_parameter => {
                    params.push(self.name(type_ref(child.entry())));
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

    /// Decode `bytes` (exactly the type's size, when known) as the type.
    pub(crate) fn decode(&self, offset: Option<UnitOffset>, bytes: &[u8], depth: usize) -> Value {
        let type_name = self.name(offset);
        let Some(stripped) = offset.and_then(|o| self.strip(o)) else {
            return Value::Unavailable("no type".into());
        };
        let Some(entry) = self.entry(stripped) else {
            return Value::Unavailable("bad type".into());
        };
        match entry.tag() {
            gimli::DW_TAG_base_type => self.decode_base(&entry, bytes, type_name),
            gimli::DW_TAG_pointer_type
            | gimli::DW_TAG_reference_type
            | gimli::DW_TAG_rvalue_reference_type => {
                let address = le_unsigned(bytes) as u64;
                let detail = self.pointer_detail(type_ref(&entry), address);
                Value::Pointer {
                    address,
                    type_name,
                    detail,
                }
            }
            gimli::DW_TAG_enumeration_type => self.decode_enum(stripped, &entry, bytes, type_name),
            gimli::DW_TAG_structure_type | gimli::DW_TAG_class_type | gimli::DW_TAG_union_type => {
                Value::Composite {
                    text: self.render_struct(stripped, bytes, depth),
                    type_name,
                }
            }
            gimli::DW_TAG_array_type => Value::Composite {
                text: self.render_array(stripped, &entry, bytes, depth),
                type_name,
            },
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

    fn decode_enum(
        &self,
        offset: UnitOffset,
        entry: &Die,
        bytes: &[u8],
        type_name: String,
    ) -> Value {
        let signed = type_ref(entry)
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
        let mut name = None;
        if let Ok(mut tree) = self.unit.entries_tree(Some(offset)) {
            if let Ok(root) = tree.root() {
                let mut children = root.children();
                while let Ok(Some(child)) = children.next() {
                    let e = child.entry();
                    let Some(v) = e.attr_value(gimli::DW_AT_const_value).ok().flatten() else {
                        continue;
                    };
                    let v = v.sdata_value().or(v.udata_value().map(|u| u as i64));
                    if v == Some(value) {
                        name = self.name_of(e);
                        break;
                    }
                }
            }
        }
        Value::Enum {
            value,
            name,
            type_name,
        }
    }

    /// What gdb shows after a pointer: a string for `char *`, `<symbol>`
    /// for code pointers.
    fn pointer_detail(&self, pointee: Option<UnitOffset>, address: u64) -> Option<String> {
        let stripped = pointee.and_then(|p| self.strip(p))?;
        let entry = self.entry(stripped)?;
        match entry.tag() {
            gimli::DW_TAG_subroutine_type => (self.symbolizer)(address).map(|s| format!("<{s}>")),
            gimli::DW_TAG_base_type if address != 0 => {
                let enc = match entry.attr_value(gimli::DW_AT_encoding) {
                    Ok(Some(AttributeValue::Encoding(e))) => e,
                    _ => return None,
                };
                let is_char =
                    matches!(enc, gimli::DW_ATE_signed_char | gimli::DW_ATE_unsigned_char)
                        && udata(&entry, gimli::DW_AT_byte_size) == Some(1);
                if !is_char || !self.is_c_like_strings() {
                    return None;
                }
                Some(self.read_c_string(address))
            }
            _ => None,
        }
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

    fn render_struct(&self, offset: UnitOffset, bytes: &[u8], depth: usize) -> String {
        if depth >= MAX_DEPTH {
            return "{...}".into();
        }
        let mut fields = Vec::new();
        let Ok(mut tree) = self.unit.entries_tree(Some(offset)) else {
            return "{}".into();
        };
        let Ok(root) = tree.root() else {
            return "{}".into();
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
            let member_type = type_ref(e);
            let start = member_offset(e).unwrap_or(0) as usize;
            let size = member_type.and_then(|t| self.size(t)).unwrap_or(0) as usize;
            let value = match bytes.get(start..start + size) {
                Some(slice) => match udata(e, gimli::DW_AT_bit_size) {
                    Some(bits) => self.decode_bitfield(e, member_type, bytes, bits),
                    None => self.decode(member_type, slice, depth + 1),
                },
                None => Value::Unavailable("out of bounds".into()),
            };
            let name = if e.tag() == gimli::DW_TAG_inheritance {
                format!("<{}>", self.name(member_type))
            } else {
                self.name_of(e).unwrap_or_default()
            };
            if name.is_empty() {
                fields.push(value.to_string());
            } else {
                fields.push(format!("{name} = {value}"));
            }
        }
        format!("{{{}}}", fields.join(", "))
    }

    fn decode_bitfield(
        &self,
        member: &Die,
        member_type: Option<UnitOffset>,
        bytes: &[u8],
        bits: u64,
    ) -> Value {
        let bit_offset = udata(member, gimli::DW_AT_data_bit_offset)
            .unwrap_or_else(|| member_offset(member).unwrap_or(0) * 8);
        let whole = le_unsigned(bytes);
        let raw = (whole >> bit_offset.min(127)) & ((1u128 << bits.min(127)) - 1);
        let signed = member_type
            .and_then(|t| self.strip(t))
            .and_then(|t| self.entry(t))
            .is_some_and(|t| {
                matches!(
                    t.attr_value(gimli::DW_AT_encoding),
                    Ok(Some(AttributeValue::Encoding(gimli::DW_ATE_signed)))
                )
            });
        let value = if signed && bits > 0 && raw >> (bits - 1) & 1 == 1 {
            raw as i128 - (1i128 << bits)
        } else {
            raw as i128
        };
        let size = member_type.and_then(|t| self.size(t)).unwrap_or(4) as usize;
        let mut buf = value.to_le_bytes().to_vec();
        buf.truncate(size);
        self.decode(member_type, &buf, MAX_DEPTH)
    }

    fn render_array(&self, offset: UnitOffset, entry: &Die, bytes: &[u8], depth: usize) -> String {
        let element_type = type_ref(entry);
        let element_size = element_type.and_then(|t| self.size(t)).unwrap_or(0) as usize;
        let dims = self.dimensions(offset);
        if element_size == 0 || dims.is_empty() {
            return "{}".into();
        }
        if dims.len() == 1 && self.is_char_type(element_type) && self.is_c_like_strings() {
            let n = (dims[0] as usize).min(bytes.len());
            return format_char_array(&bytes[..n]);
        }
        self.render_dims(element_type, element_size, &dims, bytes, depth)
    }

    fn render_dims(
        &self,
        element_type: Option<UnitOffset>,
        element_size: usize,
        dims: &[u64],
        bytes: &[u8],
        depth: usize,
    ) -> String {
        let count = dims[0] as usize;
        let stride = element_size * dims[1..].iter().product::<u64>() as usize;
        let items: Vec<String> = (0..count.min(ELEMENT_LIMIT))
            .map(|i| {
                let slice = bytes.get(i * stride..(i + 1) * stride).unwrap_or(&[]);
                if dims.len() > 1 {
                    self.render_dims(element_type, element_size, &dims[1..], slice, depth + 1)
                } else {
                    self.decode(element_type, slice, depth + 1).to_string()
                }
            })
            .collect();
        let mut text = compress_repeats(&items);
        if count > ELEMENT_LIMIT {
            text.push_str("...");
        }
        format!("{{{text}}}")
    }

    fn is_char_type(&self, offset: Option<UnitOffset>) -> bool {
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

fn member_offset(member: &Die) -> Option<u64> {
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

/// Element lists with runs of equal elements folded like gdb.
fn compress_repeats(items: &[String]) -> String {
    let mut out = Vec::new();
    let mut i = 0;
    while i < items.len() {
        let run = items[i..].iter().take_while(|s| **s == items[i]).count();
        if run > REPEAT_THRESHOLD {
            out.push(format!("{} <repeats {run} times>", items[i]));
            i += run;
        } else {
            out.push(items[i].clone());
            i += 1;
        }
    }
    out.join(", ")
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
    fn element_runs_fold() {
        let items: Vec<String> = std::iter::repeat_n("0".to_string(), 12).collect();
        assert_eq!(compress_repeats(&items), "0 <repeats 12 times>");
        let items = vec!["1".to_string(), "2".to_string()];
        assert_eq!(compress_repeats(&items), "1, 2");
    }

    #[test]
    fn integers_sign_extend() {
        assert_eq!(le_signed(&[0xff]), -1);
        assert_eq!(le_signed(&[0xfe, 0xff, 0xff, 0xff]), -2);
        assert_eq!(le_unsigned(&[0xff, 0x01]), 0x1ff);
        assert_eq!(decode_float(&1.5f32.to_le_bytes()), 1.5);
    }
}
