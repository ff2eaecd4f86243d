//! Reading an experiment directory, also while the collector is writing it or after it
//! was killed: only complete log lines and committed block records are read.

use crate::archive::{self, ArchivedObject};
use crate::layout::{
    self, BlockHead, BlockState, ClockEvent, RecordSpan, StackRecordRef, StackStatus, BLOCK_SIZE,
    CLOCK_EVENT_SIZE, FORMAT_NAME, FORMAT_VERSION, HEADER_SIZE, KIND_COUNTERS, KIND_HEAP, KIND_IO,
    KIND_MPI, KIND_OFFCPU, KIND_PROFILE, KIND_STACKS, KIND_SYNC, MAX_STACK_DEPTH,
};
use crate::log::{parse_log, Event, LogEvent, Sample};
use crate::text::preview;
use crate::{Error, Result};
use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

/// Largest block size a reader accepts from a manifest.
const MAX_BLOCK_SIZE: usize = 16 << 20;
/// Largest manifest a reader accepts (a real one is about 150 bytes).
const MAX_MANIFEST_BYTES: u64 = 64 << 10;
/// Largest `notes` file read (the rest is cut).
const MAX_NOTES_BYTES: u64 = 1 << 20;

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
    /// Parses manifest text; `path` is the experiment directory, for messages. Errors quote
    /// the line they are about, with its number (blank lines count).
    pub fn parse(text: &str, path: &Path) -> Result<Manifest> {
        let at = |line: ManifestLine<'_>, problem: &str| Error::BadManifestLine {
            path: path.to_path_buf(),
            line: line.number,
            text: preview(line.text).into_owned(),
            problem: problem.to_string(),
        };
        let mut lines = text
            .lines()
            .enumerate()
            .map(|(i, text)| ManifestLine {
                number: i + 1,
                text,
            })
            .filter(|l| !l.text.trim().is_empty());
        let format = match lines.next() {
            Some(l) if l.text.split_once('=') == Some(("format", FORMAT_NAME)) => FORMAT_NAME,
            Some(l) => {
                return Err(Error::NotAnExperiment {
                    path: path.to_path_buf(),
                    reason: format!(
                        "manifest line {}: {:?}: expected format={FORMAT_NAME} first",
                        l.number,
                        preview(l.text)
                    ),
                })
            }
            None => {
                return Err(Error::NotAnExperiment {
                    path: path.to_path_buf(),
                    reason: "empty manifest".to_string(),
                })
            }
        };
        let mut manifest = Manifest {
            format: format.to_string(),
            version_major: 0,
            version_minor: 0,
            block_size: BLOCK_SIZE,
            files: Vec::new(),
            kinds: Vec::new(),
            created_by: String::new(),
            other: Vec::new(),
        };
        let mut saw_version = false;
        for line in lines {
            let Some((key, value)) = line.text.split_once('=') else {
                return Err(at(line, "expected KEY=VALUE"));
            };
            match key {
                "version" => {
                    (manifest.version_major, manifest.version_minor) =
                        parse_version(value, path, line)?;
                    saw_version = true;
                }
                "block_size" => {
                    manifest.block_size = value
                        .parse()
                        .ok()
                        .filter(|&s: &usize| (2 * HEADER_SIZE..=MAX_BLOCK_SIZE).contains(&s))
                        .ok_or_else(|| {
                            at(
                                line,
                                &format!(
                                    "block size out of range ({}..={MAX_BLOCK_SIZE} bytes)",
                                    2 * HEADER_SIZE
                                ),
                            )
                        })?
                }
                "files" => manifest.files = split_list(value),
                "kinds" => manifest.kinds = split_list(value),
                "created_by" => manifest.created_by = value.to_string(),
                _ => manifest.other.push((key.to_string(), value.to_string())),
            }
        }
        if !saw_version {
            return Err(Error::BadManifest {
                path: path.to_path_buf(),
                reason: "no version line".to_string(),
            });
        }
        Ok(manifest)
    }
}

/// A line of a manifest and its number, from 1.
#[derive(Clone, Copy)]
struct ManifestLine<'a> {
    number: usize,
    text: &'a str,
}

/// `MAJOR` or `MAJOR.MINOR` (the value of manifest `line`); a major version other than
/// ours is refused, a newer one with [`Error::NewerVersion`]. A minor version too large for
/// a u32 reads as `u32::MAX`.
fn parse_version(value: &str, path: &Path, line: ManifestLine<'_>) -> Result<(u32, u32)> {
    let unsupported = || Error::UnsupportedVersion {
        path: path.to_path_buf(),
        line: line.number,
        text: preview(line.text).into_owned(),
    };
    let (major, minor) = value.split_once('.').unwrap_or((value, "0"));
    let is_number = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !is_number(major) || !is_number(minor) {
        return Err(unsupported());
    }
    // All digits: a major too large for a u32 is still a number, and newer than ours.
    match major.parse::<u32>() {
        Ok(FORMAT_VERSION) => {}
        Ok(older) if older < FORMAT_VERSION => return Err(unsupported()),
        _ => {
            return Err(Error::NewerVersion {
                path: path.to_path_buf(),
                line: line.number,
                text: preview(line.text).into_owned(),
                found: preview(value).into_owned(),
                supported: FORMAT_VERSION,
            })
        }
    }
    Ok((FORMAT_VERSION, minor.parse().unwrap_or(u32::MAX)))
}

/// A file name of the directory itself: not empty, no `/`, not `.` or `..` (a manifest is
/// input, and must not make a reader look elsewhere).
fn is_plain_name(name: &str) -> bool {
    !name.is_empty() && !name.contains('/') && name != "." && name != ".."
}

