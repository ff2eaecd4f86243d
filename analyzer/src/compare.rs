//! Compare mode (er_print's `compare on|delta|ratio`): the listings with
//! each experiment group's metrics side by side. The first group is the
//! baseline; with `delta` the others show their differences from it, with
//! `ratio` their ratios to it. Percentages are of each group's own total.
//! Rows are matched by what they are (a function, a line, an instruction,
//! a load object: see `matching`), and sorted by the baseline's sort
//! metric, then by the other groups'.
//!
//! JSON: `{"report", "compare": MODE, "groups": [{"name", "experiments"}],
//! "sort", "total": [VALUE per group], "rows": [{"name", ..., "groups":
//! [VALUE per group], "delta": [null, {METRIC: {"exclusive", "inclusive"}}
//! per other group], "ratio": [likewise]}]}` where VALUE is the listing's
//! own `{"exclusive": {...}, "inclusive": {...}, ...}` of that group; delta
//! and ratio cover the shown metrics (seconds for times), a ratio is null
//! when the baseline's value is 0.

use crate::groups::Group;
use crate::metrics::*;
use crate::model::*;
use crate::report::{self as r, Context, MetricColumn, MetricParts, Report, SortKey};
use crate::table::{Column, Table};
use commands::{CompareMode, MetricKind, MetricName};
use serde_json::{json, Value as Json};
use std::collections::HashMap;
use std::hash::Hash;

/// The groups compared, each with its selected events summed per stack.
pub struct Comparison<'a> {
    pub mode: CompareMode,
    pub groups: &'a [Group],
    pub weights: &'a [Weights],
}

impl Comparison<'_> {
    fn totals(&self) -> Vec<Value> {
        self.weights.iter().map(|w| w.total).collect()
    }

    /// What `metrics` gives each group, key by key side by side.
    fn side_by_side<K: Hash + Eq + Copy>(
        &self,
        metrics: impl Fn(&Weights) -> HashMap<K, ExclInclValue>,
    ) -> HashMap<K, Vec<ExclInclValue>> {
        side_by_side(self.weights.iter().map(metrics).collect())
    }

    /// What each group is, for the header line and JSON.
    fn describe(&self) -> (String, Json) {
        let text: Vec<String> = self
            .groups
            .iter()
            .enumerate()
            .map(|(g, group)| {
                let role = if g == 0 { "baseline " } else { "" };
                format!(
                    "{role}{} ({})",
                    group.name,
                    experiments_text(&group.experiments)
                )
            })
            .collect();
        let json: Vec<Json> = self
            .groups
            .iter()
            .map(|group| {
                let numbers: Vec<u32> = group
                    .experiments
                    .iter()
                    .map(|&e| u32::from(e) + 1)
                    .collect();
                json!({"name": group.name, "experiments": numbers})
            })
            .collect();
        (
            format!("Compare {}: {}\n", self.mode, text.join("; ")),
            Json::Array(json),
        )
    }
}

/// `experiment 1` or `experiments 2-4, 6` (numbers from 1).
fn experiments_text(experiments: &[u16]) -> String {
    let mut ranges: Vec<(u32, u32)> = Vec::new();
    for n in experiments.iter().map(|&e| u32::from(e) + 1) {
        match ranges.last_mut() {
            Some((_, hi)) if *hi + 1 == n => *hi = n,
            _ => ranges.push((n, n)),
        }
    }
    let list: Vec<String> = ranges
        .iter()
        .map(|&(lo, hi)| match lo == hi {
            true => lo.to_string(),
            false => format!("{lo}-{hi}"),
        })
        .collect();
    let noun = if experiments.len() == 1 {
        "experiment"
    } else {
        "experiments"
    };
    format!("{noun} {}", list.join(", "))
}

/// One row: its values in each group.
struct CompareRow {
    name: String,
    values: Vec<ExclInclValue>,
    function: Option<FunctionId>,
    /// The row's own JSON fields (function id, file and line, ...).
    extra: Json,
}

