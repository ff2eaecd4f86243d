//! Heap tracing: the malloc family and anonymous mmap/munmap, interposed
//! (the library is preloaded, so these definitions win for the whole
//! program) and recorded while an experiment traces the heap, as the
//! manual's "Heap Tracing Data" describes: every allocation with its size
//! and call stack, every free, in an order exact across threads.
//!
//! The hooks forward to the next definition (libc's, or a preloaded
//! allocator's), resolved once in the constructor; before that, and
//! during that dlsym, glibc's `__libc_*` entry points serve.
//!
//! What runs on a hooked call, when tracing, allocates nothing and takes
//! no lock: the thread's state is found by its thread pointer (no system
//! call, no thread-local storage, which a dlopen'ed library gets from
//! malloc), a busy flag keeps a nested call (a signal handler's malloc,
//! our own writer) from recording into the state it interrupted, stacks
//! are unwound with the prepared CFI tables and deduplicated in the
//! lock-free stack table, and records go into the thread's own block of
//! the `heap` file.
//!
//! Order numbers: a free takes its number before the real free (once its
//! block is free another thread may get it back), an allocation after the
//! real call (the block is not its own before). realloc is both: a free of
//! the old block numbered before the call, a realloc of the new one after.

use crate::blocks::{Cursor, WriteError};
use crate::hold::{self, Marked};
use crate::real::{self, Real};
use crate::stack_ids::IdCache;
use crate::sys::{
    __libc_calloc, __libc_free, __libc_malloc, __libc_memalign, __libc_pvalloc, __libc_realloc,
    __libc_valloc,
};
use crate::unwind::{self, MemoFrameSlot, StackCache, WalkMemo, MEMO_FRAMES};
use crate::{lifecycle, log, state, sys, tsc};
use experiment::heap::{HeapDelta, HeapEvent, HeapOp, MAX_HEAP_RECORD_SIZE};
use experiment::layout::StackStatus;
use std::cell::UnsafeCell;
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicPtr, AtomicU64, AtomicUsize, Ordering};

/// The next order number.
static ORDER: AtomicU64 = AtomicU64::new(1);

/// Calls seen but not recorded (nested in a hook of the same thread, or
/// no room for the thread's state), for the log. (Recorded events are
/// counted per thread: a locked increment per event costs as much as the
/// rest of a free's record.)
static UNRECORDED: AtomicU64 = AtomicU64::new(0);
/// Events of threads whose slot was freed.
static EVENTS_OF_GONE_THREADS: AtomicU64 = AtomicU64::new(0);
/// The same two counts for I/O calls (io.rs).
static IO_UNRECORDED: AtomicU64 = AtomicU64::new(0);
static IO_CALLS_OF_GONE_THREADS: AtomicU64 = AtomicU64::new(0);

/// The text of libcollector.so itself: frames there are the hooks', not
/// the program's, and are cut from recorded stacks.
static OWN_TEXT_START: AtomicU64 = AtomicU64::new(0);
static OWN_TEXT_END: AtomicU64 = AtomicU64::new(0);

/// Frames kept of an allocation's stack (at most; the experiment's depth
/// limit may ask for fewer).
const MAX_HEAP_DEPTH: usize = 256;
/// Our own frames above the program's (the hook, the recorder, the
/// unwinder's entry), unwound and then cut.
const OWN_FRAMES: usize = 8;

const MAX_THREADS: usize = 4096;
const EMPTY: usize = 0;
const TOMBSTONE: usize = usize::MAX;

/// What only the slot's thread touches, while it holds `busy`.
struct Owned {
    events: Cursor,
    /// The thread's block of the `sync` file (sync.rs records through
    /// this slot too: one busy flag guards every kind of hook).
    sync_events: Cursor,
    /// The thread's block of the `io` file (io.rs, the same).
    io_events: Cursor,
    /// The thread's block of the `mpi` file (mpi.rs, the same).
    mpi_events: Cursor,
    stacks: Cursor,
    delta: HeapDelta,
    stack_cache: StackCache,
    /// Converts the I/O hooks' time stamps (io.rs).
    clock: tsc::Anchor,
}

/// Valid when all zeros, as a fresh anonymous mapping is.
struct WalkSpace {
    memo: WalkMemo,
    scratch: [MemoFrameSlot; MEMO_FRAMES],
    pcs: [u64; MAX_HEAP_DEPTH + OWN_FRAMES],
    ids: IdCache,
}

