//! Writes a large synthetic clock-profiling experiment for the analyzer
//! benchmark (bench/analyzer.sh), or with `--heap` a heap-tracing one
//! (bench/heap_analysis.sh), through the experiment crate's writer.
//!
//! The stacks are made of real addresses of BINARY's functions, so the
//! analyzer symbolizes them (functions, lines, callers) exactly as it does a
//! recorded run; only the choice of stacks and their weights is invented.
//!
//! `cargo run --release -p analyzer --example synth_experiment -- \
//!      [--events N] [--stacks N] [--max-depth D] [--shape independent|nested] \
//!      [--threads N] [--heap] [--pid N] [--seed N] BINARY OUT.er`
//!
//! Stacks are 3 to D frames deep (default 30), rooted at main. With
//! `--shape independent` (the default) every frame of every stack is drawn
//! at random. With `--shape nested` the stacks are the moments of one
//! wandering call path: each stack returns from a few of the previous
//! stack's innermost calls and makes a few new ones, so stacks share their
//! outer frames as a real program's do (its calling-context tree has a few
//! nodes per stack, not one per frame) and depths spread evenly over 3..=D.
//!
//! `--pid` gives the process id the experiment records (default 4242) and
//! `--seed` draws the events' stacks anew (default 0: the same events each
//! time); the stacks themselves are the same for every seed, as runs of one
//! program share theirs (bench/groups.sh writes a job of 64 such
//! experiments).
//!
//! With `--heap` the N events are heap-tracing events (the `heap` file,
//! kind "heap-trace", no clock profile): allocations (mostly malloc, some
//! calloc, memalign and realloc, a few anonymous mmaps) of sizes spread
//! from a few bytes to tens of kilobytes, each on a stack drawn as clock
//! events' are; about half of them are freed later, by any thread, and
//! their addresses reused as an allocator reuses them; the rest leak. Order
//! numbers rise by one per event across the threads, whose blocks are
//! claimed (placed in the file) when a thread needs one, as the collector's
//! are, so a quiet thread's block sits before busier threads' later ones.

use experiment::heap::{HeapDelta, HeapEvent, HeapOp, MAX_HEAP_RECORD_SIZE};
use experiment::layout::{
    stack_id, BlockWriter, ClockEvent, StackStatus, BLOCK_SIZE, KIND_HEAP, KIND_PROFILE,
    KIND_STACKS,
};
use experiment::text::{write_manifest_into, LineWriter};
use object::{Object, ObjectSymbol, SymbolKind};
use std::collections::HashSet;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// Where the synthetic process "loaded" BINARY (a PIE's usual base).
const LOAD_BASE: u64 = 0x5555_5555_4000;
/// The pid of the process that wrote the stacks file (its blocks' owner).
const PID: u32 = 4242;
const START_NS: u64 = 1_000_000_000;
/// One event per millisecond of thread CPU time, as the `on` resolution.
const TICK_NS: u32 = 1_000_000;

/// How the frames of the distinct stacks are chosen.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Shape {
    Independent,
    Nested,
}

struct Options {
    events: u64,
    stacks: usize,
    max_depth: usize,
    shape: Shape,
    threads: u32,
    heap: bool,
    pid: u32,
    seed: u64,
    binary: PathBuf,
    out: PathBuf,
}

fn main() {
    let options = match parse_args(std::env::args().skip(1).collect()) {
        Ok(o) => o,
        Err(message) => {
            eprintln!("synth_experiment: {message}");
            eprintln!(
                "usage: synth_experiment [--events N] [--stacks N] [--max-depth D] \
                 [--shape independent|nested] [--threads N] [--heap] [--pid N] [--seed N] \
                 BINARY OUT.er"
            );
            std::process::exit(2);
        }
    };
    if let Err(e) = run(&options) {
        eprintln!("synth_experiment: {e}");
        std::process::exit(1);
    }
}

