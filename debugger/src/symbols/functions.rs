//! Functions: by name, by address, inline chains and prologue skipping.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use gimli::{AttributeValue, DebugInfoOffset, UnitOffset};

use super::demangle::{demangle, without_parameters};
use super::dwarf::{die_string, CuData, DieRef, Units};
use super::lines::LineTable;
use super::names::function_name_matches;
use super::{FunctionInfo, InlineFrame, ObjectFile, SourceLocation, Symbol, R};

type Die<'a> = gimli::DebuggingInformationEntry<'a, 'a, R>;

/// One DIE on the path from the CU root to an address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Scope {
    pub(crate) offset: UnitOffset,
    pub(crate) tag: gimli::DwTag,
}

/// Whether a DIE's address ranges contain `addr`.
pub(crate) fn die_contains(
    dwarf: &gimli::Dwarf<R>,
    unit: &gimli::Unit<R>,
    entry: &Die,
    addr: u64,
) -> bool {
    let Ok(mut ranges) = dwarf.die_ranges(unit, entry) else {
        return false;
    };
    while let Ok(Some(r)) = ranges.next() {
        if addr >= r.begin && addr < r.end {
            return true;
        }
    }
    false
}

/// The entry range of a function: its low_pc range (or the first range).
fn entry_range(dwarf: &gimli::Dwarf<R>, unit: &gimli::Unit<R>, entry: &Die) -> Option<(u64, u64)> {
    let mut ranges = dwarf.die_ranges(unit, entry).ok()?;
    while let Some(range) = ranges.next().ok()? {
        if range.end > range.begin {
            return Some((range.begin, range.end));
        }
    }
    None
}

/// The subprogram / lexical block / inlined subroutine DIEs containing
/// `addr`, outermost first. Namespaces and types are searched through but
/// not reported.
pub(crate) fn scope_chain(dwarf: &gimli::Dwarf<R>, cu: &CuData, addr: u64) -> Vec<Scope> {
    let mut chain = Vec::new();
    let Some(function) = cu.subprograms(dwarf).containing(addr) else {
        return chain;
    };
    chain.push(Scope {
        offset: function,
        tag: gimli::DW_TAG_subprogram,
    });
    if let Ok(mut tree) = cu.unit.entries_tree(Some(function)) {
        if let Ok(root) = tree.root() {
            let _ = descend(dwarf, &cu.unit, root, addr, &mut chain);
        }
    }
    chain
}

/// A CU's outermost subprograms (those not nested in another function;
/// namespaces and classes are looked through) sorted by start address, so
/// finding the function at an address is a binary search instead of a walk
/// over every DIE of the unit.
pub(crate) struct SubprogramIndex {
    ranges: Vec<SubprogramRange>,
}

#[derive(Debug, Clone, Copy)]
struct SubprogramRange {
    begin: u64,
    end: u64,
    offset: UnitOffset,
    /// The largest `end` of this and every earlier range: where a backward
    /// scan for ranges still containing an address can stop.
    reach: u64,
}

impl SubprogramIndex {
    pub(crate) fn build(dwarf: &gimli::Dwarf<R>, unit: &gimli::Unit<R>) -> SubprogramIndex {
        let mut ranges = Vec::new();
        if let Ok(mut tree) = unit.entries_tree(None) {
            if let Ok(root) = tree.root() {
                let _ = collect_subprograms(dwarf, unit, root, &mut ranges);
            }
        }
        ranges.sort_by_key(|r: &SubprogramRange| (r.begin, r.offset.0));
        let mut reach = 0;
        for range in &mut ranges {
            reach = reach.max(range.end);
            range.reach = reach;
        }
        SubprogramIndex { ranges }
    }

    /// The subprogram containing `addr`; of overlapping ones the first in
    /// DIE order, as a walk of the tree would find.
    pub(crate) fn containing(&self, addr: u64) -> Option<UnitOffset> {
        let end = self.ranges.partition_point(|r| r.begin <= addr);
        self.ranges[..end]
            .iter()
            .rev()
            .take_while(|r| r.reach > addr)
            .filter(|r| addr < r.end)
            .map(|r| r.offset)
            .min_by_key(|o| o.0)
    }
}