impl Slot {
    /// The walk space, mapped on the slot's first record; None when no
    /// memory is left. A mapping of ours, zeroed by the kernel, which is a
    /// valid WalkSpace; only the slot's thread uses it (others may read
    /// the memo's counters, which are atomics), and it is never unmapped.
    fn walk_space(&self) -> Option<*mut WalkSpace> {
        let known = self.walk.load(Ordering::Acquire);
        if !known.is_null() {
            return Some(known);
        }
        let mapped = sys::mmap_raw(
            size_of::<WalkSpace>(),
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        if mapped == libc::MAP_FAILED.cast() {
            return None;
        }
        self.walk.store(mapped.cast(), Ordering::Release);
        Some(mapped.cast())
    }
}

struct Slot {
    /// The thread pointer of the thread that owns the slot.
    thread: AtomicUsize,
    tid: AtomicI32,
    /// Held while the thread records: a nested hook call does not record.
    /// Only the slot's thread (and its signal handlers, which run to the
    /// end before it goes on) sets and clears it: plain loads and stores.
    busy: AtomicBool,
    /// Events recorded; written by the slot's thread only.
    events: AtomicU64,
    /// I/O calls recorded (io.rs); written by the slot's thread only.
    io_calls: AtomicU64,
    /// The thread's walk memo and buffers, mapped at its first record
    /// (tens of KiB: not in every slot of the static table).
    walk: AtomicPtr<WalkSpace>,
    owned: UnsafeCell<Owned>,
}

// SAFETY: `owned` is only touched by the thread whose pointer is in
// `thread`, while it holds `busy`; the rest is atomic.
unsafe impl Sync for Slot {}

impl Slot {
    const fn new() -> Slot {
        Slot {
            thread: AtomicUsize::new(EMPTY),
            tid: AtomicI32::new(0),
            busy: AtomicBool::new(false),
            events: AtomicU64::new(0),
            io_calls: AtomicU64::new(0),
            walk: AtomicPtr::new(std::ptr::null_mut()),
            owned: UnsafeCell::new(Owned {
                events: Cursor::new(),
                sync_events: Cursor::new(),
                io_events: Cursor::new(),
                mpi_events: Cursor::new(),
                stacks: Cursor::new(),
                delta: HeapDelta::block_start(0),
                stack_cache: StackCache::new(),
                clock: tsc::Anchor::new(),
            }),
        }
    }
}

static SLOTS: [Slot; MAX_THREADS] = [const { Slot::new() }; MAX_THREADS];

fn home(thread: usize) -> usize {
    (thread >> 12).wrapping_mul(0x9E37_79B9_7F4A_7C15) % MAX_THREADS
}

/// Where glibc keeps a thread's kernel id in its thread control block
/// (found at start by looking for the caller's id there; 0: unknown).
static TCB_TID_OFFSET: AtomicUsize = AtomicUsize::new(0);

/// The calling thread's kernel id as its control block holds it, when
/// the offset is known: one load, no system call.
fn tcb_tid(thread: usize) -> Option<i32> {
    match TCB_TID_OFFSET.load(Ordering::Relaxed) {
        0 => None,
        // SAFETY: inside the calling thread's own control block, whose
        // layout was checked at start.
        offset => Some(unsafe { std::ptr::read_volatile((thread + offset) as *const i32) }),
    }
}

/// Finds where the control block holds the thread id.
fn find_tcb_tid_offset() {
    let thread = sys::thread_pointer();
    let tid = sys::gettid();
    // struct pthread starts with the TCB header; its tid comes within the
    // first few hundred bytes after it in every glibc since 2.x.
    let found = (0x100..0x800).step_by(4).find(|offset| {
        // SAFETY: the calling thread's control block is mapped well past
        // 0x800 bytes (it holds its TLS and descriptors).
        unsafe { std::ptr::read_volatile((thread + offset) as *const i32) == tid }
    });
    TCB_TID_OFFSET.store(found.unwrap_or(0), Ordering::Relaxed);
}

/// The calling thread's slot, claimed on its first recorded call. A slot
/// of this thread pointer whose thread id is not the caller's is an
/// exited thread's whose control block was reused: taken afresh.
fn current_slot() -> Option<&'static Slot> {
    let thread = sys::thread_pointer();
    let start = home(thread);
    let mut free = None;
    for step in 0..MAX_THREADS {
        let slot = &SLOTS[(start + step) % MAX_THREADS];
        match slot.thread.load(Ordering::Acquire) {
            t if t == thread => {
                if let Some(tid) = tcb_tid(thread) {
                    if tid != slot.tid.load(Ordering::Relaxed) && take(&slot.busy) {
                        retake(slot, tid);
                        give_back(&slot.busy);
                    }
                }
                return Some(slot);
            }
            EMPTY => {
                free.get_or_insert(slot);
                break;
            }
            TOMBSTONE => {
                free.get_or_insert(slot);
            }
            _ => {}
        }
    }
    let slot = free?;
    let current = slot.thread.load(Ordering::Acquire);
    if current != EMPTY && current != TOMBSTONE {
        return None;
    }
    slot.thread
        .compare_exchange(current, thread, Ordering::AcqRel, Ordering::Acquire)
        .ok()?;
    slot.tid.store(sys::gettid(), Ordering::Release);
    Some(slot)
}

/// A slot of an exited thread, for the thread now using its control
/// block: its blocks finished, its id the new thread's.
fn retake(slot: &Slot, tid: i32) {
    retire_thread(slot);
    slot.tid.store(tid, Ordering::Release);
}

/// The slot's thread is gone (ended, or its control block is another
/// thread's now): its blocks are finished and its event count goes to the
/// gone threads'. The caller holds `busy`.
fn retire_thread(slot: &Slot) {
    // SAFETY: the caller holds `busy`: the owned state is ours.
    let owned = unsafe { &mut *slot.owned.get() };
    state::HEAP.retire(&mut owned.events);
    state::SYNC.retire(&mut owned.sync_events);
    state::IO.retire(&mut owned.io_events);
    state::MPI.retire(&mut owned.mpi_events);
    state::STACKS.retire(&mut owned.stacks);
    owned.stack_cache = StackCache::new();
    let events = slot.events.swap(0, Ordering::Relaxed);
    EVENTS_OF_GONE_THREADS.fetch_add(events, Ordering::Relaxed);
    let io_calls = slot.io_calls.swap(0, Ordering::Relaxed);
    IO_CALLS_OF_GONE_THREADS.fetch_add(io_calls, Ordering::Relaxed);
}

