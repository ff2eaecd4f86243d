//! The analysis command language of rdbx's analysis REPL (er_print's
//! language), typed: commands, metric and sort specs, selection lists and
//! the event-filter expression language with its evaluation over plain
//! numbers. No I/O happens here.
//!
//! Names, aliases and usage lines come from the table in
//! `analysis_help.rs`, so that parsing and `help` cannot drift apart.
//!
//! Value parsers (`MetricSpec::parse`, `SortSpec::parse`,
//! `ListSelection::parse`, `FilterExpr::parse`, ...) return the problem as
//! a one-line `String`, as `stack_depth` does; [`parse_analysis`] wraps it
//! into [`ParseError::Invalid`] with the command and its usage line.

use std::fmt;
use std::str::FromStr;

use crate::analysis_help::{analysis_usage, find_analysis_help, suggest_analysis};
pub use crate::counter::{Counter, COUNTER_PREFIX};
use crate::error::ParseError;
use crate::words::Scanner;

type Result<T> = std::result::Result<T, ParseError>;

/// An enum of keywords: `name` gives a variant's word, which `FromStr`
/// reads (the error says the words `expected`) and `Display` writes.
macro_rules! keywords {
    ($(#[$meta:meta])* $enum:ident: $expected:literal {
        $($(#[$variant_meta:meta])* $variant:ident = $word:literal,)*
    }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum $enum {
            $($(#[$variant_meta])* $variant,)*
        }

        impl $enum {
            pub fn name(self) -> &'static str {
                match self {
                    $($enum::$variant => $word,)*
                }
            }
        }

        impl FromStr for $enum {
            type Err = String;
            fn from_str(text: &str) -> std::result::Result<Self, String> {
                match text {
                    $($word => Ok($enum::$variant),)*
                    _ => Err(format!(concat!("expected ", $expected, ", got \"{}\""), text)),
                }
            }
        }

        impl fmt::Display for $enum {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}

/// One parsed analysis command line.
///
/// An `Option` argument is `None` when it was left out: the command then
/// shows the current setting instead of changing it.
#[derive(Debug, Clone, PartialEq)]
pub enum AnalysisCommand {
    /// An empty line, blanks only, or a `#` comment: nothing to do.
    Nothing,
    Functions,
    Metrics(Option<MetricSpec>),
    Sort(Option<SortSpec>),
    /// `limit [N]`: at most N rows; `Some(0)` means no limit.
    Limit(Option<u64>),
    FSummary,
    FSingle(FunctionRef),
    /// `callers-callees` (also spelled `callers_callees`).
    CallersCallees,
    CSingle(FunctionRef),
    CallTree,
    Lines,
    Pcs,
    /// `source FUNC|FILE [N]`: the name may be a function or a file.
    Source(FunctionRef),
    /// `disasm FUNC|FILE [N]`: the name may be a function or a file.
    Disasm(FunctionRef),
    Objects,
    Overview,
    Statistics,
    /// er_print's heap-tracing listings: blocks never freed, allocations,
    /// both grouped by allocation stack; and the heap's totals.
    Leaks,
    Allocs,
    Heap,
    /// gprofng's I/O tracing views: per file name, per opening of a file,
    /// per call stack, and the size statistics.
    IoActivity,
    IoDetail,
    IoCallStack,
    IoStat,
    /// The MPI tracing views: per MPI function, per rank, and the message
    /// matrix (bytes and messages from rank to rank).
    MpiFunctions,
    MpiRanks,
    MpiMatrix,
    /// Sync Wait Time and Count per synchronization object.
    SyncObjects,
    /// The manual's "Data Objects" views of the counter events that carry
    /// a data address: every data object, one object and its members (by
    /// descriptor or bare variable name, the rest of the line), and each
    /// aggregate type's layout.
    DataObjects,
    DataSingle(String),
    DataLayout,
    Header,
    SampleList,
    SampleSelect(ListSelection),
    ThreadList,
    ThreadSelect(ListSelection),
    CpuList,
    /// `cpu_select LIST`: CPU numbers as the kernel counts them, from 0.
    CpuSelect(ListSelection),
    ExperimentList,
    /// `experiment_select LIST | rank LIST | host NAME[,NAME...]`: keep
    /// only the events of those experiments.
    ExperimentSelect(ExperimentSelection),
    /// `compare [on | off | delta | ratio]`: each experiment group's
    /// metrics side by side (er_print's compare mode).
    Compare(Option<CompareMode>),
    /// `filters [EXPR | none]`. Error columns count from the start of EXPR.
    Filters(Option<FilterSetting>),
    Name(Option<NameStyle>),
    /// `object_hide NAME...`: at least one name.
    ObjectHide(Vec<String>),
    ObjectShow(ObjectSelection),
    ObjectList,
    PathMap(Option<PathMapping>),
    /// `setpath [DIR[:DIR...]]`: the directories, in order.
    SetPath(Option<Vec<String>>),
    /// `addpath DIR[:DIR...]`: directories appended to the search path.
    AddPath(Vec<String>),
    Inlines(Option<bool>),
    EnDesc(Option<bool>),
    Format(Option<OutputFormat>),
    /// `flamegraph FILE.svg`: the file to write (quotes allowed).
    FlameGraph(String),
    /// `collapsed FILE`: the file to write (quotes allowed).
    Collapsed(String),
    /// `help [COMMAND]`: the canonical name of the command asked about.
    Help(Option<String>),
    /// `quit`, `exit`.
    Quit,
}

impl AnalysisCommand {
    /// The command's canonical name (`callers-callees`, not
    /// `callers_callees`); empty for [`AnalysisCommand::Nothing`].
    pub fn name(&self) -> &'static str {
        use AnalysisCommand as A;
        match self {
            A::Nothing => "",
            A::Functions => "functions",
            A::Metrics(_) => "metrics",
            A::Sort(_) => "sort",
            A::Limit(_) => "limit",
            A::FSummary => "fsummary",
            A::FSingle(_) => "fsingle",
            A::CallersCallees => "callers-callees",
            A::CSingle(_) => "csingle",
            A::CallTree => "calltree",
            A::Lines => "lines",
            A::Pcs => "pcs",
            A::Source(_) => "source",
            A::Disasm(_) => "disasm",
            A::Objects => "objects",
            A::Overview => "overview",
            A::Leaks => "leaks",
            A::Allocs => "allocs",
            A::Heap => "heap",
            A::IoActivity => "ioactivity",
            A::IoDetail => "iodetail",
            A::IoCallStack => "iocallstack",
            A::IoStat => "iostat",
            A::MpiFunctions => "mpi_functions",
            A::MpiRanks => "mpi_ranks",
            A::MpiMatrix => "mpi_matrix",
            A::SyncObjects => "syncobjects",
            A::DataObjects => "data_objects",
            A::DataSingle(_) => "data_single",
            A::DataLayout => "data_layout",
            A::Statistics => "statistics",
            A::Header => "header",
            A::SampleList => "sample_list",
            A::SampleSelect(_) => "sample_select",
            A::ThreadList => "thread_list",
            A::ThreadSelect(_) => "thread_select",
            A::CpuList => "cpu_list",
            A::CpuSelect(_) => "cpu_select",
            A::ExperimentList => "experiment_list",
            A::ExperimentSelect(_) => "experiment_select",
            A::Compare(_) => "compare",
            A::Filters(_) => "filters",
            A::Name(_) => "name",
            A::ObjectHide(_) => "object_hide",
            A::ObjectShow(_) => "object_show",
            A::ObjectList => "object_list",
            A::PathMap(_) => "pathmap",
            A::SetPath(_) => "setpath",
            A::AddPath(_) => "addpath",
            A::Inlines(_) => "inlines",
            A::EnDesc(_) => "en_desc",
            A::Format(_) => "format",
            A::FlameGraph(_) => "flamegraph",
            A::Collapsed(_) => "collapsed",
            A::Help(_) => "help",
            A::Quit => "quit",
        }
    }
}

/// A function (or, for `source`/`disasm`, file) argument: the rest of the
/// line, since C++ names contain spaces, `::` and `<>`. A last word made
/// only of digits, separated by blanks from a non-empty name, is the index
/// N that picks the N-th of several same-named functions (from 1):
/// `csingle foo 2` is `foo` index 2, `csingle 2` is the name `2`, and
/// `csingle foo2` is the name `foo2`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FunctionRef {
    pub name: String,
    pub index: Option<u32>,
}

impl FunctionRef {
    /// Parses `NAME [N]` as described on the type.
    pub fn parse(text: &str) -> std::result::Result<FunctionRef, String> {
        let text = text.trim();
        if text.is_empty() {
            return Err("missing function or file name".to_string());
        }
        if let Some((head, last)) = text.rsplit_once(char::is_whitespace) {
            let head = head.trim_end();
            if !head.is_empty() && last.bytes().all(|b| b.is_ascii_digit()) {
                let index = match last.parse::<u32>() {
                    Ok(0) => return Err("the index N counts from 1, got 0".to_string()),
                    Ok(n) => n,
                    Err(_) => return Err(format!("index {last} is too large")),
                };
                return Ok(FunctionRef {
                    name: head.to_string(),
                    index: Some(index),
                });
            }
        }
        Ok(FunctionRef {
            name: text.to_string(),
            index: None,
        })
    }
}

impl fmt::Display for FunctionRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.index {
            Some(n) => write!(f, "{} {n}", self.name),
            None => f.write_str(&self.name),
        }
    }
}

/// `filters EXPR` or `filters none`.
#[derive(Debug, Clone, PartialEq)]
pub enum FilterSetting {
    /// `filters none`: drop the filter.
    Clear,
    Expr(FilterExpr),
}

/// `object_show all` or `object_show NAME...`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ObjectSelection {
    All,
    Names(Vec<String>),
}

/// `pathmap OLD NEW`: source paths starting with `from` are looked for
/// under `to`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathMapping {
    pub from: String,
    pub to: String,
}

keywords! {
    /// How function names are shown (`name long|short|mangled`).
    NameStyle: "long, short or mangled" {
        /// Demangled, with argument lists.
        Long = "long",
        /// Demangled, without argument lists.
        Short = "short",
        /// As in the symbol table.
        Mangled = "mangled",
    }
}

/// Which experiments `experiment_select` keeps: by number (from 1, as
/// `experiment_list` shows them), by MPI rank (from 0), or by host name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExperimentSelection {
    Numbers(ListSelection),
    Ranks(ListSelection),
    Hosts(Vec<String>),
}

impl ExperimentSelection {
    /// Parses `LIST`, `rank LIST` or `host NAME[,NAME...]`.
    pub fn parse(text: &str) -> std::result::Result<ExperimentSelection, String> {
        let text = text.trim();
        let (word, rest) = text.split_at(text.find(char::is_whitespace).unwrap_or(text.len()));
        match word {
            "rank" | "ranks" => ListSelection::parse_from(rest, 0).map(ExperimentSelection::Ranks),
            "host" | "hosts" => {
                let hosts: Vec<String> = rest
                    .split(',')
                    .map(|h| h.trim().to_string())
                    .filter(|h| !h.is_empty())
                    .collect();
                match hosts.is_empty() {
                    true => Err("missing host name".to_string()),
                    false => Ok(ExperimentSelection::Hosts(hosts)),
                }
            }
            _ => ListSelection::parse(text).map(ExperimentSelection::Numbers),
        }
    }

    /// Everything: no experiment left out.
    pub fn is_all(&self) -> bool {
        matches!(self, ExperimentSelection::Numbers(ListSelection::All))
    }
}

impl fmt::Display for ExperimentSelection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExperimentSelection::Numbers(list) => write!(f, "{list}"),
            ExperimentSelection::Ranks(list) => write!(f, "rank {list}"),
            ExperimentSelection::Hosts(hosts) => write!(f, "host {}", hosts.join(",")),
        }
    }
}

keywords! {
    /// er_print's compare modes: off (the experiments summed), on (each
    /// group's values side by side), delta (the others as differences from
    /// the first group's), ratio (as ratios to it).
    CompareMode: "on, off, delta or ratio" {
        Off = "off",
        On = "on",
        Delta = "delta",
        Ratio = "ratio",
    }
}

keywords! {
    /// How reports are printed (`format text|json`).
    OutputFormat: "text or json" {
        Text = "text",
        Json = "json",
    }
}

// ---------------------------------------------------------------- metrics

