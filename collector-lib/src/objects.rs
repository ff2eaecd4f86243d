//! The load-object map in the log: an `object` line for every object
//! present at start and for each one a dlopen adds, an `unobject` line
//! when dlclose removes one (docs/experiment-format.md). Ordinary
//! context only (dl_iterate_phdr takes the loader's lock), but for
//! `log_inherited`.

use crate::log;
use std::ffi::{c_int, c_void, CStr};
use std::os::unix::ffi::OsStrExt;
use std::sync::Mutex;

#[derive(Debug, Clone, PartialEq, Eq)]
struct Object {
    path: Vec<u8>,
    base: u64,
    lo: u64,
    hi: u64,
}

/// Objects already logged for the current experiment.
static LOGGED: Mutex<Vec<Object>> = Mutex::new(Vec::new());

/// Forgets what was logged (a new experiment starts with a full map).
pub fn reset() {
    if let Some(mut logged) = lock_logged() {
        logged.clear();
    }
}

/// The logged list, or None if it stays locked: in a fork child a lock
/// held by a parent's thread is never released, so we give up rather
/// than deadlock.
fn lock_logged() -> Option<std::sync::MutexGuard<'static, Vec<Object>>> {
    for _ in 0..10_000 {
        match LOGGED.try_lock() {
            Ok(guard) => return Some(guard),
            Err(std::sync::TryLockError::Poisoned(e)) => return Some(e.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) => std::thread::yield_now(),
        }
    }
    None
}

/// In a fork child's new experiment: logs the objects the parent had
/// logged (they are this process's too) without asking the loader, whose
/// lock a vanished parent thread may hold.
pub fn log_inherited() {
    let Some(logged) = lock_logged() else {
        return;
    };
    for object in logged.iter() {
        log::write("object", |line| {
            line.str("path", &object.path);
            line.hex("base", object.base);
            line.hex("lo", object.lo);
            line.hex("hi", object.hi);
        });
    }
}

/// Logs objects not logged yet and `unobject` for those gone.
pub fn log_all_new() {
    let present = current_objects();
    let Some(mut logged) = lock_logged() else {
        return;
    };
    for gone in logged
        .iter()
        .filter(|o| !present.iter().any(|p| same(p, o)))
    {
        log::write("unobject", |line| {
            line.str("path", &gone.path);
            line.hex("base", gone.base);
        });
    }
    logged.retain(|o| present.iter().any(|p| same(p, o)));
    for object in present {
        if logged.iter().any(|o| same(o, &object)) {
            continue;
        }
        log::write("object", |line| {
            line.str("path", &object.path);
            line.hex("base", object.base);
            line.hex("lo", object.lo);
            line.hex("hi", object.hi);
        });
        logged.push(object);
    }
}

fn same(a: &Object, b: &Object) -> bool {
    a.path == b.path && a.base == b.base
}

fn current_objects() -> Vec<Object> {
    let mut objects: Vec<Object> = Vec::new();
    // SAFETY: the callback only reads the dl_phdr_info it is given.
    unsafe {
        libc::dl_iterate_phdr(Some(collect), (&mut objects as *mut Vec<Object>).cast());
    }
    objects
}

unsafe extern "C" fn collect(
    info: *mut libc::dl_phdr_info,
    _size: usize,
    data: *mut c_void,
) -> c_int {
    let objects = &mut *(data as *mut Vec<Object>);
    let info = &*info;
    let name = if info.dlpi_name.is_null() {
        &[][..]
    } else {
        CStr::from_ptr(info.dlpi_name).to_bytes()
    };
    let path = if name.is_empty() {
        // The main program has an empty name.
        std::fs::read_link("/proc/self/exe")
            .map(|p| p.as_os_str().as_bytes().to_vec())
            .unwrap_or_default()
    } else if name.starts_with(b"linux-vdso") || name.starts_with(b"linux-gate") {
        b"[vdso]".to_vec()
    } else {
        name.to_vec()
    };
    let headers = std::slice::from_raw_parts(info.dlpi_phdr, usize::from(info.dlpi_phnum));
    let mut lo = u64::MAX;
    let mut hi = 0u64;
    for header in headers.iter().filter(|h| h.p_type == libc::PT_LOAD) {
        let start = info.dlpi_addr.wrapping_add(header.p_vaddr);
        lo = lo.min(start);
        hi = hi.max(start.wrapping_add(header.p_memsz));
    }
    if lo < hi {
        objects.push(Object {
            path,
            base: info.dlpi_addr,
            lo,
            hi,
        });
    }
    0
}