fn parse_args(args: Vec<String>) -> Result<Options, String> {
    let mut options = Options {
        events: 10_000_000,
        stacks: 5_000,
        max_depth: 30,
        shape: Shape::Independent,
        threads: 4,
        heap: false,
        pid: PID,
        seed: 0,
        binary: PathBuf::new(),
        out: PathBuf::new(),
    };
    let mut positional = Vec::new();
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let mut number = |what: &str| -> Result<u64, String> {
            let value = args.next().ok_or(format!("{what} needs a number"))?;
            value
                .parse()
                .map_err(|_| format!("{what}: not a number: {value}"))
        };
        match arg.as_str() {
            "--events" => options.events = number("--events")?,
            "--stacks" => options.stacks = number("--stacks")? as usize,
            "--threads" => options.threads = number("--threads")?.max(1) as u32,
            "--max-depth" => options.max_depth = number("--max-depth")?.clamp(3, 2048) as usize,
            "--heap" => options.heap = true,
            "--pid" => {
                options.pid = u32::try_from(number("--pid")?).map_err(|_| "--pid: too large")?
            }
            "--seed" => options.seed = number("--seed")?,
            "--shape" => {
                options.shape = match args.next().as_deref() {
                    Some("independent") => Shape::Independent,
                    Some("nested") => Shape::Nested,
                    other => return Err(format!("--shape: independent or nested, not {other:?}")),
                }
            }
            _ => positional.push(PathBuf::from(arg)),
        }
    }
    let [binary, out] = <[PathBuf; 2]>::try_from(positional)
        .map_err(|_| "expected BINARY and OUT.er".to_string())?;
    options.binary = binary;
    options.out = out;
    Ok(options)
}

/// A function of BINARY: link-time address and size.
#[derive(Clone, Copy)]
struct Function {
    address: u64,
    size: u64,
}

fn run(options: &Options) -> Result<(), String> {
    let binary = std::fs::canonicalize(&options.binary)
        .map_err(|e| format!("{}: {e}", options.binary.display()))?;
    let (functions, main) = text_functions(&binary)?;
    let mut random = XorShift(0x9e37_79b9_7f4a_7c15);
    std::fs::create_dir_all(&options.out).map_err(|e| format!("{}: {e}", options.out.display()))?;
    write_manifest(&options.out, options.heap)?;
    let mut stacks_file = StacksFile::create(&options.out)?;
    let generator = StackGenerator {
        functions: &functions,
        main,
        max_depth: options.max_depth,
    };
    let stack_ids = match options.shape {
        Shape::Independent => generator.independent(options.stacks, &mut random, &mut stacks_file),
        Shape::Nested => generator.nested(options.stacks, &mut random, &mut stacks_file),
    }?;
    stacks_file.finish()?;
    if options.seed != 0 {
        // Other events over the same stacks (never the all-zero state).
        random = XorShift(random.0 ^ options.seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    }
    let end_ns = if options.heap {
        write_heap(&options.out, options, &stack_ids, &mut random)?
    } else {
        write_profile(&options.out, options, &stack_ids, &mut random)?
    };
    write_log(&options.out, &binary, &functions, options, end_ns)
}

/// The sized text symbols of `binary`, and the index of `main`.
fn text_functions(binary: &Path) -> Result<(Vec<Function>, usize), String> {
    let data = std::fs::read(binary).map_err(|e| format!("{}: {e}", binary.display()))?;
    let file = object::File::parse(&*data).map_err(|e| format!("{}: {e}", binary.display()))?;
    let mut functions = Vec::new();
    let mut main = None;
    for symbol in file.symbols() {
        if symbol.kind() != SymbolKind::Text || symbol.size() < 8 {
            continue;
        }
        if symbol.name() == Ok("main") {
            main = Some(functions.len());
        }
        functions.push(Function {
            address: symbol.address(),
            size: symbol.size(),
        });
    }
    let main = main.ok_or(format!("{}: no main", binary.display()))?;
    Ok((functions, main))
}

/// Picks the frames of the distinct stacks; each stack is written as soon as
/// it is made (a million stacks 200 deep would not fit in memory twice).
struct StackGenerator<'a> {
    functions: &'a [Function],
    main: usize,
    max_depth: usize,
}

