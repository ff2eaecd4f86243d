//! The listings of the analysis language, each as text (er_print-like
//! aligned tables) and as JSON (the same facts, machine-readable).

use crate::metrics::*;
use crate::model::*;
use crate::parallel::on_two_threads;
use crate::table::{percent, seconds, write_percent, write_seconds, Column, Table};
use serde_json::{json, Value as Json};
use std::collections::HashMap;

pub use commands::{MetricKind, MetricName, NameStyle};

/// One column of a listing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricColumn {
    /// A metric computed from events (CPU time, allocations, ...).
    Metric {
        metric: MetricName,
        kind: MetricKind,
        parts: MetricParts,
    },
    Name,
    Size,
    Address,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortKey {
    Metric(MetricName, MetricKind),
    Name,
    /// Function size, largest first.
    Size,
    /// Function address, lowest first.
    Address,
}

/// What shapes every listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportSettings {
    pub columns: Vec<MetricColumn>,
    pub sort: SortKey,
    /// At most this many rows (after `<Total>`); None = all.
    pub limit: Option<usize>,
    pub names: NameStyle,
    /// Only the text form will be shown: listings may skip building their
    /// JSON where it is large (`callers-callees` of every function).
    pub text_only: bool,
}

impl Default for ReportSettings {
    fn default() -> Self {
        let cpu = |kind| MetricColumn::Metric {
            metric: MetricName::TotalCpu,
            kind,
            parts: MetricParts {
                value: true,
                percent: true,
                count: false,
            },
        };
        ReportSettings {
            columns: vec![
                cpu(MetricKind::Exclusive),
                cpu(MetricKind::Inclusive),
                MetricColumn::Name,
            ],
            sort: SortKey::Metric(MetricName::TotalCpu, MetricKind::Exclusive),
            limit: None,
            names: NameStyle::Long,
            text_only: false,
        }
    }
}

/// A listing, ready in both output forms.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    pub text: String,
    pub json: Json,
}

/// Whether the selections keep an event (a traced call asked as an
/// event): what the views of traced calls are given.
pub type Keep<'a> = &'a dyn Fn(&EventEntry) -> bool;

/// What every report is computed from.
pub struct Context<'a> {
    pub model: &'a Model,
    pub view: &'a View,
    pub weights: &'a Weights,
    pub settings: &'a ReportSettings,
}

impl Context<'_> {
    pub fn total(&self) -> Value {
        self.weights.total
    }

    /// The metrics of the traces the model holds (sync waits, heap, ...)
    /// and of its counters (with CPI and IPC when they can be computed):
    /// every row carries them in JSON under their own keys.
    pub fn traced_metrics(&self) -> impl Iterator<Item = MetricName> + '_ {
        let offcpu = (!self.model.offcpu.is_empty()).then_some(OFFCPU_METRICS);
        let sync = (!self.model.sync.is_empty()).then_some(SYNC_METRICS);
        let heap = (!self.model.heap.is_empty()).then_some(HEAP_METRICS.as_slice());
        let io = (!self.model.io.is_empty()).then_some(crate::io::IO_METRICS.as_slice());
        let mpi = (!self.model.mpi.is_empty()).then_some(MetricName::MPI.as_slice());
        let counters = self
            .model
            .counters
            .iter()
            .map(|c| MetricName::Counter(c.metric));
        let ratios = self
            .model
            .has_cycles_and_instructions()
            .then_some(RATIO_METRICS);
        [offcpu, sync, heap, io, mpi]
            .into_iter()
            .flatten()
            .flatten()
            .copied()
            .chain(counters)
            .chain(ratios.into_iter().flatten().copied())
    }

    /// What every listing says once above its rows: the counters whose
    /// counts were scaled for multiplexing (the kernel shared the counter
    /// hardware among more events than it has counters, so the counts are
    /// estimates).
    pub fn notes(&self) -> Vec<String> {
        self.model
            .counters
            .iter()
            .filter(|c| c.scaled)
            .map(|c| format!("counts of {} were scaled for multiplexing", c.name()))
            .collect()
    }

    /// [`Context::notes`] as text lines, each `Note: ...`.
    pub fn notes_text(&self) -> String {
        self.notes()
            .iter()
            .map(|note| format!("Note: {note}\n"))
            .collect()
    }

    /// `json` with the notes under `notes` when there are any.
    pub fn with_notes(&self, mut json: Json) -> Json {
        let notes = self.notes();
        if let (Some(map), false) = (json.as_object_mut(), notes.is_empty()) {
            map.insert("notes".into(), json!(notes));
        }
        json
    }

    /// The metric the listings are sorted by, or (sorted by a static
    /// metric) the first shown: what a flame graph draws.
    pub fn sort_metric(&self) -> MetricName {
        match self.settings.sort {
            SortKey::Metric(metric, _) => metric,
            _ => self
                .settings
                .columns
                .iter()
                .find_map(|c| match c {
                    MetricColumn::Metric { metric, .. } => Some(*metric),
                    _ => None,
                })
                .unwrap_or(MetricName::TotalCpu),
        }
    }

    /// The name of a function in the chosen style.
    pub fn function_name(&self, id: FunctionId) -> String {
        let f = self.model.function(id);
        match self.settings.names {
            NameStyle::Long => f.name.clone(),
            // Only code names have parameter lists: `<static>@0x10 (lib.so)`
            // keeps its library.
            NameStyle::Short if matches!(f.kind, FunctionKind::Normal | FunctionKind::Inlined) => {
                debugger::symbols::without_parameters(&f.name).to_string()
            }
            NameStyle::Short => f.name.clone(),
            NameStyle::Mangled => f.linkage_name.clone(),
        }
    }

    pub fn object_name(&self, key: ObjectKey) -> String {
        match key {
            ObjectKey::Object(id) => self.model.object(id).name(),
            ObjectKey::Unknown => UNKNOWN_NAME.to_string(),
        }
    }

    pub fn line_name(&self, key: LineKey, function: Option<FunctionId>) -> String {
        match key {
            LineKey::Line(id) => {
                let line = self.model.line(id);
                let owner = function.map(|f| format!("{}, ", self.function_name(f)));
                format!(
                    "{}line {} in \"{}\"",
                    owner.unwrap_or_default(),
                    line.line,
                    line.file.display()
                )
            }
            LineKey::NoLine(f) => format!(
                "<Function: {}, instructions without line numbers>",
                self.function_name(f)
            ),
        }
    }

    pub fn pc_name(&self, id: PcId) -> String {
        let pc = self.model.pc(id);
        let function = self.model.function(pc.function);
        let start = self.model.function_start(pc.function, pc.object);
        if function.kind == FunctionKind::Normal && pc.offset >= start {
            format!(
                "{} + 0x{:x}",
                self.function_name(pc.function),
                pc.offset - start
            )
        } else {
            format!("{} @ 0x{:x}", self.function_name(pc.function), pc.address)
        }
    }

    fn metric_columns(&self) -> impl Iterator<Item = &MetricColumn> {
        self.settings.columns.iter()
    }
}

