//! PLACEHOLDER with the agreed signatures; the real module lands from the unwind branch.
#![allow(unused_variables, dead_code)]
use crate::{Error, Result};
#[derive(Debug, Clone)]
pub struct Instruction { pub address: u64, pub bytes: Vec<u8>, pub mnemonic: String, pub operands: String, pub branch_target: Option<u64>, pub is_call: bool, pub is_return: bool, pub is_jump: bool }
pub struct Disassembler;
impl Disassembler {
    pub fn new() -> Result<Self> { Err(Error::Other("stub".into())) }
    pub fn decode(&self, bytes: &[u8], address: u64, count: usize) -> Vec<Instruction> { vec![] }
    pub fn decode_one(&self, bytes: &[u8], address: u64) -> Option<Instruction> { None }
}
