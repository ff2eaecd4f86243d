//! gprofng's I/O tracing views: `ioactivity` (per file name), `iodetail`
//! (per opening of a file: its "virtual file descriptor"), `iocallstack`
//! (per call stack) and `iostat` (sizes and extremes), from the traced calls
//! the loader placed in the model.

use crate::metrics::Value;
use crate::model::*;
use crate::report::{Context, Keep, Report, ViewMetrics};
use crate::table::{seconds, Column, Table};
use commands::MetricName;
use experiment::io::IoOp;
use rustc_hash::FxHashMap;
use serde_json::{json, Value as Json};

/// The I/O metrics every I/O view shows, in column order.
pub const IO_METRICS: [MetricName; 11] = MetricName::IO;

/// Places one experiment's calls (with each call's `aux_fd` and path) in
/// the model: in order of their start, each call is given the opening of
/// the file its descriptor stood for at the time. An open or a dup starts
/// an opening, a close ends it; a descriptor first met in another call was
/// opened before tracing and gets an opening named after it.
pub(crate) fn place_calls(
    experiment: u16,
    mut calls: Vec<(IoEntry, i32, Option<String>)>,
    io: &mut Vec<IoEntry>,
    files: &mut Vec<IoFile>,
) {
    calls.sort_by_key(|(entry, _, _)| entry.time_ns);
    let mut open: FxHashMap<i32, u32> = FxHashMap::default();
    let start_file = |files: &mut Vec<IoFile>, name: String, fd: i32, at: u64| {
        files.push(IoFile {
            experiment,
            name,
            fd,
            opened_ns: at,
            closed_ns: None,
        });
        files.len() as u32 - 1
    };
    io.reserve(calls.len());
    for (mut entry, aux_fd, name) in calls {
        let at = entry.time_ns;
        let current = |open: &mut FxHashMap<i32, u32>, files: &mut Vec<IoFile>, fd: i32| {
            *open
                .entry(fd)
                .or_insert_with(|| start_file(files, unopened_name(fd), fd, at))
        };
        entry.file = match entry.op {
            IoOp::Open | IoOp::Dup if entry.failed || entry.fd < 0 => {
                // A failed open still names its file; it makes no descriptor.
                let name = match (entry.op, name) {
                    (IoOp::Open, Some(name)) => name,
                    _ => unopened_name(aux_fd),
                };
                let file = start_file(files, name, -1, at);
                files[file as usize].closed_ns = Some(at + entry.call_ns);
                file
            }
            IoOp::Open | IoOp::Dup => {
                let name = match entry.op {
                    IoOp::Open => name.unwrap_or_else(|| unopened_name(entry.fd)),
                    _ => {
                        let from = current(&mut open, files, aux_fd);
                        files[from as usize].name.clone()
                    }
                };
                // A descriptor reused without a traced close (closed inside
                // the C library, or by dup2 over it) ends its old opening.
                if let Some(old) = open.remove(&entry.fd) {
                    files[old as usize].closed_ns.get_or_insert(at);
                }
                let file = start_file(files, name, entry.fd, at);
                open.insert(entry.fd, file);
                file
            }
            IoOp::Close => {
                let file = current(&mut open, files, entry.fd);
                if !entry.failed {
                    open.remove(&entry.fd);
                    files[file as usize].closed_ns = Some(at + entry.call_ns);
                }
                file
            }
            IoOp::Transfer => {
                entry.source = current(&mut open, files, aux_fd);
                current(&mut open, files, entry.fd)
            }
            _ => current(&mut open, files, entry.fd),
        };
        io.push(entry);
    }
}

/// The name of a descriptor the program did not open while traced.
fn unopened_name(fd: i32) -> String {
    match fd {
        0 => "<stdin>".to_string(),
        1 => "<stdout>".to_string(),
        2 => "<stderr>".to_string(),
        fd => format!("<fd {fd}>"),
    }
}

/// Sums of the selected calls by a key, with the total, most time first
/// (ties by key).
fn sums_by<K: std::hash::Hash + Ord + Copy>(
    model: &Model,
    keep: Keep,
    key: impl Fn(&IoEntry) -> K,
) -> (Vec<(K, Value)>, Value) {
    sums_of_parts(model, keep, |entry, each| {
        each(key(entry), Value::of_io(entry))
    })
}