/// The metrics the analyzer knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MetricName {
    /// Clock-profiling CPU time (`totalcpu`, alias `cpu`).
    TotalCpu,
    /// Heap tracing: allocations made (`heapalloccnt`).
    Allocations,
    /// Heap tracing: bytes those allocations asked for (`heapallocbytes`).
    BytesAllocated,
    /// Heap tracing: allocations never freed (`heapleakcnt`).
    Leaks,
    /// Heap tracing: bytes of those (`heapleakbytes`).
    BytesLeaked,
    /// Sync-wait tracing: wall time in the traced waits (`sync`).
    SyncWaitTime,
    /// Sync-wait tracing: the traced waits (`syncn`).
    SyncWaitCount,
    /// I/O tracing: wall time in the traced I/O calls, of every class and
    /// failed or not (`iotime`).
    IoTime,
    /// I/O tracing: wall time in the reads that did not fail (`ioreadtime`).
    ReadTime,
    /// I/O tracing: wall time in the writes (and transfers) that did not
    /// fail (`iowritetime`).
    WriteTime,
    /// I/O tracing: wall time in the other calls that did not fail
    /// (`ioothertime`).
    OtherIoTime,
    /// I/O tracing: wall time in the calls that failed, of any class
    /// (`ioerrortime`).
    IoErrorTime,
    /// I/O tracing: bytes read (`ioreadbytes`).
    ReadBytes,
    /// I/O tracing: bytes written (`iowritebytes`).
    WriteBytes,
    /// I/O tracing: read calls (`ioreadcnt`).
    ReadCount,
    /// I/O tracing: write calls (`iowritecnt`).
    WriteCount,
    /// I/O tracing: the other calls: open, close, seek, sync, dup (`ioothercnt`).
    OtherIoCount,
    /// I/O tracing: the calls that failed, of any class (`ioerrorcnt`); a
    /// failed call counts here only, as in gprofng.
    IoErrorCount,
    /// Off-CPU profiling: time switched off the CPU (`offcpu`).
    OffCpuTime,
    /// Total CPU Time + Off-CPU Time (`walltime`).
    WallTime,
    // MPI tracing (the manual's MPI tracing metrics).
    /// Wall time in the traced MPI calls (`mpitime`).
    MpiTime,
    /// Messages the MPI calls sent (`mpisend`).
    MpiSends,
    /// Bytes the MPI calls sent (`mpibytessent`).
    MpiBytesSent,
    /// Messages the MPI calls received (`mpireceive`).
    MpiReceives,
    /// Bytes the MPI calls received (`mpibytesrecv`).
    MpiBytesReceived,
    /// Calls of the other MPI functions: waits, barriers, init (`mpiother`).
    MpiOtherCalls,
    /// Counter overflow profiling: the events a counter counted (named as
    /// the counter: `cycles`, `page-faults`).
    Counter(Counter),
    /// Cycles per instruction: a cycles counter's events over an
    /// instructions counter's (`cpi`).
    Cpi,
    /// Instructions per cycle, the inverse (`ipc`).
    Ipc,
    /// The function (line, object, ...) name column.
    Name,
    /// The function's size in bytes.
    Size,
    /// The function's address.
    Address,
}

/// Spellings of metric names; aliases after the canonical name.
const METRIC_NAMES: &[(&str, MetricName)] = &[
    ("totalcpu", MetricName::TotalCpu),
    ("cpu", MetricName::TotalCpu),
    ("heapalloccnt", MetricName::Allocations),
    ("allocations", MetricName::Allocations),
    ("heapallocbytes", MetricName::BytesAllocated),
    ("bytes_allocated", MetricName::BytesAllocated),
    ("heapleakcnt", MetricName::Leaks),
    ("leaks", MetricName::Leaks),
    ("heapleakbytes", MetricName::BytesLeaked),
    ("bytes_leaked", MetricName::BytesLeaked),
    ("sync", MetricName::SyncWaitTime),
    ("sync_wait_time", MetricName::SyncWaitTime),
    ("syncn", MetricName::SyncWaitCount),
    ("sync_wait_count", MetricName::SyncWaitCount),
    ("iotime", MetricName::IoTime),
    ("io_time", MetricName::IoTime),
    ("ioreadtime", MetricName::ReadTime),
    ("read_time", MetricName::ReadTime),
    ("iowritetime", MetricName::WriteTime),
    ("write_time", MetricName::WriteTime),
    ("ioothertime", MetricName::OtherIoTime),
    ("other_io_time", MetricName::OtherIoTime),
    ("ioerrortime", MetricName::IoErrorTime),
    ("io_error_time", MetricName::IoErrorTime),
    ("ioreadbytes", MetricName::ReadBytes),
    ("read_bytes", MetricName::ReadBytes),
    ("iowritebytes", MetricName::WriteBytes),
    ("write_bytes", MetricName::WriteBytes),
    ("ioreadcnt", MetricName::ReadCount),
    ("read_count", MetricName::ReadCount),
    ("iowritecnt", MetricName::WriteCount),
    ("write_count", MetricName::WriteCount),
    ("ioothercnt", MetricName::OtherIoCount),
    ("other_io_count", MetricName::OtherIoCount),
    ("ioerrorcnt", MetricName::IoErrorCount),
    ("io_error_count", MetricName::IoErrorCount),
    ("offcpu", MetricName::OffCpuTime),
    ("off_cpu_time", MetricName::OffCpuTime),
    ("walltime", MetricName::WallTime),
    ("wall_time", MetricName::WallTime),
    ("mpitime", MetricName::MpiTime),
    ("mpi_time", MetricName::MpiTime),
    ("mpisend", MetricName::MpiSends),
    ("mpi_sends", MetricName::MpiSends),
    ("mpibytessent", MetricName::MpiBytesSent),
    ("mpi_bytes_sent", MetricName::MpiBytesSent),
    ("mpireceive", MetricName::MpiReceives),
    ("mpi_receives", MetricName::MpiReceives),
    ("mpibytesrecv", MetricName::MpiBytesReceived),
    ("mpi_bytes_received", MetricName::MpiBytesReceived),
    ("mpiother", MetricName::MpiOtherCalls),
    ("mpi_other_calls", MetricName::MpiOtherCalls),
    ("cpi", MetricName::Cpi),
    ("ipc", MetricName::Ipc),
    ("name", MetricName::Name),
    ("size", MetricName::Size),
    ("address", MetricName::Address),
];

const KNOWN_METRICS: &str = "totalcpu (or cpu), heapalloccnt, heapallocbytes, heapleakcnt, \
     heapleakbytes, sync, syncn, iotime, ioreadtime, iowritetime, ioothertime, ioerrortime, \
     ioreadbytes, iowritebytes, ioreadcnt, iowritecnt, ioothercnt, ioerrorcnt, offcpu, walltime, \
     mpitime, mpisend, mpibytessent, mpireceive, mpibytesrecv, mpiother, cpi, ipc, name, size, \
     address";

/// The lists of metrics `parts` one after the other (they must hold `N`
/// in all).
const fn concatenated<const N: usize>(parts: &[&[MetricName]]) -> [MetricName; N] {
    let mut all = [MetricName::Name; N];
    let mut filled = 0;
    let mut part = 0;
    while part < parts.len() {
        let mut i = 0;
        while i < parts[part].len() {
            all[filled] = parts[part][i];
            filled += 1;
            i += 1;
        }
        part += 1;
    }
    assert!(filled == N, "the parts do not hold N metrics");
    all
}

impl MetricName {
    pub fn name(self) -> &'static str {
        match self {
            MetricName::TotalCpu => "totalcpu",
            MetricName::Allocations => "heapalloccnt",
            MetricName::BytesAllocated => "heapallocbytes",
            MetricName::Leaks => "heapleakcnt",
            MetricName::BytesLeaked => "heapleakbytes",
            MetricName::SyncWaitTime => "sync",
            MetricName::SyncWaitCount => "syncn",
            MetricName::IoTime => "iotime",
            MetricName::ReadTime => "ioreadtime",
            MetricName::WriteTime => "iowritetime",
            MetricName::OtherIoTime => "ioothertime",
            MetricName::IoErrorTime => "ioerrortime",
            MetricName::ReadBytes => "ioreadbytes",
            MetricName::WriteBytes => "iowritebytes",
            MetricName::ReadCount => "ioreadcnt",
            MetricName::WriteCount => "iowritecnt",
            MetricName::OtherIoCount => "ioothercnt",
            MetricName::IoErrorCount => "ioerrorcnt",
            MetricName::OffCpuTime => "offcpu",
            MetricName::WallTime => "walltime",
            MetricName::MpiTime => "mpitime",
            MetricName::MpiSends => "mpisend",
            MetricName::MpiBytesSent => "mpibytessent",
            MetricName::MpiReceives => "mpireceive",
            MetricName::MpiBytesReceived => "mpibytesrecv",
            MetricName::MpiOtherCalls => "mpiother",
            MetricName::Counter(counter) => counter.spelling(),
            MetricName::Cpi => "cpi",
            MetricName::Ipc => "ipc",
            MetricName::Name => "name",
            MetricName::Size => "size",
            MetricName::Address => "address",
        }
    }

    /// Whether the metric is a time, shown in seconds.
    pub fn is_time(self) -> bool {
        matches!(
            self,
            MetricName::TotalCpu
                | MetricName::SyncWaitTime
                | MetricName::IoTime
                | MetricName::ReadTime
                | MetricName::WriteTime
                | MetricName::OtherIoTime
                | MetricName::IoErrorTime
                | MetricName::OffCpuTime
                | MetricName::WallTime
                | MetricName::MpiTime
        )
    }

    /// Whether the metric is a ratio of two others (CPI, IPC): no sum, so
    /// no percent of `<Total>`.
    pub fn is_ratio(self) -> bool {
        matches!(self, MetricName::Cpi | MetricName::Ipc)
    }

    /// Whether the metric is computed from events (and so has exclusive,
    /// inclusive and attributed kinds), rather than a static property.
    pub fn is_dynamic(self) -> bool {
        !matches!(
            self,
            MetricName::Name | MetricName::Size | MetricName::Address
        )
    }

    /// The built-in metrics computed from events, in the order er_print
    /// lists them (the counters come after them, then CPI and IPC).
    pub const DYNAMIC: [MetricName; 26] = concatenated(&[
        &[
            MetricName::TotalCpu,
            MetricName::OffCpuTime,
            MetricName::WallTime,
            MetricName::SyncWaitTime,
            MetricName::SyncWaitCount,
        ],
        &MetricName::IO,
        &[
            MetricName::Allocations,
            MetricName::BytesAllocated,
            MetricName::Leaks,
            MetricName::BytesLeaked,
        ],
        &MetricName::MPI,
    ]);

    /// The MPI tracing metrics, in the order the views show them.
    pub const MPI: [MetricName; 6] = [
        MetricName::MpiTime,
        MetricName::MpiSends,
        MetricName::MpiBytesSent,
        MetricName::MpiReceives,
        MetricName::MpiBytesReceived,
        MetricName::MpiOtherCalls,
    ];

    /// The I/O tracing metrics, in the order the views show them: the
    /// time of every call, then per class (reads, writes, the other calls,
    /// the failed calls of any class) the time, the bytes and the calls.
    pub const IO: [MetricName; 11] = [
        MetricName::IoTime,
        MetricName::ReadTime,
        MetricName::WriteTime,
        MetricName::OtherIoTime,
        MetricName::IoErrorTime,
        MetricName::ReadBytes,
        MetricName::WriteBytes,
        MetricName::ReadCount,
        MetricName::WriteCount,
        MetricName::OtherIoCount,
        MetricName::IoErrorCount,
    ];

    /// The I/O metrics the default metric list shows (the listings would
    /// be too wide with all of them; `metrics` adds the others).
    pub const IO_DEFAULT: [MetricName; 6] = [
        MetricName::IoTime,
        MetricName::ReadBytes,
        MetricName::WriteBytes,
        MetricName::ReadCount,
        MetricName::WriteCount,
        MetricName::OtherIoCount,
    ];

    /// The heading er_print gives the metric's columns.
    pub fn title(self) -> &'static str {
        match self {
            MetricName::TotalCpu => "Total CPU",
            MetricName::Allocations => "Allocations",
            MetricName::BytesAllocated => "Bytes Allocated",
            MetricName::Leaks => "Leaks",
            MetricName::BytesLeaked => "Bytes Leaked",
            MetricName::SyncWaitTime => "Sync Wait Time",
            MetricName::SyncWaitCount => "Sync Wait Count",
            MetricName::IoTime => "I/O Time",
            MetricName::ReadTime => "Read Time",
            MetricName::WriteTime => "Write Time",
            MetricName::OtherIoTime => "Other I/O Time",
            MetricName::IoErrorTime => "I/O Error Time",
            MetricName::ReadBytes => "Read Bytes",
            MetricName::WriteBytes => "Write Bytes",
            MetricName::ReadCount => "Read Count",
            MetricName::WriteCount => "Write Count",
            MetricName::OtherIoCount => "Other I/O Count",
            MetricName::IoErrorCount => "I/O Error Count",
            MetricName::OffCpuTime => "Off-CPU Time",
            MetricName::WallTime => "Wall Time",
            MetricName::MpiTime => "MPI Time",
            MetricName::MpiSends => "MPI Sends",
            MetricName::MpiBytesSent => "MPI Bytes Sent",
            MetricName::MpiReceives => "MPI Receives",
            MetricName::MpiBytesReceived => "MPI Bytes Received",
            MetricName::MpiOtherCalls => "Other MPI Calls",
            MetricName::Counter(counter) => counter.name(),
            MetricName::Cpi => "CPI",
            MetricName::Ipc => "IPC",
            MetricName::Name => "Name",
            MetricName::Size => "Size",
            MetricName::Address => "PC Address",
        }
    }

    /// The key naming the metric in JSON output.
    pub fn json_key(self) -> &'static str {
        match self {
            MetricName::TotalCpu => "total_cpu",
            MetricName::Allocations => "allocations",
            MetricName::BytesAllocated => "bytes_allocated",
            MetricName::Leaks => "leaks",
            MetricName::BytesLeaked => "bytes_leaked",
            MetricName::SyncWaitTime => "sync_wait_time",
            MetricName::SyncWaitCount => "sync_wait_count",
            MetricName::IoTime => "io_time",
            MetricName::ReadTime => "read_time",
            MetricName::WriteTime => "write_time",
            MetricName::OtherIoTime => "other_io_time",
            MetricName::IoErrorTime => "io_error_time",
            MetricName::ReadBytes => "read_bytes",
            MetricName::WriteBytes => "write_bytes",
            MetricName::ReadCount => "read_count",
            MetricName::WriteCount => "write_count",
            MetricName::OtherIoCount => "other_io_count",
            MetricName::IoErrorCount => "io_error_count",
            MetricName::OffCpuTime => "off_cpu_time",
            MetricName::WallTime => "wall_time",
            MetricName::MpiTime => "mpi_time",
            MetricName::MpiSends => "mpi_sends",
            MetricName::MpiBytesSent => "mpi_bytes_sent",
            MetricName::MpiReceives => "mpi_receives",
            MetricName::MpiBytesReceived => "mpi_bytes_received",
            MetricName::MpiOtherCalls => "mpi_other_calls",
            MetricName::Counter(counter) => counter.json_key(),
            MetricName::Cpi => "cpi",
            MetricName::Ipc => "ipc",
            MetricName::Name => "name",
            MetricName::Size => "size",
            MetricName::Address => "address",
        }
    }
}

