//! er_print's annotated listings: `source` (the source text with each
//! line's metrics beside it) and `disasm` (the function's instructions with
//! theirs, source lines interleaved). Hot lines and instructions — at least
//! 75% of the hottest one's value in the listing's file or function — are
//! marked `##`, as er_print does.
//!
//! Where the metrics come from:
//! - a line's value is over the frames whose line (`Frame::line`) is that
//!   line of that file, so with `inlines off` inlined code counts at its
//!   call site, as in the `lines` listing;
//! - an instruction's value is over the frames whose PC falls inside it: a
//!   leaf PC is exact, a caller's is the return address minus one, inside
//!   the call instruction, so a caller's time lands on its call.
//!
//! Source files are looked up through `pathmap` rewrites of the recorded
//! path, the recorded path itself, then the `setpath`/`addpath`
//! directories (see [`find_source`]). When the source cannot be found the
//! `source` listings fail with a message saying where they looked and how
//! to fix it, followed by the lines with code and their metrics (no text),
//! so the numbers are not lost; `disasm` still lists the instructions and
//! only leaves out the interleaved text.

use crate::metrics::{exclusive_inclusive, ExclInclValue, Frame, Value};
use crate::model::*;
use crate::report::{Context, MetricColumn, MetricKind, MetricName, Report, SortKey};
use crate::table::{Column, Table};
use debugger::disasm::{Disassembler, Instruction};
use debugger::symbols::ObjectFile;
use serde_json::{json, Value as Json};
use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::rc::Rc;

/// Lines shown before the first and after the last line of a function.
const CONTEXT_LINES: u32 = 3;

/// er_print's hot-line threshold, in percent of the hottest line.
const HOT_PERCENT: u128 = 75;

/// Where to look for source files (`pathmap`, `setpath`, `addpath`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SourcePaths {
    /// (old prefix, new prefix): a recorded path starting with the old
    /// prefix (whole components) is also looked for under the new one.
    pub pathmaps: Vec<(String, String)>,
    /// Directories searched for the file by its path relative to the
    /// compilation directory and by its basename, in order.
    pub search: Vec<PathBuf>,
}

/// The first existing file among the places `line`'s source may be (see
/// [`source_candidates`]).
pub fn find_source(paths: &SourcePaths, line: &LineEntry) -> Option<PathBuf> {
    source_candidates(paths, line)
        .into_iter()
        .find(|p| p.is_file())
}

/// Where `line`'s source may be, in the order tried: the pathmap rewrites
/// of the recorded absolute path, the recorded path, then each search
/// directory joined with the DWARF (compilation-directory relative) name
/// and with the basename.
pub fn source_candidates(paths: &SourcePaths, line: &LineEntry) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    for (old, new) in paths.pathmaps.iter().filter(|(old, _)| !old.is_empty()) {
        for recorded in [&line.full_path, &line.file] {
            if let Ok(rest) = recorded.strip_prefix(old) {
                out.push(Path::new(new).join(rest));
            }
        }
    }
    out.push(line.full_path.clone());
    for dir in &paths.search {
        if line.file.is_relative() && !line.file.as_os_str().is_empty() {
            out.push(dir.join(&line.file));
        }
        if let Some(name) = line.full_path.file_name() {
            out.push(dir.join(name));
        }
    }
    let mut unique = Vec::with_capacity(out.len());
    for path in out {
        if !unique.contains(&path) {
            unique.push(path);
        }
    }
    unique
}

/// `source FUNC`: the lines of `function`'s source file from its first to
/// its last line with code, with a few lines of context.
pub fn source_for_function(
    ctx: &Context,
    function: FunctionId,
    paths: &SourcePaths,
) -> Result<Report, String> {
    let name = ctx.function_name(function);
    let f = ctx.model.function(function);
    let file = f.object.and_then(|o| object_file_of(ctx.model, o));
    let (source, mut code_lines) =
        function_lines(ctx, function, file.as_deref()).ok_or_else(|| match f.kind {
            FunctionKind::Inlined => format!(
                "{name} exists only inlined; its time is at its call sites (or use `inlines on`)"
            ),
            _ => format!("{name} has no source line information (compiled without -g?)"),
        })?;
    // Lines the experiment saw in this function count as lines with code
    // even when the object file is gone.
    code_lines.extend(frame_lines(
        ctx,
        |frame| frame.function == function,
        &source.full_path,
    ));
    let (first, last) = match (code_lines.first(), code_lines.last()) {
        (Some(&first), Some(&last)) => (first, last),
        _ => return Err(format!("{name} has no source lines")),
    };
    source_listing(
        ctx,
        paths,
        &SourceListing {
            object: f.object.map(|o| ctx.model.object(o).path.clone()),
            function: Some(name),
            range: Some((
                first.saturating_sub(CONTEXT_LINES).max(1),
                last + CONTEXT_LINES,
            )),
            source,
            code_lines,
            no_line: vec![function],
            starts: Vec::new(),
        },
    )
}

