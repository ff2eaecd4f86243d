//! DWARF sections, the address-to-CU index and the per-CU cache.

use std::borrow::Cow;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use std::sync::Arc;

use gimli::{AttributeValue, DebugInfoOffset, UnitOffset, UnitSectionOffset};
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

/// A DIE anywhere in .debug_info: the unit that holds it and its offset
/// there. References between units (DW_FORM_ref_addr, which rustc and LTO
/// builds use for types and abstract origins) make a DIE's unit part of
/// its address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct DieRef {
    pub(crate) unit: DebugInfoOffset,
    pub(crate) offset: UnitOffset,
}

/// The units of one .debug_info, parsed on first use and kept: what a
/// reference into another unit needs to follow it.
pub(crate) struct Units {
    dwarf: Arc<gimli::Dwarf<R>>,
    /// Append-only, so that DIEs can borrow a unit while others are added.
    parsed: elsa::sync::FrozenMap<DebugInfoOffset, Arc<CuData>>,
    /// Each unit's header offset, in .debug_info order.
    starts: OnceLock<Vec<DebugInfoOffset>>,
}

impl Units {
    fn new(dwarf: Arc<gimli::Dwarf<R>>) -> Units {
        Units {
            dwarf,
            parsed: elsa::sync::FrozenMap::new(),
            starts: OnceLock::new(),
        }
    }

    pub(crate) fn dwarf(&self) -> &gimli::Dwarf<R> {
        &self.dwarf
    }

    /// The unit whose header is at `offset`.
    pub(crate) fn cu(&self, offset: DebugInfoOffset) -> Option<&CuData> {
        if let Some(cu) = self.parsed.get(&offset) {
            return Some(cu);
        }
        let header = self.dwarf.debug_info.header_from_offset(offset).ok()?;
        let unit = self.dwarf.unit(header).ok()?;
        Some(
            self.parsed
                .insert(offset, Arc::new(make_cu(&self.dwarf, offset, unit))),
        )
    }

    /// [`Units::cu`], shared.
    pub(crate) fn cu_arc(&self, offset: DebugInfoOffset) -> Option<Arc<CuData>> {
        self.cu(offset)?;
        self.parsed.map_get(&offset, Arc::clone)
    }

    /// Every unit's header offset, in .debug_info order.
    pub(crate) fn starts(&self) -> &[DebugInfoOffset] {
        self.starts.get_or_init(|| {
            let mut out = Vec::new();
            let mut units = self.dwarf.units();
            while let Ok(Some(header)) = units.next() {
                if let UnitSectionOffset::DebugInfoOffset(o) = header.offset() {
                    out.push(o);
                }
            }
            out
        })
    }

    /// The DIE at a .debug_info offset, in whichever unit holds it.
    pub(crate) fn locate(&self, at: DebugInfoOffset) -> Option<DieRef> {
        let starts = self.starts();
        let unit = starts[..starts.partition_point(|s| *s <= at)].last()?;
        let offset = at.to_unit_offset(&self.cu(*unit)?.unit.header)?;
        Some(DieRef {
            unit: *unit,
            offset,
        })
    }

    /// Where a reference attribute of a DIE of unit `from` points.
    pub(crate) fn reference(
        &self,
        from: DebugInfoOffset,
        value: AttributeValue<R>,
    ) -> Option<DieRef> {
        match value {
            AttributeValue::UnitRef(offset) => Some(DieRef { unit: from, offset }),
            AttributeValue::DebugInfoRef(at) => self.locate(at),
            _ => None,
        }
    }

    /// The DIE `at` points to.
    pub(crate) fn entry(&self, at: DieRef) -> Option<Die<'_>> {
        self.cu(at.unit)?.unit.entry(at.offset).ok()
    }

    /// The gimli unit of `at`.
    pub(crate) fn unit_of(&self, at: DieRef) -> Option<&gimli::Unit<R>> {
        Some(&self.cu(at.unit)?.unit)
    }

    /// Where attribute `name` of the DIE at `at` points.
    pub(crate) fn attr_ref(&self, at: DieRef, entry: &Die, name: gimli::DwAt) -> Option<DieRef> {
        self.reference(at.unit, entry.attr_value(name).ok()??)
    }

    /// A string attribute of the DIE at `at`.
    pub(crate) fn string(&self, at: DieRef, entry: &Die, name: gimli::DwAt) -> Option<String> {
        die_string(&self.dwarf, self.unit_of(at)?, entry, name)
    }
}

type Die<'a> = gimli::DebuggingInformationEntry<'a, 'a, R>;

pub(crate) struct DwarfData {
    pub(crate) dwarf: Arc<gimli::Dwarf<R>>,
    context: OnceLock<Option<addr2line::Context<R>>>,
    cu_ranges: OnceLock<Vec<CuRange>>,
    units: Arc<Units>,
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
        let dwarf = Arc::new(gimli::Dwarf::load(load).map_err(dwarf_error)?);
        Ok(DwarfData {
            units: Arc::new(Units::new(dwarf.clone())),
            dwarf,
            context: OnceLock::new(),
            cu_ranges: OnceLock::new(),
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
        self.units.cu_arc(offset)
    }

    /// The units, shared with the types that outlive a lookup.
    pub(crate) fn units(&self) -> &Arc<Units> {
        &self.units
    }

    /// The unit a .debug_info offset is in (a reference by section offset,
    /// DW_FORM_ref_addr, may point into another unit).
    pub(crate) fn unit_containing(&self, offset: DebugInfoOffset) -> Option<Arc<CuData>> {
        self.units.cu_arc(self.units.locate(offset)?.unit)
    }

    /// All CU offsets, in .debug_info order.
    pub(crate) fn all_cu_offsets(&self) -> Vec<DebugInfoOffset> {
        self.units.starts().to_vec()
    }
}

fn make_cu(dwarf: &gimli::Dwarf<R>, offset: DebugInfoOffset, unit: gimli::Unit<R>) -> CuData {
    let comp_dir = unit
        .comp_dir
        .map(|d| PathBuf::from(d.to_string_lossy().into_owned()))
        .unwrap_or_default();
    let (producer, language) = root_strings(dwarf, &unit).unwrap_or_default();
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
