//! PLACEHOLDER with the agreed signatures; the real module lands from the symbols branch.
#![allow(unused_variables, dead_code)]
use crate::value::Value;
use crate::{Error, Result};
use std::path::{Path, PathBuf};

pub struct ObjectFile { path: PathBuf }
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ObjectKind { Executable, Dynamic }
#[derive(Debug, Clone)]
pub struct Segment { pub vaddr: u64, pub memsz: u64, pub offset: u64, pub filesz: u64, pub executable: bool }
#[derive(Debug, Clone)]
pub struct Symbol { pub name: String, pub linkage_name: String, pub address: u64, pub size: u64, pub is_function: bool }
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceLocation { pub file: PathBuf, pub full_path: PathBuf, pub line: u32, pub column: u32 }
#[derive(Debug, Clone)]
pub struct FunctionInfo { pub name: String, pub linkage_name: Option<String>, pub low_pc: u64, pub high_pc: u64, pub breakpoint_address: u64, pub location: Option<SourceLocation> }
#[derive(Debug, Clone)]
pub struct InlineFrame { pub function: String, pub location: Option<SourceLocation>, pub inlined: bool }
#[derive(Debug, Clone)]
pub struct LineRange { pub start: u64, pub end: u64, pub location: SourceLocation }
#[derive(Debug, Clone)]
pub struct LineMatch { pub requested_line: u32, pub line: u32, pub file: PathBuf, pub addresses: Vec<u64> }
#[derive(Debug, Clone)]
pub struct Variable { name: String }
impl Variable { pub fn name(&self) -> &str { &self.name } pub fn is_parameter(&self) -> bool { false } }
pub trait FrameContext {
    fn read_memory(&self, addr: u64, buf: &mut [u8]) -> Result<()>;
    fn register(&self, dwarf_regno: u16) -> Option<u64>;
    fn cfa(&self) -> Option<u64>;
    fn load_bias(&self) -> u64;
}
impl ObjectFile {
    pub fn open(path: &Path) -> Result<ObjectFile> { Err(Error::Other("stub".into())) }
    pub fn path(&self) -> &Path { &self.path }
    pub fn kind(&self) -> ObjectKind { ObjectKind::Dynamic }
    pub fn entry(&self) -> u64 { 0 }
    pub fn segments(&self) -> &[Segment] { &[] }
    pub fn build_id(&self) -> Option<&[u8]> { None }
    pub fn elf_bytes(&self) -> &'static [u8] { &[] }
    pub fn debug_file_bytes(&self) -> Option<&'static [u8]> { None }
    pub fn has_debug_info(&self) -> bool { false }
    pub fn symbol_at(&self, addr: u64) -> Option<Symbol> { None }
    pub fn lookup_symbol(&self, name: &str) -> Vec<Symbol> { vec![] }
    pub fn find_functions(&self, name: &str) -> Vec<FunctionInfo> { vec![] }
    pub fn function_at(&self, addr: u64) -> Option<FunctionInfo> { None }
    pub fn location_at(&self, addr: u64) -> Option<SourceLocation> { None }
    pub fn inline_frames_at(&self, addr: u64) -> Vec<InlineFrame> { vec![] }
    pub fn line_range_at(&self, addr: u64) -> Option<LineRange> { None }
    pub fn is_statement_start(&self, addr: u64) -> bool { false }
    pub fn lines_for(&self, file: &str, line: u32) -> Result<LineMatch> { Err(Error::NoSuchFile(file.into())) }
    pub fn source_files(&self) -> Vec<PathBuf> { vec![] }
    pub fn function_names(&self) -> Vec<String> { vec![] }
    pub fn parameters_at(&self, addr: u64) -> Vec<Variable> { vec![] }
    pub fn locals_at(&self, addr: u64) -> Vec<Variable> { vec![] }
    pub fn lookup_variable(&self, addr: Option<u64>, name: &str) -> Option<Variable> { None }
    pub fn read_variable(&self, var: &Variable, frame: &dyn FrameContext) -> Result<Value> { Ok(Value::OptimizedOut) }
    pub fn return_value(&self, function_low_pc: u64, rax: u64, xmm0_low: u64) -> Option<Value> { None }
}
