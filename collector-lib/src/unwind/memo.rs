//! Unwinding a thread's stack again without redoing what has not changed.
//!
//! A walk is a pure function of the registers it starts from and of the
//! memory it reads (return-address slots, saved rbp, a DRAP slot): the CFI
//! tables are fixed between dlopen/dlclose. So each thread keeps its last
//! walk, every frame with its registers and the (address, value) pairs its
//! step read. A new walk goes up from the leaf with the tables until it
//! reaches a frame whose registers equal a remembered frame's (the same pc
//! at the same stack pointer, and the same rbp where the rest of the walk
//! depends on it); if every remembered read from there up still finds the
//! same value, the rest of the walk would repeat itself, and the
//! remembered frames are taken as they are. That is exact, not a guess:
//! any difference the walk could see fails a check and the walk goes on
//! with the tables.
//!
//! The frames are kept outermost first, so a new walk that splices keeps a
//! prefix of the array and overwrites the rest: nothing is moved.
//!
//! Async-signal-safe, as the walk: no allocation, no locks, no panics.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

use super::memory::{StackCache, StackMemory, StackReader};
use super::table::{current_snapshot, CfaRule, RbpRule, Rule, Snapshot};
use super::walk::{step, Registers, Step, SIGNAL_RESTORER};
use super::{UnwindStatus, Unwound};

/// Frames one memo holds (deeper stacks are walked in full every time
/// past that depth).
pub const MEMO_FRAMES: usize = 272;

/// Reads one step may make: the CFA through a DRAP slot, the return
/// address, the caller's rbp.
const MAX_READS: usize = 3;

#[derive(Clone, Copy, Debug)]
struct MemoFrame {
    pc: u64,
    rsp: u64,
    rbp: u64,
    has_rbp: bool,
    /// Frame 0 holds an exact pc; callers hold return addresses.
    exact: bool,
    /// The step from here to the caller used rbp to find the CFA.
    uses_rbp: bool,
    /// ... or handed rbp unchanged to the caller.
    keeps_rbp: bool,
    /// The walk from this frame on depends on this frame's rbp.
    needs_rbp: bool,
    read_count: u8,
    reads: [(u64, u64); MAX_READS],
}

impl MemoFrame {
    const EMPTY: MemoFrame = MemoFrame {
        pc: 0,
        rsp: 0,
        rbp: 0,
        has_rbp: false,
        exact: false,
        uses_rbp: false,
        keeps_rbp: false,
        needs_rbp: false,
        read_count: 0,
        reads: [(0, 0); MAX_READS],
    };

    fn matches(&self, registers: &Registers, exact: bool) -> bool {
        let rbp_ok = !self.needs_rbp
            || (self.has_rbp && registers.rbp == Some(self.rbp))
            || (!self.has_rbp && registers.rbp.is_none());
        self.pc == registers.pc && self.rsp == registers.rsp && self.exact == exact && rbp_ok
    }

    fn reads(&self) -> &[(u64, u64)] {
        &self.reads[..usize::from(self.read_count).min(MAX_READS)]
    }
}

/// Rules looked up by this thread lately, two ways per set of pcs: the
/// same call sites come back walk after walk, and a lookup in the tables is
/// a binary search over every row of an object. (Direct-mapped, two call
/// sites of a walk sharing an entry, as load addresses made them in one run
/// out of some, missed at every walk: heap tracing's cost then varied by
/// half from run to run.)
const RULE_CACHE: usize = 256;
const RULE_WAYS: usize = 2;

/// One thread's last walk. Plain data: keep one per thread.
pub struct WalkMemo {
    /// (lookup pc + 1, its rule); a key of 0 is empty.
    rules: [(u64, Rule); RULE_CACHE],
    /// Outermost first: `frames[len - 1]` is the last walk's leaf.
    frames: [MemoFrame; MEMO_FRAMES],
    len: usize,
    /// The frames' reads in the same order, one after the other: those of
    /// `frames[..=i]` are `reads[..reads_end[i]]`, all at addresses in
    /// `[reads_lo[i], reads_hi[i])`. A walk that reaches frame `i` checks
    /// them in one pass (a splice keeps a prefix of these too).
    reads: [(u64, u64); MEMO_FRAMES * MAX_READS],
    reads_end: [u16; MEMO_FRAMES],
    reads_lo: [u64; MEMO_FRAMES],
    reads_hi: [u64; MEMO_FRAMES],
    /// How the remembered walk ended above `frames[0]`.
    end: UnwindStatus,
    /// The tables the walk used; other tables void the memo.
    snapshot: usize,
    /// Walks, and walks that reused remembered frames, for the hit rate
    /// (written by the memo's thread only, read by anyone: plain loads and
    /// stores of atomics, no locked instruction).
    walks: AtomicU64,
    hits: AtomicU64,
}

