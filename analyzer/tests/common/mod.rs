//! Synthetic experiments for the analyzer tests, written through the
//! experiment crate exactly as libcollector.so writes them, over a real
//! ELF file compiled here so that PCs symbolize to known functions.

#![allow(dead_code)]

use experiment::layout::{stack_id, BlockWriter, ClockEvent, StackStatus, BLOCK_SIZE};
use experiment::layout::{KIND_PROFILE, KIND_STACKS};
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
}

impl Synthetic {
    /// A founder experiment `NAME.er` in `parent` with a `start` line.
    pub fn new(parent: &Path, name: &str, exe: &Path, pid: u32) -> Synthetic {
        let dir = parent.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        let mut buf = [0u8; 512];
        let n = write_manifest_into(&mut buf, "clock-profile", "analyzer test").unwrap();
        std::fs::write(dir.join("manifest"), &buf[..n]).unwrap();
        let mut s = Synthetic {
            dir,
            log: Vec::new(),
            events: Vec::new(),
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
