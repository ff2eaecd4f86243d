//! The `events` table: one row per recorded event of any kind, with the
//! value the analyzer's views sum for it (the analyzer's own
//! `metrics::Value` of the event), a column per metric named by its key in
//! `rdbx analyze --json`.

use crate::experiments::rank_column;
use crate::partition::{Partitions, TableFile, BATCH_ROWS};
use crate::Result;
use analyzer::groups::Placement;
use analyzer::metrics::Value;
use analyzer::model::{EventEntry, Model, StackId, NO_STACK};
use analyzer::report::MetricName;
use arrow_array::{ArrayRef, Int32Array, Int64Array, StringArray, TimestampMicrosecondArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};
use std::sync::Arc;

/// What an event is: the data kind that recorded it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Clock,
    Heap,
    Sync,
    Io,
    OffCpu,
    Counter,
    Mpi,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Clock => "clock",
            Kind::Heap => "heap",
            Kind::Sync => "sync",
            Kind::Io => "io",
            Kind::OffCpu => "offcpu",
            Kind::Counter => "counter",
            Kind::Mpi => "mpi",
        }
    }
}

/// The metrics every row has a column for: the built-in metrics computed
/// from events, but wall time (CPU time plus off-CPU time, a sum of two
/// columns). A counter's events are in `counter_events`, its name in
/// `counter`: the counters differ from one experiment to the next.
fn metrics() -> impl Iterator<Item = MetricName> {
    MetricName::DYNAMIC
        .into_iter()
        .filter(|&m| m != MetricName::WallTime)
}

/// A metric's column: its JSON key, with `_ns` for a time (JSON shows
/// times in seconds; the table keeps the nanoseconds the views sum).
pub fn metric_column(metric: MetricName) -> String {
    match metric.is_time() {
        true => format!("{}_ns", metric.json_key()),
        false => metric.json_key().to_string(),
    }
}

fn schema() -> SchemaRef {
    let int = |name: &str, nullable| Field::new(name, DataType::Int32, nullable);
    let long = |name: &str, nullable| Field::new(name, DataType::Int64, nullable);
    let text = |name: &str, nullable| Field::new(name, DataType::Utf8, nullable);
    let mut fields = vec![
        text("host", true),
        int("rank", true),
        int("pid", true),
        int("thread", false),
        int("tid", false),
        int("cpu", true),
        Field::new(
            "time",
            DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
            true,
        ),
        long("time_ns", false),
        int("sample", false),
        text("kind", false),
        long("stack", false),
    ];
    fields.extend(metrics().map(|m| long(&metric_column(m), false)));
    fields.push(text("counter", true));
    fields.push(long("counter_events", false));
    Arc::new(Schema::new(fields))
}

/// The stacks a table's events use, for the `stacks` table.
pub struct UsedStacks {
    /// By model stack id; the last slot is the lost stack (`NO_STACK`).
    used: Vec<bool>,
}

impl UsedStacks {
    fn new(model: &Model) -> UsedStacks {
        UsedStacks {
            used: vec![false; model.stacks.len() + 1],
        }
    }

    fn mark(&mut self, stack: StackId) {
        let lost = self.used.len() - 1;
        let slot = match stack {
            NO_STACK => lost,
            id => (id as usize).min(lost),
        };
        self.used[slot] = true;
    }

    /// The model stack ids used, in order, `NO_STACK` last.
    pub fn ids(&self) -> impl Iterator<Item = StackId> + '_ {
        let lost = self.used.len() - 1;
        self.used
            .iter()
            .enumerate()
            .filter(|&(_, &used)| used)
            .map(move |(i, _)| if i == lost { NO_STACK } else { i as StackId })
    }
}

/// A stack's id in the tables: the model's, and for events whose stack
/// record was lost the id after the model's last (its one frame is
/// `<Unknown>`, as the views show it).
pub fn exported_stack_id(model: &Model, stack: StackId) -> i64 {
    match stack {
        NO_STACK => model.stacks.len() as i64,
        id => i64::from(id),
    }
}

pub struct Written {
    pub rows: u64,
    pub bytes: u64,
    pub stacks: UsedStacks,
}

/// Writes the events of experiment `index` of `model`.
pub fn write(
    partitions: &Partitions,
    model: &Model,
    index: u16,
    placement: &Placement,
) -> Result<Written> {
    let mut table = EventTable::create(partitions, model, index, placement)?;
    let mine = |e: &EventEntry| e.experiment == index;
    for entry in model.events.iter().filter(|e| mine(e)) {
        table.push(Kind::Clock, entry, Value::of_clock(entry), None)?;
    }
    for entry in model.heap.iter().filter(|e| mine(&e.as_event())) {
        table.push(
            Kind::Heap,
            &entry.as_event(),
            Value::of_allocation(entry),
            None,
        )?;
    }
    for entry in model.sync.iter().filter(|e| mine(&e.as_event())) {
        table.push(Kind::Sync, &entry.as_event(), Value::of_wait(entry), None)?;
    }
    for entry in model.io.iter().filter(|e| mine(&e.as_event())) {
        table.push(Kind::Io, &entry.as_event(), Value::of_io(entry), None)?;
    }
    for entry in model.offcpu.iter().filter(|e| mine(&e.as_event())) {
        table.push(
            Kind::OffCpu,
            &entry.as_event(),
            Value::of_offcpu(entry),
            None,
        )?;
    }
    for entry in model.counter_events.iter().filter(|e| mine(&e.as_event())) {
        let counter = model.counters.get(usize::from(entry.counter));
        let value = Value::of_counter(entry, counter.and_then(|c| c.role));
        let name = counter.map(|c| MetricName::Counter(c.metric).json_key());
        let counted = (name, entry.count);
        table.push(Kind::Counter, &entry.as_event(), value, Some(counted))?;
    }
    for entry in model.mpi.iter().filter(|e| mine(&e.as_event())) {
        table.push(Kind::Mpi, &entry.as_event(), Value::of_mpi(entry), None)?;
    }
    table.finish()
}