impl WalkMemo {
    pub const fn new() -> WalkMemo {
        WalkMemo {
            rules: [(0, Rule::NO_INFO); RULE_CACHE],
            frames: [MemoFrame::EMPTY; MEMO_FRAMES],
            len: 0,
            reads: [(0, 0); MEMO_FRAMES * MAX_READS],
            reads_end: [0; MEMO_FRAMES],
            reads_lo: [0; MEMO_FRAMES],
            reads_hi: [0; MEMO_FRAMES],
            end: UnwindStatus::Failed,
            snapshot: 0,
            walks: AtomicU64::new(0),
            hits: AtomicU64::new(0),
        }
    }

    /// Forgets the last walk (the memo goes to another thread).
    pub fn forget(&mut self) {
        self.len = 0;
    }

    /// (walks, walks that reused remembered frames).
    pub fn counts(&self) -> (u64, u64) {
        (
            self.walks.load(Ordering::Relaxed),
            self.hits.load(Ordering::Relaxed),
        )
    }

    /// The remembered frame with these registers, as an index into `frames`.
    /// `below` is where the walk's previous frame would go: stack pointers
    /// only grow along a walk and decrease along the array (outermost
    /// first), so the search goes on from there toward the outermost frame,
    /// a step or two per frame walked.
    fn find(&self, below: &mut usize, registers: &Registers, exact: bool) -> Option<usize> {
        let mut index = (*below).min(self.len);
        while index > 0 && self.frames[index - 1].rsp <= registers.rsp {
            index -= 1;
        }
        *below = index;
        self.frames[..self.len]
            .get(index)
            .filter(|f| f.matches(registers, exact))
            .map(|_| index)
    }

    /// Whether the frames from `index` up are still what the stack holds.
    /// Their reads lie in the walk's own stack, above its stack pointer,
    /// nearly always: then they are plain loads in one pass.
    fn holds_from(&self, index: usize, reader: &StackReader) -> bool {
        let reads = &self.reads[..usize::from(self.reads_end[index])];
        let (lo, hi) = reader.own_window();
        if lo <= self.reads_lo[index] && self.reads_hi[index] <= hi {
            return reads.iter().all(|&(address, value)| {
                // SAFETY: inside the window the reader maps directly: the
                // thread's own stack above its stack pointer.
                unsafe { std::ptr::read_unaligned(address as *const u64) == value }
            });
        }
        reads
            .iter()
            .all(|&(address, value)| reader.read_u64(address) == Some(value))
    }

    /// Appends `frame` after `frames[..index]` (which stay), with its reads.
    fn put(&mut self, index: usize, frame: &MemoFrame) {
        let (end, lo, hi) = match index.checked_sub(1) {
            Some(before) => (
                usize::from(self.reads_end[before]),
                self.reads_lo[before],
                self.reads_hi[before],
            ),
            None => (0, u64::MAX, 0),
        };
        let reads = frame.reads();
        // One by one: a copy of a few elements is not worth a call.
        for (slot, &read) in self.reads[end..].iter_mut().zip(reads) {
            *slot = read;
        }
        let (lo, hi) = reads.iter().fold((lo, hi), |(lo, hi), &(address, _)| {
            (lo.min(address), hi.max(address.saturating_add(8)))
        });
        self.frames[index] = *frame;
        self.reads_end[index] = (end + reads.len()) as u16;
        self.reads_lo[index] = lo;
        self.reads_hi[index] = hi;
    }
}

impl Default for WalkMemo {
    fn default() -> Self {
        WalkMemo::new()
    }
}

/// Memory reads of one step, remembered (addresses and values apart:
/// each is stored and loaded back whole, which the processor forwards).
struct Logged<'a> {
    reader: &'a StackReader,
    addresses: [Cell<u64>; MAX_READS],
    values: [Cell<u64>; MAX_READS],
    count: Cell<u8>,
}

impl Logged<'_> {
    fn reads(&self) -> [(u64, u64); MAX_READS] {
        std::array::from_fn(|i| (self.addresses[i].get(), self.values[i].get()))
    }
}

