//! `archives/` of a founder experiment: which load objects the experiment saw (build id,
//! size, mtime) and, with `archive copy`, copies of them, so the analyzer can read symbols
//! after the files changed.

use crate::log::{parse_log, Event};
use crate::reader::{descendant_dirs, read_optional};
use crate::text::{percent_decode, percent_encode};
use crate::{Error, Result};
use object::Object;
use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::fs::File;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// One line of `archives/index`. For a file that no longer exists every field but `path` is
/// None (`-` in the file).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArchivedObject {
    pub path: PathBuf,
    /// NT_GNU_BUILD_ID in lowercase hex; None when missing or not an ELF file.
    pub build_id: Option<String>,
    pub size: Option<u64>,
    pub mtime_ns: Option<u64>,
    /// Where the copy is, relative to `archives/` (e.g. `files/ab12…-libc.so.6`).
    pub copy: Option<PathBuf>,
}

impl ArchivedObject {
    /// True when the file did not exist at archive time.
    pub fn is_missing(&self) -> bool {
        self.size.is_none()
    }
}

/// What [`write_archive`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ArchiveSummary {
    /// Entries written to the index.
    pub objects: usize,
    /// Objects whose files no longer exist.
    pub missing: Vec<PathBuf>,
    /// Files copied (0 without copy; an existing copy is not copied again).
    pub copied: usize,
    /// Problems that did not stop the archive (an unreadable descendant log, a failed copy).
    pub warnings: Vec<String>,
}

/// Paths that are not files (`[vdso]`, `[vsyscall]`, empty).
fn is_pseudo_path(path: &Path) -> bool {
    let bytes = path.as_os_str().as_bytes();
    bytes.is_empty() || bytes.starts_with(b"[")
}

/// Every `object` path of the founder's log and its descendants' logs, sorted, deduplicated,
/// pseudo paths skipped.
fn gather_objects(founder: &Path, warnings: &mut Vec<String>) -> Result<BTreeSet<PathBuf>> {
    let mut dirs = vec![founder.to_path_buf()];
    dirs.extend(descendant_dirs(founder));
    let mut paths = BTreeSet::new();
    for (i, dir) in dirs.iter().enumerate() {
        let log = match read_optional(&dir.join("log")) {
            Ok(log) => log,
            // The founder's log must be readable; a descendant's problem is only a warning.
            Err(e) if i == 0 => return Err(e),
            Err(e) => {
                warnings.push(e.to_string());
                continue;
            }
        };
        for event in parse_log(&log) {
            if let Event::Object { path, .. } = event.event {
                if !is_pseudo_path(&path) {
                    paths.insert(path);
                }
            }
        }
    }
    Ok(paths)
}

/// Reads the build id of an ELF file; None when it has none or is not ELF.
fn build_id(path: &Path) -> Option<String> {
    let file = File::open(path).ok()?;
    // SAFETY: the mapping is read-only and private; if another process truncates the file
    // meanwhile we could fault, which is the usual, accepted risk of reading ELF files by
    // mmap (gdb and perf do the same).
    let map = unsafe { memmap2::Mmap::map(&file) }.ok()?;
    let elf = object::File::parse(&*map).ok()?;
    let id = elf.build_id().ok()??;
    Some(id.iter().map(|b| format!("{b:02x}")).collect())
}

/// Looks at one object file and, with `copy`, copies it into `archives/files/`.
fn archive_object(
    path: &Path,
    archives: &Path,
    copy: bool,
    summary: &mut ArchiveSummary,
) -> ArchivedObject {
    let Some(meta) = std::fs::metadata(path).ok().filter(|m| m.is_file()) else {
        summary.missing.push(path.to_path_buf());
        return ArchivedObject {
            path: path.to_path_buf(),
            build_id: None,
            size: None,
            mtime_ns: None,
            copy: None,
        };
    };
    let size = meta.len();
    let mtime_ns = (meta.mtime().max(0) as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(meta.mtime_nsec().max(0) as u64);
    let build_id = build_id(path);
    let copy = copy
        .then(|| copy_object(path, archives, build_id.as_deref(), size, mtime_ns, summary))
        .flatten();
    ArchivedObject {
        path: path.to_path_buf(),
        build_id,
        size: Some(size),
        mtime_ns: Some(mtime_ns),
        copy,
    }
}

/// Copies `path` to `archives/files/<build_id or size-mtime>-<basename>` (through a temporary
/// name, so a copy is never half there); the relative path of the copy.
fn copy_object(
    path: &Path,
    archives: &Path,
    build_id: Option<&str>,
    size: u64,
    mtime_ns: u64,
    summary: &mut ArchiveSummary,
) -> Option<PathBuf> {
    let stem = match build_id {
        Some(id) => id.to_string(),
        None => format!("{size}-{mtime_ns}"),
    };
    let base = path.file_name().unwrap_or(OsStr::new("object"));
    let mut name = std::ffi::OsString::from(format!("{stem}-"));
    name.push(base);
    let relative = Path::new("files").join(&name);
    let target = archives.join(&relative);
    if target.is_file() {
        return Some(relative);
    }
    let mut tmp_name = name.clone();
    tmp_name.push(".tmp");
    let tmp = archives.join("files").join(tmp_name);
    let result = std::fs::copy(path, &tmp).and_then(|_| std::fs::rename(&tmp, &target));
    match result {
        Ok(()) => {
            summary.copied += 1;
            Some(relative)
        }
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            summary
                .warnings
                .push(format!("cannot copy {}: {e}", path.display()));
            None
        }
    }
}

