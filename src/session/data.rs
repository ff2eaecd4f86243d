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
    /// Where it is shown: everywhere, or only in the function whose
    /// locals it uses (gdb keeps a display to the block it was made in).
    scope: Option<FunctionRange>,
}

/// The run-time addresses of a function's code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FunctionRange {
    start: u64,
    end: u64,
}

impl FunctionRange {
    fn contains(&self, pc: u64) -> bool {
        (self.start..self.end).contains(&pc)
    }
}

/// The evaluator's view for assignments: what `print` sees, plus writes
/// to the program's memory and the selected thread's registers.
struct WritingEval<'a> {
    reading: super::SessionEval<'a>,
}

impl debugger::expr::EvalContext for WritingEval<'_> {
    fn variable(&self, name: &str) -> debugger::Result<Value> {
        self.reading.variable(name)
    }

    fn register(&self, name: &str) -> Option<Value> {
        self.reading.register(name)
    }

    fn read_memory(&self, addr: u64, buf: &mut [u8]) -> debugger::Result<()> {
        self.reading.read_memory(addr, buf)
    }

    fn lookup_type(&self, name: &str) -> Option<debugger::symbols::TypeRef> {
        self.reading.lookup_type(name)
    }

    fn visible_names(&self) -> Vec<String> {
        self.reading.visible_names()
    }

    fn symbol_at(&self, address: u64) -> Option<String> {
        self.reading.symbol_at(address)
    }

    fn write_memory(&self, addr: u64, bytes: &[u8]) -> debugger::Result<()> {
        self.reading.dbg.write_memory(addr, bytes)
    }

    /// Only the innermost frame's registers are the thread's; an outer
    /// frame's are restored by unwinding and have no single place to go.
    fn write_register(&self, name: &str, value: u64) -> debugger::Result<()> {
        let dbg = self.reading.dbg;
        if dbg.selected_frame_number() > 0 {
            return Err(debugger::Error::Expression(format!(
                "cannot set register {name} in an outer frame: only the innermost \
                 frame's registers can be changed"
            )));
        }
        let process = dbg.process()?;
        let tid = dbg.current_thread();
        let mut regs = process.regs(tid)?;
        if !debugger::regs::set(&mut regs, name, value) {
            return Err(debugger::Error::Expression(format!(
                "cannot set register \"${name}\""
            )));
        }
        process.set_regs(tid, &regs)
    }
}

/// `char *`, `const char *`: the pointers gdb prints without their type.
fn is_plain_char_pointer(type_name: &str) -> bool {
    let words: Vec<&str> = type_name
        .split_whitespace()
        .filter(|w| !matches!(*w, "const" | "volatile"))
        .collect();
    words == ["char", "*"]
}

/// Words that start a type name rather than an expression.
const TYPE_WORDS: [&str; 14] = [
    "struct", "union", "enum", "unsigned", "signed", "char", "short", "int", "long", "float",
    "double", "_Bool", "const", "volatile",
];

