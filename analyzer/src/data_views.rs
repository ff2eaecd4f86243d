//! The data-object views of the analysis language (`data_objects`,
//! `data_single NAME`, `data_layout`: the manual's "Data Objects") over the
//! loaded experiments' counter records: the records of every counter that
//! recorded data addresses, each experiment's resolved with its own load
//! objects and heap (see [`crate::dataspace`]).

use crate::dataspace::{DataEvent, DataObjects, Resolver, Unknown, UNKNOWN};
use crate::model::{CounterEntry, Model};
use crate::report::{Keep, Report};
use experiment::counters::{CounterEvent, FLAG_IN_FRAME};
use experiment::Experiment;
use serde_json::Value as Json;
use std::collections::{HashMap, HashSet};

/// Which of the three views.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DataView<'a> {
    Objects,
    Single(&'a str),
    Layout,
}

/// What the views need that the model does not hold: each experiment's
/// resolver (its load objects' variables and types, its heap blocks) and
/// the recorded stacks its records name frames of. Made once per load, on
/// the first view asked for (reading DWARF and replaying the heap is the
/// costly part).
pub struct DataSources {
    /// The model's counters that recorded data addresses, as columns:
    /// their names, and each model counter's column.
    names: Vec<String>,
    columns: Vec<Option<usize>>,
    /// By experiment index; None for one without such records.
    experiments: Vec<Option<ExperimentSource>>,
}

struct ExperimentSource {
    resolver: Resolver,
    heap_traced: bool,
    /// The recorded stacks (leaf first) of the records that name a frame.
    stacks: HashMap<u64, Vec<u64>>,
}

/// How to get data addresses, for the message of a model without them.
pub const NO_DATA_ADDRESSES: &str = "no counter recorded data addresses: data objects need a \
     counter that does, such as page-faults (rdbx collect -h page-faults,1, or collector \
     hwprofile counter page-faults 1)";

impl DataSources {
    /// Reads what the views need of the model's experiments; None when no
    /// counter recorded data addresses, Err (one line) when an experiment
    /// cannot be read.
    pub fn of(model: &Model) -> Result<Option<DataSources>, String> {
        let (names, columns) = columns_with_addresses(model);
        if names.is_empty() {
            return Ok(None);
        }
        let mut sources = DataSources {
            names,
            columns,
            experiments: Vec::new(),
        };
        sources
            .experiments
            .resize_with(model.experiments.len(), || None);
        // The records are in the order of their experiments.
        for records in model
            .counter_events
            .chunk_by(|a, b| a.experiment == b.experiment)
        {
            let index = usize::from(records[0].experiment);
            let source = sources.experiment_source(model, index, records)?;
            if let Some(slot) = sources.experiments.get_mut(index) {
                *slot = source;
            }
        }
        Ok(Some(sources))
    }

    /// The column of `counter` (a model counter's name) when it recorded
    /// data addresses.
    pub fn column_of(&self, counter: &str) -> Option<usize> {
        self.names.iter().position(|n| n == counter)
    }

    fn column(&self, entry: &CounterEntry) -> Option<usize> {
        self.columns
            .get(usize::from(entry.counter))
            .copied()
            .flatten()
    }

    fn experiment_source(
        &self,
        model: &Model,
        index: usize,
        records: &[CounterEntry],
    ) -> Result<Option<ExperimentSource>, String> {
        let records = || records.iter().filter(|e| self.column(e).is_some());
        if records().next().is_none() {
            return Ok(None);
        }
        let Some(entry) = model.experiments.get(index) else {
            return Ok(None);
        };
        let unreadable = |e: experiment::Error| {
            format!(
                "cannot read {} for its data objects: {e}",
                entry.path.display()
            )
        };
        let expt = Experiment::open(&entry.path).map_err(unreadable)?;
        let founder = Experiment::open(&entry.founder).map_err(unreadable)?;
        // As the loader: an unreadable index archives nothing (it warned).
        let archive = founder.archive_index().unwrap_or_default();
        let archives_dir = founder.path().join("archives");
        let resolver =
            Resolver::for_experiment(&expt, &archive, &archives_dir).map_err(unreadable)?;
        let framed: HashSet<u64> = records()
            .filter(|e| e.flags & FLAG_IN_FRAME != 0)
            .map(|e| e.stack_record)
            .collect();
        let stacks = match framed.is_empty() {
            true => HashMap::new(),
            false => expt
                .stacks()
                .map_err(unreadable)?
                .into_iter()
                .filter(|(id, _)| framed.contains(id))
                .map(|(id, stack)| (id, stack.pcs))
                .collect(),
        };
        Ok(Some(ExperimentSource {
            resolver,
            heap_traced: expt.manifest().kinds.iter().any(|k| k == "heap-trace"),
            stacks,
        }))
    }

