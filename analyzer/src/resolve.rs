//! Which file to read an object's symbols from, and symbolizing a PC in it.
//!
//! An experiment records the paths the process had mapped; by analysis
//! time the file may have been rebuilt or deleted. The archive index
//! (written when the run ended) says what the file was (build-id, size,
//! mtime) and may hold a copy: a changed or missing file is replaced by the
//! copy, and without one its PCs stay unnamed rather than wrongly named.

use debugger::symbols::{InlineFrame, ObjectFile, SourceLocation};
use experiment::archive::ArchivedObject;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The file to read for `recorded`, or why there is none.
pub(crate) fn symbol_file(
    recorded: &Path,
    archive: Option<&ArchivedObject>,
    archives_dir: &Path,
) -> Result<PathBuf, String> {
    if recorded.as_os_str().as_encoded_bytes().starts_with(b"[") {
        return Err(format!("{} has no file", recorded.display()));
    }
    let copy = archive
        .and_then(|a| a.copy.as_ref())
        .map(|c| archives_dir.join(c))
        .filter(|c| c.is_file());
    let Some(entry) = archive.filter(|a| !a.is_missing()) else {
        // Not archived (a live experiment, or archiving was off): trust the path.
        return if recorded.is_file() {
            Ok(recorded.to_path_buf())
        } else {
            Err(format!("{} no longer exists", recorded.display()))
        };
    };
    if recorded.is_file() && same_file_as_archived(recorded, entry) {
        return Ok(recorded.to_path_buf());
    }
    match copy {
        Some(copy) => Ok(copy),
        None if recorded.is_file() => Err(format!(
            "{} changed since the experiment was recorded and no copy was archived",
            recorded.display()
        )),
        None => Err(format!(
            "{} no longer exists and no copy was archived",
            recorded.display()
        )),
    }
}

/// Build-ids decide when both have one; otherwise size and mtime.
fn same_file_as_archived(path: &Path, entry: &ArchivedObject) -> bool {
    if let Some(archived_id) = &entry.build_id {
        if let Some(id) = build_id_hex(path) {
            return &id == archived_id;
        }
    }
    let Ok(meta) = std::fs::metadata(path) else {
        return false;
    };
    let mtime_ns = (meta.mtime().max(0) as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(meta.mtime_nsec().max(0) as u64);
    entry.size == Some(meta.len()) && entry.mtime_ns.is_none_or(|m| m == mtime_ns)
}

fn build_id_hex(path: &Path) -> Option<String> {
    use object::Object;
    let data = std::fs::read(path).ok()?;
    let file = object::File::parse(&*data).ok()?;
    let id = file.build_id().ok()??;
    Some(id.iter().map(|b| format!("{b:02x}")).collect())
}

/// What one PC of an object is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PcSymbol {
    Function {
        name: String,
        linkage_name: String,
        address: u64,
        size: u64,
        aliases: Vec<String>,
        source: Option<PathBuf>,
        source_line: Option<u32>,
        /// The line in this function (the call site when code is inlined).
        line: Option<SourceLocation>,
        /// Inlined functions, innermost first, with their current lines.
        inlined: Vec<(String, Option<SourceLocation>)>,
    },
    Plt,
    /// Code of the object no symbol covers, named by its region's start.
    Static {
        region: u64,
    },
    Unknown,
}

/// Symbolizes link-time address `addr` of `file`.
pub(crate) fn symbolize(file: &ObjectFile, addr: u64) -> PcSymbol {
    if let Some(symbol) = file.symbol_at(addr) {
        if symbol.is_function && symbol.name.ends_with("@plt") {
            return PcSymbol::Plt;
        }
    }
    let Some(function) = file.function_at(addr) else {
        return match file.unnamed_region_start(addr) {
            Some(region) => PcSymbol::Static { region },
            None => PcSymbol::Unknown,
        };
    };
    let mut aliases: Vec<String> = file
        .functions_starting_at(function.low_pc)
        .into_iter()
        .map(|s| s.name)
        .collect();
    aliases.sort();
    aliases.dedup();
    // Seed 001: of several names at one address the last in alphabetical
    // order is shown (`qsort_r`, not libc's internal `__GI___qsort_r`).
    // DWARF's name wins only when it is none of the ELF names (a static,
    // a C++ name demangled from DWARF).
    let dwarf_is_an_alias = aliases.contains(&function.name);
    let name = match aliases.last() {
        Some(last) if dwarf_is_an_alias || !file.has_debug_info() => last.clone(),
        _ => function.name.clone(),
    };
    aliases.retain(|a| *a != name);
    let mut frames: Vec<InlineFrame> = file.inline_frames_at(addr);
    let outer = frames.pop();
    let line = outer
        .and_then(|f| f.location)
        .or_else(|| file.location_at(addr));
    let inlined = frames
        .into_iter()
        .filter(|f| f.inlined)
        .map(|f| (f.function, f.location))
        .collect();
    PcSymbol::Function {
        linkage_name: function
            .linkage_name
            .clone()
            .unwrap_or_else(|| name.clone()),
        source: function.location.as_ref().map(|l| l.full_path.clone()),
        source_line: function.decl_line.filter(|&l| l > 0),
        name,
        address: function.low_pc,
        size: function.high_pc.saturating_sub(function.low_pc),
        aliases,
        line,
        inlined,
    }
}

/// The vDSO is in no file: use this process's own (the same kernel's, when
/// analysing on the machine that recorded), written once to a temporary
/// file, if its size matches the recorded mapping's.
pub(crate) fn own_vdso_file(recorded_size: u64) -> Option<PathBuf> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    let line = maps.lines().find(|l| l.ends_with("[vdso]"))?;
    let (start, end) = line.split_whitespace().next()?.split_once('-')?;
    let start = u64::from_str_radix(start, 16).ok()?;
    let end = u64::from_str_radix(end, 16).ok()?;
    let size = end.checked_sub(start)?;
    // The recorded range ends at the last loaded byte, the mapping at a page.
    if size != recorded_size.div_ceil(4096) * 4096 {
        return None;
    }
    let path = std::env::temp_dir().join(format!(
        "rdbx-vdso-{}-{size}.so",
        // SAFETY: getuid cannot fail.
        unsafe { libc::getuid() }
    ));
    if !path.is_file() {
        // SAFETY: [start, end) is this process's vDSO mapping, readable
        // for the life of the process.
        let bytes = unsafe { std::slice::from_raw_parts(start as *const u8, size as usize) };
        let tmp = path.with_extension(format!("tmp{}", std::process::id()));
        std::fs::write(&tmp, bytes).ok()?;
        std::fs::rename(&tmp, &path).ok()?;
    }
    Some(path)
}
