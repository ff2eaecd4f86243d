//! How rdbx shows things: dbx's formats, so that users' habits and
//! scripts carry over (see docs/commands.md).

use debugger::breakpoints::{Action, Breakpoint, LocationSpec};
use debugger::signals::{signal_description, signal_name};
use debugger::stack::StackFrame;
use debugger::symbols::SourceLocation;
use debugger::value::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The name dbx prints for a file: as it was compiled.
pub fn file_name(location: &SourceLocation) -> String {
    location.file.display().to_string()
}

/// `fact(n = 1), line 5 in "recurse.c"` or `puts() + 0x1a, at 0x... in libc.so.6`.
pub fn frame_line(frame: &StackFrame, args: &[(String, Value)]) -> String {
    if frame.signal_trampoline {
        return "<signal handler called>".to_string();
    }
    let name = frame.function.clone().unwrap_or_else(|| "??".to_string());
    let args = args
        .iter()
        .map(|(name, value)| format!("{name} = {value}"))
        .collect::<Vec<_>>()
        .join(", ");
    let inlined = if frame.inlined {
        " [inlined]"
    } else if frame.tail_call {
        " [tail call]"
    } else {
        ""
    };
    match &frame.location {
        Some(location) => format!(
            "{name}({args}){inlined}, line {} in \"{}\"",
            location.line,
            file_name(location)
        ),
        None => {
            let object = frame.object.clone().unwrap_or_else(|| "??".to_string());
            format!(
                "{name}(){inlined} + 0x{:x}, at 0x{:x} in {object}",
                frame.offset, frame.pc
            )
        }
    }
}

/// Source text cache, so listing and stop lines do not re-read files.
#[derive(Default)]
pub struct Sources {
    files: HashMap<PathBuf, Option<Vec<String>>>,
}

impl Sources {
    pub fn line(&mut self, path: &Path, line: u32) -> Option<String> {
        let lines = self.lines(path)?;
        lines.get(line.checked_sub(1)? as usize).cloned()
    }

    pub fn lines(&mut self, path: &Path) -> Option<&Vec<String>> {
        self.files
            .entry(path.to_path_buf())
            .or_insert_with(|| {
                std::fs::read(path).ok().map(|bytes| {
                    String::from_utf8_lossy(&bytes)
                        .lines()
                        .map(str::to_string)
                        .collect()
                })
            })
            .as_ref()
    }
}

/// `    12\tint x = 3;`
pub fn source_line(number: u32, text: &str) -> String {
    format!("{number:>6}\t{text}")
}

pub fn signal_text(signal: i32) -> String {
    format!("{} ({})", signal_name(signal), signal_description(signal))
}

/// `(1) stop in fact -count 3` — the way dbx echoes and lists an event.
pub fn breakpoint_description(bp: &Breakpoint, when_bodies: &[String]) -> String {
    let mut text = format!("({}) ", bp.id());
    let verb = match bp.action() {
        Action::Stop => "stop",
        Action::When(_) => "when",
    };
    match bp.location() {
        LocationSpec::Function(name) => text += &format!("{verb} in {name}"),
        LocationSpec::Line { file, line } => {
            let line = bp.resolved_line().unwrap_or(*line);
            match file {
                Some(file) => text += &format!("{verb} at \"{file}\":{line}"),
                None => text += &format!("{verb} at {line}"),
            }
        }
        LocationSpec::Address(address) => {
            let verb = if verb == "stop" { "stopi" } else { "wheni" };
            text += &format!("{verb} at 0x{address:x}")
        }
    }
    if let Some(condition) = bp.condition() {
        text += &format!(" -if {condition}");
    }
    if let Some(count) = bp.count() {
        text += &format!(" -count {count}");
    }
    if bp.temporary() {
        text += " -temp";
    }
    if let Action::When(index) = *bp.action() {
        if let Some(body) = when_bodies.get(index) {
            text += &format!(" {{ {body} }}");
        }
    }
    text
}

/// gdb's `info registers` layout: name, hex, natural value.
pub fn register_line(name: &str, value: u64) -> String {
    let hex = format!("0x{value:x}");
    let natural = match name {
        "rip" | "rsp" | "rbp" => hex.clone(),
        "eflags" => eflags_text(value),
        _ => (value as i64).to_string(),
    };
    format!("{name:<15}{hex:<19}{natural}")
}

fn eflags_text(value: u64) -> String {
    const FLAGS: [(u32, &str); 9] = [
        (0, "CF"),
        (2, "PF"),
        (4, "AF"),
        (6, "ZF"),
        (7, "SF"),
        (8, "TF"),
        (9, "IF"),
        (10, "DF"),
        (11, "OF"),
    ];
    let set: Vec<&str> = FLAGS
        .iter()
        .filter(|(bit, _)| value & (1 << bit) != 0)
        .map(|(_, name)| *name)
        .collect();
    format!("[ {} ]", set.join(" "))
}

/// `breakpoint (2)`, `breakpoints (2) (3)`.
pub fn breakpoint_ids(ids: &[u32]) -> String {
    let numbers: Vec<String> = ids.iter().map(|id| format!("({id})")).collect();
    let plural = if ids.len() == 1 { "" } else { "s" };
    format!("breakpoint{plural} {}", numbers.join(" "))
}
