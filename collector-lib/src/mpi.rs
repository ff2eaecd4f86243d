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
use std::ptr::null_mut;
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
        let have_own = self.statuses.len() == self.tracked.len();
        status_to_pass(program, self.statuses.as_mut_ptr(), any && have_own)
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
/// (`finish` says which, from what the call wrote) taken out of the table
/// after it, and recorded after the call's own record. The table is kept
/// whether or not the experiment records now.
#[inline(always)]
fn completing(
    op: MpiOp,
    count: usize,
    requests: *const Handle,
    call: impl FnOnce(&mut Scratch<'_>, bool) -> c_int,
    finish: impl FnOnce(&mut Scratch<'_>),
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
            finish(scratch);
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

/// The status (or array of statuses) to give the library: the program's,
/// or `own` when the program ignores it and the hook `needs` it (the bytes
/// and source are in it).
fn status_to_pass(program: *mut Status, own: *mut Status, needs: bool) -> *mut Status {
    if program.is_null() && needs {
        own
    } else {
        program
    }
}

/// A probe for a message from `source` with `tag` on `comm`.
fn probed(event: &mut MpiEvent, source: c_int, tag: c_int, comm: Handle) {
    event.source = world_rank(comm, source);
    event.tag = tag;
    event.comm = comm_number(comm);
}

/// A posted nonblocking receive: its message counts now, and its request
/// goes into the table of pending receives until a wait or test
/// completes it.
///
/// # Safety
/// The call succeeded: the library wrote `request`.
unsafe fn posted(
    event: &mut MpiEvent,
    source: c_int,
    tag: c_int,
    comm: Handle,
    request: *const Handle,
) {
    event.receives = 1;
    event.source = world_rank(comm, source);
    event.tag = tag;
    event.comm = comm_number(comm);
    let group = match comm as usize == world() {
        true => Some(0),
        false => peer_group(comm),
    };
    let handle = *request as usize;
    if let Some(group) = group {
        if !remember(handle, group, event.comm) && group != 0 {
            free_group(group);
        }
    }
}

/// A request handle the library gave out (or is given back) is no pending
/// receive any more.
///
/// # Safety
/// `request` is NULL or points to a request handle.
unsafe fn given_out(request: *const Handle) {
    if !request.is_null() {
        forget(*request as usize);
    }
}

/// How the manual counts a collective: `sends` messages of `bytes_sent`
/// bytes in all, `receives` of `bytes_received`.
struct Collective {
    sends: u32,
    bytes_sent: u64,
    receives: u32,
    bytes_received: u64,
}

impl Collective {
    /// Every rank sends a message to every rank and receives one from
    /// every rank (itself included).
    fn every_pair(size: u32, bytes_sent: u64, bytes_received: u64) -> Collective {
        Collective {
            sends: size,
            bytes_sent,
            receives: size,
            bytes_received,
        }
    }

    /// Every rank sends one message of `sent` bytes to the root, which
    /// receives one from every rank, `at_root` bytes in all (None at the
    /// other ranks).
    fn to_root(size: u32, sent: u64, at_root: Option<u64>) -> Collective {
        Collective {
            sends: 1,
            bytes_sent: sent,
            receives: if at_root.is_some() { size } else { 0 },
            bytes_received: at_root.unwrap_or(0),
        }
    }

    /// The same messages the other way: MPI_Bcast is MPI_Reduce's,
    /// MPI_Scatter MPI_Gather's.
    fn reversed(self) -> Collective {
        Collective {
            sends: self.receives,
            bytes_sent: self.bytes_received,
            receives: self.sends,
            bytes_received: self.bytes_sent,
        }
    }
}

/// Fills a collective's record on `comm` with what `count` makes of this
/// rank's rank and the number of ranks; a rooted one's root in `dest` and
/// `source`. Collectives on intercommunicators are timed only.
fn collective(
    event: &mut MpiEvent,
    comm: Handle,
    root: Option<c_int>,
    count: impl FnOnce((c_int, u32)) -> Collective,
) {
    let Some(place) = place_in(comm) else {
        return;
    };
    let counted = count(place);
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
/// intracommunicator.
fn place_in(comm: Handle) -> Option<(c_int, u32)> {
    let size = intra_size(comm)?;
    Some((comm_int(&PMPI_COMM_RANK, comm)?, size))
}

fn in_place(buffer: Buffer) -> bool {
    buffer as usize == MPI_IN_PLACE
}

/// Element counts of a collective's buffer: the same for every rank, or
/// one per rank (the arrays of the `v` variants).
#[derive(Clone, Copy)]
enum Counts {
    Each(c_int),
    PerRank(*const c_int),
}

/// What a collective's send or receive buffer holds for the ranks.
#[derive(Clone, Copy)]
struct Pieces {
    counts: Counts,
    datatype: Handle,
}

impl Pieces {
    fn each(count: c_int, datatype: Handle) -> Pieces {
        Pieces {
            counts: Counts::Each(count),
            datatype,
        }
    }

    fn per_rank(counts: *const c_int, datatype: Handle) -> Pieces {
        Pieces {
            counts: Counts::PerRank(counts),
            datatype,
        }
    }

    /// Rank `rank`'s piece, in bytes.
    ///
    /// # Safety
    /// Counts per rank hold one for every rank of the communicator.
    unsafe fn of_rank(self, rank: c_int) -> u64 {
        match self.counts {
            Counts::Each(count) => bytes_of(count, self.datatype),
            Counts::PerRank(counts) => bytes_of(*counts.add(rank as usize), self.datatype),
        }
    }

    /// The pieces of all `size` ranks, in bytes.
    ///
    /// # Safety
    /// Counts per rank hold `size` numbers (or are NULL).
    unsafe fn total(self, size: u32) -> u64 {
        match self.counts {
            Counts::Each(count) => bytes_of(count, self.datatype) * u64::from(size),
            Counts::PerRank(counts) => bytes_of_counts(counts, size, self.datatype),
        }
    }
}

/// This rank's own piece: `own`'s, or at MPI_IN_PLACE (`placed`) the one
/// `all` holds for the rank.
///
/// # Safety
/// As [`Pieces::of_rank`].
unsafe fn own_piece(rank: c_int, placed: bool, own: Pieces, all: Pieces) -> u64 {
    match placed {
        true => all.of_rank(rank),
        false => own.of_rank(rank),
    }
}

/// MPI_Gather and MPI_Gatherv (MPI_Scatter and MPI_Scatterv reversed):
/// every rank sends its own piece (`own` in `buffer`) to the root, which
/// receives `all`.
///
/// # Safety
/// `all` is read at the root only, where it holds a piece for every rank.
unsafe fn gathered(
    (rank, size): (c_int, u32),
    root: c_int,
    buffer: Buffer,
    own: Pieces,
    all: Pieces,
) -> Collective {
    let at_root = rank == root;
    let piece = own_piece(rank, in_place(buffer) && at_root, own, all);
    Collective::to_root(size, piece, at_root.then(|| all.total(size)))
}

/// MPI_Allgather and MPI_Allgatherv: every rank sends its own piece to
/// every rank and receives `all`.
///
/// # Safety
/// `all` holds a piece for every rank.
unsafe fn gathered_everywhere(
    (rank, size): (c_int, u32),
    sendbuf: Buffer,
    own: Pieces,
    all: Pieces,
) -> Collective {
    let piece = own_piece(rank, in_place(sendbuf), own, all);
    Collective::every_pair(size, piece * u64::from(size), all.total(size))
}

/// MPI_Alltoall and MPI_Alltoallv: every rank sends a piece of `send` (at
/// MPI_IN_PLACE, of `recv`) to every rank and receives `recv`.
///
/// # Safety
/// Both hold a piece for every rank.
unsafe fn exchanged(size: u32, sendbuf: Buffer, send: Pieces, recv: Pieces) -> Collective {
    let received = recv.total(size);
    let sent = match in_place(sendbuf) {
        true => received,
        false => send.total(size),
    };
    Collective::every_pair(size, sent, received)
}

/// MPI_Reduce_scatter and MPI_Reduce_scatter_block: every rank sends
/// every rank its piece of the whole vector (`recv`, the pieces of all)
/// and receives one piece of its own from every rank.
///
/// # Safety
/// `recv` holds a piece for every rank.
unsafe fn reduce_scattered((rank, size): (c_int, u32), recv: Pieces) -> Collective {
    let whole = recv.total(size);
    let mine = recv.of_rank(rank);
    Collective::every_pair(size, whole, mine * u64::from(size))
}

/// MPI_Allreduce, MPI_Scan and MPI_Exscan: every rank sends `n` bytes to
/// every rank and receives `n` from every rank.
fn reduced_everywhere(size: u32, n: u64) -> Collective {
    Collective::every_pair(size, n * u64::from(size), n * u64::from(size))
}

// ---- starting and stopping -----------------------------------------------------

/// Before an experiment that traces MPI starts (ordinary context): the
/// slots' prerequisites and the library, when the process has it.
pub fn prepare() {
    heap::prepare_slots();
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

// ---- the real functions the hooks call by hand --------------------------------
// (The traced hooks call theirs by the signature of their entry.)

type NoArgFn = unsafe extern "C" fn() -> c_int;
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

// ---- the wait and test families ----------------------------------------------

/// A call of the wait and test families finished with its requests: a
/// wait always (its `flag` NULL), a test when its flag says so.
///
/// # Safety
/// `flag` is NULL or the flag the library wrote.
unsafe fn finished(flag: *const c_int) -> bool {
    flag.is_null() || *flag != 0
}

/// MPI_Waitall and MPI_Testall (`flag` NULL for the wait), and MPI_Wait
/// and MPI_Test as these on one request; `call` is the library's, given
/// the statuses to pass.
///
/// # Safety
/// MPI's contract of these functions.
#[inline(always)]
unsafe fn completing_all(
    op: MpiOp,
    count: c_int,
    requests: *mut Handle,
    flag: *mut c_int,
    statuses: *mut Status,
    call: impl FnOnce(*mut Status) -> c_int,
) -> c_int {
    let n = usize::try_from(count).unwrap_or(0);
    completing(
        op,
        n,
        requests,
        |scratch, any| call(scratch.statuses_for(statuses, any)),
        |scratch| {
            // SAFETY: the call succeeded: the library wrote the flag.
            if unsafe { finished(flag) } {
                let passed = scratch.statuses_for(statuses, true);
                for i in 0..count {
                    scratch.complete(i, status_at(passed, i));
                }
            }
        },
    )
}

/// MPI_Waitany and MPI_Testany (`flag` NULL for the wait); `call` is the
/// library's, given the status to pass.
///
/// # Safety
/// MPI's contract of these functions.
#[inline(always)]
unsafe fn completing_any(
    op: MpiOp,
    count: c_int,
    requests: *mut Handle,
    index: *mut c_int,
    flag: *mut c_int,
    status: *mut Status,
    call: impl FnOnce(*mut Status) -> c_int,
) -> c_int {
    let n = usize::try_from(count).unwrap_or(0);
    let mut own = Status::EMPTY;
    let own: *mut Status = &mut own;
    completing(
        op,
        n,
        requests,
        // The status of ours when a pending receive is among the requests.
        |_, any| call(status_to_pass(status, own, any)),
        |scratch| {
            // SAFETY: the call succeeded: the library wrote flag and index.
            let (done, completed) = unsafe { (finished(flag), *index) };
            if done && completed != MPI_UNDEFINED {
                scratch.complete(completed, status_to_pass(status, own, true));
            }
        },
    )
}

/// MPI_Waitsome and MPI_Testsome: the requests the call completed are
/// the first `outcount` of `indices`.
///
/// # Safety
/// MPI's contract of these functions.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn completing_some(
    op: MpiOp,
    real: &Real,
    incount: c_int,
    requests: *mut Handle,
    outcount: *mut c_int,
    indices: *mut c_int,
    statuses: *mut Status,
) -> c_int {
    let n = usize::try_from(incount).unwrap_or(0);
    completing(
        op,
        n,
        requests,
        |scratch, any| {
            let passed = scratch.statuses_for(statuses, any);
            call_real!(real, WaitsomeFn, MPI_ERR_INTERN; incount, requests, outcount, indices, passed)
        },
        |scratch| {
            // SAFETY: the call succeeded: the library wrote `outcount`
            // and that many indices.
            let finished = unsafe { *outcount };
            if finished == MPI_UNDEFINED || indices.is_null() {
                return;
            }
            let passed = scratch.statuses_for(statuses, true);
            for k in 0..finished.max(0) {
                // SAFETY: as above.
                let index = unsafe { *indices.add(k as usize) };
                scratch.complete(index, status_at(passed, k));
            }
        },
    )
}

// ---- the exported entry points -----------------------------------------------
// What the program's calls reach when the collector is preloaded (an
// attached collector patches GOT entries with the hooks instead). The
// real functions are the library's PMPI_ entries, not the next definition
// of these names: no `Real` for got.rs to resolve.
//
// An entry `MPI_X(arguments) = hook_x { body }` defines the hook `hook_x`
// with that body. One `MPI_X(arguments) = hook_x: Op by PMPI_X, describe`
// defines it as the call of PMPI_X with the same arguments, `traced` as
// `Op` with `describe`;
// `with status` passes the library a status of the hook's own when the
// program ignores it and the call is recorded (the bytes and source are
// in it); `then after` runs `after` when the call succeeded, recorded or
// not.

macro_rules! mpi_hooks {
    ($(
        $name:ident($($arg:ident: $ty:ty),* $(,)?) = $hook:ident $($body:block)?
            $(: $op:ident by $real:ident $(with $status:ident)?, $describe:expr
                $(, then $after:expr)?)?;
    )*) => {
        $(hook! {
            $name $hook ($($arg: $ty),*)
            $(traced $op $real [$($status)?] ($describe) $(($after))?)?
            $(written $body)?
        })*
        interposed! {
            $( $name($($arg: $ty),*) -> c_int = $hook, None; )*
        }
    };
}

macro_rules! hook {
    ($name:ident $hook:ident ($($arg:ident: $ty:ty),*) written $body:block) => {
        /// # Safety
        #[doc = concat!("MPI's ", stringify!($name), " contract.")]
        #[inline(never)]
        pub(crate) unsafe extern "C" fn $hook($($arg: $ty),*) -> c_int $body
    };
    ($name:ident $hook:ident ($($arg:ident: $ty:ty),*)
        traced $op:ident $real:ident [$($status:ident)?] ($describe:expr) $(($after:expr))?) => {
        /// # Safety
        #[doc = concat!("MPI's ", stringify!($name), " contract.")]
        #[inline(never)]
        pub(crate) unsafe extern "C" fn $hook($($arg: $ty),*) -> c_int {
            $(
                let mut own = Status::EMPTY;
                let $status = status_to_pass($status, &mut own, lifecycle::recording_mpi());
            )?
            let rc = traced(
                MpiOp::$op,
                || call_real!($real, unsafe extern "C" fn($($ty),*) -> c_int, MPI_ERR_INTERN;
                    $($arg),*),
                $describe,
            );
            $(if rc == MPI_SUCCESS {
                $after;
            })?
            rc
        }
    };
}

mpi_hooks! {
    MPI_Init(argc: *mut c_int, argv: *mut *mut *mut c_char) = hook_init:
        Init by PMPI_INIT, |_| {}, then initialized();
    MPI_Init_thread(argc: *mut c_int, argv: *mut *mut *mut c_char, required: c_int,
                    provided: *mut c_int) = hook_init_thread:
        InitThread by PMPI_INIT_THREAD, |_| {}, then initialized();
    MPI_Finalize() = hook_finalize {
        FINALIZING.store(true, Ordering::Release);
        traced(
            MpiOp::Finalize,
            || call_real!(PMPI_FINALIZE, NoArgFn, MPI_ERR_INTERN;),
            |_| {},
        )
    };

    // Point to point.
    MPI_Send(buf: Buffer, count: c_int, datatype: Handle, dest: c_int, tag: c_int,
             comm: Handle) = hook_send:
        Send by PMPI_SEND, |e| sent(e, count, datatype, dest, tag, comm);
    MPI_Bsend(buf: Buffer, count: c_int, datatype: Handle, dest: c_int, tag: c_int,
              comm: Handle) = hook_bsend:
        Bsend by PMPI_BSEND, |e| sent(e, count, datatype, dest, tag, comm);
    MPI_Ssend(buf: Buffer, count: c_int, datatype: Handle, dest: c_int, tag: c_int,
              comm: Handle) = hook_ssend:
        Ssend by PMPI_SSEND, |e| sent(e, count, datatype, dest, tag, comm);
    MPI_Rsend(buf: Buffer, count: c_int, datatype: Handle, dest: c_int, tag: c_int,
              comm: Handle) = hook_rsend:
        Rsend by PMPI_RSEND, |e| sent(e, count, datatype, dest, tag, comm);
    MPI_Isend(buf: Buffer, count: c_int, datatype: Handle, dest: c_int, tag: c_int,
              comm: Handle, request: *mut Handle) = hook_isend:
        Isend by PMPI_ISEND, |e| sent(e, count, datatype, dest, tag, comm),
        then given_out(request);
    MPI_Ibsend(buf: Buffer, count: c_int, datatype: Handle, dest: c_int, tag: c_int,
               comm: Handle, request: *mut Handle) = hook_ibsend:
        Ibsend by PMPI_IBSEND, |e| sent(e, count, datatype, dest, tag, comm),
        then given_out(request);
    MPI_Issend(buf: Buffer, count: c_int, datatype: Handle, dest: c_int, tag: c_int,
               comm: Handle, request: *mut Handle) = hook_issend:
        Issend by PMPI_ISSEND, |e| sent(e, count, datatype, dest, tag, comm),
        then given_out(request);
    MPI_Irsend(buf: Buffer, count: c_int, datatype: Handle, dest: c_int, tag: c_int,
               comm: Handle, request: *mut Handle) = hook_irsend:
        Irsend by PMPI_IRSEND, |e| sent(e, count, datatype, dest, tag, comm),
        then given_out(request);
    MPI_Recv(buf: *mut c_void, count: c_int, datatype: Handle, source: c_int, tag: c_int,
             comm: Handle, status: *mut Status) = hook_recv:
        Recv by PMPI_RECV with status, |e| received(e, status, comm);
    MPI_Irecv(buf: *mut c_void, count: c_int, datatype: Handle, source: c_int, tag: c_int,
              comm: Handle, request: *mut Handle) = hook_irecv:
        // SAFETY: the call succeeded: the library wrote the request.
        Irecv by PMPI_IRECV, |e| unsafe { posted(e, source, tag, comm, request) };
    MPI_Sendrecv(sendbuf: Buffer, sendcount: c_int, sendtype: Handle, dest: c_int,
                 sendtag: c_int, recvbuf: *mut c_void, recvcount: c_int, recvtype: Handle,
                 source: c_int, recvtag: c_int, comm: Handle, status: *mut Status) =
        hook_sendrecv:
        Sendrecv by PMPI_SENDRECV with status, |e| {
            received(e, status, comm);
            sent(e, sendcount, sendtype, dest, sendtag, comm);
        };
    MPI_Sendrecv_replace(buf: *mut c_void, count: c_int, datatype: Handle, dest: c_int,
                         sendtag: c_int, source: c_int, recvtag: c_int, comm: Handle,
                         status: *mut Status) = hook_sendrecv_replace:
        SendrecvReplace by PMPI_SENDRECV_REPLACE with status, |e| {
            received(e, status, comm);
            sent(e, count, datatype, dest, sendtag, comm);
        };
    MPI_Probe(source: c_int, tag: c_int, comm: Handle, status: *mut Status) = hook_probe:
        Probe by PMPI_PROBE, |e| probed(e, source, tag, comm);
    MPI_Iprobe(source: c_int, tag: c_int, comm: Handle, flag: *mut c_int,
               status: *mut Status) = hook_iprobe:
        Iprobe by PMPI_IPROBE, |e| probed(e, source, tag, comm);

    // Completing requests.
    MPI_Wait(request: *mut Handle, status: *mut Status) = hook_wait {
        completing_all(MpiOp::Wait, 1, request, null_mut(), status, |passed| {
            call_real!(PMPI_WAIT, WaitFn, MPI_ERR_INTERN; request, passed)
        })
    };
    MPI_Waitall(count: c_int, requests: *mut Handle, statuses: *mut Status) = hook_waitall {
        completing_all(MpiOp::Waitall, count, requests, null_mut(), statuses, |passed| {
            call_real!(PMPI_WAITALL, WaitallFn, MPI_ERR_INTERN; count, requests, passed)
        })
    };
    MPI_Waitany(count: c_int, requests: *mut Handle, index: *mut c_int,
                status: *mut Status) = hook_waitany {
        completing_any(MpiOp::Waitany, count, requests, index, null_mut(), status, |passed| {
            call_real!(PMPI_WAITANY, WaitanyFn, MPI_ERR_INTERN; count, requests, index, passed)
        })
    };
    MPI_Waitsome(incount: c_int, requests: *mut Handle, outcount: *mut c_int,
                 indices: *mut c_int, statuses: *mut Status) = hook_waitsome {
        let real = &PMPI_WAITSOME;
        completing_some(MpiOp::Waitsome, real, incount, requests, outcount, indices, statuses)
    };
    MPI_Test(request: *mut Handle, flag: *mut c_int, status: *mut Status) = hook_test {
        completing_all(MpiOp::Test, 1, request, flag, status, |passed| {
            call_real!(PMPI_TEST, TestFn, MPI_ERR_INTERN; request, flag, passed)
        })
    };
    MPI_Testall(count: c_int, requests: *mut Handle, flag: *mut c_int,
                statuses: *mut Status) = hook_testall {
        completing_all(MpiOp::Testall, count, requests, flag, statuses, |passed| {
            call_real!(PMPI_TESTALL, TestallFn, MPI_ERR_INTERN; count, requests, flag, passed)
        })
    };
    MPI_Testany(count: c_int, requests: *mut Handle, index: *mut c_int, flag: *mut c_int,
                status: *mut Status) = hook_testany {
        completing_any(MpiOp::Testany, count, requests, index, flag, status, |passed| {
            call_real!(PMPI_TESTANY, TestanyFn, MPI_ERR_INTERN;
                count, requests, index, flag, passed)
        })
    };
    MPI_Testsome(incount: c_int, requests: *mut Handle, outcount: *mut c_int,
                 indices: *mut c_int, statuses: *mut Status) = hook_testsome {
        let real = &PMPI_TESTSOME;
        completing_some(MpiOp::Testsome, real, incount, requests, outcount, indices, statuses)
    };
    MPI_Request_free(request: *mut Handle) = hook_request_free {
        given_out(request);
        traced(
            MpiOp::RequestFree,
            || call_real!(PMPI_REQUEST_FREE, RequestFreeFn, MPI_ERR_INTERN; request),
            |_| {},
        )
    };

    // Collectives. Counts, datatypes and buffers significant at the root
    // only are read there only.
    MPI_Barrier(comm: Handle) = hook_barrier:
        Barrier by PMPI_BARRIER, |e| e.comm = comm_number(comm);
    MPI_Bcast(buf: *mut c_void, count: c_int, datatype: Handle, root: c_int,
              comm: Handle) = hook_bcast:
        Bcast by PMPI_BCAST, |e| collective(e, comm, Some(root), |(rank, size)| {
            let n = bytes_of(count, datatype);
            Collective::to_root(size, n, (rank == root).then(|| n * u64::from(size))).reversed()
        });
    MPI_Reduce(sendbuf: Buffer, recvbuf: *mut c_void, count: c_int, datatype: Handle,
               op: Handle, root: c_int, comm: Handle) = hook_reduce:
        Reduce by PMPI_REDUCE, |e| collective(e, comm, Some(root), |(rank, size)| {
            let n = bytes_of(count, datatype);
            Collective::to_root(size, n, (rank == root).then(|| n * u64::from(size)))
        });
    MPI_Allreduce(sendbuf: Buffer, recvbuf: *mut c_void, count: c_int, datatype: Handle,
                  op: Handle, comm: Handle) = hook_allreduce:
        Allreduce by PMPI_ALLREDUCE, |e| collective(e, comm, None, |(_, size)| {
            reduced_everywhere(size, bytes_of(count, datatype))
        });
    MPI_Scan(sendbuf: Buffer, recvbuf: *mut c_void, count: c_int, datatype: Handle,
             op: Handle, comm: Handle) = hook_scan:
        Scan by PMPI_SCAN, |e| collective(e, comm, None, |(_, size)| {
            reduced_everywhere(size, bytes_of(count, datatype))
        });
    MPI_Exscan(sendbuf: Buffer, recvbuf: *mut c_void, count: c_int, datatype: Handle,
               op: Handle, comm: Handle) = hook_exscan:
        Exscan by PMPI_EXSCAN, |e| collective(e, comm, None, |(_, size)| {
            reduced_everywhere(size, bytes_of(count, datatype))
        });
    MPI_Gather(sendbuf: Buffer, sendcount: c_int, sendtype: Handle, recvbuf: *mut c_void,
               recvcount: c_int, recvtype: Handle, root: c_int, comm: Handle) = hook_gather:
        Gather by PMPI_GATHER, |e| collective(e, comm, Some(root), |place| {
            let own = Pieces::each(sendcount, sendtype);
            gathered(place, root, sendbuf, own, Pieces::each(recvcount, recvtype))
        });
    MPI_Gatherv(sendbuf: Buffer, sendcount: c_int, sendtype: Handle, recvbuf: *mut c_void,
                recvcounts: *const c_int, displs: *const c_int, recvtype: Handle, root: c_int,
                comm: Handle) = hook_gatherv:
        Gatherv by PMPI_GATHERV, |e| collective(e, comm, Some(root), |place| {
            let own = Pieces::each(sendcount, sendtype);
            gathered(place, root, sendbuf, own, Pieces::per_rank(recvcounts, recvtype))
        });
    MPI_Scatter(sendbuf: Buffer, sendcount: c_int, sendtype: Handle, recvbuf: *mut c_void,
                recvcount: c_int, recvtype: Handle, root: c_int, comm: Handle) = hook_scatter:
        Scatter by PMPI_SCATTER, |e| collective(e, comm, Some(root), |place| {
            let own = Pieces::each(recvcount, recvtype);
            gathered(place, root, recvbuf, own, Pieces::each(sendcount, sendtype)).reversed()
        });
    MPI_Scatterv(sendbuf: Buffer, sendcounts: *const c_int, displs: *const c_int,
                 sendtype: Handle, recvbuf: *mut c_void, recvcount: c_int, recvtype: Handle,
                 root: c_int, comm: Handle) = hook_scatterv:
        Scatterv by PMPI_SCATTERV, |e| collective(e, comm, Some(root), |place| {
            let own = Pieces::each(recvcount, recvtype);
            gathered(place, root, recvbuf, own, Pieces::per_rank(sendcounts, sendtype)).reversed()
        });
    MPI_Allgather(sendbuf: Buffer, sendcount: c_int, sendtype: Handle, recvbuf: *mut c_void,
                  recvcount: c_int, recvtype: Handle, comm: Handle) = hook_allgather:
        Allgather by PMPI_ALLGATHER, |e| collective(e, comm, None, |place| {
            let own = Pieces::each(sendcount, sendtype);
            gathered_everywhere(place, sendbuf, own, Pieces::each(recvcount, recvtype))
        });
    MPI_Allgatherv(sendbuf: Buffer, sendcount: c_int, sendtype: Handle, recvbuf: *mut c_void,
                   recvcounts: *const c_int, displs: *const c_int, recvtype: Handle,
                   comm: Handle) = hook_allgatherv:
        Allgatherv by PMPI_ALLGATHERV, |e| collective(e, comm, None, |place| {
            let own = Pieces::each(sendcount, sendtype);
            gathered_everywhere(place, sendbuf, own, Pieces::per_rank(recvcounts, recvtype))
        });
    MPI_Alltoall(sendbuf: Buffer, sendcount: c_int, sendtype: Handle, recvbuf: *mut c_void,
                 recvcount: c_int, recvtype: Handle, comm: Handle) = hook_alltoall:
        Alltoall by PMPI_ALLTOALL, |e| collective(e, comm, None, |(_, size)| {
            let send = Pieces::each(sendcount, sendtype);
            exchanged(size, sendbuf, send, Pieces::each(recvcount, recvtype))
        });
    MPI_Alltoallv(sendbuf: Buffer, sendcounts: *const c_int, sdispls: *const c_int,
                  sendtype: Handle, recvbuf: *mut c_void, recvcounts: *const c_int,
                  rdispls: *const c_int, recvtype: Handle, comm: Handle) = hook_alltoallv:
        Alltoallv by PMPI_ALLTOALLV, |e| collective(e, comm, None, |(_, size)| {
            let send = Pieces::per_rank(sendcounts, sendtype);
            exchanged(size, sendbuf, send, Pieces::per_rank(recvcounts, recvtype))
        });
    MPI_Reduce_scatter(sendbuf: Buffer, recvbuf: *mut c_void, recvcounts: *const c_int,
                       datatype: Handle, op: Handle, comm: Handle) = hook_reduce_scatter:
        ReduceScatter by PMPI_REDUCE_SCATTER, |e| collective(e, comm, None, |place| {
            reduce_scattered(place, Pieces::per_rank(recvcounts, datatype))
        });
    MPI_Reduce_scatter_block(sendbuf: Buffer, recvbuf: *mut c_void, recvcount: c_int,
                             datatype: Handle, op: Handle, comm: Handle) =
        hook_reduce_scatter_block:
        ReduceScatterBlock by PMPI_REDUCE_SCATTER_BLOCK, |e| collective(e, comm, None, |place| {
            reduce_scattered(place, Pieces::each(recvcount, datatype))
        });

    // One-sided synchronization (the transfers themselves are not traced).
    MPI_Win_fence(assert: c_int, win: Handle) = hook_win_fence:
        WinFence by PMPI_WIN_FENCE, |_| {};
    MPI_Win_lock(lock_type: c_int, rank: c_int, assert: c_int, win: Handle) = hook_win_lock:
        WinLock by PMPI_WIN_LOCK, |_| {};
}