/// Holds a slot's `busy` flag; the owned state is ours meanwhile.
struct Busy {
    slot: &'static Slot,
}

impl Busy {
    fn enter() -> Option<Busy> {
        let slot = current_slot()?;
        if !take(&slot.busy) {
            return None;
        }
        Some(Busy { slot })
    }

    fn owned(&mut self) -> &mut Owned {
        // SAFETY: we are the slot's thread and hold `busy`.
        unsafe { &mut *self.slot.owned.get() }
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        give_back(&self.slot.busy);
    }
}

/// Takes a thread's own flag: false if it was taken. A signal handler
/// that interrupts between the load and the store runs to its end (and
/// gives the flag back) before this thread goes on, so no locked
/// instruction is needed, only the compiler kept from moving accesses.
fn take(flag: &AtomicBool) -> bool {
    if flag.load(Ordering::Relaxed) {
        return false;
    }
    flag.store(true, Ordering::Relaxed);
    std::sync::atomic::compiler_fence(Ordering::SeqCst);
    true
}

fn give_back(flag: &AtomicBool) {
    std::sync::atomic::compiler_fence(Ordering::SeqCst);
    flag.store(false, Ordering::Relaxed);
}

// ---- starting and stopping ----------------------------------------------

/// Before an experiment that records from hooks (heap or sync tracing)
/// starts: where the thread id is, and our own text (cut from stacks).
/// Ordinary context.
pub fn prepare_slots() {
    find_tcb_tid_offset();
    if OWN_TEXT_END.load(Ordering::Acquire) == 0 {
        if let Some((start, end)) = own_text() {
            OWN_TEXT_START.store(start, Ordering::Release);
            OWN_TEXT_END.store(end, Ordering::Release);
        }
    }
}

/// Before an experiment that traces the heap starts. Ordinary context.
pub fn prepare() {
    prepare_slots();
    if state::live() {
        crate::got::resolve_reals(crate::got::Set::Heap);
    }
    log_allocator();
}

/// Tracing starts. In a process the collector was loaded into while
/// running, the objects' GOT entries of the malloc family are redirected
/// to the hooks first.
pub fn start_tracing() {
    if state::live() {
        let entries = crate::got::patch_all(crate::got::Set::Heap);
        log::write("heap", |line| {
            line.str("how", b"got");
            line.u64("entries", entries as u64);
        });
    }
    lifecycle::heap_on();
}

pub fn stop_tracing() {
    lifecycle::heap_off();
    if state::live() {
        crate::got::restore_all(crate::got::Set::Heap);
    }
}

fn tracing() -> bool {
    lifecycle::recording_heap()
}

/// The calling thread exits (or a new thread takes a thread pointer an
/// old one had): its blocks are finished and its slot freed. Whether it
/// had one.
pub fn forget_current_thread() -> bool {
    let thread = sys::thread_pointer();
    let start = home(thread);
    for step in 0..MAX_THREADS {
        let slot = &SLOTS[(start + step) % MAX_THREADS];
        match slot.thread.load(Ordering::Acquire) {
            t if t == thread => {
                if !take(&slot.busy) {
                    return false;
                }
                retire_thread(slot);
                slot.thread.store(TOMBSTONE, Ordering::Release);
                give_back(&slot.busy);
                return true;
            }
            EMPTY => return false,
            _ => {}
        }
    }
    false
}

/// In a fork child: every slot is a parent's thread's (the forking
/// thread's too: it has a new tid here). Their mappings are the child's
/// copies and are dropped without touching the files.
pub fn forget_after_fork() {
    for slot in SLOTS.iter() {
        if slot.thread.load(Ordering::Acquire) != EMPTY {
            // SAFETY: the child has one thread, inside fork's child path.
            let owned = unsafe { &mut *slot.owned.get() };
            owned.events.release();
            owned.sync_events.release();
            owned.io_events.release();
            owned.mpi_events.release();
            owned.stacks.release();
            owned.stack_cache = StackCache::new();
            slot.events.store(0, Ordering::Relaxed);
            slot.io_calls.store(0, Ordering::Relaxed);
            slot.busy.store(false, Ordering::Release);
            slot.thread.store(TOMBSTONE, Ordering::Release);
        }
    }
}

/// The executable segment of libcollector.so.
fn own_text() -> Option<(u64, u64)> {
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    let here = own_text as *const c_void;
    // SAFETY: dladdr fills `info` for an address of ours.
    if unsafe { libc::dladdr(here, &mut info) } == 0 {
        return None;
    }
    let base = info.dli_fbase as u64;
    let mut found = (base, here as u64, 0u64);
    extern "C" fn each(info: *mut libc::dl_phdr_info, _size: usize, data: *mut c_void) -> c_int {
        // SAFETY: dl_iterate_phdr passes valid info; data is our tuple.
        let (info, found) = unsafe { (&*info, &mut *data.cast::<(u64, u64, u64)>()) };
        if info.dlpi_addr != found.0 {
            return 0;
        }
        for i in 0..usize::from(info.dlpi_phnum) {
            // SAFETY: dlpi_phdr has dlpi_phnum entries.
            let phdr = unsafe { &*info.dlpi_phdr.add(i) };
            let start = info.dlpi_addr + phdr.p_vaddr;
            let end = start + phdr.p_memsz;
            if phdr.p_type == libc::PT_LOAD && (start..end).contains(&found.1) {
                found.1 = start;
                found.2 = end;
                return 1;
            }
        }
        0
    }
    // SAFETY: the callback only reads what dl_iterate_phdr gives it.
    unsafe { libc::dl_iterate_phdr(Some(each), (&mut found as *mut (u64, u64, u64)).cast()) };
    (found.2 != 0).then_some((found.1, found.2))
}

