//! PLACEHOLDER with the agreed signatures; the real module lands from the unwind branch.
#![allow(unused_variables, dead_code)]
use crate::Result;
pub const RIP: usize = 16; pub const RSP: usize = 7; pub const RBP: usize = 6;
#[derive(Clone, Copy, Default, Debug)]
pub struct UnwindRegs { pub regs: [Option<u64>; 17] }
pub struct CfiTable;
impl CfiTable { pub fn new(elf: &'static [u8], debug: Option<&'static [u8]>) -> Result<CfiTable> { Ok(CfiTable) } }
pub trait UnwindMemory { fn read_u64(&self, addr: u64) -> Option<u64>; }
pub trait ObjectLookup { fn cfi_for(&self, pc: u64) -> Option<(&CfiTable, u64)>; }
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameKind { Normal, SignalHandlerCaller }
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnwindMethod { Initial, Cfi, SignalContext, FramePointer }
#[derive(Debug, Clone)]
pub struct Frame { pub pc: u64, pub cfa: Option<u64>, pub regs: UnwindRegs, pub kind: FrameKind, pub method: UnwindMethod }
pub fn unwind(objects: &dyn ObjectLookup, memory: &dyn UnwindMemory, initial: UnwindRegs, max_frames: usize) -> Vec<Frame> { vec![] }
