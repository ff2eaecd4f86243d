//! Line tables: one CU's line program, parsed on first use.

use std::path::{Path, PathBuf};

use super::dwarf::file_paths;
use super::{LineMatch, LineRange, ObjectFile, SourceLocation, R};
use crate::error::{Error, Result};

#[derive(Debug, Clone, Copy)]
pub(crate) struct LineRow {
    pub(crate) address: u64,
    pub(crate) file: u32,
    pub(crate) line: u32,
    pub(crate) column: u32,
    pub(crate) is_stmt: bool,
    pub(crate) end_sequence: bool,
    /// The producer says the prologue ends here (LLVM sets it; gdb breaks
    /// at the first such row of a function).
    pub(crate) prologue_end: bool,
}

/// A CU's rows, sequences sorted by address, each ending in an
/// end_sequence row; and its file table indexed by DWARF file number.
#[derive(Debug, Default)]
pub(crate) struct LineTable {
    pub(crate) rows: Vec<LineRow>,
    /// (display name, absolute path) per DWARF file index.
    pub(crate) files: Vec<Option<(PathBuf, PathBuf)>>,
}

impl LineTable {
    pub(crate) fn parse(dwarf: &gimli::Dwarf<R>, unit: &gimli::Unit<R>, comp_dir: &Path) -> Self {
        let Some(program) = unit.line_program.clone() else {
            return LineTable::default();
        };
        let mut sequences: Vec<Vec<LineRow>> = Vec::new();
        let mut current = Vec::new();
        let mut rows = program.rows();
        let mut filter = RowFilter::default();
        while let Ok(Some((_, row))) = rows.next_row() {
            let line_row = LineRow {
                address: row.address(),
                file: u32::try_from(row.file_index()).unwrap_or(u32::MAX),
                line: row
                    .line()
                    .map_or(0, |l| u32::try_from(l.get()).unwrap_or(0)),
                column: match row.column() {
                    gimli::ColumnType::LeftEdge => 0,
                    gimli::ColumnType::Column(c) => u32::try_from(c.get()).unwrap_or(0),
                },
                is_stmt: row.is_stmt(),
                end_sequence: row.end_sequence(),
                prologue_end: row.prologue_end(),
            };
            if filter.keeps(&line_row, row.discriminator()) {
                current.push(line_row);
            }
            if row.end_sequence() {
                // Sequences of code discarded by the linker start at 0.
                if current.first().is_some_and(|r| r.address != 0) {
                    sequences.push(std::mem::take(&mut current));
                } else {
                    current.clear();
                }
            }
        }
        sequences.sort_by_key(|s| s.first().map_or(0, |r| r.address));
        let files = file_table(dwarf, unit, rows.header(), comp_dir);
        LineTable {
            rows: sequences.into_iter().flatten().collect(),
            files,
        }
    }

    /// Index of the row describing `addr`: the last row at or before it,
    /// preferring an is_stmt row among those at the same address (as gdb).
    pub(crate) fn row_index(&self, addr: u64) -> Option<usize> {
        let end = self.rows.partition_point(|r| r.address <= addr);
        let last = end.checked_sub(1)?;
        let row = &self.rows[last];
        if row.end_sequence {
            return None;
        }
        let same_address = self.rows[..=last]
            .iter()
            .rev()
            .take_while(|r| r.address == row.address && !r.end_sequence);
        let mut best = last;
        for (back, r) in same_address.enumerate() {
            if r.is_stmt {
                best = last - back;
                break;
            }
        }
        Some(best)
    }

    /// The first row in `[low, high)` flagged prologue_end.
    pub(crate) fn prologue_end_in(&self, low: u64, high: u64) -> Option<u64> {
        let first = self.rows.partition_point(|r| r.address < low);
        self.rows[first..]
            .iter()
            .take_while(|r| r.address < high)
            .find(|r| r.prologue_end && !r.end_sequence)
            .map(|r| r.address)
    }

    pub(crate) fn location(&self, index: usize) -> Option<SourceLocation> {
        let row = self.rows.get(index)?;
        let (file, full_path) = self.files.get(row.file as usize)?.clone()?;
        Some(SourceLocation {
            file,
            full_path,
            line: row.line,
            column: row.column,
        })
    }

    /// Address where the row at `index` ends: the next row with a higher
    /// address.
    pub(crate) fn row_end(&self, index: usize) -> u64 {
        let row = &self.rows[index];
        self.rows[index + 1..]
            .iter()
            .find(|r| r.address > row.address)
            .map_or(u64::MAX, |r| r.address)
    }

    fn matches_file(&self, file: u32, query: &str) -> bool {
        match self.files.get(file as usize) {
            Some(Some((display, full))) => path_matches(display, full, query),
            _ => false,
        }
    }
}