fn collect_subprograms(
    dwarf: &gimli::Dwarf<R>,
    unit: &gimli::Unit<R>,
    node: gimli::EntriesTreeNode<R>,
    out: &mut Vec<SubprogramRange>,
) -> gimli::Result<()> {
    let mut children = node.children();
    while let Some(child) = children.next()? {
        let entry = child.entry();
        match entry.tag() {
            gimli::DW_TAG_subprogram => {
                let offset = entry.offset();
                let mut ranges = dwarf.die_ranges(unit, entry)?;
                while let Some(r) = ranges.next()? {
                    if r.end > r.begin {
                        out.push(SubprogramRange {
                            begin: r.begin,
                            end: r.end,
                            offset,
                            reach: 0,
                        });
                    }
                }
            }
            gimli::DW_TAG_namespace
            | gimli::DW_TAG_module
            | gimli::DW_TAG_structure_type
            | gimli::DW_TAG_class_type
            | gimli::DW_TAG_union_type => collect_subprograms(dwarf, unit, child, out)?,
            _ => {}
        }
    }
    Ok(())
}

fn descend(
    dwarf: &gimli::Dwarf<R>,
    unit: &gimli::Unit<R>,
    node: gimli::EntriesTreeNode<R>,
    addr: u64,
    chain: &mut Vec<Scope>,
) -> gimli::Result<bool> {
    let mut children = node.children();
    while let Some(child) = children.next()? {
        let entry = child.entry();
        let tag = entry.tag();
        match tag {
            gimli::DW_TAG_subprogram
            | gimli::DW_TAG_lexical_block
            | gimli::DW_TAG_inlined_subroutine
                if die_contains(dwarf, unit, entry, addr) =>
            {
                chain.push(Scope {
                    offset: entry.offset(),
                    tag,
                });
                descend(dwarf, unit, child, addr, chain)?;
                return Ok(true);
            }
            gimli::DW_TAG_namespace
            | gimli::DW_TAG_module
            | gimli::DW_TAG_structure_type
            | gimli::DW_TAG_class_type
            | gimli::DW_TAG_union_type => {
                let found = descend(dwarf, unit, child, addr, chain)?;
                if found {
                    return Ok(true);
                }
            }
            _ => {}
        }
    }
    Ok(false)
}

/// A DIE's attribute, looked up through DW_AT_specification and
/// DW_AT_abstract_origin (same-unit references).
pub(crate) fn attr_through_origin(
    unit: &gimli::Unit<R>,
    offset: UnitOffset,
    name: gimli::DwAt,
) -> Option<(UnitOffset, AttributeValue<R>)> {
    let mut offset = offset;
    for _ in 0..8 {
        let entry = unit.entry(offset).ok()?;
        if let Some(value) = entry.attr_value(name).ok()? {
            return Some((offset, value));
        }
        let next = [gimli::DW_AT_abstract_origin, gimli::DW_AT_specification]
            .iter()
            .find_map(|&at| match entry.attr_value(at) {
                Ok(Some(AttributeValue::UnitRef(o))) => Some(o),
                _ => None,
            })?;
        offset = next;
    }
    None
}

/// [`attr_through_origin`] across units: the abstract origin of an
/// inlined function (and so of its parameters) may live in another unit
/// (DW_FORM_ref_addr, as rustc emits for code inlined from other crates).
pub(crate) fn attr_through_origin_anywhere(
    units: &Units,
    at: DieRef,
    name: gimli::DwAt,
) -> Option<(DieRef, AttributeValue<R>)> {
    let mut at = at;
    for _ in 0..8 {
        let entry = units.entry(at)?;
        if let Some(value) = entry.attr_value(name).ok()? {
            return Some((at, value));
        }
        at = [gimli::DW_AT_abstract_origin, gimli::DW_AT_specification]
            .iter()
            .find_map(|&origin| units.attr_ref(at, &entry, origin))?;
    }
    None
}

