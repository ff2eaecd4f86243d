//! er_print's data-object views over resolved events: `data_objects` (every
//! data object and aggregate, `<Total>` first), `data_single NAME` (one
//! object and its members) and `data_layout` (each aggregate type's members
//! with their offsets, sizes and metrics), as text and JSON.
//!
//! JSON (`serde`), all metrics as arrays in the order of `counters`:
//! - `data_objects`: `{"report": "data_objects", "counters": [NAME...],
//!   "sort": NAME, "rows": [ROW...]}`, a ROW being `{"name": DESCRIPTOR,
//!   "scope": OBJECT-OR-FUNCTION|null, "kind": "total"|"artificial"|
//!   "object"|"member", "size": BYTES|null, "metrics": [COUNT...]}`.
//! - `data_single`: `{"report": "data_single", "counters", "total":
//!   [COUNT...], "objects": [{"object": ROW, "members": [ROW...]}]}`.
//! - `data_layout`: `{"report": "data_layout", "counters", "sort",
//!   "total": [COUNT...], "types": [{"name": "{structure:record -}",
//!   "size", "metrics", "members": [{"name", "offset", "size", "metrics",
//!   "padding": BOOL}]}]}`.

use super::descriptor::{object_descriptor, Layout, PADDING};
use super::resolver::{Attribution, Resolver, HEAP, UNKNOWN};
use super::DataEvent;
use crate::model::TOTAL_NAME;
use crate::table::{percent, Column, Table};
use serde::Serialize;
use std::collections::HashMap;

/// The artificial aggregate of every scalar variable.
pub const SCALARS: &str = "<Scalars>";

/// A row's identity: its descriptor path and where it is declared.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct RowKey {
    name: String,
    scope: Option<String>,
}

#[derive(Debug, Clone)]
struct RowEntry {
    key: RowKey,
    kind: &'static str,
    size: Option<u64>,
    metrics: Vec<u64>,
}

/// An aggregate type's layout with the metrics of its members.
#[derive(Debug, Clone)]
struct LayoutEntry {
    layout: Layout,
    members: Vec<Vec<u64>>,
    /// Events in padding, by offset in the aggregate.
    padding: Vec<(u64, usize, u64)>,
}

/// The data objects of resolved events, summed per counter: what the
/// views are made from.
#[derive(Debug, Clone, Default)]
pub struct DataObjects {
    counters: Vec<String>,
    index: HashMap<RowKey, usize>,
    rows: Vec<RowEntry>,
    layouts: Vec<LayoutEntry>,
}

impl DataObjects {
    /// Empty, with the counters' names (the metric columns).
    pub fn new(counters: Vec<String>) -> DataObjects {
        let mut objects = DataObjects {
            counters,
            ..DataObjects::default()
        };
        objects.row(TOTAL_NAME.into(), None, "total", None);
        objects
    }

    /// Adds the events of the experiment `resolver` names.
    pub fn add(&mut self, resolver: &Resolver, events: impl IntoIterator<Item = DataEvent>) {
        let events: Vec<DataEvent> = events.into_iter().collect();
        // Events on one object are alike: each distinct attribution is
        // counted once, with its events' sums per counter, in the order
        // first met (so that equal rows keep one order).
        let mut seen: HashMap<Attribution, usize> = HashMap::new();
        let mut sums: Vec<(Attribution, Vec<u64>)> = Vec::new();
        resolver.resolve_each(&events, |index, attribution| {
            let event = &events[index];
            let at = match seen.get(&attribution) {
                Some(&at) => at,
                None => {
                    seen.insert(attribution.clone(), sums.len());
                    sums.push((attribution, Vec::new()));
                    sums.len() - 1
                }
            };
            bump(&mut sums[at].1, event.counter, event.count);
        });
        let mut layout_ids = HashMap::new();
        for (attribution, metrics) in &sums {
            for (counter, &count) in metrics.iter().enumerate().filter(|(_, &c)| c > 0) {
                self.count(counter, count, attribution);
            }
            for hit in &attribution.hits {
                let id = *layout_ids
                    .entry(hit.layout)
                    .or_insert_with(|| self.layout_id(resolver, hit.layout));
                let Some(entry) = id.and_then(|id| self.layouts.get_mut(id)) else {
                    continue;
                };
                for (counter, &count) in metrics.iter().enumerate().filter(|(_, &c)| c > 0) {
                    match hit.member {
                        Some(member) => bump(&mut entry.members[member], counter, count),
                        None => entry.padding.push((hit.offset, counter, count)),
                    }
                }
            }
        }
    }