/// One row of a metric listing.
struct Row {
    name: String,
    value: ExclInclValue,
    function: Option<FunctionId>,
    json: Json,
}

fn kind_label(kind: MetricKind) -> &'static str {
    match kind {
        MetricKind::Exclusive => "Excl.",
        MetricKind::Inclusive => "Incl.",
        MetricKind::Attributed => "Attr.",
    }
}

pub(crate) fn pick(value: &ExclInclValue, kind: MetricKind) -> Value {
    match kind {
        MetricKind::Exclusive => value.exclusive,
        MetricKind::Inclusive | MetricKind::Attributed => value.inclusive,
    }
}

pub(crate) fn value_json(value: Value, total: Value) -> Json {
    json!({
        "seconds": value.ns as f64 / 1e9,
        "ns": value.ns,
        "percent": if total.ns == 0 { 0.0 } else { value.ns as f64 * 100.0 / total.ns as f64 },
        "events": value.events,
    })
}

/// The traced metrics of a row under their own keys (`bytes_leaked`,
/// `sync_wait_time`, ...), each with the row's kinds:
/// `{"leaks": {"exclusive": 3, "inclusive": 5}}`.
pub(crate) fn traced_json(ctx: &Context, kinds: &[(&str, Value)]) -> serde_json::Map<String, Json> {
    ctx.traced_metrics()
        .map(|metric| {
            let values = kinds
                .iter()
                .map(|&(kind, value)| (kind.to_string(), metric_json(metric, value)))
                .collect::<serde_json::Map<_, _>>();
            (metric.json_key().to_string(), Json::Object(values))
        })
        .collect()
}

/// A metric's number in JSON: seconds for a time, the ratio for CPI and
/// IPC (null when undefined), else the count or bytes.
pub(crate) fn metric_json(metric: MetricName, value: Value) -> Json {
    match metric {
        m if m.is_time() => json!(value.get(m) as f64 / 1e9),
        m if m.is_ratio() => json!(value.ratio(m)),
        m => json!(value.get(m)),
    }
}

/// The metrics of a view over traced calls (`ioactivity`, `mpi_ranks`,
/// ...): a column each, headed by its title over two lines (its last word
/// under the rest) and `sec.` for a time.
pub(crate) struct ViewMetrics(pub &'static [MetricName]);

impl ViewMetrics {
    pub fn columns(&self) -> Vec<Column> {
        self.0
            .iter()
            .map(|m| match (m.is_time(), m.title().rsplit_once(' ')) {
                (true, _) => Column::number(m.title(), "sec."),
                (false, Some((top, bottom))) => Column::number(top, bottom),
                (false, None) => Column::number(m.title(), ""),
            })
            .collect()
    }

    pub fn cells(&self, value: &Value) -> Vec<String> {
        self.0
            .iter()
            .map(|&m| match m.is_time() {
                true => seconds(value.get(m)),
                false => value.get(m).to_string(),
            })
            .collect()
    }

    /// The metrics of `value` under their JSON keys.
    pub fn json(&self, value: &Value) -> serde_json::Map<String, Json> {
        self.0
            .iter()
            .map(|&m| (m.json_key().to_string(), metric_json(m, *value)))
            .collect()
    }
}

const SYNC_METRICS: &[MetricName] = &[MetricName::SyncWaitTime, MetricName::SyncWaitCount];

const OFFCPU_METRICS: &[MetricName] = &[MetricName::OffCpuTime, MetricName::WallTime];

const RATIO_METRICS: &[MetricName] = &[MetricName::Cpi, MetricName::Ipc];

const HEAP_METRICS: [MetricName; 4] = [
    MetricName::Allocations,
    MetricName::BytesAllocated,
    MetricName::Leaks,
    MetricName::BytesLeaked,
];

/// Sub-headings of a metric's value and percent columns.
pub(crate) fn value_heading(metric: MetricName) -> &'static str {
    match metric {
        m if m.is_time() => "sec.",
        m if m.is_ratio() => "ratio",
        MetricName::BytesAllocated
        | MetricName::BytesLeaked
        | MetricName::ReadBytes
        | MetricName::WriteBytes
        | MetricName::MpiBytesSent
        | MetricName::MpiBytesReceived => "bytes",
        _ => "count",
    }
}

