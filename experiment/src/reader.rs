//! Reading an experiment directory, also while the collector is writing it or after it
//! was killed: only complete log lines and committed block records are read.

use crate::archive::{self, ArchivedObject};
use crate::layout::{
    self, BlockState, ClockEvent, StackRecordRef, StackStatus, BLOCK_SIZE, CLOCK_EVENT_SIZE,
    FORMAT_NAME, FORMAT_VERSION, HEADER_SIZE, KIND_PROFILE, KIND_STACKS, MAX_STACK_DEPTH,
};
use crate::log::{parse_log, Event, LogEvent, Sample};
use crate::{Error, Result};
use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

/// Largest block size a reader accepts from a manifest.
const MAX_BLOCK_SIZE: usize = 16 << 20;

/// The `manifest` file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Manifest {
    /// Always `rdbx-experiment`.
    pub format: String,
    /// Major version (the part before a `.`).
    pub version_major: u32,
    /// Minor version (0 when absent).
    pub version_minor: u32,
    pub block_size: usize,
    /// Data files, e.g. `log`, `profile`, `stacks`.
    pub files: Vec<String>,
    /// Kinds of data collected, e.g. `clock-profile`; empty when nothing but samples.
    pub kinds: Vec<String>,
    pub created_by: String,
    /// Keys this reader does not know, in file order.
    pub other: Vec<(String, String)>,
}

impl Manifest {
    /// Parses manifest text; `path` is the experiment directory, for messages.
    pub fn parse(text: &str, path: &Path) -> Result<Manifest> {
        let bad = |reason: String| Error::BadManifest {
            path: path.to_path_buf(),
            reason,
        };
        let mut pairs = text
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| l.split_once('=').ok_or_else(|| bad(format!("line {l:?}"))));
        let format = match pairs.next().transpose()? {
            Some(("format", f)) if f == FORMAT_NAME => f.to_string(),
            other => {
                return Err(Error::NotAnExperiment {
                    path: path.to_path_buf(),
                    reason: format!("manifest does not start with format={FORMAT_NAME}: {other:?}"),
                })
            }
        };
        let mut manifest = Manifest {
            format,
            version_major: 0,
            version_minor: 0,
            block_size: BLOCK_SIZE,
            files: Vec::new(),
            kinds: Vec::new(),
            created_by: String::new(),
            other: Vec::new(),
        };
        let mut saw_version = false;
        for pair in pairs {
            let (key, value) = pair?;
            match key {
                "version" => {
                    (manifest.version_major, manifest.version_minor) = parse_version(value)?;
                    saw_version = true;
                }
                "block_size" => {
                    manifest.block_size = value
                        .parse()
                        .ok()
                        .filter(|&s: &usize| (2 * HEADER_SIZE..=MAX_BLOCK_SIZE).contains(&s))
                        .ok_or_else(|| bad(format!("block_size={value}")))?
                }
                "files" => manifest.files = split_list(value),
                "kinds" => manifest.kinds = split_list(value),
                "created_by" => manifest.created_by = value.to_string(),
                _ => manifest.other.push((key.to_string(), value.to_string())),
            }
        }
        if !saw_version {
            return Err(bad("no version=".to_string()));
        }
        Ok(manifest)
    }
}

/// `MAJOR` or `MAJOR.MINOR`; a major version other than ours is refused.
fn parse_version(value: &str) -> Result<(u32, u32)> {
    let unsupported = || Error::UnsupportedVersion(value.to_string());
    let (major, minor) = value.split_once('.').unwrap_or((value, "0"));
    let major: u32 = major.parse().map_err(|_| unsupported())?;
    let minor: u32 = minor.parse().map_err(|_| unsupported())?;
    if major != FORMAT_VERSION {
        return Err(unsupported());
    }
    Ok((major, minor))
}

fn split_list(value: &str) -> Vec<String> {
    value
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// A clock-profiling event with the thread id of its block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClockEventRecord {
    pub timestamp_ns: u64,
    pub tid: u32,
    pub stack_id: u64,
    pub weight_ns: u32,
    /// CPU number, or [`layout::CPU_UNKNOWN`].
    pub cpu: u16,
}

/// A recorded call stack: pcs leaf first (pcs[0] the interrupted pc, the others return
/// addresses).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stack {
    pub pcs: Vec<u64>,
    pub status: StackStatus,
}