/// Each key's values in every group (zero where a group has none).
fn side_by_side<K: Hash + Eq + Copy>(
    per_group: Vec<HashMap<K, ExclInclValue>>,
) -> HashMap<K, Vec<ExclInclValue>> {
    let groups = per_group.len();
    let mut all: HashMap<K, Vec<ExclInclValue>> = HashMap::new();
    for (g, map) in per_group.into_iter().enumerate() {
        for (key, value) in map {
            all.entry(key)
                .or_insert_with(|| vec![ExclInclValue::default(); groups])[g] = value;
        }
    }
    all
}

fn total_row(cmp: &Comparison) -> CompareRow {
    CompareRow {
        name: TOTAL_NAME.to_string(),
        values: cmp
            .totals()
            .into_iter()
            .map(|t| ExclInclValue {
                exclusive: t,
                inclusive: t,
            })
            .collect(),
        function: Some(TOTAL),
        extra: json!({}),
    }
}

/// `functions` in compare mode.
pub fn functions(ctx: &Context, cmp: &Comparison) -> Report {
    listing(ctx, cmp, "functions", function_rows(ctx, cmp))
}

/// Every function on some compared group's selected stacks.
fn function_rows(ctx: &Context, cmp: &Comparison) -> Vec<CompareRow> {
    cmp.side_by_side(|w| function_metrics(ctx.view, w))
        .into_iter()
        .filter(|(id, values)| *id != TOTAL && values.iter().any(|v| !v.inclusive.is_empty()))
        .map(|(id, values)| CompareRow {
            name: ctx.function_name(id),
            values,
            function: Some(id),
            extra: r::function_json(ctx, id),
        })
        .collect()
}

/// `objects` in compare mode.
pub fn objects(ctx: &Context, cmp: &Comparison) -> Report {
    let rows = cmp
        .side_by_side(|w| object_metrics(ctx.model, ctx.view, w))
        .into_iter()
        .map(|(key, values)| {
            let path = match key {
                ObjectKey::Object(id) => Some(ctx.model.object(id).path.display().to_string()),
                ObjectKey::Unknown => None,
            };
            CompareRow {
                name: ctx.object_name(key),
                values,
                function: None,
                extra: json!({ "path": path }),
            }
        })
        .collect();
    listing(ctx, cmp, "load objects", rows)
}

/// `lines` in compare mode.
pub fn lines(ctx: &Context, cmp: &Comparison) -> Report {
    let all = cmp.side_by_side(|w| line_metrics(ctx.view, w));
    let keys: Vec<LineKey> = all.keys().copied().collect();
    let owner = r::line_owners(ctx, &keys);
    let rows = all
        .into_iter()
        .map(|(key, values)| {
            let function = owner.get(&key).copied();
            CompareRow {
                name: ctx.line_name(key, function),
                values,
                function: None,
                extra: r::line_json(ctx, key, function),
            }
        })
        .collect();
    listing(ctx, cmp, "lines", rows)
}

/// `pcs` in compare mode.
pub fn pcs(ctx: &Context, cmp: &Comparison) -> Report {
    let rows = cmp
        .side_by_side(|w| pc_metrics(ctx.view, w))
        .into_iter()
        .map(|(id, values)| {
            let pc = ctx.model.pc(id);
            CompareRow {
                name: ctx.pc_name(id),
                values,
                function: None,
                extra: json!({"offset": pc.offset, "function": ctx.function_name(pc.function)}),
            }
        })
        .collect();
    listing(ctx, cmp, "PCs", rows)
}

/// `<Total>`, then `rows` sorted (by the baseline, then the others), the
/// limit applied.
fn listed(ctx: &Context, cmp: &Comparison, mut rows: Vec<CompareRow>) -> Vec<CompareRow> {
    sort_rows(ctx, &mut rows);
    if let Some(limit) = ctx.settings.limit {
        rows.truncate(limit);
    }
    std::iter::once(total_row(cmp)).chain(rows).collect()
}