    /// The kept records' data objects, summed per column.
    fn objects(&self, model: &Model, keep: Keep) -> (DataObjects, bool) {
        let mut objects = DataObjects::new(self.names.clone());
        let mut untraced_heap = false;
        let by_experiment = model
            .counter_events
            .chunk_by(|a, b| a.experiment == b.experiment);
        for records in by_experiment {
            let index = usize::from(records[0].experiment);
            let Some(Some(source)) = self.experiments.get(index) else {
                continue;
            };
            let events: Vec<DataEvent> = records
                .iter()
                .filter(|e| keep(&e.as_event()))
                .filter_map(|e| {
                    let column = self.column(e)?;
                    Some(data_event(e, column, model.origin_ns, &source.stacks))
                })
                .collect();
            untraced_heap |= !source.heap_traced && !events.is_empty();
            objects.add(&source.resolver, events);
        }
        (objects, untraced_heap)
    }

    /// One view of the kept records, sorted by column `sort`, at most
    /// `limit` rows (types for `data_layout`) after `<Total>`.
    pub fn view(
        &self,
        model: &Model,
        keep: Keep,
        view: DataView,
        sort: usize,
        limit: Option<usize>,
    ) -> Result<Report, String> {
        let (objects, untraced_heap) = self.objects(model, keep);
        let limit = limit.unwrap_or(usize::MAX);
        match view {
            DataView::Objects => Ok(objects_report(&objects, sort, limit, untraced_heap)),
            DataView::Single(name) => {
                let single = objects
                    .single(name)
                    .map_err(|e| format!("{e}; data_objects lists those that had"))?;
                Ok(Report {
                    text: single.text(),
                    json: single.json(),
                })
            }
            DataView::Layout => {
                let mut table = objects.layout(sort);
                table.types.truncate(limit);
                Ok(Report {
                    text: table.text(),
                    json: table.json(),
                })
            }
        }
    }
}

/// `data_objects`, with the note on heap tracing when it was off and some
/// addresses were in no known object.
fn objects_report(objects: &DataObjects, sort: usize, limit: usize, untraced_heap: bool) -> Report {
    let mut table = objects.objects(sort);
    let unidentified = format!("{UNKNOWN}.{}", Unknown::Unidentified.element());
    let some_unidentified = table
        .rows
        .iter()
        .any(|r| r.name == unidentified && r.metrics.iter().any(|&m| m > 0));
    let note = (untraced_heap && some_unidentified).then_some(UNTRACED_HEAP_NOTE);
    table.rows.truncate(limit.saturating_add(1));
    let mut text = table.text();
    let mut json = table.json();
    if let Some(note) = note {
        text.push_str(&format!("\nNote: {note}\n"));
        json["note"] = Json::from(note);
    }
    Report { text, json }
}

/// Why `<Unknown>.(Unidentified)` may hold heap data.
const UNTRACED_HEAP_NOTE: &str = "heap tracing was off: addresses in heap blocks are among \
     <Unknown>.(Unidentified); collect with -H on (collector heaptrace on) to name each block \
     by its allocation site";

/// The names of the model's counters that recorded data addresses (the
/// views' columns), and each model counter's column.
fn columns_with_addresses(model: &Model) -> (Vec<String>, Vec<Option<usize>>) {
    let mut with_addresses = vec![false; model.counters.len()];
    for entry in model.counter_events.iter().filter(|e| has_address(e)) {
        if let Some(slot) = with_addresses.get_mut(usize::from(entry.counter)) {
            *slot = true;
        }
    }
    let mut names = Vec::new();
    let columns = with_addresses
        .iter()
        .zip(&model.counters)
        .map(|(&recorded, counter)| {
            recorded.then(|| {
                names.push(counter.name().to_string());
                names.len() - 1
            })
        })
        .collect();
    (names, columns)
}

fn has_address(entry: &CounterEntry) -> bool {
    entry.flags & experiment::counters::FLAG_DATA_ADDRESS != 0
}

/// The view's event of a model record: its time back on the recorded
/// clock (the heap events'), its frame's pc from the stack as recorded.
fn data_event(
    entry: &CounterEntry,
    column: usize,
    origin_ns: u64,
    stacks: &HashMap<u64, Vec<u64>>,
) -> DataEvent {
    let record = CounterEvent {
        time_ns: entry.time_ns + origin_ns,
        stack_id: entry.stack_record,
        count: entry.count,
        data_addr: entry.data_addr,
        frame_cfa: entry.frame_cfa,
        counter: u16::try_from(column).unwrap_or(u16::MAX),
        frame: entry.frame,
        flags: entry.flags,
    };
    let stack = stacks.get(&entry.stack_record).map(Vec::as_slice);
    DataEvent::from_counter(&record, stack)
}
