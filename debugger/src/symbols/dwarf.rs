//! DWARF sections, the address-to-CU index and the per-CU cache.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use std::sync::Arc;

use gimli::{DebugInfoOffset, UnitSectionOffset};
use object::{Object, ObjectSection};

use super::functions::SubprogramIndex;
use super::lines::LineTable;
use super::R;
use crate::error::{Error, Result};

pub(crate) fn has_debug_info(file: &object::File<'static>) -> bool {
    file.section_by_name(".debug_info")
        .is_some_and(|s| s.size() > 0 && s.kind() != object::SectionKind::UninitializedData)
}

pub(crate) fn dwarf_error(e: gimli::Error) -> Error {
    Error::Dwarf(e.to_string())
}

/// One compilation unit with what we derived from it, built on demand.
pub(crate) struct CuData {
    pub(crate) offset: DebugInfoOffset,
    pub(crate) unit: gimli::Unit<R>,
    pub(crate) comp_dir: PathBuf,
    pub(crate) producer: String,
    pub(crate) language: Option<gimli::DwLang>,
    lines: OnceLock<LineTable>,
    has_location_lists: OnceLock<bool>,
    subprograms: OnceLock<SubprogramIndex>,
}

impl CuData {
    pub(crate) fn lines(&self, dwarf: &gimli::Dwarf<R>) -> &LineTable {
        self.lines
            .get_or_init(|| LineTable::parse(dwarf, &self.unit, &self.comp_dir))
    }

    /// Whether any variable of this CU has a location list: gdb then trusts
    /// the function's entry address for breakpoints (optimized code).
    pub(crate) fn has_location_lists(&self) -> bool {
        *self
            .has_location_lists
            .get_or_init(|| scan_for_location_lists(&self.unit).unwrap_or(false))
    }

    /// The CU's outermost functions by address, built on first use.
    pub(crate) fn subprograms(&self, dwarf: &gimli::Dwarf<R>) -> &SubprogramIndex {
        self.subprograms
            .get_or_init(|| SubprogramIndex::build(dwarf, &self.unit))
    }

    pub(crate) fn is_llvm(&self) -> bool {
        self.producer.starts_with("clang ") || self.producer.contains(" LLVM ")
    }

    pub(crate) fn is_gcc(&self) -> bool {
        self.producer.starts_with("GNU ")
    }
}

fn scan_for_location_lists(unit: &gimli::Unit<R>) -> gimli::Result<bool> {
    let mut entries = unit.entries();
    while let Some((_, entry)) = entries.next_dfs()? {
        if !matches!(
            entry.tag(),
            gimli::DW_TAG_variable | gimli::DW_TAG_formal_parameter
        ) {
            continue;
        }
        if let Some(attr) = entry.attr_value(gimli::DW_AT_location)? {
            if matches!(
                attr,
                gimli::AttributeValue::LocationListsRef(_)
                    | gimli::AttributeValue::SecOffset(_)
                    | gimli::AttributeValue::DebugLocListsIndex(_)
            ) {
                return Ok(true);
            }
        }
    }
    Ok(false)
}

#[derive(Debug, Clone, Copy)]
struct CuRange {
    begin: u64,
    end: u64,
    offset: DebugInfoOffset,
}

pub(crate) struct DwarfData {
    pub(crate) dwarf: Arc<gimli::Dwarf<R>>,
    context: OnceLock<Option<addr2line::Context<R>>>,
    cu_ranges: OnceLock<Vec<CuRange>>,
    units: Mutex<HashMap<DebugInfoOffset, Arc<CuData>>>,
    /// Where each unit starts and ends in .debug_info, in order.
    unit_extents: OnceLock<Vec<(usize, usize)>>,
}

