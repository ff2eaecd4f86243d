//! The MPI tracing views over every loaded experiment (each rank's):
//! `mpi_functions` (time and messages per MPI function), `mpi_ranks` (per
//! rank, with how each rank ended) and `mpi_matrix` (point-to-point bytes
//! and messages from rank to rank).

use crate::info;
use crate::metrics::Value;
use crate::model::*;
use crate::report::{Context, Keep, Report, ViewMetrics};
use crate::table::{seconds, Column, Table};
use commands::MetricName;
use experiment::mpi::MpiOp;
use serde_json::{json, Value as Json};
use std::collections::BTreeMap;

/// The MPI metrics every MPI view shows, in column order.
pub const MPI_METRICS: [MetricName; 6] = MetricName::MPI;

/// The columns, cells and JSON of the MPI views.
const VIEW: ViewMetrics = ViewMetrics(&MPI_METRICS);

fn no_mpi(ctx: &Context, report: &str) -> Option<Report> {
    ctx.model.mpi.is_empty().then(|| Report {
        text: "no MPI tracing data (collect with -M on, or collector mpitrace on)\n".to_string(),
        json: json!({"report": report, "message": "no MPI tracing data"}),
    })
}

/// The selected calls summed by `key` (None: not counted), with the total.
fn sums_by<K: Ord>(
    model: &Model,
    keep: Keep,
    key: impl Fn(&MpiEntry) -> Option<K>,
) -> (BTreeMap<K, Value>, Value) {
    let mut sums = BTreeMap::new();
    let mut total = Value::default();
    for entry in model.mpi.iter().filter(|e| keep(&e.as_event())) {
        let value = Value::of_mpi(entry);
        total.add(value);
        if let Some(k) = key(entry) {
            sums.entry(k).or_insert_with(Value::default).add(value);
        }
    }
    (sums, total)
}

/// `mpi_functions`: per MPI function, most time first.
pub fn functions(ctx: &Context, keep: Keep) -> Report {
    if let Some(empty) = no_mpi(ctx, "mpi_functions") {
        return empty;
    }
    let (sums, total) = sums_by(ctx.model, keep, |e| Some(e.op));
    let mut list: Vec<(MpiOp, Value)> = sums.into_iter().collect();
    list.sort_by_key(|&(op, v)| (std::cmp::Reverse((v.mpi_ns, v.mpi_calls)), op.name()));
    let limit = ctx.settings.limit.unwrap_or(usize::MAX);
    let mut columns = vec![Column::number("Calls", "")];
    columns.extend(VIEW.columns());
    columns.push(Column::text("Name"));
    let mut table = Table::new(columns);
    let mut row = |name: &str, value: &Value| {
        let mut row = vec![value.mpi_calls.to_string()];
        row.extend(VIEW.cells(value));
        row.push(name.to_string());
        table.push(row);
        let mut json = VIEW.json(value);
        json.insert("name".into(), json!(name));
        json.insert("calls".into(), json!(value.mpi_calls));
        Json::Object(json)
    };
    let total_json = row(TOTAL_NAME, &total);
    let rows: Vec<Json> = list
        .iter()
        .take(limit)
        .map(|(op, value)| row(op.name(), value))
        .collect();
    Report {
        text: table.render(),
        json: json!({"report": "mpi_functions", "total": total_json, "functions": rows}),
    }
}

/// How one rank's process ended, as its log says, and when.
struct Ending {
    /// The launcher's `terminated` line, else whether the collector closed
    /// the experiment.
    how: info::Ending,
    /// The collector closed the experiment (`end`).
    closed: bool,
    /// The last recorded moment, ns since the model's origin.
    at_ns: u64,
}

impl Ending {
    fn of(model: &Model, entry: &ExperimentEntry) -> Ending {
        Ending {
            how: info::Ending::of(entry),
            closed: entry.ended,
            at_ns: entry.end_ns.saturating_sub(model.origin_ns),
        }
    }

    /// Killed, crashed: the collector did not close the experiment, or a
    /// signal ended the process.
    fn early(&self) -> bool {
        !self.closed || self.signal().is_some()
    }

    fn signal(&self) -> Option<i32> {
        match self.how {
            info::Ending::Signal(signal) => Some(signal),
            _ => None,
        }
    }

