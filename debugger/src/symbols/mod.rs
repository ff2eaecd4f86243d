//! The symbol layer: one ELF file plus its DWARF, queried lazily.
//!
//! Everything here works in FILE addresses (as written in the ELF, before
//! the load bias); callers add or subtract the bias themselves.
//!
//! Nothing is parsed up front beyond the ELF headers: the symbol table, the
//! address-to-CU index, each CU's line program and the DWARF name index are
//! each built on first use and kept.

mod call_sites;
mod debugfile;
mod demangle;
mod dwarf;
mod elf;
mod eval;
mod functions;
mod lang;
mod lines;
mod names;
mod prototype;
mod returns;
mod types;
mod variables;

#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use object::{Object, ObjectKind as ElfKind, ObjectSegment};

use crate::error::{Error, Result};

pub use call_sites::{CallSite, CallTarget};
pub use demangle::{demangle, without_parameters};
pub use names::{function_name_matches, without_generic_arguments};
pub use prototype::{CallType, Prototype, ValueClass};
pub(crate) use types::TypeKind;
pub use types::{AggregateKind, Field, TypeRef, TypeShape};
pub(crate) use types::{ELEMENT_LIMIT, MAX_ARRAY_LAYERS};
pub use variables::{Variable, FS_BASE};

/// The reader type of all DWARF parsing: the data is a leaked mapping.
pub(crate) type R = gimli::EndianSlice<'static, gimli::LittleEndian>;

/// ET_EXEC (fixed addresses) or ET_DYN (PIE or shared library).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ObjectKind {
    Executable,
    Dynamic,
}

/// A PT_LOAD segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    pub vaddr: u64,
    pub memsz: u64,
    pub offset: u64,
    pub filesz: u64,
    pub executable: bool,
}

/// An ELF symbol (or a synthesized `NAME@plt`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Symbol {
    /// Demangled (Rust without the hash, C++ with parameters).
    pub name: String,
    pub linkage_name: String,
    pub address: u64,
    pub size: u64,
    pub is_function: bool,
}

/// A place in the source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceLocation {
    /// The file as DWARF names it (relative to the compilation directory
    /// when it lives there, e.g. "t.c").
    pub file: PathBuf,
    /// Absolute, for reading the source.
    pub full_path: PathBuf,
    pub line: u32,
    pub column: u32,
}

/// A function with the address `break NAME` would use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FunctionInfo {
    pub name: String,
    pub linkage_name: Option<String>,
    pub low_pc: u64,
    pub high_pc: u64,
    /// After the prologue, matching gdb's `break NAME`.
    pub breakpoint_address: u64,
    /// Where `step` into the function stops, as gdb's (its prologue
    /// analysis, without the line table's prologue_end flag).
    pub step_address: u64,
    /// The source location of `breakpoint_address`.
    pub location: Option<SourceLocation>,
    /// The line of the definition (DW_AT_decl_line), in `location`'s file.
    pub decl_line: Option<u32>,
}

/// One frame of the inline chain at an address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InlineFrame {
    pub function: String,
    /// Where execution is in this function (the call site for callers).
    pub location: Option<SourceLocation>,
    pub inlined: bool,
}

/// The contiguous address range around an address having the same line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineRange {
    pub start: u64,
    pub end: u64,
    pub location: SourceLocation,
}

/// The result of resolving `FILE:LINE`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineMatch {
    pub requested_line: u32,
    /// The line that has code (the requested one or the next with code).
    pub line: u32,
    pub file: PathBuf,
    pub addresses: Vec<u64>,
}

/// What reading a variable needs from a stopped frame.
pub trait FrameContext {
    fn read_memory(&self, addr: u64, buf: &mut [u8]) -> Result<()>;
    /// x86-64 DWARF numbering: 0 rax 1 rdx 2 rcx 3 rbx 4 rsi 5 rdi 6 rbp
    /// 7 rsp 8..15 r8..r15 16 rip; 17..32 xmm0..15 (low 64 bits).
    fn register(&self, dwarf_regno: u16) -> Option<u64>;
    /// Canonical frame address (DW_OP_call_frame_cfa).
    fn cfa(&self) -> Option<u64>;
    /// Runtime address minus file address for this object.
    fn load_bias(&self) -> u64;
    /// What register `dwarf_regno` held when the frame's function was
    /// entered (DW_OP_entry_value), when the caller's call site says:
    /// `Ok(None)` when nothing says, an error when the value cannot be
    /// computed (the text gdb shows in its place).
    fn entry_value(&self, _dwarf_regno: u16) -> std::result::Result<Option<u64>, String> {
        Ok(None)
    }
    /// Where the `__thread` block of the shared library whose load bias
    /// is [`FrameContext::load_bias`] starts in the frame's thread, or why
    /// that is not known ([`TLS_UNKNOWN`] when the context cannot tell).
    fn library_tls_block(&self) -> std::result::Result<u64, String> {
        Err(TLS_UNKNOWN.into())
    }
}

