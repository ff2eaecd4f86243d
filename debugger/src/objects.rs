//! The load objects of the process (executable, shared libraries, the
//! dynamic loader) with their load bias, and symbolization of runtime
//! addresses through them.

use crate::maps::{self, Mapping};
use crate::symbols::{InlineFrame, ObjectFile, ObjectKind, SourceLocation};
use crate::unwind::{CfiTable, ObjectLookup};
use crate::Result;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::OnceLock;

pub struct LoadedObject {
    pub path: PathBuf,
    pub file: Rc<ObjectFile>,
    /// Runtime address minus file address.
    pub bias: u64,
    /// Lowest and highest runtime address of its mappings.
    pub start: u64,
    pub end: u64,
    cfi: OnceLock<Option<CfiTable>>,
}

impl LoadedObject {
    pub fn contains(&self, address: u64) -> bool {
        address >= self.start && address < self.end
    }

    pub fn file_address(&self, runtime: u64) -> u64 {
        runtime.wrapping_sub(self.bias)
    }

    pub fn runtime_address(&self, file: u64) -> u64 {
        file.wrapping_add(self.bias)
    }

    /// The CFI, parsed the first time the unwinder needs it.
    pub fn cfi(&self) -> Option<&CfiTable> {
        self.cfi
            .get_or_init(|| CfiTable::new(self.file.elf_bytes(), self.file.debug_file_bytes()).ok())
            .as_ref()
    }

    /// `libc.so.6` for `/usr/lib/x86_64-linux-gnu/libc.so.6`.
    pub fn short_name(&self) -> String {
        self.path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| self.path.display().to_string())
    }
}

/// What a runtime address is: function, offset, source position.
#[derive(Debug, Clone, Default)]
pub struct Symbolized {
    pub function: Option<String>,
    /// Offset from the start of the function's symbol.
    pub offset: u64,
    pub location: Option<SourceLocation>,
    pub object: Option<String>,
}

#[derive(Default)]
pub struct LoadedObjects {
    pub list: Vec<LoadedObject>,
    cache: HashMap<PathBuf, Rc<ObjectFile>>,
    /// Counts the times `list` was made again: what was looked up in it
    /// under another generation must be looked up again.
    generation: u64,
}

impl LoadedObjects {
    /// Opens (or takes from the cache) the object file at `path`.
    pub fn open(&mut self, path: &Path) -> Result<Rc<ObjectFile>> {
        if let Some(file) = self.cache.get(path) {
            return Ok(file.clone());
        }
        let file = Rc::new(ObjectFile::open(path)?);
        self.cache.insert(path.to_path_buf(), file.clone());
        Ok(file)
    }

    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Before the program runs: just the executable, at its file addresses.
    pub fn set_static(&mut self, path: &Path) -> Result<()> {
        self.generation += 1;
        let file = self.open(path)?;
        let (start, end) = file_extent(&file);
        self.list = vec![LoadedObject {
            path: path.to_path_buf(),
            file,
            bias: 0,
            start,
            end,
            cfi: OnceLock::new(),
        }];
        Ok(())
    }

    /// Re-reads the process's maps. Returns the indexes of objects that
    /// are new since the last refresh; objects no longer mapped are dropped.
    pub fn refresh(&mut self, pid: i32) -> Result<Vec<usize>> {
        self.generation += 1;
        let mappings = maps::read_maps(pid)?;
        let mut by_path: Vec<(PathBuf, Vec<&Mapping>)> = Vec::new();
        for mapping in mappings.iter().filter(|m| m.is_file()) {
            let path = PathBuf::from(&mapping.path);
            match by_path.iter_mut().find(|(p, _)| *p == path) {
                Some((_, list)) => list.push(mapping),
                None => by_path.push((path, vec![mapping])),
            }
        }
        let mut old: Vec<Option<LoadedObject>> = std::mem::take(&mut self.list)
            .into_iter()
            .map(Some)
            .collect();
        let mut new_indexes = Vec::new();
        for (path, mappings) in by_path {
            let start = mappings.iter().map(|m| m.start).min().unwrap_or(0);
            let end = mappings.iter().map(|m| m.end).max().unwrap_or(0);
            let unchanged = old.iter_mut().find(|o| {
                o.as_ref()
                    .is_some_and(|o| o.path == path && o.start == start)
            });
            if let Some(existing) = unchanged.and_then(Option::take) {
                // Still mapped at the same place: keep it and its parsed CFI.
                self.list.push(LoadedObject { end, ..existing });
                continue;
            }
            // Not an ELF file (a data file mapped by the program): skip.
            let Some(file) = self.open_mapped(pid, &path, &mappings) else {
                continue;
            };
            let Some(bias) = load_bias(&file, &mappings) else {
                continue;
            };
            self.list.push(LoadedObject {
                path,
                file,
                bias,
                start,
                end,
                cfi: OnceLock::new(),
            });
            new_indexes.push(self.list.len() - 1);
        }
        Ok(new_indexes)
    }

