//! The data-inspection commands: `print` formats and the value history,
//! `display`, `examine` / `x`, `dump` / `info locals`, `info args`.
//!
//! Values come from the expression evaluator (`debugger::expr`); this
//! module only decides what to evaluate, where, and how to show it.

use super::{Evaluated, Session};
use anyhow::{anyhow, bail, Result};
use commands::{ExamineSpec, PrintSpec, Selection};
use debugger::value::{char_literal, format_float, Value};

/// An expression shown at every stop.
pub(super) struct Display {
    number: u32,
    expr: String,
    format: Option<char>,
}

/// What the next `x` with no address or format continues from.
pub(super) struct ExamineState {
    next: Option<u64>,
    format: char,
    size: u8,
}

impl Default for ExamineState {
    fn default() -> Self {
        ExamineState {
            next: None,
            format: 'x',
            size: 4,
        }
    }
}

/// The most memory one `examine` reads.
const EXAMINE_MAX_BYTES: usize = 1 << 20;
/// How far a string of `x/s` is searched for its NUL.
const STRING_LIMIT: usize = 200;

impl Session {
    // ----- print and the value history ---------------------------------

    pub(super) fn print(&mut self, spec: PrintSpec) -> Result<()> {
        let text = substitute_history(&spec.expr, self.history.len())?;
        let expr = debugger::expr::parse(&text)?;
        let value = match self.evaluate_with_calls(&expr)? {
            Evaluated::Value(value) => value,
            Evaluated::Reported => return Ok(()),
            // A void function's call, shown as gdb shows it.
            Evaluated::Void if spec.gdb_style => {
                println!("${} = void", self.history.len() + 1);
                self.history.push(Value::Composite {
                    type_name: "void".into(),
                    text: "void".into(),
                });
                return Ok(());
            }
            Evaluated::Void => {
                println!("{} = void", spec.expr.trim());
                return Ok(());
            }
        };
        let shown = shown_value(&value, spec.format)?;
        if spec.gdb_style {
            self.history.push(value);
            println!("${} = {shown}", self.history.len());
        } else {
            println!("{} = {shown}", spec.expr.trim());
        }
        Ok(())
    }

    /// Evaluates without running the program's functions, the value
    /// history available as `$N`, `$`, `$$`, `$$N`.
    pub(super) fn evaluate_with_history(&self, text: &str) -> Result<Value> {
        let text = substitute_history(text, self.history.len())?;
        self.evaluate(&text)
    }

    pub(super) fn whatis(&self, text: &str) -> Result<()> {
        let value = self.evaluate_with_history(text)?;
        println!("type = {}", value.type_name());
        Ok(())
    }

    // ----- display -----------------------------------------------------

    pub(super) fn display(&mut self, expr: Option<String>, format: Option<char>) -> Result<()> {
        let Some(expr) = expr else {
            if self.displays.is_empty() {
                println!("no displays");
            }
            self.show_displays();
            return Ok(());
        };
        debugger::expr::parse(&substitute_history(&expr, self.history.len())?)?;
        self.next_display += 1;
        let display = Display {
            number: self.next_display,
            expr: expr.trim().to_string(),
            format,
        };
        if self.process_is_stopped() {
            println!("{}", self.display_line(&display));
        }
        self.displays.push(display);
        Ok(())
    }

    pub(super) fn undisplay(&mut self, selection: Selection) -> Result<()> {
        match selection {
            Selection::All => self.displays.clear(),
            Selection::Ids(ids) => {
                if let Some(id) = ids
                    .iter()
                    .find(|id| !self.displays.iter().any(|d| d.number == **id))
                {
                    bail!("no display {id}");
                }
                self.displays.retain(|d| !ids.contains(&d.number));
            }
        }
        Ok(())
    }