/// The rows gdb keeps of a sequence (its DWARF reader's rules), so that
/// lines, their ranges and stepping agree with gdb's: a line-0 row is
/// dropped (its code belongs to the row before); so is a non-statement row
/// that only switches files at the address of the previous row; and a row
/// repeating the previous row's line once that line has had a non-zero
/// discriminator (clang and gcc split a line's code by discriminator; it
/// stays one line).
#[derive(Debug)]
struct RowFilter {
    /// File and line of the last row kept in this sequence.
    kept_file: u32,
    kept_line: u32,
    /// Line register and address of the previous row, kept or not.
    previous_line: u32,
    previous_address: Option<u64>,
    line_had_discriminator: bool,
}

impl Default for RowFilter {
    fn default() -> Self {
        // The line program's initial registers: file 1, line 1.
        RowFilter {
            kept_file: 1,
            kept_line: 0,
            previous_line: 1,
            previous_address: None,
            line_had_discriminator: false,
        }
    }
}

impl RowFilter {
    fn keeps(&mut self, row: &LineRow, discriminator: u64) -> bool {
        if row.end_sequence {
            *self = RowFilter::default();
            return true;
        }
        if row.line != self.previous_line {
            self.line_had_discriminator = discriminator != 0;
        } else {
            self.line_had_discriminator |= discriminator != 0;
        }
        self.previous_line = row.line;
        let same_address = self.previous_address == Some(row.address);
        self.previous_address = Some(row.address);
        let file_changed = row.file != self.kept_file;
        if row.line == 0 || (file_changed && same_address && !row.is_stmt) {
            return false;
        }
        let keep = file_changed || row.line != self.kept_line || !self.line_had_discriminator;
        if keep {
            self.kept_file = row.file;
            self.kept_line = row.line;
        }
        keep
    }
}

fn file_table(
    dwarf: &gimli::Dwarf<R>,
    unit: &gimli::Unit<R>,
    header: &gimli::LineProgramHeader<R>,
    comp_dir: &Path,
) -> Vec<Option<(PathBuf, PathBuf)>> {
    let count = header.file_names().len() as u64 + 1;
    (0..count)
        .map(|index| {
            let entry = header.file(index)?;
            let name = dwarf.attr_string(unit, entry.path_name()).ok()?;
            let dir = entry
                .directory(header)
                .and_then(|d| dwarf.attr_string(unit, d).ok())
                .map(|d| d.to_string_lossy().into_owned());
            Some(file_paths(
                comp_dir,
                dir.as_deref(),
                &name.to_string_lossy(),
            ))
        })
        .collect()
}

/// `query` names the file: exactly, as a path suffix on a '/' boundary, or
/// by basename.
pub(crate) fn path_matches(display: &Path, full: &Path, query: &str) -> bool {
    let query_path = Path::new(query);
    if display == query_path || full == query_path {
        return true;
    }
    let full_text = full.to_string_lossy();
    let suffix = format!("/{}", query.trim_start_matches("./"));
    full_text.ends_with(&suffix)
}

impl ObjectFile {
    pub fn location_at(&self, addr: u64) -> Option<SourceLocation> {
        let data = self.dwarf.as_ref()?;
        let cu = data.cu_for_address(addr)?;
        let table = cu.lines(&data.dwarf);
        // Line 0 means "no source line" (compiler-generated code).
        table
            .location(table.row_index(addr)?)
            .filter(|l| l.line != 0)
    }

    /// The range of the line at `addr`, as gdb's `find_pc_line` gives it:
    /// from the row deciding the address to the next row at a higher
    /// address. Rows of the same line are not merged (gdb does not: a step
    /// looks at each row's start, where inlined calls may begin).
    pub fn line_range_at(&self, addr: u64) -> Option<LineRange> {
        let data = self.dwarf.as_ref()?;
        let cu = data.cu_for_address(addr)?;
        let table = cu.lines(&data.dwarf);
        let index = table.row_index(addr)?;
        Some(LineRange {
            start: table.rows[index].address,
            end: table.row_end(index),
            location: table.location(index)?,
        })
    }

    /// gdb's line at `addr` (`find_pc_line`): the row deciding it (the
    /// statement row among several at one address), where that row's code
    /// starts and whether it is a statement.
    pub fn line_row_at(&self, addr: u64) -> Option<(u64, SourceLocation, bool)> {
        let data = self.dwarf.as_ref()?;
        let cu = data.cu_for_address(addr)?;
        let table = cu.lines(&data.dwarf);
        let index = table.row_index(addr)?;
        let row = table.rows[index];
        Some((row.address, table.location(index)?, row.is_stmt))
    }

    pub fn is_statement_start(&self, addr: u64) -> bool {
        let Some(data) = self.dwarf.as_ref() else {
            return false;
        };
        let Some(cu) = data.cu_for_address(addr) else {
            return false;
        };
        let table = cu.lines(&data.dwarf);
        let start = table.rows.partition_point(|r| r.address < addr);
        table.rows[start..]
            .iter()
            .take_while(|r| r.address == addr)
            .any(|r| r.is_stmt && !r.end_sequence)
    }

