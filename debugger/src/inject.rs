//! Loading a shared library into a stopped process (the collector, for
//! `collector enable` on a process started without it): an injected call
//! of the target's own `dlopen`, found through the symbols of the target's
//! libc at its load address.
//!
//! Which function loads a library depends on the target's glibc:
//! - 2.34 and later export `dlopen` and `dlerror` from libc.so.6;
//! - older ones have them in libdl.so.2, present only if the program
//!   linked it; otherwise libc's private `__libc_dlopen_mode` does the job
//!   (its mode needs `__RTLD_DLOPEN`, and there is no dlerror to ask).
//!
//! What can go wrong, and what is done about it:
//! - a thread stopped while holding the loader's or malloc's lock makes
//!   dlopen wait forever: `injection_hazards` looks for threads stopped
//!   inside the dynamic loader or the allocator first (cheap, catches the
//!   common case); the injected call's timeout (the call module's) catches
//!   the rest, and the call is then abandoned with the registers restored;
//! - a seccomp filter may kill the process at one of dlopen's system calls
//!   (open, mmap, mprotect) or the collector's (perf_event_open, clone):
//!   refused unless the caller says it accepts the risk;
//! - a process in another mount namespace (a container) does not see our
//!   files: the library is copied into its /tmp through /proc/PID/root.
//!
//! Breakpoint sites are lifted during the call: the loader's own
//! `_dl_debug_state` breakpoint (and any user breakpoint in code dlopen
//! runs, e.g. a library constructor) would otherwise stop the call.

use crate::engine::Debugger;
use crate::objects::LoadedObject;
use crate::ptrace::Tid;
use crate::{call::CallArg, Error, Result};
use std::path::{Path, PathBuf};

const RTLD_NOW: u64 = 2;
/// glibc's internal flag marking a dlopen made for a caller outside the
/// loader; `__libc_dlopen_mode` expects it.
const RTLD_DLOPEN: u64 = 0x8000_0000;
/// Longest dlerror() text read back.
const DLERROR_LIMIT: usize = 4096;

/// The target's functions for loading a library.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoaderFunctions {
    /// `dlopen` or `__libc_dlopen_mode`.
    pub dlopen: u64,
    /// Mode argument for `dlopen` (RTLD_NOW, plus __RTLD_DLOPEN for the
    /// private entry point).
    pub mode: u64,
    pub dlerror: Option<u64>,
    /// Which function and object, e.g. `dlopen in libc.so.6`.
    pub description: String,
}

/// A library loaded into the target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadedLibrary {
    /// The path the target opened (inside its mount namespace).
    pub target_path: PathBuf,
    /// The handle dlopen returned.
    pub handle: u64,
}

/// Whether loading may go on despite a seccomp filter.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct InjectOptions {
    /// Load even though the process has a seccomp filter (mode 2), which
    /// may kill it at a system call dlopen or the library makes.
    pub allow_seccomp_filter: bool,
}

/// Functions a thread may be stopped in while holding the allocator's
/// lock (a dlopen in the same process would then wait for it forever).
const ALLOCATOR_FUNCTIONS: &[&str] = &[
    "malloc",
    "free",
    "calloc",
    "realloc",
    "reallocarray",
    "memalign",
    "posix_memalign",
    "aligned_alloc",
    "valloc",
    "pvalloc",
    "malloc_trim",
    "malloc_consolidate",
    "_int_malloc",
    "_int_free",
    "_int_realloc",
    "_int_memalign",
    "sysmalloc",
    "systrim",
    "__libc_malloc",
    "__libc_free",
    "__libc_calloc",
    "__libc_realloc",
    "__libc_memalign",
    "tcache_init",
    "arena_get2",
];

impl Debugger {
    /// The target's dlopen (see the module comment for the choices).
    pub fn loader_functions(&self) -> Result<LoaderFunctions> {
        let libc = self.object_named(&["libc.so", "libc-"]);
        let libdl = self.object_named(&["libdl.so", "libdl-"]);
        for object in [libc, libdl].into_iter().flatten() {
            if let Some(dlopen) = function_in(object, "dlopen") {
                return Ok(LoaderFunctions {
                    dlopen,
                    mode: RTLD_NOW,
                    dlerror: function_in(object, "dlerror"),
                    description: format!("dlopen in {}", object.short_name()),
                });
            }
        }
        if let Some(object) = libc {
            if let Some(dlopen) = function_in(object, "__libc_dlopen_mode") {
                return Ok(LoaderFunctions {
                    dlopen,
                    mode: RTLD_NOW | RTLD_DLOPEN,
                    dlerror: None,
                    description: format!("__libc_dlopen_mode in {}", object.short_name()),
                });
            }
        }
        Err(Error::Other(match libc {
            Some(object) => format!(
                "no dlopen in {} (nor libdl.so.2) to load a library with",
                object.path.display()
            ),
            None => {
                "the process has no libc (statically linked?): no dlopen to load a library with"
                    .into()
            }
        }))
    }