/// `value`'s number for `metric`, as shown (seconds for CPU time, a
/// ratio to three places, `-` for a ratio of nothing).
fn write_metric(out: &mut String, metric: MetricName, value: Value) {
    use std::fmt::Write;
    match metric {
        m if m.is_time() => write_seconds(out, value.get(m)),
        m if m.is_ratio() => match value.ratio(m) {
            Some(ratio) => {
                let _ = write!(out, "{ratio:.3}");
            }
            None => out.push('-'),
        },
        _ => {
            let _ = write!(out, "{}", value.get(metric));
        }
    }
}

pub(crate) fn metric_text(metric: MetricName, value: Value) -> String {
    let mut out = String::new();
    write_metric(&mut out, metric, value);
    out
}

/// `value`'s percent of `total` for `metric`; nothing for a ratio, which
/// is no part of a total.
fn write_metric_percent(out: &mut String, metric: MetricName, value: Value, total: Value) {
    if !metric.is_ratio() {
        write_percent(out, value.get(metric), total.get(metric));
    }
}

fn metric_percent(metric: MetricName, value: Value, total: Value) -> String {
    let mut out = String::new();
    write_metric_percent(&mut out, metric, value, total);
    out
}

/// Which parts of a metric a listing shows: its value, its percent of
/// `<Total>`, its event count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MetricParts {
    pub value: bool,
    pub percent: bool,
    pub count: bool,
}

impl MetricParts {
    /// The value and, but for a ratio (no part of a total), its percent:
    /// the callers-callees blocks' columns.
    pub fn value_and_percent(metric: MetricName) -> MetricParts {
        MetricParts {
            value: true,
            percent: !metric.is_ratio(),
            count: false,
        }
    }

    /// Appends the parts' columns, the value's headed `heading`.
    pub fn push_columns(self, columns: &mut Vec<Column>, heading: &str) {
        if self.value {
            columns.push(Column::number(heading, ""));
        }
        if self.percent {
            columns.push(Column::number("%", ""));
        }
        if self.count {
            columns.push(Column::number("events", ""));
        }
    }

    /// Appends the parts' cells for `metric`'s `value` (`text` shows it)
    /// as a part of `total`.
    pub fn push_cells(
        self,
        cells: &mut Vec<String>,
        metric: MetricName,
        value: Value,
        total: Value,
        text: impl FnOnce() -> String,
    ) {
        if self.value {
            cells.push(text());
        }
        if self.percent {
            cells.push(metric_percent(metric, value, total));
        }
        if self.count {
            cells.push(value.count(metric).to_string());
        }
    }
}

/// The label over a metric's columns: `Excl. Total CPU Time`.
pub(crate) fn metric_label(kind: MetricKind, metric: MetricName) -> String {
    format!("{} {}", kind_label(kind), metric.title())
}

/// The metrics a listing without per-column choice shows (callers-callees,
/// calltree): those of the metric spec, in order, each once.
pub(crate) fn shown_metrics(ctx: &Context) -> Vec<MetricName> {
    let mut metrics = Vec::new();
    for column in ctx.metric_columns() {
        if let MetricColumn::Metric { metric, .. } = *column {
            if !metrics.contains(&metric) {
                metrics.push(metric);
            }
        }
    }
    if metrics.is_empty() {
        metrics.push(MetricName::TotalCpu);
    }
    metrics
}