impl StackGenerator<'_> {
    /// A caller's PC is one of a few return addresses per function (as
    /// real call sites are); leaves spread over more addresses.
    fn pc_in(&self, function: usize, choices: u64, pick: u64) -> u64 {
        let f = &self.functions[function];
        let slot = pick % choices;
        LOAD_BASE + f.address + 1 + slot * (f.size - 1) / choices
    }

    fn random_function(&self, random: &mut XorShift) -> usize {
        random.below(self.functions.len() as u64) as usize
    }

    /// `count` stacks whose every frame is drawn at random; their ids.
    fn independent(
        &self,
        count: usize,
        random: &mut XorShift,
        out: &mut StacksFile,
    ) -> Result<Vec<u64>, String> {
        let mut seen = HashSet::new();
        let mut ids = Vec::with_capacity(count);
        while ids.len() < count {
            let depth = 3 + random.below(self.max_depth as u64 - 2) as usize;
            let mut pcs = Vec::with_capacity(depth);
            let leaf = self.random_function(random);
            pcs.push(self.pc_in(leaf, 16, random.next()));
            for _ in 1..depth - 1 {
                let caller = self.random_function(random);
                pcs.push(self.pc_in(caller, 4, random.next()));
            }
            pcs.push(self.pc_in(self.main, 4, random.next()));
            let id = stack_id(StackStatus::Complete.code(), &pcs);
            if seen.insert(id) {
                out.push(&pcs)?;
                ids.push(id);
            }
        }
        Ok(ids)
    }

    /// `count` stacks along one wandering call path: each returns from 0
    /// to 5 of the previous one's innermost calls and makes 1 to 4 new
    /// ones (no drift: depths spread evenly over 3..=max_depth); their ids.
    fn nested(
        &self,
        count: usize,
        random: &mut XorShift,
        out: &mut StacksFile,
    ) -> Result<Vec<u64>, String> {
        // Root first: the return address each frame's call will come back to.
        let mut path: Vec<u64> = vec![self.pc_in(self.main, 4, random.next())];
        let mut leaf_function = self.random_function(random);
        let mut seen = HashSet::new();
        let mut ids = Vec::with_capacity(count);
        let mut pcs = Vec::with_capacity(self.max_depth);
        while ids.len() < count {
            let returns = random.below(6) as usize;
            path.truncate(path.len().saturating_sub(returns).max(1));
            for _ in 0..1 + random.below(4) {
                // The previous leaf makes a call: it becomes a caller.
                path.push(self.pc_in(leaf_function, 4, random.next()));
                leaf_function = self.random_function(random);
            }
            // Depth = path + leaf: keep it within 3..=max_depth.
            path.truncate(self.max_depth - 1);
            while path.len() < 2 {
                path.push(self.pc_in(leaf_function, 4, random.next()));
                leaf_function = self.random_function(random);
            }
            pcs.clear();
            pcs.push(self.pc_in(leaf_function, 16, random.next()));
            pcs.extend(path.iter().rev());
            let id = stack_id(StackStatus::Complete.code(), &pcs);
            if seen.insert(id) {
                out.push(&pcs)?;
                ids.push(id);
            }
        }
        Ok(ids)
    }
}

/// The `stacks` block file, written one block at a time.
struct StacksFile {
    path: PathBuf,
    file: std::io::BufWriter<std::fs::File>,
    block: Vec<u8>,
    claimed: bool,
    /// Record bytes written after the header.
    written: usize,
    index: u32,
}