impl fmt::Display for MetricName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One kind of a dynamic metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MetricKind {
    Exclusive,
    Inclusive,
    /// Callers-callees: the part that came through a call edge.
    Attributed,
}

impl MetricKind {
    pub fn letter(self) -> char {
        match self {
            MetricKind::Exclusive => 'e',
            MetricKind::Inclusive => 'i',
            MetricKind::Attributed => 'a',
        }
    }

    fn from_letter(letter: char) -> Option<MetricKind> {
        match letter {
            'e' => Some(MetricKind::Exclusive),
            'i' => Some(MetricKind::Inclusive),
            'a' => Some(MetricKind::Attributed),
            _ => None,
        }
    }
}

/// The kinds of a metric item (`e`, `i`, `a`); all false for static metrics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct MetricKinds {
    pub exclusive: bool,
    pub inclusive: bool,
    pub attributed: bool,
}

impl MetricKinds {
    pub fn contains(self, kind: MetricKind) -> bool {
        match kind {
            MetricKind::Exclusive => self.exclusive,
            MetricKind::Inclusive => self.inclusive,
            MetricKind::Attributed => self.attributed,
        }
    }

    fn insert(&mut self, kind: MetricKind) {
        match kind {
            MetricKind::Exclusive => self.exclusive = true,
            MetricKind::Inclusive => self.inclusive = true,
            MetricKind::Attributed => self.attributed = true,
        }
    }

    pub fn is_empty(self) -> bool {
        !(self.exclusive || self.inclusive || self.attributed)
    }
}

/// One item of a metric spec: which kinds, shown how, of which metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MetricItem {
    pub kinds: MetricKinds,
    /// `.`: the value (seconds for totalcpu). Implied when no visibility
    /// flag is given.
    pub show_value: bool,
    /// `%`: percent of `<Total>`.
    pub show_percent: bool,
    /// `+`: the event count.
    pub show_count: bool,
    /// `!`: computed (e.g. for sorting) but not shown.
    pub hidden: bool,
    pub metric: MetricName,
}

/// Characters that may precede a metric name in an item.
const ITEM_FLAGS: &str = "eia.%+!";
/// The visibility flags among them.
const VISIBILITY_FLAGS: &str = ".%+!";

impl MetricItem {
    /// Whether the item shows any column.
    pub fn is_visible(&self) -> bool {
        !self.hidden && (self.show_value || self.show_percent || self.show_count)
    }

    /// Parses one item: flags from `e i a . % + !` (any order), then a name.
    pub fn parse(text: &str) -> std::result::Result<MetricItem, String> {
        let text = text.trim();
        if text.is_empty() {
            return Err("empty metric item".to_string());
        }
        if text.contains(char::is_whitespace) {
            return Err(format!("blank inside metric item \"{text}\""));
        }
        let (flags, metric) = split_metric(text)?;
        let mut item = MetricItem {
            kinds: MetricKinds::default(),
            show_value: false,
            show_percent: false,
            show_count: false,
            hidden: false,
            metric,
        };
        for flag in flags.chars() {
            match flag {
                '.' => item.show_value = true,
                '%' => item.show_percent = true,
                '+' => item.show_count = true,
                '!' => item.hidden = true,
                letter => {
                    if let Some(kind) = MetricKind::from_letter(letter) {
                        item.kinds.insert(kind);
                    }
                }
            }
        }
        if !flags.contains(|c| VISIBILITY_FLAGS.contains(c)) {
            item.show_value = true;
        }
        item.check_kinds(text)?;
        Ok(item)
    }

    /// A dynamic metric needs a kind; a static one takes none; a ratio
    /// has no percent.
    fn check_kinds(&self, text: &str) -> std::result::Result<(), String> {
        if self.metric.is_ratio() && self.show_percent {
            return Err(format!(
                "\"{text}\": {} is a ratio, not a part of <Total>: no % for it",
                self.metric
            ));
        }
        match (self.metric.is_dynamic(), self.kinds.is_empty()) {
            (true, true) => Err(format!(
                "\"{text}\": say which kind of {}: e (exclusive), i (inclusive) or a (attributed)",
                self.metric
            )),
            (false, false) => Err(format!(
                "\"{text}\": {} has no exclusive, inclusive or attributed kinds",
                self.metric
            )),
            _ => Ok(()),
        }
    }
}

impl fmt::Display for MetricItem {
    /// Canonical form: kinds in `e i a` order, then visibility in `. % + !`
    /// order, then the canonical name; a static metric shown as a plain
    /// value is just its name.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for kind in [
            MetricKind::Exclusive,
            MetricKind::Inclusive,
            MetricKind::Attributed,
        ] {
            if self.kinds.contains(kind) {
                write!(f, "{}", kind.letter())?;
            }
        }
        let plain_value = self.show_value && !self.show_percent && !self.show_count && !self.hidden;
        if self.metric.is_dynamic() || !plain_value {
            for (on, flag) in [
                (self.show_value, '.'),
                (self.show_percent, '%'),
                (self.show_count, '+'),
                (self.hidden, '!'),
            ] {
                if on {
                    write!(f, "{flag}")?;
                }
            }
        }
        f.write_str(self.metric.name())
    }
}

/// Splits an item or sort spec into its flag prefix and metric name. The
/// name is the longest known name the text ends with whose prefix is all
/// flag characters (so `address` is a name, not `a` + `ddress`); else the
/// text names a counter (see [`split_counter`]).
fn split_metric(text: &str) -> std::result::Result<(&str, MetricName), String> {
    match split_builtin(text) {
        Some(split) => Ok(split),
        None => split_counter(text),
    }
}

/// `text` as flags and a built-in metric's name, if it is that.
fn split_builtin(text: &str) -> Option<(&str, MetricName)> {
    let mut spellings: Vec<&(&str, MetricName)> = METRIC_NAMES.iter().collect();
    spellings.sort_by_key(|(spelling, _)| std::cmp::Reverse(spelling.len()));
    spellings.into_iter().find_map(|(spelling, metric)| {
        let flags = text.strip_suffix(spelling)?;
        flags
            .chars()
            .all(|c| ITEM_FLAGS.contains(c))
            .then_some((flags, *metric))
    })
}

/// The name of the counter an item names, if it names one (the name
/// without [`COUNTER_PREFIX`]); what [`Counter::spelling`] checks.
pub(crate) fn counter_named_by(text: &str) -> Option<&str> {
    if split_builtin(text).is_some() {
        return None;
    }
    let (flags, name) = split_counter_name(text);
    let name = unprefixed(name);
    (!flags.is_empty() && !name.is_empty()).then_some(name)
}

/// A counter's name as an item gives it: without [`COUNTER_PREFIX`] when
/// something follows that.
fn unprefixed(name: &str) -> &str {
    match name.strip_prefix(COUNTER_PREFIX) {
        Some(rest) if !rest.is_empty() => rest,
        _ => name,
    }
}

/// `FLAGS NAME`: the flags end after the last visibility flag of the
/// leading flags, or without one after the kind letters.
fn split_counter_name(text: &str) -> (&str, &str) {
    let leading = text.find(|c| !ITEM_FLAGS.contains(c)).unwrap_or(text.len());
    let flags_end = match text[..leading].rfind(|c| VISIBILITY_FLAGS.contains(c)) {
        Some(at) => at + 1,
        None => leading,
    };
    text.split_at(flags_end)
}

/// Splits `FLAGS NAME` where NAME is no built-in metric: a counter's name,
/// checked against the experiments' counters when the command runs. The
/// flags end after the last visibility flag (`.%+!`) of the leading flags,
/// or without one after the kind letters, so a counter whose name begins
/// with e, i or a is written after a `.` (`e.insts`). A name without any
/// flag is no counter (a counter's metric takes a kind): an unknown metric.
/// `counter_NAME` is the counter NAME, whatever NAME is (`e.counter_cpu`:
/// a counter named like Total CPU Time's alias).
fn split_counter(text: &str) -> std::result::Result<(&str, MetricName), String> {
    let (flags, name) = split_counter_name(text);
    let name = unprefixed(name);
    if name.is_empty() {
        return Err(format!(
            "\"{text}\": a metric name is missing after the flags"
        ));
    }
    if flags.is_empty() {
        return Err(format!(
            "unknown metric \"{name}\"; known metrics: {KNOWN_METRICS}; \
             a counter's metric takes a kind: e.{name}"
        ));
    }
    Ok((flags, MetricName::Counter(Counter::named(name))))
}

/// Which kinds of data the loaded experiments hold (what the default
/// metrics show).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecordedData {
    pub clock: bool,
    pub sync: bool,
    pub heap: bool,
    pub io: bool,
    pub offcpu: bool,
    pub mpi: bool,
    /// The counters of counter overflow profiling, in the experiments'
    /// order.
    pub counters: Vec<Counter>,
    /// Among them a cycles counter and an instructions counter: CPI and
    /// IPC can be computed.
    pub cycles_and_instructions: bool,
}

/// What `metrics` shows: items in column order.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct MetricSpec {
    pub items: Vec<MetricItem>,
}

impl MetricSpec {
    /// The default: `e.%totalcpu:i.%totalcpu:name`.
    pub fn default_spec() -> MetricSpec {
        let cpu = |exclusive: bool| MetricItem {
            kinds: MetricKinds {
                exclusive,
                inclusive: !exclusive,
                attributed: false,
            },
            show_value: true,
            show_percent: true,
            show_count: false,
            hidden: false,
            metric: MetricName::TotalCpu,
        };
        let name = MetricItem {
            kinds: MetricKinds::default(),
            show_value: true,
            show_percent: false,
            show_count: false,
            hidden: false,
            metric: MetricName::Name,
        };
        MetricSpec {
            items: vec![cpu(true), cpu(false), name],
        }
    }

    /// The default for the data at hand: CPU time when there are clock
    /// events (or nothing at all), then each counter's exclusive and
    /// inclusive events (and CPI with cycles and instructions, as er_print
    /// shows every recorded kind's metrics), then the inclusive metrics of
    /// each kind of trace as gprofng shows them: Off-CPU and Wall Time,
    /// Sync Wait Time and Count, the heap's (bytes leaked first), then the
    /// I/O metrics.
    pub fn for_data(data: &RecordedData) -> MetricSpec {
        let mut spec = MetricSpec::default_spec();
        let counted = !data.counters.is_empty();
        if !data.sync && !data.heap && !data.io && !data.offcpu && !data.mpi && !counted {
            return spec;
        }
        let name = spec.items.pop();
        if !data.clock {
            spec.items.clear();
        }
        let mut counters: Vec<MetricName> = data
            .counters
            .iter()
            .map(|&c| MetricName::Counter(c))
            .collect();
        if data.cycles_and_instructions {
            counters.push(MetricName::Cpi);
        }
        for metric in counters {
            spec.items.extend([true, false].map(|exclusive| MetricItem {
                kinds: MetricKinds {
                    exclusive,
                    inclusive: !exclusive,
                    attributed: false,
                },
                show_value: true,
                show_percent: false,
                show_count: false,
                hidden: false,
                metric,
            }));
        }
        let mut traced = Vec::new();
        if data.offcpu {
            traced.extend([MetricName::OffCpuTime, MetricName::WallTime]);
        }
        if data.sync {
            traced.extend([MetricName::SyncWaitTime, MetricName::SyncWaitCount]);
        }
        if data.heap {
            traced.extend([
                MetricName::BytesLeaked,
                MetricName::Leaks,
                MetricName::BytesAllocated,
                MetricName::Allocations,
            ]);
        }
        if data.io {
            traced.extend(MetricName::IO_DEFAULT);
        }
        if data.mpi {
            traced.extend(MetricName::MPI);
        }
        for metric in traced {
            spec.items.push(MetricItem {
                kinds: MetricKinds {
                    exclusive: false,
                    inclusive: true,
                    attributed: false,
                },
                show_value: true,
                show_percent: false,
                show_count: false,
                hidden: false,
                metric,
            });
        }
        spec.items.extend(name);
        spec
    }

    /// Parses items joined by `:` (blanks around items are ignored).
    pub fn parse(text: &str) -> std::result::Result<MetricSpec, String> {
        if text.trim().is_empty() {
            return Err("empty metric spec".to_string());
        }
        let items = text
            .split(':')
            .map(MetricItem::parse)
            .collect::<std::result::Result<Vec<_>, _>>()?;
        Ok(MetricSpec { items })
    }

    /// The sort used when none was chosen: the first visible metric of
    /// kind exclusive, else inclusive, else attributed, else the name.
    pub fn default_sort(&self) -> SortSpec {
        for kind in [
            MetricKind::Exclusive,
            MetricKind::Inclusive,
            MetricKind::Attributed,
        ] {
            let found = self
                .items
                .iter()
                .find(|item| item.is_visible() && item.kinds.contains(kind));
            if let Some(item) = found {
                return SortSpec {
                    kind: Some(kind),
                    metric: item.metric,
                };
            }
        }
        SortSpec {
            kind: None,
            metric: MetricName::Name,
        }
    }
}

impl Default for MetricSpec {
    fn default() -> Self {
        MetricSpec::default_spec()
    }
}

impl FromStr for MetricSpec {
    type Err = String;
    fn from_str(text: &str) -> std::result::Result<Self, String> {
        MetricSpec::parse(text)
    }
}

impl fmt::Display for MetricSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, item) in self.items.iter().enumerate() {
            if i > 0 {
                f.write_str(":")?;
            }
            write!(f, "{item}")?;
        }
        Ok(())
    }
}

