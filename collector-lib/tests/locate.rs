//! The unwinder's probe: which frame of the interrupted stack holds an
//! address (counter records place a data address in its frame). A signal
//! raised two calls below a function with a local array is unwound in the
//! handler with probes in the array, in the interrupted code's red zone,
//! below it, and off the stack.

use std::ffi::c_void;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

use collector::unwind::{
    discover_signal_restorer, refresh_tables, set_signal_restorer, unwind_from_signal,
    unwind_from_signal_locating, HoldingFrame, StackCache, UnwindStatus,
};

const FRAMES: usize = 256;

/// What the handler probes: an offset into the holder's array, bytes
/// below the interrupted stack pointer, or an address as it is.
#[derive(Clone, Copy, Debug)]
enum Probe {
    InArray(u64),
    BelowRsp(u64),
    At(u64),
}

static PROBE: Mutex<Probe> = Mutex::new(Probe::At(0));
/// The holder's array while it raises the signal.
static ARRAY: AtomicU64 = AtomicU64::new(0);
static FOUND: Mutex<Option<Walked>> = Mutex::new(None);
static DEPTH: AtomicUsize = AtomicUsize::new(0);

#[derive(Clone, Copy, Debug)]
struct Walked {
    holding: Option<HoldingFrame>,
    pcs: [u64; FRAMES],
    depth: usize,
    /// The same walk without a probe found the same frames.
    plain_same: bool,
    status: UnwindStatus,
}

extern "C" fn on_signal(_: libc::c_int, _: *mut libc::siginfo_t, context: *mut c_void) {
    let mut cache = StackCache::new();
    let mut pcs = [0u64; FRAMES];
    let mut plain = [0u64; FRAMES];
    // SAFETY: the kernel's ucontext of this handler; gregs are plain data.
    let rsp = unsafe {
        (*context.cast::<libc::ucontext_t>()).uc_mcontext.gregs[libc::REG_RSP as usize] as u64
    };
    // The test thread holds neither lock while the signal is raised.
    let Ok(probe) = PROBE.try_lock().map(|p| *p) else {
        return;
    };
    let address = match probe {
        Probe::InArray(offset) => ARRAY.load(Ordering::Relaxed) + offset,
        Probe::BelowRsp(bytes) => rsp - bytes,
        Probe::At(address) => address,
    };
    // SAFETY: as above.
    let (unwound, holding) =
        unsafe { unwind_from_signal_locating(context, &mut cache, &mut pcs, address) };
    // SAFETY: as above.
    let plain_unwound = unsafe { unwind_from_signal(context, &mut cache, &mut plain) };
    let walked = Walked {
        holding,
        pcs,
        depth: unwound.depth,
        plain_same: plain[..plain_unwound.depth] == pcs[..unwound.depth],
        status: unwound.status,
    };
    if let Ok(mut found) = FOUND.try_lock() {
        *found = Some(walked);
    }
}

#[inline(never)]
fn raise_here() {
    // SAFETY: a signal to this thread, whose handler is installed.
    unsafe { libc::raise(libc::SIGUSR1) };
    DEPTH.fetch_add(1, Ordering::Relaxed);
}

#[inline(never)]
fn between() {
    raise_here();
    DEPTH.fetch_add(1, Ordering::Relaxed);
}

/// Raises the signal two calls below a frame with a local array, the
/// handler probing `probe`. The walk and the array's address.
#[inline(never)]
fn holder(probe: Probe) -> (Walked, u64) {
    let mut array = [0u8; 8192];
    std::hint::black_box(&mut array);
    let address = array.as_ptr() as u64;
    ARRAY.store(address, Ordering::Relaxed);
    *PROBE.lock().unwrap() = probe;
    between();
    std::hint::black_box(&mut array);
    let walked = FOUND.lock().unwrap().take().expect("the handler ran");
    assert!(walked.plain_same, "a probe changes nothing of the walk");
    assert_ne!(walked.status, UnwindStatus::Failed, "{walked:?}");
    (walked, address)
}

fn install() {
    refresh_tables().expect("unwind tables");
    // SAFETY: a plain SA_SIGINFO handler.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_signal as *const () as usize;
        action.sa_flags = libc::SA_SIGINFO;
        libc::sigemptyset(&mut action.sa_mask);
        assert_eq!(
            libc::sigaction(libc::SIGUSR1, &action, std::ptr::null_mut()),
            0
        );
    }
    if let Some(restorer) = discover_signal_restorer() {
        set_signal_restorer(restorer);
    }
}

/// Whether `pc` (a return address) is inside function `start`'s code.
fn inside(pc: u64, start: usize) -> bool {
    let start = start as u64;
    pc > start && pc - start < 4096
}

/// An address in the array is in the holder's frame: the frame whose pc
/// is a return address into `holder`, `between` the frame below; its CFA
/// above the array. The interrupted code's red zone
/// is the leaf's; below it, and off the stack, nothing's.
#[test]
fn frames_hold_their_locals_and_nothing_else() {
    install();
    let (walked, array) = holder(Probe::InArray(100));
    let frame = walked.holding.expect("the array is on the walked stack");
    let pcs = &walked.pcs[..walked.depth];
    assert!(
        inside(pcs[frame.index], holder as *const () as usize),
        "{frame:?} {pcs:x?}"
    );
    assert!(
        inside(pcs[frame.index - 1], between as *const () as usize),
        "{pcs:x?}"
    );
    // Above the array, by the rest of the frame (in a debug build: the
    // walk it returns, 2 KiB of pcs, and temporaries).
    assert!(
        frame.cfa > array + 8192 && frame.cfa - array < 8192 + 16384,
        "{frame:?} array {array:#x}"
    );
    let (last_byte, _) = holder(Probe::InArray(8191));
    assert_eq!(last_byte.holding, Some(frame));
    let (first_byte, _) = holder(Probe::InArray(0));
    assert_eq!(first_byte.holding, Some(frame));

    let (red_zone, _) = holder(Probe::BelowRsp(64));
    assert_eq!(red_zone.holding.map(|h| h.index), Some(0), "{red_zone:?}");
    let (at_rsp, _) = holder(Probe::BelowRsp(0));
    assert_eq!(at_rsp.holding.map(|h| h.index), Some(0));
    let (below, _) = holder(Probe::BelowRsp(129));
    assert_eq!(below.holding, None);

    let boxed = Box::new([0u8; 64]);
    let (heap, _) = holder(Probe::At(boxed.as_ptr() as u64));
    assert_eq!(heap.holding, None);
}