impl StacksFile {
    fn create(dir: &Path) -> Result<StacksFile, String> {
        let path = dir.join("stacks");
        let file = std::fs::File::create(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(StacksFile {
            path,
            file: std::io::BufWriter::new(file),
            block: vec![0u8; BLOCK_SIZE],
            claimed: false,
            written: 0,
            index: 0,
        })
    }

    fn push(&mut self, pcs: &[u64]) -> Result<(), String> {
        if !self.claimed {
            self.block.fill(0);
            BlockWriter::claim(&mut self.block, KIND_STACKS, PID, self.index, START_NS)
                .ok_or("block too small")?;
            self.claimed = true;
            self.written = 0;
        }
        let mut writer = BlockWriter::resume(&mut self.block, self.written).ok_or("bad block")?;
        if writer.push_stack(StackStatus::Complete, pcs) {
            writer.commit();
            self.written = writer.written();
            return Ok(());
        }
        if self.written == 0 {
            return Err(format!("a stack of {} frames fills no block", pcs.len()));
        }
        self.flush_block()?;
        self.push(pcs)
    }

    fn flush_block(&mut self) -> Result<(), String> {
        if !self.claimed {
            return Ok(());
        }
        self.file
            .write_all(&self.block)
            .map_err(|e| format!("{}: {e}", self.path.display()))?;
        self.claimed = false;
        self.index += 1;
        Ok(())
    }

    fn finish(mut self) -> Result<(), String> {
        self.flush_block()?;
        self.file
            .flush()
            .map_err(|e| format!("{}: {e}", self.path.display()))
    }
}

/// Writes `profile`, the threads' blocks interleaved as the collector's
/// are; returns the last event's timestamp.
fn write_profile(
    dir: &Path,
    options: &Options,
    stack_ids: &[u64],
    random: &mut XorShift,
) -> Result<u64, String> {
    let io = |e: std::io::Error| format!("{}: {e}", dir.display());
    let mut block = vec![0u8; BLOCK_SIZE];
    let mut profile =
        std::io::BufWriter::new(std::fs::File::create(dir.join("profile")).map_err(io)?);
    let per_block =
        (BLOCK_SIZE - experiment::layout::HEADER_SIZE) / experiment::layout::CLOCK_EVENT_SIZE;
    let threads = u64::from(options.threads);
    let mut clock = vec![START_NS; options.threads as usize];
    let mut left = options.events;
    let mut index = 0u32;
    while left > 0 {
        for thread in 0..options.threads {
            if left == 0 {
                break;
            }
            let tid = options.pid + thread;
            let n = left.min(per_block as u64);
            left -= n;
            block.fill(0);
            let now = &mut clock[thread as usize];
            let mut writer = BlockWriter::claim(&mut block, KIND_PROFILE, tid, index, *now)
                .ok_or("block too small")?;
            for _ in 0..n {
                *now += u64::from(TICK_NS) * threads;
                writer.push_clock_event(&ClockEvent {
                    timestamp_ns: *now,
                    stack_id: stack_ids[hot_index(random, stack_ids.len())],
                    weight_ns: TICK_NS,
                    cpu: thread as u16 % 2,
                    reserved: 0,
                });
            }
            writer.commit();
            profile.write_all(&block).map_err(io)?;
            index += 1;
        }
    }
    profile.flush().map_err(io)?;
    Ok(clock.into_iter().max().unwrap_or(START_NS))
}

/// Nanoseconds between two heap events (of any thread).
const HEAP_EVENT_NS: u64 = 150;
/// Where the synthetic heap starts and where anonymous mappings go.
const HEAP_BASE: u64 = 0x5555_6000_0000;
const MMAP_BASE: u64 = 0x7f00_0000_0000;

/// A block the synthetic program will free later.
#[derive(Clone, Copy)]
struct Pending {
    address: u64,
    size: u64,
    /// Mappings are given back with munmap, blocks with free.
    mapped: bool,
}

/// One thread's heap block being filled: where it goes in the file and the
/// delta state its records are encoded against.
struct OpenHeapBlock {
    index: u32,
    bytes: Vec<u8>,
    written: usize,
    delta: HeapDelta,
}

/// The `heap` block file. Blocks are placed when claimed (a file index
/// from one counter, as the collector's atomic one) and written when full
/// or at the end.
struct HeapFile {
    file: std::fs::File,
    path: PathBuf,
    pid: u32,
    next_index: u32,
    open: Vec<Option<OpenHeapBlock>>,
}

impl HeapFile {
    fn push(&mut self, thread: usize, event: &HeapEvent) -> Result<(), String> {
        let mut record = [0u8; MAX_HEAP_RECORD_SIZE];
        for _ in 0..2 {
            if self.open[thread].is_none() {
                let mut bytes = vec![0u8; BLOCK_SIZE];
                let tid = self.pid + thread as u32;
                BlockWriter::claim(
                    &mut bytes,
                    KIND_HEAP,
                    tid,
                    self.next_index,
                    event.timestamp_ns,
                )
                .ok_or("block too small")?;
                self.open[thread] = Some(OpenHeapBlock {
                    index: self.next_index,
                    bytes,
                    written: 0,
                    delta: HeapDelta::block_start(event.timestamp_ns),
                });
                self.next_index += 1;
            }
            let Some(block) = self.open[thread].as_mut() else {
                continue;
            };
            // Encoded against a copy: a record that does not fit starts the
            // next block, encoded against that block's start.
            let mut delta = block.delta;
            let len = delta.encode(event, &mut record);
            let mut writer =
                BlockWriter::resume(&mut block.bytes, block.written).ok_or("bad block")?;
            if writer.push_bytes(&record[..len]) {
                writer.commit();
                block.written = writer.written();
                block.delta = delta;
                return Ok(());
            }
            self.flush(thread)?;
        }
        Err("a heap record fills no block".into())
    }