/// Writes `archives/index` of the founder experiment `founder` (and, with `copy`, copies of
/// the objects). Rewrites a previous index.
pub fn write_archive(founder: &Path, copy: bool) -> Result<ArchiveSummary> {
    let mut summary = ArchiveSummary::default();
    let paths = gather_objects(founder, &mut summary.warnings)?;
    let archives = founder.join("archives");
    let files = archives.join("files");
    let dir_to_make = if copy { &files } else { &archives };
    std::fs::create_dir_all(dir_to_make).map_err(|e| Error::io(dir_to_make, e))?;
    let mut index = String::new();
    for path in &paths {
        let entry = archive_object(path, &archives, copy, &mut summary);
        index.push_str(&index_line(&entry));
        summary.objects += 1;
    }
    let tmp = archives.join("index.tmp");
    let target = archives.join("index");
    std::fs::write(&tmp, index).map_err(|e| Error::io(&tmp, e))?;
    std::fs::rename(&tmp, &target).map_err(|e| Error::io(&target, e))?;
    Ok(summary)
}

fn index_line(o: &ArchivedObject) -> String {
    let or_dash = |v: Option<String>| v.unwrap_or_else(|| "-".to_string());
    format!(
        "path={} build_id={} size={} mtime_ns={} copy={}\n",
        percent_encode(o.path.as_os_str().as_bytes()),
        or_dash(o.build_id.clone()),
        or_dash(o.size.map(|s| s.to_string())),
        or_dash(o.mtime_ns.map(|m| m.to_string())),
        or_dash(
            o.copy
                .as_ref()
                .map(|c| percent_encode(c.as_os_str().as_bytes()))
        ),
    )
}

/// Parses `archives/index` text; `path` names the file in errors. Blank lines and lines
/// starting with `#` are skipped; unknown keys are ignored. The first bad line is an error.
pub fn parse_index(text: &str, path: &Path) -> Result<Vec<ArchivedObject>> {
    index_lines(text, path).collect()
}

/// Like [`parse_index`], but a bad line does not stop it: the entries of the good lines,
/// and one error for each bad line.
pub fn parse_index_lenient(text: &str, path: &Path) -> (Vec<ArchivedObject>, Vec<Error>) {
    let mut entries = Vec::new();
    let mut errors = Vec::new();
    for line in index_lines(text, path) {
        match line {
            Ok(entry) => entries.push(entry),
            Err(e) => errors.push(e),
        }
    }
    (entries, errors)
}

/// Each entry line of the index, parsed.
fn index_lines<'a>(
    text: &'a str,
    path: &'a Path,
) -> impl Iterator<Item = Result<ArchivedObject>> + 'a {
    text.lines()
        .enumerate()
        .map(|(n, line)| (n, line.trim()))
        .filter(|(_, line)| !line.is_empty() && !line.starts_with('#'))
        .map(move |(n, line)| parse_index_line(line, n.saturating_add(1), path))
}

/// One `path= build_id= size= mtime_ns= copy=` line; `number` is its 1-based line number.
fn parse_index_line(line: &str, number: usize, path: &Path) -> Result<ArchivedObject> {
    let bad = |reason: &str| Error::BadArchiveIndex {
        path: path.to_path_buf(),
        line: number,
        reason: reason.to_string(),
    };
    let field = |key: &str| -> Option<&str> {
        line.split(' ')
            .filter_map(|t| t.split_once('='))
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v)
            .filter(|v| *v != "-")
    };
    let decoded_path = |key: &str| -> Result<Option<PathBuf>> {
        field(key)
            .map(|v| {
                percent_decode(v)
                    .map(|b| PathBuf::from(OsStr::from_bytes(&b)))
                    .map_err(|_| bad(&format!("bad encoding in {key}=")))
            })
            .transpose()
    };
    let number = |key: &str| -> Result<Option<u64>> {
        field(key)
            .map(|v| v.parse().map_err(|_| bad(&format!("bad number in {key}="))))
            .transpose()
    };
    Ok(ArchivedObject {
        path: decoded_path("path")?.ok_or_else(|| bad("no path="))?,
        build_id: field("build_id").map(str::to_string),
        size: number("size")?,
        mtime_ns: number("mtime_ns")?,
        copy: decoded_path("copy")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_roundtrip() {
        let entries = vec![
            ArchivedObject {
                path: "/lib/a b.so".into(),
                build_id: Some("abcdef".into()),
                size: Some(10),
                mtime_ns: Some(20),
                copy: Some("files/abcdef-a b.so".into()),
            },
            ArchivedObject {
                path: "/gone".into(),
                build_id: None,
                size: None,
                mtime_ns: None,
                copy: None,
            },
        ];
        let text: String = entries.iter().map(index_line).collect();
        assert!(text.contains("path=/gone build_id=- size=- mtime_ns=- copy=-\n"));
        let p = Path::new("index");
        assert_eq!(
            parse_index(&format!("# header\n\n{text}"), p).unwrap(),
            entries
        );
        assert!(entries[1].is_missing());
        let err = parse_index("build_id=-\n", p).unwrap_err();
        assert!(err.to_string().contains("line 1"), "{err}");
        assert!(parse_index("path=/x size=ten\n", p).is_err());
    }

    #[test]
    fn pseudo_paths() {
        assert!(is_pseudo_path(Path::new("[vdso]")));
        assert!(is_pseudo_path(Path::new("")));
        assert!(!is_pseudo_path(Path::new("/lib/x.so")));
    }
}
