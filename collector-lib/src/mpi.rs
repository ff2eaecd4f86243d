//! MPI tracing through the MPI profiling interface: the collector exports
//! `MPI_Send`, `MPI_Recv`, `MPI_Allreduce`, ... (preloaded, its definitions
//! come before the MPI library's), and each calls the library's `PMPI_`
//! entry of the same function, resolved once; the collector does not link
//! the MPI library. While an experiment traces MPI, each call is recorded
//! (the `mpi` file, docs/experiment-format.md) as the manual's "MPI
//! Tracing" describes: the time in the call, the messages and bytes sent
//! and received, the peer ranks (numbered in MPI_COMM_WORLD), tag,
//! communicator and call stack.
//!
//! Bytes are count × the datatype's size (`PMPI_Type_size`); a receive's
//! bytes are what arrived (`PMPI_Get_count` of its status, in bytes). A
//! nonblocking receive counts its message when posted and its bytes when a
//! call of the wait and test families completes it: the request is kept in
//! a table of pending receives until then (the library sets the program's
//! handle to MPI_REQUEST_NULL on completion, so the requests are looked up
//! before the call), and the completing call's record is followed by one
//! completion record per receive. Collectives are counted with the manual's
//! model (direct messages between every pair of ranks, itself included):
//! an MPI_Bcast's root sends G messages, every rank receives one.
//!
//! Handles, the status layout and the predefined objects are Open MPI's
//! (its `mpi.h`: handles are pointers, MPI_COMM_WORLD the address of
//! `ompi_mpi_comm_world`). With another MPI library the calls are still
//! forwarded unchanged (arguments are passed through as the registers
//! hold them) and timed, without bytes or peers.
//!
//! What runs on a recorded call allocates nothing and takes no lock of
//! ours: the thread's slot, busy flag and walk are heap.rs's, the pending
//! receives a fixed table of atomics, the scratch of a wait on many
//! requests is on the stack (or, past [`INLINE`] requests, an anonymous
//! mapping made and unmade by system calls). The library's own calls the
//! hooks make to learn sizes, counts and ranks run with the thread's busy
//! flag held: what the library allocates meanwhile is not the program's.
//! Once MPI_Finalize is entered no such call is made.
//!
//! Not traced: persistent requests (MPI_Send_init, MPI_Recv_init,
//! MPI_Start), nonblocking collectives, one-sided transfers (MPI_Put,
//! MPI_Get: MPI_Win_fence and MPI_Win_lock are, as other calls), MPI-IO,
//! and calls made through the Fortran bindings.

use crate::blocks::{Cursor, WriteError};
use crate::hold::{self, Marked};
use crate::real::Real;
use crate::{heap, lifecycle, log, state, sys, tsc};
use experiment::mpi::{
    MpiEvent, MpiOp, MPI_RECORD_SIZE, NO_COMM, NO_RANK, NO_TAG, PROC_NULL_RANK, UNKNOWN_RANK,
};
use std::ffi::{c_char, c_int, c_void};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, AtomicUsize, Ordering};

/// An MPI handle (MPI_Comm, MPI_Datatype, MPI_Request, MPI_Op, MPI_Win,
/// MPI_Group): a pointer in Open MPI, passed on as the program gave it.
type Handle = *mut c_void;
type Buffer = *const c_void;

const MPI_SUCCESS: c_int = 0;
/// What a hook returns when the library has no such function.
const MPI_ERR_INTERN: c_int = 17;
const MPI_PROC_NULL: c_int = -2;
const MPI_UNDEFINED: c_int = -32766;
const MPI_IN_PLACE: usize = 1;

/// Open MPI's MPI_Status.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct Status {
    source: c_int,
    tag: c_int,
    error: c_int,
    cancelled: c_int,
    count: usize,
}

impl Status {
    const EMPTY: Status = Status {
        source: 0,
        tag: 0,
        error: 0,
        cancelled: 0,
        count: 0,
    };
}

// ---- the library -----------------------------------------------------------

macro_rules! entry_points {
    ($( $static:ident = $name:literal; )*) => {
        $( static $static: Real = Real::new($name); )*
        /// Everything looked up in the MPI library.
        const LIBRARY: &[&Real] = &[$( &$static, )*];
    };
}

entry_points! {
    PMPI_INIT = c"PMPI_Init";
    PMPI_INIT_THREAD = c"PMPI_Init_thread";
    PMPI_FINALIZE = c"PMPI_Finalize";
    PMPI_INITIALIZED = c"PMPI_Initialized";
    PMPI_FINALIZED = c"PMPI_Finalized";
    PMPI_SEND = c"PMPI_Send";
    PMPI_BSEND = c"PMPI_Bsend";
    PMPI_SSEND = c"PMPI_Ssend";
    PMPI_RSEND = c"PMPI_Rsend";
    PMPI_ISEND = c"PMPI_Isend";
    PMPI_IBSEND = c"PMPI_Ibsend";
    PMPI_ISSEND = c"PMPI_Issend";
    PMPI_IRSEND = c"PMPI_Irsend";
    PMPI_RECV = c"PMPI_Recv";
    PMPI_IRECV = c"PMPI_Irecv";
    PMPI_SENDRECV = c"PMPI_Sendrecv";
    PMPI_SENDRECV_REPLACE = c"PMPI_Sendrecv_replace";
    PMPI_PROBE = c"PMPI_Probe";
    PMPI_IPROBE = c"PMPI_Iprobe";
    PMPI_WAIT = c"PMPI_Wait";
    PMPI_WAITALL = c"PMPI_Waitall";
    PMPI_WAITANY = c"PMPI_Waitany";
    PMPI_WAITSOME = c"PMPI_Waitsome";
    PMPI_TEST = c"PMPI_Test";
    PMPI_TESTALL = c"PMPI_Testall";
    PMPI_TESTANY = c"PMPI_Testany";
    PMPI_TESTSOME = c"PMPI_Testsome";
    PMPI_REQUEST_FREE = c"PMPI_Request_free";
    PMPI_BARRIER = c"PMPI_Barrier";
    PMPI_BCAST = c"PMPI_Bcast";
    PMPI_REDUCE = c"PMPI_Reduce";
    PMPI_ALLREDUCE = c"PMPI_Allreduce";
    PMPI_GATHER = c"PMPI_Gather";
    PMPI_GATHERV = c"PMPI_Gatherv";
    PMPI_SCATTER = c"PMPI_Scatter";
    PMPI_SCATTERV = c"PMPI_Scatterv";
    PMPI_ALLGATHER = c"PMPI_Allgather";
    PMPI_ALLGATHERV = c"PMPI_Allgatherv";
    PMPI_ALLTOALL = c"PMPI_Alltoall";
    PMPI_ALLTOALLV = c"PMPI_Alltoallv";
    PMPI_REDUCE_SCATTER = c"PMPI_Reduce_scatter";
    PMPI_REDUCE_SCATTER_BLOCK = c"PMPI_Reduce_scatter_block";
    PMPI_SCAN = c"PMPI_Scan";
    PMPI_EXSCAN = c"PMPI_Exscan";
    PMPI_WIN_FENCE = c"PMPI_Win_fence";
    PMPI_WIN_LOCK = c"PMPI_Win_lock";
    PMPI_TYPE_SIZE = c"PMPI_Type_size";
    PMPI_GET_COUNT = c"PMPI_Get_count";
    PMPI_COMM_RANK = c"PMPI_Comm_rank";
    PMPI_COMM_SIZE = c"PMPI_Comm_size";
    PMPI_COMM_C2F = c"PMPI_Comm_c2f";
    PMPI_COMM_TEST_INTER = c"PMPI_Comm_test_inter";
    PMPI_COMM_GROUP = c"PMPI_Comm_group";
    PMPI_COMM_REMOTE_GROUP = c"PMPI_Comm_remote_group";
    PMPI_GROUP_TRANSLATE_RANKS = c"PMPI_Group_translate_ranks";
    PMPI_GROUP_FREE = c"PMPI_Group_free";
    // Open MPI's predefined objects: their addresses are the handles.
    COMM_WORLD = c"ompi_mpi_comm_world";
    BYTE = c"ompi_mpi_byte";
    DATATYPE_NULL = c"ompi_mpi_datatype_null";
}

/// The helpers the hooks call to describe a call, and the objects they
/// compare handles with: all found means the library is Open MPI's.
const DESCRIBING: [&Real; 14] = [
    &PMPI_INITIALIZED,
    &PMPI_TYPE_SIZE,
    &PMPI_GET_COUNT,
    &PMPI_COMM_RANK,
    &PMPI_COMM_SIZE,
    &PMPI_COMM_C2F,
    &PMPI_COMM_TEST_INTER,
    &PMPI_COMM_GROUP,
    &PMPI_COMM_REMOTE_GROUP,
    &PMPI_GROUP_TRANSLATE_RANKS,
    &PMPI_GROUP_FREE,
    &COMM_WORLD,
    &BYTE,
    &DATATYPE_NULL,
];

/// The library's handles and status are understood (Open MPI's).
static UNDERSTOOD: AtomicBool = AtomicBool::new(false);
/// MPI_Finalize was entered: no more calls into the library of ours.
static FINALIZING: AtomicBool = AtomicBool::new(false);
/// MPI_COMM_WORLD's group, got once (a reference the process keeps).
static WORLD_GROUP: AtomicUsize = AtomicUsize::new(0);
/// The `mpi` line of this experiment was written.
static RANK_LOGGED: AtomicBool = AtomicBool::new(false);

/// Finds the library's functions and objects (the program's scope, as its
/// own calls find them: the collector defines no `PMPI_` name). Ordinary
/// context: dlsym may allocate.
fn learn_library() {
    for real in LIBRARY {
        if real.resolved() == 0 {
            // SAFETY: a NUL-terminated name; RTLD_DEFAULT is the program's scope.
            let found = unsafe { libc::dlsym(libc::RTLD_DEFAULT, real.name().as_ptr()) } as usize;
            if found != 0 {
                real.set(found);
            }
        }
    }
    let understood = DESCRIBING.iter().all(|real| real.resolved() != 0);
    UNDERSTOOD.store(understood, Ordering::Release);
}

