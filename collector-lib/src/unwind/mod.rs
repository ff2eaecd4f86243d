//! Stack unwinding inside the SIGPROF handler.
//!
//! Two halves:
//! - [`refresh_tables`] (outside handlers: allocates, locks) compiles the DWARF CFI
//!   (`.eh_frame`, read from memory) of every load object into compact sorted tables and
//!   publishes them with one atomic store. Call it at start and after every dlopen/dlclose.
//! - [`unwind_from_signal`] (inside the handler: async-signal-safe) walks the interrupted
//!   stack with those tables. It never guesses: no CFI, a rule it does not follow, or
//!   unreadable memory ends the walk as [`UnwindStatus::Failed`]; a full output buffer
//!   with more frames left is [`UnwindStatus::Truncated`].
//!
//! Signal frames are recognized by their return address, the signal restorer
//! ([`set_signal_restorer`], found by [`discover_signal_restorer`]).

mod memo;
mod memory;
mod prepare;
mod table;
mod walk;

#[cfg(test)]
mod tests;

pub use memo::{unwind_memoized, MemoFrameSlot, WalkMemo, MEMO_FRAMES};
pub use memory::StackCache;
pub use prepare::{refresh_tables, RefreshSummary, SkippedObject};
pub use walk::{
    discover_signal_restorer, set_signal_restorer, signal_registers, signal_restorer,
    unwind_from_registers, unwind_from_signal, unwind_from_signal_locating, HoldingFrame,
    UnwindStatus, Unwound,
};

/// The default stack depth limit (frames).
pub const DEFAULT_DEPTH: usize = 256;

/// Why a load object got no unwind table.
#[derive(Debug, thiserror::Error)]
pub enum UnwindError {
    #[error("no PT_GNU_EH_FRAME program header")]
    NoEhFrameHdr,
    #[error("the unwind data is not inside a loaded segment")]
    NotLoaded,
    #[error("eh_frame_ptr is an indirect pointer")]
    IndirectEhFramePointer,
    #[error(".eh_frame_hdr has no binary search table")]
    NoSearchTable,
    #[error("no FDE could be compiled")]
    NoFdes,
    #[error("bad call frame information: {0}")]
    Cfi(#[from] gimli::Error),
    #[error("an earlier refresh panicked while holding the table builder")]
    BuilderPoisoned,
}
