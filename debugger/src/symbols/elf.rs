//! The ELF symbol table: address lookup, name lookup and PLT stubs.

use std::collections::HashMap;
use std::sync::OnceLock;

use object::{Object, ObjectSection, ObjectSymbol, ObjectSymbolTable, RelocationTarget};

use super::demangle::{demangle, without_parameters};
use super::Symbol;

/// How far back from an address we look for a containing symbol; sized
/// symbols overlapping a later symbol's start are rare.
const BACKWARD_SEARCH_LIMIT: usize = 64;

#[derive(Debug, Clone)]
struct RawSymbol {
    linkage: &'static str,
    address: u64,
    size: u64,
    is_function: bool,
    /// Index of the section holding the symbol (for zero-size symbols).
    section: Option<usize>,
}

/// A synthesized `NAME@plt` stub.
#[derive(Debug, Clone)]
struct PltEntry {
    name: String,
    address: u64,
    size: u64,
}

pub(crate) struct SymbolTable {
    /// Sorted by address.
    symbols: Vec<RawSymbol>,
    plt: Vec<PltEntry>,
    /// Address ranges of sections, to keep zero-size symbols in their own.
    sections: Vec<(usize, u64, u64)>,
    by_linkage: OnceLock<HashMap<&'static str, Vec<usize>>>,
    /// Demangled names, and C++ names without parameters. Built only when a
    /// lookup misses the linkage names, since demangling everything costs.
    by_demangled: OnceLock<HashMap<String, Vec<usize>>>,
}

impl SymbolTable {
    /// Use the debug file's full symbol table when the stripped main file
    /// has none; fall back to .dynsym.
    pub(crate) fn build(
        elf: &object::File<'static>,
        debug: Option<&object::File<'static>>,
    ) -> SymbolTable {
        let mut symbols = Vec::new();
        let source = if elf.symbol_table().is_some() {
            Some(elf)
        } else {
            debug.filter(|d| d.symbol_table().is_some())
        };
        match source {
            Some(file) => collect_symbols(file.symbols(), &mut symbols),
            None => collect_symbols(elf.dynamic_symbols(), &mut symbols),
        }
        symbols.sort_by_key(|s| (s.address, !s.is_function, u64::MAX - s.size));
        let sections = elf
            .sections()
            .filter(|s| s.address() != 0)
            .map(|s| (s.index().0, s.address(), s.address() + s.size()))
            .collect();
        SymbolTable {
            symbols,
            plt: plt_entries(elf),
            sections,
            by_linkage: OnceLock::new(),
            by_demangled: OnceLock::new(),
        }
    }

    pub(crate) fn symbol_at(&self, addr: u64) -> Option<Symbol> {
        if let Some(p) = self
            .plt
            .iter()
            .find(|p| addr >= p.address && addr < p.address + p.size)
        {
            return Some(Symbol {
                name: p.name.clone(),
                linkage_name: p.name.clone(),
                address: p.address,
                size: p.size,
                is_function: true,
            });
        }
        let end = self.symbols.partition_point(|s| s.address <= addr);
        let candidates = self.symbols[..end].iter().rev().take(BACKWARD_SEARCH_LIMIT);
        let mut data_hit = None;
        let mut zero_size = None;
        for s in candidates {
            let contains = addr < s.address.saturating_add(s.size);
            if contains && s.is_function {
                return Some(to_symbol(s));
            }
            if contains && data_hit.is_none() {
                data_hit = Some(s);
            }
            if s.size == 0 && zero_size.is_none() {
                zero_size = Some(s);
            }
        }
        data_hit
            .or_else(|| zero_size.filter(|s| self.same_section(s, addr)))
            .map(to_symbol)
    }

    fn same_section(&self, s: &RawSymbol, addr: u64) -> bool {
        let Some(index) = s.section else {
            return false;
        };
        self.sections
            .iter()
            .any(|&(i, start, end)| i == index && addr >= start && addr < end)
    }

