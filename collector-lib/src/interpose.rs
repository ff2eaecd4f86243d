//! libc functions the collector interposes (it is preloaded, so these
//! definitions win over libc's for the whole program):
//! - `sigaction`, `signal`: the collector stays in charge of SIGPROF (and
//!   of SIGTRAP when its clock sends it); the program's handler is
//!   remembered and called for signals that are not ours (its own
//!   setitimer profiling, its own breakpoints keep working);
//! - `sigprocmask`, `pthread_sigmask`: the profile signals are never
//!   blocked by the program while an experiment is active (else its
//!   threads go unseen);
//! - `pthread_create`: a new thread is profiled from its first instruction;
//! - `fork`: samples around it and the child's experiment (`_fN.er`);
//! - `dlopen`, `dlclose`: the load-object map and unwind tables follow.

use crate::real::{self, DlcloseFn, ForkFn, PthreadCreateFn, StartRoutine};
use crate::{log, numbers, objects, profile, samples, state, unwind};
use experiment::layout::SampleCause;
use std::ffi::{c_char, c_int, c_void};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicUsize, Ordering};

/// Whether our handler of SIGPROF / SIGTRAP is installed (from then on
/// the program's disposition of that signal is virtual). SIGTRAP is ours
/// only when the clock signals with it (clock::uses_sigtrap).
static SIGPROF_INSTALLED: AtomicBool = AtomicBool::new(false);
static SIGTRAP_INSTALLED: AtomicBool = AtomicBool::new(false);

fn installed_flag(signal: c_int) -> Option<&'static AtomicBool> {
    match signal {
        libc::SIGPROF => Some(&SIGPROF_INSTALLED),
        libc::SIGTRAP => Some(&SIGTRAP_INSTALLED),
        _ => None,
    }
}

/// The program's virtual disposition of `signal`, when the collector owns
/// the real one.
fn virtual_disposition(signal: c_int) -> Option<&'static profile::UserDisposition> {
    let installed = installed_flag(signal)?.load(Ordering::Acquire);
    installed
        .then(|| profile::user_disposition(signal))
        .flatten()
}

/// Installs the collector's profile signal handler for SIGPROF, and for
/// SIGTRAP when the clock, off-CPU or counter profiling sends it, keeping whatever the
/// program had as its virtual disposition.
pub fn install_profile_handlers() -> Result<(), String> {
    install_handler(libc::SIGPROF)?;
    if crate::clock::uses_sigtrap() || crate::offcpu::wanted() || crate::counters::wanted() {
        install_handler(libc::SIGTRAP)?;
    }
    Ok(())
}

fn install_handler(signal: c_int) -> Result<(), String> {
    let (Some(installed), Some(user)) = (installed_flag(signal), profile::user_disposition(signal))
    else {
        return Err(format!("signal {signal} is not a profile signal"));
    };
    let ours = profile::on_profile_signal as *const () as usize;
    // SAFETY: plain sigaction structures.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = ours;
        action.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
        // SIGPROF blocked while either handler runs (a thread's clock
        // sends one of the two, so a tick never nests into a tick's stack
        // walk). SIGTRAP is never blocked, not even in its own handler
        // (SA_NODEFER): a breakpoint or single-step trap that finds it
        // blocked makes the kernel reset its handler to default, and the
        // next trap of ours would kill the program (a debugger stepping
        // through the handler). A handler nested in another finds the
        // thread's `in_handler` flag set and leaves the stack buffers be.
        if signal == libc::SIGTRAP {
            action.sa_flags |= libc::SA_NODEFER;
        }
        libc::sigemptyset(&mut action.sa_mask);
        libc::sigaddset(&mut action.sa_mask, libc::SIGPROF);
        let mut old: libc::sigaction = std::mem::zeroed();
        if real::sigaction(signal, &action, &mut old) != 0 {
            return Err(format!(
                "cannot install the handler of signal {signal}: {}",
                std::io::Error::last_os_error()
            ));
        }
        if !installed.swap(true, Ordering::AcqRel) && old.sa_sigaction != ours {
            user.handler.store(old.sa_sigaction, Ordering::Release);
            user.flags.store(old.sa_flags as usize, Ordering::Release);
        }
    }
    Ok(())
}