/// What reading a block file found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BlockStats {
    /// Blocks in the file, the last one counted even when the file ends inside it.
    pub blocks: u64,
    /// Claimed blocks with a header this reader understands.
    pub used: u64,
    /// Never claimed (magic 0).
    pub unused: u64,
    /// Blocks with a bad header, a `committed` larger than the block (clamped), or committed
    /// bytes that do not parse as whole records.
    pub damaged: u64,
    /// Blocks whose committed part goes past the end of the file (still growing, or cut).
    pub cut: u64,
    /// Records read.
    pub records: u64,
    /// Bytes of the records read.
    pub record_bytes: u64,
}

impl BlockStats {
    /// Adds `other`'s counts (e.g. to total a founder and its descendants).
    pub fn add(&mut self, other: &BlockStats) {
        self.blocks += other.blocks;
        self.used += other.used;
        self.unused += other.unused;
        self.damaged += other.damaged;
        self.cut += other.cut;
        self.records += other.records;
        self.record_bytes += other.record_bytes;
    }
}

/// Counts for `collector status` and friends.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    pub log_events: usize,
    pub malformed_log_lines: usize,
    pub samples: usize,
    pub threads: usize,
    pub objects: usize,
    pub clock_events: u64,
    /// Total weight of the clock events (thread CPU ns).
    pub clock_weight_ns: u64,
    pub stack_records: u64,
    pub profile_blocks: BlockStats,
    pub stacks_blocks: BlockStats,
    /// Bytes of log, profile and stacks on disk.
    pub data_bytes: u64,
    /// The collector wrote `end`.
    pub ended: bool,
    /// The launcher's `terminated` line: (how, code).
    pub terminated: Option<(crate::log::TerminatedHow, i32)>,
    pub descendants: usize,
}

/// An open experiment directory (founder or descendant).
#[derive(Clone, Debug)]
pub struct Experiment {
    dir: PathBuf,
    manifest: Manifest,
}