/// Sums per opening of a file: a transfer's read counts in its source's,
/// its write (and time) in its destination's.
fn sums_by_file(model: &Model, keep: Keep) -> (Vec<(u32, Value)>, Value) {
    sums_of_parts(model, keep, |entry, each| {
        let whole = Value::of_io(entry);
        if entry.source == NO_FILE {
            return each(entry.file, whole);
        }
        // A failed transfer read nothing: an error of its destination.
        if whole.reads > 0 {
            let read = Value {
                reads: whole.reads,
                read_bytes: whole.read_bytes,
                ..Value::default()
            };
            each(entry.source, read);
        }
        each(
            entry.file,
            Value {
                reads: 0,
                read_bytes: 0,
                ..whole
            },
        );
    })
}

/// Sums of the parts `parts` gives each selected call (a key and a
/// value, once or more), with the total of the calls.
fn sums_of_parts<K: std::hash::Hash + Ord + Copy>(
    model: &Model,
    keep: Keep,
    parts: impl Fn(&IoEntry, &mut dyn FnMut(K, Value)),
) -> (Vec<(K, Value)>, Value) {
    let mut sums: FxHashMap<K, Value> = FxHashMap::default();
    let mut total = Value::default();
    for entry in model.io.iter().filter(|e| keep(&e.as_event())) {
        total.add(Value::of_io(entry));
        parts(entry, &mut |key, value| {
            sums.entry(key).or_default().add(value)
        });
    }
    let mut list: Vec<(K, Value)> = sums.into_iter().collect();
    list.sort_by_key(|&(key, v)| (std::cmp::Reverse((v.io_ns, v.io_calls())), key));
    (list, total)
}

/// The columns, cells and JSON of the I/O views.
const VIEW: ViewMetrics = ViewMetrics(&IO_METRICS);

fn no_io(ctx: &Context, report: &str) -> Option<Report> {
    ctx.model.io.is_empty().then(|| Report {
        text: "no I/O tracing data (collect with -i on, or collector iotrace on)\n".to_string(),
        json: json!({"report": report, "files": [], "message": "no I/O tracing data"}),
    })
}

/// `ioactivity`: per file name.
pub fn activity(ctx: &Context, keep: Keep) -> Report {
    if let Some(empty) = no_io(ctx, "ioactivity") {
        return empty;
    }
    let files = &ctx.model.io_files;
    let (by_file, total) = sums_by_file(ctx.model, keep);
    let mut by_name: FxHashMap<&str, Value> = FxHashMap::default();
    for (file, value) in by_file {
        by_name
            .entry(files[file as usize].name.as_str())
            .or_default()
            .add(value);
    }
    let mut list: Vec<(&str, Value)> = by_name.into_iter().collect();
    list.sort_by_key(|&(name, v)| (std::cmp::Reverse((v.io_ns, v.io_calls())), name));
    let limit = ctx.settings.limit.unwrap_or(usize::MAX);
    let mut columns = VIEW.columns();
    columns.push(Column::text("Name"));
    let mut table = Table::new(columns);
    let mut rows = Vec::new();
    let mut row = |name: &str, value: &Value| {
        let mut cells = VIEW.cells(value);
        cells.push(name.to_string());
        table.push(cells);
        let mut json = VIEW.json(value);
        json.insert("name".into(), json!(name));
        Json::Object(json)
    };
    let total_json = row(TOTAL_NAME, &total);
    for (name, value) in list.iter().take(limit) {
        rows.push(row(name, value));
    }
    Report {
        text: table.render(),
        json: json!({"report": "ioactivity", "total": total_json, "files": rows}),
    }
}

