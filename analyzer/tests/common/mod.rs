//! Synthetic experiments for the analyzer tests, written through the
//! experiment crate exactly as libcollector.so writes them, over a real
//! ELF file compiled here so that PCs symbolize to known functions.

#![allow(dead_code)]

use experiment::counters::{CounterEvent, CounterSpec};
use experiment::io::{IoEvent, IoOp};
use experiment::layout::{stack_id, BlockWriter, ClockEvent, StackStatus, BLOCK_SIZE};
use experiment::layout::{
    KIND_COUNTERS, KIND_IO, KIND_OFFCPU, KIND_PROFILE, KIND_STACKS, KIND_SYNC,
};
use experiment::offcpu::OffCpuEvent;
use experiment::sync::SyncEvent;
use experiment::text::{write_manifest_into, LineWriter};
use object::{Object, ObjectSymbol};
use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let dir = std::env::temp_dir().join(format!(
            "rdbx-analyzer-{tag}-{}-{nanos}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Compiles `tests/programs/NAME.c` (no PIE, so link-time = run-time
/// addresses) into `dir`; returns the executable and its function symbols.
pub fn compile(name: &str, dir: &Path, flags: &[&str]) -> (PathBuf, HashMap<String, (u64, u64)>) {
    let source = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/programs")
        .join(format!("{name}.c"));
    let exe = dir.join(name);
    let status = Command::new("gcc")
        .args(flags)
        .args(["-no-pie", "-fno-inline", "-o"])
        .arg(&exe)
        .arg(&source)
        .status()
        .expect("gcc runs");
    assert!(status.success(), "gcc failed for {name}");
    let data = std::fs::read(&exe).unwrap();
    let file = object::File::parse(&*data).unwrap();
    let symbols = file
        .symbols()
        .filter(|s| s.kind() == object::SymbolKind::Text && s.size() > 0)
        .map(|s| (s.name().unwrap().to_string(), (s.address(), s.size())))
        .collect();
    (exe, symbols)
}

/// One event to write.
pub struct Event {
    pub timestamp_ns: u64,
    pub tid: u32,
    pub cpu: u16,
    pub weight_ns: u32,
    pub status: StackStatus,
    /// Leaf first: the interrupted PC, then return addresses.
    pub pcs: Vec<u64>,
}

/// Builds an experiment directory.
pub struct Synthetic {
    pub dir: PathBuf,
    log: Vec<u8>,
    events: Vec<Event>,
    /// Traced waits: the thread, the event (its stack id filled in when
    /// written) and the stack.
    waits: Vec<(u32, SyncEvent, Vec<u64>)>,
    /// Traced I/O calls, as the waits.
    io: Vec<(u32, IoCall, Vec<u64>)>,
    /// Switches off the CPU, as the waits.
    offcpu: Vec<(u32, OffCpuEvent, Vec<u64>)>,
    /// Counter overflow records, as the waits.
    counters: Vec<(u32, CounterEvent, Vec<u64>)>,
}

/// A traced I/O call (an `IoEvent` that owns its path).
#[derive(Clone, Debug)]
pub struct IoCall {
    pub op: IoOp,
    pub failed: bool,
    pub fd: i32,
    pub start_ns: u64,
    pub time_ns: u64,
    pub bytes: u64,
    pub aux_fd: i32,
    pub name: Vec<u8>,
}

impl IoCall {
    fn record(&self, stack_id: u64) -> Vec<u8> {
        let event = IoEvent {
            op: self.op,
            failed: self.failed,
            fd: self.fd,
            start_ns: self.start_ns,
            time_ns: self.time_ns,
            bytes: self.bytes,
            stack_id,
            aux_fd: self.aux_fd,
            name: &self.name,
        };
        let mut out = vec![0u8; event.encoded_size()];
        event.encode_into(&mut out).unwrap();
        out
    }
}

impl Synthetic {
    /// A founder experiment `NAME.er` in `parent` with a `start` line.
    pub fn new(parent: &Path, name: &str, exe: &Path, pid: u32) -> Synthetic {
        let dir = parent.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        let mut buf = [0u8; 512];
        let n = write_manifest_into(
            &mut buf,
            "log,profile,stacks",
            "clock-profile",
            "analyzer test",
        )
        .unwrap();
        std::fs::write(dir.join("manifest"), &buf[..n]).unwrap();
        let mut s = Synthetic {
            dir,
            log: Vec::new(),
            events: Vec::new(),
            waits: Vec::new(),
            io: Vec::new(),
            offcpu: Vec::new(),
            counters: Vec::new(),
        };
        let exe_bytes = exe.as_os_str().as_encoded_bytes().to_vec();
        s.line(|w| {
            w.event(1_000_000_000, "start")
                .u64("pid", u64::from(pid))
                .u64("ppid", 1)
                .str("lineage", b"")
                .str("mode", b"collect")
                .str("exe", &exe_bytes)
                .str("args", &exe_bytes)
                .u64("profile_ns", 10_000_000)
                .str("clock", b"perf-event")
                .u64("depth", 256)
                .u64("sample_ns", 1_000_000_000)
                .u64("realtime_ns", 1_700_000_000_000_000_000);
        });
        s
    }

    pub fn line(&mut self, f: impl FnOnce(&mut LineWriter<'_>)) {
        let mut buf = [0u8; 4096];
        let mut w = LineWriter::new(&mut buf);
        f(&mut w);
        self.log.extend_from_slice(w.finish().expect("line fits"));
    }

    pub fn object(&mut self, ts: u64, path: &Path, base: u64, lo: u64, hi: u64) {
        let path = path.as_os_str().as_encoded_bytes().to_vec();
        self.line(|w| {
            w.event(ts, "object")
                .str("path", &path)
                .hex("base", base)
                .hex("lo", lo)
                .hex("hi", hi);
        });
    }

    pub fn thread(&mut self, ts: u64, tid: u32) {
        self.line(|w| {
            w.event(ts, "thread-start").u64("tid", u64::from(tid));
        });
    }

    pub fn sample(&mut self, ts: u64, number: u64, cause: &str, label: &str, utime_ns: u64) {
        self.line(|w| {
            w.event(ts, "sample")
                .u64("number", number)
                .str("cause", cause.as_bytes())
                .str("label", label.as_bytes())
                .u64("utime_ns", utime_ns)
                .u64("stime_ns", utime_ns / 10)
                .u64("minflt", number * 100)
                .u64("majflt", 0)
                .u64("nvcsw", number)
                .u64("nivcsw", number * 2)
                .u64("inblock", 0)
                .u64("oublock", 8)
                .u64("rss_kb", 2048);
        });
    }

    pub fn event(&mut self, event: Event) {
        self.events.push(event);
    }

    /// A traced synchronization wait of thread `tid` with the (complete)
    /// stack `pcs`; the experiment gets a `sync` file.
    pub fn wait(&mut self, tid: u32, event: SyncEvent, pcs: Vec<u64>) {
        self.waits.push((tid, event, pcs));
    }

    /// A traced I/O call; the experiment gets an `io` file.
    pub fn io_call(&mut self, tid: u32, call: IoCall, pcs: Vec<u64>) {
        self.io.push((tid, call, pcs));
    }

    /// A switch off the CPU; the experiment gets an `offcpu` file.
    pub fn off_cpu(&mut self, tid: u32, event: OffCpuEvent, pcs: Vec<u64>) {
        self.offcpu.push((tid, event, pcs));
    }

    /// The `counter` log line of counter `index`, as the collector writes
    /// it at start.
    pub fn counter(&mut self, ts: u64, index: u16, spec: &CounterSpec) {
        self.line(|w| {
            w.event(ts, "counter")
                .u64("index", u64::from(index))
                .str("name", spec.name.as_bytes())
                .u64("type", u64::from(spec.kind))
                .u64("config", spec.config)
                .u64("config1", spec.config1)
                .u64("config2", spec.config2)
                .u64("interval", spec.interval)
                .u64("address", u64::from(spec.data_address));
        });
    }

    /// A counter overflow record; the experiment gets a `counters` file.
    pub fn counter_event(&mut self, tid: u32, event: CounterEvent, pcs: Vec<u64>) {
        self.counters.push((tid, event, pcs));
    }
}

/// Blocks of a trace file, a record and its stack per block: `record` makes
/// a record's bytes from its stack id.
fn trace_blocks<T>(
    kind: u16,
    items: &[(u32, T, Vec<u64>)],
    record: impl Fn(&T, u64) -> Vec<u8>,
    stacks: &mut Vec<u8>,
) -> Vec<u8> {
    let mut file = Vec::new();
    for (index, (tid, item, pcs)) in items.iter().enumerate() {
        let mut block = vec![0u8; BLOCK_SIZE];
        let mut w = BlockWriter::claim(&mut block, kind, *tid, index as u32, 0).unwrap();
        let mut stack_block = vec![0u8; BLOCK_SIZE];
        let stack_index = 2000 + u32::from(kind) * 100_000 + index as u32;
        let mut s =
            BlockWriter::claim(&mut stack_block, KIND_STACKS, *tid, stack_index, 0).unwrap();
        let id = stack_id(StackStatus::Complete.code(), pcs);
        assert!(s.push_stack(StackStatus::Complete, pcs));
        assert!(w.push_bytes(&record(item, id)));
        w.commit();
        s.commit();
        file.extend_from_slice(&block);
        stacks.extend_from_slice(&stack_block);
    }
    file
}

/// The waits' blocks of the `sync` file, their stacks' added to `stacks`.
fn sync_blocks(waits: &[(u32, SyncEvent, Vec<u64>)], stacks: &mut Vec<u8>) -> Vec<u8> {
    let mut sync = Vec::new();
    for (index, (tid, event, pcs)) in waits.iter().enumerate() {
        let tid = *tid;
        let mut block = vec![0u8; BLOCK_SIZE];
        let mut w = BlockWriter::claim(&mut block, KIND_SYNC, tid, index as u32, 0).unwrap();
        let mut stack_block = vec![0u8; BLOCK_SIZE];
        let mut s =
            BlockWriter::claim(&mut stack_block, KIND_STACKS, tid, 1000 + index as u32, 0).unwrap();
        let id = stack_id(StackStatus::Complete.code(), pcs);
        assert!(s.push_stack(StackStatus::Complete, pcs));
        let event = SyncEvent {
            stack_id: id,
            ..*event
        };
        assert!(w.push_bytes(&event.encode()));
        w.commit();
        s.commit();
        sync.extend_from_slice(&block);
        stacks.extend_from_slice(&stack_block);
    }
    sync
}

impl Synthetic {
    /// Writes log, profile and stacks (one block set per thread).
    pub fn write(self) -> PathBuf {
        let mut log = self.log;
        let mut end = [0u8; 64];
        let mut w = LineWriter::new(&mut end);
        let last = self
            .events
            .iter()
            .map(|e| e.timestamp_ns)
            .max()
            .unwrap_or(0);
        w.event(last + 1, "end");
        log.extend_from_slice(w.finish().unwrap());
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join("log"))
            .unwrap()
            .write_all(&log)
            .unwrap();
        let mut tids: Vec<u32> = self.events.iter().map(|e| e.tid).collect();
        tids.sort();
        tids.dedup();
        let mut profile = Vec::new();
        let mut stacks = Vec::new();
        for (index, tid) in tids.iter().enumerate() {
            let mine: Vec<&Event> = self.events.iter().filter(|e| e.tid == *tid).collect();
            for chunk in mine.chunks(1000) {
                let mut block = vec![0u8; BLOCK_SIZE];
                let mut w =
                    BlockWriter::claim(&mut block, KIND_PROFILE, *tid, index as u32, 0).unwrap();
                let mut stack_block = vec![0u8; BLOCK_SIZE];
                let mut s =
                    BlockWriter::claim(&mut stack_block, KIND_STACKS, *tid, index as u32, 0)
                        .unwrap();
                let mut written = std::collections::HashSet::new();
                for e in chunk {
                    let id = stack_id(e.status.code(), &e.pcs);
                    if written.insert(id) {
                        assert!(s.push_stack(e.status, &e.pcs), "stack block full");
                    }
                    assert!(w.push_clock_event(&ClockEvent {
                        timestamp_ns: e.timestamp_ns,
                        stack_id: id,
                        weight_ns: e.weight_ns,
                        cpu: e.cpu,
                        reserved: 0,
                    }));
                }
                w.commit();
                s.commit();
                profile.extend_from_slice(&block);
                stacks.extend_from_slice(&stack_block);
            }
        }
        let mut files = vec!["log", "profile", "stacks"];
        let mut kinds = vec!["clock-profile"];
        if !self.waits.is_empty() {
            let sync = sync_blocks(&self.waits, &mut stacks);
            std::fs::write(self.dir.join("sync"), sync).unwrap();
            files.push("sync");
            kinds.push("sync-trace");
        }
        if !self.io.is_empty() {
            let io = trace_blocks(KIND_IO, &self.io, IoCall::record, &mut stacks);
            std::fs::write(self.dir.join("io"), io).unwrap();
            files.push("io");
            kinds.push("io-trace");
        }
        if !self.offcpu.is_empty() {
            let record =
                |e: &OffCpuEvent, stack_id| OffCpuEvent { stack_id, ..*e }.encode().to_vec();
            let offcpu = trace_blocks(KIND_OFFCPU, &self.offcpu, record, &mut stacks);
            std::fs::write(self.dir.join("offcpu"), offcpu).unwrap();
            files.push("offcpu");
            kinds.push("off-cpu");
        }
        if !self.counters.is_empty() {
            let record =
                |e: &CounterEvent, stack_id| CounterEvent { stack_id, ..*e }.encode().to_vec();
            let counters = trace_blocks(KIND_COUNTERS, &self.counters, record, &mut stacks);
            std::fs::write(self.dir.join("counters"), counters).unwrap();
            files.push("counters");
            kinds.push("counters");
        }
        if files.len() > 3 {
            let mut buf = [0u8; 512];
            let n = write_manifest_into(
                &mut buf,
                &files.join(","),
                &kinds.join(","),
                "analyzer test",
            )
            .unwrap();
            std::fs::write(self.dir.join("manifest"), &buf[..n]).unwrap();
        }
        std::fs::write(self.dir.join("profile"), profile).unwrap();
        std::fs::write(self.dir.join("stacks"), stacks).unwrap();
        self.dir
    }
}

/// The range of the executable's text mapping from its symbols.
pub fn text_range(symbols: &HashMap<String, (u64, u64)>) -> (u64, u64) {
    let lo = symbols.values().map(|(a, _)| *a).min().unwrap();
    let hi = symbols.values().map(|(a, s)| a + s).max().unwrap();
    (lo & !0xfff, (hi + 0xfff) & !0xfff)
}

// ------------------------------------------------------------------
// Additions for the rule and command tests.

/// The text symbols (sized) of an ELF file: name -> (address, size).
pub fn text_symbols(path: &Path) -> HashMap<String, (u64, u64)> {
    let data = std::fs::read(path).unwrap();
    let file = object::File::parse(&*data).unwrap();
    file.symbols()
        .chain(file.dynamic_symbols())
        .filter(|s| s.kind() == object::SymbolKind::Text && s.size() > 0)
        .map(|s| (s.name().unwrap().to_string(), (s.address(), s.size())))
        .collect()
}

pub fn program(file: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/programs")
        .join(file)
}

fn run_compiler(compiler: &str, args: &[&str], source: &Path, out: &Path) {
    let status = Command::new(compiler)
        .args(args)
        .arg("-o")
        .arg(out)
        .arg(source)
        .status()
        .expect("compiler runs");
    assert!(
        status.success(),
        "{compiler} failed for {}",
        source.display()
    );
}

/// Compiles `tests/programs/NAME.c` as a shared library `NAME.so` in `dir`.
pub fn compile_shared(name: &str, dir: &Path, flags: &[&str]) -> PathBuf {
    let out = dir.join(format!("{name}.so"));
    let mut args = vec!["-shared", "-fPIC", "-fno-inline"];
    args.extend_from_slice(flags);
    run_compiler("gcc", &args, &program(&format!("{name}.c")), &out);
    out
}

/// Compiles `tests/programs/NAME.cpp` with g++ (no PIE) into `dir`.
pub fn compile_cpp(
    name: &str,
    dir: &Path,
    flags: &[&str],
) -> (PathBuf, HashMap<String, (u64, u64)>) {
    let out = dir.join(name);
    let mut args = vec!["-no-pie", "-fno-inline"];
    args.extend_from_slice(flags);
    run_compiler("g++", &args, &program(&format!("{name}.cpp")), &out);
    let symbols = text_symbols(&out);
    (out, symbols)
}

/// Copies `lib` to `dir/NEW_NAME` and strips it (`strip`: no .symtab, no DWARF).
pub fn stripped_copy(lib: &Path, dir: &Path, new_name: &str) -> PathBuf {
    let out = dir.join(new_name);
    std::fs::copy(lib, &out).unwrap();
    let status = Command::new("strip")
        .arg(&out)
        .status()
        .expect("strip runs");
    assert!(status.success(), "strip failed");
    out
}

/// The entry of the list `doc[list]` (a document's rows, files,
/// children, ...) whose name is `name`.
pub fn named<'a>(doc: &'a serde_json::Value, list: &str, name: &str) -> &'a serde_json::Value {
    doc[list]
        .as_array()
        .unwrap_or_else(|| panic!("no list {list} in {doc}"))
        .iter()
        .find(|entry| entry["name"] == name)
        .unwrap_or_else(|| panic!("{name} in {doc}"))
}