impl Experiment {
    /// Opens `path`: it must be a directory with a manifest of a supported version.
    pub fn open(path: impl AsRef<Path>) -> Result<Experiment> {
        let dir = path.as_ref().to_path_buf();
        let not_expt = |reason: &str| Error::NotAnExperiment {
            path: dir.clone(),
            reason: reason.to_string(),
        };
        match std::fs::metadata(&dir) {
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => return Err(not_expt("not a directory")),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(not_expt("no such directory"))
            }
            Err(e) => return Err(Error::io(&dir, e)),
        }
        let manifest_path = dir.join("manifest");
        let text = match std::fs::read(&manifest_path) {
            Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(not_expt("no manifest")),
            Err(e) => return Err(Error::io(manifest_path, e)),
        };
        let manifest = Manifest::parse(&text, &dir)?;
        Ok(Experiment { dir, manifest })
    }

    pub fn path(&self) -> &Path {
        &self.dir
    }

    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// True for a descendant experiment (its directory name starts with `_`).
    pub fn is_descendant(&self) -> bool {
        self.dir
            .file_name()
            .is_some_and(|n| n.as_encoded_bytes().starts_with(b"_"))
    }

    /// Every complete log line, typed. A missing log reads as empty.
    pub fn log(&self) -> Result<Vec<LogEvent>> {
        Ok(parse_log(&read_optional(&self.dir.join("log"))?))
    }

    /// The `sample` events, in log order.
    pub fn samples(&self) -> Result<Vec<Sample>> {
        Ok(self
            .log()?
            .into_iter()
            .filter_map(|e| match e.event {
                Event::Sample(s) => Some(s),
                _ => None,
            })
            .collect())
    }

    /// Every committed clock event of the `profile` file, in file order.
    pub fn clock_events(&self) -> Result<Vec<ClockEventRecord>> {
        Ok(self.clock_events_with_stats()?.0)
    }

    /// [`Experiment::clock_events`] and what reading the blocks found.
    pub fn clock_events_with_stats(&self) -> Result<(Vec<ClockEventRecord>, BlockStats)> {
        let mut events = Vec::new();
        let stats = self.for_each_block("profile", KIND_PROFILE, |header, records, stats| {
            let chunks = records.chunks_exact(CLOCK_EVENT_SIZE);
            let mut damaged = !chunks.remainder().is_empty();
            for event in chunks.filter_map(ClockEvent::from_bytes) {
                // Stack id 0 is never written: these bytes were never a record.
                if event.stack_id == 0 {
                    damaged = true;
                    continue;
                }
                events.push(ClockEventRecord {
                    timestamp_ns: event.timestamp_ns,
                    tid: header.tid,
                    stack_id: event.stack_id,
                    weight_ns: event.weight_ns,
                    cpu: event.cpu,
                });
                stats.records += 1;
                stats.record_bytes += CLOCK_EVENT_SIZE as u64;
            }
            damaged
        })?;
        Ok((events, stats))
    }

    /// Every committed stack record of the `stacks` file by id (an id recorded twice is
    /// kept once).
    pub fn stacks(&self) -> Result<HashMap<u64, Stack>> {
        Ok(self.stacks_with_stats()?.0)
    }

    /// [`Experiment::stacks`] and what reading the blocks found.
    pub fn stacks_with_stats(&self) -> Result<(HashMap<u64, Stack>, BlockStats)> {
        let mut stacks = HashMap::new();
        let stats = self.for_each_block("stacks", KIND_STACKS, |_, records, stats| {
            let mut rest = records;
            while !rest.is_empty() {
                let Some(record) = StackRecordRef::parse(rest) else {
                    return true;
                };
                let sane = record.header.stack_id != 0
                    && usize::from(record.header.depth) <= MAX_STACK_DEPTH;
                let (Some(status), true) = (record.status(), sane) else {
                    return true;
                };
                stacks
                    .entry(record.header.stack_id)
                    .or_insert_with(|| Stack {
                        pcs: record.pcs().collect(),
                        status,
                    });
                stats.records += 1;
                stats.record_bytes += record.size() as u64;
                rest = rest.get(record.size()..).unwrap_or(&[]);
            }
            false
        })?;
        Ok((stacks, stats))
    }

    /// Reads the block file `name` block by block and calls `records` with the committed
    /// record bytes of each used block; `records` returns true when the bytes did not parse
    /// as whole records. A missing file reads as empty.
    fn for_each_block(
        &self,
        name: &str,
        kind: u16,
        mut records: impl FnMut(&layout::BlockHeader, &[u8], &mut BlockStats) -> bool,
    ) -> Result<BlockStats> {
        let path = self.dir.join(name);
        let mut stats = BlockStats::default();
        let mut file = match File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(stats),
            Err(e) => return Err(Error::io(path, e)),
        };
        let block_size = self.manifest.block_size;
        let mut block = vec![0u8; block_size];
        loop {
            // One pass over the block in address order: the header (with `committed`) is
            // copied before the records it covers.
            let len = read_full(&mut file, &mut block).map_err(|e| Error::io(&path, e))?;
            if len == 0 {
                break;
            }
            stats.blocks += 1;
            let bytes = block.get(..len).unwrap_or(&[]);
            match layout::parse_block(bytes, block_size, kind) {
                BlockState::Unused => stats.unused += 1,
                BlockState::CutHeader => stats.cut += 1,
                BlockState::BadHeader(_) => stats.damaged += 1,
                BlockState::Used(used) => {
                    stats.used += 1;
                    let cut = used.cut;
                    let damaged = records(&used.header, used.records, &mut stats);
                    // A record cut by the end of the file is expected while writing.
                    if used.clamped || (damaged && !cut) {
                        stats.damaged += 1;
                    }
                    if cut {
                        stats.cut += 1;
                    }
                }
            }
            if len < block_size {
                break;
            }
        }
        Ok(stats)
    }

    /// The descendant experiments: every `_*.er` directory directly inside this one, in
    /// natural order (`_f2.er` before `_f10.er`). Empty when there are none or the
    /// directory cannot be listed.
    pub fn descendants(&self) -> Vec<PathBuf> {
        descendant_dirs(&self.dir)
    }

    /// The `notes` file (the -C comment), if any.
    pub fn notes(&self) -> Option<String> {
        std::fs::read(self.dir.join("notes"))
            .ok()
            .map(|b| String::from_utf8_lossy(&b).into_owned())
    }

    /// True when `archives/index` exists.
    pub fn has_archive(&self) -> bool {
        self.dir.join("archives").join("index").is_file()
    }

    /// The entries of `archives/index`; empty when the experiment was not archived.
    pub fn archive_index(&self) -> Result<Vec<ArchivedObject>> {
        let path = self.dir.join("archives").join("index");
        match std::fs::read(&path) {
            Ok(bytes) => archive::parse_index(&String::from_utf8_lossy(&bytes), &path),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Vec::new()),
            Err(e) => Err(Error::io(path, e)),
        }
    }

    /// Bytes on disk of the data files (log, profile, stacks).
    pub fn data_bytes(&self) -> u64 {
        ["log", "profile", "stacks"]
            .iter()
            .filter_map(|name| std::fs::metadata(self.dir.join(name)).ok())
            .map(|m| m.len())
            .sum()
    }

    /// Data bytes of this experiment and all its descendants.
    pub fn total_data_bytes(&self) -> u64 {
        self.data_bytes()
            + self
                .descendants()
                .iter()
                .filter_map(|d| Experiment::open(d).ok())
                .map(|d| d.data_bytes())
                .sum::<u64>()
    }

    /// Reads everything once and counts it.
    pub fn summary(&self) -> Result<Summary> {
        let log = self.log()?;
        let (clock, profile_blocks) = self.clock_events_with_stats()?;
        let (_, stacks_blocks) = self.stacks_with_stats()?;
        let mut summary = Summary {
            log_events: log.len(),
            clock_events: clock.len() as u64,
            clock_weight_ns: clock.iter().map(|e| u64::from(e.weight_ns)).sum(),
            stack_records: stacks_blocks.records,
            profile_blocks,
            stacks_blocks,
            data_bytes: self.data_bytes(),
            descendants: self.descendants().len(),
            ..Summary::default()
        };
        for event in &log {
            match event.event {
                Event::Sample(_) => summary.samples += 1,
                Event::ThreadStart { .. } => summary.threads += 1,
                Event::Object { .. } => summary.objects += 1,
                Event::End => summary.ended = true,
                Event::Terminated { how, code } => summary.terminated = Some((how, code)),
                Event::Malformed { .. } => summary.malformed_log_lines += 1,
                _ => {}
            }
        }
        Ok(summary)
    }
}

