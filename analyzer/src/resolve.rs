//! Which file to read an object's symbols from, and symbolizing a PC in it.
//!
//! An experiment records the paths the process had mapped; by analysis
//! time the file may have been rebuilt or deleted. The archive index
//! (written when the run ended) says what the file was (build-id, size,
//! mtime) and may hold a copy: a changed or missing file is replaced by the
//! copy, and without one its PCs stay unnamed rather than wrongly named.

use debugger::symbols::{FunctionInfo, InlineFrame, ObjectFile, SourceLocation};
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

/// Symbolizes link-time address `addr` of `file`; `vdso` when `file` is
/// the kernel's vDSO (see [`shown_name`]).
pub(crate) fn symbolize(file: &ObjectFile, addr: u64, vdso: bool) -> PcSymbol {
    if let Some(symbol) = file.symbol_at(addr) {
        if symbol.is_function && symbol.name.ends_with("@plt") {
            return PcSymbol::Plt;
        }
    }
    // DWARF's subprogram (or, without DWARF, the ELF symbol) at `addr`.
    let dwarf = file.function_at(addr);
    let Some(code) = function_code(file, addr, dwarf.as_ref()) else {
        return match file.unnamed_region_start(addr) {
            Some(region) => PcSymbol::Static { region },
            None => PcSymbol::Unknown,
        };
    };
    let names = elf_names(file, code.start);
    let dwarf_name = dwarf
        .as_ref()
        .filter(|d| file.has_debug_info() && d.low_pc == code.start)
        .map(|d| d.name.as_str())
        .filter(|&d| !names.iter().any(|n| n.name == d || is_clone_of(&n.name, d)));
    let dwarf_linkage = || dwarf.as_ref().and_then(|f| f.linkage_name.clone());
    let (name, linkage_name) = match (dwarf_name, shown_name(&names, vdso)) {
        (None, Some(shown)) => (shown.name.clone(), shown.linkage.clone()),
        // DWARF's name when it is none of the ELF names (a C++ name
        // demangled from DWARF) and not the origin of a clone.
        (Some(name), _) => (
            name.to_string(),
            dwarf_linkage().unwrap_or_else(|| name.to_string()),
        ),
        (None, None) => (
            code.fallback_name.clone(),
            dwarf_linkage().unwrap_or_else(|| code.fallback_name.clone()),
        ),
    };
    let aliases = names
        .iter()
        .map(|n| n.name.clone())
        .filter(|n| *n != name)
        .collect();
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
        linkage_name,
        source: dwarf
            .as_ref()
            .and_then(|f| f.location.as_ref())
            .map(|l| l.full_path.clone()),
        source_line: dwarf.as_ref().and_then(|f| f.decl_line).filter(|&l| l > 0),
        name,
        address: code.start,
        size: code.size,
        aliases,
        line,
        inlined,
    }
}

/// The code a function row stands for.
struct FunctionCode {
    start: u64,
    size: u64,
    /// The name when no ELF symbol starts at `start`.
    fallback_name: String,
}

/// The function's code around `addr`: the sized ELF function symbol that
/// covers it, else DWARF's subprogram. The symbol decides because gcc's
/// clones (`f.part.0`, `f.isra.0`, `f.constprop.0`) and the cold part of a
/// split function (`f.cold`) are symbols of their own while DWARF describes
/// them as `f`: the manual's "Cloned Functions" shows each copy separately,
/// as gprofng and perf do.
fn function_code(
    file: &ObjectFile,
    addr: u64,
    dwarf: Option<&FunctionInfo>,
) -> Option<FunctionCode> {
    let symbol = file
        .symbol_at(addr)
        .filter(|s| s.is_function && s.size > 0 && addr < s.address.saturating_add(s.size));
    match (symbol, dwarf) {
        (Some(symbol), _) => Some(FunctionCode {
            start: symbol.address,
            size: symbol.size,
            fallback_name: symbol.name,
        }),
        (None, Some(function)) => Some(FunctionCode {
            start: function.low_pc,
            size: function.high_pc.saturating_sub(function.low_pc),
            fallback_name: function.name.clone(),
        }),
        (None, None) => None,
    }
}

/// One name of a function, as shown and as linked.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ElfName {
    name: String,
    linkage: String,
}

/// The names of the function symbols starting at `start`, without symbol
/// versions (`clock_gettime@GLIBC_2.2.5` and `clock_gettime@@GLIBC_2.17`
/// are `clock_gettime`: one function, as gprofng shows it), demangled,
/// sorted by shown name, each once.
fn elf_names(file: &ObjectFile, start: u64) -> Vec<ElfName> {
    let mut names: Vec<ElfName> = file
        .functions_starting_at(start)
        .into_iter()
        .map(|s| {
            let linkage = unversioned(&s.linkage_name).to_string();
            ElfName {
                name: debugger::symbols::demangle(&linkage),
                linkage,
            }
        })
        .collect();
    names.sort_by(|a, b| a.name.cmp(&b.name).then(a.linkage.cmp(&b.linkage)));
    names.dedup_by(|a, b| a.name == b.name);
    names
}

/// `name` without its ELF symbol version (`@VERSION` or `@@VERSION`).
fn unversioned(name: &str) -> &str {
    match name.find('@') {
        Some(at) if at > 0 => &name[..at],
        _ => name,
    }
}

/// Whether `name` is a gcc clone of `origin`: `f.part.0`, `f.cold`,
/// `f.isra.0`, `f.constprop.0`, or for C++ `f(int) [clone .cold]`.
fn is_clone_of(name: &str, origin: &str) -> bool {
    name.strip_prefix(origin)
        .is_some_and(|rest| rest.starts_with('.') || rest.starts_with(" [clone ."))
}

/// The name a function is shown under, of all its names. The manual
/// ("Aliased Functions"): the last in alphabetical order (`qsort_r`, not
/// libc's internal `__GI___qsort_r`). In the vDSO, whose functions are all
/// exported twice (`clock_gettime` and `__vdso_clock_gettime`), the
/// `__vdso_` name, as gprofng and perf show it: it tells the kernel's code
/// from libc's function of the same name that calls it.
fn shown_name(names: &[ElfName], vdso: bool) -> Option<&ElfName> {
    let vdso_name = names.iter().rev().find(|n| n.name.starts_with("__vdso_"));
    match vdso_name {
        Some(name) if vdso => Some(name),
        _ => names.last(),
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