fn split_list(value: &str) -> Vec<String> {
    value
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// Where the committed records of one used block of the `heap` file are.
struct HeapBlockSpan {
    /// File offset of the first record.
    offset: u64,
    len: usize,
    tid: u32,
    first_timestamp_ns: u64,
    /// Cut or clamped: already counted as damaged.
    counted: bool,
}

/// Where a thread's next event comes in a stable sort by order number of the events in
/// file order: the order number, then the block's index and the place in it (32 bits
/// each), in one integer so that the merge compares heads with one comparison. Keys are
/// never equal; a block holds far fewer than 2^32 events, so no key is `NO_MORE`.
type MergeKey = u128;

/// The key of a thread with no more events.
const NO_MORE: MergeKey = u128::MAX;

/// The key of the event of order number `order` at `place` in block `block`.
fn merge_key(order: u64, block: usize, place: usize) -> MergeKey {
    (u128::from(order) << 64) | ((block as u128 & 0xffff_ffff) << 32) | place as u128
}

/// The order number of the event of `key`.
fn key_order(key: MergeKey) -> u64 {
    (key >> 64) as u64
}

/// The threads' heap events being merged.
struct HeapMerge {
    /// Per thread: its blocks (indices of spans) in file order.
    threads: Vec<HeapCursor>,
    /// Per block: records decoded, and their bytes.
    decoded: Vec<(u64, usize)>,
}

impl HeapMerge {
    fn new(spans: &[HeapBlockSpan]) -> HeapMerge {
        let mut threads: Vec<HeapCursor> = Vec::new();
        let mut thread_of: HashMap<u32, usize> = HashMap::new();
        for (index, span) in spans.iter().enumerate() {
            let thread = *thread_of.entry(span.tid).or_insert_with(|| {
                threads.push(HeapCursor {
                    tid: span.tid,
                    ..HeapCursor::default()
                });
                threads.len() - 1
            });
            threads[thread].blocks.push(index);
        }
        HeapMerge {
            threads,
            decoded: vec![(0, 0); spans.len()],
        }
    }

    /// The key of thread `thread`'s next event, its next block read when it needs one.
    #[inline]
    fn head(
        &mut self,
        thread: usize,
        spans: &[HeapBlockSpan],
        file: &File,
    ) -> io::Result<MergeKey> {
        self.threads[thread].head(spans, file, &mut self.decoded)
    }

    /// Gives thread `thread`'s next event to `each`; the key of the one after it, or
    /// None when the thread's numbers went down.
    #[inline]
    fn take(
        &mut self,
        thread: usize,
        spans: &[HeapBlockSpan],
        file: &File,
        each: &mut impl FnMut(HeapEventRecord),
    ) -> io::Result<Option<MergeKey>> {
        let cursor = &mut self.threads[thread];
        let Some(&event) = cursor.events.get(cursor.next) else {
            return Ok(Some(NO_MORE));
        };
        cursor.next += 1;
        each(HeapEventRecord {
            tid: cursor.tid,
            event,
        });
        let next = self.head(thread, spans, file)?;
        Ok((next == NO_MORE || key_order(next) >= event.order).then_some(next))
    }

    /// The merge, the next thread found by a scan of the heads' order numbers; false
    /// when some thread's numbers went down.
    fn run_scanning(
        &mut self,
        spans: &[HeapBlockSpan],
        file: &File,
        mut each: impl FnMut(HeapEventRecord),
    ) -> io::Result<bool> {
        // Per thread: its next event's order number, `u64::MAX` when it has none.
        let mut orders = Vec::with_capacity(self.threads.len());
        for thread in 0..self.threads.len() {
            orders.push(key_order(self.head(thread, spans, file)?));
        }
        loop {
            let thread = match least(&orders) {
                Some(thread) => thread,
                // Two heads with one number (or the largest): the whole keys decide.
                None => match self.least_key(spans, file)? {
                    Some(thread) => thread,
                    None => return Ok(true),
                },
            };
            match self.take(thread, spans, file, &mut each)? {
                Some(next) => orders[thread] = key_order(next),
                None => return Ok(false),
            }
        }
    }

    /// The thread whose next event comes first by whole keys, None when none has one.
    #[cold]
    fn least_key(&mut self, spans: &[HeapBlockSpan], file: &File) -> io::Result<Option<usize>> {
        let mut best = (NO_MORE, None);
        for thread in 0..self.threads.len() {
            let key = self.head(thread, spans, file)?;
            if key < best.0 {
                best = (key, Some(thread));
            }
        }
        Ok(best.1)
    }

    /// The merge, the next thread taken from a binary heap (many threads).
    fn run_heap(
        &mut self,
        spans: &[HeapBlockSpan],
        file: &File,
        mut each: impl FnMut(HeapEventRecord),
    ) -> io::Result<bool> {
        let mut next = std::collections::BinaryHeap::new();
        for thread in 0..self.threads.len() {
            let key = self.head(thread, spans, file)?;
            if key != NO_MORE {
                next.push(std::cmp::Reverse((key, thread)));
            }
        }
        while let Some(std::cmp::Reverse((_, thread))) = next.pop() {
            // The thread goes on while its events come first.
            loop {
                let Some(key) = self.take(thread, spans, file, &mut each)? else {
                    return Ok(false);
                };
                if key == NO_MORE {
                    break;
                }
                if next
                    .peek()
                    .is_some_and(|std::cmp::Reverse(top)| top.0 < key)
                {
                    next.push(std::cmp::Reverse((key, thread)));
                    break;
                }
            }
        }
        Ok(true)
    }
}

/// The index of the least of `orders` when no other equals it and it is not `u64::MAX`
/// (None otherwise: rare, the whole keys decide). Without a branch per thread: which
/// thread comes next is as good as random.
#[inline]
fn least(orders: &[u64]) -> Option<usize> {
    let (mut best, mut least, mut tied) = (0, u64::MAX, true);
    for (thread, &order) in orders.iter().enumerate() {
        let below = order < least;
        tied = (order == least) | (tied & !below);
        best = if below { thread } else { best };
        least = least.min(order);
    }
    (!tied).then_some(best)
}

/// One thread's heap events, read and decoded a block at a time (a tight loop over the
/// block's records, not one call per event through the merge).
#[derive(Default)]
struct HeapCursor {
    tid: u32,
    /// The thread's blocks (indices of `HeapBlockSpan`s), in file order.
    blocks: Vec<usize>,
    /// How many of `blocks` were read: the current one is `block - 1`.
    block: usize,
    bytes: Vec<u8>,
    /// The current block's events, and the place of the next one.
    events: Vec<crate::heap::HeapEvent>,
    next: usize,
}

impl HeapCursor {
    /// The merge key of the thread's next event, `NO_MORE` when it has none; the next
    /// blocks are read when the current one has no more.
    #[inline]
    fn head(
        &mut self,
        spans: &[HeapBlockSpan],
        file: &File,
        decoded: &mut [(u64, usize)],
    ) -> io::Result<MergeKey> {
        match self.current() {
            Some(key) => Ok(key),
            None => self.read_next(spans, file, decoded),
        }
    }

    /// The merge key of the current block's next event, if it has one.
    #[inline]
    fn current(&self) -> Option<MergeKey> {
        let event = self.events.get(self.next)?;
        Some(merge_key(
            event.order,
            self.blocks[self.block - 1],
            self.next,
        ))
    }

    /// [`HeapCursor::head`] once the current block has no more: the thread's next
    /// blocks read until one has events. A block's events are counted in `decoded`
    /// when it is read. Out of line, so that the merge's loop stays small.
    #[inline(never)]
    fn read_next(
        &mut self,
        spans: &[HeapBlockSpan],
        file: &File,
        decoded: &mut [(u64, usize)],
    ) -> io::Result<MergeKey> {
        loop {
            if let Some(key) = self.current() {
                return Ok(key);
            }
            let Some(&index) = self.blocks.get(self.block) else {
                return Ok(NO_MORE);
            };
            let span = &spans[index];
            self.bytes.resize(span.len, 0);
            let read = read_full_at(file, &mut self.bytes, span.offset)?;
            // The first pass saw the file hold these bytes: a file cut since then ends
            // the block.
            self.bytes.truncate(read);
            self.events.clear();
            self.next = 0;
            decoded[index] = decode_heap_block(&self.bytes, span, &mut self.events);
            self.block += 1;
        }
    }
}

/// Decodes the records of one block into `events`; how many there were and the bytes
/// they took (less than the block's when it is damaged).
fn decode_heap_block(
    bytes: &[u8],
    span: &HeapBlockSpan,
    events: &mut Vec<crate::heap::HeapEvent>,
) -> (u64, usize) {
    let mut delta = crate::heap::HeapDelta::block_start(span.first_timestamp_ns);
    let mut at = 0;
    while let Some((event, len)) = bytes.get(at..).and_then(|rest| delta.decode(rest)) {
        events.push(event);
        at += len;
    }
    (events.len() as u64, at)
}

/// One heap event with the thread that made it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeapEventRecord {
    pub tid: u32,
    pub event: crate::heap::HeapEvent,
}

/// One synchronization wait with the thread that waited.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SyncEventRecord {
    pub tid: u32,
    pub event: crate::sync::SyncEvent,
}

/// One traced I/O call with the thread that made it; the path borrowed from the block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IoEventRecord<'a> {
    pub tid: u32,
    pub event: crate::io::IoEvent<'a>,
}

/// One traced MPI call (or completion), with the thread that made it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MpiEventRecord {
    pub tid: u32,
    pub event: crate::mpi::MpiEvent,
}

