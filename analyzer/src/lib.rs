//! The rdbx analyzer: experiments in, er_print-like answers out.
//!
//! - [`load`] reads experiment directories into a [`Model`]: every recorded
//!   PC symbolized once (functions, lines, inlined frames, PLT, stripped
//!   statics), every distinct stack stored once.
//! - [`metrics`] computes exclusive, inclusive and attributed metrics
//!   (the manual's "How Metrics Are Assigned to Program Structure") for functions, objects, lines and PCs, and the call tree.
//! - [`report`] renders the listings as aligned text or JSON.

pub mod annotate;
pub mod compare;
pub mod data_views;
pub mod dataspace;
pub mod export;
pub mod groups;
pub mod info;
pub mod io;
pub mod load;
mod matching;
mod memory;
pub mod metrics;
pub mod model;
pub mod mpi;
mod packed;
mod parallel;
pub mod report;
mod resolve;
pub mod session;
mod stack_file;
mod stack_ids;
pub mod sync_objects;
pub mod table;
mod u64_table;

// Per-function totals of one experiment, for the collector's tests and tools.
pub mod functions;
pub mod heap;
pub mod heap_report;

pub use functions::{clock_profile, ClockProfile, FunctionTime};
pub use load::{load, load_with, EventDetail};
pub use model::Model;
pub use session::{Analysis, Outcome};

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Experiment(#[from] experiment::Error),
    #[error("no experiment given")]
    NoExperiment,
    #[error("too many experiments (at most 65535)")]
    TooMany,
    #[error("{}: {reason}", .path.display())]
    Group {
        path: std::path::PathBuf,
        reason: String,
    },
    #[error("{}: {source}", .path.display())]
    Io {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
}

pub type Result<T> = std::result::Result<T, Error>;