/// What lists are sorted by. `kind` is `Some` exactly when `metric` is
/// dynamic (`e.totalcpu`); static metrics (`name`, `size`, `address`)
/// have no kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SortSpec {
    pub kind: Option<MetricKind>,
    pub metric: MetricName,
}

impl SortSpec {
    /// Parses `e.totalcpu`, `i.heapleakbytes`, `a.totalcpu` (the `.` and any
    /// `%`/`+` are optional and ignored: sorting is by value), or `name`,
    /// `size`, `address`.
    pub fn parse(text: &str) -> std::result::Result<SortSpec, String> {
        let text = text.trim();
        if text.is_empty() {
            return Err("empty sort spec".to_string());
        }
        if text.contains(char::is_whitespace) {
            return Err(format!("blank inside sort spec \"{text}\""));
        }
        let (flags, metric) = split_metric(text)?;
        if flags.contains('!') {
            return Err(format!("\"{text}\": cannot sort by a hidden (!) metric"));
        }
        let kinds: Vec<MetricKind> = flags.chars().filter_map(MetricKind::from_letter).collect();
        match (metric.is_dynamic(), kinds.as_slice()) {
            (true, [kind]) => Ok(SortSpec {
                kind: Some(*kind),
                metric,
            }),
            (true, []) => Err(format!(
                "\"{text}\": say e.{metric}, i.{metric} or a.{metric}"
            )),
            (true, _) => Err(format!("\"{text}\": sort by one kind of {metric} only")),
            (false, []) => Ok(SortSpec { kind: None, metric }),
            (false, _) => Err(format!(
                "\"{text}\": {metric} has no exclusive, inclusive or attributed kinds"
            )),
        }
    }
}

impl FromStr for SortSpec {
    type Err = String;
    fn from_str(text: &str) -> std::result::Result<Self, String> {
        SortSpec::parse(text)
    }
}

impl fmt::Display for SortSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            Some(kind) => write!(f, "{}.{}", kind.letter(), self.metric),
            None => write!(f, "{}", self.metric),
        }
    }
}

// ---------------------------------------------------------------- lists

/// A selection of numbered things (samples, threads, CPUs): `all`, or
/// inclusive ranges in the order typed. Numbers count from 1, except CPU
/// numbers ([`ListSelection::parse_from`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ListSelection {
    All,
    Items(Vec<(u64, u64)>),
}

impl ListSelection {
    /// Parses `all` or `N`, `N-M` joined by commas, numbers from 1 (samples,
    /// threads, experiments); blanks are allowed around numbers, `-` and `,`.
    pub fn parse(text: &str) -> std::result::Result<ListSelection, String> {
        ListSelection::parse_from(text, 1)
    }

    /// Like [`ListSelection::parse`], for numbers that start at `first`
    /// (0 for CPUs, which are the kernel's CPU numbers).
    pub fn parse_from(text: &str, first: u64) -> std::result::Result<ListSelection, String> {
        let text = text.trim();
        if text.is_empty() {
            return Err("missing list (all, or numbers and ranges like 1-3,5)".to_string());
        }
        if text.eq_ignore_ascii_case("all") {
            return Ok(ListSelection::All);
        }
        text.split(',')
            .map(|item| list_item(item, text, first))
            .collect::<std::result::Result<Vec<_>, _>>()
            .map(ListSelection::Items)
    }

    pub fn contains(&self, n: u64) -> bool {
        match self {
            ListSelection::All => true,
            ListSelection::Items(ranges) => ranges.iter().any(|(lo, hi)| (*lo..=*hi).contains(&n)),
        }
    }
}

fn list_item(item: &str, list: &str, first: u64) -> std::result::Result<(u64, u64), String> {
    let item = item.trim();
    if item.is_empty() {
        return Err(format!("empty item in list \"{list}\""));
    }
    let (lo, hi) = match item.split_once('-') {
        Some((lo, hi)) => (list_number(lo, first)?, list_number(hi, first)?),
        None => {
            let n = list_number(item, first)?;
            (n, n)
        }
    };
    if lo > hi {
        return Err(format!("range {lo}-{hi} runs backwards"));
    }
    Ok((lo, hi))
}

fn list_number(text: &str, first: u64) -> std::result::Result<u64, String> {
    let text = text.trim();
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "expected a number, got \"{text}\" (a list is all, or numbers and ranges like 1-3,5)"
        ));
    }
    match text.parse::<u64>() {
        Ok(n) if n < first => Err(format!("numbers count from {first}, got {n}")),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("number {text} is too large")),
    }
}

impl FromStr for ListSelection {
    type Err = String;
    fn from_str(text: &str) -> std::result::Result<Self, String> {
        ListSelection::parse(text)
    }
}

impl fmt::Display for ListSelection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ranges = match self {
            ListSelection::All => return f.write_str("all"),
            ListSelection::Items(ranges) => ranges,
        };
        for (i, (lo, hi)) in ranges.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            if lo == hi {
                write!(f, "{lo}")?;
            } else {
                write!(f, "{lo}-{hi}")?;
            }
        }
        Ok(())
    }
}

// ---------------------------------------------------------------- filters

/// The event fields a filter expression can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FilterField {
    /// `time`: seconds since the event's experiment started.
    Time,
    /// `thread`, `THRID`: the thread number (1.. per experiment).
    Thread,
    /// `tid`: the kernel thread id.
    Tid,
    /// `cpu`, `CPUID`.
    Cpu,
    /// `sample`, `SAMPLE`: the sample number the event belongs to.
    Sample,
    /// `experiment`, `EXPID`: the experiment number (from 1).
    Experiment,
    /// `TSTAMP`: nanoseconds since the event's experiment started.
    Tstamp,
}

/// Field spellings (matched ignoring case); the first of each field is
/// its canonical one.
const FIELD_NAMES: &[(&str, FilterField)] = &[
    ("time", FilterField::Time),
    ("thread", FilterField::Thread),
    ("tid", FilterField::Tid),
    ("cpu", FilterField::Cpu),
    ("sample", FilterField::Sample),
    ("experiment", FilterField::Experiment),
    ("TSTAMP", FilterField::Tstamp),
    ("THRID", FilterField::Thread),
    ("CPUID", FilterField::Cpu),
    ("EXPID", FilterField::Experiment),
];

const KNOWN_FIELDS: &str =
    "time, thread, tid, cpu, sample, experiment, TSTAMP, THRID, CPUID, SAMPLE, EXPID";

impl FilterField {
    pub fn name(self) -> &'static str {
        FIELD_NAMES
            .iter()
            .find(|(_, field)| *field == self)
            .map_or("?", |(name, _)| name)
    }

    fn from_name(word: &str) -> Option<FilterField> {
        FIELD_NAMES
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(word))
            .map(|(_, field)| *field)
    }
}

impl fmt::Display for FilterField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UnaryOp {
    /// `!`: 1 if the operand is false (zero or undefined), else 0.
    Not,
    /// `-`.
    Neg,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BinaryOp {
    Or,
    And,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    Add,
    Sub,
    Mul,
    Div,
}

impl BinaryOp {
    pub fn symbol(self) -> &'static str {
        match self {
            BinaryOp::Or => "||",
            BinaryOp::And => "&&",
            BinaryOp::Eq => "==",
            BinaryOp::Ne => "!=",
            BinaryOp::Lt => "<",
            BinaryOp::Le => "<=",
            BinaryOp::Gt => ">",
            BinaryOp::Ge => ">=",
            BinaryOp::Add => "+",
            BinaryOp::Sub => "-",
            BinaryOp::Mul => "*",
            BinaryOp::Div => "/",
        }
    }

    /// C's precedence, higher binds tighter; all are left-associative.
    fn precedence(self) -> u8 {
        match self {
            BinaryOp::Or => 1,
            BinaryOp::And => 2,
            BinaryOp::Eq | BinaryOp::Ne => 3,
            BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge => 4,
            BinaryOp::Add | BinaryOp::Sub => 5,
            BinaryOp::Mul | BinaryOp::Div => 6,
        }
    }
}

/// Precedence of unary operators and of operands, above every binary one.
const UNARY_PRECEDENCE: u8 = 7;
const OPERAND_PRECEDENCE: u8 = 8;

/// The binary operators of each precedence level, loosest first.
const BINARY_LEVELS: &[&[BinaryOp]] = &[
    &[BinaryOp::Or],
    &[BinaryOp::And],
    &[BinaryOp::Eq, BinaryOp::Ne],
    &[BinaryOp::Lt, BinaryOp::Le, BinaryOp::Gt, BinaryOp::Ge],
    &[BinaryOp::Add, BinaryOp::Sub],
    &[BinaryOp::Mul, BinaryOp::Div],
];

/// Most parentheses and unary operators nested inside each other; the
/// parser recurses on them, so the bound keeps the stack small.
pub const FILTER_MAX_NESTING: usize = 32;
/// Deepest chain of binary operators (long `a || b || c ...` chains nest
/// too); evaluation and printing recurse on the tree, whose depth is at
/// most this plus [`FILTER_MAX_NESTING`].
pub const FILTER_MAX_DEPTH: usize = 256;

/// An event-filter expression (C-like), over numbers.
///
/// Evaluation works on `f64`. Comparisons and `!`, `&&`, `||` give 1 or 0;
/// a value is true when it is non-zero. `&&` and `||` short-circuit (the
/// right side is not evaluated, so its fields are not asked for).
/// Division by a constant zero is rejected when parsing; division by a
/// value that turns out zero makes the result *undefined*: arithmetic on
/// an undefined value is undefined, every comparison with it (`!=`
/// included) is false, and where a truth value is needed it is false (so
/// `!(x / thread)` is true for thread 0).
#[derive(Debug, Clone, PartialEq)]
pub enum FilterExpr {
    Number(f64),
    Field(FilterField),
    Unary {
        op: UnaryOp,
        operand: Box<FilterExpr>,
    },
    Binary {
        op: BinaryOp,
        left: Box<FilterExpr>,
        right: Box<FilterExpr>,
    },
}

impl FilterExpr {
    /// Parses an expression. Errors name the column (counted in characters
    /// from 1 within `text`): `column 7: unknown field "thred"; ...`.
    pub fn parse(text: &str) -> std::result::Result<FilterExpr, String> {
        let tokens = lex(text)?;
        let mut parser = FilterParser {
            tokens,
            pos: 0,
            nesting: 0,
        };
        let (expr, _) = parser.binary_level(0)?;
        let next = parser.peek();
        if next.token != Token::End {
            return Err(format!(
                "column {}: expected an operator, found \"{}\"",
                next.column, next.text
            ));
        }
        Ok(expr)
    }

    /// Whether an event whose fields `field` gives passes the filter.
    pub fn eval(&self, field: &dyn Fn(FilterField) -> f64) -> bool {
        truth(self.value(field))
    }

    /// The value, `None` when undefined (division by zero).
    fn value(&self, field: &dyn Fn(FilterField) -> f64) -> Option<f64> {
        match self {
            FilterExpr::Number(n) => Some(*n),
            FilterExpr::Field(f) => Some(field(*f)),
            FilterExpr::Unary { op, operand } => match op {
                UnaryOp::Not => Some(number(!truth(operand.value(field)))),
                UnaryOp::Neg => operand.value(field).map(|v| -v),
            },
            FilterExpr::Binary { op, left, right } => binary_value(*op, left, right, field),
        }
    }

    /// The value when the expression names no field.
    fn constant_value(&self) -> Option<f64> {
        if self.has_field() {
            return None;
        }
        self.value(&|_| 0.0)
    }

    fn has_field(&self) -> bool {
        match self {
            FilterExpr::Number(_) => false,
            FilterExpr::Field(_) => true,
            FilterExpr::Unary { operand, .. } => operand.has_field(),
            FilterExpr::Binary { left, right, .. } => left.has_field() || right.has_field(),
        }
    }

    fn precedence(&self) -> u8 {
        match self {
            FilterExpr::Number(_) | FilterExpr::Field(_) => OPERAND_PRECEDENCE,
            FilterExpr::Unary { .. } => UNARY_PRECEDENCE,
            FilterExpr::Binary { op, .. } => op.precedence(),
        }
    }
}

fn binary_value(
    op: BinaryOp,
    left: &FilterExpr,
    right: &FilterExpr,
    field: &dyn Fn(FilterField) -> f64,
) -> Option<f64> {
    match op {
        BinaryOp::And => Some(number(
            truth(left.value(field)) && truth(right.value(field)),
        )),
        BinaryOp::Or => Some(number(
            truth(left.value(field)) || truth(right.value(field)),
        )),
        _ => {
            let (l, r) = (left.value(field), right.value(field));
            match op {
                BinaryOp::Add => Some(l? + r?),
                BinaryOp::Sub => Some(l? - r?),
                BinaryOp::Mul => Some(l? * r?),
                BinaryOp::Div => match (l, r) {
                    (Some(l), Some(r)) if r != 0.0 => Some(l / r),
                    _ => None,
                },
                _ => Some(number(match (l, r) {
                    (Some(l), Some(r)) => compare(op, l, r),
                    _ => false,
                })),
            }
        }
    }
}

fn compare(op: BinaryOp, l: f64, r: f64) -> bool {
    match op {
        BinaryOp::Eq => l == r,
        BinaryOp::Ne => l != r,
        BinaryOp::Lt => l < r,
        BinaryOp::Le => l <= r,
        BinaryOp::Gt => l > r,
        _ => l >= r,
    }
}

fn truth(value: Option<f64>) -> bool {
    matches!(value, Some(v) if v != 0.0)
}

fn number(truth: bool) -> f64 {
    if truth {
        1.0
    } else {
        0.0
    }
}