/// Where the synthetic experiments start (CLOCK_MONOTONIC).
pub const START: u64 = 1_000_000_000;

/// An experiment `dir/name` of the `seed` program (compiled into `dir`,
/// run as pid 700) with the executable mapped at START + 1: the
/// executable, its symbols and the experiment to fill.
pub fn seed_synthetic(dir: &Path, name: &str) -> (PathBuf, HashMap<String, (u64, u64)>, Synthetic) {
    let (exe, syms) = compile("seed", dir, &["-O0", "-g"]);
    let mut expt = Synthetic::new(dir, name, &exe, 700);
    let (lo, hi) = load_span(&exe);
    expt.object(START + 1, &exe, 0, lo, hi);
    (exe, syms, expt)
}

/// The span of an ELF file's loadable segments: (lowest, end of highest),
/// page-rounded, in link-time addresses.
pub fn load_span(path: &Path) -> (u64, u64) {
    use object::ObjectSegment;
    let data = std::fs::read(path).unwrap();
    let file = object::File::parse(&*data).unwrap();
    let lo = file.segments().map(|s| s.address()).min().unwrap();
    let hi = file
        .segments()
        .map(|s| s.address() + s.size())
        .max()
        .unwrap();
    (lo & !0xfff, (hi + 0xfff) & !0xfff)
}

