//! Per-thread state, found by thread id from the signal handler.
//!
//! Thread-local storage is avoided on purpose: a dlopen'ed library's TLS
//! may be allocated lazily by glibc on first touch, which is not allowed in
//! a signal handler. A fixed table keyed by tid, claimed with compare-and-
//! swap, works the same whether we were preloaded or dlopen'ed.

use crate::blocks::Cursor;
use crate::clock::ClockSource;
use crate::counters::CounterSources;
use crate::offcpu::OffCpuSource;
use crate::stack_ids::IdCache;
use crate::unwind::{MemoFrameSlot, StackCache, WalkMemo, MEMO_FRAMES};
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};

pub const MAX_THREADS: usize = 4096;
const EMPTY: i32 = 0;
const TOMBSTONE: i32 = -1;

/// The parts of a slot only its own thread touches (from its signal
/// handler or from its own start/exit code, with SIGPROF blocked).
pub struct Owned {
    pub profile: Cursor,
    pub stacks: Cursor,
    /// The thread's block of the `offcpu` file.
    pub offcpu: Cursor,
    /// The thread's block of the `counters` file.
    pub counters: Cursor,
    pub stack_cache: StackCache,
    /// Room for a stack (depth limit + 1), allocated at registration.
    pub pcs: Option<Box<[u64]>>,
    /// The thread's last walk, allocated at registration: a thread
    /// switched out or sampled where it was last time (a loop around the
    /// same calls) unwinds only the frames that changed.
    pub walk: Option<Box<SignalWalk>>,
}

/// A memo of the thread's last stack walk and room for the next one
/// (unwind::unwind_memoized).
pub struct SignalWalk {
    pub memo: WalkMemo,
    pub scratch: [MemoFrameSlot; MEMO_FRAMES],
    /// The ids of the stacks the thread recorded lately.
    pub ids: IdCache,
}

impl SignalWalk {
    /// A new one on the heap, made zeroed in place (tens of KiB: not on
    /// the stack of a starting thread). Allocates: ordinary context.
    pub fn boxed() -> Option<Box<SignalWalk>> {
        let layout = std::alloc::Layout::new::<SignalWalk>();
        // SAFETY: a sized, non-empty layout; all zeros is a valid memo
        // and scratch (an empty memo, as heap.rs's walk space is in a
        // fresh anonymous mapping), and the block is the layout's.
        unsafe {
            let block = std::alloc::alloc_zeroed(layout).cast::<SignalWalk>();
            (!block.is_null()).then(|| Box::from_raw(block))
        }
    }
}

pub struct Slot {
    tid: AtomicI32,
    /// The thread's CPU time at its previous profile event (or when
    /// recording last started): the weight of the next event is the
    /// difference.
    pub last_cpu_ns: AtomicU64,
    /// The stack of the thread's previous profile event (0: none yet).
    pub last_stack: AtomicU64,
    pub clock: ClockSource,
    /// The thread's context-switch event (off-CPU profiling).
    pub offcpu: OffCpuSource,
    /// One of the collector's handlers (clock tick, off-CPU or counter
    /// trap) is using `owned`: one that interrupts it (SIGTRAP is never
    /// blocked, not even in its own handler) leaves it alone.
    pub in_handler: AtomicBool,
    /// A clock tick came while another of the collector's handlers held
    /// `in_handler`: that handler records it, at the program's stack it
    /// interrupted, before letting go (else, with frequent counter traps,
    /// the ticks would land in them and never be recorded).
    pub tick_deferred: AtomicBool,
    owned: UnsafeCell<Owned>,
}

// SAFETY: `owned` is only touched by the slot's own thread (see Owned);
// everything else is atomic.
unsafe impl Sync for Slot {}