/// The hooks may call the library to describe a call.
fn describable() -> bool {
    UNDERSTOOD.load(Ordering::Acquire) && !FINALIZING.load(Ordering::Acquire)
}

fn world() -> usize {
    COMM_WORLD.resolved()
}

type TypeSizeFn = unsafe extern "C" fn(Handle, *mut c_int) -> c_int;
type GetCountFn = unsafe extern "C" fn(*const Status, Handle, *mut c_int) -> c_int;
type CommIntFn = unsafe extern "C" fn(Handle, *mut c_int) -> c_int;
type CommC2fFn = unsafe extern "C" fn(Handle) -> c_int;
type CommGroupFn = unsafe extern "C" fn(Handle, *mut Handle) -> c_int;
type TranslateFn = unsafe extern "C" fn(Handle, c_int, *const c_int, Handle, *mut c_int) -> c_int;
type GroupFreeFn = unsafe extern "C" fn(*mut Handle) -> c_int;
type FlagFn = unsafe extern "C" fn(*mut c_int) -> c_int;

/// A datatype's size in bytes (0 for MPI_DATATYPE_NULL or an error).
fn type_size(datatype: Handle) -> u64 {
    if datatype.is_null() || datatype as usize == DATATYPE_NULL.resolved() {
        return 0;
    }
    let mut size: c_int = 0;
    let rc = call_real!(PMPI_TYPE_SIZE, TypeSizeFn, MPI_ERR_INTERN; datatype, &mut size);
    if rc != MPI_SUCCESS || size < 0 {
        return 0;
    }
    size as u64
}

/// `count` elements of `datatype`, in bytes.
fn bytes_of(count: c_int, datatype: Handle) -> u64 {
    match u64::try_from(count) {
        Ok(count) if count > 0 => count.saturating_mul(type_size(datatype)),
        _ => 0,
    }
}

/// The sum of `counts[..n]` elements of `datatype`, in bytes.
///
/// # Safety
/// `counts` holds `n` numbers (or is NULL).
unsafe fn bytes_of_counts(counts: *const c_int, n: u32, datatype: Handle) -> u64 {
    if counts.is_null() {
        return 0;
    }
    let size = type_size(datatype);
    (0..n as usize)
        .map(|i| u64::try_from(*counts.add(i)).unwrap_or(0))
        .fold(0u64, |sum, count| {
            sum.saturating_add(count.saturating_mul(size))
        })
}

/// The bytes a completed receive's status says arrived.
fn received_bytes(status: *const Status) -> u64 {
    if status.is_null() {
        return 0;
    }
    let mut count: c_int = 0;
    let byte = BYTE.resolved() as Handle;
    let rc = call_real!(PMPI_GET_COUNT, GetCountFn, MPI_ERR_INTERN; status, byte, &mut count);
    if rc != MPI_SUCCESS {
        return 0;
    }
    u64::try_from(count).unwrap_or(0)
}

fn comm_int(real: &Real, comm: Handle) -> Option<c_int> {
    let mut out: c_int = 0;
    let rc = call_real!(real, CommIntFn, MPI_ERR_INTERN; comm, &mut out);
    (rc == MPI_SUCCESS).then_some(out)
}

/// The number of ranks of an intracommunicator (None for an intercommunicator).
fn intra_size(comm: Handle) -> Option<u32> {
    if comm_int(&PMPI_COMM_TEST_INTER, comm)? != 0 {
        return None;
    }
    u32::try_from(comm_int(&PMPI_COMM_SIZE, comm)?).ok()
}

/// The communicator's Fortran handle (0 is MPI_COMM_WORLD in Open MPI).
fn comm_number(comm: Handle) -> i32 {
    call_real!(PMPI_COMM_C2F, CommC2fFn, NO_COMM; comm)
}

/// MPI_COMM_WORLD's group, got on first use.
fn world_group() -> Option<Handle> {
    let known = WORLD_GROUP.load(Ordering::Acquire);
    if known != 0 {
        return Some(known as Handle);
    }
    let mut group: Handle = std::ptr::null_mut();
    let rc =
        call_real!(PMPI_COMM_GROUP, CommGroupFn, MPI_ERR_INTERN; world() as Handle, &mut group);
    if rc != MPI_SUCCESS || group.is_null() {
        return None;
    }
    match WORLD_GROUP.compare_exchange(0, group as usize, Ordering::AcqRel, Ordering::Acquire) {
        Ok(_) => Some(group),
        Err(other) => {
            free_group(group as usize);
            Some(other as Handle)
        }
    }
}

fn free_group(group: usize) {
    let mut handle = group as Handle;
    call_real!(PMPI_GROUP_FREE, GroupFreeFn, MPI_ERR_INTERN; &mut handle);
}

/// The group a communicator's ranks number: its remote group for an
/// intercommunicator (peers are there), else its own. A reference the
/// caller frees.
fn peer_group(comm: Handle) -> Option<usize> {
    let inter = comm_int(&PMPI_COMM_TEST_INTER, comm)?;
    let real = if inter != 0 {
        &PMPI_COMM_REMOTE_GROUP
    } else {
        &PMPI_COMM_GROUP
    };
    let mut group: Handle = std::ptr::null_mut();
    let rc = call_real!(real, CommGroupFn, MPI_ERR_INTERN; comm, &mut group);
    (rc == MPI_SUCCESS && !group.is_null()).then_some(group as usize)
}

/// Rank `rank` of `group` in MPI_COMM_WORLD.
fn world_rank_in(group: usize, rank: c_int) -> i32 {
    let Some(world) = world_group() else {
        return UNKNOWN_RANK;
    };
    let mut out: c_int = MPI_UNDEFINED;
    let rc = call_real!(PMPI_GROUP_TRANSLATE_RANKS, TranslateFn, MPI_ERR_INTERN;
        group as Handle, 1, &rank, world, &mut out);
    if rc != MPI_SUCCESS || out < 0 {
        return UNKNOWN_RANK;
    }
    out
}

/// A peer rank of `comm` (a destination, a source, a root) numbered in
/// MPI_COMM_WORLD; MPI_PROC_NULL and the wildcards as the record has them.
fn world_rank(comm: Handle, rank: c_int) -> i32 {
    match rank {
        MPI_PROC_NULL => PROC_NULL_RANK,
        r if r < 0 => NO_RANK,
        r if comm as usize == world() => r,
        r => match peer_group(comm) {
            Some(group) => {
                let out = world_rank_in(group, r);
                free_group(group);
                out
            }
            None => UNKNOWN_RANK,
        },
    }
}

// ---- the pending receives ----------------------------------------------------

/// Slots of the table of pending receives.
const PENDING_SLOTS: usize = 4096;
/// Slots looked at from a request's home slot.
const PROBES: usize = 64;
const FREE: usize = 0;
const GONE: usize = usize::MAX;
const CLAIMED: usize = usize::MAX - 1;
/// `tracked` of a request that is no pending receive.
const UNTRACKED: u32 = u32::MAX;

/// A nonblocking receive posted and not completed yet.
struct Pending {
    /// The request handle (or FREE, GONE, CLAIMED).
    request: AtomicUsize,
    /// The communicator's peer group (a reference of ours); 0 for
    /// MPI_COMM_WORLD, whose ranks are the world's.
    group: AtomicUsize,
    comm: AtomicI32,
}

static PENDING: [Pending; PENDING_SLOTS] = [const {
    Pending {
        request: AtomicUsize::new(FREE),
        group: AtomicUsize::new(0),
        comm: AtomicI32::new(NO_COMM),
    }
}; PENDING_SLOTS];
/// Receives in the table.
static LIVE: AtomicUsize = AtomicUsize::new(0);
/// Receives not tracked: the table had no room (their bytes are lost).
static UNTRACKED_RECEIVES: AtomicU64 = AtomicU64::new(0);

fn home(request: usize) -> usize {
    (request >> 4).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 52
}

/// The slot of a pending receive's request.
fn find(request: usize) -> Option<usize> {
    if request == FREE || request >= CLAIMED {
        return None;
    }
    let start = home(request);
    for probe in 0..PROBES {
        let at = (start + probe) % PENDING_SLOTS;
        match PENDING[at].request.load(Ordering::Acquire) {
            r if r == request => return Some(at),
            FREE => return None,
            _ => {}
        }
    }
    None
}

/// Takes the receive out of the table: its group, to be freed.
fn take(at: usize) -> (usize, i32) {
    let slot = &PENDING[at];
    let group = slot.group.swap(0, Ordering::AcqRel);
    let comm = slot.comm.load(Ordering::Relaxed);
    slot.request.store(GONE, Ordering::Release);
    LIVE.fetch_sub(1, Ordering::AcqRel);
    (group, comm)
}

/// Forgets `request` if it is in the table (a request handle the library
/// gave out again while a receive of the same handle was never seen
/// completed).
fn forget(request: usize) {
    if LIVE.load(Ordering::Acquire) == 0 {
        return;
    }
    if let Some(at) = find(request) {
        let (group, _) = take(at);
        if group != 0 {
            free_group(group);
        }
    }
}

/// Puts a posted receive in the table; false when there is no room.
fn remember(request: usize, group: usize, comm: i32) -> bool {
    forget(request);
    let start = home(request);
    for probe in 0..PROBES {
        let slot = &PENDING[(start + probe) % PENDING_SLOTS];
        let current = slot.request.load(Ordering::Acquire);
        if current != FREE && current != GONE {
            continue;
        }
        if slot
            .request
            .compare_exchange(current, CLAIMED, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            continue;
        }
        slot.group.store(group, Ordering::Relaxed);
        slot.comm.store(comm, Ordering::Relaxed);
        LIVE.fetch_add(1, Ordering::AcqRel);
        slot.request.store(request, Ordering::Release);
        return true;
    }
    UNTRACKED_RECEIVES.fetch_add(1, Ordering::Relaxed);
    false
}

// ---- waits and tests on requests ---------------------------------------------

/// Requests a wait or test handles with the stack's scratch; more use a mapping.
const INLINE: usize = 32;