    /// Every display, evaluated in the selected frame (the innermost one
    /// at a stop); without a process, the expressions alone.
    pub(super) fn show_displays(&self) {
        let stopped = self.process_is_stopped();
        for display in &self.displays {
            if stopped {
                println!("{}", self.display_line(display));
            } else {
                println!(
                    "{}: {}{}",
                    display.number,
                    format_prefix(display.format),
                    display.expr
                );
            }
        }
    }

    /// `1: x = 5`, `2: /x flags = 0x3`; an error is shown in place.
    fn display_line(&self, display: &Display) -> String {
        let shown = self
            .evaluate_with_history(&display.expr)
            .and_then(|value| shown_value(&value, display.format))
            .unwrap_or_else(|e| format!("<error: {e:#}>"));
        format!(
            "{}: {}{} = {shown}",
            display.number,
            format_prefix(display.format),
            display.expr
        )
    }

    fn process_is_stopped(&self) -> bool {
        self.dbg.is_running() && !self.dbg.process_has_ended()
    }

    // ----- dump, info locals, info args --------------------------------

    /// `dump [FUNC]`: the locals of the selected frame, or of the
    /// innermost frame of FUNC.
    pub(super) fn dump(&mut self, function: Option<&str>) -> Result<()> {
        let frame = match function {
            None => self.dbg.selected_frame()?,
            Some(name) => self
                .dbg
                .backtrace(self.dbg.current_tid, usize::MAX)?
                .into_iter()
                .find(|f| f.function.as_deref() == Some(name))
                .ok_or_else(|| anyhow!("no active frame of \"{name}\""))?,
        };
        let locals = self.frame_locals(&frame)?;
        if locals.is_empty() {
            println!("No locals.");
        }
        for (name, value) in locals {
            println!("{name} = {value}");
        }
        Ok(())
    }

    /// gdb `info args`.
    pub(super) fn arguments(&mut self) -> Result<()> {
        let frame = self.dbg.selected_frame()?;
        let args = self.dbg.frame_arguments(&frame);
        if args.is_empty() {
            println!("No arguments.");
        }
        for (name, value) in args {
            println!("{name} = {value}");
        }
        Ok(())
    }

    /// The locals in scope at a frame's pc, innermost block first; a
    /// local that cannot be read shows why in place.
    fn frame_locals(&self, frame: &debugger::stack::StackFrame) -> Result<Vec<(String, Value)>> {
        let Some(object) = self.dbg.objects.object_at(frame.lookup_pc) else {
            return Ok(Vec::new());
        };
        let view = self.dbg.frame_view(frame)?;
        let address = object.file_address(frame.lookup_pc);
        Ok(object
            .file
            .locals_at(address)
            .into_iter()
            .map(|var| {
                let value = object
                    .file
                    .read_variable(&var, &view)
                    .unwrap_or_else(|e| Value::Unavailable(format!("error: {e}")));
                (var.name().to_string(), value)
            })
            .collect())
    }

    // ----- examine -----------------------------------------------------

    pub(super) fn examine(&mut self, spec: ExamineSpec) -> Result<()> {
        let address = match &spec.address {
            Some(text) => self.examine_address(text)?,
            None => self
                .examine_state
                .next
                .ok_or_else(|| anyhow!("examine: give an address (nothing examined yet)"))?,
        };
        let format = spec.format.unwrap_or(self.examine_state.format);
        let size = unit_size(format, spec.size, self.examine_state.size);
        let count = spec.count as usize;
        let next = if format == 's' {
            self.examine_strings(address, count)?
        } else {
            self.examine_units(address, count, format, size)?
        };
        self.examine_state = ExamineState {
            next: Some(next),
            format,
            size: if format == 's' {
                self.examine_state.size
            } else {
                size
            },
        };
        Ok(())
    }