    fn exit_code(&self) -> Option<i32> {
        match self.how {
            info::Ending::Exit(code) => Some(code),
            _ => None,
        }
    }

    fn describe(&self) -> String {
        match (self.how, self.closed) {
            (info::Ending::Signal(signal), _) => format!("killed by {}", signal_name(signal)),
            (info::Ending::Exit(code), true) => format!("exit {code}"),
            (info::Ending::Exit(code), false) => format!("exit {code}, experiment not closed"),
            (info::Ending::Closed, _) => "closed".to_string(),
            (info::Ending::CutShort, _) => "ended early (experiment not closed)".to_string(),
        }
    }
}

fn signal_name(signal: i32) -> String {
    match commands::Signal::from_number(signal) {
        Some(named) => format!("signal {signal} ({named})"),
        None => format!("signal {signal}"),
    }
}

/// One rank's experiments and sums.
struct RankRow<'a> {
    rank: u32,
    experiments: Vec<&'a ExperimentEntry>,
    endings: Vec<Ending>,
    value: Value,
    /// The last MPI function its data holds.
    last_call: Option<MpiOp>,
}

/// `mpi_ranks`: per rank, with how each ended.
pub fn ranks(ctx: &Context, keep: Keep) -> Report {
    if let Some(empty) = no_mpi(ctx, "mpi_ranks") {
        return empty;
    }
    let model = ctx.model;
    let rank_of: Vec<Option<u32>> = model.experiments.iter().map(|e| e.mpi_rank()).collect();
    let rank = |e: &MpiEntry| rank_of.get(usize::from(e.experiment)).copied().flatten();
    let (sums, total) = sums_by(model, keep, rank);
    let mut rows: BTreeMap<u32, RankRow> = BTreeMap::new();
    for (entry, rank) in model.experiments.iter().zip(&rank_of) {
        let Some(rank) = *rank else { continue };
        let row = rows.entry(rank).or_insert_with(|| RankRow {
            rank,
            experiments: Vec::new(),
            endings: Vec::new(),
            value: sums.get(&rank).copied().unwrap_or_default(),
            last_call: None,
        });
        row.experiments.push(entry);
        row.endings.push(Ending::of(model, entry));
    }
    for entry in model.mpi.iter().filter(|e| !e.completion) {
        if let Some(row) = rank(entry).and_then(|r| rows.get_mut(&r)) {
            row.last_call = Some(entry.op);
        }
    }
    render_ranks(rows.into_values().collect(), total)
}

fn render_ranks(rows: Vec<RankRow>, total: Value) -> Report {
    let mut columns = VIEW.columns();
    for name in ["Rank", "Host", "Ended", "Experiment"] {
        columns.push(Column::text(name));
    }
    let mut table = Table::new(columns);
    let mut total_cells = VIEW.cells(&total);
    total_cells.extend([
        TOTAL_NAME.to_string(),
        String::new(),
        String::new(),
        String::new(),
    ]);
    table.push(total_cells);
    let mut json_rows = Vec::new();
    let mut notes = Vec::new();
    let mut early_ranks = Vec::new();
    for row in &rows {
        for (entry, ending) in row.experiments.iter().zip(&row.endings) {
            let mut cells = VIEW.cells(&row.value);
            let host = entry.host().unwrap_or("").to_string();
            let shown = entry.path.display().to_string();
            cells.extend([
                row.rank.to_string(),
                host.clone(),
                format!("{} at {} s", ending.describe(), seconds(ending.at_ns)),
                shown.clone(),
            ]);
            table.push(cells);
            if ending.early() {
                early_ranks.push(row.rank);
                notes.push((ending.at_ns, early_note(row, ending)));
            }
            let mut json = VIEW.json(&row.value);
            json.insert("rank".into(), json!(row.rank));
            json.insert("host".into(), json!(host));
            json.insert("experiment".into(), json!(shown));
            json.insert("ended".into(), json!(ending.describe()));
            json.insert("signal".into(), json!(ending.signal()));
            json.insert("exit_code".into(), json!(ending.exit_code()));
            json.insert("end".into(), json!(ending.at_ns as f64 / 1e9));
            json.insert("early".into(), json!(ending.early()));
            json_rows.push(Json::Object(json));
        }
    }
    early_ranks.dedup();
    // The first to end first: the others may have been ended because of it.
    notes.sort();
    let mut text = table.render();
    for (_, note) in &notes {
        text.push_str(note);
        text.push('\n');
    }
    Report {
        text,
        json: json!({
            "report": "mpi_ranks",
            "total": Json::Object(VIEW.json(&total)),
            "ranks": json_rows,
            "early": early_ranks,
        }),
    }
}