    fn flush(&mut self, thread: usize) -> Result<(), String> {
        if let Some(block) = self.open[thread].take() {
            self.file
                .write_all_at(&block.bytes, u64::from(block.index) * BLOCK_SIZE as u64)
                .map_err(|e| format!("{}: {e}", self.path.display()))?;
        }
        Ok(())
    }
}

/// Writes `heap`: allocations on `stack_ids` (skewed as clock events are),
/// about half freed later; returns the last event's timestamp.
fn write_heap(
    dir: &Path,
    options: &Options,
    stack_ids: &[u64],
    random: &mut XorShift,
) -> Result<u64, String> {
    let path = dir.join("heap");
    let file = std::fs::File::create(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut heap = HeapFile {
        file,
        path,
        pid: options.pid,
        next_index: 0,
        open: (0..options.threads).map(|_| None).collect(),
    };
    // Blocks to be freed later, and freed blocks an allocation may take
    // back (last freed first, as malloc's caches do): (address, size).
    let mut pending: Vec<Pending> = Vec::new();
    let mut reusable: Vec<(u64, u64)> = Vec::new();
    let mut heap_top = HEAP_BASE;
    let mut mmap_top = MMAP_BASE;
    let mut now = START_NS;
    let mut order = 0;
    while order < options.events {
        now += HEAP_EVENT_NS;
        let thread = random.below(u64::from(options.threads)) as usize;
        let roll = random.below(1000);
        // A realloc moves a block that was to be freed: recorded as the
        // free of the old block and the realloc of the new, numbered after.
        if (430..440).contains(&roll) && !pending.is_empty() && order + 1 < options.events {
            let at = random.below(pending.len() as u64) as usize;
            if !pending[at].mapped {
                let old = pending[at];
                let size = heap_size(random);
                let address = heap_top;
                heap_top += (size + 16).next_multiple_of(16);
                pending[at] = Pending {
                    address,
                    size,
                    mapped: false,
                };
                reusable.push((old.address, old.size));
                let free = HeapEvent {
                    op: HeapOp::Free,
                    order,
                    timestamp_ns: now,
                    address: old.address,
                    size: 0,
                    old_address: 0,
                    stack_id: 0,
                };
                heap.push(thread, &free)?;
                let realloc = HeapEvent {
                    op: HeapOp::Realloc,
                    order: order + 1,
                    timestamp_ns: now,
                    address,
                    size,
                    old_address: old.address,
                    stack_id: stack_ids[hot_index(random, stack_ids.len())],
                };
                heap.push(thread, &realloc)?;
                order += 2;
                continue;
            }
        }
        // A third of the events free (while there is something to free):
        // half the allocations, in a run of events twice as long.
        let event = if roll < 333 && !pending.is_empty() {
            let block = pending.swap_remove(random.below(pending.len() as u64) as usize);
            if block.mapped {
                HeapEvent {
                    op: HeapOp::Munmap,
                    order,
                    timestamp_ns: now,
                    address: block.address,
                    size: block.size,
                    old_address: 0,
                    stack_id: 0,
                }
            } else {
                reusable.push((block.address, block.size));
                HeapEvent {
                    op: HeapOp::Free,
                    order,
                    timestamp_ns: now,
                    address: block.address,
                    size: 0,
                    old_address: 0,
                    stack_id: 0,
                }
            }
        } else {
            let stack_id = stack_ids[hot_index(random, stack_ids.len())];
            let (op, size) = match roll {
                333..=339 => (HeapOp::Mmap, (1 + random.below(64)) * 4096),
                340..=399 => (HeapOp::Calloc, heap_size(random)),
                400..=429 => (HeapOp::Memalign, heap_size(random)),
                _ => (HeapOp::Malloc, heap_size(random)),
            };
            let address = if op == HeapOp::Mmap {
                mmap_top += size + 4096;
                mmap_top - size - 4096
            } else {
                match reusable.last() {
                    Some(&(address, room)) if room >= size && random.below(2) == 0 => {
                        reusable.pop();
                        address
                    }
                    _ => {
                        let address = heap_top;
                        heap_top += (size + 16).next_multiple_of(16);
                        address
                    }
                }
            };
            if random.below(2) == 0 {
                pending.push(Pending {
                    address,
                    size,
                    mapped: op == HeapOp::Mmap,
                });
            }
            HeapEvent {
                op,
                order,
                timestamp_ns: now,
                address,
                size,
                old_address: 0,
                stack_id,
            }
        };
        heap.push(thread, &event)?;
        order += 1;
    }
    for thread in 0..heap.open.len() {
        heap.flush(thread)?;
    }
    Ok(now)
}

/// An allocation's size: mostly small (a few to a few hundred bytes), a
/// tail of kilobytes and tens of kilobytes, as programs' are.
fn heap_size(random: &mut XorShift) -> u64 {
    let class = random.below(100);
    let limit = match class {
        0..=59 => 128,
        60..=89 => 1024,
        90..=98 => 16 * 1024,
        _ => 256 * 1024,
    };
    1 + random.below(limit)
}

/// A stack index skewed toward the front, as real profiles are: a few hot
/// stacks take most of the time, the tail still gets some.
fn hot_index(random: &mut XorShift, count: usize) -> usize {
    let u = (random.next() >> 11) as f64 / (1u64 << 53) as f64;
    ((u * u * u) * count as f64) as usize % count
}

fn write_manifest(dir: &Path, heap: bool) -> Result<(), String> {
    let (files, kinds) = match heap {
        true => ("log,stacks,heap", "heap-trace"),
        false => ("log,profile,stacks", "clock-profile"),
    };
    let mut buf = [0u8; 512];
    let n = write_manifest_into(&mut buf, files, kinds, "synth_experiment")
        .ok_or("manifest too long")?;
    std::fs::write(dir.join("manifest"), &buf[..n]).map_err(|e| format!("{}: {e}", dir.display()))
}

fn write_log(
    dir: &Path,
    binary: &Path,
    functions: &[Function],
    options: &Options,
    end_ns: u64,
) -> Result<(), String> {
    let exe = binary.as_os_str().as_encoded_bytes();
    let lo = functions.iter().map(|f| f.address).min().unwrap_or(0) & !0xfff;
    let hi = (functions
        .iter()
        .map(|f| f.address + f.size)
        .max()
        .unwrap_or(0)
        + 0xfff)
        & !0xfff;
    let mut log = Vec::new();
    let mut line = |f: &dyn Fn(&mut LineWriter<'_>)| {
        let mut buf = [0u8; 4096];
        let mut w = LineWriter::new(&mut buf);
        f(&mut w);
        log.extend_from_slice(w.finish().expect("log line fits"));
    };
    line(&|w| {
        w.event(START_NS, "start")
            .u64("pid", u64::from(options.pid))
            .u64("ppid", 1)
            .str("lineage", b"")
            .str("mode", b"collect")
            .str("exe", exe)
            .str("args", exe)
            .u64("profile_ns", u64::from(TICK_NS))
            .str("clock", b"perf-event")
            .u64("depth", 256)
            .u64("sample_ns", 0)
            .u64("realtime_ns", 1_700_000_000_000_000_000);
    });
    line(&|w| {
        w.event(START_NS, "object")
            .str("path", exe)
            .hex("base", LOAD_BASE)
            .hex("lo", LOAD_BASE + lo)
            .hex("hi", LOAD_BASE + hi);
    });
    for thread in 1..options.threads {
        line(&|w| {
            w.event(START_NS + u64::from(thread), "thread-start")
                .u64("tid", u64::from(options.pid + thread));
        });
    }
    // Ten samples across the run, as `sample record` at breakpoints would make.
    let span = end_ns - START_NS;
    for number in 1..=10u64 {
        line(&|w| {
            w.event(START_NS + span * number / 10, "sample")
                .u64("number", number)
                .str("cause", b"manual")
                .str("label", format!("phase{number}").as_bytes())
                .u64("utime_ns", span * number / 10)
                .u64("stime_ns", 0)
                .u64("minflt", 0)
                .u64("majflt", 0)
                .u64("nvcsw", 0)
                .u64("nivcsw", 0)
                .u64("inblock", 0)
                .u64("oublock", 0)
                .u64("rss_kb", 2048);
        });
    }
    line(&|w| {
        w.event(end_ns + 1, "end");
    });
    std::fs::write(dir.join("log"), log).map_err(|e| format!("{}: {e}", dir.display()))
}

/// xorshift64*: a fixed seed makes every generated experiment the same.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}