/// `set` = the signals the collector's clocks send: SIGPROF, and SIGTRAP
/// once its handler is ours (blocked only around the collector's own short
/// critical sections, which hold no breakpoint traps).
///
/// # Safety
/// `set` is a valid sigset_t.
unsafe fn profile_signals(set: &mut libc::sigset_t) {
    libc::sigemptyset(set);
    libc::sigaddset(set, libc::SIGPROF);
    if SIGTRAP_INSTALLED.load(Ordering::Acquire) {
        libc::sigaddset(set, libc::SIGTRAP);
    }
}

/// The signals `rdbx collect -y` / `-l` use, installed by `install_control_signals`.
static PAUSE_SIGNAL: AtomicI32 = AtomicI32::new(0);
static SAMPLE_SIGNAL: AtomicI32 = AtomicI32::new(0);

/// Installs handlers for the pause/resume toggle signal and the sample
/// signal (0 = none).
pub fn install_control_signals(pause_signal: i32, sample_signal: i32) {
    PAUSE_SIGNAL.store(pause_signal, Ordering::Release);
    SAMPLE_SIGNAL.store(sample_signal, Ordering::Release);
    for signal in [pause_signal, sample_signal] {
        if signal <= 0 || signal == libc::SIGPROF {
            continue;
        }
        // SAFETY: plain sigaction structures.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_control_signal as *const () as usize;
            action.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            real::sigaction(signal, &action, std::ptr::null_mut());
        }
    }
}

extern "C" fn on_control_signal(signal: c_int, _info: *mut libc::siginfo_t, _context: *mut c_void) {
    let saved = crate::sys::errno();
    if signal == PAUSE_SIGNAL.load(Ordering::Acquire) {
        if state::paused() {
            state::resume("signal");
        } else {
            state::pause("signal");
        }
    } else if signal == SAMPLE_SIGNAL.load(Ordering::Acquire) {
        samples::record(SampleCause::Signal, b"");
    }
    crate::sys::set_errno(saved);
}

fn is_control_signal(signal: c_int) -> bool {
    signal > 0
        && (signal == PAUSE_SIGNAL.load(Ordering::Acquire)
            || signal == SAMPLE_SIGNAL.load(Ordering::Acquire))
}

/// # Safety
/// Same contract as libc's sigaction.
#[no_mangle]
pub unsafe extern "C" fn sigaction(
    signal: c_int,
    act: *const libc::sigaction,
    old: *mut libc::sigaction,
) -> c_int {
    if is_control_signal(signal) {
        // The user asked rdbx to use this signal; the program's handler
        // is not installed (as with gprofng's -y/-l).
        if !old.is_null() {
            *old = std::mem::zeroed();
        }
        return 0;
    }
    let Some(user) = virtual_disposition(signal) else {
        return real::sigaction(signal, act, old);
    };
    if !old.is_null() {
        *old = std::mem::zeroed();
        (*old).sa_sigaction = user.handler.load(Ordering::Acquire);
        (*old).sa_flags = user.flags.load(Ordering::Acquire) as c_int;
    }
    if !act.is_null() {
        user.flags
            .store((*act).sa_flags as usize, Ordering::Release);
        user.handler.store((*act).sa_sigaction, Ordering::Release);
    }
    0
}

/// # Safety
/// Same contract as libc's signal.
#[no_mangle]
pub unsafe extern "C" fn signal(signum: c_int, handler: libc::sighandler_t) -> libc::sighandler_t {
    let mut action: libc::sigaction = std::mem::zeroed();
    action.sa_sigaction = handler;
    // BSD semantics, as glibc's signal(): restart, do not reset.
    action.sa_flags = libc::SA_RESTART;
    libc::sigemptyset(&mut action.sa_mask);
    let mut old: libc::sigaction = std::mem::zeroed();
    if sigaction(signum, &action, &mut old) != 0 {
        return libc::SIG_ERR;
    }
    old.sa_sigaction
}

