//! Heap, sync and I/O tracing in a process the collector was loaded into
//! while running (an injected dlopen: nothing of ours is interposed). Every
//! loaded object calls the malloc family (and the pthread wait family, and
//! the file I/O functions) through its own GOT entries (PLT jump slots and GLOB_DAT for
//! address-taken uses); pointing those entries at the collector's hooks
//! makes the program's calls ours from the next call on. Each set of
//! functions is patched and restored on its own: heap, sync and I/O
//! tracing are turned on and off independently. The original entries are kept and written back when tracing
//! stops. heaptrack does this with gdb's help; the collector does it
//! from inside.
//!
//! The hooks forward to the definitions the program itself would call
//! (`dlsym(RTLD_DEFAULT)`, found before any entry is changed): libc's, or
//! a preloaded allocator's. Blocks allocated before are unknown to the
//! experiment; their frees are counted as such.
//!
//! Ordinary context only (mprotect, dl_iterate_phdr, the loader's lock).

use crate::real::Real;
use crate::{heap, io, lifecycle, log, mpi, sync};
use std::ffi::{c_int, c_void, CStr};
use std::sync::Mutex;

/// What an entry is redirected to: the function's name, the hook, and
/// where the real function's address goes (None: made by system calls).
pub(crate) type Target = (&'static CStr, usize, Option<&'static Real>);

/// Each interposed function once, for both ways the collector comes in:
/// the exported definition (a preloaded collector's comes first, so the
/// program's calls reach it) and its GOT target (an attached collector
/// redirects the entries to the hook: the address of the exported
/// definition taken inside the library would be the first definition's,
/// libc's). Defines the exported functions and `got_targets()`.
///
/// Each hook must be `#[inline(never)]`: inlined into its exported
/// wrapper, the two would have the same code and the compiler would make
/// the hook an alias of the exported function, whose address, taken in
/// the library, is then libc's: the GOT entries would be "redirected" to
/// libc and nothing traced.
macro_rules! interposed {
    ($( $name:ident ( $($arg:ident : $ty:ty),* ) $(-> $ret:ty)? = $hook:ident, $real:expr; )*) => {
        $(
            /// # Safety
            /// libc's contract of the function of this name.
            #[no_mangle]
            pub unsafe extern "C" fn $name($($arg: $ty),*) $(-> $ret)? {
                $hook($($arg),*)
            }
        )*

        /// The hooks by the names of the GOT entries they replace (got.rs).
        pub(crate) fn got_targets() -> Vec<crate::got::Target> {
            vec![$((
                const {
                    match std::ffi::CStr::from_bytes_with_nul(
                        concat!(stringify!($name), "\0").as_bytes(),
                    ) {
                        Ok(name) => name,
                        Err(_) => panic!("a function name has no NUL"),
                    }
                },
                $hook as *const () as usize,
                $real,
            )),*]
        }
    };
}

const R_X86_64_GLOB_DAT: u32 = 6;
const R_X86_64_JUMP_SLOT: u32 = 7;

/// A set of functions patched together.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Set {
    Heap,
    Sync,
    Io,
    /// The exec family (exec.rs), while perf events count in kernel mode.
    Exec,
    /// The MPI functions (mpi.rs).
    Mpi,
}

impl Set {
    const ALL: [Set; 5] = [Set::Heap, Set::Sync, Set::Io, Set::Exec, Set::Mpi];

    /// Whether the set's entries are redirected now (its tracing set up).
    fn traced(self) -> bool {
        match self {
            Set::Heap => lifecycle::heap_traced(),
            Set::Sync => lifecycle::sync_traced(),
            Set::Io => lifecycle::io_traced(),
            Set::Exec => lifecycle::counters_traced() || lifecycle::offcpu_traced(),
            Set::Mpi => lifecycle::mpi_traced(),
        }
    }
}

fn targets(set: Set) -> Vec<Target> {
    match set {
        Set::Heap => heap::got_targets(),
        Set::Sync => sync::got_targets(),
        Set::Io => io::got_targets(),
        Set::Exec => crate::exec::exec_targets(),
        Set::Mpi => mpi::got_targets(),
    }
}

/// One redirected entry: where it is and what it held.
#[derive(Clone, Copy, Debug)]
struct Patched {
    slot: usize,
    original: usize,
    relro: Option<(usize, usize)>,
}

/// The entries changed, to put back; objects already patched, by base.
struct Patches {
    entries: Vec<Patched>,
    objects: Vec<usize>,
}