/// One receive a call completed.
#[derive(Clone, Copy)]
struct Done {
    bytes: u64,
    source: i32,
    tag: i32,
    comm: i32,
}

impl Done {
    const EMPTY: Done = Done {
        bytes: 0,
        source: NO_RANK,
        tag: NO_TAG,
        comm: NO_COMM,
    };
}

/// What a call of the wait and test families keeps about its requests:
/// which are pending receives (their table slots, looked up before the
/// call), statuses of its own when the program ignores them, and the
/// receives it completed.
struct Scratch<'a> {
    tracked: &'a mut [u32],
    statuses: &'a mut [Status],
    done: &'a mut [Done],
    finished: usize,
}

impl Scratch<'_> {
    /// Looks the requests up; whether any is a pending receive.
    ///
    /// # Safety
    /// `requests` holds `tracked.len()` handles.
    unsafe fn look_up(&mut self, requests: *const Handle) -> bool {
        let mut any = false;
        for (i, tracked) in self.tracked.iter_mut().enumerate() {
            *tracked = match find(*requests.add(i) as usize) {
                Some(at) => {
                    any = true;
                    at as u32
                }
                None => UNTRACKED,
            };
        }
        any
    }

    /// The statuses to give the library: the program's, or ours when it
    /// ignores them and a pending receive needs one (one per request).
    fn statuses_for(&mut self, program: *mut Status, any: bool) -> *mut Status {
        if program.is_null() && any && self.statuses.len() == self.tracked.len() {
            self.statuses.as_mut_ptr()
        } else {
            program
        }
    }

    /// Request `index` completed with `status`: a pending receive leaves
    /// the table, with its bytes, source and tag.
    fn complete(&mut self, index: c_int, status: *const Status) {
        let Some(&at) = usize::try_from(index)
            .ok()
            .and_then(|i| self.tracked.get(i))
        else {
            return;
        };
        if at == UNTRACKED {
            return;
        }
        let (group, comm) = take(at as usize);
        let mut done = Done {
            comm,
            ..Done::EMPTY
        };
        if describable() && !status.is_null() {
            // SAFETY: the library filled the status of a completed request.
            let status_now = unsafe { *status };
            done.bytes = received_bytes(status);
            done.tag = status_now.tag;
            done.source = match (status_now.source, group) {
                (MPI_PROC_NULL, _) => PROC_NULL_RANK,
                (source, 0) => source,
                (source, group) => world_rank_in(group, source),
            };
        }
        if group != 0 {
            free_group(group);
        }
        if let Some(slot) = self.done.get_mut(self.finished) {
            *slot = done;
            self.finished += 1;
        }
    }

    fn completed(&self) -> &[Done] {
        &self.done[..self.finished]
    }
}