    fn count(&mut self, counter: usize, count: u64, attribution: &Attribution) {
        while self.counters.len() <= counter {
            let name = format!("counter {}", self.counters.len());
            self.counters.push(name);
        }
        self.add_to(0, counter, count);
        if attribution.scalar {
            let row = self.row(SCALARS.into(), None, "artificial", None);
            self.add_to(row, counter, count);
        }
        let artificial = matches!(
            attribution.path.first().map(|s| s.descriptor.as_ref()),
            Some(UNKNOWN | HEAP)
        );
        let mut name = String::new();
        for (depth, step) in attribution.path.iter().enumerate() {
            if depth > 0 {
                name.push('.');
            }
            name.push_str(&step.descriptor);
            let kind = match (artificial, depth) {
                (true, _) => "artificial",
                (false, 0) => "object",
                (false, _) => "member",
            };
            let row = self.row(name.clone(), attribution.scope.clone(), kind, step.size);
            self.add_to(row, counter, count);
        }
    }

    fn row(
        &mut self,
        name: String,
        scope: Option<String>,
        kind: &'static str,
        size: Option<u64>,
    ) -> usize {
        let key = RowKey { name, scope };
        if let Some(&row) = self.index.get(&key) {
            return row;
        }
        self.rows.push(RowEntry {
            key: key.clone(),
            kind,
            size,
            metrics: Vec::new(),
        });
        self.index.insert(key, self.rows.len() - 1);
        self.rows.len() - 1
    }

    fn add_to(&mut self, row: usize, counter: usize, count: u64) {
        bump(&mut self.rows[row].metrics, counter, count);
    }

    /// This table's id of a layout of `resolver`: layouts of several
    /// experiments are one when they are alike.
    fn layout_id(&mut self, resolver: &Resolver, id: usize) -> Option<usize> {
        let layout = resolver.layout(id)?;
        if let Some(found) = self.layouts.iter().position(|e| e.layout == layout) {
            return Some(found);
        }
        self.layouts.push(LayoutEntry {
            members: vec![Vec::new(); layout.members.len()],
            layout,
            padding: Vec::new(),
        });
        Some(self.layouts.len() - 1)
    }

    fn metrics(&self, values: &[u64]) -> Vec<u64> {
        (0..self.counters.len())
            .map(|c| values.get(c).copied().unwrap_or(0))
            .collect()
    }

    fn public_row(&self, entry: &RowEntry) -> DataObjectRow {
        DataObjectRow {
            name: entry.key.name.clone(),
            scope: entry.key.scope.clone(),
            kind: entry.kind,
            size: entry.size,
            metrics: self.metrics(&entry.metrics),
        }
    }

    fn total(&self) -> Vec<u64> {
        self.metrics(&self.rows[0].metrics)
    }

    fn sort_name(&self, sort: usize) -> String {
        self.counters.get(sort).cloned().unwrap_or_default()
    }

    /// `data_objects`: every data object and aggregate, `<Total>` first,
    /// the others by counter `sort` (most first), then by name.
    pub fn objects(&self, sort: usize) -> DataObjectsTable {
        let mut rows: Vec<DataObjectRow> = self
            .rows
            .iter()
            .skip(1)
            .map(|e| self.public_row(e))
            .collect();
        sort_rows(&mut rows, sort);
        rows.insert(0, self.public_row(&self.rows[0]));
        DataObjectsTable {
            report: "data_objects",
            counters: self.counters.clone(),
            sort: self.sort_name(sort),
            rows,
        }
    }