static PATCHES: [Mutex<Patches>; Set::ALL.len()] = [const {
    Mutex::new(Patches {
        entries: Vec::new(),
        objects: Vec::new(),
    })
}; Set::ALL.len()];

fn patches(set: Set) -> std::sync::MutexGuard<'static, Patches> {
    PATCHES[set as usize]
        .lock()
        .unwrap_or_else(|e| e.into_inner())
}

/// Redirects the GOT entries of `set`'s functions of every loaded object
/// (but the collector's and the loader's) to the hooks. Returns how many.
pub fn patch_all(set: Set) -> usize {
    let own = own_base();
    let targets = targets(set);
    let mut patches = patches(set);
    let mut objects = Vec::new();
    for_each_object(|object| objects.push(object));
    let mut count = 0;
    for object in objects {
        if object.base == own || patches.objects.contains(&object.base) || object.is_loader {
            continue;
        }
        patches.objects.push(object.base);
        count += patch_object(&object, &targets, &mut patches.entries);
    }
    count
}

/// Objects loaded since tracing started get the entries of every set
/// traced now redirected too (the watcher of a live process calls this).
pub fn follow_new_objects() {
    if !lifecycle::live() {
        return;
    }
    for set in Set::ALL.into_iter().filter(|set| set.traced()) {
        patch_all(set);
    }
}

/// Puts every changed entry of `set` back.
pub fn restore_all(set: Set) {
    let mut patches = patches(set);
    for patched in patches.entries.drain(..) {
        write_guarded(patched.slot, patched.original, patched.relro);
    }
    patches.objects.clear();
}

/// The real functions are what the program's calls reach now (before any
/// entry is redirected).
pub fn resolve_reals(set: Set) {
    for (name, hook, real) in targets(set) {
        let Some(real) = real else { continue };
        // SAFETY: NUL-terminated name; RTLD_DEFAULT is the program's scope.
        let found = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) } as usize;
        if found != 0 && found != hook {
            real.set(found);
        }
    }
}

/// One loaded object as dl_iterate_phdr describes it.
struct Object {
    base: usize,
    dynamic: usize,
    relro: Option<(usize, usize)>,
    is_loader: bool,
}

fn for_each_object(mut each: impl FnMut(Object)) {
    extern "C" fn visit(info: *mut libc::dl_phdr_info, _size: usize, data: *mut c_void) -> c_int {
        // SAFETY: dl_iterate_phdr passes valid info; data is our closure.
        let (info, each) = unsafe { (&*info, &mut *data.cast::<&mut dyn FnMut(Object)>()) };
        let base = info.dlpi_addr as usize;
        let mut dynamic = 0;
        let mut relro = None;
        for i in 0..usize::from(info.dlpi_phnum) {
            // SAFETY: dlpi_phdr has dlpi_phnum entries.
            let phdr = unsafe { &*info.dlpi_phdr.add(i) };
            let start = base + phdr.p_vaddr as usize;
            match phdr.p_type {
                libc::PT_DYNAMIC => dynamic = start,
                libc::PT_GNU_RELRO => relro = Some((start, start + phdr.p_memsz as usize)),
                _ => {}
            }
        }
        let name = if info.dlpi_name.is_null() {
            &[][..]
        } else {
            // SAFETY: the loader's NUL-terminated name.
            unsafe { CStr::from_ptr(info.dlpi_name) }.to_bytes()
        };
        let is_loader = name.windows(7).any(|w| w == b"ld-linu");
        if dynamic != 0 {
            each(Object {
                base,
                dynamic,
                relro,
                is_loader,
            });
        }
        0
    }
    let mut callback: &mut dyn FnMut(Object) = &mut each;
    // SAFETY: the callback only reads what it is given.
    unsafe {
        libc::dl_iterate_phdr(
            Some(visit),
            (&mut callback as *mut &mut dyn FnMut(Object)).cast(),
        )
    };
}

/// The base of libcollector.so.
fn own_base() -> usize {
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: dladdr reads an address of ours.
    if unsafe { libc::dladdr(own_base as *const c_void, &mut info) } == 0 {
        return 0;
    }
    info.dli_fbase as usize
}

/// An entry of the dynamic section (Elf64_Dyn; the libc crate has none).
#[repr(C)]
struct DynamicEntry {
    tag: i64,
    value: u64,
}

/// What the dynamic section says about relocations and symbols.
#[derive(Default)]
struct Dynamic {
    symtab: usize,
    strtab: usize,
    tables: [(usize, usize); 2],
}

