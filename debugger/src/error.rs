//! The one error type of the debugger crate.

use std::path::PathBuf;

/// Everything that can go wrong inside the debugger engine. Messages are
/// written to be shown to the user as a single line.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{0}")]
    Os(#[from] nix::Error),
    #[error("{path}: not an ELF file")]
    NotElf { path: PathBuf },
    #[error("{path}: not an x86-64 executable")]
    WrongArchitecture { path: PathBuf },
    #[error("{path}: {message}")]
    BadObject { path: PathBuf, message: String },
    #[error("DWARF error: {0}")]
    Dwarf(String),
    #[error("no function named \"{0}\"")]
    NoSuchFunction(String),
    #[error("no source file named \"{0}\"")]
    NoSuchFile(String),
    #[error("no code at or after line {line} in \"{file}\"")]
    NoCodeAtLine { file: String, line: u32 },
    #[error("cannot access memory at 0x{0:x}")]
    Memory(u64),
    #[error("no process")]
    NoProcess,
    #[error("no symbol \"{0}\" in current context")]
    NoSuchSymbol(String),
    #[error("{0}")]
    Expression(String),
    #[error("unwind error: {0}")]
    Unwind(String),
    /// An injected call abandoned because it did not return in time (the
    /// thread's state was restored).
    #[error("{0}")]
    CallTimedOut(String),
    /// The user pressed Ctrl-C: the operation stopped and so did the
    /// program (the engine turns this into a stop before it returns).
    #[error("interrupted")]
    Interrupted,
    #[error("{0}")]
    Other(String),
}

pub type Result<T> = std::result::Result<T, Error>;
