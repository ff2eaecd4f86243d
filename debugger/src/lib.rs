//! The rdbx debugger engine: ptrace process control, symbols (ELF and
//! DWARF), unwinding, disassembly and expressions. It performs no terminal
//! I/O of its own; the `rdbx` binary drives it and prints what it returns.

pub mod disasm;
pub mod error;
pub mod expr;
pub mod relocate;
pub mod symbols;
pub mod unwind;
pub mod value;

pub use error::{Error, Result};