/// Says in the log which allocator the program's calls reach and whether
/// the hooks see them: `heap allocator=PATH traced=1|0`, and a warning
/// naming the functions of the malloc family the program defines itself
/// ahead of ours (a bump allocator in the executable, say): their calls
/// never pass through a hook. Preloaded, ours must be the first
/// definition; attached, the GOT entries are redirected, which reaches
/// every caller but the executable's own calls to its own functions
/// (direct calls, through no GOT entry).
fn log_allocator() {
    let first = |name: &std::ffi::CStr| -> usize {
        // SAFETY: dlsym with a NUL-terminated name; RTLD_DEFAULT is the
        // program's lookup scope.
        unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) as usize }
    };
    let executable = main_program_base();
    let hides_ours = |address: usize| {
        address != 0
            && if state::live() {
                object_base(address) == executable
            } else {
                !own_frame(address as u64)
            }
    };
    let hidden: Vec<(&str, usize)> = real::ALLOCATOR
        .iter()
        .map(|real| (real.name(), first(real.name())))
        .filter(|&(_, address)| hides_ours(address))
        .map(|(name, address)| (name.to_str().unwrap_or("?"), address))
        .collect();
    let malloc_hidden = hidden.iter().find(|(name, _)| *name == "malloc");
    if let Some(&(_, address)) = hidden.first() {
        let names: Vec<&str> = hidden.iter().map(|(name, _)| *name).collect();
        log::warning(&format!(
            "the program's own {} (in {}) come before rdbx's: heap tracing does not see their calls",
            names.join(", "),
            object_name(address, executable)
        ));
    }
    // The allocator the program's malloc calls end in: ours forwards to
    // the next definition (libc's, or a preloaded allocator's).
    let (allocator, traced) = match malloc_hidden {
        Some(&(_, address)) => (address, false),
        None => (real::MALLOC.resolved(), true),
    };
    log::write("heap", |line| {
        line.str("allocator", object_name(allocator, executable).as_bytes());
        line.u64("traced", u64::from(traced));
    });
}

/// The load address of the object holding `address` (0: none).
fn object_base(address: usize) -> usize {
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: dladdr only reads the address.
    if address == 0 || unsafe { libc::dladdr(address as *const c_void, &mut info) } == 0 {
        return 0;
    }
    info.dli_fbase as usize
}

/// Where the executable is mapped from its first byte, as dladdr's
/// `dli_fbase` says it (for a non-PIE executable the loader's base is 0,
/// its first segment's address is not): dl_iterate_phdr's first object.
fn main_program_base() -> usize {
    extern "C" fn first(info: *mut libc::dl_phdr_info, _size: usize, data: *mut c_void) -> c_int {
        // SAFETY: dl_iterate_phdr passes valid info; data is our usize.
        let (info, base) = unsafe { (&*info, &mut *data.cast::<usize>()) };
        for i in 0..usize::from(info.dlpi_phnum) {
            // SAFETY: dlpi_phdr has dlpi_phnum entries.
            let phdr = unsafe { &*info.dlpi_phdr.add(i) };
            if phdr.p_type == libc::PT_LOAD {
                let start = info.dlpi_addr as usize + phdr.p_vaddr as usize;
                *base = start - (phdr.p_offset as usize).min(start);
                break;
            }
        }
        1
    }
    let mut base = 0usize;
    // SAFETY: the callback only reads what dl_iterate_phdr gives it.
    unsafe { libc::dl_iterate_phdr(Some(first), (&mut base as *mut usize).cast()) };
    base
}

/// The file of the object holding `address`: the executable by its full
/// path (the loader knows it by the name it was started with).
fn object_name(address: usize, executable: usize) -> String {
    let base = object_base(address);
    if base == 0 {
        return "unknown".into();
    }
    if base == executable {
        if let Ok(path) = std::fs::read_link("/proc/self/exe") {
            return path.to_string_lossy().into_owned();
        }
    }
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: dladdr only reads the address; its file name is a
    // NUL-terminated string when set.
    unsafe {
        if libc::dladdr(address as *const c_void, &mut info) == 0 || info.dli_fname.is_null() {
            return "unknown".into();
        }
        std::ffi::CStr::from_ptr(info.dli_fname)
            .to_string_lossy()
            .into_owned()
    }
}

// ---- recording ------------------------------------------------------------

fn own_frame(pc: u64) -> bool {
    (OWN_TEXT_START.load(Ordering::Relaxed)..OWN_TEXT_END.load(Ordering::Relaxed)).contains(&pc)
}