/// Bytes of `size` bytes at link-time address `address` of an ELF file.
pub fn code_at(path: &Path, address: u64, size: u64) -> Vec<u8> {
    use object::ObjectSection;
    let data = std::fs::read(path).unwrap();
    let file = object::File::parse(&*data).unwrap();
    for section in file.sections() {
        let (start, len) = (section.address(), section.size());
        if address >= start && address + size <= start + len {
            let bytes = section.data().unwrap();
            let from = (address - start) as usize;
            return bytes[from..from + size as usize].to_vec();
        }
    }
    panic!("0x{address:x} is in no section of {}", path.display());
}

/// The return addresses of the `call rel32` instructions of function
/// `caller` (symbol of `path`) whose target satisfies `target`, with
/// the targets.
pub fn calls_from(
    path: &Path,
    symbols: &HashMap<String, (u64, u64)>,
    caller: &str,
    target: impl Fn(u64) -> bool,
) -> Vec<(u64, u64)> {
    let (start, size) = symbols[caller];
    let code = code_at(path, start, size);
    let mut found = Vec::new();
    for i in 0..code.len().saturating_sub(4) {
        if code[i] != 0xe8 {
            continue;
        }
        let rel = i32::from_le_bytes(code[i + 1..i + 5].try_into().unwrap());
        let next = start + i as u64 + 5;
        let to = next.wrapping_add_signed(i64::from(rel));
        if target(to) {
            found.push((next, to));
        }
    }
    found
}