/// Builds the table of a metric listing; `attributed_as` tells which value
/// fills attributed columns (None: they are left out).
fn metric_table(ctx: &Context, rows: &[Row], attributed_as: Option<MetricKind>) -> Table {
    let mut columns = Vec::new();
    let mut groups = Vec::new();
    for column in ctx.metric_columns() {
        match *column {
            MetricColumn::Metric {
                metric,
                kind,
                parts,
            } => {
                if kind == MetricKind::Attributed && attributed_as.is_none() {
                    continue;
                }
                let first = columns.len();
                parts.push_columns(&mut columns, value_heading(metric));
                groups.push((first, columns.len() - first, metric_label(kind, metric)));
            }
            other => columns.extend(property_column(&other)),
        }
    }
    let mut table = Table::new(columns);
    for (first, count, label) in groups {
        if count > 0 {
            table.group(first, count, &label);
        }
    }
    let total = ctx.total();
    for row in rows {
        let mut cells = Vec::new();
        for column in ctx.metric_columns() {
            match *column {
                MetricColumn::Metric {
                    metric,
                    kind,
                    parts,
                } => {
                    let kind = match (kind, attributed_as) {
                        (MetricKind::Attributed, None) => continue,
                        (MetricKind::Attributed, Some(k)) => k,
                        (k, _) => k,
                    };
                    let v = pick(&row.value, kind);
                    parts.push_cells(&mut cells, metric, v, total, || metric_text(metric, v));
                }
                other => cells.extend(property_cell(ctx, &other, row.function, &row.name)),
            }
        }
        table.push(cells);
    }
    table
}

/// The column of a function's property (size, address) or of the row's
/// name; None for a metric's.
pub(crate) fn property_column(column: &MetricColumn) -> Option<Column> {
    match column {
        MetricColumn::Metric { .. } => None,
        MetricColumn::Size => Some(Column::number("Size", "")),
        MetricColumn::Address => Some(Column::number("PC Addr.", "")),
        MetricColumn::Name => Some(Column::text("Name")),
    }
}

/// The cell of [`property_column`] in the row named `name` (of `function`,
/// if it is one's).
pub(crate) fn property_cell(
    ctx: &Context,
    column: &MetricColumn,
    function: Option<FunctionId>,
    name: &str,
) -> Option<String> {
    let function = function.map(|f| ctx.model.function(f));
    match column {
        MetricColumn::Metric { .. } => None,
        MetricColumn::Size => Some(function.map(|f| f.size.to_string()).unwrap_or_default()),
        MetricColumn::Address => Some(
            function
                .map(|f| format!("0x{:x}", f.address))
                .unwrap_or_default(),
        ),
        MetricColumn::Name => Some(name.to_string()),
    }
}

fn sort_rows(ctx: &Context, rows: &mut [Row]) {
    match ctx.settings.sort {
        SortKey::Name => rows.sort_by(|a, b| a.name.cmp(&b.name)),
        SortKey::Size | SortKey::Address => {
            let key = |row: &Row| {
                let f = row.function.map(|f| ctx.model.function(f));
                match ctx.settings.sort {
                    SortKey::Size => u64::MAX - f.map_or(0, |f| f.size),
                    _ => f.map_or(u64::MAX, |f| f.address),
                }
            };
            rows.sort_by(|a, b| key(a).cmp(&key(b)).then_with(|| a.name.cmp(&b.name)))
        }
        SortKey::Metric(metric, kind) => rows.sort_by(|a, b| {
            pick(&b.value, kind)
                .get(metric)
                .cmp(&pick(&a.value, kind).get(metric))
                .then_with(|| a.name.cmp(&b.name))
        }),
    }
}

pub(crate) fn sort_description(ctx: &Context) -> String {
    match ctx.settings.sort {
        SortKey::Name => "Name".to_string(),
        SortKey::Size => "Size".to_string(),
        SortKey::Address => "PC Address".to_string(),
        SortKey::Metric(MetricName::TotalCpu, kind) => {
            format!("{} Total CPU Time", kind_label(kind))
        }
        SortKey::Metric(metric, kind) => metric_label(kind, metric),
    }
}

pub(crate) fn sort_spec(ctx: &Context) -> String {
    match ctx.settings.sort {
        SortKey::Name => "name".into(),
        SortKey::Size => "size".into(),
        SortKey::Address => "address".into(),
        SortKey::Metric(metric, kind) => format!("{}.{}", kind.letter(), metric.name()),
    }
}

/// Sorts, applies the limit, puts `total` first and renders.
fn listing(ctx: &Context, what: &str, total: Option<Row>, mut rows: Vec<Row>) -> Report {
    sort_rows(ctx, &mut rows);
    if let Some(limit) = ctx.settings.limit {
        rows.truncate(limit);
    }
    let rows: Vec<Row> = total.into_iter().chain(rows).collect();
    let table = metric_table(ctx, &rows, None);
    let text = format!(
        "{} sorted by metric: {}\n{}\n{}",
        capitalize(what),
        sort_description(ctx),
        ctx.notes_text(),
        table.render()
    );
    let json = ctx.with_notes(json!({
        "report": what,
        "sort": sort_spec(ctx),
        "total": total_json(ctx, ctx.total()),
        "rows": rows.iter().map(|r| r.json.clone()).collect::<Vec<_>>(),
    }));
    Report { text, json }
}

pub(crate) fn capitalize(s: &str) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(c) => c.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// `<Total>`'s values in JSON: as a row's, with the traced metrics.
pub(crate) fn total_json(ctx: &Context, total: Value) -> Json {
    let mut json = value_json(total, total);
    if let Json::Object(map) = &mut json {
        for metric in ctx.traced_metrics() {
            map.insert(metric.json_key().into(), metric_json(metric, total));
        }
    }
    json
}