/// Unwinds from here, for a hook's record: the pcs (leaf first) go to
/// the walk space's `pcs`; returns the range holding the program's frames
/// (ours cut) and the status.
#[inline(never)]
fn unwind_here(stack_cache: &mut StackCache, space: &mut WalkSpace) -> (usize, usize, StackStatus) {
    let (pc, rsp, rbp): (u64, u64, u64);
    // SAFETY: reads three registers; no memory, no stack, no flags.
    unsafe {
        std::arch::asm!(
            "lea {pc}, [rip]",
            "mov {sp}, rsp",
            "mov {bp}, rbp",
            pc = out(reg) pc,
            sp = out(reg) rsp,
            bp = out(reg) rbp,
            options(nomem, nostack, preserves_flags)
        );
    }
    let limit = (state::depth_limit().min(MAX_HEAP_DEPTH) + OWN_FRAMES).min(space.pcs.len());
    let WalkSpace {
        memo, scratch, pcs, ..
    } = space;
    let out = &mut pcs[..limit];
    let unwound = unwind::unwind_memoized((pc, rsp, rbp), stack_cache, memo, scratch, out);
    let depth = unwound.depth.min(limit);
    let first = pcs[..depth]
        .iter()
        .position(|&pc| !own_frame(pc))
        .unwrap_or(depth);
    let status = match unwound.status {
        unwind::UnwindStatus::Complete => StackStatus::Complete,
        unwind::UnwindStatus::Truncated => StackStatus::Truncated,
        unwind::UnwindStatus::Failed => StackStatus::Failed,
    };
    (first, depth, status)
}

/// Records an allocation (or realloc, or mmap) that returned `address`.
fn record_allocation(op: HeapOp, address: *mut c_void, size: usize, old: *mut c_void) {
    if !tracing() {
        return;
    }
    let Some(mut busy) = Busy::enter() else {
        UNRECORDED.fetch_add(1, Ordering::Relaxed);
        return;
    };
    let order = ORDER.fetch_add(1, Ordering::Relaxed);
    let tid = busy.slot.tid.load(Ordering::Relaxed);
    let slot = busy.slot;
    let owned = busy.owned();
    let Some(space) = slot.walk_space() else {
        UNRECORDED.fetch_add(1, Ordering::Relaxed);
        return;
    };
    // SAFETY: see Slot::walk_space; no other reference to it exists.
    let space = unsafe { &mut *space };
    let (first, depth, status) = unwind_here(&mut owned.stack_cache, space);
    let pcs = &space.pcs[first..depth];
    let timestamp = sys::monotonic_coarse_ns();
    let ids = Some(&mut space.ids);
    let id = match state::record_stack(&mut owned.stacks, ids, tid, timestamp, status, pcs) {
        Ok(id) => id,
        Err(err) => return failed(err),
    };
    let event = HeapEvent {
        op,
        order,
        timestamp_ns: timestamp,
        address: address as u64,
        size: size as u64,
        old_address: old as u64,
        stack_id: id,
    };
    write_event(owned, tid, &event);
    count_event(busy.slot);
}

/// For another kind of hook (sync.rs): runs `write` with the calling
/// thread's `sync` cursor, its tid and the id of the call's stack
/// (unwound from here, the collector's frames cut: it starts at the
/// hook's caller). Returns false without calling it when the thread is
/// inside a hook already (or has no slot, or no memory for the walk);
/// a write error is `write`'s result.
pub(crate) fn record_sync(
    timestamp_ns: u64,
    write: impl FnOnce(&mut Cursor, i32, u64) -> Result<(), WriteError>,
) -> Result<bool, WriteError> {
    record_hooked(
        Hooked::Sync,
        |_| (timestamp_ns, ()),
        |cursor, tid, id, ()| write(cursor, tid, id),
    )
}

/// The kinds of hook that record through a thread's slot besides the
/// heap's.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Hooked {
    Sync,
    Io,
    Mpi,
}

/// [`record_sync`] for the I/O hooks (io.rs): the thread's `io` cursor,
/// and the call's start and duration in ns from its stamps (converted with
/// the thread's anchor). Counts the calls recorded, and those not recorded
/// because the thread was inside a hook already (the collector's own calls
/// never come here: they are raw system calls).
pub(crate) fn record_io(
    start: Marked<tsc::Stamp>,
    end: Marked<tsc::Stamp>,
    write: impl FnOnce(&mut Cursor, i32, u64, (u64, u64)) -> Result<(), WriteError>,
) -> Result<bool, WriteError> {
    let when = |anchor: &mut tsc::Anchor| timed_call(anchor, start, end);
    let recorded = record_hooked(Hooked::Io, when, write);
    if recorded == Ok(false) {
        IO_UNRECORDED.fetch_add(1, Ordering::Relaxed);
    }
    recorded
}

/// [`record_io`] for the MPI hooks (mpi.rs): the thread's `mpi` cursor, the
/// call's start and duration in ns from its stamps, less the time rdbx held
/// the process stopped. Ok(false) when the thread was inside a hook already.
pub(crate) fn record_mpi(
    start: Marked<tsc::Stamp>,
    end: Marked<tsc::Stamp>,
    write: impl FnOnce(&mut Cursor, i32, u64, (u64, u64)) -> Result<(), WriteError>,
) -> Result<bool, WriteError> {
    let when = |anchor: &mut tsc::Anchor| timed_call(anchor, start, end);
    record_hooked(Hooked::Mpi, when, write)
}

/// A traced call from `start` to `end` in ns (converted with the thread's
/// `anchor`): its end, and its start and duration. The duration is the
/// program's: less the time rdbx held the process stopped during the call
/// (hold.rs).
fn timed_call(
    anchor: &mut tsc::Anchor,
    start: Marked<tsc::Stamp>,
    end: Marked<tsc::Stamp>,
) -> (u64, (u64, u64)) {
    let (start_ns, wall_ns) = anchor.span(start.at, end.at);
    let end_ns = start_ns.saturating_add(wall_ns);
    let held_ns = hold::held_between(start.mark, start_ns, end.mark, end_ns);
    (end_ns, (start_ns, wall_ns.saturating_sub(held_ns)))
}