/// A copy of `set` without the profile signals when the program tries to
/// block them.
unsafe fn without_sigprof(
    how: c_int,
    set: *const libc::sigset_t,
    copy: &mut libc::sigset_t,
) -> *const libc::sigset_t {
    if set.is_null() || how == libc::SIG_UNBLOCK || !state::active() {
        return set;
    }
    let trap_is_ours = SIGTRAP_INSTALLED.load(Ordering::Acquire);
    let blocks_ours = libc::sigismember(set, libc::SIGPROF) == 1
        || (trap_is_ours && libc::sigismember(set, libc::SIGTRAP) == 1);
    if !blocks_ours {
        return set;
    }
    *copy = *set;
    libc::sigdelset(copy, libc::SIGPROF);
    if trap_is_ours {
        libc::sigdelset(copy, libc::SIGTRAP);
    }
    copy
}

/// # Safety
/// Same contract as libc's sigprocmask.
#[no_mangle]
pub unsafe extern "C" fn sigprocmask(
    how: c_int,
    set: *const libc::sigset_t,
    old: *mut libc::sigset_t,
) -> c_int {
    let mut copy: libc::sigset_t = std::mem::zeroed();
    let set = without_sigprof(how, set, &mut copy);
    let rc = real::sigmask(&real::SIGPROCMASK, how, set, old);
    if rc != 0 && real::SIGPROCMASK.address() == 0 {
        crate::sys::set_errno(rc);
        return -1;
    }
    rc
}

/// # Safety
/// Same contract as libc's pthread_sigmask.
#[no_mangle]
pub unsafe extern "C" fn pthread_sigmask(
    how: c_int,
    set: *const libc::sigset_t,
    old: *mut libc::sigset_t,
) -> c_int {
    let mut copy: libc::sigset_t = std::mem::zeroed();
    let set = without_sigprof(how, set, &mut copy);
    real::sigmask(&real::PTHREAD_SIGMASK, how, set, old)
}

/// Blocks the profile signals in the calling thread; returns the
/// previous mask.
pub fn block_sigprof() -> libc::sigset_t {
    // SAFETY: plain sigset operations with the real pthread_sigmask.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        profile_signals(&mut set);
        real::sigmask(&real::PTHREAD_SIGMASK, libc::SIG_BLOCK, &set, &mut old);
        old
    }
}

pub fn restore_mask(mask: libc::sigset_t) {
    // SAFETY: restoring a mask we saved.
    unsafe {
        real::sigmask(
            &real::PTHREAD_SIGMASK,
            libc::SIG_SETMASK,
            &mask,
            std::ptr::null_mut(),
        )
    };
}

// ---- threads ------------------------------------------------------------

struct ThreadStart {
    routine: StartRoutine,
    argument: *mut c_void,
    /// dbx's number of the thread (see `numbers`).
    number: u32,
}

/// pthread key whose destructor runs when a profiled thread exits, by
/// returning or by pthread_exit.
static EXIT_KEY: std::sync::OnceLock<Option<libc::pthread_key_t>> = std::sync::OnceLock::new();

/// The exit key's value in the first round of destructors, and after.
const FIRST_ROUND: usize = 1;
const LATER_ROUND: usize = 2;

unsafe extern "C" fn on_thread_exit(value: *mut c_void) {
    let had_heap_slot = crate::heap::forget_current_thread();
    state::unregister_current_thread();
    numbers::forget(crate::sys::gettid());
    // The destructors of the program's keys made after ours run after
    // this one and may malloc and free, which claims a heap slot again.
    // Armed again, this destructor runs in the next round (glibc runs
    // rounds while a key has a value) and lets that slot go too: always
    // after the first round, after a later one while it found a slot.
    if value as usize == FIRST_ROUND || had_heap_slot {
        if let Some(key) = exit_key() {
            libc::pthread_setspecific(key, LATER_ROUND as *const c_void);
        }
    }
}