impl FromStr for FilterExpr {
    type Err = String;
    fn from_str(text: &str) -> std::result::Result<Self, String> {
        FilterExpr::parse(text)
    }
}

impl fmt::Display for FilterExpr {
    /// Canonical form: blanks around binary operators, none after unary
    /// ones, parentheses only where precedence needs them, canonical field
    /// names. Parsing the output gives the same tree.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FilterExpr::Number(n) => write!(f, "{n}"),
            FilterExpr::Field(field) => write!(f, "{field}"),
            FilterExpr::Unary { op, operand } => {
                f.write_str(match op {
                    UnaryOp::Not => "!",
                    UnaryOp::Neg => "-",
                })?;
                write_operand(f, operand, operand.precedence() < UNARY_PRECEDENCE)
            }
            FilterExpr::Binary { op, left, right } => {
                write_operand(f, left, left.precedence() < op.precedence())?;
                write!(f, " {} ", op.symbol())?;
                write_operand(f, right, right.precedence() <= op.precedence())
            }
        }
    }
}

fn write_operand(f: &mut fmt::Formatter<'_>, expr: &FilterExpr, parenthesize: bool) -> fmt::Result {
    if parenthesize {
        write!(f, "({expr})")
    } else {
        write!(f, "{expr}")
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Token {
    Number(f64),
    Field(FilterField),
    Binary(BinaryOp),
    Not,
    LeftParen,
    RightParen,
    End,
}

#[derive(Debug, Clone)]
struct Lexeme {
    token: Token,
    /// 1-based, in characters.
    column: usize,
    text: String,
}

fn lex(text: &str) -> std::result::Result<Vec<Lexeme>, String> {
    let chars: Vec<char> = text.chars().collect();
    let mut lexemes = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        let start = i;
        let token = if c.is_ascii_digit() || (c == '.' && next_is_digit(&chars, i)) {
            i = number_end(&chars, i);
            lex_number(&chars[start..i], start)?
        } else if c.is_ascii_alphabetic() || c == '_' {
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            let field = FilterField::from_name(&word).ok_or_else(|| {
                format!(
                    "column {}: unknown field \"{word}\"; fields: {KNOWN_FIELDS}",
                    start + 1
                )
            })?;
            Token::Field(field)
        } else {
            let (token, len) = lex_operator(c, chars.get(i + 1).copied(), start)?;
            i += len;
            token
        };
        lexemes.push(Lexeme {
            token,
            column: start + 1,
            text: chars[start..i].iter().collect(),
        });
    }
    lexemes.push(Lexeme {
        token: Token::End,
        column: chars.len() + 1,
        text: "end of expression".to_string(),
    });
    Ok(lexemes)
}

fn next_is_digit(chars: &[char], i: usize) -> bool {
    chars.get(i + 1).is_some_and(char::is_ascii_digit)
}

/// The end of a number's characters: digits, letters (for hex and
/// exponents, and so that `12abc` is one bad number), dots, and a sign
/// right after an exponent `e`.
fn number_end(chars: &[char], mut i: usize) -> usize {
    let hex = chars.get(i + 1).is_some_and(|c| *c == 'x' || *c == 'X') && chars[i] == '0';
    while i < chars.len() {
        let c = chars[i];
        let exponent_sign =
            (c == '+' || c == '-') && !hex && i > 0 && (chars[i - 1] == 'e' || chars[i - 1] == 'E');
        if !(c.is_ascii_alphanumeric() || c == '.' || c == '_' || exponent_sign) {
            break;
        }
        i += 1;
    }
    i
}

fn lex_number(chars: &[char], start: usize) -> std::result::Result<Token, String> {
    let text: String = chars.iter().collect();
    let value = match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok().map(|n| n as f64),
        // Rust also reads "inf" and "nan", but those never start with a digit.
        None => text.parse::<f64>().ok(),
    };
    value
        .filter(|v| v.is_finite())
        .map(Token::Number)
        .ok_or_else(|| format!("column {}: bad number \"{text}\"", start + 1))
}

fn lex_operator(
    c: char,
    next: Option<char>,
    start: usize,
) -> std::result::Result<(Token, usize), String> {
    let two = |op| Ok((Token::Binary(op), 2));
    let one = |token| Ok((token, 1));
    match (c, next) {
        ('=', Some('=')) => two(BinaryOp::Eq),
        ('!', Some('=')) => two(BinaryOp::Ne),
        ('<', Some('=')) => two(BinaryOp::Le),
        ('>', Some('=')) => two(BinaryOp::Ge),
        ('&', Some('&')) => two(BinaryOp::And),
        ('|', Some('|')) => two(BinaryOp::Or),
        ('<', _) => one(Token::Binary(BinaryOp::Lt)),
        ('>', _) => one(Token::Binary(BinaryOp::Gt)),
        ('+', _) => one(Token::Binary(BinaryOp::Add)),
        ('-', _) => one(Token::Binary(BinaryOp::Sub)),
        ('*', _) => one(Token::Binary(BinaryOp::Mul)),
        ('/', _) => one(Token::Binary(BinaryOp::Div)),
        ('!', _) => one(Token::Not),
        ('(', _) => one(Token::LeftParen),
        (')', _) => one(Token::RightParen),
        ('=', _) => Err(format!(
            "column {}: \"=\" is no operator; compare with ==",
            start + 1
        )),
        ('&', _) => Err(format!(
            "column {}: \"&\" is no operator; use &&",
            start + 1
        )),
        ('|', _) => Err(format!(
            "column {}: \"|\" is no operator; use ||",
            start + 1
        )),
        _ => Err(format!(
            "column {}: unexpected character \"{c}\"",
            start + 1
        )),
    }
}

/// Recursive descent over the tokens. Each parse function returns the
/// expression and its tree depth.
struct FilterParser {
    tokens: Vec<Lexeme>,
    pos: usize,
    /// Parentheses and unary operators currently open.
    nesting: usize,
}

type Parsed = std::result::Result<(FilterExpr, usize), String>;

impl FilterParser {
    fn peek(&self) -> &Lexeme {
        // The lexer always ends the list with `End`, and `advance` never
        // moves past it.
        &self.tokens[self.pos.min(self.tokens.len() - 1)]
    }

    fn advance(&mut self) -> Lexeme {
        let lexeme = self.peek().clone();
        if lexeme.token != Token::End {
            self.pos += 1;
        }
        lexeme
    }

    /// Left-associative binary operators of `BINARY_LEVELS[level]`.
    fn binary_level(&mut self, level: usize) -> Parsed {
        let Some(ops) = BINARY_LEVELS.get(level) else {
            return self.unary();
        };
        let (mut expr, mut depth) = self.binary_level(level + 1)?;
        loop {
            let op = match self.peek().token {
                Token::Binary(op) if ops.contains(&op) => op,
                _ => return Ok((expr, depth)),
            };
            let at = self.advance();
            let (right, right_depth) = self.binary_level(level + 1)?;
            if op == BinaryOp::Div && right.constant_value() == Some(0.0) {
                return Err(format!("column {}: division by zero", at.column));
            }
            depth = depth.max(right_depth) + 1;
            if depth > FILTER_MAX_DEPTH {
                return Err(format!(
                    "column {}: expression too long (deeper than {FILTER_MAX_DEPTH} operators)",
                    at.column
                ));
            }
            expr = FilterExpr::Binary {
                op,
                left: Box::new(expr),
                right: Box::new(right),
            };
        }
    }

    fn unary(&mut self) -> Parsed {
        let op = match self.peek().token {
            Token::Not => UnaryOp::Not,
            Token::Binary(BinaryOp::Sub) => UnaryOp::Neg,
            // A unary plus changes nothing; it is dropped.
            Token::Binary(BinaryOp::Add) => {
                let at = self.advance();
                return self.nested(&at, Self::unary);
            }
            _ => return self.operand(),
        };
        let at = self.advance();
        let (operand, depth) = self.nested(&at, Self::unary)?;
        let unary = FilterExpr::Unary {
            op,
            operand: Box::new(operand),
        };
        Ok((unary, depth + 1))
    }

    fn operand(&mut self) -> Parsed {
        let lexeme = self.advance();
        match lexeme.token {
            Token::Number(n) => Ok((FilterExpr::Number(n), 1)),
            Token::Field(field) => Ok((FilterExpr::Field(field), 1)),
            Token::LeftParen => {
                let inner = self.nested(&lexeme, |parser| parser.binary_level(0))?;
                let close = self.advance();
                if close.token != Token::RightParen {
                    return Err(format!(
                        "column {}: expected \")\" to close the \"(\" of column {}, found \"{}\"",
                        close.column, lexeme.column, close.text
                    ));
                }
                Ok(inner)
            }
            _ => Err(format!(
                "column {}: expected a number, a field or \"(\", found \"{}\"",
                lexeme.column, lexeme.text
            )),
        }
    }

    /// Runs `inner` one nesting level deeper, refusing to go too deep.
    fn nested(&mut self, at: &Lexeme, inner: fn(&mut Self) -> Parsed) -> Parsed {
        if self.nesting >= FILTER_MAX_NESTING {
            return Err(format!(
                "column {}: nested too deeply (more than {FILTER_MAX_NESTING} levels of \
                 parentheses and unary operators)",
                at.column
            ));
        }
        self.nesting += 1;
        let result = inner(self);
        self.nesting -= 1;
        result
    }
}

// ---------------------------------------------------------------- commands

/// Parses one analysis command line. Blank lines and `#` comments give
/// [`AnalysisCommand::Nothing`].
pub fn parse_analysis(line: &str) -> Result<AnalysisCommand> {
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') {
        return Ok(AnalysisCommand::Nothing);
    }
    let (word, rest) = line.split_at(line.find(char::is_whitespace).unwrap_or(line.len()));
    let Some(entry) = find_analysis_help(word) else {
        return Err(ParseError::UnknownCommand {
            word: word.to_string(),
            suggestion: suggest_analysis(word),
        });
    };
    Args {
        name: entry.name,
        text: rest.trim(),
    }
    .dispatch()
}

/// The arguments of one command, and the command they belong to.
struct Args<'a> {
    /// The canonical name, from the command table.
    name: &'static str,
    /// Everything after the command word, trimmed.
    text: &'a str,
}