/// A row's exclusive and inclusive values in JSON, with the traced
/// metrics; percentages of `total`.
pub(crate) fn values_json(
    ctx: &Context,
    value: &ExclInclValue,
    total: Value,
) -> serde_json::Map<String, Json> {
    let mut object = serde_json::Map::new();
    object.insert("exclusive".into(), value_json(value.exclusive, total));
    object.insert("inclusive".into(), value_json(value.inclusive, total));
    object.extend(traced_json(
        ctx,
        &[
            ("exclusive", value.exclusive),
            ("inclusive", value.inclusive),
        ],
    ));
    object
}

fn row_json(ctx: &Context, name: &str, value: &ExclInclValue, extra: Json) -> Json {
    let mut object = values_json(ctx, value, ctx.total());
    object.insert("name".into(), json!(name));
    if let Json::Object(extra) = extra {
        object.extend(extra);
    }
    Json::Object(object)
}

pub(crate) fn function_json(ctx: &Context, id: FunctionId) -> Json {
    let f = ctx.model.function(id);
    json!({
        "function_id": id,
        "object": f.object.map(|o| ctx.model.object(o).path.display().to_string()),
        "address": f.address,
        "size": f.size,
        "mangled": f.linkage_name,
    })
}

fn total_row(ctx: &Context) -> Row {
    let value = ExclInclValue {
        exclusive: ctx.total(),
        inclusive: ctx.total(),
    };
    Row {
        name: TOTAL_NAME.to_string(),
        json: row_json(ctx, TOTAL_NAME, &value, json!({})),
        value,
        function: Some(TOTAL),
    }
}

fn function_rows(ctx: &Context) -> Vec<Row> {
    rows_of_functions(ctx, function_metrics(ctx.view, ctx.weights))
}

fn rows_of_functions(ctx: &Context, metrics: HashMap<FunctionId, ExclInclValue>) -> Vec<Row> {
    metrics
        .into_iter()
        .filter(|(id, v)| *id != TOTAL && !v.inclusive.is_empty())
        .map(|(id, value)| {
            let name = ctx.function_name(id);
            Row {
                json: row_json(ctx, &name, &value, function_json(ctx, id)),
                name,
                value,
                function: Some(id),
            }
        })
        .collect()
}

/// `functions`
pub fn functions(ctx: &Context) -> Report {
    listing(ctx, "functions", Some(total_row(ctx)), function_rows(ctx))
}

/// `objects`
pub fn objects(ctx: &Context) -> Report {
    let rows = object_metrics(ctx.model, ctx.view, ctx.weights)
        .into_iter()
        .map(|(key, value)| {
            let name = ctx.object_name(key);
            let path = match key {
                ObjectKey::Object(id) => Some(ctx.model.object(id).path.display().to_string()),
                ObjectKey::Unknown => None,
            };
            Row {
                json: row_json(ctx, &name, &value, json!({ "path": path })),
                name,
                value,
                function: None,
            }
        })
        .collect();
    listing(ctx, "load objects", Some(total_row(ctx)), rows)
}

/// The function each of the lines `wanted` belongs to, for naming it: the
/// function of the first frame at that line in stack order. The walk stops
/// once every wanted line has its owner (usually within the first stacks).
pub(crate) fn line_owners(ctx: &Context, wanted: &[LineKey]) -> HashMap<LineKey, FunctionId> {
    // Only lines need an owner: `<Function: f, ...>` names its own.
    let index: HashMap<LineKey, usize> = wanted
        .iter()
        .filter(|k| matches!(k, LineKey::Line(_)))
        .enumerate()
        .map(|(i, &k)| (k, i))
        .collect();
    // Per frame id: the index of its line among the wanted ones.
    let wanted_of_frame: Vec<Option<usize>> = ctx
        .view
        .all_frames()
        .iter()
        .map(|f| index.get(&line_key(f)).copied())
        .collect();
    let mut owned = vec![false; index.len()];
    let mut owners = HashMap::new();
    let mut buffer = Vec::new();
    for stack in 0..ctx.model.stacks.len() as StackId {
        if owners.len() == index.len() {
            break;
        }
        for &id in ctx.view.frames_of(stack, &mut buffer) {
            let Some(k) = wanted_of_frame.get(id as usize).copied().flatten() else {
                continue;
            };
            if !owned[k] {
                owned[k] = true;
                let frame = ctx.view.frame(id);
                owners.insert(line_key(&frame), frame.function);
            }
        }
    }
    owners
}

fn line_key(frame: &Frame) -> LineKey {
    match frame.line {
        Some(l) => LineKey::Line(l),
        None => LineKey::NoLine(frame.function),
    }
}

/// A line's own JSON fields: its file, line and function (`function`, the
/// owner found for it, or the function of a frame without a line).
pub(crate) fn line_json(ctx: &Context, key: LineKey, function: Option<FunctionId>) -> Json {
    match key {
        LineKey::Line(id) => {
            let l = ctx.model.line(id);
            json!({"file": l.file.display().to_string(), "line": l.line,
                   "function": function.map(|f| ctx.function_name(f))})
        }
        LineKey::NoLine(f) => json!({"file": null, "line": null,
                                     "function": ctx.function_name(f)}),
    }
}