fn read_dynamic(object: &Object) -> Dynamic {
    let mut out = Dynamic::default();
    let (mut jmprel, mut pltrelsz, mut rela, mut relasz) = (0, 0, 0, 0);
    // The loader has made the pointers absolute on x86-64; one that is
    // still below the base is an offset.
    let absolute = |value: usize| {
        if value < object.base {
            value + object.base
        } else {
            value
        }
    };
    let mut at = object.dynamic as *const DynamicEntry;
    for _ in 0..4096 {
        // SAFETY: the dynamic section is mapped and ends with DT_NULL.
        let entry = unsafe { &*at };
        let value = entry.value as usize;
        match entry.tag as u64 {
            0 => break,
            5 => out.strtab = absolute(value), // DT_STRTAB
            6 => out.symtab = absolute(value), // DT_SYMTAB
            7 => rela = absolute(value),       // DT_RELA
            8 => relasz = value,               // DT_RELASZ
            2 => pltrelsz = value,             // DT_PLTRELSZ
            23 => jmprel = absolute(value),    // DT_JMPREL
            _ => {}
        }
        // SAFETY: the next entry (the section ends with DT_NULL).
        at = unsafe { at.add(1) };
    }
    out.tables = [(jmprel, pltrelsz), (rela, relasz)];
    out
}

/// Redirects one object's entries; returns how many.
fn patch_object(object: &Object, targets: &[Target], patched: &mut Vec<Patched>) -> usize {
    let dynamic = read_dynamic(object);
    if dynamic.symtab == 0 || dynamic.strtab == 0 {
        return 0;
    }
    let mut count = 0;
    for (table, size) in dynamic.tables {
        if table == 0 {
            continue;
        }
        let relocations = size / size_of::<libc::Elf64_Rela>();
        for i in 0..relocations {
            // SAFETY: the relocation table is mapped, `size` bytes long.
            let rela = unsafe { &*(table as *const libc::Elf64_Rela).add(i) };
            let kind = (rela.r_info & 0xffff_ffff) as u32;
            if kind != R_X86_64_JUMP_SLOT && kind != R_X86_64_GLOB_DAT {
                continue;
            }
            let symbol = (rela.r_info >> 32) as usize;
            // SAFETY: the symbol table is mapped; `symbol` indexes it.
            let sym = unsafe { &*(dynamic.symtab as *const libc::Elf64_Sym).add(symbol) };
            // SAFETY: the string table is mapped and NUL-terminated.
            let name =
                unsafe { CStr::from_ptr((dynamic.strtab + sym.st_name as usize) as *const _) };
            let Some(&(_, hook, _)) = targets.iter().find(|(n, _, _)| *n == name) else {
                continue;
            };
            let slot = object.base + rela.r_offset as usize;
            // SAFETY: a GOT entry of a loaded object: 8 aligned bytes.
            let original = unsafe { std::ptr::read_volatile(slot as *const usize) };
            if original == hook {
                continue;
            }
            if write_guarded(slot, hook, object.relro) {
                patched.push(Patched {
                    slot,
                    original,
                    relro: object.relro,
                });
                count += 1;
            }
        }
    }
    count
}

/// Writes a GOT entry, making its page writable for the moment when it
/// lies in the read-only-after-relocation part.
fn write_guarded(slot: usize, value: usize, relro: Option<(usize, usize)>) -> bool {
    let in_relro = relro.is_some_and(|(start, end)| (start..end).contains(&slot));
    if !in_relro {
        write_slot(slot, value);
        return true;
    }
    let page = slot & !4095;
    // SAFETY: a page of a loaded object's RELRO segment, made writable
    // for one store and read-only again, as the loader left it.
    unsafe {
        if libc::mprotect(
            page as *mut c_void,
            4096,
            libc::PROT_READ | libc::PROT_WRITE,
        ) != 0
        {
            log::warning(&format!(
                "cannot make the GOT page 0x{page:x} writable: its calls are not traced"
            ));
            return false;
        }
        write_slot(slot, value);
        libc::mprotect(page as *mut c_void, 4096, libc::PROT_READ);
    }
    true
}

fn write_slot(slot: usize, value: usize) {
    // SAFETY: a GOT entry of a loaded object, writable now (see
    // write_guarded): 8 aligned bytes the loader wrote.
    unsafe { std::ptr::write_volatile(slot as *mut usize, value) };
}