/// Sorts, applies the limit, puts `<Total>` first and renders.
fn listing(ctx: &Context, cmp: &Comparison, what: &str, rows: Vec<CompareRow>) -> Report {
    let rows = listed(ctx, cmp, rows);
    let table = table(ctx, cmp, &rows);
    let (groups_text, groups_json) = cmp.describe();
    let text = format!(
        "{} sorted by metric: {}\n{groups_text}{}\n{}",
        r::capitalize(what),
        r::sort_description(ctx),
        ctx.notes_text(),
        table.render()
    );
    let totals = cmp.totals();
    let total: Vec<Json> = totals.iter().map(|&t| r::total_json(ctx, t)).collect();
    let json = ctx.with_notes(json!({
        "report": what,
        "compare": cmp.mode.name(),
        "groups": groups_json,
        "sort": r::sort_spec(ctx),
        "total": total,
        "rows": rows.iter().map(|row| row_json(ctx, &totals, row)).collect::<Vec<_>>(),
    }));
    Report { text, json }
}

fn sort_rows(ctx: &Context, rows: &mut [CompareRow]) {
    let function = |row: &CompareRow| row.function.map(|f| ctx.model.function(f));
    match ctx.settings.sort {
        SortKey::Name => rows.sort_by(|a, b| a.name.cmp(&b.name)),
        SortKey::Size => rows.sort_by_key(|row| {
            let size = function(row).map_or(0, |f| f.size);
            (std::cmp::Reverse(size), row.name.clone())
        }),
        SortKey::Address => rows.sort_by_key(|row| {
            let address = function(row).map_or(u64::MAX, |f| f.address);
            (address, row.name.clone())
        }),
        SortKey::Metric(metric, kind) => rows.sort_by_cached_key(|row| {
            let values: Vec<std::cmp::Reverse<u64>> = row
                .values
                .iter()
                .map(|v| std::cmp::Reverse(r::pick(v, kind).get(metric)))
                .collect();
            (values, row.name.clone())
        }),
    }
}

/// The heading of a group's value column.
fn value_heading(cmp: &Comparison, group: usize, metric: MetricName) -> &'static str {
    match (group, cmp.mode) {
        (0, _) | (_, CompareMode::On | CompareMode::Off) => r::value_heading(metric),
        (_, CompareMode::Delta) => "delta",
        (_, CompareMode::Ratio) => "ratio",
    }
}

/// What a group's value cell shows: its value, or its difference from or
/// ratio to the baseline's.
fn value_cell(cmp: &Comparison, group: usize, metric: MetricName, base: Value, v: Value) -> String {
    match (group, cmp.mode) {
        (0, _) | (_, CompareMode::On | CompareMode::Off) => r::metric_text(metric, v),
        (_, CompareMode::Delta) => delta_text(metric, base, v),
        (_, CompareMode::Ratio) => ratio_text(base.get(metric), v.get(metric)),
    }
}

/// The signed difference `v - base` as `metric` shows numbers.
fn delta_text(metric: MetricName, base: Value, v: Value) -> String {
    let difference = i128::from(v.get(metric)) - i128::from(base.get(metric));
    if metric.is_time() {
        format!("{:+.3}", difference as f64 / 1e9)
    } else if metric.is_ratio() {
        format!("{:+.3}", difference as f64 / 1e6)
    } else {
        format!("{difference:+}")
    }
}

/// The largest ratio shown as a number (er_print's `>99.999` beyond).
const MAX_SHOWN_RATIO: f64 = 99.999;

/// `v / base` as er_print shows it: `x 1.000` when both are 0,
/// `x >99.999` when only the baseline is (or the ratio is that large).
fn ratio_text(base: u64, v: u64) -> String {
    match ratio(base, v) {
        None if v == 0 => "x 1.000".to_string(),
        Some(ratio) if ratio <= MAX_SHOWN_RATIO => format!("x {ratio:.3}"),
        _ => format!("x >{MAX_SHOWN_RATIO:.3}"),
    }
}