    /// Why an injected dlopen could hang or kill the process now, if it
    /// could: one line meant for the user, or None.
    pub fn injection_hazards(&self, options: InjectOptions) -> Result<Option<String>> {
        let process = self.process()?;
        let pid = process.pid();
        match seccomp_mode(pid) {
            Some(1) => {
                return Ok(Some(format!(
                    "process {pid} runs in strict seccomp mode: any system call but read, write and exit kills it"
                )))
            }
            Some(2) if !options.allow_seccomp_filter => {
                return Ok(Some(format!(
                    "process {pid} has a seccomp filter: a system call made while loading the library may kill it (set RDBX_INJECT_SECCOMP=1 to try anyway)"
                )))
            }
            _ => {}
        }
        for thread in process.threads() {
            let tid = thread.tid();
            let Ok(pc) = process.pc(tid) else { continue };
            if let Some(reason) = self.lock_holder_at(pc) {
                return Ok(Some(format!(
                    "thread {} (tid {tid}) is stopped {reason}; loading a library now could deadlock: continue and try again at another stop",
                    thread.number()
                )));
            }
        }
        Ok(None)
    }

    /// "inside the dynamic loader" / "in malloc", when a thread stopped at
    /// `pc` may hold a lock dlopen needs.
    fn lock_holder_at(&self, pc: u64) -> Option<String> {
        let object = self.objects.object_at(pc)?;
        let name = object.short_name();
        if name.starts_with("ld-linux") || name.starts_with("ld.so") || name.starts_with("ld-") {
            return Some(format!("inside the dynamic loader ({name})"));
        }
        if !(name.starts_with("libc.so") || name.starts_with("libc-")) {
            return None;
        }
        let function = self.objects.symbolize(pc).function?;
        ALLOCATOR_FUNCTIONS
            .contains(&function.as_str())
            .then(|| format!("in {function} ({name})"))
    }

    /// The path under which process `pid` sees our file `path`: the same
    /// path when it sees the same file there, else a copy made in its
    /// /tmp (a container). An error if neither works.
    pub fn path_in_target(&self, path: &Path) -> Result<PathBuf> {
        let pid = self.process()?.pid();
        if sees_same_file(pid, path) {
            return Ok(path.to_path_buf());
        }
        let bytes = std::fs::read(path).map_err(|source| Error::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "library.so".into());
        let inside = PathBuf::from(format!("/tmp/.rdbx-{}-{name}", std::process::id()));
        let relative = inside.strip_prefix("/").unwrap_or(&inside);
        let through_root = PathBuf::from(format!("/proc/{pid}/root")).join(relative);
        std::fs::write(&through_root, bytes).map_err(|e| {
            Error::Other(format!(
                "{} is not visible inside process {pid}'s mount namespace, and cannot be copied to its /tmp: {e}",
                path.display()
            ))
        })?;
        Ok(inside)
    }

    /// Loads the library at `path` (our path; see `path_in_target`) into
    /// the process with an injected call of its dlopen on thread `tid`,
    /// then refreshes the load objects. The other threads stay stopped.
    ///
    /// The call can hang if a thread holds the loader or malloc lock:
    /// check `injection_hazards` first; the injected call's own timeout is
    /// the backstop (it abandons the call and restores the thread).
    pub fn load_library(
        &mut self,
        tid: Tid,
        path: &Path,
        options: InjectOptions,
    ) -> Result<LoadedLibrary> {
        let pid = self.process()?.pid();
        let fail = |why: String| {
            Error::Other(format!(
                "cannot load {} into process {pid}: {why}",
                path.display()
            ))
        };
        if let Some(hazard) = self.injection_hazards(options)? {
            return Err(fail(hazard));
        }
        let functions = self.loader_functions().map_err(|e| fail(e.to_string()))?;
        let target_path = self.path_in_target(path).map_err(|e| fail(e.to_string()))?;
        let name = target_path.as_os_str().as_encoded_bytes().to_vec();
        let args = [CallArg::CString(name), CallArg::Integer(functions.mode)];
        let handle = self
            .with_breakpoints_lifted(|dbg| dbg.call_function_with(tid, functions.dlopen, &args))
            .map_err(|e| match e {
                // A thread stopped inside the loader or malloc holds a lock
                // dlopen needs: it waits for a thread that cannot run.
                Error::CallTimedOut(why) => fail(format!(
                    "{why}; another thread probably holds the loader or malloc lock \
                     (continue a little and try again)"
                )),
                e => fail(format!("{} failed: {e}", functions.description)),
            })?;
        if handle == 0 {
            let why = match functions.dlerror {
                Some(dlerror) => self.dlerror_text(tid, dlerror),
                None => format!("{} returned NULL", functions.description),
            };
            return Err(fail(why));
        }
        self.objects.refresh(pid)?;
        self.objects_changed();
        Ok(LoadedLibrary {
            target_path,
            handle,
        })
    }

