//! Experiment groups: what each argument of `rdbx analyze` stands for.
//!
//! An argument is an experiment directory (a founder, read with its
//! descendants) or an experiment group file, `NAME.erg`, as gprofng's
//! collector writes it with `-g`: a first line `#analyzer experiment
//! group`, then one experiment per line. Each argument is one group: the
//! experiments summed normally, and one column set per group in compare
//! mode.
//!
//! A group file may be read while the processes of a job still append to
//! it, so the reading forgives what a concurrent writer leaves: a line
//! listed twice is read once, an experiment that does not exist (yet) or
//! cannot be opened is skipped, and an unterminated last line that names
//! nothing readable is taken for one still being written. Each of these
//! is a warning; the rest is read. A group inside a group is not read, as
//! gprofng reads only experiments there.

use crate::{Error, Result};
use std::collections::HashSet;
use std::path::{Path, PathBuf};

pub use experiment::GROUP_HEADER;

/// One argument: its experiments (founders; their descendants are read
/// with them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupSpec {
    /// As given on the command line.
    pub name: PathBuf,
    /// Whether it is a group file (else an experiment).
    pub is_file: bool,
    pub founders: Vec<PathBuf>,
}

/// The groups of `arguments`, and what was skipped reading group files.
/// An argument that is neither an experiment nor a group file, or a group
/// file listing no readable experiment, is an error.
pub fn read_arguments(arguments: &[PathBuf]) -> Result<(Vec<GroupSpec>, Vec<String>)> {
    let mut warnings = Vec::new();
    let mut groups = Vec::new();
    for argument in arguments {
        let group = match is_group_file(argument)? {
            false => GroupSpec {
                name: argument.clone(),
                is_file: false,
                founders: vec![argument.clone()],
            },
            true => read_group_file(argument, &mut warnings)?,
        };
        groups.push(group);
    }
    Ok((groups, warnings))
}

/// Whether `path` is a group file: a regular file whose first line is the
/// group header. A regular file that is not is an error (a directory is
/// left to the experiment reader).
fn is_group_file(path: &Path) -> Result<bool> {
    if !path.is_file() {
        return Ok(false);
    }
    let text = read(path)?;
    match text.lines().next() {
        Some(first) if first.trim_end().starts_with(GROUP_HEADER) => Ok(true),
        _ => Err(Error::Group {
            path: path.to_path_buf(),
            reason: format!(
                "not a directory (an experiment) nor an experiment group (a file whose first \
                 line is \"{GROUP_HEADER}\")"
            ),
        }),
    }
}

fn read(path: &Path) -> Result<String> {
    std::fs::read(path)
        .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
        .map_err(|source| Error::Io {
            path: path.to_path_buf(),
            source,
        })
}

/// The experiments a group file lists, in order, each once.
fn read_group_file(file: &Path, warnings: &mut Vec<String>) -> Result<GroupSpec> {
    let text = read(file)?;
    let shown = file.display();
    let dir = file.parent().unwrap_or(Path::new("."));
    let entries = listed_entries(&text);
    let mut seen: HashSet<PathBuf> = HashSet::new();
    let mut founders = Vec::new();
    let mut first_skipped = None;
    let last = entries.len().saturating_sub(1);
    for (i, entry) in entries.iter().enumerate() {
        let partial = i == last && !text.ends_with('\n');
        let path = resolve(dir, &entry.text);
        if let Some(problem) = unreadable(&path) {
            let why = match partial {
                true => format!(
                    "its last line \"{}\" is unfinished (still being written?)",
                    entry.text
                ),
                false => format!("{} {problem}", path.display()),
            };
            let why = format!("line {}: {why}", entry.line);
            warnings.push(format!("{shown}, {why}: skipped"));
            first_skipped.get_or_insert(why);
            continue;
        }
        let identity = std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
        if !seen.insert(identity) {
            warnings.push(format!(
                "{shown}, line {}: {} is listed again: read once",
                entry.line, entry.text
            ));
            continue;
        }
        founders.push(path);
    }
    if founders.is_empty() {
        // The warnings are not shown with the error: it says the first.
        let reason = match first_skipped {
            Some(why) => format!("the group lists no readable experiment ({why})"),
            None => "the group lists no experiment".to_string(),
        };
        return Err(Error::Group {
            path: file.to_path_buf(),
            reason,
        });
    }
    Ok(GroupSpec {
        name: file.to_path_buf(),
        is_file: true,
        founders,
    })
}

/// One experiment line of a group file.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    /// From 1, as an editor counts.
    line: usize,
    text: String,
}

/// The experiment names of a group file's text: after the header, the
/// first word of each line that is not blank or a `#` comment (as gprofng
/// reads them).
fn listed_entries(text: &str) -> Vec<Entry> {
    text.lines()
        .enumerate()
        .skip(1)
        .filter_map(|(i, line)| {
            let word = line.split_whitespace().next()?;
            (!word.starts_with('#')).then(|| Entry {
                line: i + 1,
                text: word.to_string(),
            })
        })
        .collect()
}