/// `lines`
pub fn lines(ctx: &Context) -> Report {
    let metrics = line_metrics(ctx.view, ctx.weights);
    let owner = line_owners(ctx, &metrics.keys().copied().collect::<Vec<_>>());
    let rows = metrics
        .into_iter()
        .map(|(key, value)| {
            let function = owner.get(&key).copied();
            let name = ctx.line_name(key, function);
            Row {
                json: row_json(ctx, &name, &value, line_json(ctx, key, function)),
                name,
                value,
                function: None,
            }
        })
        .collect();
    listing(ctx, "lines", Some(total_row(ctx)), rows)
}

/// `pcs`
pub fn pcs(ctx: &Context) -> Report {
    let rows = pc_metrics(ctx.view, ctx.weights)
        .into_iter()
        .map(|(id, value)| {
            let name = ctx.pc_name(id);
            let pc = ctx.model.pc(id);
            let extra = json!({"address": pc.address, "offset": pc.offset,
                               "function": ctx.function_name(pc.function)});
            Row {
                json: row_json(ctx, &name, &value, extra),
                name,
                value,
                function: None,
            }
        })
        .collect();
    listing(ctx, "PCs", Some(total_row(ctx)), rows)
}

/// The summary block of one function (`fsingle`, `fsummary`).
pub fn function_summary(ctx: &Context, id: FunctionId, value: ExclInclValue) -> Report {
    let f = ctx.model.function(id);
    let total = ctx.total();
    let object = f.object.map(|o| ctx.model.object(o));
    let mut text = format!("{}\n", ctx.function_name(id));
    let mut field = |label: &str, v: String| text.push_str(&format!("\t{label:<26} {v}\n"));
    field(
        "Exclusive Total CPU Time:",
        format!(
            "{} ({}%)",
            seconds(value.exclusive.ns),
            percent(value.exclusive.ns, total.ns)
        ),
    );
    field(
        "Inclusive Total CPU Time:",
        format!(
            "{} ({}%)",
            seconds(value.inclusive.ns),
            percent(value.inclusive.ns, total.ns)
        ),
    );
    for metric in ctx.traced_metrics() {
        for (kind, v) in [
            ("Exclusive", value.exclusive),
            ("Inclusive", value.inclusive),
        ] {
            let label = format!("{kind} {}:", metric.title());
            field(&label, metric_text(metric, v));
        }
    }
    field("Size:", f.size.to_string());
    field("PC Address:", format!("0x{:x}", f.address));
    field(
        "Source File:",
        f.source
            .as_ref()
            .map_or("(unknown)".into(), |s| s.display().to_string()),
    );
    field(
        "Load Object:",
        object.map_or("(none)".into(), |o| o.path.display().to_string()),
    );
    field("Mangled Name:", f.linkage_name.clone());
    field("Aliases:", f.aliases.join(", "));
    let json = row_json(
        ctx,
        &ctx.function_name(id),
        &value,
        json!({
            "function_id": id,
            "size": f.size,
            "address": f.address,
            "source": f.source.as_ref().map(|s| s.display().to_string()),
            "object": object.map(|o| o.path.display().to_string()),
            "mangled": f.linkage_name,
            "aliases": f.aliases,
        }),
    );
    Report { text, json }
}

/// The function list's rows in its order, limit applied (no `<Total>`).
fn listed_functions(ctx: &Context) -> Vec<Row> {
    sorted_rows(ctx, function_rows(ctx))
}

/// Rows in the function list's order, limit applied.
fn sorted_rows(ctx: &Context, mut rows: Vec<Row>) -> Vec<Row> {
    sort_rows(ctx, &mut rows);
    if let Some(limit) = ctx.settings.limit {
        rows.truncate(limit);
    }
    rows
}

/// `fsummary`: a block per function, in the function list's order.
pub fn fsummary(ctx: &Context) -> Report {
    let mut text = ctx.notes_text();
    let mut list = Vec::new();
    for row in std::iter::once(total_row(ctx)).chain(listed_functions(ctx)) {
        let id = row.function.unwrap_or(TOTAL);
        let report = function_summary(ctx, id, row.value);
        text.push_str(&report.text);
        text.push('\n');
        list.push(report.json);
    }
    Report {
        text,
        json: ctx.with_notes(json!({"report": "fsummary", "functions": list})),
    }
}

/// `csingle`: one centre's block, after the notes.
pub fn callers_callees_of(ctx: &Context, center: FunctionId) -> Report {
    let block = callers_callees_block(ctx, callers_callees(ctx.view, ctx.weights, center));
    Report {
        text: ctx.notes_text() + &block.text,
        json: ctx.with_notes(block.json),
    }
}