/// I/O calls recorded (every thread's, gone ones too) and calls seen but
/// not recorded, for the `io_totals` line.
pub fn io_counts() -> (u64, u64) {
    let live: u64 = SLOTS
        .iter()
        .map(|s| s.io_calls.load(Ordering::Relaxed))
        .sum();
    (
        live + IO_CALLS_OF_GONE_THREADS.load(Ordering::Relaxed),
        IO_UNRECORDED.load(Ordering::Relaxed),
    )
}

/// A hook's record: the stack walked and written, then `write` with the
/// thread's cursor of `kind`'s file (see [`record_sync`]). `when` gives
/// the stack record's timestamp and what `write` needs of the time, with
/// the thread's clock anchor.
fn record_hooked<T>(
    kind: Hooked,
    when: impl FnOnce(&mut tsc::Anchor) -> (u64, T),
    write: impl FnOnce(&mut Cursor, i32, u64, T) -> Result<(), WriteError>,
) -> Result<bool, WriteError> {
    let Some(mut busy) = Busy::enter() else {
        return Ok(false);
    };
    let tid = busy.slot.tid.load(Ordering::Relaxed);
    let slot = busy.slot;
    let owned = busy.owned();
    let Some(space) = slot.walk_space() else {
        return Ok(false);
    };
    let (timestamp_ns, time) = when(&mut owned.clock);
    // SAFETY: see Slot::walk_space; no other reference to it exists.
    let space = unsafe { &mut *space };
    let (first, depth, status) = unwind_here(&mut owned.stack_cache, space);
    let pcs = &space.pcs[first..depth];
    let ids = Some(&mut space.ids);
    let id = state::record_stack(&mut owned.stacks, ids, tid, timestamp_ns, status, pcs)?;
    match kind {
        Hooked::Sync => write(&mut owned.sync_events, tid, id, time)?,
        Hooked::Io => {
            write(&mut owned.io_events, tid, id, time)?;
            // Still busy: no handler of this thread counts meanwhile.
            let calls = slot.io_calls.load(Ordering::Relaxed);
            slot.io_calls.store(calls + 1, Ordering::Relaxed);
        }
        Hooked::Mpi => write(&mut owned.mpi_events, tid, id, time)?,
    }
    Ok(true)
}

fn count_event(slot: &Slot) {
    let events = slot.events.load(Ordering::Relaxed);
    slot.events.store(events + 1, Ordering::Relaxed);
}

/// Records the release of `address` (free, the old block of a realloc,
/// munmap) under an order number taken before the real call.
fn record_release(op: HeapOp, order: u64, address: *mut c_void, size: usize) {
    let Some(mut busy) = Busy::enter() else {
        UNRECORDED.fetch_add(1, Ordering::Relaxed);
        return;
    };
    let tid = busy.slot.tid.load(Ordering::Relaxed);
    let event = HeapEvent {
        op,
        order,
        timestamp_ns: sys::monotonic_coarse_ns(),
        address: address as u64,
        size: size as u64,
        old_address: 0,
        stack_id: 0,
    };
    write_event(busy.owned(), tid, &event);
    count_event(busy.slot);
}

fn write_event(owned: &mut Owned, tid: i32, event: &HeapEvent) {
    let Owned { events, delta, .. } = owned;
    let written = state::HEAP.append_encoded(
        events,
        &state::BUDGET,
        tid,
        event.timestamp_ns,
        MAX_HEAP_RECORD_SIZE,
        |writer, fresh| {
            if fresh {
                *delta = HeapDelta::block_start(event.timestamp_ns);
            }
            let mut record = [0u8; MAX_HEAP_RECORD_SIZE];
            let len = delta.encode(event, &mut record);
            writer.push_bytes(&record[..len])
        },
    );
    if let Err(err) = written {
        failed(err);
    }
}

/// Tracing stops (the program runs on); the log says why, once.
fn failed(err: WriteError) {
    if !lifecycle::heap_off() {
        return;
    }
    match err {
        WriteError::Limit => log::warning("data limit reached: heap tracing stopped"),
        WriteError::Disk => {
            log::warning("cannot extend the heap file (disk full?): heap tracing stopped")
        }
        WriteError::TooLarge => {
            log::warning("a heap record did not fit a block: heap tracing stopped")
        }
        WriteError::Closed => {}
    }
}

/// The `heap` log line at the end: events recorded and calls seen but not
/// recorded.
pub fn log_totals() {
    let live: u64 = SLOTS.iter().map(|s| s.events.load(Ordering::Relaxed)).sum();
    let events = live + EVENTS_OF_GONE_THREADS.load(Ordering::Relaxed);
    let (walks, reused) = walk_counts();
    log::write("heap_totals", |line| {
        line.u64("events", events);
        line.u64("walks", walks);
        line.u64("walks_reused", reused);
        line.u64("unrecorded", UNRECORDED.load(Ordering::Relaxed));
    });
}

/// Stack walks made for heap events, and how many reused remembered
/// frames (the memo's hit rate), over the threads that have a walk space.
fn walk_counts() -> (u64, u64) {
    let mut totals = (0, 0);
    for slot in SLOTS.iter() {
        let space = slot.walk.load(Ordering::Acquire);
        if space.is_null() {
            continue;
        }
        // SAFETY: a walk space stays mapped once mapped; its counters are
        // atomics.
        let (walks, hits) = unsafe { (*space).memo.counts() };
        totals.0 += walks;
        totals.1 += hits;
    }
    totals
}

/// Keeps the calling thread from recording until dropped (across fork: in
/// the child, the slot is the parent's thread's until it is forgotten).
pub struct Hold {
    slot: Option<&'static Slot>,
}