/// Reads until `buf` is full or the file ends; the bytes read.
fn read_full(file: &mut File, buf: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while let Some(rest) = buf.get_mut(filled..).filter(|r| !r.is_empty()) {
        match file.read(rest) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

/// The file's bytes; empty if it does not exist.
pub(crate) fn read_optional(path: &Path) -> Result<Vec<u8>> {
    match std::fs::read(path) {
        Ok(bytes) => Ok(bytes),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(Error::io(path, e)),
    }
}

/// `_*.er` directories directly inside `dir`, in natural order.
pub(crate) fn descendant_dirs(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut found: Vec<PathBuf> = entries
        .filter_map(|e| e.ok())
        .filter(|e| {
            let name = e.file_name();
            let name = name.as_encoded_bytes();
            name.starts_with(b"_") && name.ends_with(b".er") && e.path().is_dir()
        })
        .map(|e| e.path())
        .collect();
    found.sort_by_cached_key(|p| natural_key(&p.file_name().unwrap_or_default().to_string_lossy()));
    found
}

/// A sort key comparing digit runs as numbers: `_f2.er` < `_f10.er`.
fn natural_key(name: &str) -> Vec<(u8, u64, String)> {
    let mut key = Vec::new();
    let mut rest = name;
    while !rest.is_empty() {
        let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        if digits > 0 {
            let (run, tail) = rest.split_at(digits);
            key.push((0, run.parse().unwrap_or(u64::MAX), run.to_string()));
            rest = tail;
        } else {
            let text = rest.len() - rest.trim_start_matches(|c: char| !c.is_ascii_digit()).len();
            let (run, tail) = rest.split_at(text);
            key.push((1, 0, run.to_string()));
            rest = tail;
        }
    }
    key
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifest_versions() {
        let p = Path::new("/x.er");
        let text =
            "format=rdbx-experiment\nversion=1\nblock_size=65536\nfiles=log,profile,stacks\n\
                    kinds=\ncreated_by=libcollector 0.1.0\nfuture=yes\n";
        let m = Manifest::parse(text, p).unwrap();
        assert_eq!((m.version_major, m.version_minor), (1, 0));
        assert_eq!(m.files, ["log", "profile", "stacks"]);
        assert!(m.kinds.is_empty());
        assert_eq!(m.created_by, "libcollector 0.1.0");
        assert_eq!(m.other, [("future".to_string(), "yes".to_string())]);
        let m = Manifest::parse("format=rdbx-experiment\nversion=1.3\n", p).unwrap();
        assert_eq!(m.version_minor, 3);
        let err = Manifest::parse("format=rdbx-experiment\nversion=7\n", p).unwrap_err();
        assert_eq!(err.to_string(), "unsupported experiment format version 7");
        assert!(Manifest::parse("format=other\nversion=1\n", p).is_err());
        assert!(Manifest::parse("format=rdbx-experiment\n", p).is_err());
        assert!(Manifest::parse("format=rdbx-experiment\nversion=1\nblock_size=5\n", p).is_err());
    }

    #[test]
    fn natural_order() {
        let mut names = vec!["_f10.er", "_f2.er", "_f1_x1.er", "_c1.er", "_f1.er"];
        names.sort_by_key(|n| natural_key(n));
        assert_eq!(
            names,
            ["_c1.er", "_f1.er", "_f1_x1.er", "_f2.er", "_f10.er"]
        );
    }
}
