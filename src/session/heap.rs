//! dbx's runtime-checking commands on heap-tracing data, at any stop:
//! `showleaks` (a real leak check: the heap events say which blocks are in
//! use, a scan of the stopped process's memory says which are still
//! reachable), `showmemuse` (blocks in use by allocation stack) and
//! `showblock` (the block holding an address).

use super::Session;
use analyzer::heap::{leak_check, Block, HeapState, Reach, Roots};
use anyhow::{anyhow, bail, Context, Result};
use commands::HeapView;
use debugger::maps::Mapping;
use experiment::{Experiment, Stack};
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

/// Groups shown by `showmemuse` without `-a`.
const TOP_GROUPS: usize = 20;
/// Below the stack pointer: the x86-64 red zone a leaf function may use.
const RED_ZONE: u64 = 128;

/// What the heap-tracing experiment says at this stop.
struct HeapAtStop {
    state: HeapState,
    stacks: HashMap<u64, Stack>,
    start_ns: u64,
}

/// Blocks that share an allocation stack.
struct Group<'a> {
    stack_id: u64,
    blocks: Vec<&'a Block>,
    bytes: u64,
}

/// The leaks `showleaks` has listed in one process's experiment, by the
/// order numbers of their allocations (one per allocation, never reused).
#[derive(Default)]
pub(super) struct LeaksShown {
    /// The experiment and the process they are of: another run starts
    /// afresh.
    of: Option<(PathBuf, i32)>,
    orders: HashSet<u64>,
}

/// The leak classes `showleaks` lists, as dbx's actual and possible leaks
/// (memcheck's default kinds); the others are in its summary.
const LISTED: [Reach; 2] = [Reach::DefinitelyLost, Reach::PossiblyLost];

impl Session {
    pub(super) fn show_leaks(&mut self, view: HeapView) -> Result<()> {
        let heap = self.heap_at_stop("showleaks")?;
        let blocks = heap.state.blocks();
        let roots = self.roots(blocks)?;
        let dbg = &self.dbg;
        let classes = leak_check(blocks, &roots, &mut |address, buf| {
            dbg.read_memory(address, buf).is_ok()
        });
        let totals = |class: Reach| {
            let of_class = blocks.iter().zip(&classes).filter(|(_, c)| **c == class);
            of_class.fold((0u64, 0u64), |(n, b), (block, _)| (n + 1, b + block.size))
        };
        // As dbx: the leaks not listed by an earlier showleaks of this
        // process, or with -a all of them.
        let this_process = Some((self.experiment_path()?, self.dbg.process()?.pid()));
        if self.leaks_shown.of != this_process {
            self.leaks_shown = LeaksShown {
                of: this_process,
                orders: HashSet::new(),
            };
        }
        let earlier = !self.leaks_shown.orders.is_empty();
        let shown = &self.leaks_shown.orders;
        let listed = |class: Reach| -> Vec<&Block> {
            blocks
                .iter()
                .zip(&classes)
                .filter(|(block, c)| **c == class && (view.all || !shown.contains(&block.order)))
                .map(|(block, _)| block)
                .collect()
        };
        let lists: Vec<(Reach, Vec<&Block>)> = LISTED.iter().map(|&c| (c, listed(c))).collect();
        let now_shown: Vec<u64> = lists
            .iter()
            .flat_map(|(_, list)| list.iter().map(|b| b.order))
            .collect();
        self.leaks_shown.orders.extend(now_shown);
        if view.json {
            let mut doc = serde_json::Map::new();
            for class in [
                Reach::DefinitelyLost,
                Reach::IndirectlyLost,
                Reach::PossiblyLost,
                Reach::StillReachable,
            ] {
                let (count, bytes) = totals(class);
                doc.insert(class.key().into(), json!({"blocks": count, "bytes": bytes}));
            }
            let mut leaks = Vec::new();
            for (class, list) in &lists {
                for group in groups(list.iter().copied()) {
                    leaks.push(self.group_json(&heap, &group, *class, view.frames));
                }
            }
            doc.insert("all".into(), Value::Bool(view.all));
            doc.insert("leaks".into(), Value::Array(leaks));
            println!("{}", Value::Object(doc));
            return Ok(());
        }
        println!("Checking for memory leaks...");
        if earlier && !view.all {
            println!("(new since the last showleaks; showleaks -a lists them all)");
        }
        for (class, list) in &lists {
            let class = *class;
            let count = list.len();
            let bytes: u64 = list.iter().map(|b| b.size).sum();
            println!();
            println!(
                "{} report    ({}: {count}  total size: {bytes} bytes)",
                report_title(class),
                report_count_name(class)
            );
            println!();
            println!("  Total      Num of  Leaked              Allocation call stack");
            println!("  Size       Blocks  Block Address");
            println!(
                "==========  ======  ==================  ===================================="
            );
            for group in groups(list.iter().copied()) {
                println!(
                    "{:>10}  {:>6}  {:<18}  {}",
                    group.bytes,
                    group.blocks.len(),
                    format!("{:#x}", group.blocks[0].address),
                    self.call_stack(&heap, group.stack_id, view.frames)
                );
            }
        }
        println!();
        let summary: Vec<String> = [
            Reach::DefinitelyLost,
            Reach::IndirectlyLost,
            Reach::PossiblyLost,
            Reach::StillReachable,
        ]
        .iter()
        .map(|&class| {
            let (count, bytes) = totals(class);
            format!("{}: {bytes} bytes in {count} blocks", class.name())
        })
        .collect();
        println!("Summary: {}", summary.join("; "));
        Ok(())
    }

