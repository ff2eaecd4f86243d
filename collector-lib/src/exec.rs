//! The exec family, interposed (and, in a process the collector was loaded
//! into while running, its GOT entries redirected, see got.rs) so that the
//! calling thread's perf events that count in kernel mode are stopped
//! before the image is replaced, and started again when the exec fails.
//!
//! Why: such an event (a counter counted in kernel mode, the off-CPU
//! context-switch event) can overflow inside execve before the kernel
//! removes it from the old image (remove_on_exec): a page fault while the
//! kernel copies an argument from a page the program never touched, a
//! switch off the CPU while the new program is read. Its SIGTRAP is then
//! sent when the thread first returns to user mode, in the new image,
//! whose SIGTRAP is back to the default action: the new program dies
//! before its first instruction. Seen with a context-switch event at
//! interval 1 in about 2% of execs on a loaded machine, and every time
//! with a page-fault event and an argument in an untouched file page.
//!
//! The other threads' events need nothing: execve kills those threads,
//! and the kernel sends no perf signal to an exiting thread. A vfork or
//! posix_spawn child has no events of its own (they are not inherited).
//!
//! execl, execle and execlp are variadic, which stable Rust cannot define:
//! a few instructions (below) pass the list to [`exec_list`], which builds
//! the argument array (on the stack, or in an anonymous mapping when long)
//! and calls the hooks of execve and execvp, as glibc's own execl does.
//!
//! Everything here is async-signal-safe (exec is, and is called in fork
//! children of threaded programs): no allocation, no lock.

use crate::{lifecycle, real, sys, threads};
use std::ffi::{c_char, c_int};

type Argv = *const *const c_char;

/// Stops the calling thread's kernel-counting perf events; what to start
/// again if the exec fails.
struct Stopped {
    slot: &'static threads::Slot,
    offcpu: bool,
}

fn stop_events() -> Option<Stopped> {
    let slot = threads::find(sys::gettid())?;
    slot.counters().set_enabled(false);
    let offcpu = slot.offcpu.is_armed();
    if offcpu {
        slot.offcpu.disarm();
    }
    Some(Stopped { slot, offcpu })
}

/// The exec failed (it returned): the events go on, errno kept.
fn restart_events(stopped: Option<Stopped>) {
    let Some(Stopped { slot, offcpu }) = stopped else {
        return;
    };
    let saved = sys::errno();
    slot.counters().set_enabled(true);
    if offcpu && lifecycle::offcpu_traced() {
        slot.offcpu.arm(slot.tid(), sys::thread_cpu_ns());
    }
    sys::set_errno(saved);
}

/// Runs an exec with the thread's events stopped around it.
fn guarded(exec: impl FnOnce() -> c_int) -> c_int {
    let stopped = stop_events();
    let rc = exec();
    restart_events(stopped);
    rc
}

fn enosys() -> c_int {
    sys::set_errno(libc::ENOSYS);
    -1
}

#[inline(never)]
unsafe extern "C" fn hook_execve(path: *const c_char, argv: Argv, envp: Argv) -> c_int {
    type F = unsafe extern "C" fn(*const c_char, Argv, Argv) -> c_int;
    guarded(|| call_real!(real::EXECVE, F, enosys(); path, argv, envp))
}

#[inline(never)]
unsafe extern "C" fn hook_execv(path: *const c_char, argv: Argv) -> c_int {
    type F = unsafe extern "C" fn(*const c_char, Argv) -> c_int;
    guarded(|| call_real!(real::EXECV, F, enosys(); path, argv))
}

#[inline(never)]
unsafe extern "C" fn hook_execvp(file: *const c_char, argv: Argv) -> c_int {
    type F = unsafe extern "C" fn(*const c_char, Argv) -> c_int;
    guarded(|| call_real!(real::EXECVP, F, enosys(); file, argv))
}

#[inline(never)]
unsafe extern "C" fn hook_execvpe(file: *const c_char, argv: Argv, envp: Argv) -> c_int {
    type F = unsafe extern "C" fn(*const c_char, Argv, Argv) -> c_int;
    guarded(|| call_real!(real::EXECVPE, F, enosys(); file, argv, envp))
}

#[inline(never)]
unsafe extern "C" fn hook_fexecve(fd: c_int, argv: Argv, envp: Argv) -> c_int {
    type F = unsafe extern "C" fn(c_int, Argv, Argv) -> c_int;
    guarded(|| call_real!(real::FEXECVE, F, enosys(); fd, argv, envp))
}

#[inline(never)]
unsafe extern "C" fn hook_execveat(
    dir: c_int,
    path: *const c_char,
    argv: Argv,
    envp: Argv,
    flags: c_int,
) -> c_int {
    type F = unsafe extern "C" fn(c_int, *const c_char, Argv, Argv, c_int) -> c_int;
    guarded(|| call_real!(real::EXECVEAT, F, enosys(); dir, path, argv, envp, flags))
}

interposed! {
    execve(path: *const c_char, argv: Argv, envp: Argv) -> c_int = hook_execve, Some(&real::EXECVE);
    execv(path: *const c_char, argv: Argv) -> c_int = hook_execv, Some(&real::EXECV);
    execvp(file: *const c_char, argv: Argv) -> c_int = hook_execvp, Some(&real::EXECVP);
    execvpe(file: *const c_char, argv: Argv, envp: Argv) -> c_int =
        hook_execvpe, Some(&real::EXECVPE);
    fexecve(fd: c_int, argv: Argv, envp: Argv) -> c_int = hook_fexecve, Some(&real::FEXECVE);
    execveat(dir: c_int, path: *const c_char, argv: Argv, envp: Argv, flags: c_int) -> c_int =
        hook_execveat, Some(&real::EXECVEAT);
}

