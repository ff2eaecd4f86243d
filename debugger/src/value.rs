//! Values read from the target, as the expression evaluator and `print`
//! see them. Formatting follows gdb so that results can be compared with it.

use std::fmt;

/// A value of the target program. Base types are fully represented; other
/// aggregates are carried as already-rendered text until the data-inspection
/// work gives them a structure of their own.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// Any integer type other than char and bool.
    Integer {
        value: i128,
        size: u8,
        signed: bool,
        type_name: String,
    },
    /// `char`, `signed char`, `unsigned char` (and wider character types).
    Char {
        value: i64,
        size: u8,
        type_name: String,
    },
    Bool(bool),
    Float {
        value: f64,
        size: u8,
        type_name: String,
    },
    /// A pointer; `detail` is what gdb shows after the address, for example
    /// `"hello"` for a `char *` or `<main>` for a code pointer.
    Pointer {
        address: u64,
        type_name: String,
        detail: Option<String>,
    },
    Enum {
        value: i64,
        name: Option<String>,
        type_name: String,
    },
    /// Structures, unions and arrays: `text` is how `print` shows them,
    /// `parts` their members or elements with their own types (what the
    /// print formats walk), when the reader decoded them.
    Composite {
        type_name: String,
        text: String,
        parts: Option<Box<Aggregate>>,
    },
    OptimizedOut,
    Unavailable(String),
    /// A value with its DWARF type and the bytes it was decoded from, so
    /// that expressions can go on from it (`*p`, `s.x`, `a[1]`, `&v`).
    /// Only the evaluator and variable reads make these; `expr::evaluate`
    /// hands out the plain value ([`Value::into_plain`]).
    Typed(Box<Typed>),
}

/// The members or elements of a [`Value::Composite`].
#[derive(Debug, Clone, PartialEq)]
pub enum Aggregate {
    /// Structure or union members in order; the name is empty for an
    /// anonymous member and `<base>` for a C++ base class.
    Struct(Vec<(String, Value)>),
    /// Array elements (at most the element limit); `more` when the array
    /// has elements beyond those.
    Array { elements: Vec<Value>, more: bool },
}

/// The typed form of a value (see [`Value::Typed`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Typed {
    /// The value as shown.
    pub value: Value,
    pub(crate) ty: crate::symbols::TypeRef,
    /// The bytes it was decoded from.
    pub(crate) bytes: Vec<u8>,
    /// Per byte, the mask of its bits that are known, when some are
    /// optimized out (an object assembled from DWARF pieces).
    pub(crate) known: Option<Vec<u8>>,
    /// Where it lives in the program's memory, when it does.
    pub address: Option<u64>,
    /// The DWARF register it lives in (a variable's location), when it
    /// does.
    pub register: Option<u16>,
    /// For a pointer the compiler optimized away (gdb's `<synthetic
    /// pointer>`): what it points to.
    pub(crate) synthetic: Option<Box<SyntheticTarget>>,
    /// The type's name when the value is `<optimized out>` or otherwise
    /// absent and so cannot say it itself (for `whatis`).
    pub(crate) absent_type_name: Option<String>,
}

impl Typed {
    /// What [`Typed::absent_type_name`] holds for `value` of type `ty`.
    pub(crate) fn absent_name(value: &Value, ty: &crate::symbols::TypeRef) -> Option<String> {
        matches!(value, Value::OptimizedOut | Value::Unavailable(_)).then(|| ty.name())
    }
}

/// The object a synthetic pointer points into, and where in it.
#[derive(Debug, Clone, PartialEq)]
pub struct SyntheticTarget {
    /// The target variable's value (typed, or `<optimized out>`).
    pub(crate) object: Value,
    /// Byte offset of the pointer into the object.
    pub(crate) offset: i64,
}

impl Value {
    /// An `int`-typed integer, the type of C integer literals and comparisons.
    pub fn int(value: i128) -> Value {
        Value::Integer {
            value,
            size: 4,
            signed: true,
            type_name: "int".to_string(),
        }
    }

    /// The value's DWARF type, when it carries one ([`Value::Typed`]).
    pub fn type_ref(&self) -> Option<&crate::symbols::TypeRef> {
        match self {
            Value::Typed(typed) => Some(&typed.ty),
            _ => None,
        }
    }

    /// The value without its type information.
    pub fn plain(&self) -> &Value {
        match self {
            Value::Typed(typed) => typed.value.plain(),
            other => other,
        }
    }