    pub(super) fn show_mem_use(&mut self, view: HeapView) -> Result<()> {
        let heap = self.heap_at_stop("showmemuse")?;
        let blocks = heap.state.blocks();
        let mut groups = groups(blocks.iter());
        let total: u64 = blocks.iter().map(|b| b.size).sum();
        if !view.all {
            groups.truncate(TOP_GROUPS);
        }
        if view.json {
            let list: Vec<Value> = groups
                .iter()
                .map(|g| self.group_json(&heap, g, Reach::StillReachable, view.frames))
                .collect();
            let doc = json!({"blocks_in_use": blocks.len(), "bytes_in_use": total, "groups": list});
            println!("{doc}");
            return Ok(());
        }
        println!(
            "Blocks in use report   (blocks in use: {}  total size: {total} bytes)",
            blocks.len()
        );
        println!();
        println!("  Total      % of    Num of  Avg     Allocation call stack");
        println!("  Size       All     Blocks  Size");
        println!("==========  ======  ======  ======  ====================================");
        for group in &groups {
            let percent = if total == 0 {
                0.0
            } else {
                100.0 * group.bytes as f64 / total as f64
            };
            println!(
                "{:>10}  {:>5.1}%  {:>6}  {:>6}  {}",
                group.bytes,
                percent,
                group.blocks.len(),
                group.bytes / group.blocks.len().max(1) as u64,
                self.call_stack(&heap, group.stack_id, view.frames)
            );
        }
        Ok(())
    }

    pub(super) fn show_block(&mut self, address: &str, json: bool) -> Result<()> {
        let heap = self.heap_at_stop("showblock")?;
        let at = self.evaluate_address(address)?;
        let (block, kind) = match heap.state.block_holding(at) {
            Some(block) => (block, "block"),
            None => match heap.state.mapping_holding(at) {
                Some(mapping) => (mapping, "mapping"),
                None => bail!("showblock: 0x{at:x} is in no heap block in use"),
            },
        };
        let since_start = block.timestamp_ns.saturating_sub(heap.start_ns);
        let stack = self.stack_frames(&heap, block.stack_id, usize::MAX);
        if json {
            let frames: Vec<Value> = stack.iter().map(frame_json).collect();
            let doc = json!({
                "address": format!("0x{:x}", block.address),
                "size": block.size,
                "kind": kind,
                "allocated_by": block.op.name(),
                "order": block.order,
                "seconds": since_start as f64 / 1e9,
                "thread_tid": block.tid,
                "stack": frames,
            });
            println!("{doc}");
            return Ok(());
        }
        println!(
            "Heap {kind} 0x{:x} (0x{at:x} is {} bytes into it), size {} bytes",
            block.address,
            at - block.address,
            block.size
        );
        println!(
            "allocated by {}, event {} at {:.3} s, in thread lwp {}",
            block.op.name(),
            block.order,
            since_start as f64 / 1e9,
            block.tid
        );
        println!("Allocation call stack:");
        for frame in &stack {
            println!("    {}", frame.text());
        }
        Ok(())
    }