/// `iodetail`: per opening of a file.
pub fn detail(ctx: &Context, keep: Keep) -> Report {
    if let Some(empty) = no_io(ctx, "iodetail") {
        return empty;
    }
    let (list, total) = sums_by_file(ctx.model, keep);
    let limit = ctx.settings.limit.unwrap_or(usize::MAX);
    let mut columns = VIEW.columns();
    columns.push(Column::number("Opened", "sec."));
    columns.push(Column::number("Closed", "sec."));
    columns.push(Column::text("Name"));
    let mut table = Table::new(columns);
    let mut total_cells = VIEW.cells(&total);
    total_cells.extend([String::new(), String::new(), TOTAL_NAME.to_string()]);
    table.push(total_cells);
    let mut rows = Vec::new();
    for (file, value) in list.iter().take(limit) {
        let entry = &ctx.model.io_files[*file as usize];
        let since = |ns: u64| ns.saturating_sub(experiment_start(ctx.model, entry.experiment));
        let name = format!("{} (IOVFD={}, FD={})", entry.name, file, entry.fd);
        let mut row = VIEW.cells(value);
        row.push(seconds(since(entry.opened_ns)));
        row.push(
            entry
                .closed_ns
                .map(|t| seconds(since(t)))
                .unwrap_or_default(),
        );
        row.push(name);
        table.push(row);
        let mut json = VIEW.json(value);
        json.insert("name".into(), json!(entry.name));
        json.insert("vfd".into(), json!(file));
        json.insert("fd".into(), json!(entry.fd));
        json.insert("opened".into(), json!(since(entry.opened_ns) as f64 / 1e9));
        json.insert(
            "closed".into(),
            json!(entry.closed_ns.map(|t| since(t) as f64 / 1e9)),
        );
        rows.push(Json::Object(json));
    }
    Report {
        text: table.render(),
        json: json!({
            "report": "iodetail",
            "total": Json::Object(VIEW.json(&total)),
            "files": rows,
        }),
    }
}

/// Nanoseconds from the model's origin to `experiment`'s start.
fn experiment_start(model: &Model, experiment: u16) -> u64 {
    model
        .experiments
        .get(usize::from(experiment))
        .map_or(0, |e| e.start_ns.saturating_sub(model.origin_ns))
}

/// `iocallstack`: per call stack, its frames leaf first.
pub fn callstacks(ctx: &Context, keep: Keep) -> Report {
    if let Some(empty) = no_io(ctx, "iocallstack") {
        return empty;
    }
    let (list, total) = sums_by(ctx.model, keep, |e| e.stack);
    let limit = ctx.settings.limit.unwrap_or(usize::MAX);
    let mut text = String::new();
    let mut rows = Vec::new();
    let line = |value: &Value| {
        IO_METRICS
            .iter()
            .filter(|&&m| value.count(m) > 0 || m == MetricName::IoTime)
            .map(|&m| match m.is_time() {
                true => format!("{}={}", m.title(), seconds(value.get(m))),
                false => format!("{}={}", m.title(), value.get(m)),
            })
            .collect::<Vec<_>>()
            .join("  ")
    };
    text.push_str(&format!("{TOTAL_NAME}\n{}\n", line(&total)));
    let mut buffer = Vec::new();
    for (number, (stack, value)) in list.iter().take(limit).enumerate() {
        let frames: Vec<String> = ctx
            .view
            .frames_of(*stack, &mut buffer)
            .iter()
            .map(|&f| ctx.function_name(ctx.view.frame(f).function))
            .collect();
        text.push_str(&format!("\nStack {}\n{}\n", number + 1, line(value)));
        for frame in &frames {
            text.push_str(&format!("  {frame}\n"));
        }
        let mut json = VIEW.json(value);
        json.insert("frames".into(), json!(frames));
        rows.push(Json::Object(json));
    }
    Report {
        text,
        json: json!({
            "report": "iocallstack",
            "total": Json::Object(VIEW.json(&total)),
            "stacks": rows,
        }),
    }
}

/// Upper bounds of iostat's size ranges, in bytes, as gprofng's.
const SIZE_RANGES: [(u64, &str); 9] = [
    (1 << 10, "0KB - 1KB"),
    (8 << 10, "1KB - 8KB"),
    (32 << 10, "8KB - 32KB"),
    (128 << 10, "32KB - 128KB"),
    (256 << 10, "128KB - 256KB"),
    (512 << 10, "256KB - 512KB"),
    (1000 << 10, "512KB - 1000KB"),
    (10_000 << 10, "1000KB - 10MB"),
    (u64::MAX, "10MB and more"),
];

/// What iostat shows of one class of calls.
#[derive(Default)]
struct ClassStats {
    calls: u64,
    bytes: u64,
    time_ns: u64,
    longest_ns: u64,
    smallest: Option<u64>,
    largest: u64,
    by_size: [u64; SIZE_RANGES.len()],
}