fn early_note(row: &RankRow, ending: &Ending) -> String {
    let last = match row.last_call {
        Some(op) => format!("; its last MPI call recorded: {}", op.name()),
        None => String::new(),
    };
    format!(
        "rank {} ended early: {} at {} s{last}",
        row.rank,
        ending.describe(),
        seconds(ending.at_ns)
    )
}

/// Point-to-point traffic between ranks: `[from][to]`.
#[derive(Default)]
struct Matrix {
    bytes: BTreeMap<(u32, u32), u64>,
    messages: BTreeMap<(u32, u32), u64>,
    received_bytes: BTreeMap<(u32, u32), u64>,
}

/// `mpi_matrix`: bytes and messages from rank to rank.
pub fn matrix(ctx: &Context, keep: Keep) -> Report {
    if let Some(empty) = no_mpi(ctx, "mpi_matrix") {
        return empty;
    }
    let model = ctx.model;
    let rank_of: Vec<Option<u32>> = model.experiments.iter().map(|e| e.mpi_rank()).collect();
    let mut matrix = Matrix::default();
    let mut ranks: Vec<u32> = rank_of.iter().flatten().copied().collect();
    for entry in model.mpi.iter().filter(|e| keep(&e.as_event())) {
        if !entry.op.is_point_to_point() {
            continue;
        }
        let Some(me) = rank_of
            .get(usize::from(entry.experiment))
            .copied()
            .flatten()
        else {
            continue;
        };
        if let Ok(to) = u32::try_from(entry.dest) {
            if entry.sends > 0 {
                *matrix.bytes.entry((me, to)).or_default() += entry.bytes_sent;
                *matrix.messages.entry((me, to)).or_default() += u64::from(entry.sends);
                ranks.push(to);
            }
        }
        if let Ok(from) = u32::try_from(entry.source) {
            if entry.receives > 0 || entry.completion {
                *matrix.received_bytes.entry((from, me)).or_default() += entry.bytes_received;
                ranks.push(from);
            }
        }
    }
    ranks.sort_unstable();
    ranks.dedup();
    render_matrix(&ranks, &matrix)
}

fn grid(ranks: &[u32], cells: &BTreeMap<(u32, u32), u64>) -> Vec<Vec<u64>> {
    ranks
        .iter()
        .map(|&from| {
            ranks
                .iter()
                .map(|&to| cells.get(&(from, to)).copied().unwrap_or(0))
                .collect()
        })
        .collect()
}

fn render_matrix(ranks: &[u32], matrix: &Matrix) -> Report {
    let bytes = grid(ranks, &matrix.bytes);
    let messages = grid(ranks, &matrix.messages);
    let received = grid(ranks, &matrix.received_bytes);
    let mut text = String::new();
    for (title, rows) in [
        (
            "Bytes sent (point to point), from rank (row) to rank (column)",
            &bytes,
        ),
        (
            "Messages sent (point to point), from rank (row) to rank (column)",
            &messages,
        ),
        (
            "Bytes received, as the receivers recorded them, from rank (row) to rank (column)",
            &received,
        ),
    ] {
        text.push_str(title);
        text.push('\n');
        let mut columns = vec![Column::text("From")];
        columns.extend(ranks.iter().map(|r| Column::number(&format!("to {r}"), "")));
        columns.push(Column::number("Total", ""));
        let mut table = Table::new(columns);
        for (from, row) in ranks.iter().zip(rows.iter()) {
            let mut cells = vec![from.to_string()];
            cells.extend(row.iter().map(u64::to_string));
            cells.push(row.iter().sum::<u64>().to_string());
            table.push(cells);
        }
        text.push_str(&table.render());
        text.push('\n');
    }
    Report {
        text,
        json: json!({
            "report": "mpi_matrix",
            "ranks": ranks,
            "bytes": bytes,
            "messages": messages,
            "received_bytes": received,
        }),
    }
}