fn exit_key() -> Option<libc::pthread_key_t> {
    *EXIT_KEY.get_or_init(|| {
        let mut key: libc::pthread_key_t = 0;
        // SAFETY: valid out-pointer and destructor.
        let rc = unsafe { libc::pthread_key_create(&mut key, Some(on_thread_exit)) };
        (rc == 0).then_some(key)
    })
}

extern "C" fn start_profiled_thread(data: *mut c_void) -> *mut c_void {
    // SAFETY: pthread_create below passed a Box<ThreadStart>.
    let start = unsafe { Box::from_raw(data.cast::<ThreadStart>()) };
    // Known even while no experiment is active: one may start later.
    numbers::remember(crate::sys::gettid(), start.number);
    // The thread control block may be an exited thread's: its heap state
    // (and thread id) are not this thread's.
    crate::heap::forget_current_thread();
    if let Some(key) = exit_key() {
        // SAFETY: a key we created; any non-null value arms the destructor.
        unsafe { libc::pthread_setspecific(key, FIRST_ROUND as *const c_void) };
    }
    if state::active() {
        state::register_current_thread(start.number);
    }
    (start.routine)(start.argument)
}

/// # Safety
/// Same contract as libc's pthread_create.
#[no_mangle]
pub unsafe extern "C" fn pthread_create(
    thread: *mut libc::pthread_t,
    attr: *const libc::pthread_attr_t,
    routine: StartRoutine,
    argument: *mut c_void,
) -> c_int {
    let real_create = real::PTHREAD_CREATE.address();
    if real_create == 0 {
        return libc::ENOSYS;
    }
    let real_create: PthreadCreateFn = std::mem::transmute(real_create);
    // Every thread is numbered, also while no experiment is active (one
    // may start later, and the debugger numbers them all).
    exit_key();
    let creation = numbers::Creation::begin();
    let start = Box::into_raw(Box::new(ThreadStart {
        routine,
        argument,
        number: creation.number(),
    }));
    let rc = real_create(thread, attr, start_profiled_thread, start.cast());
    if rc == 0 {
        creation.created();
    } else {
        drop(creation);
        drop(Box::from_raw(start));
    }
    rc
}

// ---- fork ----------------------------------------------------------------

/// # Safety
/// Same contract as libc's fork.
#[no_mangle]
pub unsafe extern "C" fn fork() -> libc::pid_t {
    let real_fork = real::FORK.address();
    if real_fork == 0 {
        crate::sys::set_errno(libc::ENOSYS);
        return -1;
    }
    let real_fork: ForkFn = std::mem::transmute(real_fork);
    if !state::active() {
        let pid = real_fork();
        if pid == 0 {
            numbers::restart_in_fork_child(crate::sys::gettid());
        }
        return pid;
    }
    samples::record(SampleCause::ForkBefore, b"");
    let hold = state::hold_for_fork();
    // The program's fork handlers may allocate: in the child, before its
    // experiment starts, this thread's heap state is still the parent's.
    let held = crate::heap::hold_current_thread();
    let pid = real_fork();
    drop(held);
    if pid == 0 {
        state::after_fork_in_child_holding(hold);
        return 0;
    }
    let reserved = hold.release();
    match pid {
        -1 => {
            let saved = crate::sys::errno();
            if let Some(dir) = &reserved {
                let _ = std::fs::remove_dir(dir);
            }
            samples::record(SampleCause::ForkAfter, b"");
            crate::sys::set_errno(saved);
        }
        child => {
            log::write("fork", |line| {
                line.u64("pid", child as u64);
                line.str(
                    "child_expt",
                    reserved
                        .as_deref()
                        .map(state::founder_relative)
                        .unwrap_or_default()
                        .as_bytes(),
                );
            });
            samples::record(SampleCause::ForkAfter, b"");
        }
    }
    pid
}

// ---- dlopen / dlclose ------------------------------------------------------

