//! PLACEHOLDER with the agreed signatures; the real module lands from the unwind branch.
#![allow(unused_variables, dead_code)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Displacement { OutOfLine { code: Vec<u8> }, EmulateCall { target: u64, return_address: u64 }, EmulateJump { target: u64 }, SingleStep }
pub const SLOT_SIZE: usize = 32;
pub fn displace(instruction_bytes: &[u8], original: u64, slot_address: u64) -> Displacement { Displacement::SingleStep }