impl Args<'_> {
    fn invalid(&self, problem: impl Into<String>) -> ParseError {
        ParseError::Invalid {
            command: self.name.to_string(),
            problem: problem.into(),
            usage: analysis_usage(self.name).to_string(),
        }
    }

    fn dispatch(&self) -> Result<AnalysisCommand> {
        use AnalysisCommand as A;
        match self.name {
            "functions" => self.none(A::Functions),
            "metrics" => self.optional(MetricSpec::parse).map(A::Metrics),
            "sort" => self.optional(SortSpec::parse).map(A::Sort),
            "limit" => self.optional_word_as(parse_limit).map(A::Limit),
            "fsummary" => self.none(A::FSummary),
            "fsingle" => self.required(FunctionRef::parse).map(A::FSingle),
            "callers-callees" => self.none(A::CallersCallees),
            "csingle" => self.required(FunctionRef::parse).map(A::CSingle),
            "calltree" => self.none(A::CallTree),
            "lines" => self.none(A::Lines),
            "pcs" => self.none(A::Pcs),
            "source" => self.required(FunctionRef::parse).map(A::Source),
            "disasm" => self.required(FunctionRef::parse).map(A::Disasm),
            "objects" => self.none(A::Objects),
            "overview" => self.none(A::Overview),
            "leaks" => self.none(A::Leaks),
            "allocs" => self.none(A::Allocs),
            "heap" => self.none(A::Heap),
            "ioactivity" => self.none(A::IoActivity),
            "iodetail" => self.none(A::IoDetail),
            "iocallstack" => self.none(A::IoCallStack),
            "iostat" => self.none(A::IoStat),
            "mpi_functions" => self.none(A::MpiFunctions),
            "mpi_ranks" => self.none(A::MpiRanks),
            "mpi_matrix" => self.none(A::MpiMatrix),
            "syncobjects" | "sync_objects" => self.none(A::SyncObjects),
            "data_objects" => self.none(A::DataObjects),
            "data_single" => self.required(parse_data_object).map(A::DataSingle),
            "data_layout" => self.none(A::DataLayout),
            "statistics" => self.none(A::Statistics),
            "header" => self.none(A::Header),
            "sample_list" => self.none(A::SampleList),
            "sample_select" => self.required(ListSelection::parse).map(A::SampleSelect),
            "thread_list" => self.none(A::ThreadList),
            "thread_select" => self.required(ListSelection::parse).map(A::ThreadSelect),
            "cpu_list" => self.none(A::CpuList),
            "cpu_select" => self
                .required(|text| ListSelection::parse_from(text, 0))
                .map(A::CpuSelect),
            "experiment_list" => self.none(A::ExperimentList),
            "experiment_select" => self
                .required(ExperimentSelection::parse)
                .map(A::ExperimentSelect),
            "compare" => self.optional_word_as(str::parse).map(A::Compare),
            "filters" => self.optional(parse_filter_setting).map(A::Filters),
            "name" => self.optional_word_as(str::parse).map(A::Name),
            "object_hide" => self.object_hide(),
            "object_show" => self.object_show(),
            "object_list" => self.none(A::ObjectList),
            "pathmap" => self.pathmap(),
            "setpath" => self.optional_word_as(parse_path).map(A::SetPath),
            "addpath" => self.one_word_as(parse_path).map(A::AddPath),
            "inlines" => self.optional_word_as(on_off).map(A::Inlines),
            "en_desc" => self.optional_word_as(on_off).map(A::EnDesc),
            "format" => self.optional_word_as(str::parse).map(A::Format),
            "flamegraph" => self.one_word_as(file_name).map(A::FlameGraph),
            "collapsed" => self.one_word_as(file_name).map(A::Collapsed),
            "help" => self.help(),
            "quit" => self.none(A::Quit),
            other => Err(self.invalid(format!("\"{other}\" is not implemented"))),
        }
    }

    /// Shell-style words (quotes allowed, for file and object names).
    fn words(&self) -> Result<Vec<String>> {
        Scanner::new(self.text)
            .all_words()
            .map(|words| words.into_iter().map(|w| w.text).collect())
            .map_err(|problem| self.invalid(problem))
    }

    fn none(&self, command: AnalysisCommand) -> Result<AnalysisCommand> {
        match self.text.split_whitespace().next() {
            None => Ok(command),
            Some(word) => Err(self.invalid(format!("unexpected argument \"{word}\""))),
        }
    }

    /// The rest of the line, parsed; `None` when there is none.
    fn optional<T>(
        &self,
        parse: impl Fn(&str) -> std::result::Result<T, String>,
    ) -> Result<Option<T>> {
        if self.text.is_empty() {
            return Ok(None);
        }
        self.required(parse).map(Some)
    }

    /// The rest of the line, parsed (the value parsers report it missing).
    fn required<T>(&self, parse: impl Fn(&str) -> std::result::Result<T, String>) -> Result<T> {
        parse(self.text).map_err(|problem| self.invalid(problem))
    }

    /// At most one word, parsed.
    fn optional_word_as<T>(
        &self,
        parse: impl Fn(&str) -> std::result::Result<T, String>,
    ) -> Result<Option<T>> {
        let words = self.words()?;
        if let Some(extra) = words.get(1) {
            return Err(self.invalid(format!("unexpected argument \"{extra}\"")));
        }
        words
            .first()
            .map(|word| parse(word).map_err(|problem| self.invalid(problem)))
            .transpose()
    }

    /// Exactly one word, parsed.
    fn one_word_as<T>(&self, parse: impl Fn(&str) -> std::result::Result<T, String>) -> Result<T> {
        let what = self.usage_argument();
        self.optional_word_as(parse)?
            .ok_or_else(|| self.invalid(format!("missing {what}")))
    }

    /// The argument placeholder of the usage line, for "missing" messages.
    fn usage_argument(&self) -> &'static str {
        let usage = analysis_usage(self.name);
        usage.split_once(' ').map_or("argument", |(_, arg)| arg)
    }

    fn object_hide(&self) -> Result<AnalysisCommand> {
        let names = self.words()?;
        if names.is_empty() {
            return Err(self.invalid("missing load object name"));
        }
        Ok(AnalysisCommand::ObjectHide(names))
    }

    fn object_show(&self) -> Result<AnalysisCommand> {
        let names = self.words()?;
        let selection = match names.as_slice() {
            [] => return Err(self.invalid("missing load object name or all")),
            [all] if all == "all" => ObjectSelection::All,
            _ if names.iter().any(|n| n == "all") => {
                return Err(self.invalid("all goes alone, not with names"))
            }
            _ => ObjectSelection::Names(names),
        };
        Ok(AnalysisCommand::ObjectShow(selection))
    }

    fn pathmap(&self) -> Result<AnalysisCommand> {
        let mut words = self.words()?.into_iter();
        match (words.next(), words.next(), words.next()) {
            (None, _, _) => Ok(AnalysisCommand::PathMap(None)),
            (Some(_), None, _) => Err(self.invalid("missing NEW path")),
            (Some(from), Some(to), None) => {
                Ok(AnalysisCommand::PathMap(Some(PathMapping { from, to })))
            }
            (_, _, Some(extra)) => Err(self.invalid(format!("unexpected argument \"{extra}\""))),
        }
    }

    fn help(&self) -> Result<AnalysisCommand> {
        if self.text.is_empty() {
            return Ok(AnalysisCommand::Help(None));
        }
        if let Some(entry) = find_analysis_help(self.text) {
            return Ok(AnalysisCommand::Help(Some(entry.name.to_string())));
        }
        let hint = match suggest_analysis(self.text) {
            Some(name) => format!("; did you mean \"{name}\"?"),
            None => String::new(),
        };
        Err(self.invalid(format!("no command named \"{}\"{hint}", self.text)))
    }
}

fn parse_limit(word: &str) -> std::result::Result<u64, String> {
    word.parse::<u64>()
        .map_err(|_| format!("expected a number of rows (0 for no limit), got \"{word}\""))
}

fn parse_filter_setting(text: &str) -> std::result::Result<FilterSetting, String> {
    if text.eq_ignore_ascii_case("none") {
        return Ok(FilterSetting::Clear);
    }
    FilterExpr::parse(text).map(FilterSetting::Expr)
}

fn on_off(word: &str) -> std::result::Result<bool, String> {
    match word {
        "on" => Ok(true),
        "off" => Ok(false),
        _ => Err(format!("expected on or off, got \"{word}\"")),
    }
}

/// `DIR[:DIR...]` into its directories.
fn parse_path(word: &str) -> std::result::Result<Vec<String>, String> {
    let dirs: Vec<String> = word.split(':').map(str::to_string).collect();
    if dirs.iter().any(String::is_empty) {
        return Err(format!("empty directory in \"{word}\""));
    }
    Ok(dirs)
}

/// `data_single`'s argument: the rest of the line, since descriptors hold
/// spaces (`{structure:record rec}.{int count}`); quotes around the whole
/// of it are taken off.
fn parse_data_object(text: &str) -> std::result::Result<String, String> {
    let text = text.trim();
    let unquoted = ['"', '\'']
        .iter()
        .find_map(|&q| text.strip_prefix(q)?.strip_suffix(q))
        .unwrap_or(text)
        .trim();
    if unquoted.is_empty() {
        return Err("missing data object name (a descriptor or a variable's name)".to_string());
    }
    Ok(unquoted.to_string())
}