// dlopen looks at its caller's return address to pick the search path
// (the caller's RUNPATH, $ORIGIN) and namespace. A wrapper that calls the
// real dlopen itself would become that caller. So the entry is a bit of
// assembly: it asks `rdbx_dlopen_may_wrap` whether the caller's identity
// matters; if not, the Rust wrapper (which then refreshes the map and
// unwind tables) is used, else it jumps straight to the real dlopen with
// the caller's return address still on the stack.
/// dlopen's entry (see above). A naked function, so that it is exported
/// like the other interposers and its code runs with the caller's frame.
///
/// # Safety
/// Same contract as libc's dlopen.
#[unsafe(naked)]
#[no_mangle]
pub unsafe extern "C" fn dlopen(file: *const c_char, mode: c_int) -> *mut c_void {
    std::arch::naked_asm!(
        "push rdi",
        "push rsi",
        "sub rsp, 8",
        "mov rdx, [rsp + 24]",
        "call {may_wrap}",
        "add rsp, 8",
        "pop rsi",
        "pop rdi",
        "test eax, eax",
        "jz 2f",
        "jmp {wrapped}",
        "2:",
        "mov rax, [rip + {real}]",
        "jmp rax",
        may_wrap = sym rdbx_dlopen_may_wrap,
        wrapped = sym rdbx_dlopen_wrapped,
        real = sym REAL_DLOPEN_ADDRESS,
    )
}

/// libc's dlopen, for the assembly above (which loads it with a plain
/// `mov`: an atomic has the layout of the word it holds). Any thread may
/// store it, always the same value. Not exported (a preemptible symbol
/// could not be addressed rip-relative).
static REAL_DLOPEN_ADDRESS: AtomicUsize = AtomicUsize::new(0);

/// Decides whether calling dlopen from here changes what it does: only
/// when the name is searched (no '/') or uses $ORIGIN, and the caller's
/// object has its own RPATH/RUNPATH.
extern "C" fn rdbx_dlopen_may_wrap(
    file: *const c_char,
    _mode: c_int,
    caller: *const c_void,
) -> c_int {
    REAL_DLOPEN_ADDRESS.store(real::DLOPEN.address(), Ordering::Release);
    if file.is_null() {
        return 1;
    }
    // SAFETY: dlopen's contract: a NUL-terminated name.
    let name = unsafe { std::ffi::CStr::from_ptr(file) }.to_bytes();
    let searched = !name.contains(&b'/') || name.contains(&b'$');
    i32::from(!searched || !caller_has_search_path(caller))
}

fn caller_has_search_path(caller: *const c_void) -> bool {
    // SAFETY: dladdr1 with RTLD_DL_LINKMAP fills a link_map pointer.
    unsafe {
        let mut info: libc::Dl_info = std::mem::zeroed();
        let mut map: *mut LinkMap = std::ptr::null_mut();
        if libc::dladdr1(
            caller,
            &mut info,
            (&mut map as *mut *mut LinkMap).cast(),
            RTLD_DL_LINKMAP,
        ) == 0
            || map.is_null()
        {
            return true; // unknown caller: be conservative
        }
        let mut dynamic = (*map).l_ld;
        while !dynamic.is_null() && (*dynamic).d_tag != 0 {
            if (*dynamic).d_tag == DT_RPATH || (*dynamic).d_tag == DT_RUNPATH {
                return true;
            }
            dynamic = dynamic.add(1);
        }
        false
    }
}

const DT_RPATH: i64 = 15;
const RTLD_DL_LINKMAP: libc::c_int = 2;
const DT_RUNPATH: i64 = 29;

#[repr(C)]
struct Dyn {
    d_tag: i64,
    d_val: u64,
}

/// The public prefix of glibc's `struct link_map`.
#[repr(C)]
struct LinkMap {
    l_addr: u64,
    l_name: *const c_char,
    l_ld: *const Dyn,
    l_next: *mut LinkMap,
    l_prev: *mut LinkMap,
}

extern "C" fn rdbx_dlopen_wrapped(file: *const c_char, mode: c_int) -> *mut c_void {
    let address = real::DLOPEN.address();
    if address == 0 {
        return std::ptr::null_mut();
    }
    // SAFETY: the real dlopen with the caller's arguments.
    let handle = unsafe {
        let real_dlopen: real::DlopenFn = std::mem::transmute(address);
        real_dlopen(file, mode)
    };
    if !handle.is_null() {
        after_objects_changed();
    }
    handle
}