    /// `data_single NAME`: the objects named so (a whole descriptor path,
    /// or a variable's bare name) with their members that had events.
    pub fn single(&self, name: &str) -> Result<DataSingle, String> {
        let mut objects = Vec::new();
        for entry in self.rows.iter().skip(1) {
            if entry.key.name != name && variable_name(&entry.key.name) != Some(name) {
                continue;
            }
            let prefix = format!("{}.", entry.key.name);
            let mut members: Vec<DataObjectRow> = self
                .rows
                .iter()
                .filter(|m| m.key.scope == entry.key.scope && m.key.name.starts_with(&prefix))
                .map(|m| self.public_row(m))
                .collect();
            members.sort_by(|a, b| a.name.cmp(&b.name));
            objects.push(SingleObject {
                object: self.public_row(entry),
                members,
            });
        }
        if objects.is_empty() {
            return Err(format!("no data object \"{name}\" had events"));
        }
        Ok(DataSingle {
            report: "data_single",
            counters: self.counters.clone(),
            total: self.total(),
            objects,
        })
    }

    /// `data_layout`: each aggregate type that had events, most first by
    /// counter `sort`, with all its members and the padding between them.
    pub fn layout(&self, sort: usize) -> DataLayoutTable {
        let mut types: Vec<LayoutType> = self.layouts.iter().map(|e| self.layout_type(e)).collect();
        types.sort_by(|a, b| {
            let key = |t: &LayoutType| t.metrics.get(sort).copied().unwrap_or(0);
            key(b).cmp(&key(a)).then_with(|| a.name.cmp(&b.name))
        });
        DataLayoutTable {
            report: "data_layout",
            counters: self.counters.clone(),
            sort: self.sort_name(sort),
            total: self.total(),
            types,
        }
    }

    fn layout_type(&self, entry: &LayoutEntry) -> LayoutType {
        let mut members: Vec<LayoutMemberRow> = entry
            .layout
            .members
            .iter()
            .zip(&entry.members)
            .map(|(m, values)| LayoutMemberRow {
                name: m.descriptor.to_string(),
                offset: m.offset,
                size: m.size,
                metrics: self.metrics(values),
                padding: false,
            })
            .collect();
        members.extend(padding_rows(&entry.layout, self.counters.len()));
        for &(offset, counter, count) in &entry.padding {
            let hole = members.iter().position(|m| {
                m.padding && m.offset <= offset && offset - m.offset < m.size.unwrap_or(0)
            });
            let hole = hole.unwrap_or_else(|| {
                members.push(LayoutMemberRow {
                    name: PADDING.into(),
                    offset,
                    size: None,
                    metrics: vec![0; self.counters.len()],
                    padding: true,
                });
                members.len() - 1
            });
            members[hole].metrics[counter] += count;
        }
        members.sort_by_key(|m| (m.offset, m.padding));
        let mut metrics = vec![0; self.counters.len()];
        for member in &members {
            for (sum, value) in metrics.iter_mut().zip(&member.metrics) {
                *sum += value;
            }
        }
        LayoutType {
            name: object_descriptor(&entry.layout.name, None),
            size: entry.layout.size,
            metrics,
            members,
        }
    }
}

/// Adds `count` to a row's metric `counter`, which may be new.
fn bump(metrics: &mut Vec<u64>, counter: usize, count: u64) {
    if metrics.len() <= counter {
        metrics.resize(counter + 1, 0);
    }
    metrics[counter] += count;
}

