//! `__thread` variables of shared libraries, found from glibc's own data
//! (what gdb asks libthread_db for): the library's TLS module id, from
//! the dynamic linker's list of loaded objects, indexes the thread's
//! dynamic thread vector (dtv), whose entry points at the library's block.
//!
//! glibc numbers the objects that have a PT_TLS segment in link-map order
//! (the executable first), and gives a dlopen'ed object the next id: with
//! no dlclose in between, counting the PT_TLS objects of the list up to
//! the library is its module id. (After a dlclose, glibc reuses freed ids
//! and the count may be wrong; we do not look at its private fields.)

use crate::memory::Memory;
use crate::objects::LoadedObjects;

/// DT_DEBUG: the dynamic linker stores the address of `r_debug` in it.
const DT_DEBUG: u64 = 21;
const DT_NULL: u64 = 0;
/// More entries than any real dynamic section or link map has.
const MAX_ENTRIES: usize = 4096;
/// A dtv entry whose block is not allocated yet (glibc's TLS_DTV_UNALLOCATED).
const DTV_UNALLOCATED: u64 = u64::MAX;

/// The runtime address where the `__thread` block of the loaded object
/// with load bias `bias` starts in the thread whose thread pointer
/// (`fs_base`) is `thread_pointer`; or why it cannot be found, as the
/// value of such a variable shows it.
pub fn library_tls_block(
    memory: &Memory,
    objects: &LoadedObjects,
    bias: u64,
    thread_pointer: u64,
) -> Result<u64, String> {
    let module = tls_module_id(memory, objects, bias)?;
    // tcbhead_t starts at the thread pointer: { void *tcb; dtv_t *dtv; ... }.
    let dtv = read(memory, thread_pointer.wrapping_add(8))?;
    // dtv[-1].counter is how many entries this thread's vector has.
    let entries = read(memory, dtv.wrapping_sub(16))?;
    if module > entries {
        return Err(not_allocated());
    }
    // Each entry is 16 bytes: { void *val; void *to_free; }.
    let block = read(memory, dtv.wrapping_add(16 * module))?;
    if block == DTV_UNALLOCATED || block == 0 {
        return Err(not_allocated());
    }
    Ok(block)
}

fn not_allocated() -> String {
    "thread-local storage not allocated in this thread yet".into()
}

/// The TLS module id of the object with load bias `bias`: its place among
/// the objects with a PT_TLS segment in the dynamic linker's link map.
fn tls_module_id(memory: &Memory, objects: &LoadedObjects, bias: u64) -> Result<u64, String> {
    let target = objects
        .list
        .iter()
        .find(|o| o.bias == bias && o.file.tls_segment().is_some())
        .and_then(|o| Some(o.file.dynamic_address()?.wrapping_add(o.bias)))
        .ok_or_else(|| "thread-local storage of an unknown object".to_string())?;
    let mut module = 0;
    let mut entry = first_link_map(memory, objects)?;
    for _ in 0..MAX_ENTRIES {
        if entry == 0 {
            break;
        }
        // struct link_map { l_addr; char *l_name; ElfW(Dyn) *l_ld; l_next; l_prev; ... }
        let l_ld = read(memory, entry.wrapping_add(16))?;
        let loaded = objects.list.iter().find(|o| {
            o.file
                .dynamic_address()
                .is_some_and(|d| d.wrapping_add(o.bias) == l_ld)
        });
        let has_tls = match loaded {
            Some(object) => object.file.tls_segment().is_some(),
            None if is_vdso(memory, entry) => false,
            None => {
                return Err("thread-local storage: a library the debugger has not loaded".into())
            }
        };
        if has_tls {
            module += 1;
        }
        if l_ld == target {
            return Ok(module);
        }
        entry = read(memory, entry.wrapping_add(24))?;
    }
    Err("thread-local storage of a library not in the dynamic linker's list".into())
}

/// The head of the link map: `r_debug.r_map`, where `r_debug` is what the
/// executable's DT_DEBUG entry points at once the dynamic linker ran.
fn first_link_map(memory: &Memory, objects: &LoadedObjects) -> Result<u64, String> {
    let no_list = || "thread-local storage: no dynamic linker list".to_string();
    let main = objects
        .list
        .iter()
        .find(|o| o.file.is_executable())
        .ok_or_else(no_list)?;
    let dynamic = main
        .file
        .dynamic_address()
        .ok_or_else(no_list)?
        .wrapping_add(main.bias);
    for i in 0..MAX_ENTRIES as u64 {
        let at = dynamic.wrapping_add(16 * i);
        match read(memory, at)? {
            DT_NULL => break,
            DT_DEBUG => {
                let r_debug = read(memory, at.wrapping_add(8))?;
                if r_debug == 0 {
                    return Err(no_list());
                }
                // struct r_debug { int r_version; struct link_map *r_map; ... }
                return read(memory, r_debug.wrapping_add(8));
            }
            _ => {}
        }
    }
    Err(no_list())
}

/// The kernel's vDSO, in the link map but not a file we load (and it has
/// no `__thread` variables).
fn is_vdso(memory: &Memory, entry: u64) -> bool {
    let Ok(name) = read(memory, entry.wrapping_add(8)) else {
        return false;
    };
    let mut prefix = [0u8; 10];
    memory.read(name, &mut prefix).is_ok() && (&prefix == b"linux-vdso" || &prefix == b"linux-gate")
}

fn read(memory: &Memory, addr: u64) -> Result<u64, String> {
    memory
        .read_u64(addr)
        .map_err(|_| format!("thread-local storage: cannot read 0x{addr:x}"))
}
