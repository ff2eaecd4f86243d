//! Compiled unwind tables and the published snapshot the signal handler reads.
//!
//! A load object's CFI is compiled (outside any handler, see `prepare`) into a sorted
//! array of [`Row`]s: each row holds from its `start` address up to the next row's start.
//! All load objects with tables form one immutable [`Snapshot`], published with a single
//! atomic pointer store. Snapshots, and the rows they point to, are never freed: a handler
//! may still be reading an old one, and dlopen/dlclose is rare, so the leak stays small.

use std::sync::atomic::{AtomicPtr, Ordering};

/// How to compute the canonical frame address (the caller's rsp after the return).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CfaRule {
    /// No FDE covers this address (a gap between FDEs).
    NoInfo,
    /// The CFI uses a rule we do not evaluate (another register, an unknown expression).
    Unknown,
    /// CFA = rsp + offset.
    RspOffset(i32),
    /// CFA = rbp + offset.
    RbpOffset(i32),
    /// CFA = *(rbp + offset) (gcc's stack realignment through a DRAP register saved below rbp).
    DerefRbpOffset(i32),
    /// The PLT pattern `rsp + rsp_offset + (((rip & mask) >= threshold) << 3)`: the pc
    /// inside a 16-byte PLT entry tells whether the entry has pushed its index yet.
    Plt {
        rsp_offset: i16,
        mask: u8,
        threshold: u8,
    },
}

/// Where the caller's rbp is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RbpRule {
    /// Not changed by this frame (no rule, or same-value).
    Unchanged,
    /// Saved at CFA + offset.
    AtCfa(i32),
    /// Saved in a way we do not follow: the caller's rbp is unknown.
    Unknown,
}

/// Where the return address is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RaRule {
    /// Saved at CFA + offset (CFA - 8 for every ordinary x86-64 frame).
    AtCfa(i32),
    /// Explicitly undefined: this is the outermost frame (`_start`, the thread start in clone3).
    Undefined,
    /// Not something we follow.
    Unknown,
}

/// The unwind rules of one address range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Rule {
    pub cfa: CfaRule,
    pub rbp: RbpRule,
    pub ra: RaRule,
}

impl Rule {
    /// The rule of addresses no FDE covers.
    pub const NO_INFO: Rule = Rule {
        cfa: CfaRule::NoInfo,
        rbp: RbpRule::Unknown,
        ra: RaRule::Unknown,
    };
}

/// `rule` holds for addresses from `start` to the next row's start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Row {
    pub start: u64,
    pub rule: Rule,
}

/// The compiled table of one load object: rows sorted by start, covering `[lo, hi)`; the
/// last row is a `NoInfo` row starting at `hi`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ModuleTable {
    pub lo: u64,
    pub hi: u64,
    pub rows: &'static [Row],
}

impl ModuleTable {
    /// The rule for `pc`, if `pc` is inside this module's range.
    ///
    /// Async-signal-safe: a binary search over immutable memory, no panics
    /// (`partition_point` and `get` never panic).
    pub fn rule_for(&self, pc: u64) -> Option<Rule> {
        if pc < self.lo || pc >= self.hi {
            return None;
        }
        let after = self.rows.partition_point(|row| row.start <= pc);
        self.rows.get(after.checked_sub(1)?).map(|row| row.rule)
    }
}

/// All prepared load objects, sorted by `lo`, non-overlapping.
#[derive(Debug)]
pub(crate) struct Snapshot {
    pub modules: &'static [ModuleTable],
}

impl Snapshot {
    /// The rule for `pc` in whichever module covers it.
    ///
    /// Async-signal-safe: binary searches over immutable memory, no panics.
    pub fn rule_for(&self, pc: u64) -> Option<Rule> {
        let after = self.modules.partition_point(|module| module.lo <= pc);
        self.modules.get(after.checked_sub(1)?)?.rule_for(pc)
    }
}

static SNAPSHOT: AtomicPtr<Snapshot> = AtomicPtr::new(std::ptr::null_mut());

/// The current snapshot, if tables were ever prepared.
///
/// Async-signal-safe: one atomic load; snapshots are never freed, so the reference stays valid.
pub(crate) fn current_snapshot() -> Option<&'static Snapshot> {
    let snapshot = SNAPSHOT.load(Ordering::Acquire);
    // SAFETY: only `publish` stores here, always a leaked (never freed) Box.
    unsafe { snapshot.as_ref() }
}

/// Publish `modules` (sorted by `lo`) as the new snapshot. The old one is leaked on purpose.
pub(crate) fn publish(modules: Vec<ModuleTable>) {
    let modules: &'static [ModuleTable] = Box::leak(modules.into_boxed_slice());
    let snapshot = Box::leak(Box::new(Snapshot { modules }));
    SNAPSHOT.store(snapshot, Ordering::Release);
}