/// `v / base`; None when the baseline is 0.
fn ratio(base: u64, v: u64) -> Option<f64> {
    (base > 0).then(|| v as f64 / base as f64)
}

/// The metric columns as the settings ask, each once per group; attributed
/// columns are left out.
fn table(ctx: &Context, cmp: &Comparison, rows: &[CompareRow]) -> Table {
    let groups = cmp.groups.len();
    let mut columns = Vec::new();
    let mut labels = Vec::new();
    for column in &ctx.settings.columns {
        match *column {
            MetricColumn::Metric {
                metric,
                kind,
                parts,
            } if kind != MetricKind::Attributed => {
                for g in 0..groups {
                    let first = columns.len();
                    parts.push_columns(&mut columns, value_heading(cmp, g, metric));
                    let label = r::metric_label(kind, metric);
                    labels.push((first, columns.len() - first, g, label));
                }
            }
            other => columns.extend(r::property_column(&other)),
        }
    }
    let mut table = Table::new(columns);
    for (first, count, g, label) in labels {
        if count > 0 {
            table.group(first, count, &label);
            table.upper_group(first, count, &short_name(&cmp.groups[g].name));
        }
    }
    let totals = cmp.totals();
    for row in rows {
        table.push(cells(ctx, cmp, &totals, row));
    }
    table
}

/// A group's name as a column label: the file name of its argument.
fn short_name(name: &str) -> String {
    std::path::Path::new(name)
        .file_name()
        .map_or_else(|| name.to_string(), |n| n.to_string_lossy().into_owned())
}

fn cells(ctx: &Context, cmp: &Comparison, totals: &[Value], row: &CompareRow) -> Vec<String> {
    let mut cells = Vec::new();
    for column in &ctx.settings.columns {
        match *column {
            MetricColumn::Metric {
                metric,
                kind,
                parts,
            } if kind != MetricKind::Attributed => {
                let base = r::pick(&row.values[0], kind);
                for (g, values) in row.values.iter().enumerate() {
                    let v = r::pick(values, kind);
                    parts.push_cells(&mut cells, metric, v, totals[g], || {
                        value_cell(cmp, g, metric, base, v)
                    });
                }
            }
            other => cells.extend(r::property_cell(ctx, &other, row.function, &row.name)),
        }
    }
    cells
}

fn row_json(ctx: &Context, totals: &[Value], row: &CompareRow) -> Json {
    let groups: Vec<Json> = row
        .values
        .iter()
        .zip(totals)
        .map(|(value, &total)| Json::Object(r::values_json(ctx, value, total)))
        .collect();
    let metrics = r::shown_metrics(ctx);
    let against_baseline = |each: &dyn Fn(MetricName, Value, Value) -> Json| -> Vec<Json> {
        let base = row.values[0];
        row.values
            .iter()
            .enumerate()
            .map(|(g, v)| match g {
                0 => Json::Null,
                _ => metrics
                    .iter()
                    .map(|&m| {
                        let kinds = json!({
                            "exclusive": each(m, base.exclusive, v.exclusive),
                            "inclusive": each(m, base.inclusive, v.inclusive),
                        });
                        (m.json_key().to_string(), kinds)
                    })
                    .collect::<serde_json::Map<_, _>>()
                    .into(),
            })
            .collect()
    };
    let delta = against_baseline(&delta_json);
    let ratio = against_baseline(&|m, base: Value, v: Value| json!(ratio(base.get(m), v.get(m))));
    let mut object = json!({"name": row.name, "groups": groups, "delta": delta, "ratio": ratio});
    if let (Some(map), Json::Object(extra)) = (object.as_object_mut(), &row.extra) {
        map.extend(extra.clone());
    }
    object
}