/// (display name, linkage name) of a function DIE.
pub(crate) fn function_name(
    dwarf: &gimli::Dwarf<R>,
    unit: &gimli::Unit<R>,
    offset: UnitOffset,
) -> (String, Option<String>) {
    let string = |at| {
        let (_, value) = attr_through_origin(unit, offset, at)?;
        let s = dwarf.attr_string(unit, value).ok()?;
        Some(s.to_string_lossy().into_owned())
    };
    let linkage =
        string(gimli::DW_AT_linkage_name).or_else(|| string(gimli::DW_AT_MIPS_linkage_name));
    let name = match &linkage {
        Some(l) => demangle(l),
        None => string(gimli::DW_AT_name).unwrap_or_else(|| "??".into()),
    };
    (name, linkage)
}

/// Lazily built index of all concrete functions by every name they can be
/// asked by; only built when the ELF symbol table does not know a name.
pub(crate) struct DieNameIndex {
    map: HashMap<String, Vec<(DebugInfoOffset, UnitOffset)>>,
}

impl DieNameIndex {
    fn build(object: &ObjectFile) -> DieNameIndex {
        let mut map: HashMap<String, Vec<(DebugInfoOffset, UnitOffset)>> = HashMap::new();
        if let Some(data) = object.dwarf.as_ref() {
            for offset in data.all_cu_offsets() {
                if let Some(cu) = data.cu_at(offset) {
                    let _ = index_cu(&data.dwarf, &cu, &mut map);
                }
            }
        }
        DieNameIndex { map }
    }

    pub(crate) fn names(&self) -> impl Iterator<Item = String> + '_ {
        self.map.keys().cloned()
    }
}

/// Indexes a function DIE under each of its names, and under the simple
/// name of each so that `break f` finds `ns::f`.
fn index_under(
    map: &mut HashMap<String, Vec<(DebugInfoOffset, UnitOffset)>>,
    mut keys: Vec<String>,
    die: (DebugInfoOffset, UnitOffset),
) {
    let simple: Vec<String> = keys
        .iter()
        .filter_map(|k| k.rsplit("::").next().map(str::to_string))
        .collect();
    keys.extend(simple);
    keys.sort();
    keys.dedup();
    for key in keys {
        map.entry(key).or_default().push(die);
    }
}

fn index_cu(
    dwarf: &gimli::Dwarf<R>,
    cu: &CuData,
    map: &mut HashMap<String, Vec<(DebugInfoOffset, UnitOffset)>>,
) -> gimli::Result<()> {
    let unit = &cu.unit;
    let qualified = qualified_function_names(dwarf, unit)?;
    // The name gdb gives a function DIE: its own qualified name, else that
    // of the declaration or abstract instance it refers to.
    let dwarf_name = |offset: UnitOffset| {
        let mut offset = offset;
        for _ in 0..8 {
            if let Some(name) = qualified.get(&offset) {
                return Some(name.clone());
            }
            let entry = unit.entry(offset).ok()?;
            offset = [gimli::DW_AT_specification, gimli::DW_AT_abstract_origin]
                .iter()
                .find_map(|&at| match entry.attr_value(at) {
                    Ok(Some(AttributeValue::UnitRef(o))) => Some(o),
                    _ => None,
                })?;
        }
        None
    };
    let mut entries = unit.entries();
    while let Some((_, entry)) = entries.next_dfs()? {
        let concrete = match entry.tag() {
            // Every inlined copy is a location of its function, as in gdb.
            gimli::DW_TAG_inlined_subroutine => true,
            gimli::DW_TAG_subprogram => {
                entry.attr_value(gimli::DW_AT_declaration)?.is_none()
                    && (entry.attr_value(gimli::DW_AT_low_pc)?.is_some()
                        || entry.attr_value(gimli::DW_AT_ranges)?.is_some())
            }
            _ => false,
        };
        if !concrete {
            continue;
        }
        let mut keys: Vec<String> = dwarf_name(entry.offset()).into_iter().collect();
        let (display, linkage) = function_name(dwarf, unit, entry.offset());
        keys.push(without_parameters(&display).to_string());
        keys.push(display);
        keys.extend(linkage);
        index_under(map, keys, (cu.offset, entry.offset()));
    }
    Ok(())
}