/// The address range of a section, if the file has it.
pub fn section_range(path: &Path, name: &str) -> Option<(u64, u64)> {
    use object::ObjectSection;
    let data = std::fs::read(path).unwrap();
    let file = object::File::parse(&*data).unwrap();
    let section = file.section_by_name(name)?;
    Some((section.address(), section.address() + section.size()))
}

/// Rewrites the `stacks` file of experiment `dir` without the record of
/// `stack_id` (a stack record lost with a partly written block).
pub fn drop_stack_record(dir: &Path, stack_id: u64) {
    use experiment::layout::{parse_block, BlockState, StackRecordRef};
    let data = std::fs::read(dir.join("stacks")).unwrap();
    let mut out = Vec::new();
    for block in data.chunks(BLOCK_SIZE) {
        let BlockState::Used(used) = parse_block(block, BLOCK_SIZE, KIND_STACKS) else {
            out.extend_from_slice(block);
            continue;
        };
        let mut fresh = vec![0u8; BLOCK_SIZE];
        let mut w = BlockWriter::claim(
            &mut fresh,
            KIND_STACKS,
            used.header.tid,
            used.header.block_index,
            0,
        )
        .unwrap();
        let mut rest = used.records;
        while let Some(record) = StackRecordRef::parse(rest) {
            if record.header.stack_id != stack_id {
                let pcs: Vec<u64> = record.pcs().collect();
                assert!(w.push_stack(record.status().unwrap(), &pcs));
            }
            rest = &rest[record.size()..];
        }
        w.commit();
        out.extend_from_slice(&fresh);
    }
    std::fs::write(dir.join("stacks"), out).unwrap();
}

