//! Finding a separate debug file by build-id or `.gnu_debuglink`.

use std::path::{Path, PathBuf};

use object::{Object, ObjectSection};

const DEBUG_ROOT: &str = "/usr/lib/debug";

/// The bytes of the separate debug file for `path`, if one is installed.
pub(crate) fn find_debug_file(
    path: &Path,
    elf: &object::File<'static>,
    build_id: Option<&[u8]>,
) -> Option<&'static [u8]> {
    if let Some(id) = build_id {
        if let Some(data) =
            build_id_path(Path::new(DEBUG_ROOT), id).and_then(|p| super::map_file(&p).ok())
        {
            return Some(data);
        }
    }
    let (name, crc) = debuglink(elf)?;
    debuglink_candidates(path, &name)
        .into_iter()
        .filter(|candidate| candidate != path)
        .filter_map(|candidate| super::map_file(&candidate).ok())
        .find(|data| crc32fast::hash(data) == crc)
}

/// `/usr/lib/debug/.build-id/xx/rest.debug`.
pub(crate) fn build_id_path(root: &Path, id: &[u8]) -> Option<PathBuf> {
    let (first, rest) = id.split_first()?;
    if rest.is_empty() {
        return None;
    }
    let rest: String = rest.iter().map(|b| format!("{b:02x}")).collect();
    Some(
        root.join(".build-id")
            .join(format!("{first:02x}"))
            .join(format!("{rest}.debug")),
    )
}

/// The file name and CRC32 recorded in `.gnu_debuglink`.
fn debuglink(elf: &object::File<'static>) -> Option<(String, u32)> {
    let data = elf.section_by_name(".gnu_debuglink")?.data().ok()?;
    let nul = data.iter().position(|&b| b == 0)?;
    let name = std::str::from_utf8(&data[..nul]).ok()?.to_string();
    let crc_at = (nul + 1).next_multiple_of(4);
    let crc = data.get(crc_at..crc_at + 4)?;
    Some((name, u32::from_le_bytes(crc.try_into().ok()?)))
}

/// Where gdb looks for a debuglink target: beside the file, in `.debug/`
/// beside it, and under the global debug directory.
fn debuglink_candidates(path: &Path, name: &str) -> Vec<PathBuf> {
    let dir = path
        .canonicalize()
        .ok()
        .and_then(|p| p.parent().map(Path::to_path_buf))
        .unwrap_or_else(|| PathBuf::from("."));
    let global = Path::new(DEBUG_ROOT).join(dir.strip_prefix("/").unwrap_or(&dir));
    vec![
        dir.join(name),
        dir.join(".debug").join(name),
        global.join(name),
    ]
}