impl DwarfData {
    pub(crate) fn load(file: &object::File<'static>) -> Result<DwarfData> {
        let load = |id: gimli::SectionId| -> gimli::Result<R> {
            let data: &'static [u8] = match file.section_by_name(id.name()) {
                Some(section) => match section.uncompressed_data() {
                    Ok(Cow::Borrowed(bytes)) => bytes,
                    // Decompressed sections live as long as the mapping.
                    Ok(Cow::Owned(bytes)) => Box::leak(bytes.into_boxed_slice()),
                    Err(_) => &[],
                },
                None => &[],
            };
            Ok(gimli::EndianSlice::new(data, gimli::LittleEndian))
        };
        let dwarf = gimli::Dwarf::load(load).map_err(dwarf_error)?;
        Ok(DwarfData {
            dwarf: Arc::new(dwarf),
            context: OnceLock::new(),
            cu_ranges: OnceLock::new(),
            units: Mutex::new(HashMap::new()),
            unit_extents: OnceLock::new(),
        })
    }

    /// addr2line's lazy context, for inline frames.
    pub(crate) fn context(&self) -> Option<&addr2line::Context<R>> {
        self.context
            .get_or_init(|| addr2line::Context::from_arc_dwarf(self.dwarf.clone()).ok())
            .as_ref()
    }

    /// Sorted address ranges of all CUs, from .debug_aranges, completed by
    /// the CU DIE's own ranges for CUs aranges does not cover.
    fn cu_ranges(&self) -> &[CuRange] {
        self.cu_ranges.get_or_init(|| {
            let mut ranges = Vec::new();
            let _ = self.collect_cu_ranges(&mut ranges);
            ranges.sort_by_key(|r| (r.begin, r.end));
            ranges
        })
    }

    fn collect_cu_ranges(&self, out: &mut Vec<CuRange>) -> gimli::Result<()> {
        let mut covered = HashSet::new();
        let mut headers = self.dwarf.debug_aranges.headers();
        while let Some(header) = headers.next()? {
            let offset = header.debug_info_offset();
            let mut entries = header.entries();
            while let Some(entry) = entries.next()? {
                if entry.length() > 0 && entry.address() != 0 {
                    covered.insert(offset);
                    out.push(CuRange {
                        begin: entry.address(),
                        end: entry.address().wrapping_add(entry.length()),
                        offset,
                    });
                }
            }
        }
        let mut units = self.dwarf.units();
        while let Some(header) = units.next()? {
            let Some(offset) = header.offset().as_debug_info_offset() else {
                continue;
            };
            if covered.contains(&offset) {
                continue;
            }
            let Ok(unit) = self.dwarf.unit(header) else {
                continue;
            };
            let mut iter = self.dwarf.unit_ranges(&unit)?;
            while let Some(range) = iter.next()? {
                if range.begin != 0 && range.end > range.begin {
                    out.push(CuRange {
                        begin: range.begin,
                        end: range.end,
                        offset,
                    });
                }
            }
        }
        Ok(())
    }

    /// The CU whose code contains `addr`.
    pub(crate) fn cu_for_address(&self, addr: u64) -> Option<Arc<CuData>> {
        let ranges = self.cu_ranges();
        let end = ranges.partition_point(|r| r.begin <= addr);
        // Ranges may nest or overlap; look back over all that start before.
        let offset = ranges[..end]
            .iter()
            .rev()
            .find(|r| addr < r.end)
            .map(|r| r.offset)?;
        self.cu_at(offset)
    }

    /// The CU at a .debug_info offset (cached).
    pub(crate) fn cu_at(&self, offset: DebugInfoOffset) -> Option<Arc<CuData>> {
        let lock = || {
            self.units
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
        };
        if let Some(cu) = lock().get(&offset) {
            return Some(cu.clone());
        }
        let header = self.dwarf.debug_info.header_from_offset(offset).ok()?;
        let unit = self.dwarf.unit(header).ok()?;
        let cu = Arc::new(self.make_cu(offset, unit));
        lock().insert(offset, cu.clone());
        Some(cu)
    }

    fn make_cu(&self, offset: DebugInfoOffset, unit: gimli::Unit<R>) -> CuData {
        let comp_dir = unit
            .comp_dir
            .map(|d| PathBuf::from(d.to_string_lossy().into_owned()))
            .unwrap_or_default();
        let (producer, language) = root_strings(&self.dwarf, &unit).unwrap_or_default();
        CuData {
            offset,
            unit,
            comp_dir,
            producer,
            language,
            lines: OnceLock::new(),
            has_location_lists: OnceLock::new(),
            subprograms: OnceLock::new(),
        }
    }

    /// All CU offsets, in .debug_info order.
    /// The unit a .debug_info offset is in (a reference by section offset,
    /// DW_FORM_ref_addr, may point into another unit).
    pub(crate) fn unit_containing(&self, offset: DebugInfoOffset) -> Option<Arc<CuData>> {
        let extents = self.unit_extents.get_or_init(|| {
            let mut extents = Vec::new();
            let mut units = self.dwarf.units();
            while let Ok(Some(header)) = units.next() {
                if let UnitSectionOffset::DebugInfoOffset(start) = header.offset() {
                    extents.push((start.0, start.0 + header.length_including_self()));
                }
            }
            extents.sort_unstable();
            extents
        });
        let after = extents.partition_point(|(start, _)| *start <= offset.0);
        let (start, end) = *extents.get(after.checked_sub(1)?)?;
        (offset.0 < end).then(|| self.cu_at(DebugInfoOffset(start)))?
    }

    pub(crate) fn all_cu_offsets(&self) -> Vec<DebugInfoOffset> {
        let mut out = Vec::new();
        let mut units = self.dwarf.units();
        while let Ok(Some(header)) = units.next() {
            if let UnitSectionOffset::DebugInfoOffset(o) = header.offset() {
                out.push(o);
            }
        }
        out
    }
}