/// Rows not written yet, column by column.
struct EventTable<'a> {
    model: &'a Model,
    placement: &'a Placement,
    pid: Option<i32>,
    /// CLOCK_MONOTONIC and CLOCK_REALTIME of the experiment's start.
    start_ns: u64,
    start_realtime_ns: Option<u64>,
    file: TableFile,
    stacks: UsedStacks,
    rows: u64,
    thread: Vec<i32>,
    tid: Vec<i32>,
    cpu: Vec<Option<i32>>,
    time: Vec<Option<i64>>,
    time_ns: Vec<i64>,
    sample: Vec<i32>,
    kind: Vec<&'static str>,
    stack: Vec<i64>,
    metrics: Vec<Vec<i64>>,
    counter: Vec<Option<&'static str>>,
    counter_events: Vec<i64>,
}

impl<'a> EventTable<'a> {
    fn create(
        partitions: &Partitions,
        model: &'a Model,
        index: u16,
        placement: &'a Placement,
    ) -> Result<EventTable<'a>> {
        let entry = &model.experiments[usize::from(index)];
        Ok(EventTable {
            model,
            placement,
            pid: entry.start.as_ref().map(|s| s.pid as i32),
            start_ns: entry.start_ns,
            start_realtime_ns: entry.start.as_ref().map(|s| s.realtime_ns),
            file: TableFile::create(partitions, "events", schema(), &["time", "time_ns"])?,
            stacks: UsedStacks::new(model),
            rows: 0,
            thread: Vec::new(),
            tid: Vec::new(),
            cpu: Vec::new(),
            time: Vec::new(),
            time_ns: Vec::new(),
            sample: Vec::new(),
            kind: Vec::new(),
            stack: Vec::new(),
            metrics: metrics().map(|_| Vec::new()).collect(),
            counter: Vec::new(),
            counter_events: Vec::new(),
        })
    }

    fn push(
        &mut self,
        kind: Kind,
        event: &EventEntry,
        value: Value,
        counted: Option<(Option<&'static str>, u64)>,
    ) -> Result<()> {
        let since_start = (self.model.origin_ns + event.time_ns).saturating_sub(self.start_ns);
        self.thread.push(event.thread as i32);
        self.tid.push(self.model.tid(event) as i32);
        self.cpu.push(match event.cpu {
            experiment::layout::CPU_UNKNOWN => None,
            cpu => Some(i32::from(cpu)),
        });
        self.time.push(
            self.start_realtime_ns
                .map(|start| ((start + since_start) / 1_000) as i64),
        );
        self.time_ns.push(since_start as i64);
        self.sample.push(event.sample as i32);
        self.kind.push(kind.name());
        self.stack.push(exported_stack_id(self.model, event.stack));
        self.stacks.mark(event.stack);
        for (column, metric) in self.metrics.iter_mut().zip(metrics()) {
            column.push(value.get(metric) as i64);
        }
        let (counter, events) = counted.unwrap_or((None, 0));
        self.counter.push(counter);
        self.counter_events.push(events as i64);
        self.rows += 1;
        if self.thread.len() >= BATCH_ROWS {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        let rows = self.thread.len();
        if rows == 0 {
            return Ok(());
        }
        let host = self.placement.host.as_deref();
        let mut columns: Vec<ArrayRef> = vec![
            Arc::new(StringArray::from(vec![host; rows])),
            Arc::new(Int32Array::from(vec![rank_column(self.placement); rows])),
            Arc::new(Int32Array::from(vec![self.pid; rows])),
            Arc::new(Int32Array::from(std::mem::take(&mut self.thread))),
            Arc::new(Int32Array::from(std::mem::take(&mut self.tid))),
            Arc::new(Int32Array::from(std::mem::take(&mut self.cpu))),
            Arc::new(
                TimestampMicrosecondArray::from(std::mem::take(&mut self.time))
                    .with_timezone("UTC"),
            ),
            Arc::new(Int64Array::from(std::mem::take(&mut self.time_ns))),
            Arc::new(Int32Array::from(std::mem::take(&mut self.sample))),
            Arc::new(StringArray::from(std::mem::take(&mut self.kind))),
            Arc::new(Int64Array::from(std::mem::take(&mut self.stack))),
        ];
        for column in &mut self.metrics {
            columns.push(Arc::new(Int64Array::from(std::mem::take(column))));
        }
        columns.push(Arc::new(StringArray::from(std::mem::take(
            &mut self.counter,
        ))));
        columns.push(Arc::new(Int64Array::from(std::mem::take(
            &mut self.counter_events,
        ))));
        self.file.write(columns)
    }

    fn finish(mut self) -> Result<Written> {
        self.flush()?;
        let bytes = self.file.finish()?;
        Ok(Written {
            rows: self.rows,
            bytes,
            stacks: self.stacks,
        })
    }
}