/// # Safety
/// Same contract as libc's dlclose.
#[no_mangle]
pub unsafe extern "C" fn dlclose(handle: *mut c_void) -> c_int {
    let address = real::DLCLOSE.address();
    if address == 0 {
        return -1;
    }
    let real_dlclose: DlcloseFn = std::mem::transmute(address);
    let rc = real_dlclose(handle);
    if rc == 0 {
        after_objects_changed();
    }
    rc
}

/// The loaded objects changed (a dlopen or dlclose of the program's, or,
/// attached, one the watcher noticed): the unwind tables and the log's
/// map of objects follow. Ordinary context.
pub(crate) fn after_objects_changed() {
    if !state::active() {
        return;
    }
    // dlerror state must survive our own loader calls.
    if let Err(err) = unwind::refresh_tables() {
        log::warning(&format!("unwind tables: {err}"));
    }
    objects::log_all_new();
}

// ---- a live start (loaded by dlopen, nothing interposed) -----------------

/// Whether the program's calls reach our interposers: true when we were
/// preloaded, false when loaded by dlopen into a running process (then
/// the first `pthread_create` in the global scope is libc's).
pub fn interposing() -> bool {
    // SAFETY: NUL-terminated name; RTLD_DEFAULT searches the global scope.
    let found = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"pthread_create".as_ptr()) } as usize;
    found == pthread_create as *const () as usize
}

/// The directory reserved for the child of the fork in progress (set in
/// the prepare handler, taken in the parent and in the child).
static FORK_CHILD_DIR: std::sync::Mutex<Option<std::path::PathBuf>> = std::sync::Mutex::new(None);

/// Without interposition, `fork` is followed with pthread_atfork handlers
/// (registered once, only in a live start; they do nothing while no
/// experiment is active).
/// They run for fork() only: posix_spawn, vfork and raw clone children
/// are not followed, and neither are programs they exec (no LD_PRELOAD).
pub fn install_fork_handlers() {
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    INSTALLED.call_once(|| {
        // SAFETY: three extern "C" functions without arguments.
        let rc = unsafe {
            libc::pthread_atfork(
                Some(before_fork),
                Some(after_fork_in_parent),
                Some(after_fork_in_child),
            )
        };
        if rc != 0 {
            log::warning("pthread_atfork failed: fork children are not followed");
        }
    });
}

fn take_fork_child_dir() -> Option<std::path::PathBuf> {
    match FORK_CHILD_DIR.try_lock() {
        Ok(mut dir) => dir.take(),
        Err(std::sync::TryLockError::Poisoned(e)) => e.into_inner().take(),
        Err(std::sync::TryLockError::WouldBlock) => None,
    }
}

extern "C" fn before_fork() {
    if !state::active() {
        return;
    }
    samples::record(SampleCause::ForkBefore, b"");
    let reserved = state::reserve_fork_child_dir();
    if let Ok(mut dir) = FORK_CHILD_DIR.lock() {
        *dir = reserved;
    }
}

extern "C" fn after_fork_in_parent() {
    if !state::active() {
        return;
    }
    // The child writes the `fork` line (only it knows its pid here).
    let _ = take_fork_child_dir();
    samples::record(SampleCause::ForkAfter, b"");
}

extern "C" fn after_fork_in_child() {
    if !state::active() {
        numbers::restart_in_fork_child(crate::sys::gettid());
        return;
    }
    let reserved = take_fork_child_dir();
    // Still the parent's log: the line the parent's fork wrapper writes
    // when interposing, with the child's pid.
    log::write("fork", |line| {
        line.u64("pid", crate::sys::getpid() as u64);
        line.str(
            "child_expt",
            reserved
                .as_deref()
                .map(state::founder_relative)
                .unwrap_or_default()
                .as_bytes(),
        );
    });
    state::after_fork_in_child(reserved);
}