impl Slot {
    const fn new() -> Slot {
        Slot {
            tid: AtomicI32::new(EMPTY),
            last_cpu_ns: AtomicU64::new(0),
            last_stack: AtomicU64::new(0),
            clock: ClockSource::new(),
            offcpu: OffCpuSource::new(),
            in_handler: AtomicBool::new(false),
            tick_deferred: AtomicBool::new(false),
            owned: UnsafeCell::new(Owned {
                profile: Cursor::new(),
                stacks: Cursor::new(),
                offcpu: Cursor::new(),
                counters: Cursor::new(),
                stack_cache: StackCache::new(),
                pcs: None,
                walk: None,
            }),
        }
    }

    pub fn tid(&self) -> i32 {
        self.tid.load(Ordering::Acquire)
    }

    /// The thread's counters (counter overflow profiling). Async-signal-safe.
    pub fn counters(&self) -> &'static CounterSources {
        let index = (self as *const Slot as usize).wrapping_sub(SLOTS.as_ptr() as usize)
            / std::mem::size_of::<Slot>();
        COUNTERS.get(index).unwrap_or(&NO_COUNTERS)
    }

    /// The thread-owned part.
    ///
    /// # Safety
    /// Only the slot's own thread may call this, and not re-entrantly
    /// (SIGPROF is blocked while its handler runs).
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn owned(&self) -> &mut Owned {
        &mut *self.owned.get()
    }
}

static SLOTS: [Slot; MAX_THREADS] = [const { Slot::new() }; MAX_THREADS];

/// Each slot's counters, beside the slots rather than in them: zeros
/// (`.bss`), where a slot's descriptors of -1 put the slots in `.data`,
/// which the library's file holds.
static COUNTERS: [CounterSources; MAX_THREADS] = [const { CounterSources::new() }; MAX_THREADS];
/// For a slot that is not one of SLOTS (none is): never armed.
static NO_COUNTERS: CounterSources = CounterSources::new();

fn home(tid: i32) -> usize {
    (tid as u32).wrapping_mul(2_654_435_761) as usize % MAX_THREADS
}

/// The slot of `tid`, if registered. Async-signal-safe.
pub fn find(tid: i32) -> Option<&'static Slot> {
    let start = home(tid);
    for step in 0..MAX_THREADS {
        let slot = SLOTS.get((start + step) % MAX_THREADS)?;
        match slot.tid() {
            t if t == tid => return Some(slot),
            EMPTY => return None,
            _ => {}
        }
    }
    None
}

/// Claims a slot for `tid` (or returns its existing one).
pub fn claim(tid: i32) -> Option<&'static Slot> {
    if let Some(slot) = find(tid) {
        return Some(slot);
    }
    let start = home(tid);
    for step in 0..MAX_THREADS {
        let slot = SLOTS.get((start + step) % MAX_THREADS)?;
        let current = slot.tid();
        if (current == EMPTY || current == TOMBSTONE)
            && slot
                .tid
                .compare_exchange(current, tid, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
        {
            return Some(slot);
        }
    }
    None
}

/// Frees `slot` (its thread is exiting or gone).
pub fn release(slot: &Slot) {
    slot.tid.store(TOMBSTONE, Ordering::Release);
}

/// Every registered slot.
pub fn registered() -> impl Iterator<Item = &'static Slot> {
    SLOTS.iter().filter(|s| s.tid() > 0)
}

/// In a fork child: every slot but the calling thread's belongs to a
/// thread that does not exist here. Their mappings and descriptors are
/// the child's copies, so they are released without touching the parent.
pub fn forget_all_after_fork() {
    for slot in SLOTS.iter() {
        if slot.tid() != EMPTY {
            slot.clock.forget_after_fork();
            slot.offcpu.forget_after_fork();
            slot.counters().forget_after_fork();
            // SAFETY: the child is single-threaded and SIGPROF is blocked
            // by the caller, so nothing else touches the owned parts.
            let owned = unsafe { slot.owned() };
            owned.profile.release();
            owned.stacks.release();
            owned.offcpu.release();
            owned.counters.release();
            owned.stack_cache = StackCache::new();
            if let Some(walk) = owned.walk.as_deref_mut() {
                walk.memo.forget();
            }
            slot.tid.store(TOMBSTONE, Ordering::Release);
        }
    }
}