/// The qualified DWARF name of every named subprogram DIE of a unit
/// (declarations and abstract instances too): the names of the enclosing
/// namespaces and types joined by `::`, as gdb spells them.
fn qualified_function_names(
    dwarf: &gimli::Dwarf<R>,
    unit: &gimli::Unit<R>,
) -> gimli::Result<HashMap<UnitOffset, String>> {
    let mut names = HashMap::new();
    let mut scopes: Vec<(isize, String)> = Vec::new();
    let mut depth = 0isize;
    let mut entries = unit.entries();
    while let Some((delta, entry)) = entries.next_dfs()? {
        depth += delta;
        while scopes.last().is_some_and(|(d, _)| *d >= depth) {
            scopes.pop();
        }
        let Some(name) = die_string(dwarf, unit, entry, gimli::DW_AT_name) else {
            continue;
        };
        match entry.tag() {
            gimli::DW_TAG_namespace
            | gimli::DW_TAG_structure_type
            | gimli::DW_TAG_class_type
            | gimli::DW_TAG_union_type
            | gimli::DW_TAG_enumeration_type => scopes.push((depth, name)),
            gimli::DW_TAG_subprogram => {
                let mut parts: Vec<&str> = scopes.iter().map(|(_, s)| s.as_str()).collect();
                parts.push(&name);
                names.insert(entry.offset(), parts.join("::"));
            }
            _ => {}
        }
    }
    Ok(names)
}

/// gdb's amd64 prologue analysis: after `[endbr64] push %rbp; mov
/// %rsp,%rbp` when the function sets up a frame, else the start.
fn analyze_frame_setup(code: &[u8], start: u64) -> u64 {
    let mut at = 0;
    if code.starts_with(&[0xf3, 0x0f, 0x1e, 0xfa]) {
        at = 4;
    }
    if code.get(at) != Some(&0x55) {
        return start;
    }
    let rest = code.get(at + 1..).unwrap_or(&[]);
    if rest.starts_with(&[0x48, 0x89, 0xe5]) || rest.starts_with(&[0x48, 0x8b, 0xec]) {
        return start + at as u64 + 4;
    }
    if rest.starts_with(&[0x89, 0xe5]) || rest.starts_with(&[0x8b, 0xec]) {
        return start + at as u64 + 3;
    }
    start
}

/// gdb's `skip_prologue_using_sal` for LLVM code: the end of the first
/// line entry, or the start when two entries share the start address.
fn llvm_prologue_end(table: &LineTable, low: u64, high: u64) -> Option<u64> {
    let index = table.row_index(low)?;
    let row = table.rows[index];
    if row.line == 0 {
        return None;
    }
    // The rows at the start address, past a previous sequence's end.
    let first = table.rows.partition_point(|r| {
        r.address < row.address || (r.address == row.address && r.end_sequence)
    });
    if let Some(next) = table.rows.get(first + 1) {
        if next.line != 0 && !next.end_sequence && next.address == low {
            return Some(low);
        }
    }
    let end = table.row_end(index);
    (end < high).then_some(end)
}

impl ObjectFile {
    pub(crate) fn die_name_index(&self) -> Option<&DieNameIndex> {
        self.dwarf.as_ref()?;
        Some(
            self.function_index
                .get_or_init(|| DieNameIndex::build(self)),
        )
    }

    /// Where gdb's `break FUNC` puts the breakpoint.
    fn breakpoint_address(&self, cu: Option<&CuData>, low: u64, high: u64) -> u64 {
        if let (Some(cu), Some(data)) = (cu, self.dwarf.as_ref()) {
            // gdb 13 honours the producer's prologue_end flag first.
            if let Some(end) = cu.lines(&data.dwarf).prologue_end_in(low, high) {
                return end;
            }
            if !cu.is_llvm() && cu.is_gcc() && cu.has_location_lists() {
                // gdb trusts optimized gcc code's entry address.
                return low;
            }
        }
        self.after_prologue(cu, low, high)
    }