/// The GOT targets: the fixed-argument functions' hooks and the variadic
/// ones' local entry points.
pub(crate) fn exec_targets() -> Vec<crate::got::Target> {
    let mut targets = got_targets();
    targets.extend([
        (c"execl", execl_entry as *const () as usize, None),
        (c"execle", execle_entry as *const () as usize, None),
        (c"execlp", execlp_entry as *const () as usize, None),
    ]);
    targets
}

// ---- the variadic ones ------------------------------------------------

const EXECL: c_int = 0;
const EXECLE: c_int = 1;
const EXECLP: c_int = 2;

// Each entry saves the five list words that came in registers (rsi, rdx,
// rcx, r8, r9) next to each other, and calls exec_list(kind, path, those
// five, the words the caller passed on the stack). On entry rsp is 8 mod
// 16; 56 bytes more make the call aligned. The exported name jumps to a
// local entry, whose address is the GOT target (taken here, the exported
// name's would be the first definition's: libc's, when attached).
macro_rules! variadic_entry {
    ($name:ident, $entry:ident, $kind:expr) => {
        #[unsafe(naked)]
        unsafe extern "C" fn $entry() {
            std::arch::naked_asm!(
                ".cfi_startproc",
                "sub rsp, 56",
                ".cfi_adjust_cfa_offset 56",
                "mov [rsp], rsi",
                "mov [rsp + 8], rdx",
                "mov [rsp + 16], rcx",
                "mov [rsp + 24], r8",
                "mov [rsp + 32], r9",
                "mov rsi, rdi",
                "mov edi, {kind}",
                "mov rdx, rsp",
                "lea rcx, [rsp + 64]",
                "call {exec_list}",
                "add rsp, 56",
                ".cfi_adjust_cfa_offset -56",
                "ret",
                ".cfi_endproc",
                kind = const $kind,
                exec_list = sym exec_list,
            );
        }

        /// # Safety
        /// libc's contract of the function of this name (variadic: the
        /// arguments are the list, not this signature's).
        #[unsafe(naked)]
        #[no_mangle]
        pub unsafe extern "C" fn $name() {
            std::arch::naked_asm!("jmp {entry}", entry = sym $entry);
        }
    };
}

variadic_entry!(execl, execl_entry, EXECL);
variadic_entry!(execle, execle_entry, EXECLE);
variadic_entry!(execlp, execlp_entry, EXECLP);

/// The list of an execl-style call: five words from registers, then the
/// caller's stack.
struct List {
    registers: *const *const c_char,
    stack: *const *const c_char,
}

impl List {
    /// Word `index` of the list.
    ///
    /// # Safety
    /// The list has at least `index + 1` words (the caller's contract: the
    /// terminating NULL, and execle's envp after it, are in it).
    unsafe fn word(&self, index: usize) -> *const c_char {
        if index < 5 {
            *self.registers.add(index)
        } else {
            *self.stack.add(index - 5)
        }
    }
}

/// Arguments a list may hold: as the kernel's limit on argv pointers.
const MAX_ARGS: usize = 0x7fff_ffff / 8;
/// Lists up to this long get their array on the stack.
const SHORT: usize = 256;

extern "C" {
    static mut environ: *mut *mut c_char;
}

/// execl (kind 0), execle (1) or execlp (2) with the list given.
unsafe extern "C" fn exec_list(
    kind: c_int,
    path: *const c_char,
    registers: *const *const c_char,
    stack: *const *const c_char,
) -> c_int {
    let list = List { registers, stack };
    let mut count = 0;
    while !list.word(count).is_null() {
        count += 1;
        if count >= MAX_ARGS {
            sys::set_errno(libc::E2BIG);
            return -1;
        }
    }
    let envp = match kind {
        EXECLE => list.word(count + 1) as Argv,
        _ => *std::ptr::addr_of!(environ) as Argv,
    };
    let exec = |argv: Argv| match kind {
        EXECLP => hook_execvp(path, argv),
        _ => hook_execve(path, argv, envp),
    };
    if count < SHORT {
        let mut argv = [std::ptr::null::<c_char>(); SHORT];
        for (index, slot) in argv.iter_mut().enumerate().take(count) {
            *slot = list.word(index);
        }
        return exec(argv.as_ptr());
    }
    let bytes = (count + 1) * std::mem::size_of::<*const c_char>();
    let array = sys::mmap_raw(
        bytes,
        libc::PROT_READ | libc::PROT_WRITE,
        libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
        -1,
        0,
    );
    if array == libc::MAP_FAILED.cast() {
        sys::set_errno(libc::ENOMEM);
        return -1;
    }
    let argv = array.cast::<*const c_char>();
    for index in 0..count {
        *argv.add(index) = list.word(index);
    }
    *argv.add(count) = std::ptr::null();
    let rc = exec(argv);
    let saved = sys::errno();
    // A raw munmap: with heap tracing on, libc's would be ours.
    libc::syscall(libc::SYS_munmap, array, bytes);
    sys::set_errno(saved);
    rc
}

// ---- a process the collector was loaded into ---------------------------

/// Redirects the exec family's GOT entries (attached: nothing of ours is
/// interposed) while an experiment has kernel-counting events. Ordinary
/// context.
pub fn start_guarding() {
    if lifecycle::live() {
        crate::got::resolve_reals(crate::got::Set::Exec);
        crate::got::patch_all(crate::got::Set::Exec);
    }
}

pub fn stop_guarding() {
    if lifecycle::live() {
        crate::got::restore_all(crate::got::Set::Exec);
    }
}