    /// The address an examine expression stands for: a pointer's value,
    /// an integer, or the address of an array (gdb's `x g_arr`).
    fn examine_address(&self, text: &str) -> Result<u64> {
        let text = text.trim();
        let value = match self.evaluate_with_history(text) {
            Ok(value) => value,
            // `&global` while the evaluator cannot take addresses.
            Err(e) => match text.strip_prefix('&').and_then(|n| self.symbol_address(n)) {
                Some(address) => return Ok(address),
                None => return Err(e),
            },
        };
        if let Some(address) = value.as_integer() {
            return Ok(address as u64);
        }
        if matches!(value, Value::Composite { .. }) {
            // An array (or other aggregate) stands for its address.
            let address_of = format!("&({text})");
            let evaluated = self.evaluate_with_history(&address_of).ok();
            if let Some(address) = evaluated
                .and_then(|v| v.as_integer())
                .map(|a| a as u64)
                .or_else(|| self.symbol_address(text))
            {
                return Ok(address);
            }
        }
        bail!("\"{text}\" is not an address")
    }

    /// The run-time address of a global or static named in the symbol
    /// table (used where the evaluator cannot take an address yet).
    fn symbol_address(&self, name: &str) -> Option<u64> {
        let name = name.trim();
        if name.is_empty() || !name.chars().all(|c| c.is_alphanumeric() || c == '_') {
            return None;
        }
        if self.dbg.read_variable(name).is_err() {
            return None;
        }
        let locals_shadow = self
            .dbg
            .selected_frame()
            .ok()
            .and_then(|frame| {
                let object = self.dbg.objects.object_at(frame.lookup_pc)?;
                let address = object.file_address(frame.lookup_pc);
                Some(
                    object
                        .file
                        .locals_at(address)
                        .iter()
                        .chain(
                            object
                                .file
                                .parameters_at(address, frame.inline_depth)
                                .iter(),
                        )
                        .any(|v| v.name() == name),
                )
            })
            .unwrap_or(false);
        if locals_shadow {
            return None;
        }
        self.dbg.objects.list.iter().find_map(|object| {
            object
                .file
                .lookup_symbol(name)
                .into_iter()
                .find(|s| !s.is_function)
                .map(|s| object.runtime_address(s.address))
        })
    }

    /// Units of memory, read at once; lines of 8, 4 or 2 units as gdb.
    /// Returns the address after the last unit shown.
    fn examine_units(&self, address: u64, count: usize, format: char, size: u8) -> Result<u64> {
        let total = count
            .checked_mul(usize::from(size))
            .filter(|&n| n <= EXAMINE_MAX_BYTES)
            .ok_or_else(|| anyhow!("examine: at most {EXAMINE_MAX_BYTES} bytes at a time"))?;
        let (bytes, failed_at) = self.read_readable(address, total);
        let per_line = units_per_line(format, size);
        let readable_units = bytes.len() / usize::from(size);
        for (line_index, line) in bytes[..readable_units * usize::from(size)]
            .chunks(per_line * usize::from(size))
            .enumerate()
        {
            let line_address = address + (line_index * per_line * usize::from(size)) as u64;
            let mut text = self.address_label(line_address);
            for unit in line.chunks(usize::from(size)) {
                text.push('\t');
                text.push_str(&self.format_unit(unit, format));
            }
            println!("{text}");
        }
        if let Some(bad) = failed_at {
            bail!("cannot access memory at 0x{bad:x}");
        }
        Ok(address + total as u64)
    }

    /// `x/s`: C strings one after the other, each on its own line.
    fn examine_strings(&self, address: u64, count: usize) -> Result<u64> {
        let want = count
            .saturating_mul(STRING_LIMIT + 1)
            .min(EXAMINE_MAX_BYTES);
        let (bytes, failed_at) = self.read_readable(address, want);
        let mut offset = 0usize;
        for _ in 0..count {
            let here = address + offset as u64;
            let rest = &bytes[offset.min(bytes.len())..];
            let (body, used) = match rest.iter().take(STRING_LIMIT).position(|&b| b == 0) {
                Some(nul) => (&rest[..nul], nul + 1),
                None if rest.len() > STRING_LIMIT => (&rest[..STRING_LIMIT], STRING_LIMIT),
                None => {
                    let bad = failed_at.unwrap_or(here + rest.len() as u64);
                    bail!("cannot access memory at 0x{bad:x}");
                }
            };
            let ellipsis = if body.len() == STRING_LIMIT && used == STRING_LIMIT {
                "..."
            } else {
                ""
            };
            println!(
                "{}\t{}{ellipsis}",
                self.address_label(here),
                quoted_c_string(body)
            );
            offset += used;
        }
        Ok(address + offset as u64)
    }