    /// All source files named by the line tables (for completion).
    pub fn source_files(&self) -> Vec<PathBuf> {
        let Some(data) = self.dwarf.as_ref() else {
            return Vec::new();
        };
        let mut files = Vec::new();
        for offset in data.all_cu_offsets() {
            let Some(cu) = data.cu_at(offset) else {
                continue;
            };
            let Some(program) = cu.unit.line_program.as_ref() else {
                continue;
            };
            let table = file_table(&data.dwarf, &cu.unit, program.header(), &cu.comp_dir);
            files.extend(table.into_iter().flatten().map(|(display, _)| display));
        }
        files.sort();
        files.dedup();
        files
    }

    /// Resolve `FILE:LINE` to breakpoint addresses, moving to the next line
    /// with code when the line has none.
    pub fn lines_for(&self, file: &str, line: u32) -> Result<LineMatch> {
        let no_file = || Error::NoSuchFile(file.to_string());
        let data = self.dwarf.as_ref().ok_or_else(no_file)?;
        // Candidate rows: (cu offset, row index), in CUs naming the file.
        let mut candidates = Vec::new();
        let mut file_seen = None;
        for offset in data.all_cu_offsets() {
            let Some(cu) = data.cu_at(offset) else {
                continue;
            };
            if !self.cu_mentions_file(&cu, file) {
                continue;
            }
            let table = cu.lines(&data.dwarf);
            for (i, row) in table.rows.iter().enumerate() {
                if row.end_sequence || !row.is_stmt || !table.matches_file(row.file, file) {
                    continue;
                }
                if file_seen.is_none() {
                    file_seen = table.location(i).map(|l| l.file);
                }
                if row.line >= line {
                    candidates.push((cu.clone(), i, row.line));
                }
            }
        }
        let file_name = file_seen.ok_or_else(no_file)?;
        let best_line =
            candidates
                .iter()
                .map(|c| c.2)
                .min()
                .ok_or_else(|| Error::NoCodeAtLine {
                    file: file.to_string(),
                    line,
                })?;
        let mut addresses = Vec::new();
        let mut scopes_seen = Vec::new();
        let mut reported_line = best_line;
        for (cu, i, row_line) in &candidates {
            if *row_line != best_line {
                continue;
            }
            let address = cu.lines(&data.dwarf).rows[*i].address;
            // gdb keeps the first address per innermost block.
            let scope = self.innermost_scope_key(cu, address);
            if scope.is_some() && scopes_seen.contains(&scope) {
                continue;
            }
            scopes_seen.push(scope);
            let address = match self.function_at(address) {
                Some(f) if f.low_pc == address => {
                    // gdb reports the line after the prologue, if it moved.
                    if addresses.is_empty() && f.breakpoint_address != address {
                        if let Some(l) = &f.location {
                            reported_line = l.line;
                        }
                    }
                    f.breakpoint_address
                }
                _ => address,
            };
            if !addresses.contains(&address) {
                addresses.push(address);
            }
        }
        addresses.sort_unstable();
        Ok(LineMatch {
            requested_line: line,
            line: reported_line,
            file: file_name,
            addresses,
        })
    }

    fn cu_mentions_file(&self, cu: &super::dwarf::CuData, query: &str) -> bool {
        let Some(data) = self.dwarf.as_ref() else {
            return false;
        };
        let Some(program) = cu.unit.line_program.as_ref() else {
            return false;
        };
        file_table(&data.dwarf, &cu.unit, program.header(), &cu.comp_dir)
            .iter()
            .flatten()
            .any(|(display, full)| path_matches(display, full, query))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_queries_match_by_suffix_or_basename() {
        let full = Path::new("/home/u/proj/src/t.c");
        let display = Path::new("src/t.c");
        assert!(path_matches(display, full, "t.c"));
        assert!(path_matches(display, full, "src/t.c"));
        assert!(path_matches(display, full, "/home/u/proj/src/t.c"));
        assert!(!path_matches(display, full, "rc/t.c"));
        assert!(!path_matches(display, full, "u.c"));
    }

    #[test]
    fn display_names_drop_the_compilation_directory() {
        let comp = Path::new("/tmp/build");
        assert_eq!(
            file_paths(comp, Some("/tmp/build"), "t.c"),
            (PathBuf::from("t.c"), PathBuf::from("/tmp/build/t.c"))
        );
        assert_eq!(
            file_paths(comp, Some("/usr/include"), "stdio.h"),
            (
                PathBuf::from("/usr/include/stdio.h"),
                PathBuf::from("/usr/include/stdio.h")
            )
        );
        assert_eq!(
            file_paths(
                Path::new("./stdio-common"),
                Some("./stdio-common"),
                "printf.c"
            )
            .0,
            PathBuf::from("./stdio-common/printf.c")
        );
        assert_eq!(
            file_paths(comp, Some("src"), "m.rs").1,
            PathBuf::from("/tmp/build/src/m.rs")
        );
    }
}