/// The bare name of a variable's descriptor (`{int count}` is `count`),
/// for a path of one step.
pub(super) fn variable_name(descriptor: &str) -> Option<&str> {
    if descriptor.contains("}.") {
        return None;
    }
    let inner = descriptor.strip_prefix('{')?.strip_suffix('}')?;
    inner.rsplit_once(' ').map(|(_, name)| name)
}

/// The bytes of an aggregate no member covers, as `(Anon)` rows.
pub(super) fn padding_rows(layout: &Layout, counters: usize) -> Vec<LayoutMemberRow> {
    let mut spans: Vec<(u64, u64)> = layout
        .members
        .iter()
        .map(|m| (m.offset, m.offset.saturating_add(m.size.unwrap_or(0))))
        .collect();
    spans.sort_unstable();
    let mut holes = Vec::new();
    let mut end = 0;
    for (start, stop) in spans {
        if start > end {
            holes.push((end, start - end));
        }
        end = end.max(stop);
    }
    if let Some(size) = layout.size.filter(|&s| s > end) {
        holes.push((end, size - end));
    }
    holes
        .into_iter()
        .map(|(offset, size)| LayoutMemberRow {
            name: PADDING.into(),
            offset,
            size: Some(size),
            metrics: vec![0; counters],
            padding: true,
        })
        .collect()
}

fn sort_rows(rows: &mut [DataObjectRow], sort: usize) {
    rows.sort_by(|a, b| {
        let key = |r: &DataObjectRow| r.metrics.get(sort).copied().unwrap_or(0);
        key(b)
            .cmp(&key(a))
            .then_with(|| a.name.cmp(&b.name))
            .then_with(|| a.scope.cmp(&b.scope))
    });
}

/// `data_objects` of one experiment's events.
pub fn data_objects(
    resolver: &Resolver,
    counters: Vec<String>,
    events: impl IntoIterator<Item = DataEvent>,
    sort: usize,
) -> DataObjectsTable {
    let mut objects = DataObjects::new(counters);
    objects.add(resolver, events);
    objects.objects(sort)
}

/// `data_single NAME` of one experiment's events.
pub fn data_single(
    resolver: &Resolver,
    counters: Vec<String>,
    events: impl IntoIterator<Item = DataEvent>,
    name: &str,
) -> Result<DataSingle, String> {
    let mut objects = DataObjects::new(counters);
    objects.add(resolver, events);
    objects.single(name)
}

/// `data_layout` of one experiment's events.
pub fn data_layout(
    resolver: &Resolver,
    counters: Vec<String>,
    events: impl IntoIterator<Item = DataEvent>,
    sort: usize,
) -> DataLayoutTable {
    let mut objects = DataObjects::new(counters);
    objects.add(resolver, events);
    objects.layout(sort)
}

