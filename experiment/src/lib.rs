//! The on-disk format of rdbx experiments (`NAME.er/` directories), shared by the writer
//! (libcollector.so, running inside the profiled program) and the readers (the rdbx binary,
//! tests, the analyzer). The specification is docs/experiment-format.md.
//!
//! - [`layout`]: block-file layouts and constants. No allocation, no panics, no I/O.
//! - [`heap`]: heap-tracing records (delta-encoded, the same guarantees as `layout`).
//! - [`sync`]: synchronization-wait records (fixed size, the same guarantees).
//! - [`io`]: I/O tracing records (a fixed part and the path, the same guarantees).
//! - [`mpi`]: MPI tracing records (fixed size, the same guarantees).
//! - [`offcpu`]: off-CPU records (fixed size, the same guarantees).
//! - [`counters`]: counter overflow records (fixed size, the same guarantees) and the
//!   counters an experiment profiles on.
//! - [`text`]: percent-encoding, log lines ([`text::LineWriter`] allocates nothing), the
//!   config string, the manifest.
//! - with the default `reader` feature: [`Experiment`] (reading, also while the collector
//!   writes), [`log`] (typed log events), [`writer`] (what the launcher writes) and
//!   [`archive`] (`archives/`).

pub mod counters;
pub mod heap;
pub mod io;
pub mod layout;
pub mod mpi;
pub mod offcpu;
pub mod sync;
pub mod text;

#[cfg(feature = "reader")]
pub mod archive;
#[cfg(feature = "reader")]
pub mod log;
#[cfg(feature = "reader")]
mod reader;
#[cfg(feature = "reader")]
pub mod writer;

#[cfg(feature = "reader")]
pub use archive::{ArchiveSummary, ArchivedObject};
#[cfg(feature = "reader")]
pub use log::{DescendantKind, Event, LogEvent, Sample, StartInfo, TerminatedHow};
#[cfg(feature = "reader")]
pub use reader::{
    log_warnings, missing_stacks, BlockStats, ClockEventRecord, CounterEventRecord, Experiment,
    HeapEventRecord, IoEventRecord, Manifest, MpiEventRecord, OffCpuEventRecord, Stack, Summary,
    SyncEventRecord, Warning,
};
#[cfg(feature = "reader")]
pub use writer::{
    append_log_line, append_terminated, append_to_group, create_experiment_dir, next_default_name,
    write_notes, GROUP_HEADER,
};

pub use layout::{SampleCause, StackStatus};
pub use text::{Config, Mode, SyncTrace};

use std::path::PathBuf;

/// Everything that can go wrong reading or writing an experiment.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("not an rdbx experiment: {} ({reason})", .path.display())]
    NotAnExperiment { path: PathBuf, reason: String },
    /// A version that is not a number, or an old major version this build cannot read.
    #[error(
        "{}: manifest line {line}: {text:?}: unsupported experiment format version (this rdbx \
         reads version {supported})",
        .path.display(),
        supported = layout::FORMAT_VERSION
    )]
    UnsupportedVersion {
        path: PathBuf,
        line: usize,
        text: String,
    },
    /// The experiment was written by a newer collector than this reader knows.
    #[error(
        "{}: manifest line {line}: {text:?}: experiment format version {found} is newer than \
         this rdbx reads (version {supported}); read it with a newer rdbx",
        .path.display()
    )]
    NewerVersion {
        path: PathBuf,
        line: usize,
        text: String,
        found: String,
        supported: u32,
    },
    /// A line of the manifest that cannot be read, quoted.
    #[error("{}: manifest line {line}: {text:?}: {problem}", .path.display())]
    BadManifestLine {
        path: PathBuf,
        line: usize,
        text: String,
        problem: String,
    },
    /// A manifest that is wrong as a whole (no version line, too large).
    #[error("bad manifest in {}: {reason}", .path.display())]
    BadManifest { path: PathBuf, reason: String },
    #[error("bad value for config key {key}: {value:?}")]
    BadConfig { key: String, value: String },
    #[error("bad percent-encoding in {0:?}")]
    BadEncoding(String),
    #[error("bad log line: {0}")]
    BadLogLine(String),
    #[error("bad archive index line {line} in {}: {reason}", .path.display())]
    BadArchiveIndex {
        path: PathBuf,
        line: usize,
        reason: String,
    },
    #[error("experiment name must end in .er: {}", .0.display())]
    BadExperimentName(PathBuf),
    #[error("experiment {} already exists", .0.display())]
    ExperimentExists(PathBuf),
    #[error("cannot create experiment {}: {reason}", .path.display())]
    CannotCreate { path: PathBuf, reason: String },
    #[error("{}: {source}", .path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl Error {
    #[cfg(feature = "reader")]
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }
}

pub type Result<T> = std::result::Result<T, Error>;