/// Runs `body` with scratch for `count` requests.
fn with_scratch<R>(count: usize, body: impl FnOnce(&mut Scratch<'_>) -> R) -> R {
    if count == 0 {
        return body(&mut Scratch {
            tracked: &mut [],
            statuses: &mut [],
            done: &mut [],
            finished: 0,
        });
    }
    if count <= INLINE {
        let mut tracked = [UNTRACKED; INLINE];
        let mut statuses = [Status::EMPTY; INLINE];
        let mut done = [Done::EMPTY; INLINE];
        return body(&mut Scratch {
            tracked: &mut tracked[..count],
            statuses: &mut statuses[..count],
            done: &mut done[..count],
            finished: 0,
        });
    }
    let each = size_of::<Status>() + size_of::<Done>() + size_of::<u32>();
    let length = count.saturating_mul(each).next_multiple_of(4096);
    let mapped = sys::mmap_raw(
        length,
        libc::PROT_READ | libc::PROT_WRITE,
        libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
        -1,
        0,
    );
    if mapped == libc::MAP_FAILED.cast() {
        // No room to follow the receives: they stay in the table until
        // their handles are given out again.
        return body(&mut Scratch {
            tracked: &mut [],
            statuses: &mut [],
            done: &mut [],
            finished: 0,
        });
    }
    // SAFETY: a fresh mapping of `length` zeroed bytes, carved into three
    // arrays in order of alignment; zero is a valid Status and Done.
    let result = unsafe {
        let statuses = std::slice::from_raw_parts_mut(mapped.cast::<Status>(), count);
        let done_at = mapped.add(count * size_of::<Status>());
        let done = std::slice::from_raw_parts_mut(done_at.cast::<Done>(), count);
        let tracked_at = done_at.add(count * size_of::<Done>());
        let tracked = std::slice::from_raw_parts_mut(tracked_at.cast::<u32>(), count);
        tracked.fill(UNTRACKED);
        body(&mut Scratch {
            tracked,
            statuses,
            done,
            finished: 0,
        })
    };
    // SAFETY: our mapping, no longer used.
    unsafe { sys::munmap_raw(mapped, length) };
    result
}

/// Status `index` of an array (NULL when the program ignores them).
fn status_at(statuses: *mut Status, index: c_int) -> *const Status {
    match usize::try_from(index) {
        Ok(i) if !statuses.is_null() => statuses.wrapping_add(i),
        _ => std::ptr::null(),
    }
}

// ---- recording ---------------------------------------------------------------

/// MPI calls recorded, and those not (made while the thread was inside
/// another of the collector's hooks, or had no slot).
static CALLS: AtomicU64 = AtomicU64::new(0);
static UNRECORDED: AtomicU64 = AtomicU64::new(0);

/// A call of `op`: not recording, the real call alone; else timed, then
/// `describe` fills its record from the result (only when it succeeded
/// and the library can be asked), and the record is written.
#[inline(always)]
fn traced(op: MpiOp, call: impl FnOnce() -> c_int, describe: impl FnOnce(&mut MpiEvent)) -> c_int {
    if !lifecycle::recording_mpi() {
        return call();
    }
    let start = hold::marked(tsc::stamp);
    let rc = call();
    let end = hold::marked(tsc::stamp);
    let saved = sys::errno();
    let mut event = MpiEvent::call(op);
    event.failed = rc != MPI_SUCCESS;
    if !event.failed && describable() {
        let _held = heap::hold_current_thread();
        describe(&mut event);
    }
    record(event, &[], start, end);
    sys::set_errno(saved);
    rc
}

/// A call of the wait and test families on `count` requests: the pending
/// receives among them looked up before the call, those it completed
/// (`finish` says which, from the result) taken out of the table after it,
/// and recorded after the call's own record. The table is kept whether or
/// not the experiment records now.
#[inline(always)]
fn completing(
    op: MpiOp,
    count: usize,
    requests: *const Handle,
    call: impl FnOnce(&mut Scratch<'_>, bool) -> c_int,
    finish: impl FnOnce(c_int, &mut Scratch<'_>),
) -> c_int {
    let recording = lifecycle::recording_mpi();
    if LIVE.load(Ordering::Acquire) == 0 || requests.is_null() {
        return traced(
            op,
            || with_scratch(0, |scratch| call(scratch, false)),
            |_| {},
        );
    }
    with_scratch(count, |scratch| {
        // SAFETY: the program's array of `count` requests.
        let any = unsafe { scratch.look_up(requests) };
        let start = recording.then(|| hold::marked(tsc::stamp));
        let rc = call(scratch, any);
        let end = recording.then(|| hold::marked(tsc::stamp));
        let saved = sys::errno();
        if any && rc == MPI_SUCCESS {
            let _held = heap::hold_current_thread();
            finish(rc, scratch);
        }
        if let (Some(start), Some(end)) = (start, end) {
            let mut event = MpiEvent::call(op);
            event.failed = rc != MPI_SUCCESS;
            record(event, scratch.completed(), start, end);
        }
        sys::set_errno(saved);
        rc
    })
}

fn append(cursor: &mut Cursor, tid: i32, end_ns: u64, event: &MpiEvent) -> Result<(), WriteError> {
    let bytes = event.encode();
    state::MPI.append(
        cursor,
        &state::BUDGET,
        tid,
        end_ns,
        MPI_RECORD_SIZE,
        |writer| writer.push_bytes(&bytes),
    )
}

/// Writes a call's record (and its completions') into the thread's block
/// of the `mpi` file, with its stack. Its time leaves out the time rdbx
/// held the process stopped (hold.rs).
#[inline(never)]
fn record(event: MpiEvent, done: &[Done], start: Marked<tsc::Stamp>, end: Marked<tsc::Stamp>) {
    let recorded = heap::record_mpi(start, end, |cursor, tid, stack_id, (start_ns, time_ns)| {
        let call = MpiEvent {
            stack_id,
            start_ns,
            time_ns,
            ..event
        };
        let end_ns = start_ns.saturating_add(time_ns);
        append(cursor, tid, end_ns, &call)?;
        for completed in done {
            let completion = MpiEvent {
                completion: true,
                failed: false,
                time_ns: 0,
                dest: NO_RANK,
                source: completed.source,
                tag: completed.tag,
                comm: completed.comm,
                bytes_sent: 0,
                bytes_received: completed.bytes,
                sends: 0,
                receives: 0,
                ..call
            };
            append(cursor, tid, end_ns, &completion)?;
        }
        Ok(())
    });
    match recorded {
        Ok(true) => {
            CALLS.fetch_add(1, Ordering::Relaxed);
        }
        Ok(false) => {
            UNRECORDED.fetch_add(1, Ordering::Relaxed);
        }
        Err(err) => failed(err),
    }
}

/// Tracing stops (the program runs on); the log says why, once.
fn failed(err: WriteError) {
    if !lifecycle::mpi_off() {
        return;
    }
    match err {
        WriteError::Limit => log::warning("data limit reached: MPI tracing stopped"),
        WriteError::Disk => {
            log::warning("cannot extend the mpi or stacks file (disk full?): MPI tracing stopped")
        }
        WriteError::TooLarge => {
            log::warning("an mpi record did not fit a block: MPI tracing stopped")
        }
        WriteError::Closed => {}
    }
}

// ---- describing calls ----------------------------------------------------------

/// A point-to-point send of `count` `datatype` to `dest` of `comm`.
fn sent(
    event: &mut MpiEvent,
    count: c_int,
    datatype: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
) {
    event.dest = world_rank(comm, dest);
    event.tag = tag;
    event.comm = comm_number(comm);
    event.sends = 1;
    if dest != MPI_PROC_NULL {
        event.bytes_sent = bytes_of(count, datatype);
    }
}

/// A completed receive on `comm` whose status is `status`.
fn received(event: &mut MpiEvent, status: *const Status, comm: Handle) {
    event.receives = 1;
    event.comm = comm_number(comm);
    if status.is_null() {
        return;
    }
    // SAFETY: the library filled the status of the completed receive.
    let status_now = unsafe { *status };
    event.source = world_rank(comm, status_now.source);
    event.tag = status_now.tag;
    event.bytes_received = received_bytes(status);
}

/// How the manual counts a collective on `comm`: `sends` messages of
/// `bytes_sent` bytes in all, `receives` of `bytes_received`; a rooted
/// one's root in `dest` and `source`.
struct Collective {
    sends: u32,
    bytes_sent: u64,
    receives: u32,
    bytes_received: u64,
}

fn collective(event: &mut MpiEvent, comm: Handle, root: Option<c_int>, counted: Collective) {
    event.comm = comm_number(comm);
    if let Some(root) = root {
        let root = world_rank(comm, root);
        event.dest = root;
        event.source = root;
    }
    event.sends = counted.sends;
    event.bytes_sent = counted.bytes_sent;
    event.receives = counted.receives;
    event.bytes_received = counted.bytes_received;
}

/// This rank's rank in `comm` and the number of ranks, for an
/// intracommunicator (collectives on intercommunicators are timed only).
fn place_in(comm: Handle) -> Option<(c_int, u32)> {
    let size = intra_size(comm)?;
    Some((comm_int(&PMPI_COMM_RANK, comm)?, size))
}

fn in_place(buffer: Buffer) -> bool {
    buffer as usize == MPI_IN_PLACE
}

// ---- starting and stopping -----------------------------------------------------

/// Before an experiment that traces MPI starts (ordinary context): the
/// slots' prerequisites and the library, when the process has it.
pub fn prepare() {
    heap::prepare_slots();
    tsc::prepare();
    learn_library();
}

/// Tracing starts. Attached, the GOT entries of the MPI functions are
/// redirected to the hooks first (`mpi_got entries=N`). A process whose MPI
/// is initialized already says its rank now, unless it is a fork child
/// (`in_fork_child`: a rank's child is no rank).
pub fn start_tracing(in_fork_child: bool) {
    // This experiment's counts (a fork child's start from zero too).
    for count in [&CALLS, &UNRECORDED, &UNTRACKED_RECEIVES] {
        count.store(0, Ordering::Relaxed);
    }
    RANK_LOGGED.store(false, Ordering::Release);
    if state::live() {
        let entries = crate::got::patch_all(crate::got::Set::Mpi);
        log::write("mpi_got", |line| {
            line.u64("entries", entries as u64);
        });
    }
    lifecycle::mpi_on();
    let mut initialized: c_int = 0;
    if !in_fork_child
        && describable()
        && call_real!(PMPI_INITIALIZED, FlagFn, MPI_ERR_INTERN; &mut initialized) == MPI_SUCCESS
        && initialized != 0
    {
        log_rank();
    }
}

pub fn stop_tracing() {
    lifecycle::mpi_off();
    if state::live() {
        crate::got::restore_all(crate::got::Set::Mpi);
    }
}

/// Objects loaded since tracing started get their entries redirected too
/// (the watcher of a live process calls this).
pub fn follow_new_objects() {
    if lifecycle::mpi_traced() && state::live() {
        crate::got::patch_all(crate::got::Set::Mpi);
    }
}

/// The `mpi_totals` log line before `end`.
pub fn log_totals() {
    log::write("mpi_totals", |line| {
        line.u64("calls", CALLS.load(Ordering::Relaxed));
        line.u64("unrecorded", UNRECORDED.load(Ordering::Relaxed));
        line.u64("untracked", UNTRACKED_RECEIVES.load(Ordering::Relaxed));
        line.u64("pending", LIVE.load(Ordering::Relaxed) as u64);
        line.u64("understood", u64::from(UNDERSTOOD.load(Ordering::Relaxed)));
    });
}

/// MPI_Init completed: the `mpi rank= size=` line, once per experiment.
fn initialized() {
    // What dlsym allocates is not the program's.
    let _held = heap::hold_current_thread();
    if !UNDERSTOOD.load(Ordering::Acquire) {
        learn_library();
        if !UNDERSTOOD.load(Ordering::Acquire) && lifecycle::mpi_traced() {
            log::warning(
                "the MPI library is not Open MPI: MPI calls are timed, without bytes or ranks",
            );
        }
    }
    if lifecycle::mpi_traced() && describable() {
        log_rank();
    }
}

fn log_rank() {
    let world = world() as Handle;
    let _held = heap::hold_current_thread();
    let (Some(rank), Some(size)) = (
        comm_int(&PMPI_COMM_RANK, world),
        comm_int(&PMPI_COMM_SIZE, world),
    ) else {
        return;
    };
    if RANK_LOGGED.swap(true, Ordering::AcqRel) {
        return;
    }
    log::write("mpi", |line| {
        line.u64("rank", rank as u64);
        line.u64("size", size as u64);
    });
}

// ---- the real functions ------------------------------------------------------

type InitFn = unsafe extern "C" fn(*mut c_int, *mut *mut *mut c_char) -> c_int;
type InitThreadFn =
    unsafe extern "C" fn(*mut c_int, *mut *mut *mut c_char, c_int, *mut c_int) -> c_int;
type NoArgFn = unsafe extern "C" fn() -> c_int;
type SendFn = unsafe extern "C" fn(Buffer, c_int, Handle, c_int, c_int, Handle) -> c_int;
type IsendFn =
    unsafe extern "C" fn(Buffer, c_int, Handle, c_int, c_int, Handle, *mut Handle) -> c_int;
type RecvFn =
    unsafe extern "C" fn(*mut c_void, c_int, Handle, c_int, c_int, Handle, *mut Status) -> c_int;
type IrecvFn =
    unsafe extern "C" fn(*mut c_void, c_int, Handle, c_int, c_int, Handle, *mut Handle) -> c_int;
type SendrecvFn = unsafe extern "C" fn(
    Buffer,
    c_int,
    Handle,
    c_int,
    c_int,
    *mut c_void,
    c_int,
    Handle,
    c_int,
    c_int,
    Handle,
    *mut Status,
) -> c_int;
type SendrecvReplaceFn = unsafe extern "C" fn(
    *mut c_void,
    c_int,
    Handle,
    c_int,
    c_int,
    c_int,
    c_int,
    Handle,
    *mut Status,
) -> c_int;
type ProbeFn = unsafe extern "C" fn(c_int, c_int, Handle, *mut Status) -> c_int;
type IprobeFn = unsafe extern "C" fn(c_int, c_int, Handle, *mut c_int, *mut Status) -> c_int;
type WaitFn = unsafe extern "C" fn(*mut Handle, *mut Status) -> c_int;
type WaitallFn = unsafe extern "C" fn(c_int, *mut Handle, *mut Status) -> c_int;
type WaitanyFn = unsafe extern "C" fn(c_int, *mut Handle, *mut c_int, *mut Status) -> c_int;
type WaitsomeFn =
    unsafe extern "C" fn(c_int, *mut Handle, *mut c_int, *mut c_int, *mut Status) -> c_int;
type TestFn = unsafe extern "C" fn(*mut Handle, *mut c_int, *mut Status) -> c_int;
type TestallFn = unsafe extern "C" fn(c_int, *mut Handle, *mut c_int, *mut Status) -> c_int;
type TestanyFn =
    unsafe extern "C" fn(c_int, *mut Handle, *mut c_int, *mut c_int, *mut Status) -> c_int;
type RequestFreeFn = unsafe extern "C" fn(*mut Handle) -> c_int;
type CommFn = unsafe extern "C" fn(Handle) -> c_int;
type BcastFn = unsafe extern "C" fn(*mut c_void, c_int, Handle, c_int, Handle) -> c_int;
type ReduceFn =
    unsafe extern "C" fn(Buffer, *mut c_void, c_int, Handle, Handle, c_int, Handle) -> c_int;
type AllreduceFn =
    unsafe extern "C" fn(Buffer, *mut c_void, c_int, Handle, Handle, Handle) -> c_int;
type GatherFn =
    unsafe extern "C" fn(Buffer, c_int, Handle, *mut c_void, c_int, Handle, c_int, Handle) -> c_int;
type GathervFn = unsafe extern "C" fn(
    Buffer,
    c_int,
    Handle,
    *mut c_void,
    *const c_int,
    *const c_int,
    Handle,
    c_int,
    Handle,
) -> c_int;
type ScattervFn = unsafe extern "C" fn(
    Buffer,
    *const c_int,
    *const c_int,
    Handle,
    *mut c_void,
    c_int,
    Handle,
    c_int,
    Handle,
) -> c_int;
type AllgatherFn =
    unsafe extern "C" fn(Buffer, c_int, Handle, *mut c_void, c_int, Handle, Handle) -> c_int;
type AllgathervFn = unsafe extern "C" fn(
    Buffer,
    c_int,
    Handle,
    *mut c_void,
    *const c_int,
    *const c_int,
    Handle,
    Handle,
) -> c_int;
type AlltoallvFn = unsafe extern "C" fn(
    Buffer,
    *const c_int,
    *const c_int,
    Handle,
    *mut c_void,
    *const c_int,
    *const c_int,
    Handle,
    Handle,
) -> c_int;
type ReduceScatterFn =
    unsafe extern "C" fn(Buffer, *mut c_void, *const c_int, Handle, Handle, Handle) -> c_int;
type WinFenceFn = unsafe extern "C" fn(c_int, Handle) -> c_int;
type WinLockFn = unsafe extern "C" fn(c_int, c_int, c_int, Handle) -> c_int;

// ---- the hooks: start and end ------------------------------------------------

/// # Safety
/// MPI's MPI_Init contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_init(argc: *mut c_int, argv: *mut *mut *mut c_char) -> c_int {
    let rc = traced(
        MpiOp::Init,
        || call_real!(PMPI_INIT, InitFn, MPI_ERR_INTERN; argc, argv),
        |_| {},
    );
    if rc == MPI_SUCCESS {
        initialized();
    }
    rc
}

/// # Safety
/// MPI's MPI_Init_thread contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_init_thread(
    argc: *mut c_int,
    argv: *mut *mut *mut c_char,
    required: c_int,
    provided: *mut c_int,
) -> c_int {
    let rc = traced(
        MpiOp::InitThread,
        || call_real!(PMPI_INIT_THREAD, InitThreadFn, MPI_ERR_INTERN; argc, argv, required, provided),
        |_| {},
    );
    if rc == MPI_SUCCESS {
        initialized();
    }
    rc
}

/// # Safety
/// MPI's MPI_Finalize contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_finalize() -> c_int {
    FINALIZING.store(true, Ordering::Release);
    traced(
        MpiOp::Finalize,
        || call_real!(PMPI_FINALIZE, NoArgFn, MPI_ERR_INTERN;),
        |_| {},
    )
}