/// One data object (or aggregate) with its metrics.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DataObjectRow {
    /// The descriptor path: `{structure:record rec}.{int count}`.
    pub name: String,
    /// The load object (static data) or function (stack data) it is in.
    pub scope: Option<String>,
    /// `total`, `artificial` (`<Scalars>`, `<Unknown>`, `<Heap>` and their
    /// elements), `object` (a variable) or `member`.
    pub kind: &'static str,
    pub size: Option<u64>,
    /// Events per counter.
    pub metrics: Vec<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DataObjectsTable {
    pub report: &'static str,
    pub counters: Vec<String>,
    pub sort: String,
    pub rows: Vec<DataObjectRow>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SingleObject {
    pub object: DataObjectRow,
    pub members: Vec<DataObjectRow>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DataSingle {
    pub report: &'static str,
    pub counters: Vec<String>,
    pub total: Vec<u64>,
    pub objects: Vec<SingleObject>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LayoutMemberRow {
    /// `{int count}`, or `(Anon)` for padding.
    pub name: String,
    pub offset: u64,
    pub size: Option<u64>,
    pub metrics: Vec<u64>,
    pub padding: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LayoutType {
    /// `{structure:record -}`.
    pub name: String,
    pub size: Option<u64>,
    /// The sum of its members' (and padding's).
    pub metrics: Vec<u64>,
    pub members: Vec<LayoutMemberRow>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DataLayoutTable {
    pub report: &'static str,
    pub counters: Vec<String>,
    pub sort: String,
    pub total: Vec<u64>,
    pub types: Vec<LayoutType>,
}

/// The metric columns: each counter's events and percent of `<Total>`.
fn metric_columns(counters: &[String], table: &mut Table) {
    for (index, counter) in counters.iter().enumerate() {
        table.columns.push(Column::number("", "events"));
        table.columns.push(Column::number("", "%"));
        table.group(2 * index, 2, counter);
    }
}

fn metric_cells(metrics: &[u64], total: &[u64]) -> Vec<String> {
    metrics
        .iter()
        .zip(total)
        .flat_map(|(&value, &whole)| [value.to_string(), percent(value, whole)])
        .collect()
}

fn size_cell(size: Option<u64>) -> String {
    size.map_or_else(String::new, |s| s.to_string())
}

impl DataObjectsTable {
    pub fn text(&self) -> String {
        let mut table = Table::new(Vec::new());
        metric_columns(&self.counters, &mut table);
        table.columns.push(Column::number("Size", "bytes"));
        table.columns.push(Column::text("Scope"));
        table.columns.push(Column::text("Name"));
        let total = self
            .rows
            .first()
            .map(|r| r.metrics.clone())
            .unwrap_or_default();
        for row in &self.rows {
            let mut cells = metric_cells(&row.metrics, &total);
            cells.push(size_cell(row.size));
            cells.push(row.scope.clone().unwrap_or_default());
            cells.push(row.name.clone());
            table.push(cells);
        }
        format!(
            "Data Objects sorted by metric: {}\n\n{}",
            self.sort,
            table.render()
        )
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or_default()
    }
}

impl DataSingle {
    pub fn text(&self) -> String {
        let mut text = String::new();
        for single in &self.objects {
            let object = &single.object;
            text.push_str(&object.name);
            if let Some(scope) = &object.scope {
                text.push_str(&format!(" in {scope}"));
            }
            if let Some(size) = object.size {
                text.push_str(&format!(", {size} bytes"));
            }
            text.push_str("\n\n");
            let mut table = Table::new(Vec::new());
            metric_columns(&self.counters, &mut table);
            table.columns.push(Column::number("Size", "bytes"));
            table.columns.push(Column::text("Name"));
            for row in std::iter::once(object).chain(&single.members) {
                let mut cells = metric_cells(&row.metrics, &self.total);
                cells.push(size_cell(row.size));
                cells.push(row.name.clone());
                table.push(cells);
            }
            text.push_str(&table.render());
            text.push('\n');
        }
        text.pop();
        text
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or_default()
    }
}

impl DataLayoutTable {
    pub fn text(&self) -> String {
        let mut table = Table::new(Vec::new());
        metric_columns(&self.counters, &mut table);
        table.columns.push(Column::number("Offset", "bytes"));
        table.columns.push(Column::number("Size", "bytes"));
        table.columns.push(Column::text("Name"));
        let mut total = metric_cells(&self.total, &self.total);
        total.extend([String::new(), String::new(), TOTAL_NAME.to_string()]);
        table.push(total);
        for ty in &self.types {
            let mut cells = metric_cells(&ty.metrics, &self.total);
            cells.extend([String::new(), size_cell(ty.size), ty.name.clone()]);
            table.push(cells);
            for member in &ty.members {
                let mut cells = metric_cells(&member.metrics, &self.total);
                cells.push(format!("+{}", member.offset));
                cells.push(size_cell(member.size));
                cells.push(format!("    {}", member.name));
                table.push(cells);
            }
        }
        format!(
            "Data Layouts sorted by metric: {}\n\n{}",
            self.sort,
            table.render()
        )
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or_default()
    }
}
