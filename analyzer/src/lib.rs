//! The rdbx analyzer: turns an experiment's events into metrics.
//!
//! So far: mapping a recorded PC to its load object and function
//! (`symbols`). Metrics and reports come with the analyzer issue.

pub mod functions;
pub mod symbols;

pub use functions::{clock_profile, ClockProfile, FunctionTime};
pub use symbols::{Location, Symbolizer};

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Experiment(#[from] experiment::Error),
}

pub type Result<T> = std::result::Result<T, Error>;