    /// Where gdb's `step` into a function stops (its amd64_skip_prologue,
    /// then on to the next line when that is mid-line): no prologue_end
    /// flag, no trust in gcc's entry address.
    fn after_prologue(&self, cu: Option<&CuData>, low: u64, high: u64) -> u64 {
        let table = match (cu, self.dwarf.as_ref()) {
            (Some(cu), Some(data)) => Some(cu.lines(&data.dwarf)),
            _ => None,
        };
        if let (Some(cu), Some(table)) = (cu, table) {
            if cu.is_llvm() {
                if let Some(end) = llvm_prologue_end(table, low, high) {
                    return end.max(low);
                }
            }
        }
        let code = self.code_bytes(low, 16).unwrap_or(&[]);
        let pc = analyze_frame_setup(code, low);
        let Some(table) = table else { return pc };
        // Mid-line after the frame setup: move to the next line entry.
        match table.row_index(pc) {
            Some(i) if table.rows[i].address != pc => {
                let end = table.row_end(i);
                if low <= end && end < high {
                    end
                } else {
                    pc
                }
            }
            _ => pc,
        }
    }

    /// FunctionInfo for the subprogram DIE at `offset` of `cu`.
    fn function_from_die(&self, cu: &CuData, offset: UnitOffset) -> Option<FunctionInfo> {
        let data = self.dwarf.as_ref()?;
        let entry = cu.unit.entry(offset).ok()?;
        let (low_pc, high_pc) = entry_range(&data.dwarf, &cu.unit, &entry)?;
        let (name, linkage_name) = function_name(&data.dwarf, &cu.unit, offset);
        // gdb breaks at an inlined copy's entry: a prologue is the real
        // function's, long before.
        let (breakpoint_address, step_address) = match entry.tag() {
            gimli::DW_TAG_inlined_subroutine => (low_pc, low_pc),
            _ => (
                self.breakpoint_address(Some(cu), low_pc, high_pc),
                self.after_prologue(Some(cu), low_pc, high_pc),
            ),
        };
        Some(FunctionInfo {
            name,
            linkage_name,
            low_pc,
            high_pc,
            breakpoint_address,
            step_address,
            location: if entry.tag() == gimli::DW_TAG_subprogram {
                self.breakpoint_location(breakpoint_address)
            } else {
                self.location_at(breakpoint_address)
            },
            decl_line: match attr_through_origin(&cu.unit, offset, gimli::DW_AT_decl_line) {
                Some((_, AttributeValue::Udata(line))) => u32::try_from(line).ok(),
                _ => None,
            },
        })
    }

    /// The location gdb reports for `break FUNC` on a real function: when
    /// the address after the prologue is inside inlined code, gdb names the
    /// outermost inlined function's declaration line. (For inlined copies
    /// gdb keeps the plain line, see `function_from_die`.)
    fn breakpoint_location(&self, addr: u64) -> Option<SourceLocation> {
        let mut location = self.location_at(addr)?;
        let data = self.dwarf.as_ref()?;
        let cu = data.cu_for_address(addr)?;
        let chain = scope_chain(&data.dwarf, &cu, addr);
        let outermost_inline = chain
            .iter()
            .find(|s| s.tag == gimli::DW_TAG_inlined_subroutine);
        if let Some(scope) = outermost_inline {
            if let Some((_, AttributeValue::Udata(line))) =
                attr_through_origin(&cu.unit, scope.offset, gimli::DW_AT_decl_line)
            {
                location.line = u32::try_from(line).unwrap_or(location.line);
            }
        }
        Some(location)
    }

    fn function_from_symbol(&self, sym: &Symbol) -> Option<FunctionInfo> {
        if let Some(info) = self.function_at(sym.address) {
            return Some(info);
        }
        let high = sym.address + sym.size.max(1);
        let breakpoint_address = self.breakpoint_address(None, sym.address, high);
        Some(FunctionInfo {
            name: sym.name.clone(),
            linkage_name: (sym.linkage_name != sym.name).then(|| sym.linkage_name.clone()),
            low_pc: sym.address,
            high_pc: high,
            breakpoint_address,
            step_address: breakpoint_address,
            location: None,
            decl_line: None,
        })
    }