impl StackMemory for Logged<'_> {
    #[inline(always)]
    fn read_u64(&self, address: u64) -> Option<u64> {
        let value = self.reader.read_u64(address)?;
        let count = usize::from(self.count.get());
        if let (Some(at), Some(read)) = (self.addresses.get(count), self.values.get(count)) {
            at.set(address);
            read.set(value);
            self.count.set(count as u8 + 1);
        }
        Some(value)
    }
}

/// The frames of the new walk below the splice point, leaf first.
struct Fresh<'a> {
    frames: &'a mut [MemoFrame],
    len: usize,
}

/// [`unwind_from_registers`](super::unwind_from_registers) with `memo`: the
/// same frames, in less time when the stack above the leaf is the one the
/// last walk saw. `scratch` holds the new frames while walking.
pub fn unwind_memoized(
    registers: (u64, u64, u64),
    stack: &mut StackCache,
    memo: &mut WalkMemo,
    scratch: &mut [MemoFrameSlot],
    out: &mut [u64],
) -> Unwound {
    // SAFETY: errno is a thread-local int, always accessible.
    let errno = unsafe { *libc::__errno_location() };
    let unwound = walk(registers, stack, memo, scratch, out);
    // SAFETY: as above.
    unsafe { *libc::__errno_location() = errno };
    unwound
}

/// Room for one frame of a walk in progress (opaque to callers).
#[derive(Clone, Copy, Debug)]
#[repr(transparent)]
pub struct MemoFrameSlot(MemoFrame);

impl MemoFrameSlot {
    pub const EMPTY: MemoFrameSlot = MemoFrameSlot(MemoFrame::EMPTY);
}

fn walk(
    (pc, rsp, rbp): (u64, u64, u64),
    cache: &mut StackCache,
    memo: &mut WalkMemo,
    scratch: &mut [MemoFrameSlot],
    out: &mut [u64],
) -> Unwound {
    bump(&memo.walks);
    let Some(snapshot) = current_snapshot() else {
        memo.len = 0;
        return Unwound {
            depth: 0,
            status: UnwindStatus::Failed,
        };
    };
    let snapshot_id = snapshot as *const Snapshot as usize;
    if memo.snapshot != snapshot_id {
        memo.len = 0;
        memo.rules = [(0, Rule::NO_INFO); RULE_CACHE];
        memo.snapshot = snapshot_id;
    }
    // SAFETY: MemoFrameSlot is a repr(transparent) MemoFrame.
    let scratch: &mut [MemoFrame] =
        unsafe { std::slice::from_raw_parts_mut(scratch.as_mut_ptr().cast(), scratch.len()) };
    let mut reader = StackReader::new();
    reader.set_window(0, rsp, cache);
    let mut fresh = Fresh {
        frames: scratch,
        len: 0,
    };
    let mut registers = Registers {
        pc,
        rsp,
        rbp: Some(rbp),
    };
    let restorer = SIGNAL_RESTORER.load(Ordering::Acquire);
    let mut exact = true;
    let mut below = memo.len;
    let status = loop {
        if let Some(index) = memo.find(&mut below, &registers, exact) {
            if memo.holds_from(index, &reader) {
                bump(&memo.hits);
                return splice(memo, &fresh, index, out);
            }
        }
        let Some(frame) = fresh.frames.get_mut(fresh.len) else {
            // Deeper than the memo holds: walk it plainly, remember nothing.
            memo.len = 0;
            return super::walk::unwind_from_registers(pc, rsp, rbp, cache, out);
        };
        *frame = MemoFrame {
            pc: registers.pc,
            rsp: registers.rsp,
            rbp: registers.rbp.unwrap_or(0),
            has_rbp: registers.rbp.is_some(),
            exact,
            ..MemoFrame::EMPTY
        };
        fresh.len += 1;
        let lookup_pc = if exact {
            registers.pc
        } else {
            registers.pc.wrapping_sub(1)
        };
        let Some(rule) = cached_rule(&mut memo.rules, snapshot, lookup_pc) else {
            break UnwindStatus::Failed;
        };
        frame.uses_rbp = matches!(rule.cfa, CfaRule::RbpOffset(_) | CfaRule::DerefRbpOffset(_));
        frame.keeps_rbp = rule.rbp == RbpRule::Unchanged;
        let logged = Logged {
            reader: &reader,
            addresses: [const { Cell::new(0) }; MAX_READS],
            values: [const { Cell::new(0) }; MAX_READS],
            count: Cell::new(0),
        };
        let stepped = step(&rule, &registers, &logged);
        frame.reads = logged.reads();
        frame.read_count = logged.count.get();
        let (return_address, cfa, caller_rbp) = match stepped {
            Some(Step::Outermost) => break UnwindStatus::Complete,
            Some(Step::Caller {
                return_address,
                cfa,
                rbp,
            }) => (return_address, cfa, rbp),
            None => break UnwindStatus::Failed,
        };
        if cfa <= registers.rsp {
            break UnwindStatus::Failed;
        }
        if return_address == 0 {
            break UnwindStatus::Complete;
        }
        if restorer != 0 && return_address == restorer {
            // A signal frame: its registers come from a ucontext, which the
            // memo does not describe. Forget it and walk on plainly.
            memo.len = 0;
            return super::walk::unwind_from_registers(pc, rsp, rbp, cache, out);
        }
        registers = Registers {
            pc: return_address,
            rsp: cfa,
            rbp: caller_rbp,
        };
        exact = false;
    };
    remember(memo, &fresh, status);
    emit(memo, out, status)
}