// ---- the hooks: point to point -------------------------------------------------

/// A blocking send of the Send family.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn blocking_send(
    op: MpiOp,
    real: &Real,
    buf: Buffer,
    count: c_int,
    datatype: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
) -> c_int {
    traced(
        op,
        || call_real!(real, SendFn, MPI_ERR_INTERN; buf, count, datatype, dest, tag, comm),
        |e| sent(e, count, datatype, dest, tag, comm),
    )
}

/// A nonblocking send of the Isend family: a request handle given out
/// again is no pending receive any more.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn nonblocking_send(
    op: MpiOp,
    real: &Real,
    buf: Buffer,
    count: c_int,
    datatype: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
    request: *mut Handle,
) -> c_int {
    let rc = traced(
        op,
        || call_real!(real, IsendFn, MPI_ERR_INTERN; buf, count, datatype, dest, tag, comm, request),
        |e| sent(e, count, datatype, dest, tag, comm),
    );
    if rc == MPI_SUCCESS && !request.is_null() {
        forget(*request as usize);
    }
    rc
}

/// # Safety
/// MPI's MPI_Send contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_send(
    buf: Buffer,
    count: c_int,
    datatype: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
) -> c_int {
    blocking_send(
        MpiOp::Send,
        &PMPI_SEND,
        buf,
        count,
        datatype,
        dest,
        tag,
        comm,
    )
}

/// # Safety
/// MPI's MPI_Bsend contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_bsend(
    buf: Buffer,
    count: c_int,
    datatype: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
) -> c_int {
    blocking_send(
        MpiOp::Bsend,
        &PMPI_BSEND,
        buf,
        count,
        datatype,
        dest,
        tag,
        comm,
    )
}

/// # Safety
/// MPI's MPI_Ssend contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_ssend(
    buf: Buffer,
    count: c_int,
    datatype: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
) -> c_int {
    blocking_send(
        MpiOp::Ssend,
        &PMPI_SSEND,
        buf,
        count,
        datatype,
        dest,
        tag,
        comm,
    )
}

/// # Safety
/// MPI's MPI_Rsend contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_rsend(
    buf: Buffer,
    count: c_int,
    datatype: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
) -> c_int {
    blocking_send(
        MpiOp::Rsend,
        &PMPI_RSEND,
        buf,
        count,
        datatype,
        dest,
        tag,
        comm,
    )
}

/// # Safety
/// MPI's MPI_Isend contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_isend(
    buf: Buffer,
    count: c_int,
    datatype: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
    request: *mut Handle,
) -> c_int {
    nonblocking_send(
        MpiOp::Isend,
        &PMPI_ISEND,
        buf,
        count,
        datatype,
        dest,
        tag,
        comm,
        request,
    )
}

/// # Safety
/// MPI's MPI_Ibsend contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_ibsend(
    buf: Buffer,
    count: c_int,
    datatype: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
    request: *mut Handle,
) -> c_int {
    nonblocking_send(
        MpiOp::Ibsend,
        &PMPI_IBSEND,
        buf,
        count,
        datatype,
        dest,
        tag,
        comm,
        request,
    )
}

/// # Safety
/// MPI's MPI_Issend contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_issend(
    buf: Buffer,
    count: c_int,
    datatype: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
    request: *mut Handle,
) -> c_int {
    nonblocking_send(
        MpiOp::Issend,
        &PMPI_ISSEND,
        buf,
        count,
        datatype,
        dest,
        tag,
        comm,
        request,
    )
}

/// # Safety
/// MPI's MPI_Irsend contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_irsend(
    buf: Buffer,
    count: c_int,
    datatype: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
    request: *mut Handle,
) -> c_int {
    nonblocking_send(
        MpiOp::Irsend,
        &PMPI_IRSEND,
        buf,
        count,
        datatype,
        dest,
        tag,
        comm,
        request,
    )
}

/// The status to give the library: the program's, or one of ours when it
/// ignores it and the call is recorded (the bytes and source are in it).
fn status_for(program: *mut Status, own: &mut Status) -> *mut Status {
    if program.is_null() && lifecycle::recording_mpi() {
        own
    } else {
        program
    }
}

/// # Safety
/// MPI's MPI_Recv contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_recv(
    buf: *mut c_void,
    count: c_int,
    datatype: Handle,
    source: c_int,
    tag: c_int,
    comm: Handle,
    status: *mut Status,
) -> c_int {
    let mut own = Status::EMPTY;
    let status = status_for(status, &mut own);
    traced(
        MpiOp::Recv,
        || call_real!(PMPI_RECV, RecvFn, MPI_ERR_INTERN; buf, count, datatype, source, tag, comm, status),
        |e| received(e, status, comm),
    )
}

/// # Safety
/// MPI's MPI_Irecv contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_irecv(
    buf: *mut c_void,
    count: c_int,
    datatype: Handle,
    source: c_int,
    tag: c_int,
    comm: Handle,
    request: *mut Handle,
) -> c_int {
    traced(
        MpiOp::Irecv,
        || call_real!(PMPI_IRECV, IrecvFn, MPI_ERR_INTERN; buf, count, datatype, source, tag, comm, request),
        |e| {
            e.receives = 1;
            e.source = world_rank(comm, source);
            e.tag = tag;
            e.comm = comm_number(comm);
            let group = match comm as usize == world() {
                true => Some(0),
                false => peer_group(comm),
            };
            // SAFETY: the call succeeded: the library wrote the request.
            let handle = unsafe { *request } as usize;
            if let Some(group) = group {
                if !remember(handle, group, e.comm) && group != 0 {
                    free_group(group);
                }
            }
        },
    )
}

/// # Safety
/// MPI's MPI_Sendrecv contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_sendrecv(
    sendbuf: Buffer,
    sendcount: c_int,
    sendtype: Handle,
    dest: c_int,
    sendtag: c_int,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: Handle,
    source: c_int,
    recvtag: c_int,
    comm: Handle,
    status: *mut Status,
) -> c_int {
    let mut own = Status::EMPTY;
    let status = status_for(status, &mut own);
    traced(
        MpiOp::Sendrecv,
        || {
            call_real!(PMPI_SENDRECV, SendrecvFn, MPI_ERR_INTERN;
                sendbuf, sendcount, sendtype, dest, sendtag,
                recvbuf, recvcount, recvtype, source, recvtag, comm, status)
        },
        |e| {
            received(e, status, comm);
            sent(e, sendcount, sendtype, dest, sendtag, comm);
        },
    )
}

/// # Safety
/// MPI's MPI_Sendrecv_replace contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_sendrecv_replace(
    buf: *mut c_void,
    count: c_int,
    datatype: Handle,
    dest: c_int,
    sendtag: c_int,
    source: c_int,
    recvtag: c_int,
    comm: Handle,
    status: *mut Status,
) -> c_int {
    let mut own = Status::EMPTY;
    let status = status_for(status, &mut own);
    traced(
        MpiOp::SendrecvReplace,
        || {
            call_real!(PMPI_SENDRECV_REPLACE, SendrecvReplaceFn, MPI_ERR_INTERN;
                buf, count, datatype, dest, sendtag, source, recvtag, comm, status)
        },
        |e| {
            received(e, status, comm);
            sent(e, count, datatype, dest, sendtag, comm);
        },
    )
}

/// # Safety
/// MPI's MPI_Probe contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_probe(
    source: c_int,
    tag: c_int,
    comm: Handle,
    status: *mut Status,
) -> c_int {
    traced(
        MpiOp::Probe,
        || call_real!(PMPI_PROBE, ProbeFn, MPI_ERR_INTERN; source, tag, comm, status),
        |e| {
            e.source = world_rank(comm, source);
            e.tag = tag;
            e.comm = comm_number(comm);
        },
    )
}

/// # Safety
/// MPI's MPI_Iprobe contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_iprobe(
    source: c_int,
    tag: c_int,
    comm: Handle,
    flag: *mut c_int,
    status: *mut Status,
) -> c_int {
    traced(
        MpiOp::Iprobe,
        || call_real!(PMPI_IPROBE, IprobeFn, MPI_ERR_INTERN; source, tag, comm, flag, status),
        |e| {
            e.source = world_rank(comm, source);
            e.tag = tag;
            e.comm = comm_number(comm);
        },
    )
}

// ---- the hooks: completing requests ------------------------------------------

/// # Safety
/// MPI's MPI_Wait contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_wait(request: *mut Handle, status: *mut Status) -> c_int {
    completing(
        MpiOp::Wait,
        1,
        request,
        |scratch, any| {
            let passed = scratch.statuses_for(status, any);
            call_real!(PMPI_WAIT, WaitFn, MPI_ERR_INTERN; request, passed)
        },
        |_, scratch| {
            let passed = scratch.statuses_for(status, true);
            scratch.complete(0, passed);
        },
    )
}