/// `v - base` in `metric`'s JSON unit: seconds for a time, the ratio's
/// difference for CPI and IPC, else the count or bytes.
fn delta_json(metric: MetricName, base: Value, v: Value) -> Json {
    let difference = i128::from(v.get(metric)) - i128::from(base.get(metric));
    if metric.is_time() {
        json!(difference as f64 / 1e9)
    } else if metric.is_ratio() {
        json!(difference as f64 / 1e6)
    } else {
        json!(i64::try_from(difference).unwrap_or(i64::MAX))
    }
}

/// `csingle` in compare mode: the centre's callers and callees with their
/// attributed values in each group.
pub fn callers_callees_of(ctx: &Context, cmp: &Comparison, center: FunctionId) -> Report {
    let pictures: Vec<CallersCallees> = cmp
        .weights
        .iter()
        .map(|w| callers_callees(ctx.view, w, center))
        .collect();
    let block = callers_callees_block(ctx, cmp, center, &pictures);
    let (groups_text, groups_json) = cmp.describe();
    let mut json = block.json;
    if let Some(map) = json.as_object_mut() {
        map.insert("compare".into(), json!(cmp.mode.name()));
        map.insert("groups".into(), groups_json);
    }
    Report {
        text: groups_text + &ctx.notes_text() + &block.text,
        json: ctx.with_notes(json),
    }
}

/// `callers-callees` in compare mode: a block for every function on some
/// compared group's stacks, in the function list's order.
pub fn callers_callees_all(ctx: &Context, cmp: &Comparison) -> Report {
    let (groups_text, groups_json) = cmp.describe();
    let mut text = groups_text + &ctx.notes_text();
    let all: Vec<AllCallersCallees> = cmp
        .weights
        .iter()
        .map(|w| AllCallersCallees::new(ctx.view, w))
        .collect();
    let mut blocks = Vec::new();
    for row in listed(ctx, cmp, function_rows(ctx, cmp)) {
        let center = row.function.unwrap_or(TOTAL);
        let pictures: Vec<CallersCallees> = all.iter().map(|a| a.get(center)).collect();
        let block = callers_callees_block(ctx, cmp, center, &pictures);
        text.push_str(&block.text);
        text.push('\n');
        blocks.push(block.json);
    }
    let json = json!({"report": "callers-callees", "compare": cmp.mode.name(),
                      "groups": groups_json, "functions": blocks});
    Report {
        text,
        json: ctx.with_notes(json),
    }
}