    /// Functions named `name`: ELF symbols first, then DWARF; by address.
    pub fn find_functions(&self, name: &str) -> Vec<FunctionInfo> {
        let table = self.symbol_table();
        let mut symbols: Vec<Symbol> = table
            .lookup(name)
            .into_iter()
            .filter(|s| s.is_function)
            .collect();
        if symbols.is_empty() && !name.contains('(') {
            symbols = table.lookup_function_suffix(name);
        }
        let mut found: Vec<FunctionInfo> = symbols
            .iter()
            .filter_map(|s| self.function_from_symbol(s))
            .collect();
        if found.is_empty() {
            found = self.functions_from_dwarf(name);
        } else {
            let mut copies: Vec<FunctionInfo> = found
                .iter()
                .flat_map(|f| self.inlined_copies(f.low_pc))
                .collect();
            // gdb finds the copies inlined in other units too; only a
            // function with an abstract instance has copies, and only then
            // is the whole DWARF index worth building.
            if found
                .iter()
                .any(|f| self.abstract_origin_of(f.low_pc).is_some())
            {
                copies.extend(self.dwarf_functions(name, true));
            }
            found.extend(copies);
        }
        found.sort_by_key(|f| f.low_pc);
        found.dedup_by_key(|f| f.low_pc);
        found
    }

    /// Inlined copies of the function whose out-of-line body starts at
    /// `low_pc` (gdb breaks in those too). Scans that function's CU only,
    /// and only when the function is an instance of an inline function.
    fn inlined_copies(&self, low_pc: u64) -> Vec<FunctionInfo> {
        let (Some(data), Some(origin)) = (self.dwarf.as_ref(), self.abstract_origin_of(low_pc))
        else {
            return Vec::new();
        };
        let Some(cu) = data.cu_for_address(low_pc) else {
            return Vec::new();
        };
        let mut copies = Vec::new();
        let mut entries = cu.unit.entries();
        while let Ok(Some((_, entry))) = entries.next_dfs() {
            if entry.tag() == gimli::DW_TAG_inlined_subroutine
                && matches!(
                    entry.attr_value(gimli::DW_AT_abstract_origin),
                    Ok(Some(AttributeValue::UnitRef(o))) if o == origin
                )
            {
                copies.push(entry.offset());
            }
        }
        copies
            .into_iter()
            .filter_map(|o| self.function_from_die(&cu, o))
            .collect()
    }

    /// The abstract instance of the function whose out-of-line body starts
    /// at `low_pc`: it has one when it is also inlined somewhere.
    fn abstract_origin_of(&self, low_pc: u64) -> Option<UnitOffset> {
        let data = self.dwarf.as_ref()?;
        let cu = data.cu_for_address(low_pc)?;
        let chain = scope_chain(&data.dwarf, &cu, low_pc);
        let function = chain.iter().find(|s| s.tag == gimli::DW_TAG_subprogram)?;
        match cu
            .unit
            .entry(function.offset)
            .ok()?
            .attr_value(gimli::DW_AT_abstract_origin)
        {
            Ok(Some(AttributeValue::UnitRef(o))) => Some(o),
            _ => None,
        }
    }

    fn functions_from_dwarf(&self, name: &str) -> Vec<FunctionInfo> {
        self.dwarf_functions(name, false)
    }