pub fn hold_current_thread() -> Hold {
    let slot = current_slot().filter(|slot| take(&slot.busy));
    Hold { slot }
}

impl Drop for Hold {
    fn drop(&mut self) {
        if let Some(slot) = self.slot {
            give_back(&slot.busy);
        }
    }
}

/// The order number the next heap event gets: samples carry it, so an
/// event is in the phase before a sample exactly when its order is lower.
pub fn order_now() -> u64 {
    ORDER.load(Ordering::Relaxed)
}

fn next_order() -> u64 {
    ORDER.fetch_add(1, Ordering::Relaxed)
}

// ---- the real functions ---------------------------------------------------

/// The next definition of a function, or None before it is resolved (then
/// glibc's own entry point serves).
fn next(real: &Real) -> Option<usize> {
    match real.resolved() {
        0 => None,
        address => Some(address),
    }
}

type MallocFn = unsafe extern "C" fn(usize) -> *mut c_void;
type FreeFn = unsafe extern "C" fn(*mut c_void);
type CallocFn = unsafe extern "C" fn(usize, usize) -> *mut c_void;
type ReallocFn = unsafe extern "C" fn(*mut c_void, usize) -> *mut c_void;
type ReallocarrayFn = unsafe extern "C" fn(*mut c_void, usize, usize) -> *mut c_void;
type AlignFn = unsafe extern "C" fn(usize, usize) -> *mut c_void;
type PosixMemalignFn = unsafe extern "C" fn(*mut *mut c_void, usize, usize) -> c_int;

unsafe fn real_malloc(size: usize) -> *mut c_void {
    match next(&real::MALLOC) {
        Some(f) => std::mem::transmute::<usize, MallocFn>(f)(size),
        None => __libc_malloc(size),
    }
}

unsafe fn real_free(pointer: *mut c_void) {
    match next(&real::FREE) {
        Some(f) => std::mem::transmute::<usize, FreeFn>(f)(pointer),
        None => __libc_free(pointer),
    }
}

unsafe fn real_calloc(count: usize, size: usize) -> *mut c_void {
    match next(&real::CALLOC) {
        Some(f) => std::mem::transmute::<usize, CallocFn>(f)(count, size),
        None => __libc_calloc(count, size),
    }
}

unsafe fn real_realloc(pointer: *mut c_void, size: usize) -> *mut c_void {
    match next(&real::REALLOC) {
        Some(f) => std::mem::transmute::<usize, ReallocFn>(f)(pointer, size),
        None => __libc_realloc(pointer, size),
    }
}

unsafe fn real_reallocarray(pointer: *mut c_void, count: usize, size: usize) -> *mut c_void {
    match next(&real::REALLOCARRAY) {
        Some(f) => std::mem::transmute::<usize, ReallocarrayFn>(f)(pointer, count, size),
        None => match count.checked_mul(size) {
            Some(bytes) => __libc_realloc(pointer, bytes),
            None => {
                sys::set_errno(libc::ENOMEM);
                std::ptr::null_mut()
            }
        },
    }
}

unsafe fn real_aligned(real: &Real, alignment: usize, size: usize) -> *mut c_void {
    match next(real) {
        Some(f) => std::mem::transmute::<usize, AlignFn>(f)(alignment, size),
        None => __libc_memalign(alignment, size),
    }
}

// ---- the hooks ------------------------------------------------------------

/// # Safety
/// libc's malloc contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_malloc(size: usize) -> *mut c_void {
    let block = real_malloc(size);
    record_allocation(HeapOp::Malloc, block, size, std::ptr::null_mut());
    block
}

/// # Safety
/// libc's free contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_free(pointer: *mut c_void) {
    if !tracing() {
        return real_free(pointer);
    }
    // Recorded before the call: a free glibc finds wrong (a double free)
    // does not return.
    record_release(HeapOp::Free, next_order(), pointer, 0);
    real_free(pointer);
}

/// # Safety
/// libc's calloc contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_calloc(count: usize, size: usize) -> *mut c_void {
    let block = real_calloc(count, size);
    let bytes = count.saturating_mul(size);
    record_allocation(HeapOp::Calloc, block, bytes, std::ptr::null_mut());
    block
}

/// # Safety
/// libc's realloc contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_realloc(pointer: *mut c_void, size: usize) -> *mut c_void {
    if !tracing() {
        return real_realloc(pointer, size);
    }
    let order = next_order();
    let block = real_realloc(pointer, size);
    record_reallocation(order, pointer, block, size);
    block
}

/// # Safety
/// libc's reallocarray contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_reallocarray(
    pointer: *mut c_void,
    count: usize,
    size: usize,
) -> *mut c_void {
    if !tracing() {
        return real_reallocarray(pointer, count, size);
    }
    let order = next_order();
    let block = real_reallocarray(pointer, count, size);
    record_reallocation(order, pointer, block, count.saturating_mul(size));
    block
}

/// realloc's two halves: the old block is freed when the call succeeded
/// (or shrank to nothing), the new one allocated when there is one.
fn record_reallocation(order: u64, old: *mut c_void, new: *mut c_void, size: usize) {
    let freed = !old.is_null() && (!new.is_null() || size == 0);
    if freed {
        record_release(HeapOp::Free, order, old, 0);
    }
    if !new.is_null() || old.is_null() {
        record_allocation(HeapOp::Realloc, new, size, old);
    }
}