/// `source FILE`: the whole file. `file` is matched against the recorded
/// names of source files by whole trailing components (`t.c`, `src/t.c`,
/// or the absolute path).
pub fn source_for_file(ctx: &Context, file: &str, paths: &SourcePaths) -> Result<Report, String> {
    let source = matching_source(ctx, file)?;
    let functions: Vec<FunctionId> = (0..ctx.model.functions.len() as FunctionId)
        .filter(|&id| {
            let f = ctx.model.function(id);
            f.kind == FunctionKind::Normal && f.source.as_ref() == Some(&source.full_path)
        })
        .collect();
    let mut code_lines = BTreeSet::new();
    let mut starts = Vec::new();
    for &id in &functions {
        let f = ctx.model.function(id);
        if let Some(file) = f.object.and_then(|o| object_file_of(ctx.model, o)) {
            let ranges = line_ranges(&file, f.address, f.address + f.size);
            // Its definition's line, else the line of its entry address.
            let entry = ranges
                .iter()
                .find(|(lo, _, _)| *lo == f.address)
                .filter(|(_, _, loc)| loc.full_path == source.full_path)
                .map(|(_, _, loc)| loc.line);
            if let Some(line) = f.source_line.or(entry) {
                starts.push((line, id));
            }
            code_lines.extend(
                ranges
                    .into_iter()
                    .filter(|(_, _, loc)| loc.full_path == source.full_path)
                    .map(|(_, _, loc)| loc.line),
            );
        }
    }
    starts.sort_by_key(|&(line, id)| (line, ctx.function_name(id)));
    code_lines.extend(frame_lines(ctx, |_| true, &source.full_path));
    let object = functions
        .iter()
        .find_map(|&id| ctx.model.function(id).object)
        .or_else(|| object_with_lines_of(ctx, &source.full_path))
        .map(|o| ctx.model.object(o).path.clone());
    source_listing(
        ctx,
        paths,
        &SourceListing {
            object,
            function: None,
            range: None,
            source,
            code_lines,
            no_line: functions,
            starts,
        },
    )
}

/// `disasm FUNC`: the function's instructions, decoded from the object file
/// its symbols were read from, with their metrics and source lines.
pub fn disasm_for_function(
    ctx: &Context,
    function: FunctionId,
    paths: &SourcePaths,
) -> Result<Report, String> {
    let name = ctx.function_name(function);
    let f = ctx.model.function(function);
    if f.kind == FunctionKind::Inlined {
        return Err(format!(
            "{name} exists only inlined into other functions; disassemble those"
        ));
    }
    let object_id = f
        .object
        .ok_or_else(|| format!("{name} is not code of any load object"))?;
    let object = ctx.model.object(object_id);
    let file = object_file_of(ctx.model, object_id).ok_or_else(|| {
        format!(
            "cannot disassemble {name}: {} could not be read (see the load warnings)",
            object.path.display()
        )
    })?;
    let (lo, hi) =
        code_range(f, &file).ok_or_else(|| format!("the extent of {name} is unknown"))?;
    let bytes = code_bytes(&file, lo, hi)
        .ok_or_else(|| format!("{name}'s code (0x{lo:x}..0x{hi:x}) is not in the file"))?;
    let disassembler = Disassembler::new().map_err(|e| e.to_string())?;
    let instructions = decode_all(&disassembler, bytes, lo);
    let values = instruction_values(ctx, object_id, &instructions);
    Ok(disasm_listing(
        ctx,
        paths,
        &DisasmInput {
            function: ctx.function_name(function),
            object: &object.path,
            file: &file,
            instructions: &instructions,
            values: &values,
        },
    ))
}