    /// One bulk read of `len` bytes; if part of the range is unmapped, the
    /// readable beginning and the first address that could not be read.
    fn read_readable(&self, address: u64, len: usize) -> (Vec<u8>, Option<u64>) {
        let mut bytes = vec![0u8; len];
        if self.dbg.read_memory(address, &mut bytes).is_ok() {
            return (bytes, None);
        }
        // Only on failure: find the readable prefix, page by page.
        let mut readable = 0usize;
        while readable < len {
            let page_end = ((address + readable as u64) | 0xfff) + 1;
            let chunk = ((page_end - (address + readable as u64)) as usize).min(len - readable);
            let part = &mut bytes[readable..readable + chunk];
            if self
                .dbg
                .read_memory(address + readable as u64, part)
                .is_err()
            {
                break;
            }
            readable += chunk;
        }
        bytes.truncate(readable);
        (bytes, Some(address + readable as u64))
    }

    /// `0x404028 <g_arr>:`, `0x404030 <g_arr+8>:` or `0x7ffe...:`.
    fn address_label(&self, address: u64) -> String {
        let label = self.covering_symbol_label(address);
        if label.is_empty() {
            format!("0x{address:x}:")
        } else {
            format!("0x{address:x} {label}:")
        }
    }

    /// `<g_arr+4>` when a symbol's extent covers the address (a nearby
    /// symbol is no name for it), else empty.
    fn covering_symbol_label(&self, address: u64) -> String {
        let Some(object) = self.dbg.objects.object_at(address) else {
            return String::new();
        };
        let file_address = object.file_address(address);
        match object.file.symbol_at(file_address) {
            Some(s) if file_address == s.address => format!("<{}>", s.name),
            Some(s) if file_address - s.address < s.size => {
                format!("<{}+{}>", s.name, file_address - s.address)
            }
            _ => String::new(),
        }
    }

    fn format_unit(&self, unit: &[u8], format: char) -> String {
        let mut raw = [0u8; 8];
        raw[..unit.len()].copy_from_slice(unit);
        let unsigned = u64::from_le_bytes(raw);
        let bits = unit.len() as u32 * 8;
        let signed = if bits == 64 {
            unsigned as i64
        } else {
            ((unsigned << (64 - bits)) as i64) >> (64 - bits)
        };
        match format {
            'x' => format!("0x{unsigned:0width$x}", width = unit.len() * 2),
            'd' => signed.to_string(),
            'u' => unsigned.to_string(),
            'o' if unsigned == 0 => "0".to_string(),
            'o' => format!("0{unsigned:o}"),
            't' => format!("{unsigned:0width$b}", width = bits as usize),
            'c' => format!("{} {}", signed as i8, char_literal(signed)),
            'f' if unit.len() == 8 => format_float(f64::from_bits(unsigned), 8),
            'f' if unit.len() == 4 => format_float(f64::from(f32::from_bits(unsigned as u32)), 4),
            'f' => signed.to_string(),
            'a' => {
                let label = self.covering_symbol_label(unsigned);
                if label.is_empty() {
                    format!("0x{unsigned:x}")
                } else {
                    format!("0x{unsigned:x} {label}")
                }
            }
            _ => format!("0x{unsigned:x}"),
        }
    }
}

/// `/x ` before a formatted display's expression, as gdb shows it.
fn format_prefix(format: Option<char>) -> String {
    format.map(|f| format!("/{f} ")).unwrap_or_default()
}