impl ClassStats {
    /// A call that moved `entry.bytes` in `time_ns` of this class's time.
    fn add(&mut self, entry: &IoEntry, time_ns: u64) {
        self.calls += 1;
        self.bytes += entry.bytes;
        self.time_ns += time_ns;
        self.longest_ns = self.longest_ns.max(time_ns);
        self.smallest = Some(self.smallest.map_or(entry.bytes, |s| s.min(entry.bytes)));
        self.largest = self.largest.max(entry.bytes);
        let range = SIZE_RANGES
            .iter()
            .position(|&(bound, _)| entry.bytes < bound)
            .unwrap_or(SIZE_RANGES.len() - 1);
        self.by_size[range] += 1;
    }

    fn write(&self, text: &mut String, title: &str, calls_heading: &str) {
        use std::fmt::Write;
        let _ = writeln!(text, "{title} Statistics");
        let _ = writeln!(text, "{:<34}{calls_heading}", "I/O Size Range");
        let _ = writeln!(text, "{}", "-".repeat(55));
        for (i, &(_, label)) in SIZE_RANGES.iter().enumerate() {
            if self.by_size[i] > 0 {
                let _ = writeln!(text, "  {label:<32}{}", self.by_size[i]);
            }
        }
        let _ = writeln!(text);
        let rows = [
            (
                "Longest time",
                format!("{} (secs.)", seconds(self.longest_ns)),
            ),
            ("Smallest bytes", self.smallest.unwrap_or(0).to_string()),
            ("Largest bytes", self.largest.to_string()),
            ("Total time", format!("{} (secs.)", seconds(self.time_ns))),
            ("Total calls", self.calls.to_string()),
            ("Total bytes", self.bytes.to_string()),
        ];
        for (label, value) in rows {
            let _ = writeln!(text, "{label:<34}{value}");
        }
        let _ = writeln!(text);
    }

    fn json(&self) -> Json {
        let by_size: Vec<Json> = SIZE_RANGES
            .iter()
            .zip(self.by_size)
            .filter(|(_, n)| *n > 0)
            .map(|(&(_, label), n)| json!({"range": label, "calls": n}))
            .collect();
        json!({
            "calls": self.calls,
            "bytes": self.bytes,
            "io_time": self.time_ns as f64 / 1e9,
            "longest": self.longest_ns as f64 / 1e9,
            "smallest_bytes": self.smallest.unwrap_or(0),
            "largest_bytes": self.largest,
            "by_size": by_size,
        })
    }
}

/// The calls and time of a class iostat shows no sizes of.
#[derive(Default)]
struct CallsAndTime {
    calls: u64,
    time_ns: u64,
}

impl CallsAndTime {
    fn add(&mut self, entry: &IoEntry) {
        self.calls += 1;
        self.time_ns += entry.call_ns;
    }

    fn write(&self, text: &mut String, title: &str) {
        text.push_str(&format!(
            "{title} Statistics\n{}\n{:<34}{} (secs.)\n{:<34}{}\n\n",
            "-".repeat(53),
            "Total time",
            seconds(self.time_ns),
            "Total calls",
            self.calls,
        ));
    }

    fn json(&self) -> Json {
        json!({"calls": self.calls, "io_time": self.time_ns as f64 / 1e9})
    }
}

/// `iostat`: reads' and writes' sizes and extremes, the other calls, and
/// the failed calls, each call in one class as the metrics count it (a
/// failed call only as an error; a transfer's time as its write's).
pub fn statistics(ctx: &Context, keep: Keep) -> Report {
    if let Some(empty) = no_io(ctx, "iostat") {
        return empty;
    }
    let mut reads = ClassStats::default();
    let mut writes = ClassStats::default();
    let mut others = CallsAndTime::default();
    let mut errors = CallsAndTime::default();
    for entry in ctx.model.io.iter().filter(|e| keep(&e.as_event())) {
        if entry.failed {
            errors.add(entry);
            continue;
        }
        match entry.read_and_written() {
            (None, None) => others.add(entry),
            (read, written) => {
                if read.is_some() {
                    let time = if written.is_some() { 0 } else { entry.call_ns };
                    reads.add(entry, time);
                }
                if written.is_some() {
                    writes.add(entry, entry.call_ns);
                }
            }
        }
    }
    let mut text = String::new();
    writes.write(&mut text, "Write", "Write Calls");
    reads.write(&mut text, "Read", "Read Calls");
    others.write(&mut text, "Other I/O");
    errors.write(&mut text, "I/O Error");
    Report {
        text,
        json: json!({
            "report": "iostat",
            "write": writes.json(),
            "read": reads.json(),
            "other": others.json(),
            "error": errors.json(),
            "failed_calls": errors.calls,
        }),
    }
}