/// # Safety
/// MPI's MPI_Waitall contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_waitall(
    count: c_int,
    requests: *mut Handle,
    statuses: *mut Status,
) -> c_int {
    let n = usize::try_from(count).unwrap_or(0);
    completing(
        MpiOp::Waitall,
        n,
        requests,
        |scratch, any| {
            let passed = scratch.statuses_for(statuses, any);
            call_real!(PMPI_WAITALL, WaitallFn, MPI_ERR_INTERN; count, requests, passed)
        },
        |_, scratch| {
            let passed = scratch.statuses_for(statuses, true);
            for i in 0..count {
                scratch.complete(i, status_at(passed, i));
            }
        },
    )
}

/// The one status of MPI_Waitany and MPI_Testany: the program's, or
/// `own` when it ignores it and a pending receive is among the requests.
fn one_status(program: *mut Status, own: *mut Status, any: bool) -> *mut Status {
    if program.is_null() && any {
        own
    } else {
        program
    }
}

/// # Safety
/// MPI's MPI_Waitany contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_waitany(
    count: c_int,
    requests: *mut Handle,
    index: *mut c_int,
    status: *mut Status,
) -> c_int {
    let n = usize::try_from(count).unwrap_or(0);
    let mut own = Status::EMPTY;
    let own: *mut Status = &mut own;
    completing(
        MpiOp::Waitany,
        n,
        requests,
        |_, any| {
            let passed = one_status(status, own, any);
            call_real!(PMPI_WAITANY, WaitanyFn, MPI_ERR_INTERN; count, requests, index, passed)
        },
        |_, scratch| {
            let passed = one_status(status, own, true);
            // SAFETY: the call succeeded: the library wrote the index.
            let completed = unsafe { *index };
            if completed != MPI_UNDEFINED {
                scratch.complete(completed, passed);
            }
        },
    )
}

/// The completed requests of MPI_Waitsome and MPI_Testsome.
///
/// # Safety
/// On success the library wrote `outcount` and that many `indices`.
unsafe fn complete_some(
    scratch: &mut Scratch<'_>,
    outcount: *const c_int,
    indices: *const c_int,
    statuses: *mut Status,
) {
    let finished = *outcount;
    if finished == MPI_UNDEFINED || indices.is_null() {
        return;
    }
    let passed = scratch.statuses_for(statuses, true);
    for k in 0..finished.max(0) {
        scratch.complete(*indices.add(k as usize), status_at(passed, k));
    }
}

/// # Safety
/// MPI's MPI_Waitsome contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_waitsome(
    incount: c_int,
    requests: *mut Handle,
    outcount: *mut c_int,
    indices: *mut c_int,
    statuses: *mut Status,
) -> c_int {
    let n = usize::try_from(incount).unwrap_or(0);
    completing(
        MpiOp::Waitsome,
        n,
        requests,
        |scratch, any| {
            let passed = scratch.statuses_for(statuses, any);
            call_real!(PMPI_WAITSOME, WaitsomeFn, MPI_ERR_INTERN; incount, requests, outcount, indices, passed)
        },
        // SAFETY: the call succeeded.
        |_, scratch| unsafe { complete_some(scratch, outcount, indices, statuses) },
    )
}

/// # Safety
/// MPI's MPI_Test contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_test(
    request: *mut Handle,
    flag: *mut c_int,
    status: *mut Status,
) -> c_int {
    completing(
        MpiOp::Test,
        1,
        request,
        |scratch, any| {
            let passed = scratch.statuses_for(status, any);
            call_real!(PMPI_TEST, TestFn, MPI_ERR_INTERN; request, flag, passed)
        },
        |_, scratch| {
            // SAFETY: the call succeeded: the library wrote the flag.
            if unsafe { *flag } != 0 {
                let passed = scratch.statuses_for(status, true);
                scratch.complete(0, passed);
            }
        },
    )
}

/// # Safety
/// MPI's MPI_Testall contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_testall(
    count: c_int,
    requests: *mut Handle,
    flag: *mut c_int,
    statuses: *mut Status,
) -> c_int {
    let n = usize::try_from(count).unwrap_or(0);
    completing(
        MpiOp::Testall,
        n,
        requests,
        |scratch, any| {
            let passed = scratch.statuses_for(statuses, any);
            call_real!(PMPI_TESTALL, TestallFn, MPI_ERR_INTERN; count, requests, flag, passed)
        },
        |_, scratch| {
            // SAFETY: the call succeeded: the library wrote the flag.
            if unsafe { *flag } != 0 {
                let passed = scratch.statuses_for(statuses, true);
                for i in 0..count {
                    scratch.complete(i, status_at(passed, i));
                }
            }
        },
    )
}

/// # Safety
/// MPI's MPI_Testany contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_testany(
    count: c_int,
    requests: *mut Handle,
    index: *mut c_int,
    flag: *mut c_int,
    status: *mut Status,
) -> c_int {
    let n = usize::try_from(count).unwrap_or(0);
    let mut own = Status::EMPTY;
    let own: *mut Status = &mut own;
    completing(
        MpiOp::Testany,
        n,
        requests,
        |_, any| {
            let passed = one_status(status, own, any);
            call_real!(PMPI_TESTANY, TestanyFn, MPI_ERR_INTERN; count, requests, index, flag, passed)
        },
        |_, scratch| {
            let passed = one_status(status, own, true);
            // SAFETY: the call succeeded: the library wrote flag and index.
            let (done, completed) = unsafe { (*flag, *index) };
            if done != 0 && completed != MPI_UNDEFINED {
                scratch.complete(completed, passed);
            }
        },
    )
}

/// # Safety
/// MPI's MPI_Testsome contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_testsome(
    incount: c_int,
    requests: *mut Handle,
    outcount: *mut c_int,
    indices: *mut c_int,
    statuses: *mut Status,
) -> c_int {
    let n = usize::try_from(incount).unwrap_or(0);
    completing(
        MpiOp::Testsome,
        n,
        requests,
        |scratch, any| {
            let passed = scratch.statuses_for(statuses, any);
            call_real!(PMPI_TESTSOME, WaitsomeFn, MPI_ERR_INTERN; incount, requests, outcount, indices, passed)
        },
        // SAFETY: the call succeeded.
        |_, scratch| unsafe { complete_some(scratch, outcount, indices, statuses) },
    )
}

/// # Safety
/// MPI's MPI_Request_free contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_request_free(request: *mut Handle) -> c_int {
    if !request.is_null() {
        forget(*request as usize);
    }
    traced(
        MpiOp::RequestFree,
        || call_real!(PMPI_REQUEST_FREE, RequestFreeFn, MPI_ERR_INTERN; request),
        |_| {},
    )
}

// ---- the hooks: collectives ----------------------------------------------------

/// # Safety
/// MPI's MPI_Barrier contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_barrier(comm: Handle) -> c_int {
    traced(
        MpiOp::Barrier,
        || call_real!(PMPI_BARRIER, CommFn, MPI_ERR_INTERN; comm),
        |e| e.comm = comm_number(comm),
    )
}

/// # Safety
/// MPI's MPI_Bcast contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_bcast(
    buf: *mut c_void,
    count: c_int,
    datatype: Handle,
    root: c_int,
    comm: Handle,
) -> c_int {
    traced(
        MpiOp::Bcast,
        || call_real!(PMPI_BCAST, BcastFn, MPI_ERR_INTERN; buf, count, datatype, root, comm),
        |e| {
            let Some((rank, size)) = place_in(comm) else {
                return;
            };
            let n = bytes_of(count, datatype);
            let sends = if rank == root { size } else { 0 };
            collective(
                e,
                comm,
                Some(root),
                Collective {
                    sends,
                    bytes_sent: n * u64::from(sends),
                    receives: 1,
                    bytes_received: n,
                },
            );
        },
    )
}

/// # Safety
/// MPI's MPI_Reduce contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_reduce(
    sendbuf: Buffer,
    recvbuf: *mut c_void,
    count: c_int,
    datatype: Handle,
    op: Handle,
    root: c_int,
    comm: Handle,
) -> c_int {
    traced(
        MpiOp::Reduce,
        || call_real!(PMPI_REDUCE, ReduceFn, MPI_ERR_INTERN; sendbuf, recvbuf, count, datatype, op, root, comm),
        |e| {
            let Some((rank, size)) = place_in(comm) else {
                return;
            };
            let n = bytes_of(count, datatype);
            let receives = if rank == root { size } else { 0 };
            collective(
                e,
                comm,
                Some(root),
                Collective {
                    sends: 1,
                    bytes_sent: n,
                    receives,
                    bytes_received: n * u64::from(receives),
                },
            );
        },
    )
}

/// Every rank sends G messages of `n` bytes and receives G of `n`
/// (MPI_Allreduce, MPI_Scan, MPI_Exscan).
fn all_to_all_of(e: &mut MpiEvent, comm: Handle, n: u64) {
    let Some((_, size)) = place_in(comm) else {
        return;
    };
    collective(
        e,
        comm,
        None,
        Collective {
            sends: size,
            bytes_sent: n * u64::from(size),
            receives: size,
            bytes_received: n * u64::from(size),
        },
    );
}

/// # Safety
/// MPI's MPI_Allreduce contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_allreduce(
    sendbuf: Buffer,
    recvbuf: *mut c_void,
    count: c_int,
    datatype: Handle,
    op: Handle,
    comm: Handle,
) -> c_int {
    traced(
        MpiOp::Allreduce,
        || call_real!(PMPI_ALLREDUCE, AllreduceFn, MPI_ERR_INTERN; sendbuf, recvbuf, count, datatype, op, comm),
        |e| all_to_all_of(e, comm, bytes_of(count, datatype)),
    )
}

/// # Safety
/// MPI's MPI_Scan contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_scan(
    sendbuf: Buffer,
    recvbuf: *mut c_void,
    count: c_int,
    datatype: Handle,
    op: Handle,
    comm: Handle,
) -> c_int {
    traced(
        MpiOp::Scan,
        || call_real!(PMPI_SCAN, AllreduceFn, MPI_ERR_INTERN; sendbuf, recvbuf, count, datatype, op, comm),
        |e| all_to_all_of(e, comm, bytes_of(count, datatype)),
    )
}