    /// Functions the DWARF index knows by `name`; only inlined copies when
    /// `inlined_only`.
    fn dwarf_functions(&self, name: &str, inlined_only: bool) -> Vec<FunctionInfo> {
        let (Some(index), Some(data)) = (self.die_name_index(), self.dwarf.as_ref()) else {
            return Vec::new();
        };
        let mut dies: Vec<(DebugInfoOffset, UnitOffset)> = match index.map.get(name) {
            Some(exact) => exact.clone(),
            // gdb's wild matching: a suffix of the components, generic
            // arguments left out (`Counter::feed`).
            None => index
                .map
                .iter()
                .filter(|(key, _)| function_name_matches(name, key))
                .flat_map(|(_, dies)| dies.iter().copied())
                .collect(),
        };
        dies.sort_by_key(|&(cu, die)| (cu.0, die.0));
        dies.dedup();
        dies.into_iter()
            .filter_map(|(cu_offset, die)| {
                let cu = data.cu_at(cu_offset)?;
                let tag = cu.unit.entry(die).ok()?.tag();
                if inlined_only && tag != gimli::DW_TAG_inlined_subroutine {
                    return None;
                }
                self.function_from_die(&cu, die)
            })
            .collect()
    }

    /// The outermost (non-inlined) function containing `addr`.
    pub fn function_at(&self, addr: u64) -> Option<FunctionInfo> {
        if let Some(data) = self.dwarf.as_ref() {
            if let Some(cu) = data.cu_for_address(addr) {
                let chain = scope_chain(&data.dwarf, &cu, addr);
                if let Some(scope) = chain.iter().find(|s| s.tag == gimli::DW_TAG_subprogram) {
                    return self.function_from_die(&cu, scope.offset);
                }
            }
        }
        let sym = self.symbol_at(addr).filter(|s| s.is_function)?;
        let high = sym.address + sym.size.max(1);
        let breakpoint_address = self.breakpoint_address(None, sym.address, high);
        Some(FunctionInfo {
            breakpoint_address,
            step_address: breakpoint_address,
            name: sym.name.clone(),
            linkage_name: (sym.linkage_name != sym.name).then(|| sym.linkage_name.clone()),
            low_pc: sym.address,
            high_pc: high,
            location: None,
            decl_line: None,
        })
    }

    /// A key naming the innermost block at `addr` (for grouping lines).
    pub(crate) fn innermost_scope_key(
        &self,
        cu: &CuData,
        addr: u64,
    ) -> Option<(DebugInfoOffset, UnitOffset)> {
        let data = self.dwarf.as_ref()?;
        let chain = scope_chain(&data.dwarf, cu, addr);
        chain.last().map(|s| (cu.offset, s.offset))
    }

    /// The inline chain at `addr`, innermost first; the last frame is the
    /// real function.
    pub fn inline_frames_at(&self, addr: u64) -> Vec<InlineFrame> {
        let Some(data) = self.dwarf.as_ref() else {
            return self.symbol_frame(addr);
        };
        let (Some(context), Some(cu)) = (data.context(), data.cu_for_address(addr)) else {
            return self.symbol_frame(addr);
        };
        let Ok(mut iter) = context.find_frames(addr).skip_all_loads() else {
            return self.symbol_frame(addr);
        };
        let mut frames = Vec::new();
        while let Ok(Some(frame)) = iter.next() {
            let function = frame
                .function
                .as_ref()
                .and_then(|f| f.demangle().ok().map(|n| n.into_owned()))
                .or_else(|| self.symbol_at(addr).map(|s| s.name))
                .unwrap_or_else(|| "??".into());
            let location = if frames.is_empty() {
                self.location_at(addr)
            } else {
                frame
                    .location
                    .as_ref()
                    .and_then(|l| source_location(&cu.comp_dir, l))
            };
            frames.push(InlineFrame {
                function,
                location,
                inlined: true,
            });
        }
        match frames.last_mut() {
            Some(last) => last.inlined = false,
            None => return self.symbol_frame(addr),
        }
        frames
    }

    /// The functions active at `addr`, outermost first: the subprogram and
    /// each inlined call in it, as (unit, entry) offsets. Two addresses
    /// with the same chain are in the same (inlined) frame.
    pub fn function_scopes_at(&self, addr: u64) -> Vec<(usize, usize)> {
        let Some(data) = self.dwarf.as_ref() else {
            return Vec::new();
        };
        let Some(cu) = data.cu_for_address(addr) else {
            return Vec::new();
        };
        scope_chain(&data.dwarf, &cu, addr)
            .iter()
            .filter(|s| {
                matches!(
                    s.tag,
                    gimli::DW_TAG_subprogram | gimli::DW_TAG_inlined_subroutine
                )
            })
            .map(|s| (cu.offset.0, s.offset.0))
            .collect()
    }