/// `disasm FILE`: the disassembly of every function defined in the file
/// that the experiment saw, in address order.
pub fn disasm_for_file(ctx: &Context, file: &str, paths: &SourcePaths) -> Result<Report, String> {
    let source = matching_source(ctx, file)?;
    let mut functions: Vec<FunctionId> = (0..ctx.model.functions.len() as FunctionId)
        .filter(|&id| {
            let f = ctx.model.function(id);
            f.kind == FunctionKind::Normal && f.source.as_ref() == Some(&source.full_path)
        })
        .collect();
    functions.sort_by_key(|&id| {
        (
            ctx.model.function(id).object,
            ctx.model.function(id).address,
        )
    });
    if functions.is_empty() {
        return Err(format!(
            "no function of {} was seen in the experiment",
            source.full_path.display()
        ));
    }
    let mut text = String::new();
    let mut blocks = Vec::new();
    for id in functions {
        match disasm_for_function(ctx, id, paths) {
            Ok(report) => {
                text.push_str(&report.text);
                blocks.push(report.json);
            }
            Err(e) => text.push_str(&format!("{e}\n")),
        }
        text.push('\n');
    }
    let json = json!({
        "report": "disasm",
        "file": source.full_path.display().to_string(),
        "functions": blocks,
    });
    Ok(Report { text, json })
}

// ---------------------------------------------------------------------
// Shared pieces: object files, line ranges, values, hot marks, tables.

/// The opened object file for `object`'s symbols, opened once per thread
/// (opening maps the file for good; the REPL asks again and again).
fn object_file_of(model: &Model, object: ObjectId) -> Option<Rc<ObjectFile>> {
    let path = model.object(object).symbols_from.as_ref()?;
    object_file(path)
}

type FileKey = (PathBuf, u64, Option<std::time::SystemTime>);

thread_local! {
    static OBJECT_FILES: RefCell<HashMap<FileKey, Option<Rc<ObjectFile>>>> =
        RefCell::new(HashMap::new());
}

fn object_file(path: &Path) -> Option<Rc<ObjectFile>> {
    // Keyed by size and mtime too: a rebuilt file is opened afresh.
    let meta = std::fs::metadata(path).ok()?;
    let key = (path.to_path_buf(), meta.len(), meta.modified().ok());
    OBJECT_FILES.with(|cache| {
        cache
            .borrow_mut()
            .entry(key)
            .or_insert_with(|| ObjectFile::open(path).ok().map(Rc::new))
            .clone()
    })
}

/// The line-table ranges covering [lo, hi): (start, end, location), line 0
/// (compiler-generated code) left out.
fn line_ranges(
    file: &ObjectFile,
    lo: u64,
    hi: u64,
) -> Vec<(u64, u64, debugger::symbols::SourceLocation)> {
    let mut out = Vec::new();
    if !file.has_debug_info() {
        return out;
    }
    let mut addr = lo;
    while addr < hi {
        match file.line_range_at(addr) {
            Some(range) => {
                let next = range.end.max(addr + 1);
                if range.location.line != 0 {
                    out.push((range.start, range.end, range.location));
                }
                addr = next;
            }
            None => addr += 1,
        }
    }
    out
}

/// The function's source file (where its first line with code is) and its
/// lines with code there; from the line table when the object file is
/// readable, else from the lines the experiment saw in it.
fn function_lines(
    ctx: &Context,
    function: FunctionId,
    file: Option<&ObjectFile>,
) -> Option<(LineEntry, BTreeSet<u32>)> {
    let f = ctx.model.function(function);
    if let Some(file) = file.filter(|_| f.kind == FunctionKind::Normal) {
        if let Some((lo, hi)) = code_range(f, file) {
            let ranges = line_ranges(file, lo, hi);
            if let Some((_, _, first)) = ranges.first() {
                let source = LineEntry {
                    file: first.file.clone(),
                    full_path: first.full_path.clone(),
                    line: first.line,
                };
                let lines = ranges
                    .iter()
                    .filter(|(_, _, l)| l.full_path == source.full_path)
                    .map(|(_, _, l)| l.line)
                    .collect();
                return Some((source, lines));
            }
        }
    }
    // The file most of the function's recorded lines are in.
    let mut counts: HashMap<LineId, usize> = HashMap::new();
    ctx.view.for_each_stack(|_, frames| {
        for &id in frames {
            let frame = ctx.view.frame(id);
            if let (true, Some(line)) = (frame.function == function, frame.line) {
                *counts.entry(line).or_default() += 1;
            }
        }
    });
    let mut by_file: HashMap<&Path, usize> = HashMap::new();
    for (&line, &n) in &counts {
        *by_file
            .entry(ctx.model.line(line).full_path.as_path())
            .or_default() += n;
    }
    let best = by_file
        .into_iter()
        .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(a.0)))?
        .0;
    let entry = ctx
        .model
        .lines
        .iter()
        .find(|l| l.full_path == best)?
        .clone();
    Some((entry, BTreeSet::new()))
}