/// # Safety
/// MPI's MPI_Exscan contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_exscan(
    sendbuf: Buffer,
    recvbuf: *mut c_void,
    count: c_int,
    datatype: Handle,
    op: Handle,
    comm: Handle,
) -> c_int {
    traced(
        MpiOp::Exscan,
        || call_real!(PMPI_EXSCAN, AllreduceFn, MPI_ERR_INTERN; sendbuf, recvbuf, count, datatype, op, comm),
        |e| all_to_all_of(e, comm, bytes_of(count, datatype)),
    )
}

/// # Safety
/// MPI's MPI_Gather contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_gather(
    sendbuf: Buffer,
    sendcount: c_int,
    sendtype: Handle,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: Handle,
    root: c_int,
    comm: Handle,
) -> c_int {
    traced(
        MpiOp::Gather,
        || {
            call_real!(PMPI_GATHER, GatherFn, MPI_ERR_INTERN;
                sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm)
        },
        |e| {
            let Some((rank, size)) = place_in(comm) else {
                return;
            };
            let at_root = rank == root;
            let piece = match in_place(sendbuf) && at_root {
                true => bytes_of(recvcount, recvtype),
                false => bytes_of(sendcount, sendtype),
            };
            let receives = if at_root { size } else { 0 };
            let each = if at_root {
                bytes_of(recvcount, recvtype)
            } else {
                0
            };
            collective(
                e,
                comm,
                Some(root),
                Collective {
                    sends: 1,
                    bytes_sent: piece,
                    receives,
                    bytes_received: each * u64::from(receives),
                },
            );
        },
    )
}

/// # Safety
/// MPI's MPI_Gatherv contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_gatherv(
    sendbuf: Buffer,
    sendcount: c_int,
    sendtype: Handle,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    displs: *const c_int,
    recvtype: Handle,
    root: c_int,
    comm: Handle,
) -> c_int {
    traced(
        MpiOp::Gatherv,
        || {
            call_real!(PMPI_GATHERV, GathervFn, MPI_ERR_INTERN;
                sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root, comm)
        },
        |e| {
            let Some((rank, size)) = place_in(comm) else {
                return;
            };
            let at_root = rank == root;
            let piece = match in_place(sendbuf) && at_root {
                // SAFETY: the root's counts, one per rank.
                true => bytes_of(unsafe { *recvcounts.add(rank as usize) }, recvtype),
                false => bytes_of(sendcount, sendtype),
            };
            let (receives, bytes_received) = match at_root {
                // SAFETY: the root's counts, one per rank.
                true => (size, unsafe { bytes_of_counts(recvcounts, size, recvtype) }),
                false => (0, 0),
            };
            collective(
                e,
                comm,
                Some(root),
                Collective {
                    sends: 1,
                    bytes_sent: piece,
                    receives,
                    bytes_received,
                },
            );
        },
    )
}

/// # Safety
/// MPI's MPI_Scatter contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_scatter(
    sendbuf: Buffer,
    sendcount: c_int,
    sendtype: Handle,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: Handle,
    root: c_int,
    comm: Handle,
) -> c_int {
    traced(
        MpiOp::Scatter,
        || {
            call_real!(PMPI_SCATTER, GatherFn, MPI_ERR_INTERN;
                sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm)
        },
        |e| {
            let Some((rank, size)) = place_in(comm) else {
                return;
            };
            let at_root = rank == root;
            let sends = if at_root { size } else { 0 };
            let each = if at_root {
                bytes_of(sendcount, sendtype)
            } else {
                0
            };
            let piece = match in_place(recvbuf) && at_root {
                true => bytes_of(sendcount, sendtype),
                false => bytes_of(recvcount, recvtype),
            };
            collective(
                e,
                comm,
                Some(root),
                Collective {
                    sends,
                    bytes_sent: each * u64::from(sends),
                    receives: 1,
                    bytes_received: piece,
                },
            );
        },
    )
}

/// # Safety
/// MPI's MPI_Scatterv contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_scatterv(
    sendbuf: Buffer,
    sendcounts: *const c_int,
    displs: *const c_int,
    sendtype: Handle,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: Handle,
    root: c_int,
    comm: Handle,
) -> c_int {
    traced(
        MpiOp::Scatterv,
        || {
            call_real!(PMPI_SCATTERV, ScattervFn, MPI_ERR_INTERN;
                sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, comm)
        },
        |e| {
            let Some((rank, size)) = place_in(comm) else {
                return;
            };
            let at_root = rank == root;
            let (sends, bytes_sent) = match at_root {
                // SAFETY: the root's counts, one per rank.
                true => (size, unsafe { bytes_of_counts(sendcounts, size, sendtype) }),
                false => (0, 0),
            };
            let piece = match in_place(recvbuf) && at_root {
                // SAFETY: the root's counts, one per rank.
                true => bytes_of(unsafe { *sendcounts.add(rank as usize) }, sendtype),
                false => bytes_of(recvcount, recvtype),
            };
            collective(
                e,
                comm,
                Some(root),
                Collective {
                    sends,
                    bytes_sent,
                    receives: 1,
                    bytes_received: piece,
                },
            );
        },
    )
}

/// # Safety
/// MPI's MPI_Allgather contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_allgather(
    sendbuf: Buffer,
    sendcount: c_int,
    sendtype: Handle,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: Handle,
    comm: Handle,
) -> c_int {
    traced(
        MpiOp::Allgather,
        || {
            call_real!(PMPI_ALLGATHER, AllgatherFn, MPI_ERR_INTERN;
                sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm)
        },
        |e| {
            let Some((_, size)) = place_in(comm) else {
                return;
            };
            let piece = match in_place(sendbuf) {
                true => bytes_of(recvcount, recvtype),
                false => bytes_of(sendcount, sendtype),
            };
            let g = u64::from(size);
            collective(
                e,
                comm,
                None,
                Collective {
                    sends: size,
                    bytes_sent: piece * g,
                    receives: size,
                    bytes_received: bytes_of(recvcount, recvtype) * g,
                },
            );
        },
    )
}

/// # Safety
/// MPI's MPI_Allgatherv contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_allgatherv(
    sendbuf: Buffer,
    sendcount: c_int,
    sendtype: Handle,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    displs: *const c_int,
    recvtype: Handle,
    comm: Handle,
) -> c_int {
    traced(
        MpiOp::Allgatherv,
        || {
            call_real!(PMPI_ALLGATHERV, AllgathervFn, MPI_ERR_INTERN;
                sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm)
        },
        |e| {
            let Some((rank, size)) = place_in(comm) else {
                return;
            };
            let piece = match in_place(sendbuf) {
                // SAFETY: counts, one per rank.
                true => bytes_of(unsafe { *recvcounts.add(rank as usize) }, recvtype),
                false => bytes_of(sendcount, sendtype),
            };
            collective(
                e,
                comm,
                None,
                Collective {
                    sends: size,
                    bytes_sent: piece * u64::from(size),
                    receives: size,
                    // SAFETY: counts, one per rank.
                    bytes_received: unsafe { bytes_of_counts(recvcounts, size, recvtype) },
                },
            );
        },
    )
}

/// # Safety
/// MPI's MPI_Alltoall contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_alltoall(
    sendbuf: Buffer,
    sendcount: c_int,
    sendtype: Handle,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: Handle,
    comm: Handle,
) -> c_int {
    traced(
        MpiOp::Alltoall,
        || {
            call_real!(PMPI_ALLTOALL, AllgatherFn, MPI_ERR_INTERN;
                sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm)
        },
        |e| {
            let Some((_, size)) = place_in(comm) else {
                return;
            };
            let piece = match in_place(sendbuf) {
                true => bytes_of(recvcount, recvtype),
                false => bytes_of(sendcount, sendtype),
            };
            let g = u64::from(size);
            collective(
                e,
                comm,
                None,
                Collective {
                    sends: size,
                    bytes_sent: piece * g,
                    receives: size,
                    bytes_received: bytes_of(recvcount, recvtype) * g,
                },
            );
        },
    )
}

/// # Safety
/// MPI's MPI_Alltoallv contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_alltoallv(
    sendbuf: Buffer,
    sendcounts: *const c_int,
    sdispls: *const c_int,
    sendtype: Handle,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    rdispls: *const c_int,
    recvtype: Handle,
    comm: Handle,
) -> c_int {
    traced(
        MpiOp::Alltoallv,
        || {
            call_real!(PMPI_ALLTOALLV, AlltoallvFn, MPI_ERR_INTERN;
                sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm)
        },
        |e| {
            let Some((_, size)) = place_in(comm) else {
                return;
            };
            // SAFETY: counts, one per rank.
            let received = unsafe { bytes_of_counts(recvcounts, size, recvtype) };
            let sent = match in_place(sendbuf) {
                true => received,
                // SAFETY: counts, one per rank.
                false => unsafe { bytes_of_counts(sendcounts, size, sendtype) },
            };
            collective(
                e,
                comm,
                None,
                Collective {
                    sends: size,
                    bytes_sent: sent,
                    receives: size,
                    bytes_received: received,
                },
            );
        },
    )
}

/// # Safety
/// MPI's MPI_Reduce_scatter contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_reduce_scatter(
    sendbuf: Buffer,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    datatype: Handle,
    op: Handle,
    comm: Handle,
) -> c_int {
    traced(
        MpiOp::ReduceScatter,
        || {
            call_real!(PMPI_REDUCE_SCATTER, ReduceScatterFn, MPI_ERR_INTERN;
                sendbuf, recvbuf, recvcounts, datatype, op, comm)
        },
        |e| {
            let Some((rank, size)) = place_in(comm) else {
                return;
            };
            // SAFETY: counts, one per rank.
            let (whole, mine) = unsafe {
                (
                    bytes_of_counts(recvcounts, size, datatype),
                    bytes_of(*recvcounts.add(rank as usize), datatype),
                )
            };
            collective(
                e,
                comm,
                None,
                Collective {
                    sends: size,
                    bytes_sent: whole,
                    receives: size,
                    bytes_received: mine * u64::from(size),
                },
            );
        },
    )
}

