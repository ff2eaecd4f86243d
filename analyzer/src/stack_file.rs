//! Reading an experiment's `stacks` block file one record at a time.
//!
//! `experiment::Experiment::stacks` gives every stack as a `Vec<u64>` in a
//! map: a million stacks 200 frames deep would take 1.6 GB before the
//! analyzer has turned a single PC into an id. The analyzer needs each
//! record once, so this walks the blocks as the experiment crate's reader
//! does (the same rules: holes skipped, damaged and cut blocks counted) and
//! lends out each record in turn.

use crate::{Error, Result};
use experiment::layout::{self, BlockState, StackRecordRef, KIND_STACKS, MAX_STACK_DEPTH};
use experiment::BlockStats;
use experiment::Experiment;
use std::fs::File;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::path::Path;

/// Calls `each` with the committed stack records of each block of `expt`'s
/// `stacks` file, in file order (an id recorded twice comes twice: callers
/// keep one). A block's records come together so that the caller can fetch
/// what it needs for all of them at once.
pub(crate) fn for_each_stack_block(
    expt: &Experiment,
    mut each: impl FnMut(&[StackRecordRef<'_>]),
) -> Result<BlockStats> {
    let path = expt.path().join("stacks");
    let mut stats = BlockStats::default();
    let Some(file) = open_regular(&path)? else {
        return Ok(stats);
    };
    let io = |e| Error::Io {
        path: path.clone(),
        source: e,
    };
    let block_size = expt.manifest().block_size;
    let mut block = vec![0u8; block_size];
    let mut offset = 0u64;
    loop {
        // Holes of a sparse file are never-claimed blocks: count them
        // without reading them.
        let (holes, next) = skip_holes(&file, offset, block_size).map_err(io)?;
        stats.blocks = stats.blocks.saturating_add(holes);
        stats.unused = stats.unused.saturating_add(holes);
        let Some(next) = next else {
            break;
        };
        offset = next;
        let len = read_full_at(&file, &mut block, offset).map_err(io)?;
        if len == 0 {
            break;
        }
        offset = offset.saturating_add(len as u64);
        stats.blocks += 1;
        let bytes = block.get(..len).unwrap_or(&[]);
        match layout::parse_block(bytes, block_size, KIND_STACKS) {
            BlockState::Unused => stats.unused += 1,
            BlockState::CutHeader => stats.cut += 1,
            BlockState::BadHeader(_) | BlockState::Garbage => stats.damaged += 1,
            BlockState::Used(used) => {
                stats.used += 1;
                let (records, damaged) = block_records(used.records, &mut stats);
                each(&records);
                // A record cut by the end of the file is expected while writing.
                if used.clamped || (damaged && !used.cut) {
                    stats.damaged += 1;
                }
                if used.cut {
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

/// The records of one block, and whether its bytes do not parse as whole
/// records.
fn block_records<'a>(
    mut rest: &'a [u8],
    stats: &mut BlockStats,
) -> (Vec<StackRecordRef<'a>>, bool) {
    let mut records = Vec::new();
    while !rest.is_empty() {
        let Some(record) = StackRecordRef::parse(rest) else {
            return (records, true);
        };
        let sane = record.header.stack_id != 0
            && usize::from(record.header.depth) <= MAX_STACK_DEPTH
            && record.status().is_some();
        if !sane {
            return (records, true);
        }
        records.push(record);
        stats.records += 1;
        stats.record_bytes += record.size() as u64;
        rest = rest.get(record.size()..).unwrap_or(&[]);
    }
    (records, false)
}

fn open_regular(path: &Path) -> Result<Option<File>> {
    let io = |e| Error::Io {
        path: path.to_path_buf(),
        source: e,
    };
    let file = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
    {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io(e)),
    };
    if !file.metadata().map_err(io)?.is_file() {
        let e = std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a regular file");
        return Err(io(e));
    }
    Ok(Some(file))
}

fn read_full_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
    let mut filled = 0;
    while let Some(rest) = buf.get_mut(filled..).filter(|r| !r.is_empty()) {
        match file.read_at(rest, offset.saturating_add(filled as u64)) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

/// Whole blocks of holes from `offset` (a block boundary) on, skipped with
/// `SEEK_DATA`, and where to read next (None: only holes follow). Where the
/// file system does not report holes, nothing is skipped.
fn skip_holes(file: &File, offset: u64, block_size: usize) -> std::io::Result<(u64, Option<u64>)> {
    let block_size = block_size.max(1) as u64;
    let Ok(at) = libc::off_t::try_from(offset) else {
        return Ok((0, Some(offset)));
    };
    // SAFETY: lseek on a descriptor we own; it changes only the file
    // offset, which this reader does not use (it reads with pread).
    let data = unsafe { libc::lseek(file.as_raw_fd(), at, libc::SEEK_DATA) };
    if let Ok(data) = u64::try_from(data) {
        let blocks = data.saturating_sub(offset) / block_size;
        return Ok((blocks, Some(offset.saturating_add(blocks * block_size))));
    }
    match std::io::Error::last_os_error().raw_os_error() {
        // No data at or after `offset`: the rest of the file is one hole.
        Some(libc::ENXIO) => {
            let len = file.metadata()?.len();
            Ok((len.saturating_sub(offset).div_ceil(block_size), None))
        }
        _ => Ok((0, Some(offset))),
    }
}