    /// Where the code of the `index`-th function of `function_scopes_at`
    /// ends: the end of its highest range.
    pub fn function_scope_end(&self, addr: u64, index: usize) -> Option<u64> {
        let data = self.dwarf.as_ref()?;
        let cu = data.cu_for_address(addr)?;
        let scope = scope_chain(&data.dwarf, &cu, addr)
            .into_iter()
            .filter(|s| {
                matches!(
                    s.tag,
                    gimli::DW_TAG_subprogram | gimli::DW_TAG_inlined_subroutine
                )
            })
            .nth(index)?;
        let entry = cu.unit.entry(scope.offset).ok()?;
        let mut ranges = data.dwarf.die_ranges(&cu.unit, &entry).ok()?;
        let mut end = None;
        while let Ok(Some(range)) = ranges.next() {
            end = end.max(Some(range.end));
        }
        end
    }

    /// How many of the innermost inlined calls at `addr` start there
    /// (`addr - 1` is outside their block), innermost first, stopping at
    /// the first that does not: gdb shows a stop at such an address in the
    /// caller ("not yet entered" inlined frames). The names are those
    /// `inline_frames_at` gives the frames.
    pub fn inlined_calls_starting_at(&self, addr: u64) -> Vec<String> {
        let Some(data) = self.dwarf.as_ref() else {
            return Vec::new();
        };
        let Some(cu) = data.cu_for_address(addr) else {
            return Vec::new();
        };
        let chain = scope_chain(&data.dwarf, &cu, addr);
        let inlined: Vec<&Scope> = chain
            .iter()
            .rev()
            .filter(|s| s.tag == gimli::DW_TAG_inlined_subroutine)
            .collect();
        let frames = self.inline_frames_at(addr);
        let mut starting = Vec::new();
        for (scope, frame) in inlined.iter().zip(&frames) {
            let Ok(entry) = cu.unit.entry(scope.offset) else {
                break;
            };
            let starts = die_contains(&data.dwarf, &cu.unit, &entry, addr)
                && !die_contains(&data.dwarf, &cu.unit, &entry, addr.wrapping_sub(1));
            if !starts || !frame.inlined {
                break;
            }
            starting.push(frame.function.clone());
        }
        starting
    }

    fn symbol_frame(&self, addr: u64) -> Vec<InlineFrame> {
        self.symbol_at(addr)
            .map(|s| InlineFrame {
                function: s.name,
                location: self.location_at(addr),
                inlined: false,
            })
            .into_iter()
            .collect()
    }
}

/// addr2line gives absolute paths; show files of the compilation
/// directory relative to it, as DWARF names them.
fn source_location(comp_dir: &Path, l: &addr2line::Location) -> Option<SourceLocation> {
    let full = PathBuf::from(l.file?);
    let file = full
        .strip_prefix(comp_dir)
        .ok()
        .filter(|_| !comp_dir.as_os_str().is_empty())
        .map(Path::to_path_buf)
        .unwrap_or_else(|| full.clone());
    Some(SourceLocation {
        file,
        full_path: full,
        line: l.line.unwrap_or(0),
        column: l.column.unwrap_or(0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_setup_is_recognized() {
        assert_eq!(
            analyze_frame_setup(&[0x55, 0x48, 0x89, 0xe5, 0x90], 0x1000),
            0x1004
        );
        assert_eq!(
            analyze_frame_setup(&[0xf3, 0x0f, 0x1e, 0xfa, 0x55, 0x48, 0x89, 0xe5], 0x1000),
            0x1008
        );
        // push without mov: frameless for gdb.
        assert_eq!(analyze_frame_setup(&[0x55, 0x53], 0x1000), 0x1000);
        assert_eq!(
            analyze_frame_setup(&[0x48, 0x83, 0xec, 0x08], 0x1000),
            0x1000
        );
    }
}