fn root_strings(
    dwarf: &gimli::Dwarf<R>,
    unit: &gimli::Unit<R>,
) -> gimli::Result<(String, Option<gimli::DwLang>)> {
    let mut entries = unit.entries();
    let Some((_, root)) = entries.next_dfs()? else {
        return Ok((String::new(), None));
    };
    let producer = match root.attr_value(gimli::DW_AT_producer)? {
        Some(attr) => dwarf
            .attr_string(unit, attr)?
            .to_string_lossy()
            .into_owned(),
        None => String::new(),
    };
    let language = match root.attr_value(gimli::DW_AT_language)? {
        Some(gimli::AttributeValue::Language(l)) => Some(l),
        _ => None,
    };
    Ok((producer, language))
}

/// The display name and absolute path of a file named by DWARF: joined
/// with its directory only when that is not the compilation directory.
pub(crate) fn file_paths(comp_dir: &Path, dir: Option<&str>, name: &str) -> (PathBuf, PathBuf) {
    let name_path = Path::new(name);
    let display = match dir {
        _ if name_path.is_absolute() => name_path.to_path_buf(),
        Some(d) if !d.is_empty() && Path::new(d) != comp_dir => Path::new(d).join(name),
        // A relative compilation directory (Debian's path-prefix-mapped
        // builds, e.g. "./stdio-common") stays in the name, as gdb shows.
        _ if comp_dir.is_relative() => comp_dir.join(name_path),
        _ => name_path.to_path_buf(),
    };
    let full = if display.is_absolute() {
        display.clone()
    } else {
        comp_dir.join(&display)
    };
    (display, full)
}

/// A string attribute of a DIE.
pub(crate) fn die_string(
    dwarf: &gimli::Dwarf<R>,
    unit: &gimli::Unit<R>,
    entry: &gimli::DebuggingInformationEntry<R>,
    name: gimli::DwAt,
) -> Option<String> {
    let attr = entry.attr_value(name).ok()??;
    let s = dwarf.attr_string(unit, attr).ok()?;
    Some(s.to_string_lossy().into_owned())
}
