//! Test helpers: compile a C program, run it under ptrace to a stop, and
//! expose its memory and objects to the unwinder. Also asks gdb for the
//! backtrace of the same program at the same stop.

use std::collections::HashMap;
use std::os::unix::fs::FileExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use nix::sys::personality::{self, Persona};
use nix::sys::ptrace;
use nix::sys::signal::Signal;
use nix::sys::wait::{waitpid, WaitStatus};
use nix::unistd::Pid;
use object::{Object, ObjectSegment};

use super::{CfiTable, ObjectLookup, UnwindMemory, UnwindRegs};

/// A directory for this test process's file `name`: under the system's
/// temporary directory, in `rdbx-unit-tests/PID-NAME`. The directories of
/// test processes that have ended are removed first, so runs leave at most
/// their own behind.
pub(crate) fn scratch_dir(name: &str) -> PathBuf {
    let root = std::env::temp_dir().join("rdbx-unit-tests");
    static SWEPT: std::sync::Once = std::sync::Once::new();
    SWEPT.call_once(|| {
        let Ok(entries) = std::fs::read_dir(&root) else {
            return;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let pid = name.to_string_lossy();
            let pid = pid.split('-').next().unwrap_or("");
            let ended = pid
                .parse::<u32>()
                .is_ok_and(|pid| !Path::new(&format!("/proc/{pid}")).exists());
            if ended {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
    });
    let dir = root.join(format!("{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Compile `source` with gcc and `flags` into a fresh directory.
pub(crate) fn compile(name: &str, source: &str, flags: &[&str]) -> PathBuf {
    let dir = scratch_dir(name);
    let c_file = dir.join(format!("{name}.c"));
    std::fs::write(&c_file, source).unwrap();
    let binary = dir.join(name);
    let output = Command::new("gcc")
        .args(flags)
        .arg("-o")
        .arg(&binary)
        .arg(&c_file)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "gcc failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    binary
}

/// A child process stopped under ptrace; killed when dropped.
pub(crate) struct Tracee {
    pub(crate) pid: Pid,
    mem: std::fs::File,
}

impl Tracee {
    /// Start `binary` with ASLR off (like gdb) and stop at its exec.
    pub(crate) fn spawn(binary: &Path) -> Tracee {
        let mut command = Command::new(binary);
        unsafe {
            command.pre_exec(|| {
                personality::set(Persona::ADDR_NO_RANDOMIZE).map_err(std::io::Error::from)?;
                ptrace::traceme().map_err(std::io::Error::from)
            });
        }
        // Reaped with waitpid in Drop, not through Child.
        #[allow(clippy::zombie_processes)]
        let child = command.spawn().unwrap();
        let pid = Pid::from_raw(child.id() as i32);
        match waitpid(pid, None).unwrap() {
            WaitStatus::Stopped(_, Signal::SIGTRAP) => {}
            other => panic!("unexpected first stop {other:?}"),
        }
        let mem = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(format!("/proc/{pid}/mem"))
            .unwrap();
        Tracee { pid, mem }
    }

    /// Continue until the program executes `int3`, passing other signals.
    pub(crate) fn run_to_trap(&self) {
        let mut signal = None;
        loop {
            ptrace::cont(self.pid, signal).unwrap();
            match waitpid(self.pid, None).unwrap() {
                WaitStatus::Stopped(_, Signal::SIGTRAP) => return,
                WaitStatus::Stopped(_, other) => signal = Some(other),
                other => panic!("program did not reach its trap: {other:?}"),
            }
        }
    }

    pub(crate) fn registers(&self) -> UnwindRegs {
        let r = ptrace::getregs(self.pid).unwrap();
        let in_dwarf_order = [
            r.rax, r.rdx, r.rcx, r.rbx, r.rsi, r.rdi, r.rbp, r.rsp, r.r8, r.r9, r.r10, r.r11,
            r.r12, r.r13, r.r14, r.r15, r.rip,
        ];
        let mut regs = UnwindRegs::default();
        for (i, value) in in_dwarf_order.into_iter().enumerate() {
            regs.regs[i] = Some(value);
        }
        regs
    }

    /// The objects mapped in the process, from /proc/pid/maps.
    pub(crate) fn objects(&self) -> MappedObjects {
        MappedObjects::read(self.pid, &|_| None)
    }

    pub(crate) fn objects_with_debug(
        &self,
        debug: &dyn Fn(&Path) -> Option<&'static [u8]>,
    ) -> MappedObjects {
        MappedObjects::read(self.pid, debug)
    }
}

impl Drop for Tracee {
    fn drop(&mut self) {
        let _ = nix::sys::signal::kill(self.pid, Signal::SIGKILL);
        let _ = waitpid(self.pid, None);
    }
}

impl UnwindMemory for Tracee {
    fn read_u64(&self, addr: u64) -> Option<u64> {
        let mut bytes = [0u8; 8];
        self.mem.read_exact_at(&mut bytes, addr).ok()?;
        Some(u64::from_le_bytes(bytes))
    }
}

pub(crate) struct Mapping {
    pub(crate) start: u64,
    pub(crate) end: u64,
    pub(crate) bias: u64,
    pub(crate) path: PathBuf,
    table: &'static CfiTable,
}

pub(crate) struct MappedObjects {
    pub(crate) mappings: Vec<Mapping>,
}

impl MappedObjects {
    fn read(pid: Pid, debug: &dyn Fn(&Path) -> Option<&'static [u8]>) -> MappedObjects {
        let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap();
        let mut files: HashMap<PathBuf, Option<(&'static [u8], &'static CfiTable)>> =
            HashMap::new();
        let mut mappings = Vec::new();
        for line in maps.lines() {
            let fields: Vec<&str> = line.split_whitespace().collect();
            if fields.len() < 6 || !fields[5].starts_with('/') {
                continue;
            }
            let (start, end) = fields[0].split_once('-').unwrap();
            let start = u64::from_str_radix(start, 16).unwrap();
            let end = u64::from_str_radix(end, 16).unwrap();
            let offset = u64::from_str_radix(fields[2], 16).unwrap();
            let path = PathBuf::from(fields[5]);
            let loaded = *files.entry(path.clone()).or_insert_with(|| {
                let bytes: &'static [u8] = Box::leak(std::fs::read(&path).ok()?.into_boxed_slice());
                let table = CfiTable::new(bytes, debug(&path)).ok()?;
                Some((bytes, &*Box::leak(Box::new(table))))
            });
            let Some((bytes, table)) = loaded else {
                continue;
            };
            let Some(bias) = load_bias(bytes, start, offset) else {
                continue;
            };
            mappings.push(Mapping {
                start,
                end,
                bias,
                path,
                table,
            });
        }
        MappedObjects { mappings }
    }

    pub(crate) fn mapping_for(&self, address: u64) -> Option<&Mapping> {
        self.mappings
            .iter()
            .find(|m| m.start <= address && address < m.end)
    }
}

/// Runtime minus file address for a mapping of file offset `offset` at
/// `start`: find the PT_LOAD segment that maps that offset.
fn load_bias(elf: &[u8], start: u64, offset: u64) -> Option<u64> {
    let file = object::File::parse(elf).ok()?;
    file.segments().find_map(|segment| {
        let (file_offset, file_size) = segment.file_range();
        let page_offset = file_offset & !0xfff;
        (page_offset <= offset && offset < file_offset + file_size.max(1)).then(|| {
            // The segment's first byte sits at vaddr; file offset `offset` at start.
            start
                .wrapping_sub(segment.address())
                .wrapping_add(file_offset)
                .wrapping_sub(offset)
        })
    })
}

impl ObjectLookup for MappedObjects {
    fn cfi_for(&self, pc: u64) -> Option<(&CfiTable, u64)> {
        self.mapping_for(pc).map(|m| (m.table, m.bias))
    }
}

/// The pcs of gdb's physical frames (inline and tail-call frames skipped) at the
/// program's first SIGTRAP, with the whole stack shown (past main/entry).
pub(crate) fn gdb_backtrace_pcs(binary: &Path) -> Vec<u64> {
    let script = binary.with_extension("gdb.py");
    std::fs::write(
        &script,
        "frame = gdb.newest_frame()\n\
         while frame is not None:\n\
         \x20   if frame.type() not in (gdb.INLINE_FRAME, gdb.TAILCALL_FRAME):\n\
         \x20       print('PC 0x%x' % frame.pc())\n\
         \x20   frame = frame.older()\n",
    )
    .unwrap();
    let output = Command::new("gdb")
        .args(["-batch", "-nx", "-iex", "set debuginfod enabled off"])
        .args([
            "-ex",
            "set backtrace past-main on",
            "-ex",
            "set backtrace past-entry on",
        ])
        .args(["-ex", "handle SIGUSR1 nostop noprint pass", "-ex", "run"])
        .arg("-x")
        .arg(&script)
        .arg(binary)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let pcs: Vec<u64> = stdout
        .lines()
        .filter_map(|line| line.strip_prefix("PC 0x"))
        .filter_map(|hex| u64::from_str_radix(hex.trim(), 16).ok())
        .collect();
    assert!(
        !pcs.is_empty(),
        "gdb gave no backtrace:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    pcs
}

/// The name of the ELF symbol containing the runtime address `address`.
pub(crate) fn symbol_name(objects: &MappedObjects, address: u64) -> Option<String> {
    use object::ObjectSymbol;
    let mapping = objects.mapping_for(address)?;
    let data = std::fs::read(&mapping.path).ok()?;
    let file = object::File::parse(&*data).ok()?;
    let file_address = address.wrapping_sub(mapping.bias);
    file.symbols()
        .chain(file.dynamic_symbols())
        .filter(|s| s.address() <= file_address && file_address < s.address() + s.size().max(1))
        .filter_map(|s| s.name().ok().map(str::to_string))
        .next()
}

impl Tracee {
    pub(crate) fn single_step(&self) -> bool {
        ptrace::step(self.pid, None).unwrap();
        let status = waitpid(self.pid, None).unwrap();
        if !matches!(status, WaitStatus::Stopped(_, Signal::SIGTRAP)) {
            eprintln!("single step ended with {status:?}");
        }
        matches!(status, WaitStatus::Stopped(_, Signal::SIGTRAP))
    }
}

impl Tracee {
    pub(crate) fn read_bytes(&self, address: u64, len: usize) -> Vec<u8> {
        let mut bytes = vec![0; len];
        self.mem.read_exact_at(&mut bytes, address).unwrap();
        bytes
    }

    pub(crate) fn write_bytes(&self, address: u64, bytes: &[u8]) {
        self.mem.write_all_at(bytes, address).unwrap();
    }
}