/// Why a `__thread` variable has no value when its thread's storage
/// cannot be found (shown as `<thread-local storage>`).
pub const TLS_UNKNOWN: &str = "thread-local storage";

/// An object's PT_TLS segment: the initial image of its `__thread` block.
#[derive(Debug, Clone, Copy)]
pub struct TlsSegment {
    pub vaddr: u64,
    pub memsz: u64,
    pub align: u64,
}

/// One ELF file plus its DWARF (possibly from a separate debug file).
///
/// `Send` (lazily built indexes live in `OnceLock`s and a `Mutex`), not
/// `Sync`: addr2line's lazy context is single-threaded.
pub struct ObjectFile {
    path: PathBuf,
    kind: ObjectKind,
    entry: u64,
    segments: Vec<Segment>,
    build_id: Option<Vec<u8>>,
    elf_data: &'static [u8],
    debug_data: Option<&'static [u8]>,
    elf: object::File<'static>,
    /// The file whose DWARF and symbol table we use (the debug file if any).
    debug_elf: Option<object::File<'static>>,
    symbols: OnceLock<elf::SymbolTable>,
    dwarf: Option<dwarf::DwarfData>,
    function_index: OnceLock<functions::DieNameIndex>,
    /// File-scope variables found (or not) by name in all the CUs: each
    /// search reads every CU, which for a libc with debug information
    /// takes tens of milliseconds, and an expression may name a global
    /// thousands of times.
    globals_by_name:
        std::sync::Mutex<std::collections::HashMap<String, Option<variables::Variable>>>,
    /// The call sites of each function read so far, by its unit and DIE:
    /// entry values and tail-call frames look them up for every frame.
    call_sites: std::sync::Mutex<
        std::collections::HashMap<(gimli::DebugInfoOffset, gimli::UnitOffset), call_sites::Sites>,
    >,
}

/// Map a file for the whole session. Objects are cached by the debugger and
/// loaded once per session, so leaking the mapping is bounded and gives all
/// parsed data (gimli readers, object sections) a `'static` lifetime without
/// self-referential structs.
fn map_file(path: &Path) -> Result<&'static [u8]> {
    let io = |source| Error::Io {
        path: path.to_path_buf(),
        source,
    };
    let file = std::fs::File::open(path).map_err(io)?;
    // SAFETY: the file is mapped read-only; if another process truncates it
    // while we run, reads may fault, the same risk every debugger takes.
    let map = unsafe { memmap2::Mmap::map(&file) }.map_err(io)?;
    let map: &'static memmap2::Mmap = Box::leak(Box::new(map));
    Ok(&map[..])
}