    /// Opens a file the process maps. Its path is the one inside the
    /// process's mount namespace (a container's libc may not exist here,
    /// or be another file): the same path under /proc/PID/root is tried
    /// first when the process has another root, then the mapping itself
    /// (/proc/PID/map_files, which needs CAP_SYS_ADMIN), then the path as
    /// seen from here.
    fn open_mapped(
        &mut self,
        pid: i32,
        path: &Path,
        mappings: &[&Mapping],
    ) -> Option<Rc<ObjectFile>> {
        if !same_root(pid) {
            let relative = path.strip_prefix("/").unwrap_or(path);
            let through_root = PathBuf::from(format!("/proc/{pid}/root")).join(relative);
            if let Ok(file) = self.open(&through_root) {
                return Some(file);
            }
            if let Some(first) = mappings.first() {
                let mapped = PathBuf::from(format!(
                    "/proc/{pid}/map_files/{:x}-{:x}",
                    first.start, first.end
                ));
                if let Ok(file) = self.open(&mapped) {
                    return Some(file);
                }
            }
        }
        self.open(path).ok()
    }

    pub fn main(&self) -> Option<&LoadedObject> {
        self.list.first()
    }

    pub fn object_at(&self, address: u64) -> Option<&LoadedObject> {
        self.list.iter().find(|o| o.contains(address))
    }

    /// Describes `address`. `lookup` is the address to look up (pc - 1
    /// for a return address, so that a call at the end of a function or
    /// line is attributed correctly).
    pub fn symbolize(&self, lookup: u64) -> Symbolized {
        let Some(object) = self.object_at(lookup) else {
            return Symbolized::default();
        };
        let file_address = object.file_address(lookup);
        let symbol = object.file.symbol_at(file_address);
        Symbolized {
            function: symbol.as_ref().map(|s| s.name.clone()),
            offset: symbol.map(|s| file_address - s.address).unwrap_or(0),
            location: object.file.location_at(file_address),
            object: Some(object.short_name()),
        }
    }

    /// The chain of inlined functions at `lookup`, innermost first.
    pub fn inline_frames(&self, lookup: u64) -> Vec<InlineFrame> {
        match self.object_at(lookup) {
            Some(object) => object.file.inline_frames_at(object.file_address(lookup)),
            None => Vec::new(),
        }
    }
}

impl ObjectLookup for LoadedObjects {
    fn cfi_for(&self, pc: u64) -> Option<(&CfiTable, u64)> {
        let object = self.object_at(pc)?;
        Some((object.cfi()?, object.bias))
    }
}

/// Whether process `pid` sees the same root directory as we do (not in
/// a container or chroot). Unknown counts as the same.
pub fn same_root(pid: i32) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (
        std::fs::metadata(format!("/proc/{pid}/root/")),
        std::fs::metadata("/"),
    ) {
        (Ok(theirs), Ok(ours)) => theirs.dev() == ours.dev() && theirs.ino() == ours.ino(),
        _ => true,
    }
}

/// The range of file addresses the object's segments cover.
fn file_extent(file: &ObjectFile) -> (u64, u64) {
    let start = file.segments().iter().map(|s| s.vaddr).min().unwrap_or(0);
    let end = file
        .segments()
        .iter()
        .map(|s| s.vaddr + s.memsz)
        .max()
        .unwrap_or(0);
    (start, end)
}

/// The load bias of `file` given where its pages are mapped: the mapping
/// of a PT_LOAD segment's first page tells where that segment went.
fn load_bias(file: &ObjectFile, mappings: &[&Mapping]) -> Option<u64> {
    if file.kind() == ObjectKind::Executable {
        return Some(0);
    }
    const PAGE: u64 = 4096;
    for mapping in mappings {
        if let Some(segment) = file
            .segments()
            .iter()
            .find(|s| s.offset & !(PAGE - 1) == mapping.offset)
        {
            return Some(mapping.start.wrapping_sub(segment.vaddr & !(PAGE - 1)));
        }
    }
    None
}