    /// The value without its type information.
    pub fn into_plain(self) -> Value {
        match self {
            Value::Typed(typed) => typed.value.into_plain(),
            other => other,
        }
    }

    /// The value as an integer, if it has one (pointers give their address).
    pub fn as_integer(&self) -> Option<i128> {
        match self {
            Value::Typed(typed) => typed.value.as_integer(),
            Value::Integer { value, .. } => Some(*value),
            Value::Char { value, .. } | Value::Enum { value, .. } => Some(i128::from(*value)),
            Value::Bool(b) => Some(i128::from(*b)),
            Value::Pointer { address, .. } => Some(i128::from(*address)),
            Value::Float { value, .. } => Some(*value as i128),
            _ => None,
        }
    }

    /// The value as a floating-point number, if it is numeric.
    pub fn as_float(&self) -> Option<f64> {
        match self.plain() {
            Value::Float { value, .. } => Some(*value),
            other => other.as_integer().map(|i| i as f64),
        }
    }

    pub fn is_float(&self) -> bool {
        matches!(self.plain(), Value::Float { .. })
    }

    /// C truth: non-zero is true. `None` for values with no scalar meaning.
    pub fn is_true(&self) -> Option<bool> {
        match self.plain() {
            Value::Float { value, .. } => Some(*value != 0.0),
            other => other.as_integer().map(|i| i != 0),
        }
    }

    /// The name of the value's type, as gdb's `whatis` would print it.
    pub fn type_name(&self) -> &str {
        match self {
            Value::Integer { type_name, .. }
            | Value::Char { type_name, .. }
            | Value::Float { type_name, .. }
            | Value::Pointer { type_name, .. }
            | Value::Enum { type_name, .. }
            | Value::Composite { type_name, .. } => type_name,
            Value::Bool(_) => "bool",
            Value::Typed(typed) => match &typed.absent_type_name {
                Some(name) => name,
                None => typed.value.type_name(),
            },
            Value::OptimizedOut | Value::Unavailable(_) => "",
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Integer { value, .. } => write!(f, "{value}"),
            Value::Char { value, .. } => write!(f, "{value} {}", char_literal(*value)),
            Value::Bool(b) => write!(f, "{b}"),
            Value::Float { value, size, .. } => write!(f, "{}", format_float(*value, *size)),
            Value::Pointer {
                address, detail, ..
            } => match detail {
                Some(detail) => write!(f, "0x{address:x} {detail}"),
                None => write!(f, "0x{address:x}"),
            },
            Value::Enum { value, name, .. } => match name {
                Some(name) => f.write_str(name),
                None => write!(f, "{value}"),
            },
            Value::Composite { text, .. } => f.write_str(text),
            Value::OptimizedOut => f.write_str("<optimized out>"),
            Value::Unavailable(why) => write!(f, "<{why}>"),
            Value::Typed(typed) => typed.value.fmt(f),
        }
    }
}

/// Runs longer than this print as `<repeats N times>` (gdb's threshold).
pub(crate) const REPEAT_THRESHOLD: usize = 10;

impl Value {
    /// The value in one of gdb's print format letters (`x d u o t c a f
    /// z`), aggregates member by member, each member in its own size:
    /// `p/x` of a struct with a `short` of -2 shows `0xfffe`. As gdb 13
    /// does, the integer formats show a float's bits and `f` reads an
    /// integer's bits as a float of its size. `symbol` names addresses
    /// for `a`.
    pub fn format_as(&self, letter: char, symbol: &dyn Fn(u64) -> Option<String>) -> String {
        match self {
            Value::Typed(typed) => typed.value.format_as(letter, symbol),
            Value::Composite {
                parts: Some(parts), ..
            } => match parts.as_ref() {
                Aggregate::Struct(members) => {
                    let shown: Vec<String> = members
                        .iter()
                        .map(|(name, value)| {
                            let value = value.format_as(letter, symbol);
                            if name.is_empty() {
                                value
                            } else {
                                format!("{name} = {value}")
                            }
                        })
                        .collect();
                    format!("{{{}}}", shown.join(", "))
                }
                Aggregate::Array { elements, more } => {
                    let shown: Vec<String> = elements
                        .iter()
                        .map(|e| e.format_as(letter, symbol))
                        .collect();
                    let mut text = compress_repeats(&shown);
                    if *more {
                        text.push_str("...");
                    }
                    format!("{{{text}}}")
                }
            },
            Value::Float { value, size, .. } => match letter {
                'f' => format_float(*value, *size),
                _ => format_bits(float_bits(*value, *size), *size, letter, symbol),
            },
            Value::Integer { value, size, .. } => {
                format_bits(*value as u128, *size, letter, symbol)
            }
            Value::Char { value, size, .. } => {
                format_bits(i128::from(*value) as u128, *size, letter, symbol)
            }
            Value::Bool(b) => format_bits(u128::from(*b), 1, letter, symbol),
            Value::Enum { value, .. } => format_bits(i128::from(*value) as u128, 4, letter, symbol),
            Value::Pointer { address, .. } => format_bits(u128::from(*address), 8, letter, symbol),
            other => other.to_string(),
        }
    }
}