/// The unit size of an examine: `a` is pointer-sized, `c` a byte unless
/// a size is given; otherwise the given size, else the previous one.
fn unit_size(format: char, given: Option<char>, previous: u8) -> u8 {
    let from_letter = |letter: char| match letter {
        'b' => 1,
        'h' => 2,
        'g' => 8,
        _ => 4,
    };
    match (format, given) {
        ('a', _) => 8,
        (_, Some(letter)) => from_letter(letter),
        ('c', None) => 1,
        ('f', None) if previous != 4 => 8,
        _ => previous,
    }
}

/// gdb's units per line: 8 bytes or half-words, 4 words, 2 giants.
fn units_per_line(format: char, size: u8) -> usize {
    match (format, size) {
        ('c', _) => 8,
        (_, 1) | (_, 2) => 8,
        (_, 4) => 4,
        _ => 2,
    }
}

/// `"hello\n"` with C escapes, as gdb quotes strings.
fn quoted_c_string(bytes: &[u8]) -> String {
    let mut out = String::from("\"");
    for &b in bytes {
        match b {
            b'"' => out.push_str("\\\""),
            b'\'' => out.push('\''),
            _ => {
                let literal = char_literal(i64::from(b));
                out.push_str(&literal[1..literal.len() - 1]);
            }
        }
    }
    out.push('"');
    out
}

/// A value as `print` shows it, in a gdb format letter if one was given.
pub(super) fn shown_value(value: &Value, format: Option<char>) -> Result<String> {
    match format {
        None | Some('s') => Ok(value.to_string()),
        Some(letter) => format_value(value, letter),
    }
}

/// gdb's print formats x d u o t c a f z on a value: scalars directly,
/// aggregates member by member.
fn format_value(value: &Value, letter: char) -> Result<String> {
    if !"xduotcafz".contains(letter) {
        bail!("format letter \"{letter}\" is not supported here");
    }
    Ok(match value {
        Value::Composite { text, .. } => format_composite(text, letter),
        Value::Float { value, size, .. } => match letter {
            'f' => value.to_string(),
            // gdb shows a float's bytes in the integer formats.
            _ => format_bits(float_bits(*value, *size), *size, letter),
        },
        Value::OptimizedOut | Value::Unavailable(_) => value.to_string(),
        Value::Pointer { address, .. } if letter == 'a' => format!("0x{address:x}"),
        other => match other.as_integer() {
            Some(raw) => {
                let size = match other {
                    Value::Integer { size, .. } | Value::Char { size, .. } => *size,
                    Value::Bool(_) => 1,
                    Value::Enum { .. } => 4,
                    _ => 8,
                };
                format_integer(raw, size, letter)
            }
            None => other.to_string(),
        },
    })
}

fn float_bits(value: f64, size: u8) -> u64 {
    if size == 4 {
        u64::from((value as f32).to_bits())
    } else {
        value.to_bits()
    }
}

/// An integer of `size` bytes in a gdb format.
fn format_integer(raw: i128, size: u8, letter: char) -> String {
    let mask: u128 = if size >= 16 {
        u128::MAX
    } else {
        (1u128 << (u32::from(size) * 8)) - 1
    };
    let unsigned = (raw as u128) & mask;
    match letter {
        'd' => raw.to_string(),
        'c' => format!("{} {}", raw as i8, char_literal(raw as i64)),
        'f' => raw.to_string(),
        other => format_bits(unsigned as u64, size, other),
    }
}

/// Unsigned bits in x o t u z a.
fn format_bits(bits: u64, size: u8, letter: char) -> String {
    match letter {
        'o' if bits == 0 => "0".to_string(),
        'o' => format!("0{bits:o}"),
        't' => format!("{bits:b}"),
        'u' | 'd' => bits.to_string(),
        'z' => format!("0x{bits:0width$x}", width = usize::from(size) * 2),
        _ => format!("0x{bits:x}"),
    }
}