/// Where a listed experiment is: relative to the group file's directory
/// (where a job's experiments are written beside it), else relative to
/// the current directory (gprofng's reading) when it is there only.
fn resolve(dir: &Path, listed: &str) -> PathBuf {
    let listed = Path::new(listed);
    if listed.is_absolute() {
        return listed.to_path_buf();
    }
    let beside = dir.join(listed);
    if beside.exists() || !listed.exists() {
        return beside;
    }
    listed.to_path_buf()
}

/// Why `path` cannot be read as an experiment of a group; None when it can.
fn unreadable(path: &Path) -> Option<String> {
    if path.is_file() && is_group_file(path).unwrap_or(false) {
        return Some("is a group: a group lists experiments, not groups".to_string());
    }
    match experiment::Experiment::open(path) {
        Ok(_) => None,
        Err(e) => Some(format!("cannot be read ({})", reason(&e, path))),
    }
}

/// An experiment error without the path the message already names.
fn reason(error: &experiment::Error, path: &Path) -> String {
    if let experiment::Error::NotAnExperiment { reason, .. } = error {
        return reason.clone();
    }
    let text = error.to_string();
    let prefix = format!("{}: ", path.display());
    text.strip_prefix(&prefix).unwrap_or(&text).to_string()
}

/// One group of a loaded model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    /// The argument, as given.
    pub name: String,
    /// A group file (else an experiment with its descendants).
    pub is_file: bool,
    /// The model's experiments (indices) it holds, in order.
    pub experiments: Vec<u16>,
}

/// Which experiments of a model each group holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExperimentGroups {
    pub groups: Vec<Group>,
    /// Per experiment of the model: its group.
    of_experiment: Vec<u16>,
}

impl ExperimentGroups {
    /// The groups of `model`, loaded from the founders of `specs` in
    /// order: each founder's experiment comes first, then its
    /// descendants'.
    pub fn of(model: &crate::Model, specs: &[GroupSpec]) -> ExperimentGroups {
        let group_of_founder: Vec<u16> = specs
            .iter()
            .enumerate()
            .flat_map(|(g, spec)| spec.founders.iter().map(move |_| g as u16))
            .collect();
        let mut founder = 0usize;
        let of_experiment: Vec<u16> = model
            .experiments
            .iter()
            .enumerate()
            .map(|(i, e)| {
                if i > 0 && e.path == e.founder {
                    founder += 1;
                }
                group_of_founder.get(founder).copied().unwrap_or(0)
            })
            .collect();
        let groups = specs
            .iter()
            .enumerate()
            .map(|(g, spec)| Group {
                name: spec.name.display().to_string(),
                is_file: spec.is_file,
                experiments: (0..of_experiment.len() as u16)
                    .filter(|&e| of_experiment[e as usize] == g as u16)
                    .collect(),
            })
            .collect();
        ExperimentGroups {
            groups,
            of_experiment,
        }
    }

    /// The group of experiment `experiment` (an index of the model).
    pub fn group_of(&self, experiment: u16) -> usize {
        self.of_experiment
            .get(usize::from(experiment))
            .map_or(0, |&g| usize::from(g))
    }

    pub fn len(&self) -> usize {
        self.groups.len()
    }

    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }
}

/// Where an experiment's process ran, when the experiment says: its host
/// and its rank in an MPI job.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Placement {
    pub host: Option<String>,
    pub rank: Option<u32>,
}

/// The host and MPI rank `entry` records (experiment format 1.6: the
/// `start` line's host, the `mpi` line of MPI tracing); None before.
pub fn placement(entry: &crate::model::ExperimentEntry) -> Placement {
    Placement {
        host: entry.host().map(str::to_string),
        rank: entry.mpi_rank(),
    }
}

/// Which experiments of `model` `selection` keeps, by index.
pub fn kept_experiments(
    model: &crate::Model,
    selection: &commands::ExperimentSelection,
) -> Vec<bool> {
    use commands::ExperimentSelection as S;
    model
        .experiments
        .iter()
        .enumerate()
        .map(|(i, entry)| match selection {
            S::Numbers(list) => list.contains(i as u64 + 1),
            S::Ranks(list) => placement(entry)
                .rank
                .is_some_and(|rank| list.contains(u64::from(rank))),
            S::Hosts(hosts) => placement(entry)
                .host
                .is_some_and(|host| hosts.contains(&host)),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_first_words_of_lines_after_the_header() {
        let text = "#analyzer experiment group\n a.er  extra\n\n# comment\nb.er\n  #c.er\nc";
        let entries = listed_entries(text);
        let texts: Vec<(&str, usize)> = entries.iter().map(|e| (e.text.as_str(), e.line)).collect();
        assert_eq!(texts, vec![("a.er", 2), ("b.er", 5), ("c", 7)]);
    }
}