fn float_bits(value: f64, size: u8) -> u128 {
    match size {
        4 => u128::from((value as f32).to_bits()),
        _ => u128::from(value.to_bits()),
    }
}

/// The low `size` bytes of `bits` in a format letter.
fn format_bits(
    bits: u128,
    size: u8,
    letter: char,
    symbol: &dyn Fn(u64) -> Option<String>,
) -> String {
    let width = u32::from(size.clamp(1, 16)) * 8;
    let unsigned = if width >= 128 {
        bits
    } else {
        bits & ((1u128 << width) - 1)
    };
    let signed = if width >= 128 {
        unsigned as i128
    } else {
        ((unsigned << (128 - width)) as i128) >> (128 - width)
    };
    match letter {
        'd' => signed.to_string(),
        'u' => unsigned.to_string(),
        'o' if unsigned == 0 => "0".to_string(),
        'o' => format!("0{unsigned:o}"),
        't' => format!("{unsigned:b}"),
        'z' => format!("0x{unsigned:0w$x}", w = usize::from(size) * 2),
        'c' => format!("{} {}", signed as i8, char_literal(signed as i64)),
        'f' => match size {
            4 => float_from_bits(
                unsigned as u64,
                23,
                f64::from(f32::from_bits(unsigned as u32)),
            ),
            8 => float_from_bits(unsigned as u64, 52, f64::from_bits(unsigned as u64)),
            _ => signed.to_string(),
        },
        'a' => {
            // Addresses are 64 bits: narrower signed values extend.
            let address = signed as u64;
            match symbol(address) {
                Some(name) => format!("0x{address:x} <{name}>"),
                None => format!("0x{address:x}"),
            }
        }
        _ => format!("0x{unsigned:x}"),
    }
}

/// A float read from its bits; NaNs show their mantissa as gdb does
/// (`-nan(0x7ffffd)`).
fn float_from_bits(bits: u64, mantissa_bits: u32, value: f64) -> String {
    if !value.is_nan() {
        return format_float(value, if mantissa_bits == 23 { 4 } else { 8 });
    }
    let mantissa = bits & ((1u64 << mantissa_bits) - 1);
    let sign = if value.is_sign_negative() { "-" } else { "" };
    format!("{sign}nan(0x{mantissa:x})")
}