/// Line numbers of `full_path` seen in frames `keep` accepts.
fn frame_lines(ctx: &Context, keep: impl Fn(&Frame) -> bool, full_path: &Path) -> BTreeSet<u32> {
    // Each PC's frames once, for the PCs the stacks hold: not each frame
    // of every stack (a hundred million at a million stacks 200 deep).
    let held = ctx.model.stacks.pcs_in_stacks(ctx.model.pcs.len());
    (held.iter().enumerate())
        .filter(|&(_, &held)| held)
        .flat_map(|(pc, _)| {
            let (start, end) = ctx.view.pc_frame_range(pc as PcId);
            (start..end).map(|id| ctx.view.frame(id))
        })
        .filter(|f| keep(f))
        .filter_map(|f| f.line)
        .map(|l| ctx.model.line(l))
        .filter(|l| l.full_path == full_path)
        .map(|l| l.line)
        .collect()
}

/// The recorded source file `query` names, or why there is none or more
/// than one.
fn matching_source(ctx: &Context, query: &str) -> Result<LineEntry, String> {
    let query_path = Path::new(query);
    let mut found: Vec<LineEntry> = Vec::new();
    let mut add = |entry: LineEntry| {
        if !found.iter().any(|e| e.full_path == entry.full_path) {
            found.push(entry);
        }
    };
    for line in &ctx.model.lines {
        if line.file.ends_with(query_path) || line.full_path.ends_with(query_path) {
            add(line.clone());
        }
    }
    for f in &ctx.model.functions {
        if let Some(source) = f.source.as_ref().filter(|s| s.ends_with(query_path)) {
            add(LineEntry {
                file: source.clone(),
                full_path: source.clone(),
                line: 0,
            });
        }
    }
    match found.len() {
        0 => Err(format!(
            "no source file matching \"{query}\" in the experiment's line information"
        )),
        1 => Ok(found.remove(0)),
        _ => Err(format!(
            "\"{query}\" matches several source files; give more of the path: {}",
            found
                .iter()
                .map(|e| e.full_path.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

/// An object whose PCs have lines in `full_path`.
fn object_with_lines_of(ctx: &Context, full_path: &Path) -> Option<ObjectId> {
    ctx.model.pcs.iter().find_map(|pc| {
        let line = ctx.model.line(pc.line?);
        (line.full_path == full_path).then_some(pc.object).flatten()
    })
}

/// [lo, hi) of a function's code: its recorded extent, else the DWARF or
/// symbol-table extent at its address.
fn code_range(f: &FunctionEntry, file: &ObjectFile) -> Option<(u64, u64)> {
    if f.size > 0 {
        return Some((f.address, f.address + f.size));
    }
    if f.address == 0 || f.kind != FunctionKind::Normal {
        return None;
    }
    file.function_at(f.address)
        .map(|info| (info.low_pc, info.high_pc))
        .or_else(|| {
            file.symbol_at(f.address)
                .filter(|s| s.size > 0)
                .map(|s| (s.address, s.address + s.size))
        })
        .filter(|(lo, hi)| lo < hi)
}

/// The file bytes of link-time addresses [lo, hi), from the PT_LOAD
/// segment holding them.
fn code_bytes(file: &ObjectFile, lo: u64, hi: u64) -> Option<&'static [u8]> {
    let segment = file
        .segments()
        .iter()
        .find(|s| lo >= s.vaddr && lo < s.vaddr + s.filesz)?;
    let start = usize::try_from(segment.offset + (lo - segment.vaddr)).ok()?;
    let end =
        usize::try_from(segment.offset + (hi.min(segment.vaddr + segment.filesz) - segment.vaddr))
            .ok()?;
    file.elf_bytes().get(start..end)
}

/// Every instruction of `bytes`; a byte that does not decode becomes a
/// one-byte `(bad)` and decoding goes on after it.
fn decode_all(disassembler: &Disassembler, bytes: &[u8], address: u64) -> Vec<Instruction> {
    let mut out: Vec<Instruction> = Vec::new();
    let mut offset = 0usize;
    while offset < bytes.len() {
        let at = address + offset as u64;
        let decoded = disassembler.decode(&bytes[offset..], at, usize::MAX);
        match decoded.last() {
            Some(last) => {
                offset = (last.end_address() - address) as usize;
                out.extend(decoded);
            }
            None => {
                out.push(Instruction {
                    address: at,
                    bytes: vec![bytes[offset]],
                    mnemonic: "(bad)".into(),
                    operands: String::new(),
                    branch_target: None,
                    rip_relative_target: None,
                    is_call: false,
                    is_return: false,
                    is_jump: false,
                });
                offset += 1;
            }
        }
    }
    out
}

/// Values per instruction index: each recorded PC of the object inside the
/// decoded range goes to the instruction containing it.
fn instruction_values(
    ctx: &Context,
    object: ObjectId,
    instructions: &[Instruction],
) -> HashMap<usize, ExclInclValue> {
    let (Some(first), Some(last)) = (instructions.first(), instructions.last()) else {
        return HashMap::new();
    };
    let (lo, hi) = (first.address, last.end_address());
    let mut containing: HashMap<PcId, usize> = HashMap::new();
    for (id, pc) in ctx.model.pcs.iter().enumerate() {
        if pc.object == Some(object) && pc.offset >= lo && pc.offset < hi {
            let index = instructions.partition_point(|i| i.address <= pc.offset) - 1;
            containing.insert(id as PcId, index);
        }
    }
    exclusive_inclusive(ctx.view, ctx.weights, |frame| {
        frame.pc.and_then(|pc| containing.get(&pc).copied())
    })
}

/// How the metric columns of an annotated listing look: the visible
/// exclusive and inclusive metrics (with events when asked for), and which
/// one decides hotness (the sort metric).
struct MetricLayout {
    columns: Vec<(MetricName, MetricKind, bool)>,
    hot: (MetricName, MetricKind),
}

impl MetricLayout {
    /// The number that decides whether a line is hot.
    fn hot_value(&self, value: &ExclInclValue) -> u64 {
        pick(value, self.hot.1).get(self.hot.0)
    }
}

fn metric_layout(ctx: &Context) -> MetricLayout {
    let mut columns: Vec<(MetricName, MetricKind, bool)> = Vec::new();
    for column in &ctx.settings.columns {
        if let MetricColumn::Metric {
            metric,
            kind,
            parts,
        } = *column
        {
            let visible = parts.value || parts.percent || parts.count;
            let known = columns.iter().any(|c| (c.0, c.1) == (metric, kind));
            if kind != MetricKind::Attributed && visible && !known {
                columns.push((metric, kind, parts.count));
            }
        }
    }
    if columns.is_empty() {
        columns = vec![
            (MetricName::TotalCpu, MetricKind::Exclusive, false),
            (MetricName::TotalCpu, MetricKind::Inclusive, false),
        ];
    }
    let hot = match ctx.settings.sort {
        SortKey::Metric(metric, MetricKind::Exclusive) => (metric, MetricKind::Exclusive),
        SortKey::Metric(metric, _) => (metric, MetricKind::Inclusive),
        SortKey::Name | SortKey::Size | SortKey::Address => (columns[0].0, MetricKind::Exclusive),
    };
    MetricLayout { columns, hot }
}

fn pick(value: &ExclInclValue, kind: MetricKind) -> Value {
    match kind {
        MetricKind::Exclusive => value.exclusive,
        MetricKind::Inclusive | MetricKind::Attributed => value.inclusive,
    }
}

fn is_hot(value: u64, hottest: u64) -> bool {
    value > 0 && u128::from(value) * 100 >= u128::from(hottest) * HOT_PERCENT
}

/// The JSON of a line's (or instruction's) values: the clock's under
/// `exclusive` and `inclusive`, each heap metric under its own key.
fn values_json(ctx: &Context, value: Option<ExclInclValue>) -> serde_json::Map<String, Json> {
    let total = ctx.total();
    let mut map = serde_json::Map::new();
    map.insert(
        "exclusive".into(),
        json!(value.map(|v| crate::report::value_json(v.exclusive, total))),
    );
    map.insert(
        "inclusive".into(),
        json!(value.map(|v| crate::report::value_json(v.inclusive, total))),
    );
    let v = value.unwrap_or_default();
    map.extend(crate::report::traced_json(
        ctx,
        &[("exclusive", v.exclusive), ("inclusive", v.inclusive)],
    ));
    map
}

/// `json` with the values of `value` added.
fn with_values(ctx: &Context, mut json: Json, value: Option<ExclInclValue>) -> Json {
    if let Some(map) = json.as_object_mut() {
        map.extend(values_json(ctx, value));
    }
    json
}

/// One row of an annotated listing: metrics (None: blank, for lines
/// without code and interleaved source) and text.
struct Row {
    hot: bool,
    value: Option<ExclInclValue>,
    text: String,
}

fn render(layout: &MetricLayout, rows: &[Row]) -> String {
    let mut columns = vec![Column::text("")];
    for &(metric, kind, count) in &layout.columns {
        let kind_label = match kind {
            MetricKind::Exclusive => "Excl.",
            _ => "Incl.",
        };
        match metric {
            MetricName::TotalCpu => {
                columns.push(Column::number(&format!("{kind_label} Total"), "CPU sec."))
            }
            m => columns.push(Column::number(kind_label, m.title())),
        }
        if count {
            columns.push(Column::number("", "events"));
        }
    }
    columns.push(Column::text(""));
    let mut table = Table::new(columns);
    for row in rows {
        let mut cells = vec![if row.hot { "##" } else { "" }.to_string()];
        for &(metric, kind, count) in &layout.columns {
            let value = row.value.map(|v| pick(&v, kind));
            cells.push(
                value
                    .map(|v| crate::report::metric_text(metric, v))
                    .unwrap_or_default(),
            );
            if count {
                cells.push(
                    value
                        .map(|v| v.count(metric).to_string())
                        .unwrap_or_default(),
                );
            }
        }
        cells.push(row.text.clone());
        table.push(cells);
    }
    table.render()
}

/// Tabs expanded to 8-column stops, so the text stays aligned after the
/// metric columns.
fn expand_tabs(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    for c in line.chars() {
        if c == '\t' {
            let pad = 8 - out.chars().count() % 8;
            out.push_str(&" ".repeat(pad));
        } else {
            out.push(c);
        }
    }
    out
}

fn read_lines(path: &Path) -> Option<Vec<String>> {
    let bytes = std::fs::read(path).ok()?;
    Some(
        String::from_utf8_lossy(&bytes)
            .lines()
            .map(|l| expand_tabs(l.trim_end_matches('\r')))
            .collect(),
    )
}

fn not_found_message(paths: &SourcePaths, source: &LineEntry) -> String {
    let looked: Vec<String> = source_candidates(paths, source)
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    let dir = source
        .full_path
        .parent()
        .map_or(String::from("OLD"), |d| d.display().to_string());
    format!(
        "source file {} not found (looked for {}); use `pathmap {dir} NEWDIR` if the \
         tree moved, or `setpath DIR` / `addpath DIR` to search directories",
        source.full_path.display(),
        looked.join(", ")
    )
}

// ---------------------------------------------------------------------
// `source`

struct SourceListing {
    /// The file as recorded (`line` unused).
    source: LineEntry,
    object: Option<PathBuf>,
    /// The function listed, for the header.
    function: Option<String>,
    /// First and last line shown (None: the whole file).
    range: Option<(u32, u32)>,
    /// Lines with code: shown as 0.000 rather than blank when idle.
    code_lines: BTreeSet<u32>,
    /// Functions whose time without line numbers gets a final row.
    no_line: Vec<FunctionId>,
    /// `<Function: f>` rows, before the line each function starts at
    /// (`source FILE`, where several functions share the listing).
    starts: Vec<(u32, FunctionId)>,
}

fn source_listing(
    ctx: &Context,
    paths: &SourcePaths,
    listing: &SourceListing,
) -> Result<Report, String> {
    let layout = metric_layout(ctx);
    let full_path = &listing.source.full_path;
    let (values, no_line) = line_values(ctx, listing);
    let hottest = values
        .values()
        .map(|v| layout.hot_value(v))
        .max()
        .unwrap_or(0);
    let found = find_source(paths, &listing.source);
    let text = found.as_deref().and_then(read_lines);
    let value_of = |line: u32| -> Option<ExclInclValue> {
        values.get(&line).copied().or_else(|| {
            listing
                .code_lines
                .contains(&line)
                .then(ExclInclValue::default)
        })
    };
    let last_line = values
        .keys()
        .chain(listing.code_lines.iter())
        .copied()
        .max()
        .unwrap_or(0);
    let (first, last) = match (listing.range, &text) {
        (Some((a, b)), Some(text)) => (a, b.min(text.len() as u32)),
        (Some((a, b)), None) => (a, b),
        (None, Some(text)) => (1, (text.len() as u32).max(last_line)),
        (None, None) => (1, last_line),
    };
    let width = last.to_string().len();
    let mut rows = Vec::new();
    let mut lines_json = Vec::new();
    let mut functions_json = Vec::new();
    let function_values = match listing.starts.is_empty() {
        true => HashMap::new(),
        false => crate::metrics::function_metrics(ctx.view, ctx.weights),
    };
    let mut starts = listing.starts.iter().peekable();
    for line in first..=last {
        while let Some(&(_, function)) = starts.next_if(|(start, _)| *start <= line) {
            let name = ctx.function_name(function);
            let value = function_values.get(&function).copied().unwrap_or_default();
            rows.push(Row {
                hot: false,
                value: Some(value),
                text: format!("{:width$}  <Function: {name}>", ""),
            });
            functions_json.push(with_values(
                ctx,
                json!({"function": name, "line": line}),
                Some(value),
            ));
        }
        let value = value_of(line);
        let line_text = text
            .as_ref()
            .and_then(|t| t.get(line as usize - 1))
            .map(String::as_str);
        if text.is_none() && value.is_none() {
            continue;
        }
        let hot = value.is_some_and(|v| is_hot(layout.hot_value(&v), hottest));
        rows.push(Row {
            hot,
            value,
            text: format!("{line:>width$}. {}", line_text.unwrap_or("")),
        });
        lines_json.push(with_values(
            ctx,
            json!({"line": line, "text": line_text, "hot": hot}),
            value,
        ));
    }
    let mut no_line_json = Vec::new();
    for (function, value) in &no_line {
        let name = ctx.function_name(*function);
        rows.push(Row {
            hot: false,
            value: Some(*value),
            text: format!("<Function: {name}, instructions without line numbers>"),
        });
        no_line_json.push(with_values(ctx, json!({"function": name}), Some(*value)));
    }
    let table = render(&layout, &rows);
    let Some(found) = found.filter(|_| text.is_some()) else {
        return Err(format!(
            "{}\n\nLines with code and their metrics (source text unavailable):\n{table}",
            not_found_message(paths, &listing.source)
        ));
    };
    let mut header = format!("Source file: {}\n", found.display());
    if found != *full_path {
        header.push_str(&format!("  (recorded as {})\n", full_path.display()));
    }
    if let Some(object) = &listing.object {
        header.push_str(&format!("Object file: {}\n", object.display()));
    }
    if let Some(function) = &listing.function {
        header.push_str(&format!("Function: {function}\n"));
    }
    // As er_print: an edited source no longer matches the recorded lines.
    if listing.object.as_deref().is_some_and(|o| newer(&found, o)) {
        header.push_str("Warning: the source file is newer than the object file\n");
    }
    header.push_str(&ctx.notes_text());
    let json = ctx.with_notes(json!({
        "report": "source",
        "file": full_path.display().to_string(),
        "found": found.display().to_string(),
        "object": listing.object.as_ref().map(|o| o.display().to_string()),
        "function": listing.function,
        "lines": lines_json,
        "functions": functions_json,
        "no_line": no_line_json,
    }));
    Ok(Report {
        text: format!("{header}\n{table}"),
        json,
    })
}

fn newer(a: &Path, b: &Path) -> bool {
    let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    matches!((modified(a), modified(b)), (Some(a), Some(b)) if a > b)
}

/// A row of a source listing with a value: a line of the file, or a
/// function's time in frames without a line.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum SourceRow {
    Line(u32),
    NoLine(FunctionId),
}

/// The values of the listing's lines, and of its functions' frames
/// without a line (those with some, sorted by function): one walk.
fn line_values(
    ctx: &Context,
    listing: &SourceListing,
) -> (
    HashMap<u32, ExclInclValue>,
    Vec<(FunctionId, ExclInclValue)>,
) {
    let full_path = &listing.source.full_path;
    let values = exclusive_inclusive(ctx.view, ctx.weights, |frame| match frame.line {
        Some(line) => {
            let line = ctx.model.line(line);
            (line.full_path == *full_path).then_some(SourceRow::Line(line.line))
        }
        None => {
            (listing.no_line.contains(&frame.function)).then_some(SourceRow::NoLine(frame.function))
        }
    });
    let mut lines = HashMap::new();
    let mut no_line = Vec::new();
    for (row, value) in values {
        match row {
            SourceRow::Line(line) => {
                lines.insert(line, value);
            }
            SourceRow::NoLine(function) => no_line.push((function, value)),
        }
    }
    no_line.sort_by_key(|(f, _)| *f);
    (lines, no_line)
}

// ---------------------------------------------------------------------
// `disasm`

struct DisasmInput<'a> {
    function: String,
    object: &'a Path,
    file: &'a ObjectFile,
    instructions: &'a [Instruction],
    values: &'a HashMap<usize, ExclInclValue>,
}

fn disasm_listing(ctx: &Context, paths: &SourcePaths, input: &DisasmInput) -> Report {
    let layout = metric_layout(ctx);
    let hottest = input
        .values
        .values()
        .map(|v| layout.hot_value(v))
        .max()
        .unwrap_or(0);
    let locations: Vec<Option<LineEntry>> = input
        .instructions
        .iter()
        .map(|i| {
            input.file.location_at(i.address).map(|l| LineEntry {
                file: l.file,
                full_path: l.full_path,
                line: l.line,
            })
        })
        .collect();
    let width = locations
        .iter()
        .flatten()
        .map(|l| l.line.to_string().len())
        .max()
        .unwrap_or(1);
    let mut texts: HashMap<PathBuf, Option<Vec<String>>> = HashMap::new();
    let mut missing: Vec<String> = Vec::new();
    let mut rows = Vec::new();
    let mut json_rows = Vec::new();
    let mut previous: Option<&LineEntry> = None;
    for (index, insn) in input.instructions.iter().enumerate() {
        let location = locations[index].as_ref();
        if let Some(loc) = location.filter(|l| Some(*l) != previous) {
            let text = texts
                .entry(loc.full_path.clone())
                .or_insert_with(|| {
                    let text = find_source(paths, loc).and_then(|p| read_lines(&p));
                    if text.is_none() {
                        missing.push(not_found_message(paths, loc));
                    }
                    text
                })
                .as_ref()
                .and_then(|t| t.get((loc.line as usize).saturating_sub(1)))
                .cloned();
            rows.push(Row {
                hot: false,
                value: None,
                text: format!(
                    "{:>w$}. {}",
                    loc.line,
                    text.as_deref().unwrap_or(""),
                    w = width + 2
                ),
            });
            json_rows.push(json!({
                "kind": "source",
                "file": loc.full_path.display().to_string(),
                "line": loc.line,
                "text": text,
            }));
        }
        previous = location;
        let value = input.values.get(&index).copied().unwrap_or_default();
        let hot = is_hot(layout.hot_value(&value), hottest);
        let code = instruction_text(input.file, insn);
        let line = location.map_or("?".to_string(), |l| l.line.to_string());
        rows.push(Row {
            hot,
            value: Some(value),
            text: format!("[{line:>width$}] {:>x}:  {code}", insn.address),
        });
        json_rows.push(with_values(
            ctx,
            json!({
                "kind": "instruction",
                "address": insn.address,
                "line": location.map(|l| l.line),
                "bytes": insn.bytes.iter().map(|b| format!("{b:02x}")).collect::<String>(),
                "text": code,
                "hot": hot,
            }),
            Some(value),
        ));
    }
    let mut text = format!("Disassembly of {}\n", input.function);
    if let Some(first) = locations.iter().flatten().next() {
        text.push_str(&format!("Source file: {}\n", first.full_path.display()));
    }
    text.push_str(&format!("Object file: {}\n", input.object.display()));
    for message in &missing {
        text.push_str(&format!("Note: {message}\n"));
    }
    text.push_str(&ctx.notes_text());
    text.push('\n');
    text.push_str(&render(&layout, &rows));
    let json = ctx.with_notes(json!({
        "report": "disasm",
        "function": input.function,
        "object": input.object.display().to_string(),
        "source_missing": missing,
        "rows": json_rows,
    }));
    Report { text, json }
}

/// `mov    %rsp,%rbp`, with `<f+0x12>` after a branch target, as `dis`.
fn instruction_text(file: &ObjectFile, insn: &Instruction) -> String {
    let mut text = format!("{:<6} {}", insn.mnemonic, insn.operands);
    if let Some(target) = insn.branch_target {
        if let Some(symbol) = file.symbol_at(target).filter(|s| s.is_function) {
            let offset = target.saturating_sub(symbol.address);
            if offset == 0 {
                text.push_str(&format!(" <{}>", symbol.name));
            } else {
                text.push_str(&format!(" <{}+0x{offset:x}>", symbol.name));
            }
        }
    }
    text.trim_end().to_string()
}