/// # Safety
/// MPI's MPI_Reduce_scatter_block contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_reduce_scatter_block(
    sendbuf: Buffer,
    recvbuf: *mut c_void,
    recvcount: c_int,
    datatype: Handle,
    op: Handle,
    comm: Handle,
) -> c_int {
    traced(
        MpiOp::ReduceScatterBlock,
        || {
            call_real!(PMPI_REDUCE_SCATTER_BLOCK, AllreduceFn, MPI_ERR_INTERN;
                sendbuf, recvbuf, recvcount, datatype, op, comm)
        },
        |e| all_to_all_of(e, comm, bytes_of(recvcount, datatype)),
    )
}

/// # Safety
/// MPI's MPI_Win_fence contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_win_fence(assert: c_int, win: Handle) -> c_int {
    traced(
        MpiOp::WinFence,
        || call_real!(PMPI_WIN_FENCE, WinFenceFn, MPI_ERR_INTERN; assert, win),
        |_| {},
    )
}

/// # Safety
/// MPI's MPI_Win_lock contract.
#[inline(never)]
pub(crate) unsafe extern "C" fn hook_win_lock(
    lock_type: c_int,
    rank: c_int,
    assert: c_int,
    win: Handle,
) -> c_int {
    traced(
        MpiOp::WinLock,
        || call_real!(PMPI_WIN_LOCK, WinLockFn, MPI_ERR_INTERN; lock_type, rank, assert, win),
        |_| {},
    )
}

// ---- the exported entry points -----------------------------------------------
// What the program's calls reach when the collector is preloaded (an
// attached collector patches GOT entries with the hooks instead). The
// real functions are the library's PMPI_ entries, not the next definition
// of these names: no `Real` for got.rs to resolve.

interposed! {
    MPI_Init(argc: *mut c_int, argv: *mut *mut *mut c_char) -> c_int = hook_init, None;
    MPI_Init_thread(argc: *mut c_int, argv: *mut *mut *mut c_char, required: c_int,
                    provided: *mut c_int) -> c_int = hook_init_thread, None;
    MPI_Finalize() -> c_int = hook_finalize, None;
    MPI_Send(buf: Buffer, count: c_int, datatype: Handle, dest: c_int, tag: c_int,
             comm: Handle) -> c_int = hook_send, None;
    MPI_Bsend(buf: Buffer, count: c_int, datatype: Handle, dest: c_int, tag: c_int,
              comm: Handle) -> c_int = hook_bsend, None;
    MPI_Ssend(buf: Buffer, count: c_int, datatype: Handle, dest: c_int, tag: c_int,
              comm: Handle) -> c_int = hook_ssend, None;
    MPI_Rsend(buf: Buffer, count: c_int, datatype: Handle, dest: c_int, tag: c_int,
              comm: Handle) -> c_int = hook_rsend, None;
    MPI_Isend(buf: Buffer, count: c_int, datatype: Handle, dest: c_int, tag: c_int,
              comm: Handle, request: *mut Handle) -> c_int = hook_isend, None;
    MPI_Ibsend(buf: Buffer, count: c_int, datatype: Handle, dest: c_int, tag: c_int,
               comm: Handle, request: *mut Handle) -> c_int = hook_ibsend, None;
    MPI_Issend(buf: Buffer, count: c_int, datatype: Handle, dest: c_int, tag: c_int,
               comm: Handle, request: *mut Handle) -> c_int = hook_issend, None;
    MPI_Irsend(buf: Buffer, count: c_int, datatype: Handle, dest: c_int, tag: c_int,
               comm: Handle, request: *mut Handle) -> c_int = hook_irsend, None;
    MPI_Recv(buf: *mut c_void, count: c_int, datatype: Handle, source: c_int, tag: c_int,
             comm: Handle, status: *mut Status) -> c_int = hook_recv, None;
    MPI_Irecv(buf: *mut c_void, count: c_int, datatype: Handle, source: c_int, tag: c_int,
              comm: Handle, request: *mut Handle) -> c_int = hook_irecv, None;
    MPI_Sendrecv(sendbuf: Buffer, sendcount: c_int, sendtype: Handle, dest: c_int,
                 sendtag: c_int, recvbuf: *mut c_void, recvcount: c_int, recvtype: Handle,
                 source: c_int, recvtag: c_int, comm: Handle, status: *mut Status) -> c_int =
        hook_sendrecv, None;
    MPI_Sendrecv_replace(buf: *mut c_void, count: c_int, datatype: Handle, dest: c_int,
                         sendtag: c_int, source: c_int, recvtag: c_int, comm: Handle,
                         status: *mut Status) -> c_int = hook_sendrecv_replace, None;
    MPI_Probe(source: c_int, tag: c_int, comm: Handle, status: *mut Status) -> c_int =
        hook_probe, None;
    MPI_Iprobe(source: c_int, tag: c_int, comm: Handle, flag: *mut c_int,
               status: *mut Status) -> c_int = hook_iprobe, None;
    MPI_Wait(request: *mut Handle, status: *mut Status) -> c_int = hook_wait, None;
    MPI_Waitall(count: c_int, requests: *mut Handle, statuses: *mut Status) -> c_int =
        hook_waitall, None;
    MPI_Waitany(count: c_int, requests: *mut Handle, index: *mut c_int,
                status: *mut Status) -> c_int = hook_waitany, None;
    MPI_Waitsome(incount: c_int, requests: *mut Handle, outcount: *mut c_int,
                 indices: *mut c_int, statuses: *mut Status) -> c_int = hook_waitsome, None;
    MPI_Test(request: *mut Handle, flag: *mut c_int, status: *mut Status) -> c_int =
        hook_test, None;
    MPI_Testall(count: c_int, requests: *mut Handle, flag: *mut c_int,
                statuses: *mut Status) -> c_int = hook_testall, None;
    MPI_Testany(count: c_int, requests: *mut Handle, index: *mut c_int, flag: *mut c_int,
                status: *mut Status) -> c_int = hook_testany, None;
    MPI_Testsome(incount: c_int, requests: *mut Handle, outcount: *mut c_int,
                 indices: *mut c_int, statuses: *mut Status) -> c_int = hook_testsome, None;
    MPI_Request_free(request: *mut Handle) -> c_int = hook_request_free, None;
    MPI_Barrier(comm: Handle) -> c_int = hook_barrier, None;
    MPI_Bcast(buf: *mut c_void, count: c_int, datatype: Handle, root: c_int,
              comm: Handle) -> c_int = hook_bcast, None;
    MPI_Reduce(sendbuf: Buffer, recvbuf: *mut c_void, count: c_int, datatype: Handle,
               op: Handle, root: c_int, comm: Handle) -> c_int = hook_reduce, None;
    MPI_Allreduce(sendbuf: Buffer, recvbuf: *mut c_void, count: c_int, datatype: Handle,
                  op: Handle, comm: Handle) -> c_int = hook_allreduce, None;
    MPI_Scan(sendbuf: Buffer, recvbuf: *mut c_void, count: c_int, datatype: Handle,
             op: Handle, comm: Handle) -> c_int = hook_scan, None;
    MPI_Exscan(sendbuf: Buffer, recvbuf: *mut c_void, count: c_int, datatype: Handle,
               op: Handle, comm: Handle) -> c_int = hook_exscan, None;
    MPI_Gather(sendbuf: Buffer, sendcount: c_int, sendtype: Handle, recvbuf: *mut c_void,
               recvcount: c_int, recvtype: Handle, root: c_int, comm: Handle) -> c_int =
        hook_gather, None;
    MPI_Gatherv(sendbuf: Buffer, sendcount: c_int, sendtype: Handle, recvbuf: *mut c_void,
                recvcounts: *const c_int, displs: *const c_int, recvtype: Handle, root: c_int,
                comm: Handle) -> c_int = hook_gatherv, None;
    MPI_Scatter(sendbuf: Buffer, sendcount: c_int, sendtype: Handle, recvbuf: *mut c_void,
                recvcount: c_int, recvtype: Handle, root: c_int, comm: Handle) -> c_int =
        hook_scatter, None;
    MPI_Scatterv(sendbuf: Buffer, sendcounts: *const c_int, displs: *const c_int,
                 sendtype: Handle, recvbuf: *mut c_void, recvcount: c_int, recvtype: Handle,
                 root: c_int, comm: Handle) -> c_int = hook_scatterv, None;
    MPI_Allgather(sendbuf: Buffer, sendcount: c_int, sendtype: Handle, recvbuf: *mut c_void,
                  recvcount: c_int, recvtype: Handle, comm: Handle) -> c_int =
        hook_allgather, None;
    MPI_Allgatherv(sendbuf: Buffer, sendcount: c_int, sendtype: Handle, recvbuf: *mut c_void,
                   recvcounts: *const c_int, displs: *const c_int, recvtype: Handle,
                   comm: Handle) -> c_int = hook_allgatherv, None;
    MPI_Alltoall(sendbuf: Buffer, sendcount: c_int, sendtype: Handle, recvbuf: *mut c_void,
                 recvcount: c_int, recvtype: Handle, comm: Handle) -> c_int =
        hook_alltoall, None;
    MPI_Alltoallv(sendbuf: Buffer, sendcounts: *const c_int, sdispls: *const c_int,
                  sendtype: Handle, recvbuf: *mut c_void, recvcounts: *const c_int,
                  rdispls: *const c_int, recvtype: Handle, comm: Handle) -> c_int =
        hook_alltoallv, None;
    MPI_Reduce_scatter(sendbuf: Buffer, recvbuf: *mut c_void, recvcounts: *const c_int,
                       datatype: Handle, op: Handle, comm: Handle) -> c_int =
        hook_reduce_scatter, None;
    MPI_Reduce_scatter_block(sendbuf: Buffer, recvbuf: *mut c_void, recvcount: c_int,
                             datatype: Handle, op: Handle, comm: Handle) -> c_int =
        hook_reduce_scatter_block, None;
    MPI_Win_fence(assert: c_int, win: Handle) -> c_int = hook_win_fence, None;
    MPI_Win_lock(lock_type: c_int, rank: c_int, assert: c_int, win: Handle) -> c_int =
        hook_win_lock, None;
}