impl ObjectFile {
    /// Open an ELF file and look for its separate debug file.
    pub fn open(path: &Path) -> Result<ObjectFile> {
        let data = map_file(path)?;
        if data.len() < 4 || &data[..4] != b"\x7fELF" {
            return Err(Error::NotElf {
                path: path.to_path_buf(),
            });
        }
        let elf = object::File::parse(data).map_err(|e| Error::BadObject {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        if elf.architecture() != object::Architecture::X86_64 {
            return Err(Error::WrongArchitecture {
                path: path.to_path_buf(),
            });
        }
        let kind = match elf.kind() {
            ElfKind::Executable => ObjectKind::Executable,
            _ => ObjectKind::Dynamic,
        };
        let segments = elf
            .segments()
            .map(|s| {
                let (offset, filesz) = s.file_range();
                Segment {
                    vaddr: s.address(),
                    memsz: s.size(),
                    offset,
                    filesz,
                    executable: matches!(
                        s.flags(),
                        object::SegmentFlags::Elf { p_flags } if p_flags & object::elf::PF_X != 0
                    ),
                }
            })
            .collect();
        let build_id = elf.build_id().ok().flatten().map(<[u8]>::to_vec);
        let has_own_dwarf = dwarf::has_debug_info(&elf);
        let debug_data = if has_own_dwarf {
            None
        } else {
            debugfile::find_debug_file(path, &elf, build_id.as_deref())
        };
        let debug_elf = debug_data.and_then(|d| object::File::parse(d).ok());
        let dwarf_source = debug_elf.as_ref().unwrap_or(&elf);
        let dwarf = if dwarf::has_debug_info(dwarf_source) {
            dwarf::DwarfData::load(dwarf_source).ok()
        } else {
            None
        };
        Ok(ObjectFile {
            path: path.to_path_buf(),
            kind,
            entry: elf.entry(),
            segments,
            build_id,
            elf_data: data,
            debug_data: debug_elf.as_ref().and(debug_data),
            elf,
            debug_elf,
            symbols: OnceLock::new(),
            dwarf,
            function_index: OnceLock::new(),
            globals_by_name: Default::default(),
            call_sites: Default::default(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn kind(&self) -> ObjectKind {
        self.kind
    }

    pub fn entry(&self) -> u64 {
        self.entry
    }

    pub fn segments(&self) -> &[Segment] {
        &self.segments
    }

    pub fn build_id(&self) -> Option<&[u8]> {
        self.build_id.as_deref()
    }

    /// The whole ELF file (the unwinder parses .eh_frame from it).
    pub fn elf_bytes(&self) -> &'static [u8] {
        self.elf_data
    }

    /// The separate debug file, when one was found (for .debug_frame).
    pub fn debug_file_bytes(&self) -> Option<&'static [u8]> {
        self.debug_data
    }

    /// The program header of type `p_type` (PT_TLS, PT_DYNAMIC, ...):
    /// (p_vaddr, p_memsz, p_align).
    fn program_header(&self, p_type: u32) -> Option<(u64, u64, u64)> {
        use object::read::elf::{FileHeader, ProgramHeader};
        let header = object::elf::FileHeader64::<object::Endianness>::parse(self.elf_data).ok()?;
        let endian = header.endian().ok()?;
        let headers = header.program_headers(endian, self.elf_data).ok()?;
        let found = headers.iter().find(|h| h.p_type(endian) == p_type)?;
        Some((
            found.p_vaddr(endian),
            found.p_memsz(endian),
            found.p_align(endian),
        ))
    }

    /// The executable (rather than a shared library): its kind says so,
    /// or, for a PIE, its PT_INTERP.
    pub fn is_executable(&self) -> bool {
        matches!(self.kind, ObjectKind::Executable)
            || self.program_header(object::elf::PT_INTERP).is_some()
    }

    /// The PT_TLS segment, when the object has `__thread` variables.
    pub fn tls_segment(&self) -> Option<TlsSegment> {
        let (vaddr, memsz, align) = self.program_header(object::elf::PT_TLS)?;
        Some(TlsSegment {
            vaddr,
            memsz,
            align,
        })
    }

    /// The file address of the dynamic section (PT_DYNAMIC): the dynamic
    /// linker's `l_ld` for this object is it plus the load bias.
    pub fn dynamic_address(&self) -> Option<u64> {
        self.program_header(object::elf::PT_DYNAMIC)
            .map(|(vaddr, _, _)| vaddr)
    }

    pub fn has_debug_info(&self) -> bool {
        self.dwarf.is_some()
    }

    /// Bytes of the file image at a file address (from the PT_LOAD
    /// segments), for prologue analysis.
    pub(crate) fn code_bytes(&self, addr: u64, len: usize) -> Option<&'static [u8]> {
        let seg = self
            .segments
            .iter()
            .find(|s| addr >= s.vaddr && addr < s.vaddr + s.filesz)?;
        let start = usize::try_from(seg.offset + (addr - seg.vaddr)).ok()?;
        let seg_end = usize::try_from(seg.offset + seg.filesz).ok()?;
        let end = (start + len).min(seg_end).min(self.elf_data.len());
        self.elf_data.get(start..end)
    }

    fn symbol_table(&self) -> &elf::SymbolTable {
        self.symbols
            .get_or_init(|| elf::SymbolTable::build(&self.elf, self.debug_elf.as_ref()))
    }

    /// The ELF symbol containing `addr` (functions preferred).
    pub fn symbol_at(&self, addr: u64) -> Option<Symbol> {
        self.symbol_table().symbol_at(addr)
    }

    /// How gdb names file address `addr`: the symbol holding it, with the
    /// offset into it when not its start (`absentkey`, `buf+4`, `main+17`).
    pub fn symbolic_name(&self, addr: u64) -> Option<String> {
        let symbol = self.symbol_at(addr)?;
        match addr - symbol.address {
            0 => Some(symbol.name),
            offset => Some(format!("{}+{offset}", symbol.name)),
        }
    }

    /// Every function symbol starting at `address` (its aliases).
    pub fn functions_starting_at(&self, address: u64) -> Vec<Symbol> {
        self.symbol_table().functions_starting_at(address)
    }

    /// The start of the symbol-less text region containing `addr`: the end
    /// of the nearest function symbol below, else the start of the
    /// executable segment (how stripped statics are named).
    pub fn unnamed_region_start(&self, addr: u64) -> Option<u64> {
        let segment = self
            .segments
            .iter()
            .find(|s| s.executable && addr >= s.vaddr && addr < s.vaddr + s.memsz)?;
        let start = self
            .symbol_table()
            .unnamed_region_start(addr)
            .filter(|&e| e >= segment.vaddr)
            .unwrap_or(segment.vaddr);
        Some(start)
    }

    /// Symbols by demangled or linkage name.
    pub fn lookup_symbol(&self, name: &str) -> Vec<Symbol> {
        self.symbol_table().lookup(name)
    }

    /// Variable names of the symbol table (globals and file statics).
    pub fn data_names(&self) -> Vec<String> {
        self.symbol_table().data_names()
    }

    /// The sized data symbols (variables: globals and file statics), by
    /// address.
    pub fn data_symbols(&self) -> Vec<Symbol> {
        self.symbol_table().data_symbols()
    }

    /// Function names for tab completion (demangled, sorted, unique).
    pub fn function_names(&self) -> Vec<String> {
        let mut names = self.symbol_table().function_names();
        if let Some(index) = self.die_name_index() {
            names.extend(index.names());
        }
        names.sort();
        names.dedup();
        names
    }
}