/// Applies a format to the numbers of an aggregate's rendered text,
/// leaving strings, character literals, `<...>` notes and names alone.
/// A `char` shown as `97 'a'` becomes one number. Sizes are not in the
/// text: negative members are taken as `int` when they fit, else `long`,
/// and floating-point members as `double`.
fn format_composite(text: &str, letter: char) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let mut drop_char_literal = false;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '"' | '\'' => {
                let end = quoted_end(&chars, i);
                if !(c == '\'' && drop_char_literal) {
                    out.extend(&chars[i..end]);
                } else if out.ends_with(' ') {
                    out.pop();
                }
                drop_char_literal = false;
                i = end;
            }
            '<' => {
                let end = chars[i..]
                    .iter()
                    .position(|&c| c == '>')
                    .map_or(chars.len(), |p| i + p + 1);
                out.extend(&chars[i..end]);
                i = end;
            }
            _ if starts_number(&chars, i) => {
                let end = number_end(&chars, i);
                let token: String = chars[i..end].iter().collect();
                out.push_str(&format_number_token(&token, letter));
                drop_char_literal = true;
                i = end;
            }
            _ if c.is_alphanumeric() || c == '_' => {
                // A name (member, enumerator): copied whole; bools as numbers.
                let end = chars[i..]
                    .iter()
                    .position(|&c| !(c.is_alphanumeric() || c == '_'))
                    .map_or(chars.len(), |p| i + p);
                let name: String = chars[i..end].iter().collect();
                match name.as_str() {
                    "true" => out.push_str(&format_integer(1, 1, letter)),
                    "false" => out.push_str(&format_integer(0, 1, letter)),
                    _ => out.push_str(&name),
                }
                i = end;
            }
            _ => {
                if c != ' ' {
                    drop_char_literal = false;
                }
                out.push(c);
                i += 1;
            }
        }
    }
    out
}

/// A number starts at a digit, or a `-` before one, not inside a name.
fn starts_number(chars: &[char], i: usize) -> bool {
    let previous_is_word = i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_');
    if previous_is_word {
        return false;
    }
    match chars[i] {
        '-' => chars.get(i + 1).is_some_and(|c| c.is_ascii_digit()),
        c => c.is_ascii_digit(),
    }
}

fn number_end(chars: &[char], start: usize) -> usize {
    let mut end = start + 1;
    while end < chars.len()
        && (chars[end].is_ascii_alphanumeric()
            || chars[end] == '.'
            || (matches!(chars[end], '-' | '+') && matches!(chars[end - 1], 'e' | 'E')))
    {
        end += 1;
    }
    end
}

/// The index after a quoted string or character starting at `start`.
fn quoted_end(chars: &[char], start: usize) -> usize {
    let quote = chars[start];
    let mut i = start + 1;
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 2,
            c if c == quote => return i + 1,
            _ => i += 1,
        }
    }
    chars.len()
}

fn format_number_token(token: &str, letter: char) -> String {
    if token.starts_with("0x") || token.starts_with("-0x") {
        return token.to_string();
    }
    if let Ok(raw) = token.parse::<i128>() {
        let size = if i32::try_from(raw).is_ok() || (raw >= 0 && raw <= i128::from(u32::MAX)) {
            4
        } else {
            8
        };
        return format_integer(raw, size, letter);
    }
    match token.parse::<f64>() {
        Ok(value) if letter != 'f' => format_bits(value.to_bits(), 8, letter),
        _ => token.to_string(),
    }
}