    fn linkage_index(&self) -> &HashMap<&'static str, Vec<usize>> {
        self.by_linkage.get_or_init(|| {
            let mut map: HashMap<&'static str, Vec<usize>> = HashMap::new();
            for (i, s) in self.symbols.iter().enumerate() {
                map.entry(s.linkage).or_default().push(i);
            }
            map
        })
    }

    fn demangled_index(&self) -> &HashMap<String, Vec<usize>> {
        self.by_demangled.get_or_init(|| {
            let mut map: HashMap<String, Vec<usize>> = HashMap::new();
            for (i, s) in self.symbols.iter().enumerate() {
                if !s.linkage.starts_with("_Z") && !s.linkage.starts_with("_R") {
                    continue;
                }
                let full = demangle(s.linkage);
                let short = without_parameters(&full).to_string();
                if short != full {
                    map.entry(short).or_default().push(i);
                }
                map.entry(full).or_default().push(i);
            }
            map
        })
    }

    /// Symbols named `name` (linkage, demangled, or C++ without params).
    pub(crate) fn lookup(&self, name: &str) -> Vec<Symbol> {
        self.lookup_indices(name)
            .into_iter()
            .map(|i| to_symbol(&self.symbols[i]))
            .chain(self.plt.iter().filter(|p| p.name == name).map(|p| Symbol {
                name: p.name.clone(),
                linkage_name: p.name.clone(),
                address: p.address,
                size: p.size,
                is_function: true,
            }))
            .collect()
    }

    fn lookup_indices(&self, name: &str) -> Vec<usize> {
        if let Some(hits) = self.linkage_index().get(name) {
            return hits.clone();
        }
        self.demangled_index()
            .get(name)
            .cloned()
            .unwrap_or_default()
    }

    /// Function symbols whose demangled name ends in `::name` (how `break
    /// f` finds `crate::m::f` or `ns::f`). Scans all names: only used after
    /// exact lookups missed.
    pub(crate) fn lookup_function_suffix(&self, name: &str) -> Vec<Symbol> {
        let suffix = format!("::{name}");
        self.demangled_index()
            .iter()
            .filter(|(k, _)| k.ends_with(&suffix))
            .flat_map(|(_, v)| v.iter())
            .map(|&i| &self.symbols[i])
            .filter(|s| s.is_function)
            .map(to_symbol)
            .collect()
    }

    /// Every function symbol starting exactly at `address` (aliases: weak
    /// and strong names of one piece of code).
    pub(crate) fn functions_starting_at(&self, address: u64) -> Vec<Symbol> {
        let first = self.symbols.partition_point(|s| s.address < address);
        self.symbols[first..]
            .iter()
            .take_while(|s| s.address == address)
            .filter(|s| s.is_function)
            .map(to_symbol)
            .collect()
    }

    /// Where the text region around `addr` that no function symbol covers
    /// begins: the end of the nearest function symbol below it (None when
    /// there is none).
    pub(crate) fn unnamed_region_start(&self, addr: u64) -> Option<u64> {
        let end = self.symbols.partition_point(|s| s.address <= addr);
        self.symbols[..end]
            .iter()
            .filter(|s| s.is_function)
            .map(|s| s.address.saturating_add(s.size))
            .filter(|&e| e <= addr)
            .max()
    }

    /// Names of sized data symbols (variables), for "did you mean".
    pub(crate) fn data_names(&self) -> Vec<String> {
        self.symbols
            .iter()
            .filter(|s| !s.is_function && s.size > 0)
            .map(|s| demangle(s.linkage))
            .collect()
    }

    /// Sized data symbols (variables), by address.
    pub(crate) fn data_symbols(&self) -> Vec<Symbol> {
        self.symbols
            .iter()
            .filter(|s| !s.is_function && s.size > 0)
            .map(to_symbol)
            .collect()
    }

    pub(crate) fn function_names(&self) -> Vec<String> {
        self.symbols
            .iter()
            .filter(|s| s.is_function)
            .map(|s| demangle(s.linkage))
            .collect()
    }
}

fn to_symbol(s: &RawSymbol) -> Symbol {
    Symbol {
        name: demangle(s.linkage),
        linkage_name: s.linkage.to_string(),
        address: s.address,
        size: s.size,
        is_function: s.is_function,
    }
}

fn collect_symbols<'a, I>(iter: I, out: &mut Vec<RawSymbol>)
where
    I: Iterator<Item = object::Symbol<'static, 'a>>,
{
    for sym in iter {
        let is_function = sym.kind() == object::SymbolKind::Text;
        let wanted = matches!(
            sym.kind(),
            object::SymbolKind::Text | object::SymbolKind::Data | object::SymbolKind::Unknown
        );
        if !wanted || sym.is_undefined() || sym.address() == 0 {
            continue;
        }
        let Ok(name) = sym.name() else { continue };
        if name.is_empty() || name.starts_with(".L") || name.starts_with("$") {
            continue;
        }
        out.push(RawSymbol {
            linkage: name,
            address: sym.address(),
            size: sym.size(),
            is_function,
            section: sym.section_index().map(|i| i.0),
        });
    }
}

/// Names the stubs of .plt, .plt.sec and .plt.got by decoding each stub's
/// `jmp *GOT(%rip)` and finding the dynamic relocation of that GOT slot.
fn plt_entries(elf: &object::File<'static>) -> Vec<PltEntry> {
    let mut slot_names: HashMap<u64, String> = HashMap::new();
    if let (Some(relocs), Some(dynsyms)) = (elf.dynamic_relocations(), elf.dynamic_symbol_table()) {
        for (offset, reloc) in relocs {
            if let RelocationTarget::Symbol(index) = reloc.target() {
                if let Some(name) = dynsyms
                    .symbol_by_index(index)
                    .ok()
                    .and_then(|s| s.name().ok())
                {
                    if !name.is_empty() {
                        slot_names.insert(offset, name.to_string());
                    }
                }
            }
        }
    }
    let mut entries = Vec::new();
    for section in elf.sections() {
        let stride = match section.name() {
            Ok(".plt") | Ok(".plt.sec") => 16,
            Ok(".plt.got") => 8,
            _ => continue,
        };
        let Ok(data) = section.data() else { continue };
        for (i, stub) in data.chunks(stride).enumerate() {
            let address = section.address() + (i * stride) as u64;
            let Some(slot) = got_slot_of_stub(stub, address) else {
                continue;
            };
            if let Some(name) = slot_names.get(&slot) {
                entries.push(PltEntry {
                    name: format!("{name}@plt"),
                    address,
                    size: stride as u64,
                });
            }
        }
    }
    entries
}

/// The GOT slot a PLT stub jumps through: finds `ff 25 rel32` (optionally
/// after endbr64 / bnd prefixes) and resolves it RIP-relative.
fn got_slot_of_stub(stub: &[u8], stub_address: u64) -> Option<u64> {
    let at = stub.windows(2).take(8).position(|w| w == [0xff, 0x25])?;
    let rel = stub.get(at + 2..at + 6)?;
    let rel = i32::from_le_bytes(rel.try_into().ok()?);
    let next_insn = stub_address + at as u64 + 6;
    Some(next_insn.wrapping_add_signed(i64::from(rel)))
}