    /// The address of function `name` defined in the object loaded from
    /// `target_path` (e.g. the loaded library's entry points).
    pub fn function_in_library(&self, target_path: &Path, name: &str) -> Option<u64> {
        let file_name = target_path.file_name()?;
        self.objects
            .list
            .iter()
            .filter(|o| o.path == target_path || o.path.file_name() == Some(file_name))
            .find_map(|o| function_in(o, name))
    }

    fn dlerror_text(&mut self, tid: Tid, dlerror: u64) -> String {
        let text = self
            .call_function_with(tid, dlerror, &[])
            .and_then(|address| {
                if address == 0 {
                    return Ok(b"dlopen returned NULL (no dlerror text)".to_vec());
                }
                self.process()?
                    .memory()
                    .read_c_string(address, DLERROR_LIMIT)
            });
        match text {
            Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            Err(e) => format!("dlopen returned NULL (dlerror: {e})"),
        }
    }

    /// Runs `f` with the original bytes back under every breakpoint site,
    /// and the int3s back afterwards.
    fn with_breakpoints_lifted<T>(&mut self, f: impl FnOnce(&mut Debugger) -> T) -> T {
        if let Some(process) = &self.process {
            self.breakpoints.write_originals(process.memory());
        }
        let result = f(self);
        if let Some(process) = &self.process {
            self.breakpoints.write_traps(process.memory());
        }
        result
    }

    fn object_named(&self, prefixes: &[&str]) -> Option<&LoadedObject> {
        self.objects.list.iter().find(|o| {
            let name = o.short_name();
            prefixes.iter().any(|p| name.starts_with(p))
        })
    }
}

/// The runtime address of function `name` exported by `object`: its
/// dynamic symbol table first (what dlsym would find; a full symbol table
/// names versioned definitions `dlopen@@GLIBC_2.34`), then the symbols
/// the debugger knows.
fn function_in(object: &LoadedObject, name: &str) -> Option<u64> {
    exported_function(object.file.elf_bytes(), name)
        .or_else(|| {
            object
                .file
                .lookup_symbol(name)
                .into_iter()
                .find(|s| s.is_function && s.address != 0)
                .map(|s| s.address)
        })
        .map(|address| object.runtime_address(address))
}

/// The file address of the defined function `name` in the ELF's .dynsym.
fn exported_function(elf: &[u8], name: &str) -> Option<u64> {
    use object::{Object, ObjectSymbol, SymbolKind};
    let file = object::File::parse(elf).ok()?;
    file.dynamic_symbols()
        .find(|s| {
            s.kind() == SymbolKind::Text
                && !s.is_undefined()
                && s.address() != 0
                && s.name_bytes().is_ok_and(|n| n == name.as_bytes())
        })
        .map(|s| s.address())
}

/// The `Seccomp:` field of /proc/PID/status (0 none, 1 strict, 2 filter).
pub fn seccomp_mode(pid: i32) -> Option<u32> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("Seccomp:"))
        .and_then(|value| value.trim().parse().ok())
}

/// Whether process `pid` finds the same file as we do at `path`.
pub fn sees_same_file(pid: i32, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let relative = path.strip_prefix("/").unwrap_or(path);
    let theirs = PathBuf::from(format!("/proc/{pid}/root")).join(relative);
    match (std::fs::metadata(theirs), std::fs::metadata(path)) {
        (Ok(theirs), Ok(ours)) => theirs.dev() == ours.dev() && theirs.ino() == ours.ino(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seccomp_mode_of_this_process_is_read() {
        // The test runner normally has no filter; either way it is a number.
        assert!(seccomp_mode(std::process::id() as i32).is_some_and(|m| m <= 2));
        assert_eq!(seccomp_mode(-1), None);
    }

    #[test]
    fn we_see_our_own_files() {
        let pid = std::process::id() as i32;
        assert!(sees_same_file(
            pid,
            Path::new("/proc/self/exe")
                .canonicalize()
                .as_deref()
                .unwrap_or(Path::new("/"))
        ));
        assert!(!sees_same_file(pid, Path::new("/no/such/file")));
    }
}