fn file_name(word: &str) -> std::result::Result<String, String> {
    if word.is_empty() {
        return Err("empty file name".to_string());
    }
    Ok(word.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis_help::analysis_help;
    use AnalysisCommand as A;

    fn ok(line: &str) -> AnalysisCommand {
        match parse_analysis(line) {
            Ok(command) => command,
            Err(e) => panic!("{line}: {e}"),
        }
    }

    fn err(line: &str) -> String {
        match parse_analysis(line) {
            Ok(command) => panic!("{line}: parsed as {command:?}"),
            Err(e) => e.to_string(),
        }
    }

    fn func(name: &str, index: Option<u32>) -> FunctionRef {
        FunctionRef {
            name: name.to_string(),
            index,
        }
    }

    fn strings(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| w.to_string()).collect()
    }

    #[test]
    fn empty_lines_and_comments_are_nothing() {
        assert_eq!(ok(""), A::Nothing);
        assert_eq!(ok("   \t "), A::Nothing);
        assert_eq!(ok("# functions"), A::Nothing);
    }

    #[test]
    fn commands_without_arguments() {
        let cases = [
            ("functions", A::Functions),
            ("fsummary", A::FSummary),
            ("callers-callees", A::CallersCallees),
            ("callers_callees", A::CallersCallees),
            ("calltree", A::CallTree),
            ("lines", A::Lines),
            ("pcs", A::Pcs),
            ("objects", A::Objects),
            ("overview", A::Overview),
            ("leaks", A::Leaks),
            ("allocs", A::Allocs),
            ("heap", A::Heap),
            ("ioactivity", A::IoActivity),
            ("iodetail", A::IoDetail),
            ("iocallstack", A::IoCallStack),
            ("iostat", A::IoStat),
            ("mpi_functions", A::MpiFunctions),
            ("mpi_ranks", A::MpiRanks),
            ("mpi_matrix", A::MpiMatrix),
            ("syncobjects", A::SyncObjects),
            ("sync_objects", A::SyncObjects),
            ("data_objects", A::DataObjects),
            ("data_layout", A::DataLayout),
            ("statistics", A::Statistics),
            ("header", A::Header),
            ("sample_list", A::SampleList),
            ("thread_list", A::ThreadList),
            ("cpu_list", A::CpuList),
            ("experiment_list", A::ExperimentList),
            ("object_list", A::ObjectList),
            ("  quit ", A::Quit),
            ("exit", A::Quit),
        ];
        for (line, expected) in cases {
            assert_eq!(ok(line), expected, "{line}");
            let extra = err(&format!("{line} extra"));
            assert!(extra.contains("unexpected argument \"extra\""), "{extra}");
        }
    }

    #[test]
    fn settings_show_without_argument() {
        assert_eq!(ok("metrics"), A::Metrics(None));
        assert_eq!(ok("sort"), A::Sort(None));
        assert_eq!(ok("limit"), A::Limit(None));
        assert_eq!(ok("filters"), A::Filters(None));
        assert_eq!(ok("name"), A::Name(None));
        assert_eq!(ok("pathmap"), A::PathMap(None));
        assert_eq!(ok("setpath"), A::SetPath(None));
        assert_eq!(ok("inlines"), A::Inlines(None));
        assert_eq!(ok("en_desc"), A::EnDesc(None));
        assert_eq!(ok("format"), A::Format(None));
        assert_eq!(ok("help"), A::Help(None));
    }

    #[test]
    fn settings_with_argument() {
        assert_eq!(
            ok("metrics e.%totalcpu:i.%totalcpu:name"),
            A::Metrics(Some(MetricSpec::default_spec()))
        );
        assert_eq!(
            ok("sort i.totalcpu"),
            A::Sort(Some(SortSpec {
                kind: Some(MetricKind::Inclusive),
                metric: MetricName::TotalCpu
            }))
        );
        assert_eq!(ok("limit 20"), A::Limit(Some(20)));
        assert_eq!(ok("limit 0"), A::Limit(Some(0)));
        assert_eq!(ok("filters none"), A::Filters(Some(FilterSetting::Clear)));
        assert_eq!(
            ok("filters thread == 2"),
            A::Filters(Some(FilterSetting::Expr(
                FilterExpr::parse("thread == 2").unwrap()
            )))
        );
        assert_eq!(ok("name long"), A::Name(Some(NameStyle::Long)));
        assert_eq!(ok("name short"), A::Name(Some(NameStyle::Short)));
        assert_eq!(ok("name mangled"), A::Name(Some(NameStyle::Mangled)));
        assert_eq!(ok("inlines on"), A::Inlines(Some(true)));
        assert_eq!(ok("en_desc off"), A::EnDesc(Some(false)));
        assert_eq!(ok("format json"), A::Format(Some(OutputFormat::Json)));
        assert_eq!(ok("format text"), A::Format(Some(OutputFormat::Text)));
        assert_eq!(ok("help exit"), A::Help(Some("quit".to_string())));
        assert_eq!(
            ok("help callers_callees"),
            A::Help(Some("callers-callees".to_string()))
        );
    }

    #[test]
    fn bad_setting_values() {
        assert!(err("limit -1").contains("expected a number of rows"));
        assert!(err("limit 1 2").contains("unexpected argument \"2\""));
        assert!(err("name medium").contains("expected long, short or mangled"));
        assert!(err("inlines yes").contains("expected on or off, got \"yes\""));
        assert!(err("en_desc on off").contains("unexpected argument \"off\""));
        assert!(err("format xml").contains("expected text or json"));
        let help = err("help fucntions");
        assert!(help.contains("did you mean \"functions\""), "{help}");
        assert!(err("help nosuchthing").contains("no command named"));
    }

    #[test]
    fn function_arguments() {
        assert_eq!(ok("fsingle main"), A::FSingle(func("main", None)));
        assert_eq!(
            ok("fsingle compute 2"),
            A::FSingle(func("compute", Some(2)))
        );
        assert_eq!(ok("csingle foo   3 "), A::CSingle(func("foo", Some(3))));
        assert_eq!(
            ok("csingle std::vector<int>::push_back(int const&)"),
            A::CSingle(func("std::vector<int>::push_back(int const&)", None))
        );
        assert_eq!(
            ok("csingle operator new(unsigned long) 2"),
            A::CSingle(func("operator new(unsigned long)", Some(2)))
        );
        // A lone number is a name; digits glued to a name are part of it.
        assert_eq!(ok("csingle 2"), A::CSingle(func("2", None)));
        assert_eq!(ok("csingle foo2"), A::CSingle(func("foo2", None)));
        assert_eq!(ok("source hello.c"), A::Source(func("hello.c", None)));
        assert_eq!(ok("disasm compute 1"), A::Disasm(func("compute", Some(1))));
        for command in ["fsingle", "csingle", "source", "disasm"] {
            let missing = err(command);
            assert!(
                missing.contains("missing function or file name"),
                "{missing}"
            );
            assert!(err(&format!("{command} foo 0")).contains("counts from 1"));
        }
        assert!(err("csingle foo 99999999999").contains("too large"));
        assert_eq!(func("a b", Some(4)).to_string(), "a b 4");
    }

    #[test]
    fn data_single_takes_the_rest_of_the_line() {
        let single = |name: &str| A::DataSingle(name.to_string());
        assert_eq!(ok("data_single big_table"), single("big_table"));
        assert_eq!(
            ok("data_single {structure:holder big_struct}.{array:char[8192000] pages} "),
            single("{structure:holder big_struct}.{array:char[8192000] pages}")
        );
        assert_eq!(ok("data_single '{int counter}'"), single("{int counter}"));
        assert_eq!(ok("data_single \"<Heap>\""), single("<Heap>"));
        for missing in ["data_single", "data_single ''", "data_single \"  \""] {
            let problem = err(missing);
            assert!(problem.contains("missing data object name"), "{problem}");
            assert!(problem.contains("data_single NAME"), "{problem}");
        }
    }

    #[test]
    fn experiment_selections_and_compare_modes() {
        use ExperimentSelection as E;
        assert_eq!(
            ok("experiment_select 1,3-4"),
            A::ExperimentSelect(E::Numbers(ListSelection::Items(vec![(1, 1), (3, 4)])))
        );
        assert!(ok("experiment_select all") == A::ExperimentSelect(E::Numbers(ListSelection::All)));
        assert_eq!(
            ok("experiment_select rank 0-1"),
            A::ExperimentSelect(E::Ranks(ListSelection::Items(vec![(0, 1)])))
        );
        assert_eq!(
            ok("experiment_select host a, b"),
            A::ExperimentSelect(E::Hosts(vec!["a".into(), "b".into()]))
        );
        assert_eq!(
            E::Hosts(vec!["a".into(), "b".into()]).to_string(),
            "host a,b"
        );
        assert!(err("experiment_select 0").contains("numbers count from 1, got 0"));
        assert!(err("experiment_select host").contains("missing host name"));
        assert!(err("experiment_select").contains("missing list"));
        assert_eq!(ok("exp_list"), A::ExperimentList);
        assert_eq!(ok("compare"), A::Compare(None));
        assert_eq!(ok("compare delta"), A::Compare(Some(CompareMode::Delta)));
        assert_eq!(ok("compare off"), A::Compare(Some(CompareMode::Off)));
        assert!(err("compare twice").contains("expected on, off, delta or ratio"));
    }

    #[test]
    fn selections() {
        assert_eq!(ok("sample_select all"), A::SampleSelect(ListSelection::All));
        assert_eq!(
            ok("thread_select 1-3, 5"),
            A::ThreadSelect(ListSelection::Items(vec![(1, 3), (5, 5)]))
        );
        // CPUs are the kernel's numbers, from 0; samples and threads count from 1.
        assert_eq!(
            ok("cpu_select 0-1,3"),
            A::CpuSelect(ListSelection::Items(vec![(0, 1), (3, 3)]))
        );
        assert!(err("thread_select 0").contains("numbers count from 1, got 0"));
        assert!(err("sample_select 0-2").contains("numbers count from 1, got 0"));
        for command in ["sample_select", "thread_select", "cpu_select"] {
            assert!(err(command).contains("missing list"));
            assert!(err(&format!("{command} 3-1")).contains("runs backwards"));
            assert!(err(&format!("{command} x")).contains("expected a number, got \"x\""));
        }
    }

    #[test]
    fn objects_and_paths() {
        assert_eq!(
            ok("object_hide libc.so.6 'lib with space.so'"),
            A::ObjectHide(strings(&["libc.so.6", "lib with space.so"]))
        );
        assert!(err("object_hide").contains("missing load object name"));
        assert_eq!(ok("object_show all"), A::ObjectShow(ObjectSelection::All));
        assert_eq!(
            ok("object_show libm.so.6"),
            A::ObjectShow(ObjectSelection::Names(strings(&["libm.so.6"])))
        );
        assert!(err("object_show").contains("missing load object name or all"));
        assert!(err("object_show all libm.so").contains("all goes alone"));
        assert!(err("object_hide 'open").contains("unterminated"));
        assert_eq!(
            ok("pathmap /build /home/me"),
            A::PathMap(Some(PathMapping {
                from: "/build".to_string(),
                to: "/home/me".to_string()
            }))
        );
        assert!(err("pathmap /build").contains("missing NEW path"));
        assert!(err("pathmap a b c").contains("unexpected argument \"c\""));
        assert_eq!(
            ok("setpath /a:/b/c"),
            A::SetPath(Some(strings(&["/a", "/b/c"])))
        );
        assert!(err("setpath /a::/b").contains("empty directory"));
        assert!(err("setpath /a /b").contains("unexpected argument \"/b\""));
        assert_eq!(ok("addpath ../lib"), A::AddPath(strings(&["../lib"])));
        assert!(err("addpath").contains("missing DIR[:DIR...]"));
    }

    #[test]
    fn output_files() {
        assert_eq!(
            ok("flamegraph out.svg"),
            A::FlameGraph("out.svg".to_string())
        );
        assert_eq!(
            ok("collapsed \"my stacks.txt\""),
            A::Collapsed("my stacks.txt".to_string())
        );
        assert!(err("flamegraph").contains("missing FILE.svg"));
        assert!(err("collapsed").contains("missing FILE"));
        assert!(err("collapsed a b").contains("unexpected argument \"b\""));
        assert!(err("collapsed ''").contains("empty file name"));
    }

    #[test]
    fn unknown_commands_suggest_the_nearest() {
        assert_eq!(
            parse_analysis("fucntions"),
            Err(ParseError::UnknownCommand {
                word: "fucntions".to_string(),
                suggestion: Some("functions".to_string())
            })
        );
        assert!(err("metric e.totalcpu").contains("did you mean \"metrics\"?"));
        assert!(err("callers_calees").contains("did you mean \"callers_callees\"?"));
        assert!(err("frobnicate").contains("type \"help\""));
        // Debugger commands are not analysis commands.
        assert!(parse_analysis("run").is_err());
    }

    #[test]
    fn errors_carry_command_and_usage() {
        match parse_analysis("metrics bogus") {
            Err(ParseError::Invalid {
                command,
                problem,
                usage,
            }) => {
                assert_eq!(command, "metrics");
                assert!(problem.contains("unknown metric \"bogus\""), "{problem}");
                assert_eq!(usage, "metrics [SPEC]");
            }
            other => panic!("{other:?}"),
        }
        for line in ["metrics bogus", "filters (", "thread_select 0", "fucntions"] {
            assert!(!err(line).contains('\n'), "{line}");
        }
    }

    /// Every table spelling parses (with a plausible argument where one is
    /// needed) and every example parses, so the table and parser agree.
    #[test]
    fn every_table_spelling_and_example_parses() {
        for entry in analysis_help() {
            for spelling in std::iter::once(entry.name).chain(entry.aliases.iter().copied()) {
                let parsed = parse_analysis(spelling)
                    .or_else(|_| parse_analysis(&format!("{spelling} 1")))
                    .or_else(|_| parse_analysis(&format!("{spelling} f")));
                assert!(parsed.is_ok(), "{spelling}: {parsed:?}");
            }
            let example = parse_analysis(entry.example);
            assert!(example.is_ok(), "{}: {example:?}", entry.example);
            assert_ne!(example, Ok(A::Nothing), "{}", entry.example);
        }
    }

    // ---- metric specs

    #[test]
    fn default_metric_spec_round_trips() {
        let spec = MetricSpec::default_spec();
        assert_eq!(spec.to_string(), "e.%totalcpu:i.%totalcpu:name");
        let heap_only = RecordedData {
            heap: true,
            ..RecordedData::default()
        };
        assert_eq!(
            MetricSpec::for_data(&heap_only).to_string(),
            "i.heapleakbytes:i.heapleakcnt:i.heapallocbytes:i.heapalloccnt:name"
        );
        assert_eq!(
            MetricSpec::for_data(&RecordedData {
                clock: true,
                ..heap_only.clone()
            })
            .default_sort()
            .to_string(),
            "e.totalcpu"
        );
        assert_eq!(
            MetricSpec::for_data(&heap_only).default_sort().to_string(),
            "i.heapleakbytes"
        );
        let clock_only = RecordedData {
            clock: true,
            ..RecordedData::default()
        };
        assert_eq!(
            MetricSpec::for_data(&clock_only),
            MetricSpec::default_spec()
        );
        let sync = RecordedData {
            clock: true,
            sync: true,
            ..RecordedData::default()
        };
        assert_eq!(
            MetricSpec::for_data(&sync).to_string(),
            "e.%totalcpu:i.%totalcpu:i.sync:i.syncn:name"
        );
        let io_offcpu = RecordedData {
            clock: true,
            io: true,
            offcpu: true,
            ..RecordedData::default()
        };
        assert_eq!(
            MetricSpec::for_data(&io_offcpu).to_string(),
            "e.%totalcpu:i.%totalcpu:i.offcpu:i.walltime:i.iotime:i.ioreadbytes:\
             i.iowritebytes:i.ioreadcnt:i.iowritecnt:i.ioothercnt:name"
        );
        let mpi = RecordedData {
            clock: true,
            mpi: true,
            ..RecordedData::default()
        };
        assert_eq!(
            MetricSpec::for_data(&mpi).to_string(),
            "e.%totalcpu:i.%totalcpu:i.mpitime:i.mpisend:i.mpibytessent:i.mpireceive:\
             i.mpibytesrecv:i.mpiother:name"
        );
        assert_eq!(MetricSpec::parse(&spec.to_string()), Ok(spec.clone()));
        assert_eq!(MetricSpec::default(), spec);
        assert_eq!(
            spec.default_sort(),
            SortSpec {
                kind: Some(MetricKind::Exclusive),
                metric: MetricName::TotalCpu
            }
        );
    }

    #[test]
    fn metric_items() {
        let spec =
            MetricSpec::parse("ei.%totalcpu : a+cpu:i!totalcpu:%e.totalcpu:address:.size").unwrap();
        let [ei, a, hidden, reordered, address, size] = spec.items.as_slice() else {
            panic!("{spec:?}");
        };
        assert!(ei.kinds.exclusive && ei.kinds.inclusive && !ei.kinds.attributed);
        assert!(ei.show_value && ei.show_percent && !ei.show_count && !ei.hidden);
        assert!(a.kinds.attributed && a.show_count && !a.show_value);
        assert_eq!(a.metric, MetricName::TotalCpu);
        assert!(hidden.hidden && !hidden.show_value && !hidden.is_visible());
        assert_eq!(reordered.to_string(), "e.%totalcpu");
        assert_eq!(address.metric, MetricName::Address);
        assert!(address.show_value && address.kinds.is_empty());
        assert_eq!(size.metric, MetricName::Size);
        assert_eq!(
            spec.to_string(),
            "ei.%totalcpu:a+totalcpu:i!totalcpu:e.%totalcpu:address:size"
        );
        assert_eq!(MetricSpec::parse(&spec.to_string()), Ok(spec));
        // No visibility flag means value.
        let plain = MetricItem::parse("etotalcpu").unwrap();
        assert!(plain.show_value && !plain.show_percent);
        assert_eq!(plain.to_string(), "e.totalcpu");
        assert_eq!(MetricItem::parse("%name").unwrap().to_string(), "%name");
    }

    #[test]
    fn bad_metric_specs() {
        let unknown = MetricSpec::parse("usertime").unwrap_err();
        assert!(unknown.contains("unknown metric \"usertime\""), "{unknown}");
        assert!(unknown.contains("totalcpu (or cpu), heapalloccnt"));
        assert!(unknown.contains("takes a kind: e.usertime"), "{unknown}");
        assert!(MetricSpec::parse("e.%")
            .unwrap_err()
            .contains("metric name is missing"));
        assert!(MetricSpec::parse(".cycles")
            .unwrap_err()
            .contains("say which kind of cycles"));
        assert!(MetricSpec::parse("e.%cpi")
            .unwrap_err()
            .contains("cpi is a ratio"));
        assert!(MetricSpec::parse("")
            .unwrap_err()
            .contains("empty metric spec"));
        assert!(MetricSpec::parse("e.totalcpu::name")
            .unwrap_err()
            .contains("empty metric item"));
        assert!(MetricSpec::parse(".totalcpu")
            .unwrap_err()
            .contains("say which kind"));
        assert!(MetricSpec::parse("ename")
            .unwrap_err()
            .contains("has no exclusive"));
        assert!(MetricSpec::parse("e.totalcpu name")
            .unwrap_err()
            .contains("blank inside"));
        assert!(MetricSpec::parse("x.totalcpu").is_err());
    }

    #[test]
    fn sort_specs() {
        let cases = [
            (
                "e.totalcpu",
                Some(MetricKind::Exclusive),
                MetricName::TotalCpu,
            ),
            ("i.cpu", Some(MetricKind::Inclusive), MetricName::TotalCpu),
            (
                "atotalcpu",
                Some(MetricKind::Attributed),
                MetricName::TotalCpu,
            ),
            (
                "e.%totalcpu",
                Some(MetricKind::Exclusive),
                MetricName::TotalCpu,
            ),
            ("name", None, MetricName::Name),
            ("size", None, MetricName::Size),
            ("address", None, MetricName::Address),
        ];
        for (text, kind, metric) in cases {
            let spec = SortSpec::parse(text).unwrap();
            assert_eq!(spec, SortSpec { kind, metric }, "{text}");
            assert_eq!(SortSpec::parse(&spec.to_string()), Ok(spec));
        }
        assert_eq!(SortSpec::parse("i.cpu").unwrap().to_string(), "i.totalcpu");
        assert!(SortSpec::parse("totalcpu")
            .unwrap_err()
            .contains("say e.totalcpu"));
        assert!(SortSpec::parse("ei.totalcpu")
            .unwrap_err()
            .contains("one kind"));
        assert!(SortSpec::parse("e!totalcpu")
            .unwrap_err()
            .contains("hidden"));
        assert!(SortSpec::parse("e.name")
            .unwrap_err()
            .contains("no exclusive"));
        assert!(SortSpec::parse("bogus")
            .unwrap_err()
            .contains("unknown metric"));
        assert!(SortSpec::parse("cycles")
            .unwrap_err()
            .contains("unknown metric"));
        let counter = SortSpec::parse("i.page-faults").unwrap();
        assert_eq!(
            counter.metric,
            MetricName::Counter(Counter::named("page-faults"))
        );
        assert_eq!(counter.to_string(), "i.page-faults");
        assert_eq!(SortSpec::parse("e.cpi").unwrap().metric, MetricName::Cpi);
        assert!(err("sort e.totalcpu name").contains("blank inside sort spec"));
    }

    /// Any name that is no built-in metric's is a counter's (checked when
    /// the command runs); its flags end at the last visibility flag, so a
    /// name beginning with a kind letter follows a `.`.
    #[test]
    fn counter_metric_items() {
        let spec = MetricSpec::parse("e.%page-faults:einsts:ecycles:ei.ipc:e.cpi:name").unwrap();
        let counter = |name| MetricName::Counter(Counter::named(name));
        let metrics: Vec<MetricName> = spec.items.iter().map(|i| i.metric).collect();
        assert_eq!(
            metrics,
            [
                counter("page-faults"),
                counter("nsts"),
                counter("cycles"),
                MetricName::Ipc,
                MetricName::Cpi,
                MetricName::Name
            ]
        );
        let insts = MetricItem::parse("i.+insts").unwrap();
        assert_eq!(insts.metric, counter("insts"));
        assert!(insts.kinds.inclusive && insts.show_value && insts.show_count);
        assert_eq!(
            spec.to_string(),
            "e.%page-faults:ei.nsts:e.cycles:ei.ipc:e.cpi:name"
        );
        assert_eq!(MetricSpec::parse(&spec.to_string()), Ok(spec));
        assert_eq!(counter("page-faults").json_key(), "page_faults");
        assert_eq!(counter("page-faults").title(), "page-faults");
        assert!(counter("cycles").is_dynamic() && !counter("cycles").is_time());
        assert!(MetricName::Cpi.is_ratio() && !counter("cycles").is_ratio());
    }

    /// `counter_NAME` names the counter NAME, so a counter named like a
    /// built-in metric can be chosen; such a counter is shown with the
    /// prefix, which reads back.
    #[test]
    fn prefixed_counter_items() {
        let counter = |name| MetricName::Counter(Counter::named(name));
        let spec =
            MetricSpec::parse("e.counter_cpu:e.cpu:i.counter_cycles:a.counter_async").unwrap();
        let metrics: Vec<MetricName> = spec.items.iter().map(|i| i.metric).collect();
        assert_eq!(
            metrics,
            [
                counter("cpu"),
                MetricName::TotalCpu,
                counter("cycles"),
                counter("async")
            ]
        );
        assert_eq!(
            spec.to_string(),
            "e.counter_cpu:e.totalcpu:i.cycles:a.counter_async"
        );
        assert_eq!(MetricSpec::parse(&spec.to_string()), Ok(spec));
        // Without the prefix, `a.async` is kinds a of sync.
        assert_eq!(
            MetricItem::parse("a.async").unwrap().metric,
            MetricName::SyncWaitTime
        );
        assert_eq!(
            SortSpec::parse("e.counter_cpu").unwrap().metric,
            counter("cpu")
        );
        assert!(
            MetricItem::parse("e.counter_").is_ok(),
            "a counter named counter_"
        );
    }

    #[test]
    fn counters_are_default_metrics() {
        let data = RecordedData {
            clock: true,
            counters: vec![Counter::named("cycles"), Counter::named("insts")],
            cycles_and_instructions: true,
            ..RecordedData::default()
        };
        assert_eq!(
            MetricSpec::for_data(&data).to_string(),
            "e.%totalcpu:i.%totalcpu:e.cycles:i.cycles:e.insts:i.insts:e.cpi:i.cpi:name"
        );
        let counters_only = RecordedData {
            counters: vec![Counter::named("page-faults")],
            offcpu: true,
            ..RecordedData::default()
        };
        let spec = MetricSpec::for_data(&counters_only);
        assert_eq!(
            spec.to_string(),
            "e.page-faults:i.page-faults:i.offcpu:i.walltime:name"
        );
        assert_eq!(spec.default_sort().to_string(), "e.page-faults");
    }

    #[test]
    fn default_sort_follows_the_first_visible_kind() {
        let spec = MetricSpec::parse("e!totalcpu:i.totalcpu:name").unwrap();
        assert_eq!(spec.default_sort().to_string(), "i.totalcpu");
        let spec = MetricSpec::parse("name:size").unwrap();
        assert_eq!(spec.default_sort().to_string(), "name");
    }

    // ---- lists

    #[test]
    fn lists() {
        assert_eq!(ListSelection::parse(" all "), Ok(ListSelection::All));
        assert_eq!(ListSelection::parse("ALL"), Ok(ListSelection::All));
        assert_eq!(
            ListSelection::parse("3"),
            Ok(ListSelection::Items(vec![(3, 3)]))
        );
        let list = ListSelection::parse(" 1 - 3 , 5,9-9 ").unwrap();
        assert_eq!(list, ListSelection::Items(vec![(1, 3), (5, 5), (9, 9)]));
        assert_eq!(list.to_string(), "1-3,5,9");
        assert_eq!(list.to_string().parse::<ListSelection>(), Ok(list.clone()));
        let members: Vec<u64> = (0..12).filter(|n| list.contains(*n)).collect();
        assert_eq!(members, [1, 2, 3, 5, 9]);
        assert!(ListSelection::All.contains(u64::MAX));
        assert_eq!(ListSelection::All.to_string(), "all");
    }

    #[test]
    fn bad_lists() {
        let cases = [
            ("", "missing list"),
            ("3-1", "range 3-1 runs backwards"),
            ("0", "count from 1"),
            ("0-2", "count from 1"),
            ("1,,2", "empty item"),
            ("1,", "empty item"),
            ("1-", "expected a number, got \"\""),
            ("-3", "expected a number"),
            ("1-2-3", "expected a number, got \"2-3\""),
            ("+3", "expected a number"),
            ("a", "expected a number, got \"a\""),
            ("1 2", "expected a number, got \"1 2\""),
            ("99999999999999999999999", "too large"),
        ];
        for (text, problem) in cases {
            let error = ListSelection::parse(text).unwrap_err();
            assert!(error.contains(problem), "{text}: {error}");
        }
    }

    // ---- filters

    /// Field values of one made-up event.
    fn event(field: FilterField) -> f64 {
        match field {
            FilterField::Time => 2.5,
            FilterField::Thread => 2.0,
            FilterField::Tid => 4242.0,
            FilterField::Cpu => 0.0,
            FilterField::Sample => 3.0,
            FilterField::Experiment => 1.0,
            FilterField::Tstamp => 2.5e9,
        }
    }

    fn passes(text: &str) -> bool {
        FilterExpr::parse(text)
            .unwrap_or_else(|e| panic!("{text}: {e}"))
            .eval(&event)
    }

    fn filter_error(text: &str) -> String {
        match FilterExpr::parse(text) {
            Ok(expr) => panic!("{text}: parsed as {expr}"),
            Err(e) => e,
        }
    }

    #[test]
    fn filter_fields_and_comparisons() {
        for text in [
            "thread == 2",
            "THRID == 2",
            "Thread == 2",
            "tid == 4242",
            "cpu == 0",
            "CPUID < 1",
            "sample >= 3",
            "SAMPLE <= 3",
            "experiment != 2",
            "EXPID == 1",
            "time > 2.4 && time < 2.6",
            "TSTAMP == 2500000000",
            "TSTAMP == 2.5e9",
            "time == 2500e-3 && time == 0.0025E+3",
            "time-2.5 == 0",
            "TSTAMP / 1e9 == time",
            "time * 2 == 5",
            "thread + 1 == 3 && thread - 1 == 1",
            "-thread == -2",
            "!(cpu)",
            "!0",
            "thread",
            "0x10 == 16",
            ".5 * 5 == time",
            "1 < 2 == 1",
            "2 + 3 * 4 == 14",
            "(2 + 3) * 4 == 20",
            "8 / 2 / 2 == 2",
            "8 - 2 - 2 == 4",
            "+thread == 2",
        ] {
            assert!(passes(text), "{text}");
        }
        for text in [
            "thread == 1",
            "cpu",
            "time > 3",
            "!thread",
            "thread == 1 || sample == 4",
            "1 == 1 && 0",
        ] {
            assert!(!passes(text), "{text}");
        }
    }

    #[test]
    fn filter_logic_short_circuits() {
        use std::cell::Cell;
        let asked = Cell::new(0);
        let counting = |field: FilterField| {
            asked.set(asked.get() + 1);
            event(field)
        };
        let expr = FilterExpr::parse("thread == 1 && cpu == 0").unwrap();
        assert!(!expr.eval(&counting));
        assert_eq!(
            asked.get(),
            1,
            "the right side of a false && is not evaluated"
        );
        asked.set(0);
        let expr = FilterExpr::parse("thread == 2 || cpu == 0").unwrap();
        assert!(expr.eval(&counting));
        assert_eq!(
            asked.get(),
            1,
            "the right side of a true || is not evaluated"
        );
        // && binds tighter than ||.
        assert!(passes("thread == 2 || thread == 1 && cpu == 5"));
        assert!(!passes("(thread == 2 || thread == 1) && cpu == 5"));
    }

    #[test]
    fn runtime_division_by_zero_is_false() {
        // cpu is 0 for the test event.
        for text in [
            "thread / cpu > 0",
            "thread / cpu < 0",
            "thread / cpu == 0",
            "thread / cpu != 0",
            "thread / cpu",
            "(thread / cpu) + 1 > 0",
        ] {
            assert!(!passes(text), "{text}");
        }
        assert!(passes("!(thread / cpu > 0)"));
        assert!(passes("thread / cpu > 0 || thread == 2"));
    }

    #[test]
    fn filter_syntax_errors_name_the_column() {
        let cases = [
            ("thred == 2", "column 1: unknown field \"thred\""),
            (
                "thread == ",
                "column 11: expected a number, a field or \"(\", found \"end of expression\"",
            ),
            (
                "thread = 2",
                "column 8: \"=\" is no operator; compare with ==",
            ),
            (
                "thread == 1 & cpu == 0",
                "column 13: \"&\" is no operator; use &&",
            ),
            (
                "thread == 1 | cpu == 0",
                "column 13: \"|\" is no operator; use ||",
            ),
            (
                "(thread == 1",
                "column 13: expected \")\" to close the \"(\" of column 1",
            ),
            (
                "thread == 1)",
                "column 12: expected an operator, found \")\"",
            ),
            ("thread 2", "column 8: expected an operator, found \"2\""),
            ("time > 1.2.3", "column 8: bad number \"1.2.3\""),
            ("time > 12abc", "column 8: bad number \"12abc\""),
            ("time > 1e", "column 8: bad number \"1e\""),
            ("time > 2 $", "column 10: unexpected character \"$\""),
            ("thread / 0", "column 8: division by zero"),
            ("thread / (1 - 1)", "column 8: division by zero"),
            ("", "column 1: expected a number, a field or \"(\""),
            (
                "()",
                "column 2: expected a number, a field or \"(\", found \")\"",
            ),
            ("time > 1 &&", "column 12: expected a number"),
        ];
        for (text, expected) in cases {
            let error = filter_error(text);
            assert!(error.starts_with(expected), "{text}: {error}");
        }
        assert!(filter_error("x").contains("fields: time, thread, tid"));
        // Columns count characters, not bytes.
        assert!(filter_error("thread == \"é\" $").starts_with("column 11"));
        // The command wraps the problem with its usage.
        let line = err("filters thread == 1 &");
        assert!(line.starts_with("filters: column 13:"), "{line}");
        assert!(line.ends_with("usage: filters [EXPR | none]"), "{line}");
    }

    #[test]
    fn filter_nesting_is_bounded() {
        let ok_depth = format!(
            "{}thread{}",
            "(".repeat(FILTER_MAX_NESTING),
            ")".repeat(FILTER_MAX_NESTING)
        );
        assert!(passes(&ok_depth));
        let deep = format!("{}thread{}", "(".repeat(64), ")".repeat(64));
        let error = filter_error(&deep);
        assert!(error.contains("nested too deeply"), "{error}");
        assert!(error.starts_with(&format!("column {}:", FILTER_MAX_NESTING + 1)));
        // Far deeper input must fail the same way, not overflow the stack.
        let huge = format!("{}1{}", "(".repeat(200_000), ")".repeat(200_000));
        assert!(filter_error(&huge).contains("nested too deeply"));
        assert!(filter_error(&"!".repeat(200_000)).contains("nested too deeply"));
        assert!(filter_error(&"-".repeat(100)).contains("nested too deeply"));
        // Long operator chains are bounded too.
        let chain = vec!["thread"; 100_000].join(" || ");
        assert!(filter_error(&chain).contains("expression too long"));
        let fine = vec!["thread == 2"; 100].join(" || ");
        assert!(passes(&fine));
    }

    #[test]
    fn filter_display_is_canonical_and_round_trips() {
        let cases = [
            ("THRID==2&&CPUID!=0", "thread == 2 && cpu != 0"),
            ("((thread == 2))", "thread == 2"),
            ("(a_field)", ""),
            (
                "(thread == 1 || thread == 2) && time > 1.5",
                "(thread == 1 || thread == 2) && time > 1.5",
            ),
            (
                "thread == 1 || (thread == 2 && time > 1.5)",
                "thread == 1 || thread == 2 && time > 1.5",
            ),
            ("8 - (2 - 2)", "8 - (2 - 2)"),
            ("(8 - 2) - 2", "8 - 2 - 2"),
            ("! ( cpu == 1 )", "!(cpu == 1)"),
            ("- - thread", "--thread"),
            ("-(thread + 1)", "-(thread + 1)"),
            ("tstamp >= 1e9", "TSTAMP >= 1000000000"),
            ("time < .25", "time < 0.25"),
            ("+thread", "thread"),
            ("1 < 2 < 3", "1 < 2 < 3"),
            ("1 < (2 < 3)", "1 < (2 < 3)"),
        ];
        for (text, canonical) in cases {
            if canonical.is_empty() {
                assert!(FilterExpr::parse(text).is_err(), "{text}");
                continue;
            }
            let expr = FilterExpr::parse(text).unwrap();
            assert_eq!(expr.to_string(), canonical, "{text}");
            assert_eq!(FilterExpr::parse(canonical), Ok(expr), "{text}");
        }
    }
}