/// Element lists with runs of more than ten equal elements folded like
/// gdb: `0 <repeats 12 times>`.
pub(crate) fn compress_repeats(items: &[String]) -> String {
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

/// A character as gdb shows it: `'a'`, `'\n'`, `'\000'`, `'\377'`.
pub fn char_literal(value: i64) -> String {
    let byte = (value & 0xff) as u8;
    let body = match byte {
        b'\\' => "\\\\".to_string(),
        b'\'' => "\\'".to_string(),
        b'\n' => "\\n".to_string(),
        b'\t' => "\\t".to_string(),
        b'\r' => "\\r".to_string(),
        0x07 => "\\a".to_string(),
        0x08 => "\\b".to_string(),
        0x0c => "\\f".to_string(),
        0x0b => "\\v".to_string(),
        0x1b => "\\033".to_string(),
        0x20..=0x7e => (byte as char).to_string(),
        _ => format!("\\{byte:03o}"),
    };
    format!("'{body}'")
}

/// Shortest text that reads back as the same float or double, as gdb prints.
pub fn format_float(value: f64, size: u8) -> String {
    if value.is_nan() {
        return if value.is_sign_negative() {
            "-nan(0x8000000000000)"
        } else {
            "nan(0x8000000000000)"
        }
        .to_string();
    }
    if value.is_infinite() {
        return if value < 0.0 { "-inf" } else { "inf" }.to_string();
    }
    // gdb prints with %g and enough digits to read back: 9 for float,
    // 17 for double (so 0.1 is 0.10000000000000001).
    format_g(value, if size == 4 { 9 } else { 17 })
}

/// C's `%.{precision}g`.
fn format_g(value: f64, precision: usize) -> String {
    if value == 0.0 {
        return if value.is_sign_negative() { "-0" } else { "0" }.to_string();
    }
    let scientific = format!("{:.*e}", precision - 1, value);
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    if exponent < -4 || exponent >= precision as i32 {
        let sign = if exponent < 0 { '-' } else { '+' };
        format!(
            "{}e{sign}{:02}",
            trim_fraction(mantissa),
            exponent.unsigned_abs()
        )
    } else {
        let decimals = (precision as i32 - 1 - exponent).max(0) as usize;
        trim_fraction(&format!("{value:.decimals$}")).to_string()
    }
}

/// `1.500` to `1.5`, `2.000` to `2`.
fn trim_fraction(text: &str) -> &str {
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.')
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chars_are_shown_with_their_code() {
        let c = Value::Char {
            value: 97,
            size: 1,
            type_name: "char".into(),
        };
        assert_eq!(c.to_string(), "97 'a'");
        assert_eq!(char_literal(10), "'\\n'");
        assert_eq!(char_literal(-1), "'\\377'");
    }

    #[test]
    fn floats_print_shortest_round_trip() {
        assert_eq!(format_float(2.5, 8), "2.5");
        assert_eq!(format_float(0.1f32 as f64, 4), "0.100000001");
        assert_eq!(format_float(0.1, 8), "0.10000000000000001");
        assert_eq!(format_float(100.0, 8), "100");
        assert_eq!(format_float(1e20, 8), "1e+20");
        assert_eq!(format_float(1e20f32 as f64, 4), "1.00000002e+20");
        assert_eq!(format_float(1.5e-7, 8), "1.4999999999999999e-07");
        assert_eq!(
            format_float(f64::from(f32::from_bits(0x4142_4344)), 4),
            "12.1414223"
        );
        assert_eq!(format_float(-0.25, 8), "-0.25");
        assert_eq!(format_float(f64::INFINITY, 8), "inf");
    }

    #[test]
    fn formats_use_each_members_size() {
        let none = |_| None;
        let short = Value::Integer {
            value: -2,
            size: 2,
            signed: true,
            type_name: "short".into(),
        };
        let float = Value::Float {
            value: 1.5,
            size: 4,
            type_name: "float".into(),
        };
        let parts = Aggregate::Struct(vec![("s".into(), short), ("f".into(), float)]);
        let record = Value::Composite {
            type_name: "struct r".into(),
            text: "{s = -2, f = 1.5}".into(),
            parts: Some(Box::new(parts)),
        };
        assert_eq!(record.format_as('x', &none), "{s = 0xfffe, f = 0x3fc00000}");
        assert_eq!(record.format_as('f', &none), "{s = -2, f = 1.5}");
        assert_eq!(record.format_as('u', &none), "{s = 65534, f = 1069547520}");
        let elements = vec![Value::int(0); 12];
        let array = Value::Composite {
            type_name: "int [12]".into(),
            text: String::new(),
            parts: Some(Box::new(Aggregate::Array {
                elements,
                more: true,
            })),
        };
        assert_eq!(array.format_as('x', &none), "{0x0 <repeats 12 times>...}");
        assert_eq!(Value::int(-4).format_as('a', &none), "0xfffffffffffffffc");
        assert_eq!(Value::int(-3).format_as('f', &none), "-nan(0x7ffffd)");
    }

    #[test]
    fn element_runs_fold() {
        let items: Vec<String> = std::iter::repeat_n("0".to_string(), 12).collect();
        assert_eq!(compress_repeats(&items), "0 <repeats 12 times>");
        let items = vec!["1".to_string(), "2".to_string()];
        assert_eq!(compress_repeats(&items), "1, 2");
    }

    #[test]
    fn truth_follows_c() {
        assert_eq!(Value::int(0).is_true(), Some(false));
        assert_eq!(Value::int(-3).is_true(), Some(true));
        assert_eq!(Value::OptimizedOut.is_true(), None);
    }
}