/// The new walk reached remembered frame `index`: its own frames go below
/// `frames[..=index]`, which stay.
fn splice(memo: &mut WalkMemo, fresh: &Fresh, index: usize, out: &mut [u64]) -> Unwound {
    let kept = index + 1;
    let room = MEMO_FRAMES - kept;
    let new = fresh.len.min(room);
    // Outermost first: the fresh frames go in reverse (their leaf last).
    for (index, frame) in
        (kept..kept + new).zip(fresh.frames[fresh.len - new..fresh.len].iter().rev())
    {
        memo.put(index, frame);
    }
    memo.len = kept + new;
    mark_rbp_needs(memo, kept);
    // Fresh frames that did not fit stay out of the memo but not of the
    // output: emit them first.
    let skipped = fresh.len - new;
    let mut depth = 0;
    for frame in &fresh.frames[..skipped] {
        match out.get_mut(depth) {
            Some(slot) => *slot = frame.pc,
            None => {
                return Unwound {
                    depth,
                    status: UnwindStatus::Truncated,
                }
            }
        }
        depth += 1;
    }
    let end = memo.end;
    let rest = emit(memo, &mut out[depth..], end);
    Unwound {
        depth: depth + rest.depth,
        status: rest.status,
    }
}

/// A walk that found nothing to reuse: its frames become the memo.
fn remember(memo: &mut WalkMemo, fresh: &Fresh, status: UnwindStatus) {
    if fresh.len > MEMO_FRAMES {
        memo.len = 0;
        return;
    }
    for (index, frame) in fresh.frames[..fresh.len].iter().rev().enumerate() {
        memo.put(index, frame);
    }
    memo.len = fresh.len;
    memo.end = status;
    mark_rbp_needs(memo, 0);
}

/// Which frames from `from` down (toward the leaf) need their rbp for
/// the rest of the walk.
fn mark_rbp_needs(memo: &mut WalkMemo, from: usize) {
    let len = memo.len;
    let mut caller_needs = match from.checked_sub(1) {
        Some(caller) => memo.frames[caller].needs_rbp,
        None => false,
    };
    for frame in &mut memo.frames[from..len] {
        frame.needs_rbp = frame.uses_rbp || (frame.keeps_rbp && caller_needs);
        caller_needs = frame.needs_rbp;
    }
}

/// The memo's frames (leaf first) into `out`, ending as `end`.
fn emit(memo: &WalkMemo, out: &mut [u64], end: UnwindStatus) -> Unwound {
    let mut depth = 0;
    for frame in memo.frames[..memo.len].iter().rev() {
        match out.get_mut(depth) {
            Some(slot) => *slot = frame.pc,
            None => {
                return Unwound {
                    depth,
                    status: UnwindStatus::Truncated,
                }
            }
        }
        depth += 1;
    }
    Unwound { depth, status: end }
}

/// One more, by its only writer.
fn bump(counter: &AtomicU64) {
    counter.store(counter.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
}

/// The rule for `pc`, from the thread's cache or the tables. A set's
/// first way holds the rule found last: a new one pushes it to the second.
fn cached_rule(
    rules: &mut [(u64, Rule); RULE_CACHE],
    snapshot: &Snapshot,
    pc: u64,
) -> Option<Rule> {
    let key = pc.wrapping_add(1);
    let set = (pc.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40) as usize % (RULE_CACHE / RULE_WAYS);
    let ways = &mut rules[set * RULE_WAYS..(set + 1) * RULE_WAYS];
    if let Some(&(_, rule)) = ways.iter().find(|(known, _)| *known == key) {
        return Some(rule);
    }
    let rule = snapshot.rule_for(pc)?;
    ways[1] = ways[0];
    ways[0] = (key, rule);
    Some(rule)
}