/// One switch off the CPU and back, with the thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OffCpuEventRecord {
    pub tid: u32,
    pub event: crate::offcpu::OffCpuEvent,
}

/// One counter overflow record, with the thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CounterEventRecord {
    pub tid: u32,
    pub event: crate::counters::CounterEvent,
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
        self.blocks = self.blocks.saturating_add(other.blocks);
        self.used = self.used.saturating_add(other.used);
        self.unused = self.unused.saturating_add(other.unused);
        self.damaged = self.damaged.saturating_add(other.damaged);
        self.cut = self.cut.saturating_add(other.cut);
        self.records = self.records.saturating_add(other.records);
        self.record_bytes = self.record_bytes.saturating_add(other.record_bytes);
    }

    /// What a reader should say about the block file `file` (`profile` or `stacks`).
    pub fn warnings(&self, file: &str) -> Vec<Warning> {
        let mut out = Vec::new();
        if self.damaged > 0 {
            out.push(Warning::DamagedBlocks {
                file: file.to_string(),
                damaged: self.damaged,
                blocks: self.blocks,
            });
        }
        if self.cut > 0 {
            out.push(Warning::CutBlocks {
                file: file.to_string(),
                cut: self.cut,
            });
        }
        out
    }
}

/// Something wrong in an experiment that did not stop it being read: what was valid is
/// still returned by the reading functions, and a warning says what was not. `Display` gives
/// a one-line message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Warning {
    /// Written by a newer minor version of the format: what this reader does not know
    /// is ignored.
    NewerMinorVersion { major: u32, minor: u32, known: u32 },
    /// Log lines that could not be read ([`Event::Malformed`]); the other lines were.
    MalformedLogLines { count: usize },
    /// Blocks skipped or partly read: bad header, `committed` larger than the block, or
    /// committed bytes that are not whole records.
    DamagedBlocks {
        file: String,
        damaged: u64,
        blocks: u64,
    },
    /// Blocks whose committed part goes past the end of the file: still being written, or
    /// the file was cut. Their whole records were read.
    CutBlocks { file: String, cut: u64 },
    /// Clock events whose stack record is missing (`ids` distinct stack ids).
    MissingStacks { events: u64, ids: u64 },
    /// Lines of `archives/index` that could not be read; the other entries were.
    BadArchiveLines { lines: usize, first: String },
    /// A part of the experiment could not be read at all (an I/O error, not a regular
    /// file); the other parts were.
    Unreadable { part: String, error: String },
    /// A data file the manifest lists is not there ([`Experiment::missing_files`]).
    MissingFile { file: String },
}