fn callers_callees_block(ctx: &Context, mut cc: CallersCallees) -> Report {
    let center = cc.center;
    let metrics = shown_metrics(ctx);
    let order = ctx.sort_metric();
    // Equal values are listed by the names shown, as in the function list.
    for list in [&mut cc.callers, &mut cc.callees] {
        list.sort_by_cached_key(|&(id, value)| {
            (std::cmp::Reverse(value.get(order)), ctx.function_name(id))
        });
    }
    let total = ctx.total();
    let mut columns = Vec::new();
    let mut groups = Vec::new();
    for &metric in &metrics {
        let first = columns.len();
        MetricParts::value_and_percent(metric).push_columns(&mut columns, value_heading(metric));
        let label = metric_label(MetricKind::Attributed, metric);
        groups.push((first, columns.len() - first, label));
    }
    columns.push(Column::text("Name"));
    let mut table = Table::new(columns);
    for (first, count, label) in groups {
        table.group(first, count, &label);
    }
    let mut push = |value: Value, name: String| {
        let mut cells = Vec::new();
        for &metric in &metrics {
            MetricParts::value_and_percent(metric).push_cells(
                &mut cells,
                metric,
                value,
                total,
                || metric_text(metric, value),
            );
        }
        cells.push(name);
        table.push(cells);
    };
    for &(id, value) in &cc.callers {
        push(value, format!(" {}", ctx.function_name(id)));
    }
    push(
        cc.value.exclusive,
        format!("*{}", ctx.function_name(center)),
    );
    for &(id, value) in &cc.callees {
        push(value, format!(" {}", ctx.function_name(id)));
    }
    let name = ctx.function_name(center);
    let summary: Vec<String> = metrics
        .iter()
        .map(|&m| {
            let (inclusive, exclusive) = (cc.value.inclusive, cc.value.exclusive);
            let unit = if m.is_time() { " s" } else { "" };
            let what = match m {
                MetricName::TotalCpu => String::new(),
                m => format!(" {}", m.title()),
            };
            if m.is_ratio() {
                return format!(
                    "inclusive{what} {}, exclusive{what} {}",
                    metric_text(m, inclusive),
                    metric_text(m, exclusive)
                );
            }
            format!(
                "inclusive{what} {}{unit} ({}%), exclusive{what} {}{unit} ({}%)",
                metric_text(m, inclusive),
                percent(inclusive.get(m), total.get(m)),
                metric_text(m, exclusive),
                percent(exclusive.get(m), total.get(m)),
            )
        })
        .collect();
    let text = format!(
        "Callers and callees of {name}: {}\n\n{}",
        summary.join("; "),
        table.render()
    );
    if ctx.settings.text_only {
        return Report {
            text,
            json: Json::Null,
        };
    }
    let list = |items: &[(FunctionId, Value)]| -> Vec<Json> {
        items
            .iter()
            .map(|&(id, v)| {
                let mut item = json!({"name": ctx.function_name(id), "function_id": id,
                                      "attributed": value_json(v, total)});
                if let Some(map) = item.as_object_mut() {
                    map.extend(traced_json(ctx, &[("attributed", v)]));
                }
                item
            })
            .collect()
    };
    let mut json = json!({
        "report": "callers-callees",
        "function": name,
        "function_id": center,
        "exclusive": value_json(cc.value.exclusive, total),
        "inclusive": value_json(cc.value.inclusive, total),
        "callers": list(&cc.callers),
        "callees": list(&cc.callees),
    });
    if let Some(map) = json.as_object_mut() {
        map.extend(traced_json(
            ctx,
            &[
                ("exclusive", cc.value.exclusive),
                ("inclusive", cc.value.inclusive),
            ],
        ));
    }
    Report { text, json }
}

/// `callers-callees`: a block for every function in the list's order.
pub fn callers_callees_all(ctx: &Context) -> Report {
    let mut all = AllCallersCallees::new(ctx.view, ctx.weights);
    // A centre's own values are its function metrics: no second pass.
    let metrics = all.take_values();
    let rows = sorted_rows(ctx, rows_of_functions(ctx, metrics));
    // Each block is a table of every caller and callee: the two halves of
    // the list are made on two threads.
    let blocks = |rows: &[Row]| {
        let (mut text, mut blocks) = (String::new(), Vec::new());
        for row in rows {
            let center = row.function.unwrap_or(TOTAL);
            let cc = CallersCallees {
                value: row.value,
                ..all.get(center)
            };
            let report = callers_callees_block(ctx, cc);
            text.push_str(&report.text);
            text.push('\n');
            if !ctx.settings.text_only {
                blocks.push(report.json);
            }
        }
        (text, blocks)
    };
    let (near, far) = rows.split_at(rows.len() / 2);
    let ((near_text, mut list), (far_text, far_list)) =
        on_two_threads(|| blocks(near), || blocks(far));
    list.extend(far_list);
    Report {
        text: ctx.notes_text() + &near_text + &far_text,
        json: ctx.with_notes(json!({"report": "callers-callees", "functions": list})),
    }
}

/// `calltree`: the calling-context tree, children by inclusive value of
/// the sort metric.
pub fn calltree(ctx: &Context) -> Report {
    let shown = CallTreeText::of(ctx);
    let mut text = format!("Calltree\n{}\n", ctx.notes_text());
    shown
        .table
        .render_rows_into(&mut text, |each| shown.rows(each));
    // A tree of millions of nodes is gigabytes of JSON values: only when
    // JSON will be shown.
    let json = match ctx.settings.text_only {
        true => Json::Null,
        false => ctx.with_notes(json!({"report": "calltree", "root": tree_json(ctx, &shown.tree)})),
    };
    Report { text, json }
}