/// Rewrites the value-history references of an expression into `$N`
/// (absolute numbers, which the evaluator context resolves): `$` is the
/// last value, `$$` the one before, `$$N` the N-th before the last.
pub(super) fn substitute_history(text: &str, length: usize) -> Result<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '"' || c == '\'' {
            let end = quoted_end(&chars, i);
            out.extend(&chars[i..end]);
            i = end;
            continue;
        }
        if c != '$' {
            out.push(c);
            i += 1;
            continue;
        }
        let (back, end) = if chars.get(i + 1) == Some(&'$') {
            let digits_end = chars[i + 2..]
                .iter()
                .position(|c| !c.is_ascii_digit())
                .map_or(chars.len(), |p| i + 2 + p);
            let digits: String = chars[i + 2..digits_end].iter().collect();
            (Some(digits.parse::<usize>().unwrap_or(1)), digits_end)
        } else if chars
            .get(i + 1)
            .is_some_and(|c| c.is_alphanumeric() || *c == '_')
        {
            // A register or `$N`: the evaluator context resolves it.
            let end = chars[i + 1..]
                .iter()
                .position(|c| !(c.is_alphanumeric() || *c == '_'))
                .map_or(chars.len(), |p| i + 1 + p);
            let name: String = chars[i + 1..end].iter().collect();
            if let Ok(n) = name.parse::<usize>() {
                if n == 0 || n > length {
                    bail!("history has not yet reached ${n}");
                }
            }
            out.extend(&chars[i..end]);
            i = end;
            continue;
        } else {
            (Some(0), i + 1)
        };
        let back = back.unwrap_or(0);
        if back >= length {
            bail!("history has not yet reached that far back (it holds {length} values)");
        }
        out.push_str(&format!("${}", length - back));
        i = end;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn history_references_become_numbers() {
        assert_eq!(substitute_history("$ + $$", 3).unwrap(), "$3 + $2");
        assert_eq!(substitute_history("$$2 * $1", 3).unwrap(), "$1 * $1");
        assert_eq!(
            substitute_history("$rip + \"$\"", 0).unwrap(),
            "$rip + \"$\""
        );
        assert!(substitute_history("$", 0).is_err());
        assert!(substitute_history("$4", 3).is_err());
        assert!(substitute_history("$$3", 3).is_err());
    }

    #[test]
    fn composite_members_are_formatted() {
        assert_eq!(
            format_composite(
                "{tag = 97 'a', where = {x = 3, y = -4}, n = <repeats 9 times>}",
                'x'
            ),
            "{tag = 0x61, where = {x = 0x3, y = 0xfffffffc}, n = <repeats 9 times>}"
        );
        assert_eq!(
            format_composite("{flag = true, name = main}", 'x'),
            "{flag = 0x1, name = main}"
        );
        assert_eq!(
            format_composite("{1, 2, -3, 4}", 'o'),
            "{01, 02, 037777777775, 04}"
        );
        assert_eq!(
            format_composite("{s = 0x4005 \"hi 1\", c = 65 'A'}", 'c'),
            "{s = 0x4005 \"hi 1\", c = 65 'A'}"
        );
        assert_eq!(
            format_composite("{d = 1.5}", 'x'),
            "{d = 0x3ff8000000000000}"
        );
    }

    #[test]
    fn scalars_are_formatted() {
        let int = |value| Value::int(value);
        assert_eq!(format_value(&int(-1), 'x').unwrap(), "0xffffffff");
        assert_eq!(format_value(&int(10), 't').unwrap(), "1010");
        assert_eq!(format_value(&int(65), 'c').unwrap(), "65 'A'");
        assert_eq!(format_value(&int(8), 'o').unwrap(), "010");
        assert_eq!(format_value(&int(5), 'z').unwrap(), "0x00000005");
        let double = Value::Float {
            value: 2.5,
            size: 8,
            type_name: "double".into(),
        };
        assert_eq!(format_value(&double, 'x').unwrap(), "0x4004000000000000");
    }

    #[test]
    fn examine_units_follow_gdb() {
        assert_eq!(unit_size('x', None, 4), 4);
        assert_eq!(unit_size('c', None, 4), 1);
        assert_eq!(unit_size('a', Some('b'), 4), 8);
        assert_eq!(unit_size('f', None, 1), 8);
        assert_eq!(units_per_line('x', 1), 8);
        assert_eq!(units_per_line('d', 8), 2);
        assert_eq!(quoted_c_string(b"a\"b\n"), "\"a\\\"b\\n\"");
    }
}