/// The operand of `whatis` and `ptype`.
enum TypeOrValue {
    Type(debugger::symbols::TypeRef),
    /// The type of a variable that cannot be read now.
    Declared(debugger::symbols::TypeRef),
    Value(Value),
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
        let value = match self.evaluate_typed_with_calls(&expr)? {
            Evaluated::Value(value) => value,
            Evaluated::Reported => return Ok(()),
            // A void function's call, shown as gdb shows it.
            Evaluated::Void if spec.gdb_style => {
                println!("${} = void", self.history.len() + 1);
                self.history.push(Value::Composite {
                    type_name: "void".into(),
                    text: "void".into(),
                    parts: None,
                });
                return Ok(());
            }
            Evaluated::Void => {
                println!("{} = void", spec.expr.trim());
                return Ok(());
            }
        };
        // dbx's `print` shows a pointer bare (`0x...`); gdb's spelling adds
        // the type and symbol.
        let shown = if spec.gdb_style {
            self.shown_top_level(&value, spec.format)?
        } else {
            shown_value(&value, spec.format, &|a| self.address_symbol(a))?
        };
        if spec.gdb_style {
            self.history.push(value);
            println!("${} = {shown}", self.history.len());
        } else {
            println!("{} = {shown}", spec.expr.trim());
        }
        Ok(())
    }

    /// `print`'s evaluation (as `Session::evaluate_with_calls`), keeping
    /// the value's type and address for the value history.
    /// Evaluates `expr`, which may call functions of the program; the value
    /// keeps its type. A process that ended during a call is reported.
    pub(super) fn evaluate_typed_with_calls(
        &mut self,
        expr: &debugger::expr::Expr,
    ) -> Result<Evaluated> {
        let context = super::CallingEval {
            dbg: std::cell::RefCell::new(&mut self.dbg),
            history: &self.history,
        };
        let outcome = debugger::expr::evaluate_statement_typed(expr, &context);
        if self.dbg.is_running() && self.dbg.process_has_ended() {
            if let Err(e) = &outcome {
                eprintln!("rdbx: {e}");
            }
            self.resume(|dbg, conditions| dbg.cont(conditions))?;
            return Ok(Evaluated::Reported);
        }
        Ok(match outcome? {
            Some(value) => Evaluated::Value(value),
            None => Evaluated::Void,
        })
    }

    /// Evaluates with the value history, keeping the value's type.
    pub(super) fn evaluate_typed_with_history(&self, text: &str) -> Result<Value> {
        let text = substitute_history(text, self.history.len())?;
        let expr = debugger::expr::parse(&text)?;
        let context = super::SessionEval {
            dbg: &self.dbg,
            history: &self.history,
        };
        Ok(debugger::expr::evaluate_typed(&expr, &context)?)
    }

    /// A value as `p` and `display` show it: a pointer on its own gets
    /// gdb's `(TYPE) ` before it and the symbol it points into after it,
    /// `(int *) 0x4010 <arr+4>` (strings stay `0x4004 "text"`).
    fn shown_top_level(&self, value: &Value, format: Option<char>) -> Result<String> {
        let symbol = |address| self.address_symbol(address);
        if format.is_some() {
            return shown_value(value, format, &symbol);
        }
        match value.plain() {
            Value::Pointer {
                address,
                type_name,
                detail,
            } => Ok(match detail {
                // gdb leaves the type off `char *`s, strings or not.
                _ if is_plain_char_pointer(type_name) => value.to_string(),
                Some(text) if !text.starts_with('<') => value.to_string(),
                Some(text) => format!("({type_name}) 0x{address:x} {text}"),
                None => match symbol(*address) {
                    Some(name) => format!("({type_name}) 0x{address:x} <{name}>"),
                    None => format!("({type_name}) 0x{address:x}"),
                },
            }),
            _ => shown_value(value, format, &symbol),
        }
    }

    /// The symbol an address is in, `name` or `name+OFFSET`, for `/a`.
    fn address_symbol(&self, address: u64) -> Option<String> {
        let label = self.covering_symbol_label(address);
        let name = label.strip_prefix('<')?.strip_suffix('>')?;
        Some(name.to_string())
    }

    /// Evaluates without running the program's functions, the value
    /// history available as `$N`, `$`, `$$`, `$$N`.
    pub(super) fn evaluate_with_history(&self, text: &str) -> Result<Value> {
        let text = substitute_history(text, self.history.len())?;
        self.evaluate(&text)
    }

    /// `whatis EXPR` / `whatis TYPE`: the type's name (a typedef named by
    /// itself resolved one level, as gdb does).
    pub(super) fn whatis(&self, text: &str) -> Result<()> {
        let shown = match self.type_or_value(text)? {
            TypeOrValue::Type(ty) => ty.one_level(),
            TypeOrValue::Declared(ty) => ty.name(),
            TypeOrValue::Value(value) => value.type_name().to_string(),
        };
        println!("type = {shown}");
        Ok(())
    }

    /// `ptype EXPR` / `ptype TYPE`: the type with typedefs seen through and
    /// the struct, union or enum it is made from written out.
    pub(super) fn ptype(&self, text: &str) -> Result<()> {
        let shown = match self.type_or_value(text)? {
            TypeOrValue::Type(ty) | TypeOrValue::Declared(ty) => ty.expanded(),
            TypeOrValue::Value(value) => match value.type_ref() {
                Some(ty) => ty.expanded(),
                None => value.type_name().to_string(),
            },
        };
        println!("type = {shown}");
        Ok(())
    }

    /// What `whatis` and `ptype` were given: a type (`struct point`,
    /// `point_t *`) or an expression. A name that is no variable is tried
    /// as a type name.
    fn type_or_value(&self, text: &str) -> Result<TypeOrValue> {
        let text = text.trim();
        let base = text.trim_end_matches(['*', ' ']);
        let pointers = text[base.len()..].matches('*').count();
        let keyword = base
            .split_whitespace()
            .next()
            .is_some_and(|w| TYPE_WORDS.contains(&w));
        let context = super::SessionEval {
            dbg: &self.dbg,
            history: &self.history,
        };
        let named = || {
            let mut ty = debugger::expr::EvalContext::lookup_type(&context, base)?;
            for _ in 0..pointers {
                ty = ty.pointer_to();
            }
            Some(TypeOrValue::Type(ty))
        };
        if keyword {
            return named().ok_or_else(|| anyhow!("no type named \"{text}\""));
        }
        match self.evaluate_typed_with_history(text) {
            Ok(value) => Ok(TypeOrValue::Value(value)),
            Err(e) => named()
                .or_else(|| self.static_variable_type(text).map(TypeOrValue::Declared))
                .ok_or(e),
        }
    }

    /// The declared type of a global named `name`, known without a
    /// process (gdb answers `ptype g` before `run`).
    fn static_variable_type(&self, name: &str) -> Option<debugger::symbols::TypeRef> {
        if self.process_is_stopped() {
            return None;
        }
        self.dbg.objects().list.iter().find_map(|object| {
            let var = object.file.lookup_variable(None, name)?;
            object.file.variable_type(&var)
        })
    }

    // ----- assign / set var ----------------------------------------------

    /// `assign TARGET = VALUE` prints the new value as `print` does; gdb's
    /// `set var` prints nothing.
    pub(super) fn assign(&mut self, target: &str, value: &str, gdb_style: bool) -> Result<()> {
        if !self.process_is_stopped() {
            bail!("assign: the program is not running");
        }
        let target_text = substitute_history(target, self.history.len())?;
        let value_text = substitute_history(value, self.history.len())?;
        let target_expr = debugger::expr::parse(&target_text)?;
        let value_expr = debugger::expr::parse(&value_text)?;
        let context = WritingEval {
            reading: super::SessionEval {
                dbg: &self.dbg,
                history: &self.history,
            },
        };
        let new = debugger::expr::assign(&target_expr, &value_expr, &context)?;
        if !gdb_style {
            println!("{} = {new}", target.trim());
        }
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
            scope: self.locals_scope(&expr),
        };
        if self.process_is_stopped() {
            println!("{}", self.display_line(&display));
        }
        self.displays.push(display);
        Ok(())
    }

    /// The function of the selected frame, when `expr` names one of the
    /// locals or parameters visible there; `None` for an expression of
    /// globals (or with no process).
    fn locals_scope(&self, expr: &str) -> Option<FunctionRange> {
        if !self.process_is_stopped() {
            return None;
        }
        let frame = self.dbg.selected_frame().ok()?;
        let object = self.dbg.objects().object_at(frame.lookup_pc)?;
        let address = object.file_address(frame.lookup_pc);
        let mut locals = object
            .file
            .frame_locals_at(address, frame.inline_depth)
            .into_iter()
            .chain(object.file.parameters_at(address, frame.inline_depth));
        let names = identifiers(expr);
        if !locals.any(|v| names.contains(&v.name())) {
            return None;
        }
        let function = object.file.function_at(address)?;
        Some(FunctionRange {
            start: object.runtime_address(function.low_pc),
            end: object.runtime_address(function.high_pc),
        })
    }

    /// The display is for where the selected frame is: a display of
    /// locals only in the function it was made in.
    fn display_applies(&self, display: &Display) -> bool {
        let Some(scope) = display.scope else {
            return true;
        };
        self.dbg
            .selected_frame()
            .is_ok_and(|frame| scope.contains(frame.lookup_pc))
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

    /// Every display that belongs where the selected frame is (the
    /// innermost one at a stop), evaluated there; without a process, the
    /// expressions alone.
    pub(super) fn show_displays(&self) {
        let stopped = self.process_is_stopped();
        for display in &self.displays {
            if stopped {
                if self.display_applies(display) {
                    println!("{}", self.display_line(display));
                }
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
            .and_then(|value| shown_value(&value, display.format, &|a| self.address_symbol(a)))
            .unwrap_or_else(|e| format!("<error: {e:#}>"));
        format!(
            "{}: {}{} = {shown}",
            display.number,
            format_prefix(display.format),
            display.expr
        )
    }

    pub(super) fn process_is_stopped(&self) -> bool {
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
                .backtrace(self.dbg.current_thread(), usize::MAX)?
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
        Ok(self.dbg.frame_locals(frame))
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
                let object = self.dbg.objects().object_at(frame.lookup_pc)?;
                let address = object.file_address(frame.lookup_pc);
                Some(
                    object
                        .file
                        .frame_locals_at(address, frame.inline_depth)
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
        self.dbg.objects().list.iter().find_map(|object| {
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
        let Some(object) = self.dbg.objects().object_at(address) else {
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

/// The names an expression uses as variables: identifiers outside
/// literals that are not members (after `.`, `->`) or registers (`$`).
fn identifiers(expr: &str) -> Vec<&str> {
    let bytes = expr.as_bytes();
    let mut found = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c == b'"' || c == b'\'' {
            let chars: Vec<char> = expr[i..].chars().collect();
            let end = quoted_end(&chars, 0);
            i += chars[..end].iter().map(|c| c.len_utf8()).sum::<usize>();
            continue;
        }
        if !(c.is_ascii_alphabetic() || c == b'_') {
            i += 1;
            continue;
        }
        let start = i;
        while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
            i += 1;
        }
        let before = expr[..start].trim_end();
        let member = before.ends_with('.') || before.ends_with("->");
        let register = before.ends_with('$');
        let in_number = start > 0 && bytes[start - 1].is_ascii_digit();
        if !member && !register && !in_number {
            found.push(&expr[start..i]);
        }
    }
    found
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

/// A value as `print` shows it, in a gdb format letter if one was given
/// (`symbol` names the addresses of `/a`).
pub(super) fn shown_value(
    value: &Value,
    format: Option<char>,
    symbol: &dyn Fn(u64) -> Option<String>,
) -> Result<String> {
    match format {
        None | Some('s') => Ok(value.to_string()),
        Some(letter) if "xduotcafz".contains(letter) => Ok(value.format_as(letter, symbol)),
        Some(letter) => bail!("format letter \"{letter}\" is not supported here"),
    }
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
    fn identifiers_are_the_variables_an_expression_names() {
        assert_eq!(identifiers("a + acc"), ["a", "acc"]);
        assert_eq!(identifiers("p->next.val * 2"), ["p"]);
        assert_eq!(identifiers("s . x + $rax + 0x1f"), ["s"]);
        assert_eq!(identifiers("f(\"a b\", 'c') + n"), ["f", "n"]);
        assert_eq!(identifiers("arr[i]"), ["arr", "i"]);
    }

    #[test]
    fn scalars_are_formatted() {
        let none = |_| None;
        let format = |value: &Value, letter| shown_value(value, Some(letter), &none).unwrap();
        let int = |value| Value::int(value);
        assert_eq!(format(&int(-1), 'x'), "0xffffffff");
        assert_eq!(format(&int(10), 't'), "1010");
        assert_eq!(format(&int(65), 'c'), "65 'A'");
        assert_eq!(format(&int(8), 'o'), "010");
        assert_eq!(format(&int(5), 'z'), "0x00000005");
        let double = Value::Float {
            value: 2.5,
            size: 8,
            type_name: "double".into(),
        };
        assert_eq!(format(&double, 'x'), "0x4004000000000000");
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