/// Text written to the output as it is made, not held: a listing of
/// millions of rows.
pub type TextStream = Box<dyn FnOnce(&mut dyn std::io::Write) -> std::io::Result<()>>;

/// `calltree`'s text as a stream (what `calltree` shows as text).
pub fn calltree_stream(ctx: &Context) -> TextStream {
    let shown = CallTreeText::of(ctx);
    let heading = format!("Calltree\n{}\n", ctx.notes_text());
    Box::new(move |out| {
        out.write_all(heading.as_bytes())?;
        shown.table.render_rows_to(out, |each| shown.rows(each))
    })
}

/// What the call tree's text is made of; it owns all of it, so that the
/// text can be written after the command's context is gone.
struct CallTreeText {
    tree: CallTree,
    /// The metric whose inclusive value orders each node's children.
    order: MetricName,
    /// Each metric shown and the cell of its first column.
    metrics: Vec<(MetricName, usize)>,
    total: Value,
    table: Table,
    limit: usize,
    /// Each function's name once, not once per node.
    names: Vec<String>,
}

impl CallTreeText {
    fn of(ctx: &Context) -> CallTreeText {
        let tree = call_tree(ctx.view, ctx.weights);
        // Per metric: inclusive value and percent (none for a ratio),
        // exclusive value.
        let mut columns = Vec::new();
        let mut groups = Vec::new();
        let mut metrics = Vec::new();
        for metric in shown_metrics(ctx) {
            let (heading, first) = (value_heading(metric), columns.len());
            metrics.push((metric, first));
            columns.push(Column::number(heading, ""));
            if !metric.is_ratio() {
                columns.push(Column::number("%", ""));
            }
            let excl = match metric {
                MetricName::TotalCpu => "Excl. CPU".to_string(),
                m => format!("Excl. {}", m.title()),
            };
            groups.push((
                first,
                columns.len() - first,
                format!("Incl. {}", metric.title()),
            ));
            groups.push((columns.len(), 1, excl));
            columns.push(Column::number(heading, ""));
        }
        columns.push(Column::text("Name"));
        let mut table = Table::new(columns);
        for (first, count, label) in groups {
            table.group(first, count, &label);
        }
        let names = (0..ctx.model.functions.len() as FunctionId)
            .map(|f| ctx.function_name(f))
            .collect();
        CallTreeText {
            tree,
            order: ctx.sort_metric(),
            metrics,
            total: ctx.total(),
            table,
            limit: ctx.settings.limit.unwrap_or(usize::MAX),
            names,
        }
    }

    /// Calls `each` with every row's cells, depth first.
    fn rows(&self, each: &mut dyn FnMut(&[&str])) {
        let (tree, metrics, total) = (&self.tree, &self.metrics, self.total);
        let mut cells = vec![String::new(); self.table.columns.len()];
        let mut stack = vec![(CallTree::ROOT, 0usize)];
        let mut children = Vec::new();
        let mut rows = 0usize;
        // Iterative, depth-first: stacks can be thousands deep.
        while let Some((node, depth)) = stack.pop() {
            if rows >= self.limit.saturating_add(1) {
                break;
            }
            rows += 1;
            cells.iter_mut().for_each(String::clear);
            let value = tree.value(node);
            for &(metric, first) in metrics {
                let (inclusive, exclusive) = (value.inclusive, value.exclusive);
                write_metric(&mut cells[first], metric, inclusive);
                let mut next = first + 1;
                if !metric.is_ratio() {
                    write_percent(&mut cells[next], inclusive.get(metric), total.get(metric));
                    next += 1;
                }
                write_metric(&mut cells[next], metric, exclusive);
            }
            let name = cells.last_mut().expect("the name column");
            for _ in 0..depth {
                name.push_str("  ");
            }
            let function = tree.function(node);
            name.push_str(
                self.names
                    .get(function as usize)
                    .map_or(UNKNOWN_NAME, String::as_str),
            );
            let refs: Vec<&str> = cells.iter().map(String::as_str).collect();
            each(&refs);
            tree.children_by(node, |v| v.get(self.order), &mut children);
            for &child in children.iter().rev() {
                stack.push((child, depth + 1));
            }
        }
    }
}

fn tree_json(ctx: &Context, tree: &CallTree) -> Json {
    // Built bottom-up without recursion (deep trees): children come after
    // their parents, so from the last node back every child is built
    // before its parent.
    let order = ctx.sort_metric();
    let mut built: Vec<Option<Json>> = vec![None; tree.len()];
    let mut sorted = Vec::new();
    for node in (0..tree.len() as NodeId).rev() {
        tree.children_by(node, |v| v.get(order), &mut sorted);
        let children: Vec<Json> = sorted
            .iter()
            .filter_map(|&c| built[c as usize].take())
            .collect();
        let function = tree.function(node);
        let value = row_json(
            ctx,
            &ctx.function_name(function),
            &tree.value(node),
            json!({"function_id": function, "children": children}),
        );
        built[node as usize] = Some(value);
    }
    built
        .first_mut()
        .and_then(Option::take)
        .unwrap_or(Json::Null)
}