/// # Safety
/// libc's memalign contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_memalign(alignment: usize, size: usize) -> *mut c_void {
    let block = real_aligned(&real::MEMALIGN, alignment, size);
    record_allocation(HeapOp::Memalign, block, size, std::ptr::null_mut());
    block
}

/// # Safety
/// libc's aligned_alloc contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_aligned_alloc(alignment: usize, size: usize) -> *mut c_void {
    let block = real_aligned(&real::ALIGNED_ALLOC, alignment, size);
    record_allocation(HeapOp::Memalign, block, size, std::ptr::null_mut());
    block
}

/// # Safety
/// libc's posix_memalign contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_posix_memalign(
    out: *mut *mut c_void,
    alignment: usize,
    size: usize,
) -> c_int {
    let rc = match next(&real::POSIX_MEMALIGN) {
        Some(f) => std::mem::transmute::<usize, PosixMemalignFn>(f)(out, alignment, size),
        None => {
            let valid = alignment.is_power_of_two() && alignment.is_multiple_of(size_of::<usize>());
            if !valid {
                return libc::EINVAL;
            }
            let block = __libc_memalign(alignment, size);
            if block.is_null() {
                return libc::ENOMEM;
            }
            *out = block;
            0
        }
    };
    if rc == 0 {
        record_allocation(HeapOp::Memalign, *out, size, std::ptr::null_mut());
    }
    rc
}

/// # Safety
/// libc's valloc contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_valloc(size: usize) -> *mut c_void {
    let block = match next(&real::VALLOC) {
        Some(f) => std::mem::transmute::<usize, MallocFn>(f)(size),
        None => __libc_valloc(size),
    };
    record_allocation(HeapOp::Memalign, block, size, std::ptr::null_mut());
    block
}

/// # Safety
/// libc's pvalloc contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_pvalloc(size: usize) -> *mut c_void {
    let block = match next(&real::PVALLOC) {
        Some(f) => std::mem::transmute::<usize, MallocFn>(f)(size),
        None => __libc_pvalloc(size),
    };
    record_allocation(HeapOp::Memalign, block, size, std::ptr::null_mut());
    block
}

/// Anonymous private mappings are traced as their own kind; file and
/// shared mappings are not heap.
///
/// # Safety
/// libc's mmap contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_mmap(
    address: *mut c_void,
    length: usize,
    prot: c_int,
    flags: c_int,
    fd: c_int,
    offset: libc::off_t,
) -> *mut c_void {
    let mapped = sys::mmap_at(address.cast(), length, prot, flags, fd, offset);
    let anonymous = flags & libc::MAP_ANONYMOUS != 0 && flags & libc::MAP_SHARED == 0;
    if anonymous && mapped != libc::MAP_FAILED.cast() {
        record_allocation(HeapOp::Mmap, mapped.cast(), length, std::ptr::null_mut());
    }
    mapped.cast()
}

/// # Safety
/// libc's mmap64 contract (the same as mmap's on x86-64).
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_mmap64(
    address: *mut c_void,
    length: usize,
    prot: c_int,
    flags: c_int,
    fd: c_int,
    offset: libc::off_t,
) -> *mut c_void {
    hook_mmap(address, length, prot, flags, fd, offset)
}

/// # Safety
/// libc's munmap contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_munmap(address: *mut c_void, length: usize) -> c_int {
    if !tracing() {
        return sys::munmap_checked(address.cast(), length);
    }
    let order = next_order();
    let rc = sys::munmap_checked(address.cast(), length);
    if rc == 0 {
        record_release(HeapOp::Munmap, order, address, length);
    }
    rc
}

// ---- the exported entry points -----------------------------------------
// What the program's calls reach when the collector is preloaded; a
// process the collector was loaded into while running gets the hooks'
// addresses in its GOT instead (got.rs).

interposed! {
    malloc(size: usize) -> *mut c_void = hook_malloc, Some(&real::MALLOC);
    free(pointer: *mut c_void) = hook_free, Some(&real::FREE);
    calloc(count: usize, size: usize) -> *mut c_void = hook_calloc, Some(&real::CALLOC);
    realloc(pointer: *mut c_void, size: usize) -> *mut c_void = hook_realloc, Some(&real::REALLOC);
    reallocarray(pointer: *mut c_void, count: usize, size: usize) -> *mut c_void =
        hook_reallocarray, Some(&real::REALLOCARRAY);
    memalign(alignment: usize, size: usize) -> *mut c_void = hook_memalign, Some(&real::MEMALIGN);
    posix_memalign(out: *mut *mut c_void, alignment: usize, size: usize) -> c_int =
        hook_posix_memalign, Some(&real::POSIX_MEMALIGN);
    aligned_alloc(alignment: usize, size: usize) -> *mut c_void =
        hook_aligned_alloc, Some(&real::ALIGNED_ALLOC);
    valloc(size: usize) -> *mut c_void = hook_valloc, Some(&real::VALLOC);
    pvalloc(size: usize) -> *mut c_void = hook_pvalloc, Some(&real::PVALLOC);
    mmap(address: *mut c_void, length: usize, prot: c_int, flags: c_int, fd: c_int,
         offset: libc::off_t) -> *mut c_void = hook_mmap, None;
    mmap64(address: *mut c_void, length: usize, prot: c_int, flags: c_int, fd: c_int,
           offset: libc::off_t) -> *mut c_void = hook_mmap64, None;
    munmap(address: *mut c_void, length: usize) -> c_int = hook_munmap, None;
}
