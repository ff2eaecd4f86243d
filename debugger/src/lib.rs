//! The rdbx debugger engine: ptrace process control, symbols (ELF and
//! DWARF), unwinding, disassembly and expressions. It performs no terminal
//! I/O of its own; the `rdbx` binary drives it and prints what it returns.

pub mod attach;
pub mod breakpoints;
pub mod call;
pub mod disasm;
pub mod engine;
pub mod error;
pub mod expr;
mod hold;
pub mod inferior;
pub mod inject;
mod inline_stop;
pub mod machine;
pub mod maps;
pub mod memory;
pub mod objects;
pub mod ptrace;
pub mod pump;
pub mod regs;
pub mod relocate;
pub mod rescue;
pub mod signals;
pub mod stack;
pub mod stepping;
pub mod symbols;
mod tail_calls;
pub mod tls;
pub mod unwind;
pub mod value;

pub use error::{Error, Result};