/// One centre's block: callers, the centre (`*`), callees, each with its
/// attributed value in each group.
fn callers_callees_block(
    ctx: &Context,
    cmp: &Comparison,
    center: FunctionId,
    pictures: &[CallersCallees],
) -> Report {
    let groups = pictures.len();
    let side = |list: fn(&CallersCallees) -> &Vec<(FunctionId, Value)>| {
        let per_group: Vec<HashMap<FunctionId, ExclInclValue>> = pictures
            .iter()
            .map(|p| {
                list(p)
                    .iter()
                    .map(|&(f, v)| {
                        let value = ExclInclValue {
                            exclusive: v,
                            inclusive: v,
                        };
                        (f, value)
                    })
                    .collect()
            })
            .collect();
        let mut rows: Vec<(FunctionId, Vec<Value>)> = side_by_side(per_group)
            .into_iter()
            .map(|(f, values)| (f, values.iter().map(|v| v.inclusive).collect()))
            .collect();
        let order = ctx.sort_metric();
        rows.sort_by_cached_key(|(f, values)| {
            let keys: Vec<std::cmp::Reverse<u64>> = values
                .iter()
                .map(|v| std::cmp::Reverse(v.get(order)))
                .collect();
            (keys, ctx.function_name(*f))
        });
        rows
    };
    let callers = side(|p| &p.callers);
    let callees = side(|p| &p.callees);
    let metrics = r::shown_metrics(ctx);
    let totals = cmp.totals();
    let mut columns = Vec::new();
    let mut labels = Vec::new();
    for &metric in &metrics {
        for g in 0..groups {
            let first = columns.len();
            let heading = value_heading(cmp, g, metric);
            MetricParts::value_and_percent(metric).push_columns(&mut columns, heading);
            labels.push((first, columns.len() - first, g, metric));
        }
    }
    columns.push(Column::text("Name"));
    let mut table = Table::new(columns);
    for (first, count, g, metric) in labels {
        let label = r::metric_label(MetricKind::Attributed, metric);
        table.group(first, count, &label);
        table.upper_group(first, count, &short_name(&cmp.groups[g].name));
    }
    let mut push = |values: &[Value], name: String| {
        let mut cells = Vec::new();
        for &metric in &metrics {
            let parts = MetricParts::value_and_percent(metric);
            for (g, &v) in values.iter().enumerate() {
                parts.push_cells(&mut cells, metric, v, totals[g], || {
                    value_cell(cmp, g, metric, values[0], v)
                });
            }
        }
        cells.push(name);
        table.push(cells);
    };
    for (f, values) in &callers {
        push(values, format!(" {}", ctx.function_name(*f)));
    }
    let exclusive: Vec<Value> = pictures.iter().map(|p| p.value.exclusive).collect();
    push(&exclusive, format!("*{}", ctx.function_name(center)));
    for (f, values) in &callees {
        push(values, format!(" {}", ctx.function_name(*f)));
    }
    let name = ctx.function_name(center);
    let text = format!("Callers and callees of {name}\n\n{}", table.render());
    let list = |rows: &[(FunctionId, Vec<Value>)]| -> Vec<Json> {
        rows.iter()
            .map(|(f, values)| {
                let attributed: Vec<Json> = values
                    .iter()
                    .zip(&totals)
                    .map(|(&v, &t)| r::value_json(v, t))
                    .collect();
                json!({"name": ctx.function_name(*f), "function_id": f, "attributed": attributed})
            })
            .collect()
    };
    let kind = |pick: fn(&ExclInclValue) -> Value| -> Vec<Json> {
        pictures
            .iter()
            .zip(&totals)
            .map(|(p, &t)| r::value_json(pick(&p.value), t))
            .collect()
    };
    let json = json!({
        "report": "callers-callees",
        "function": name,
        "function_id": center,
        "exclusive": kind(|v| v.exclusive),
        "inclusive": kind(|v| v.inclusive),
        "callers": list(&callers),
        "callees": list(&callees),
    });
    Report { text, json }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratios_read_as_er_print_shows_them() {
        assert_eq!(ratio_text(100, 220), "x 2.200");
        assert_eq!(ratio_text(0, 0), "x 1.000");
        assert_eq!(ratio_text(0, 5), "x >99.999");
        assert_eq!(ratio_text(1, 1_000), "x >99.999");
        assert_eq!(ratio(0, 5), None);
        assert_eq!(ratio(4, 2), Some(0.5));
    }

    #[test]
    fn deltas_are_signed_in_the_metric_unit() {
        let v = |ns| Value {
            ns,
            ..Value::default()
        };
        assert_eq!(
            delta_text(MetricName::TotalCpu, v(50_000_000), v(110_000_000)),
            "+0.060"
        );
        assert_eq!(
            delta_text(MetricName::TotalCpu, v(110_000_000), v(50_000_000)),
            "-0.060"
        );
        let leaks = |n| Value {
            leaks: n,
            ..Value::default()
        };
        assert_eq!(delta_text(MetricName::Leaks, leaks(7), leaks(3)), "-4");
        assert_eq!(delta_json(MetricName::Leaks, leaks(7), leaks(9)), json!(2));
    }

    #[test]
    fn experiment_numbers_are_ranges() {
        assert_eq!(experiments_text(&[0]), "experiment 1");
        assert_eq!(experiments_text(&[1, 2, 3, 5]), "experiments 2-4, 6");
    }
}
