//! The rdbx command language: dbx commands, with gdb's spellings as
//! aliases, parsed into typed [`Command`]s. No I/O happens here; the
//! `rdbx` binary executes what [`parse`] returns.
//!
//! The command table in [`all_help`] is the single source of names,
//! aliases, usage lines and help texts, so that parsing, `help`, tab
//! completion and the documentation cannot drift apart.

mod analysis;
mod analysis_help;
mod collector;
mod command;
mod counter;
mod error;
mod help;
mod parse;
mod signal;
mod words;

pub use analysis::{
    parse_analysis, AnalysisCommand, BinaryOp, CompareMode, Counter, ExperimentSelection,
    FilterExpr, FilterField, FilterSetting, FunctionRef, ListSelection, MetricItem, MetricKind,
    MetricKinds, MetricName, MetricSpec, NameStyle, ObjectSelection, OutputFormat, PathMapping,
    RecordedData, SortSpec, UnaryOp, FILTER_MAX_DEPTH, FILTER_MAX_NESTING,
};
pub use analysis_help::{
    analysis_command_names, analysis_help, analysis_help_for, analysis_help_summary,
    find_analysis_help,
};
pub use collector::{
    check_experiment_name, parse_counter_list, profile_interval, seconds, stack_depth,
    sync_threshold, ArchiveMode, CollectorCommand, CounterInterval, CounterRequest,
    HwProfileSetting, ProfileSetting, SampleSetting, ShowWhat, StoreSetting, SyncThreshold,
    SyncTraceSetting, PROFILE_HI_NS, PROFILE_LO_NS, PROFILE_ON_NS,
};
pub use command::{
    BreakpointSpec, Command, CrashKind, Delivery, Disposition, ExamineSpec, HeapView, ListTarget,
    Location, PrintSpec, Redirects, Selection, SignalCommand, SignalFilter, DBXENV_SETTINGS,
};
pub use error::ParseError;
pub use help::{all_help, command_names, find_help, help_for, help_summary, CommandHelp};
pub use parse::parse;
pub use signal::Signal;

#[cfg(test)]
mod tests;