    fn experiment_path(&self) -> Result<PathBuf> {
        self.experiment
            .as_ref()
            .map(|e| e.path().to_path_buf())
            .ok_or_else(|| anyhow!("no experiment in this process"))
    }

    /// The experiment's heap events replayed, at a stop of a live process.
    fn heap_at_stop(&self, command: &str) -> Result<HeapAtStop> {
        if !self.process_is_stopped() {
            bail!("{command}: no process is stopped");
        }
        let path = self.experiment_path().map_err(|_| {
            anyhow!("{command}: no experiment in this process (collector heaptrace on, collector enable, then run)")
        })?;
        let expt =
            Experiment::open(&path).with_context(|| format!("{command}: {}", path.display()))?;
        if !expt.manifest().kinds.iter().any(|k| k == "heap-trace") {
            bail!(
                "{command}: {} does not trace the heap (collector heaptrace on before the run)",
                path.display()
            );
        }
        let events = expt.heap_events()?;
        let start_ns = start_time(&expt).unwrap_or(0);
        Ok(HeapAtStop {
            state: HeapState::replay(&events),
            stacks: expt.stacks()?,
            start_ns,
        })
    }

    /// Where the program may hold pointers: writable memory outside the
    /// heap and the collector, each thread's stack from its stack pointer
    /// (less the red zone) up, and every thread's registers.
    fn roots(&self, blocks: &[Block]) -> Result<Roots> {
        let process = self.dbg.process()?;
        let maps = debugger::maps::read_maps(process.pid())?;
        let mut roots = Roots::default();
        let mut stacks: Vec<(u64, u64)> = Vec::new();
        for thread in process.threads() {
            let Ok(regs) = process.regs(thread.tid()) else {
                continue;
            };
            roots.values.extend(register_values(&regs));
            let rsp = regs.rsp;
            if let Some(mapping) = maps.iter().find(|m| m.start <= rsp && rsp < m.end) {
                stacks.push((mapping.start, mapping.end));
                roots
                    .ranges
                    .push(rsp.saturating_sub(RED_ZONE).max(mapping.start)..mapping.end);
            }
        }
        let experiment = self.experiment.as_ref().map(|e| e.path().to_path_buf());
        for mapping in &maps {
            let is_stack = stacks.contains(&(mapping.start, mapping.end));
            if is_stack || !is_root(mapping, blocks, experiment.as_deref()) {
                continue;
            }
            roots.ranges.push(mapping.start..mapping.end);
        }
        Ok(roots)
    }

    fn call_stack(&self, heap: &HeapAtStop, stack_id: u64, frames: usize) -> String {
        let stack = self.stack_frames(heap, stack_id, frames);
        if stack.is_empty() {
            return "<unknown stack>".into();
        }
        let names: Vec<String> = stack
            .iter()
            .map(|f| match &f.location {
                Some((_, line)) => format!("{}:{line}", f.function),
                None => f.function.clone(),
            })
            .collect();
        names.join(" < ")
    }

    /// The allocation stack's frames, the caller of the allocator first.
    fn stack_frames(&self, heap: &HeapAtStop, stack_id: u64, frames: usize) -> Vec<HeapFrame> {
        let Some(stack) = heap.stacks.get(&stack_id) else {
            return Vec::new();
        };
        stack
            .pcs
            .iter()
            .take(frames)
            .map(|&pc| {
                // Return addresses: their call is the byte before.
                let symbolized = self.dbg.objects().symbolize(pc.saturating_sub(1));
                HeapFrame {
                    pc,
                    function: symbolized.function.unwrap_or_else(|| format!("0x{pc:x}")),
                    location: symbolized
                        .location
                        .map(|l| (l.file.display().to_string(), l.line)),
                }
            })
            .collect::<Vec<HeapFrame>>()
            .into_iter()
            .scan(false, |after_main, frame| {
                // As `where`, the stack ends at main.
                if *after_main {
                    return None;
                }
                *after_main = frame.function == "main" && !self.stack_past_main;
                Some(frame)
            })
            .collect()
    }

