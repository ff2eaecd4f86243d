//! rdbx experiments as Parquet tables, for query engines (DuckDB, Spark,
//! DataFusion) when a fleet's experiments do not fit one analyzer process.
//!
//! Three tables under the export directory, each partitioned by experiment
//! the Hive way (`DIR/TABLE/experiment=ID/part-0.parquet`), so that
//! exporting more experiments later adds directories and never rewrites a
//! file:
//!
//! - `events`: one row per clock event, allocation, traced wait, I/O call,
//!   switch off the CPU and counter overflow record, with the metrics the
//!   views sum (see [`events`]);
//! - `stacks`: the frames of every stack the events use, as `rdbx analyze`
//!   shows them (its symbolization, inlines off);
//! - `experiments`: one row per experiment.
//!
//! docs/fleet.md describes every column and the queries that give the
//! `functions` and `callers` listings back.

mod events;
mod experiments;
mod partition;
mod stacks;

use analyzer::Model;
use partition::Partitions;
use std::path::{Path, PathBuf};

pub use partition::TABLES;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Analyzer(#[from] analyzer::Error),
    #[error("{}: {source}", .path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: {source}", .path.display())]
    Parquet {
        path: PathBuf,
        source: parquet::errors::ParquetError,
    },
    #[error("experiment {id} is in {} already (an export never rewrites a table): remove its \
             experiment={id} directories to export it again, or rename the experiment",
            .dir.display())]
    Exported { id: String, dir: PathBuf },
    #[error("{} is an experiment, not an export directory (the directory comes first: \
             --export parquet DIR EXPERIMENT...)", .0.display())]
    DirIsExperiment(PathBuf),
}

pub type Result<T> = std::result::Result<T, Error>;

/// What was written for one experiment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exported {
    /// Its partition value: `experiment=ID`.
    pub id: String,
    pub path: PathBuf,
    pub events: u64,
    pub stacks: u64,
    /// Bytes of its three Parquet files.
    pub bytes: u64,
}

/// Exports each of `paths` (founders with their descendants, one at a
/// time: the process holds one founder's model, whatever the number of
/// experiments) into the tables under `dir`. `each` is told of every
/// experiment written and of the loader's warnings, as they come.
pub fn export_parquet(
    dir: &Path,
    paths: &[PathBuf],
    mut each: impl FnMut(Progress<'_>),
) -> Result<Vec<Exported>> {
    // The tables would be written inside it, beside its own files.
    if experiment::Experiment::open(dir).is_ok() {
        return Err(Error::DirIsExperiment(dir.to_path_buf()));
    }
    let (groups, skipped) = analyzer::groups::read_arguments(paths)?;
    for warning in &skipped {
        each(Progress::Warning(warning));
    }
    let founders = groups.iter().flat_map(|group| &group.founders);
    let mut done = Vec::new();
    for path in founders {
        let model = analyzer::load(std::slice::from_ref(path), true)?;
        for warning in &model.warnings {
            each(Progress::Warning(warning));
        }
        for index in 0..model.experiments.len() {
            let exported = export_experiment(dir, &model, index as u16)?;
            each(Progress::Exported(&exported));
            done.push(exported);
        }
    }
    Ok(done)
}

/// What [`export_parquet`] reports as it goes.
#[derive(Debug, Clone, Copy)]
pub enum Progress<'a> {
    Warning(&'a str),
    Exported(&'a Exported),
}

/// Writes experiment `index` of `model`: its stacks and events first, its
/// `experiments` row last, so that a reader that starts from that table
/// never meets an experiment half written.
fn export_experiment(dir: &Path, model: &Model, index: u16) -> Result<Exported> {
    let entry = &model.experiments[usize::from(index)];
    let id = experiments::id(entry);
    let partitions = Partitions::create(dir, &id)?;
    let written = (|| {
        let placement = analyzer::groups::placement(entry);
        let events = events::write(&partitions, model, index, &placement)?;
        let stacks = stacks::write(&partitions, model, &events.stacks)?;
        let row = experiments::write(&partitions, model, index, &placement)?;
        Ok(Exported {
            id: id.clone(),
            path: entry.path.clone(),
            events: events.rows,
            stacks: stacks.stacks,
            bytes: events.bytes + stacks.bytes + row,
        })
    })();
    if written.is_err() {
        partitions.remove();
    }
    written
}