/// Runs analysis commands and returns the output text (panics on errors).
pub fn run(analysis: &mut analyzer::Analysis, line: &str) -> String {
    match analysis.run_line(line) {
        Ok(analyzer::Outcome::Output(text)) => text,
        other => panic!("{line}: {other:?}"),
    }
}

/// Runs `line` under `format json` and returns its document (panics on
/// errors).
pub fn run_json(analysis: &mut analyzer::Analysis, line: &str) -> serde_json::Value {
    let before = analysis.format();
    analysis.set_format(commands::OutputFormat::Json);
    let outcome = analysis.run_line(line);
    analysis.set_format(before);
    match outcome {
        Ok(analyzer::Outcome::Json(document)) => document,
        other => panic!("{line}: {other:?}"),
    }
}

/// (exclusive ns, inclusive ns) of each row of a `functions`-style JSON listing.
pub fn rows_by_name(listing: &serde_json::Value) -> HashMap<String, (u64, u64)> {
    listing["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| {
            (
                r["name"].as_str().unwrap().to_string(),
                (
                    r["exclusive"]["ns"].as_u64().unwrap(),
                    r["inclusive"]["ns"].as_u64().unwrap(),
                ),
            )
        })
        .collect()
}

/// (name, attributed ns) of a csingle JSON list (`callers` or `callees`).
pub fn attributed(block: &serde_json::Value, list: &str) -> Vec<(String, u64)> {
    block[list]
        .as_array()
        .expect("list")
        .iter()
        .map(|r| {
            (
                r["name"].as_str().unwrap().to_string(),
                r["attributed"]["ns"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// A complete stack at `base + symbol offsets`: the leaf PC 4 bytes into
/// its function, callers as return addresses 8 bytes in.
pub fn stack_of(symbols: &HashMap<String, (u64, u64)>, names: &[&str]) -> Vec<u64> {
    names
        .iter()
        .enumerate()
        .map(|(i, n)| symbols[*n].0 + if i == 0 { 4 } else { 8 })
        .collect()
}

/// One 10 ms event on thread `tid`, CPU 0, complete stack.
pub fn tick(timestamp_ns: u64, tid: u32, pcs: Vec<u64>) -> Event {
    Event {
        timestamp_ns,
        tid,
        cpu: 0,
        weight_ns: 10_000_000,
        status: StackStatus::Complete,
        pcs,
    }
}

impl Synthetic {
    /// Like [`Synthetic::new`], for a process started at `start_ns`
    /// (CLOCK_MONOTONIC) with `lineage` (`""` for a founder, `_f1` ...).
    pub fn started_at(
        parent: &Path,
        name: &str,
        exe: &Path,
        pid: u32,
        start_ns: u64,
        lineage: &str,
    ) -> Synthetic {
        let dir = parent.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        let mut buf = [0u8; 512];
        let n = write_manifest_into(
            &mut buf,
            "log,profile,stacks",
            "clock-profile",
            "analyzer test",
        )
        .unwrap();
        std::fs::write(dir.join("manifest"), &buf[..n]).unwrap();
        let mut s = Synthetic {
            dir,
            log: Vec::new(),
            events: Vec::new(),
            waits: Vec::new(),
            io: Vec::new(),
            offcpu: Vec::new(),
            counters: Vec::new(),
        };
        let exe_bytes = exe.as_os_str().as_encoded_bytes().to_vec();
        s.line(|w| {
            w.event(start_ns, "start")
                .u64("pid", u64::from(pid))
                .u64("ppid", 1)
                .str("lineage", lineage.as_bytes())
                .str("mode", b"collect")
                .str("exe", &exe_bytes)
                .str("args", &exe_bytes)
                .u64("profile_ns", 10_000_000)
                .str("clock", b"perf-event")
                .u64("depth", 256)
                .u64("sample_ns", 1_000_000_000)
                .u64("realtime_ns", 1_700_000_000_000_000_000);
        });
        s
    }
}