    fn group_json(&self, heap: &HeapAtStop, group: &Group, class: Reach, frames: usize) -> Value {
        let stack: Vec<Value> = self
            .stack_frames(heap, group.stack_id, frames)
            .iter()
            .map(frame_json)
            .collect();
        let addresses: Vec<String> = group
            .blocks
            .iter()
            .map(|b| format!("0x{:x}", b.address))
            .collect();
        match class {
            Reach::StillReachable => json!({
                "class": class.key(),
                "blocks": group.blocks.len(),
                "bytes": group.bytes,
                "addresses": addresses,
                "stack": stack,
            }),
            _ => json!({
                "class": class.key(),
                "leaks": group.blocks.len(),
                "bytes_leaked": group.bytes,
                "addresses": addresses,
                "stack": stack,
            }),
        }
    }
}

/// One frame of an allocation stack.
struct HeapFrame {
    pc: u64,
    function: String,
    location: Option<(String, u32)>,
}

impl HeapFrame {
    fn text(&self) -> String {
        match &self.location {
            Some((file, line)) => format!("{} at line {line} in \"{file}\"", self.function),
            None => format!("{} (0x{:x})", self.function, self.pc),
        }
    }
}

fn frame_json(frame: &HeapFrame) -> Value {
    json!({
        "function": frame.function,
        "pc": format!("0x{:x}", frame.pc),
        "file": frame.location.as_ref().map(|(f, _)| f.clone()),
        "line": frame.location.as_ref().map(|(_, l)| *l),
    })
}

/// Blocks grouped by allocation stack, largest first.
fn groups<'a>(blocks: impl Iterator<Item = &'a Block>) -> Vec<Group<'a>> {
    let mut by_stack: HashMap<u64, Group<'a>> = HashMap::new();
    for block in blocks {
        let group = by_stack.entry(block.stack_id).or_insert_with(|| Group {
            stack_id: block.stack_id,
            blocks: Vec::new(),
            bytes: 0,
        });
        group.blocks.push(block);
        group.bytes += block.size;
    }
    let mut list: Vec<Group> = by_stack.into_values().collect();
    list.sort_by(|a, b| {
        b.bytes
            .cmp(&a.bytes)
            .then(a.blocks[0].order.cmp(&b.blocks[0].order))
    });
    list
}

/// Whether a mapping is scanned as a root: writable and readable, not the
/// heap (its free chunks hold stale pointers; blocks are scanned when
/// reached), not an arena or large block (it holds a block in use), not
/// the kernel's, not the collector's own (its library and the experiment's
/// files).
fn is_root(mapping: &Mapping, blocks: &[Block], experiment: Option<&Path>) -> bool {
    if !(mapping.readable && mapping.writable) {
        return false;
    }
    if matches!(
        mapping.path.as_str(),
        "[heap]" | "[vvar]" | "[vsyscall]" | "[vdso]"
    ) {
        return false;
    }
    if mapping.path.contains("libcollector") {
        return false;
    }
    if experiment.is_some_and(|dir| Path::new(&mapping.path).starts_with(dir)) {
        return false;
    }
    let after = blocks.partition_point(|b| b.address < mapping.start);
    let holds_block = blocks.get(after).is_some_and(|b| b.address < mapping.end);
    !holds_block
}

fn register_values(regs: &libc::user_regs_struct) -> [u64; 16] {
    [
        regs.rax, regs.rbx, regs.rcx, regs.rdx, regs.rsi, regs.rdi, regs.rbp, regs.rsp, regs.r8,
        regs.r9, regs.r10, regs.r11, regs.r12, regs.r13, regs.r14, regs.r15,
    ]
}

fn report_title(class: Reach) -> &'static str {
    match class {
        Reach::DefinitelyLost => "Actual leaks",
        Reach::PossiblyLost => "Possible leaks",
        Reach::IndirectlyLost => "Indirect leaks",
        Reach::StillReachable => "Blocks still reachable",
    }
}

fn report_count_name(class: Reach) -> &'static str {
    match class {
        Reach::DefinitelyLost => "actual leaks",
        Reach::PossiblyLost => "possible leaks",
        Reach::IndirectlyLost => "indirect leaks",
        Reach::StillReachable => "blocks",
    }
}

/// The experiment's start (the `start` line's time).
fn start_time(expt: &Experiment) -> Option<u64> {
    expt.log().ok()?.first().map(|e| e.timestamp_ns)
}