impl std::fmt::Display for Warning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Warning::NewerMinorVersion {
                major,
                minor,
                known,
            } => write!(
                f,
                "experiment format version {major}.{minor} is newer than this rdbx reads \
                 ({major}.{known}); data it does not know is ignored"
            ),
            Warning::MalformedLogLines { count } => {
                write!(f, "{count} log line(s) could not be read and were skipped")
            }
            Warning::DamagedBlocks {
                file,
                damaged,
                blocks,
            } => write!(
                f,
                "{damaged} of {blocks} block(s) of {file} are damaged; their readable \
                 records were kept"
            ),
            Warning::CutBlocks { file, cut } => write!(
                f,
                "{cut} block(s) of {file} end before their committed records do (still \
                 being written, or the file was cut)"
            ),
            Warning::MissingStacks { events, ids } => write!(
                f,
                "{events} clock event(s) refer to {ids} stack(s) missing from stacks"
            ),
            Warning::BadArchiveLines { lines, first } => {
                write!(
                    f,
                    "{lines} line(s) of archives/index could not be read: {first}"
                )
            }
            Warning::Unreadable { part, error } => write!(f, "cannot read {part}: {error}"),
            Warning::MissingFile { file } => {
                write!(f, "no {file} file, though the manifest lists it")
            }
        }
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
        let Some(bytes) = read_regular(&manifest_path, Some(MAX_MANIFEST_BYTES + 1))? else {
            return Err(not_expt("no manifest"));
        };
        if bytes.len() as u64 > MAX_MANIFEST_BYTES {
            return Err(Error::BadManifest {
                path: dir,
                reason: format!("larger than {MAX_MANIFEST_BYTES} bytes"),
            });
        }
        let manifest = Manifest::parse(&String::from_utf8_lossy(&bytes), &dir)?;
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

    /// The data files the manifest lists (`log`, `profile`, `stacks`) that are not in the
    /// directory. The collector creates them all before it writes the manifest, so a missing
    /// one was lost (removed, or the directory copied in part).
    pub fn missing_files(&self) -> Vec<String> {
        self.manifest
            .files
            .iter()
            .filter(|name| is_plain_name(name))
            .filter(|name| {
                std::fs::symlink_metadata(self.dir.join(name))
                    .is_err_and(|e| e.kind() == io::ErrorKind::NotFound)
            })
            .cloned()
            .collect()
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
        let stats = self.for_each_clock_event(|event| events.push(event))?;
        Ok((events, stats))
    }

    /// Calls `each` with every committed clock event of the `profile` file, in file order,
    /// without holding them all in memory (an experiment may have tens of millions).
    pub fn for_each_clock_event(
        &self,
        mut each: impl FnMut(ClockEventRecord),
    ) -> Result<BlockStats> {
        self.for_each_block("profile", KIND_PROFILE, |header, records, stats| {
            let chunks = records.chunks_exact(CLOCK_EVENT_SIZE);
            let mut damaged = !chunks.remainder().is_empty();
            for event in chunks.filter_map(ClockEvent::from_bytes) {
                // Stack id 0 is never written: these bytes were never a record.
                if event.stack_id == 0 {
                    damaged = true;
                    continue;
                }
                each(ClockEventRecord {
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
        })
    }

    /// Calls `each` with every committed heap event of the `heap` file, block by block
    /// (each block in its thread's order; sort by `order` for the order across threads).
    pub fn for_each_heap_event(&self, mut each: impl FnMut(HeapEventRecord)) -> Result<BlockStats> {
        self.for_each_block("heap", KIND_HEAP, |header, records, stats| {
            let mut count = 0u64;
            let mut bytes = 0u64;
            let whole = crate::heap::decode_block(header.first_timestamp_ns, records, |event| {
                count += 1;
                each(HeapEventRecord {
                    tid: header.tid,
                    event,
                });
            });
            if whole {
                bytes = records.len() as u64;
            }
            stats.records += count;
            stats.record_bytes += bytes;
            !whole
        })
    }

    /// Walks the blocks of a file of fixed or self-delimiting records: `decode` gets a
    /// block's thread and committed bytes and says how many records it decoded and whether
    /// the bytes were whole records (a damaged block's bytes are not counted).
    fn for_each_record_block(
        &self,
        file: &str,
        kind: u16,
        mut decode: impl FnMut(u32, &[u8]) -> (u64, bool),
    ) -> Result<BlockStats> {
        self.for_each_block(file, kind, |header, records, stats| {
            let (count, whole) = decode(header.tid, records);
            stats.records += count;
            if whole {
                stats.record_bytes += records.len() as u64;
            }
            !whole
        })
    }

    /// Calls `each` with every committed wait of the `sync` file, block by block (each
    /// block in its thread's order).
    pub fn for_each_sync_event(&self, mut each: impl FnMut(SyncEventRecord)) -> Result<BlockStats> {
        self.for_each_record_block("sync", KIND_SYNC, |tid, records| {
            let mut count = 0u64;
            let whole = crate::sync::decode_block(records, |event| {
                count += 1;
                each(SyncEventRecord { tid, event });
            });
            (count, whole)
        })
    }

    /// Calls `each` with every committed I/O call of the `io` file, block by block (each
    /// block in its thread's order). The path a record holds is borrowed for the call.
    pub fn for_each_io_event(&self, mut each: impl FnMut(IoEventRecord<'_>)) -> Result<BlockStats> {
        self.for_each_record_block("io", KIND_IO, |tid, records| {
            let mut count = 0u64;
            let whole = crate::io::decode_block(records, |event| {
                count += 1;
                each(IoEventRecord { tid, event });
            });
            (count, whole)
        })
    }

    /// Calls `each` with every committed MPI call of the `mpi` file, block by block (each
    /// block in its thread's order).
    pub fn for_each_mpi_event(&self, mut each: impl FnMut(MpiEventRecord)) -> Result<BlockStats> {
        self.for_each_record_block("mpi", KIND_MPI, |tid, records| {
            let mut count = 0u64;
            let whole = crate::mpi::decode_block(records, |event| {
                count += 1;
                each(MpiEventRecord { tid, event });
            });
            (count, whole)
        })
    }

    /// The machine the process ran on (the `start` line's `host`, format 1.6); None for an
    /// older experiment or one without a readable `start` line.
    pub fn host(&self) -> Result<Option<String>> {
        Ok(self.log()?.into_iter().find_map(|e| match e.event {
            Event::Start(start) => start.host,
            _ => None,
        }))
    }

    /// The process's rank in MPI_COMM_WORLD (the `mpi` line written when MPI_Init
    /// completed, with MPI tracing; format 1.6); None when there is none.
    pub fn mpi_rank(&self) -> Result<Option<u32>> {
        Ok(crate::log::mpi_place(&self.log()?).map(|(rank, _)| rank))
    }

    /// Calls `each` with every committed off-CPU event of the `offcpu` file, block by block
    /// (each block in its thread's order).
    pub fn for_each_offcpu_event(
        &self,
        mut each: impl FnMut(OffCpuEventRecord),
    ) -> Result<BlockStats> {
        self.for_each_record_block("offcpu", KIND_OFFCPU, |tid, records| {
            let mut count = 0u64;
            let whole = crate::offcpu::decode_block(records, |event| {
                count += 1;
                each(OffCpuEventRecord { tid, event });
            });
            (count, whole)
        })
    }

    /// Calls `each` with every committed counter overflow record of the `counters` file,
    /// block by block (each block in its thread's order).
    pub fn for_each_counter_event(
        &self,
        mut each: impl FnMut(CounterEventRecord),
    ) -> Result<BlockStats> {
        self.for_each_record_block("counters", KIND_COUNTERS, |tid, records| {
            let mut count = 0u64;
            let whole = crate::counters::decode_block(records, |event| {
                count += 1;
                each(CounterEventRecord { tid, event });
            });
            (count, whole)
        })
    }

    /// Feeds every committed heap event, in the order of [`Experiment::heap_events`] (by
    /// order number; equal numbers in file order), to a state made by `start`, without
    /// holding the events: a thread's events come in its order, so the threads' streams
    /// are merged, each read a block at a time. When some thread's numbers go down
    /// (damaged data) the merge cannot give that order: the state is dropped, a fresh one
    /// made, and the events collected and sorted instead. Returns the state and what
    /// reading the blocks found (as [`Experiment::for_each_heap_event`]'s).
    pub fn heap_events_in_order<S>(
        &self,
        mut start: impl FnMut() -> S,
        mut each: impl FnMut(&mut S, HeapEventRecord),
    ) -> Result<(S, BlockStats)> {
        // Where each used block's records are; they are decoded (and counted) once, by
        // the merge.
        let mut spans: Vec<HeapBlockSpan> = Vec::new();
        let mut stats = self.for_each_record_span("heap", KIND_HEAP, |span, at| {
            spans.push(HeapBlockSpan {
                offset: at.saturating_add(span.start as u64),
                len: span.end - span.start,
                tid: span.header.tid,
                first_timestamp_ns: span.header.first_timestamp_ns,
                // for_each_record_span counted these as damaged already.
                counted: span.cut || span.clamped,
            });
        })?;
        let path = self.dir.join("heap");
        let mut state = start();
        let Some(file) = open_regular(&path)? else {
            return Ok((state, stats));
        };
        let mut merge = HeapMerge::new(&spans);
        let io = |e| Error::io(&path, e);
        let rising = match merge.threads.len() {
            // Few threads (most programs): the smallest head by a scan.
            0..=8 => merge
                .run_scanning(&spans, &file, |e| each(&mut state, e))
                .map_err(io)?,
            _ => merge
                .run_heap(&spans, &file, |e| each(&mut state, e))
                .map_err(io)?,
        };
        if !rising {
            let mut state = start();
            let (events, stats) = self.sorted_heap_events()?;
            for record in events {
                each(&mut state, record);
            }
            return Ok((state, stats));
        }
        for (span, cursor) in spans.iter().zip(&merge.decoded) {
            stats.records += cursor.0;
            if cursor.1 == span.len {
                stats.record_bytes += span.len as u64;
            } else if !span.counted {
                stats.damaged += 1;
            }
        }
        Ok((state, stats))
    }

    /// Every committed heap event sorted by order number, and what reading them found.
    fn sorted_heap_events(&self) -> Result<(Vec<HeapEventRecord>, BlockStats)> {
        let mut events = Vec::new();
        let stats = self.for_each_heap_event(|e| events.push(e))?;
        events.sort_by_key(|e| e.event.order);
        Ok((events, stats))
    }

    /// Every committed heap event, sorted by order number.
    pub fn heap_events(&self) -> Result<Vec<HeapEventRecord>> {
        Ok(self.sorted_heap_events()?.0)
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
        self.for_each_block_at(name, kind, |used, _, stats| {
            records(&used.header, used.records, stats)
        })
    }

    /// [`Experiment::for_each_block`] giving `records` the whole used block and where in
    /// the file its record bytes are.
    fn for_each_block_at(
        &self,
        name: &str,
        kind: u16,
        mut records: impl FnMut(&layout::UsedBlock<'_>, u64, &mut BlockStats) -> bool,
    ) -> Result<BlockStats> {
        let path = self.dir.join(name);
        let mut stats = BlockStats::default();
        let Some(file) = open_regular(&path)? else {
            return Ok(stats);
        };
        let block_size = self.manifest.block_size;
        let mut block = vec![0u8; block_size];
        let mut offset = 0u64;
        let io = |e| Error::io(&path, e);
        while let Some(next) = next_data_block(&file, offset, block_size, &mut stats).map_err(io)? {
            offset = next;
            // One pass over the block in address order: the header (with `committed`) is
            // copied before the records it covers.
            let len = read_full_at(&file, &mut block, offset).map_err(io)?;
            if len == 0 {
                break;
            }
            offset = offset.saturating_add(len as u64);
            stats.blocks += 1;
            let bytes = block.get(..len).unwrap_or(&[]);
            match layout::parse_block(bytes, block_size, kind) {
                BlockState::Unused => stats.unused += 1,
                BlockState::CutHeader => stats.cut += 1,
                BlockState::BadHeader(_) | BlockState::Garbage => stats.damaged += 1,
                BlockState::Used(used) => {
                    stats.used += 1;
                    let cut = used.cut;
                    let start =
                        (used.records.as_ptr() as usize).saturating_sub(bytes.as_ptr() as usize);
                    let at = (offset - len as u64).saturating_add(start as u64);
                    let damaged = records(&used, at, &mut stats);
                    count_used_block(&mut stats, used.clamped, cut, damaged);
                }
            }
            if len < block_size {
                break;
            }
        }
        Ok(stats)
    }

    /// Where each used block of the block file `name` is (its offset in the file) and where
    /// its committed records are in it, from the blocks' headers alone, counting what each
    /// block holds as [`Experiment::for_each_block`] does: the records stay in the file
    /// for a reader that reads them later, once. The file's length when the walk starts
    /// says how much of a block the file holds.
    fn for_each_record_span(
        &self,
        name: &str,
        kind: u16,
        mut each: impl FnMut(&RecordSpan, u64),
    ) -> Result<BlockStats> {
        let path = self.dir.join(name);
        let mut stats = BlockStats::default();
        let Some(file) = open_regular(&path)? else {
            return Ok(stats);
        };
        let io = |e| Error::io(&path, e);
        let block_size = self.manifest.block_size;
        let length = file.metadata().map_err(io)?.len();
        let mut head = [0u8; HEADER_SIZE];
        let mut offset = 0u64;
        while let Some(next) = next_data_block(&file, offset, block_size, &mut stats).map_err(io)? {
            offset = next;
            let in_file = usize::try_from(length.saturating_sub(offset)).unwrap_or(usize::MAX);
            let wanted = block_size.min(in_file);
            let asked = head.get_mut(..wanted.min(HEADER_SIZE)).unwrap_or(&mut []);
            let read = read_full_at(&file, asked, offset).map_err(io)?;
            if read == 0 {
                break;
            }
            // Less than asked: the file ends (or was cut since its length was taken) there.
            let available = if read < asked.len() { read } else { wanted };
            let at = offset;
            offset = offset.saturating_add(available as u64);
            stats.blocks += 1;
            match layout::parse_block_head(&head[..read], available, block_size, kind) {
                BlockHead::Unused => stats.unused += 1,
                BlockHead::CutHeader => stats.cut += 1,
                BlockHead::BadHeader(_) | BlockHead::Garbage => stats.damaged += 1,
                BlockHead::Used(span) => {
                    stats.used += 1;
                    each(&span, at);
                    count_used_block(&mut stats, span.clamped, span.cut, false);
                }
            }
            if available < block_size {
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

    /// The `notes` file (the -C comment), if any; its first MiB when it is larger.
    pub fn notes(&self) -> Option<String> {
        read_regular(&self.dir.join("notes"), Some(MAX_NOTES_BYTES))
            .ok()
            .flatten()
            .map(|b| String::from_utf8_lossy(&b).into_owned())
    }

    /// True when `archives/index` exists.
    pub fn has_archive(&self) -> bool {
        self.dir.join("archives").join("index").is_file()
    }

    /// The entries of `archives/index`; empty when the experiment was not archived.
    pub fn archive_index(&self) -> Result<Vec<ArchivedObject>> {
        let path = self.dir.join("archives").join("index");
        match read_regular(&path, None)? {
            Some(bytes) => archive::parse_index(&String::from_utf8_lossy(&bytes), &path),
            None => Ok(Vec::new()),
        }
    }

    /// The entries of `archives/index` that parse, and an error for each line that does
    /// not (where [`Experiment::archive_index`] stops at the first bad line).
    pub fn archive_index_lenient(&self) -> Result<(Vec<ArchivedObject>, Vec<Error>)> {
        let path = self.dir.join("archives").join("index");
        match read_regular(&path, None)? {
            Some(bytes) => Ok(archive::parse_index_lenient(
                &String::from_utf8_lossy(&bytes),
                &path,
            )),
            None => Ok((Vec::new(), Vec::new())),
        }
    }

    /// Bytes on disk of the data files (log, profile, stacks).
    pub fn data_bytes(&self) -> u64 {
        // Saturating: sparse files can claim lengths near i64::MAX each.
        ["log", "profile", "stacks"]
            .iter()
            .filter_map(|name| std::fs::metadata(self.dir.join(name)).ok())
            .fold(0u64, |sum, m| sum.saturating_add(m.len()))
    }

    /// Data bytes of this experiment and all its descendants.
    pub fn total_data_bytes(&self) -> u64 {
        self.descendants()
            .iter()
            .filter_map(|d| Experiment::open(d).ok())
            .fold(self.data_bytes(), |sum, d| {
                sum.saturating_add(d.data_bytes())
            })
    }

    /// Everything a reader should say about this experiment besides its data: damaged
    /// or cut blocks, unreadable log lines, clock events without a stack, bad archive
    /// lines, parts that cannot be read at all. Reads the whole experiment; never fails
    /// (an error reading a part is itself a warning). Empty for a clean experiment.
    ///
    /// An analyzer that already read the parts can build the same from
    /// [`Summary::warnings`] and [`BlockStats::warnings`].
    pub fn warnings(&self) -> Vec<Warning> {
        let mut out = self.manifest.warnings();
        out.extend(
            self.missing_files()
                .into_iter()
                .map(|file| Warning::MissingFile { file }),
        );
        let unreadable = |part: &str, e: Error| Warning::Unreadable {
            part: part.to_string(),
            error: e.to_string(),
        };
        match self.log() {
            Ok(log) => out.extend(log_warnings(&log)),
            Err(e) => out.push(unreadable("log", e)),
        }
        let clock = match self.clock_events_with_stats() {
            Ok((events, stats)) => {
                out.extend(stats.warnings("profile"));
                Some(events)
            }
            Err(e) => {
                out.push(unreadable("profile", e));
                None
            }
        };
        match self.stacks_with_stats() {
            Ok((stacks, stats)) => {
                out.extend(stats.warnings("stacks"));
                if let Some(clock) = clock {
                    out.extend(missing_stacks(&clock, &stacks));
                }
            }
            Err(e) => out.push(unreadable("stacks", e)),
        }
        match self.archive_index_lenient() {
            Ok((_, errors)) => {
                if let Some(first) = errors.first() {
                    out.push(Warning::BadArchiveLines {
                        lines: errors.len(),
                        first: first.to_string(),
                    });
                }
            }
            Err(e) => out.push(unreadable("archives/index", e)),
        }
        out
    }

    /// Reads everything once and counts it.
    pub fn summary(&self) -> Result<Summary> {
        let log = self.log()?;
        let (clock, profile_blocks) = self.clock_events_with_stats()?;
        let (_, stacks_blocks) = self.stacks_with_stats()?;
        let mut summary = Summary {
            log_events: log.len(),
            clock_events: clock.len() as u64,
            clock_weight_ns: clock
                .iter()
                .fold(0u64, |sum, e| sum.saturating_add(u64::from(e.weight_ns))),
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

/// The warning for malformed lines of a log, if it has any.
pub fn log_warnings(log: &[LogEvent]) -> Option<Warning> {
    let count = log
        .iter()
        .filter(|e| matches!(e.event, Event::Malformed { .. }))
        .count();
    (count > 0).then_some(Warning::MalformedLogLines { count })
}

/// The warning for clock events whose stack id has no record in `stacks`, if any.
pub fn missing_stacks(
    events: &[ClockEventRecord],
    stacks: &HashMap<u64, Stack>,
) -> Option<Warning> {
    let mut missing_ids = std::collections::HashSet::new();
    let mut events_missing = 0u64;
    for event in events.iter().filter(|e| !stacks.contains_key(&e.stack_id)) {
        events_missing += 1;
        missing_ids.insert(event.stack_id);
    }
    (events_missing > 0).then_some(Warning::MissingStacks {
        events: events_missing,
        ids: missing_ids.len() as u64,
    })
}

impl Manifest {
    /// The warning for a newer minor version, if it is one.
    pub fn warnings(&self) -> Vec<Warning> {
        if self.version_minor > layout::FORMAT_MINOR_VERSION {
            vec![Warning::NewerMinorVersion {
                major: self.version_major,
                minor: self.version_minor,
                known: layout::FORMAT_MINOR_VERSION,
            }]
        } else {
            Vec::new()
        }
    }
}

impl Summary {
    /// Warnings that follow from the counts: malformed log lines, damaged or cut blocks.
    pub fn warnings(&self) -> Vec<Warning> {
        let mut out = Vec::new();
        if self.malformed_log_lines > 0 {
            out.push(Warning::MalformedLogLines {
                count: self.malformed_log_lines,
            });
        }
        out.extend(self.profile_blocks.warnings("profile"));
        out.extend(self.stacks_blocks.warnings("stacks"));
        out
    }
}

/// Reads from `offset` until `buf` is full or the file ends; the bytes read.
fn read_full_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    let mut filled = 0;
    while let Some(rest) = buf.get_mut(filled..).filter(|r| !r.is_empty()) {
        match file.read_at(rest, offset.saturating_add(filled as u64)) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

/// Whole blocks of holes from `offset` on, and where to read next (None: only holes follow).
struct Holes {
    blocks: u64,
    next_offset: Option<u64>,
}

/// Where the next block to read is, from `offset` (a block boundary) on: the holes of a
/// sparse file are never-claimed blocks, counted in `stats` without being read (a file cut
/// to a huge length would otherwise take hours of zeros). None: only holes follow.
fn next_data_block(
    file: &File,
    offset: u64,
    block_size: usize,
    stats: &mut BlockStats,
) -> io::Result<Option<u64>> {
    let holes = skip_holes(file, offset, block_size)?;
    stats.blocks = stats.blocks.saturating_add(holes.blocks);
    stats.unused = stats.unused.saturating_add(holes.blocks);
    Ok(holes.next_offset)
}

/// Counts a used block's damage: a committed count larger than the block (`clamped`), or
/// records that did not parse (`damaged`) other than one cut by the end of the file, which
/// is expected while writing (`cut`, counted apart).
fn count_used_block(stats: &mut BlockStats, clamped: bool, cut: bool, damaged: bool) {
    if clamped || (damaged && !cut) {
        stats.damaged += 1;
    }
    if cut {
        stats.cut += 1;
    }
}

/// Skips the whole blocks of holes at `offset` (a block boundary) with `SEEK_DATA`. Where the
/// file system does not report holes, nothing is skipped.
fn skip_holes(file: &File, offset: u64, block_size: usize) -> io::Result<Holes> {
    let block_size = block_size.max(1) as u64;
    let not_skipped = Holes {
        blocks: 0,
        next_offset: Some(offset),
    };
    let Ok(at) = libc::off_t::try_from(offset) else {
        return Ok(not_skipped);
    };
    // SAFETY: lseek on a descriptor we own; it changes only the file offset, which this
    // reader does not use (it reads with pread).
    let data = unsafe { libc::lseek(file.as_raw_fd(), at, libc::SEEK_DATA) };
    if let Ok(data) = u64::try_from(data) {
        let blocks = data.saturating_sub(offset) / block_size;
        return Ok(Holes {
            blocks,
            next_offset: Some(offset.saturating_add(blocks.saturating_mul(block_size))),
        });
    }
    match io::Error::last_os_error().raw_os_error() {
        // No data at or after `offset`: the rest of the file is one hole.
        Some(libc::ENXIO) => {
            let len = file.metadata()?.len();
            Ok(Holes {
                blocks: len.saturating_sub(offset).div_ceil(block_size),
                next_offset: None,
            })
        }
        _ => Ok(not_skipped),
    }
}

/// Opens `path` if it is a regular file; None if it does not exist. Anything else is an
/// error: a FIFO would block the reader forever, a device might never end. Opened with
/// O_NONBLOCK so even opening a FIFO put there does not block (it has no effect on regular
/// files).
fn open_regular(path: &Path) -> Result<Option<File>> {
    let file = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
    {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io(path, e)),
    };
    let meta = file.metadata().map_err(|e| Error::io(path, e))?;
    if !meta.is_file() {
        let e = io::Error::new(io::ErrorKind::InvalidInput, "not a regular file");
        return Err(Error::io(path, e));
    }
    Ok(Some(file))
}

/// The bytes of the regular file `path` (at most `limit` of them); None if it does not
/// exist.
fn read_regular(path: &Path, limit: Option<u64>) -> Result<Option<Vec<u8>>> {
    let Some(file) = open_regular(path)? else {
        return Ok(None);
    };
    let mut bytes = Vec::new();
    let read = match limit {
        Some(limit) => file.take(limit).read_to_end(&mut bytes),
        None => (&file).read_to_end(&mut bytes),
    };
    read.map_err(|e| Error::io(path, e))?;
    Ok(Some(bytes))
}

/// The file's bytes; empty if it does not exist.
pub(crate) fn read_optional(path: &Path) -> Result<Vec<u8>> {
    Ok(read_regular(path, None)?.unwrap_or_default())
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
        assert_eq!(
            err.to_string(),
            "/x.er: manifest line 2: \"version=7\": experiment format version 7 is newer than \
             this rdbx reads (version 1); read it with a newer rdbx"
        );
        // A major version too large for a u32 is still newer.
        let huge = "format=rdbx-experiment\nversion=99999999999999999999999.2\n";
        assert!(matches!(
            Manifest::parse(huge, p),
            Err(Error::NewerVersion {
                supported: 1,
                line: 2,
                ..
            })
        ));
        for bad in ["0", "x", "1.x", "-1", "1.", ".1", "1.2.3"] {
            let text = format!("format=rdbx-experiment\n\nversion={bad}\n");
            let err = Manifest::parse(&text, p).unwrap_err();
            assert!(
                matches!(err, Error::UnsupportedVersion { line: 3, .. }),
                "{bad}: {err}"
            );
            assert_eq!(
                err.to_string(),
                format!(
                    "/x.er: manifest line 3: \"version={bad}\": unsupported experiment format \
                     version (this rdbx reads version 1)"
                )
            );
        }
        // Every other error quotes its line too, or says what is missing.
        let errors = [
            (
                "version=99\nformat=rdbx-experiment\n",
                "not an rdbx experiment: /x.er (manifest line 1: \"version=99\": expected \
                 format=rdbx-experiment first)",
            ),
            ("\n\n", "not an rdbx experiment: /x.er (empty manifest)"),
            (
                "format=rdbx-experiment\nversion=1\ngarbage\n",
                "/x.er: manifest line 3: \"garbage\": expected KEY=VALUE",
            ),
            (
                "format=rdbx-experiment\nversion=1\nblock_size=12\n",
                "/x.er: manifest line 3: \"block_size=12\": block size out of range \
                 (64..=16777216 bytes)",
            ),
            (
                "format=rdbx-experiment\nfiles=log\n",
                "bad manifest in /x.er: no version line",
            ),
        ];
        for (text, message) in errors {
            assert_eq!(Manifest::parse(text, p).unwrap_err().to_string(), message);
        }
        // A newer minor version reads, with a warning; a giant one saturates.
        let m = Manifest::parse("format=rdbx-experiment\nversion=1.99999999999\n", p).unwrap();
        assert_eq!(m.version_minor, u32::MAX);
        assert!(matches!(
            m.warnings()[..],
            [Warning::NewerMinorVersion { major: 1, .. }]
        ));
        // Error messages quote at most a preview of a giant value.
        let long = format!("format=rdbx-experiment\nversion={}\n", "9x".repeat(100_000));
        assert!(Manifest::parse(&long, p).unwrap_err().to_string().len() < 300);
        assert!(Manifest::parse("format=other\nversion=1\n", p).is_err());
        assert!(Manifest::parse("format=rdbx-experiment\n", p).is_err());
        assert!(Manifest::parse("format=rdbx-experiment\nversion=1\nblock_size=5\n", p).is_err());
    }

    fn temp_expt(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "rdbx-reader-{tag}-{}-{}.er",
            std::process::id(),
            crate::writer::monotonic_ns()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("manifest"), "format=rdbx-experiment\nversion=1\n").unwrap();
        dir
    }

    /// Writes a `heap` file of `blocks`: (tid, events) each, in file order.
    fn write_heap_blocks(dir: &Path, blocks: &[(u32, Vec<crate::heap::HeapEvent>)]) {
        use crate::heap::{HeapDelta, MAX_HEAP_RECORD_SIZE};
        let mut file = Vec::new();
        for (index, (tid, events)) in blocks.iter().enumerate() {
            let mut block = vec![0u8; layout::BLOCK_SIZE];
            let first = events.first().map_or(0, |e| e.timestamp_ns);
            let mut writer =
                layout::BlockWriter::claim(&mut block, KIND_HEAP, *tid, index as u32, first)
                    .unwrap();
            let mut delta = HeapDelta::block_start(first);
            for event in events {
                let mut record = [0u8; MAX_HEAP_RECORD_SIZE];
                let len = delta.encode(event, &mut record);
                assert!(writer.push_bytes(&record[..len]));
            }
            writer.commit();
            file.extend_from_slice(&block);
        }
        std::fs::write(dir.join("heap"), file).unwrap();
    }

    fn heap_event(op: crate::heap::HeapOp, order: u64, address: u64) -> crate::heap::HeapEvent {
        crate::heap::HeapEvent {
            op,
            order,
            timestamp_ns: 1_000 + order,
            address,
            size: if op == crate::heap::HeapOp::Free {
                0
            } else {
                16
            },
            old_address: 0,
            stack_id: if op == crate::heap::HeapOp::Free {
                0
            } else {
                7 + order
            },
        }
    }

    fn in_order(expt: &Experiment) -> (Vec<HeapEventRecord>, BlockStats) {
        expt.heap_events_in_order(Vec::new, |events, e| events.push(e))
            .unwrap()
    }

    /// Threads' blocks interleave in the file however their events do: the merge gives
    /// the order of a sort by order number, equal numbers in file order.
    #[test]
    fn heap_events_in_order_merge_the_threads() {
        use crate::heap::HeapOp::{Free, Malloc};
        let dir = temp_expt("heap-order");
        let blocks = vec![
            // Thread 1's first block spans the whole run.
            (
                1,
                vec![heap_event(Malloc, 0, 0x10), heap_event(Free, 5, 0x20)],
            ),
            (
                2,
                vec![heap_event(Malloc, 1, 0x20), heap_event(Free, 2, 0x10)],
            ),
            (3, vec![]),
            (
                2,
                vec![heap_event(Malloc, 3, 0x30), heap_event(Malloc, 5, 0x40)],
            ),
            (
                3,
                vec![heap_event(Malloc, 4, 0x50), heap_event(Malloc, 9, 0x60)],
            ),
            (
                1,
                vec![heap_event(Free, 6, 0x30), heap_event(Malloc, 6, 0x70)],
            ),
        ];
        write_heap_blocks(&dir, &blocks);
        let expt = Experiment::open(&dir).unwrap();
        let sorted = expt.heap_events().unwrap();
        let (merged, stats) = in_order(&expt);
        assert_eq!(merged, sorted);
        let orders: Vec<u64> = merged.iter().map(|e| e.event.order).collect();
        assert_eq!(orders, [0, 1, 2, 3, 4, 5, 5, 6, 6, 9]);
        // Equal numbers: file order (thread 1's free before thread 2's malloc).
        assert_eq!((merged[5].tid, merged[6].tid), (1, 2));
        let mut plain = Vec::new();
        let plain_stats = expt.for_each_heap_event(|e| plain.push(e)).unwrap();
        assert_eq!(stats, plain_stats);
        assert_eq!(plain.len(), merged.len());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Random threads' blocks, numbers rising within each thread and often equal across
    /// threads, interleaved in the file at random: the merge (by scan for up to 8
    /// threads, by heap above) gives what a stable sort by order number gives.
    #[test]
    fn heap_events_in_order_agree_with_a_sort_on_random_blocks() {
        use crate::heap::HeapOp::{Free, Malloc};
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = |below: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % below
        };
        for (round, threads) in [1u32, 2, 3, 4, 8, 9, 12].into_iter().enumerate() {
            let mut orders = vec![0u64; threads as usize];
            let mut blocks = Vec::new();
            for _ in 0..6 * threads {
                let thread = next(u64::from(threads)) as usize;
                let events = (0..1 + next(40))
                    .map(|i| {
                        // Small steps: threads often share a number.
                        orders[thread] += next(3);
                        let op = if i % 3 == 2 { Free } else { Malloc };
                        heap_event(op, orders[thread], 0x1000 + 16 * next(64))
                    })
                    .collect();
                blocks.push((thread as u32 + 1, events));
            }
            let dir = temp_expt(&format!("heap-random-{round}"));
            write_heap_blocks(&dir, &blocks);
            let expt = Experiment::open(&dir).unwrap();
            let (merged, stats) = in_order(&expt);
            assert_eq!(merged, expt.heap_events().unwrap(), "{threads} threads");
            let total: usize = blocks.iter().map(|b| b.1.len()).sum();
            assert_eq!(stats.records, total as u64);
            std::fs::remove_dir_all(&dir).unwrap();
        }
    }

    /// The merge's scan takes the least order number when it is alone, and leaves ties
    /// and threads with no more events to the whole keys.
    #[test]
    fn the_least_head_is_found_without_ties() {
        assert_eq!(super::least(&[7, 3, 9, 4]), Some(1));
        assert_eq!(super::least(&[2, 3, u64::MAX]), Some(0));
        assert_eq!(super::least(&[u64::MAX, u64::MAX, 5]), Some(2));
        assert_eq!(super::least(&[5, 3, 3]), None);
        assert_eq!(super::least(&[3, 3, 1]), Some(2));
        assert_eq!(super::least(&[u64::MAX, u64::MAX]), None);
        assert_eq!(super::least(&[]), None);
    }

    /// Many threads are merged through a heap, to the same order.
    #[test]
    fn heap_events_in_order_merge_many_threads() {
        use crate::heap::HeapOp::{Free, Malloc};
        let dir = temp_expt("heap-many");
        // 12 threads, two blocks each; thread t makes orders t, t + 12, ... (and a
        // free sharing its malloc's number).
        let mut blocks = Vec::new();
        for half in 0..2u64 {
            for t in 0..12u64 {
                let order = |i: u64| t + 12 * (4 * half + i);
                let events = (0..4)
                    .map(|i| match i % 2 {
                        0 => heap_event(Malloc, order(i), 0x100 * (t + 1) + i),
                        _ => heap_event(Free, order(i - 1), 0x100 * (t + 1) + i - 1),
                    })
                    .collect();
                blocks.push((t as u32 + 1, events));
            }
        }
        write_heap_blocks(&dir, &blocks);
        let expt = Experiment::open(&dir).unwrap();
        let (merged, stats) = in_order(&expt);
        assert_eq!(merged.len(), 96);
        assert_eq!(merged, expt.heap_events().unwrap());
        assert_eq!(stats.records, 96);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A thread whose numbers go down (damaged data) is sorted like the rest, as
    /// `heap_events` does; a damaged block gives the records before the damage.
    #[test]
    fn heap_events_in_order_survive_falling_numbers_and_damage() {
        use crate::heap::HeapOp::{Free, Malloc};
        let dir = temp_expt("heap-falling");
        let blocks = vec![
            (
                1,
                vec![heap_event(Malloc, 8, 0x10), heap_event(Free, 2, 0x10)],
            ),
            (
                2,
                vec![heap_event(Malloc, 1, 0x20), heap_event(Malloc, 3, 0x30)],
            ),
        ];
        write_heap_blocks(&dir, &blocks);
        let expt = Experiment::open(&dir).unwrap();
        let (merged, _) = in_order(&expt);
        assert_eq!(merged, expt.heap_events().unwrap());
        assert_eq!(merged.len(), 4);

        // Rising numbers, then a byte that is no record in thread 2's block.
        let blocks = vec![
            (
                1,
                vec![heap_event(Malloc, 0, 0x10), heap_event(Free, 2, 0x10)],
            ),
            (
                2,
                vec![heap_event(Malloc, 1, 0x20), heap_event(Malloc, 3, 0x30)],
            ),
        ];
        write_heap_blocks(&dir, &blocks);
        let mut bytes = std::fs::read(dir.join("heap")).unwrap();
        let second = layout::BLOCK_SIZE;
        let committed = u32::from_le_bytes(bytes[second + 12..second + 16].try_into().unwrap());
        bytes[second + layout::HEADER_SIZE + committed as usize] = 0xff;
        let committed = committed + 1;
        bytes[second + 12..second + 16].copy_from_slice(&committed.to_le_bytes());
        std::fs::write(dir.join("heap"), bytes).unwrap();
        let (merged, stats) = in_order(&expt);
        assert_eq!(merged, expt.heap_events().unwrap());
        assert_eq!(merged.len(), 4);
        assert_eq!(stats.damaged, 1);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The merge finds the blocks from their headers alone: what it reads and counts is
    /// what reading whole blocks finds, wherever the file is cut (in a header, in the
    /// records, at a block's end) and whatever a block holds (garbage, a committed count
    /// past the block's end, a never-claimed block).
    #[test]
    fn heap_blocks_found_from_headers_agree_with_whole_blocks_at_any_cut() {
        use crate::heap::HeapOp::{Free, Malloc};
        let dir = temp_expt("heap-cuts");
        let events = |from: u64| {
            (from..from + 40)
                .map(|n| heap_event(if n % 3 == 0 { Free } else { Malloc }, n, 0x10 * n))
                .collect::<Vec<_>>()
        };
        write_heap_blocks(&dir, &[(1, events(0)), (2, events(40)), (1, events(80))]);
        let mut whole = std::fs::read(dir.join("heap")).unwrap();
        let size = layout::BLOCK_SIZE;
        // Block 1 claims more than a block holds; a never-claimed block and garbage follow.
        let clamped = (size as u32).to_le_bytes();
        whole[size + 12..size + 16].copy_from_slice(&clamped);
        whole.extend(std::iter::repeat_n(0u8, size));
        whole.extend(std::iter::repeat_n(0x5au8, size));
        let used = |block: usize| {
            let at = block * size;
            let committed = u32::from_le_bytes(whole[at + 12..at + 16].try_into().unwrap());
            at + layout::HEADER_SIZE + (committed as usize).min(size - layout::HEADER_SIZE)
        };
        let mut cuts = vec![whole.len()];
        for block in 0..5 {
            let at = block * size;
            cuts.extend([at, at + 1, at + 5, at + 31, at + 32, at + 33, at + 100]);
            if block < 3 {
                cuts.extend([used(block) - 1, used(block), used(block) + 1]);
            }
        }
        for cut in cuts {
            std::fs::write(dir.join("heap"), &whole[..cut]).unwrap();
            let expt = Experiment::open(&dir).unwrap();
            let (merged, stats) = in_order(&expt);
            let (sorted, sorted_stats) = expt.sorted_heap_events().unwrap();
            assert_eq!(merged, sorted, "cut at {cut}");
            assert_eq!(stats, sorted_stats, "cut at {cut}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A FIFO (or any non-regular file) where a data file belongs is an error and a
    /// warning, never a reader blocked forever.
    #[test]
    fn fifos_do_not_block() {
        let dir = temp_expt("fifo");
        for name in ["log", "profile", "stacks", "notes"] {
            let path =
                std::ffi::CString::new(dir.join(name).as_os_str().as_encoded_bytes()).unwrap();
            // SAFETY: a valid NUL-terminated path.
            assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o600) }, 0);
        }
        std::fs::create_dir(dir.join("archives")).unwrap();
        std::fs::create_dir(dir.join("archives/index")).unwrap();
        let expt = Experiment::open(&dir).unwrap();
        let err = expt.log().unwrap_err();
        assert!(err.to_string().contains("not a regular file"), "{err}");
        assert!(expt.clock_events().is_err());
        assert!(expt.stacks().is_err());
        assert!(expt.summary().is_err());
        assert_eq!(expt.notes(), None);
        let warnings = expt.warnings();
        let unreadable: Vec<_> = warnings
            .iter()
            .filter_map(|w| match w {
                Warning::Unreadable { part, .. } => Some(part.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(unreadable, ["log", "profile", "stacks", "archives/index"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn giant_manifest_is_refused() {
        let dir = temp_expt("giant");
        let mut text = b"format=rdbx-experiment\nversion=1\n".to_vec();
        text.resize(1 << 20, b'x');
        std::fs::write(dir.join("manifest"), text).unwrap();
        let err = Experiment::open(&dir).unwrap_err();
        assert!(err.to_string().contains("larger than 65536 bytes"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn warnings_say_what_is_wrong() {
        let dir = temp_expt("warn");
        std::fs::write(
            dir.join("manifest"),
            "format=rdbx-experiment\nversion=1.7\nblock_size=64\n",
        )
        .unwrap();
        std::fs::write(dir.join("log"), "1 end\ngarbage\n2 thread-start tid=x\n").unwrap();
        // One profile block with an event whose stack is missing, one block cut short.
        let mut block = vec![0u8; 64];
        let mut w = layout::BlockWriter::claim(&mut block, KIND_PROFILE, 7, 0, 0).unwrap();
        let event = ClockEvent {
            stack_id: 42,
            ..ClockEvent::default()
        };
        assert!(w.push_clock_event(&event));
        w.commit();
        let mut file = block.clone();
        file.extend_from_slice(&block[..40]);
        std::fs::write(dir.join("profile"), file).unwrap();
        std::fs::create_dir(dir.join("archives")).unwrap();
        std::fs::write(dir.join("archives/index"), "path=/a size=1\nsize=2\n").unwrap();
        let expt = Experiment::open(&dir).unwrap();
        let warnings = expt.warnings();
        let text: Vec<String> = warnings.iter().map(Warning::to_string).collect();
        assert_eq!(
            text,
            [
                "experiment format version 1.7 is newer than this rdbx reads (1.6); data it \
                 does not know is ignored",
                "2 log line(s) could not be read and were skipped",
                "1 block(s) of profile end before their committed records do (still being \
                 written, or the file was cut)",
                "1 clock event(s) refer to 1 stack(s) missing from stacks",
                "1 line(s) of archives/index could not be read: bad archive index line 2 in \
                 PATH: no path="
                    .replace("PATH", &dir.join("archives/index").display().to_string())
                    .as_str(),
            ]
        );
        let (entries, errors) = expt.archive_index_lenient().unwrap();
        assert_eq!((entries.len(), errors.len()), (1, 1));
        assert!(expt.archive_index().is_err());
        let summary = expt.summary().unwrap();
        assert!(summary.warnings().iter().all(|w| warnings.contains(w)));
        std::fs::remove_dir_all(&dir).unwrap();
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
