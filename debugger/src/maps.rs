//! The process's memory map (`/proc/PID/maps`): which files are mapped
//! where, from which the load bias of every object follows.

use crate::{Error, Result};
use std::path::PathBuf;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mapping {
    pub start: u64,
    pub end: u64,
    pub readable: bool,
    pub writable: bool,
    pub executable: bool,
    pub offset: u64,
    /// The file, `[vdso]`-style pseudo names, or empty for anonymous memory.
    pub path: String,
}

impl Mapping {
    pub fn is_file(&self) -> bool {
        self.path.starts_with('/')
    }

    pub fn file_path(&self) -> Option<PathBuf> {
        self.is_file().then(|| PathBuf::from(&self.path))
    }
}

pub fn read_maps(pid: i32) -> Result<Vec<Mapping>> {
    let path = format!("/proc/{pid}/maps");
    let text = std::fs::read_to_string(&path).map_err(|source| Error::Io {
        path: path.into(),
        source,
    })?;
    Ok(text.lines().filter_map(parse_line).collect())
}

/// `7f00-7f10 r-xp 00001000 08:01 1234   /usr/lib/libc.so.6`
fn parse_line(line: &str) -> Option<Mapping> {
    let mut fields = line.splitn(6, ' ');
    let range = fields.next()?;
    let perms = fields.next()?.as_bytes();
    let offset = u64::from_str_radix(fields.next()?, 16).ok()?;
    let _device = fields.next()?;
    let _inode = fields.next()?;
    let path = fields.next().unwrap_or("").trim_start();
    let path = path.strip_suffix(" (deleted)").unwrap_or(path);
    let (start, end) = range.split_once('-')?;
    Some(Mapping {
        start: u64::from_str_radix(start, 16).ok()?,
        end: u64::from_str_radix(end, 16).ok()?,
        readable: perms.first() == Some(&b'r'),
        writable: perms.get(1) == Some(&b'w'),
        executable: perms.get(2) == Some(&b'x'),
        offset,
        path: path.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_file_and_anonymous_lines() {
        let m = parse_line(
            "7ffff7dd3000-7ffff7f28000 r-xp 00026000 fe:00 1200   /usr/lib/x86_64-linux-gnu/libc.so.6",
        )
        .unwrap();
        assert_eq!(m.start, 0x7ffff7dd3000);
        assert!(m.executable && !m.writable);
        assert_eq!(m.offset, 0x26000);
        assert_eq!(m.path, "/usr/lib/x86_64-linux-gnu/libc.so.6");
        let anon = parse_line("7ffff7fc1000-7ffff7fc5000 rw-p 00000000 00:00 0 ").unwrap();
        assert!(!anon.is_file());
        let vdso = parse_line("7ffff7fc5000-7ffff7fc7000 r-xp 00000000 00:00 0   [vdso]").unwrap();
        assert_eq!(vdso.path, "[vdso]");
    }

    #[test]
    fn reads_own_maps() {
        let maps = read_maps(std::process::id() as i32).unwrap();
        assert!(maps.iter().any(|m| m.executable && m.is_file()));
    }
}
