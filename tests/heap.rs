//! Heap tracing against programs whose allocations are known by
//! construction (tests/programs/heap_known.c): every call of the malloc
//! family and of anonymous mmap is in the experiment with its size, its
//! caller and an order that pairs each free with the allocation it frees,
//! across threads and in a fork child; the program's output is unchanged.
//! Also: a Rust program through std's allocator (heap_rust.rs), a program
//! with its own malloc (heap_own.c), a preloaded jemalloc, hard cases that
//! must neither hang nor change the program (heap_faults.c), and the
//! runtime-checking commands at breakpoints (leaks.c).

mod common;

use common::*;
use experiment::heap::{HeapEvent, HeapOp};
use experiment::log::Event;
use experiment::{Experiment, HeapEventRecord};
use std::collections::HashMap;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// heap_known.c, unoptimized and without builtins (tests/common's recipes).
fn heap_known() -> PathBuf {
    prog("heap_known-O0")
}

/// `rdbx collect -H on` of heap_known with `args`; the experiment.
fn collect(name: &str, args: &[&str]) -> (PathBuf, String) {
    let dir = scratch_dir(name);
    let output = Command::new(rdbx_bin())
        .args(["collect", "-H", "on", "-A", "off", "-o", "t.er"])
        .arg(heap_known())
        .args(args)
        .current_dir(&dir)
        .output()
        .expect("run rdbx collect");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    (dir.join("t.er"), stdout)
}

/// Who called the allocator: the function of an event's first frame in
/// the program (its leaf frame is the call in the caller).
struct Callers(common::Callers);

impl Callers {
    fn of(expt: &Experiment) -> Callers {
        Callers::of_program(expt, &heap_known())
    }

    fn of_program(expt: &Experiment, program: &Path) -> Callers {
        Callers(common::Callers::of(expt, program))
    }

    /// The program functions on the event's stack, leaf first.
    fn functions(&self, event: &HeapEvent) -> Vec<String> {
        self.functions_of(event.stack_id)
    }

    fn functions_of(&self, stack_id: u64) -> Vec<String> {
        self.0.functions(stack_id)
    }

    /// The first program function on the stack.
    fn caller(&self, event: &HeapEvent) -> String {
        self.caller_of(event.stack_id)
    }

    fn caller_of(&self, stack_id: u64) -> String {
        self.0.caller(stack_id)
    }

    /// The first function on the stack whose name starts with `prefix`:
    /// in a Rust program std is linked in, so the allocator's path
    /// (__rust_alloc, RawVec, Box) is the program's too, and its own
    /// functions are the ones under its crate's name.
    fn first_with_prefix(&self, event: &HeapEvent, prefix: &str) -> String {
        self.functions(event)
            .into_iter()
            .find(|f| f.starts_with(prefix))
            .unwrap_or_default()
    }
}

fn count(events: &[HeapEventRecord], callers: &Callers, op: HeapOp, function: &str) -> Vec<u64> {
    events
        .iter()
        .filter(|e| e.event.op == op && callers.caller(&e.event) == function)
        .map(|e| e.event.size)
        .collect()
}

/// Blocks not freed at the end: allocation events whose block no later
/// free (or realloc's free) gave back, in order; and mappings not
/// unmapped. (Mappings are kept apart: an allocator's blocks are carved
/// from its own mappings, the first at the mapping's address.)
fn unfreed(events: &[HeapEventRecord]) -> Vec<HeapEvent> {
    let mut live: HashMap<u64, HeapEvent> = HashMap::new();
    let mut mapped: HashMap<u64, HeapEvent> = HashMap::new();
    for record in events {
        let e = record.event;
        match e.op {
            HeapOp::Free => {
                live.remove(&e.address);
            }
            HeapOp::Munmap => {
                mapped.remove(&e.address);
            }
            HeapOp::Mmap => {
                mapped.insert(e.address, e);
            }
            op if op.allocates() && e.address != 0 => {
                assert!(
                    live.insert(e.address, e).is_none(),
                    "{e:?} allocated a block that was never freed"
                );
            }
            _ => {}
        }
    }
    let mut left: Vec<HeapEvent> = live.into_values().chain(mapped.into_values()).collect();
    left.sort_by_key(|e| e.order);
    left
}

#[test]
fn every_allocation_is_recorded_with_its_size_and_caller() {
    let (dir, stdout) = collect("heap-known", &[]);
    assert_eq!(stdout.trim(), "done", "the program's output is its own");
    let expt = Experiment::open(&dir).expect("open");
    assert!(expt.manifest().kinds.iter().any(|k| k == "heap-trace"));
    let events = expt.heap_events().expect("heap events");
    let callers = Callers::of(&expt);

    let mut made = vec![100; 10];
    made.extend([64; 1000]);
    assert_eq!(count(&events, &callers, HeapOp::Malloc, "make"), made);
    assert_eq!(count(&events, &callers, HeapOp::Calloc, "grow"), vec![1024]);
    assert_eq!(
        count(&events, &callers, HeapOp::Realloc, "grow"),
        vec![4096]
    );
    let mut aligned = count(&events, &callers, HeapOp::Memalign, "aligned");
    aligned.sort();
    assert_eq!(aligned, vec![48, 128, 200]);
    assert_eq!(
        count(&events, &callers, HeapOp::Mmap, "mapped"),
        vec![65536]
    );
    assert_eq!(count(&events, &callers, HeapOp::Realloc, "edges"), vec![24]);
    assert_eq!(count(&events, &callers, HeapOp::Malloc, "edges"), vec![40]);
    assert_eq!(
        count(&events, &callers, HeapOp::Malloc, "work"),
        vec![32; 2000]
    );

    // Each free gives back a block that was allocated and not yet freed;
    // the leaks are exactly the ones the program makes.
    let left = unfreed(&events);
    let leaked_by = |function: &str| {
        left.iter()
            .filter(|e| callers.functions(e).iter().any(|f| f == function))
            .map(|e| e.size)
            .collect::<Vec<_>>()
    };
    assert_eq!(leaked_by("leaky"), vec![100; 10]);
    assert_eq!(leaked_by("edges"), vec![24]);
    assert_eq!(leaked_by("work"), vec![32; 4]);
    assert!(leaked_by("churn").is_empty());
    assert!(leaked_by("grow").is_empty());
    assert!(leaked_by("aligned").is_empty());
    assert!(leaked_by("mapped").is_empty());

    // Order numbers are unique; the collector's own work is not traced.
    let mut orders: Vec<u64> = events.iter().map(|e| e.event.order).collect();
    orders.dedup();
    assert_eq!(orders.len(), events.len());
    // (A program call may pass through the collector's pthread_create; a
    // call the collector makes for itself has no frame of the program.)
    let collector = collector_range(&expt);
    for e in events.iter().filter(|e| e.event.op.allocates()) {
        let stack = callers.0.stack(e.event.stack_id).expect("the stack");
        let through_collector = stack.pcs.iter().any(|pc| collector.contains(pc));
        assert!(
            !through_collector || !callers.functions(&e.event).is_empty(),
            "{:?} was made for the collector",
            e.event
        );
    }
}

/// Where libcollector.so is mapped in the traced process.
fn collector_range(expt: &Experiment) -> std::ops::RangeInclusive<u64> {
    expt.log()
        .expect("log")
        .iter()
        .find_map(|e| match &e.event {
            Event::Object { path, lo, hi, .. }
                if path.to_string_lossy().contains("libcollector") =>
            {
                Some(*lo..=*hi)
            }
            _ => None,
        })
        .expect("the collector's object line")
}

#[test]
fn threads_free_what_they_allocate_in_order() {
    let (dir, _) = collect("heap-threads", &[]);
    let expt = Experiment::open(&dir).expect("open");
    let events = expt.heap_events().expect("heap events");
    let callers = Callers::of(&expt);
    let mut per_thread: HashMap<u32, usize> = HashMap::new();
    for e in &events {
        if e.event.op == HeapOp::Malloc && callers.caller(&e.event) == "work" {
            *per_thread.entry(e.tid).or_default() += 1;
        }
    }
    assert_eq!(per_thread.len(), 4, "{per_thread:?}");
    assert!(per_thread.values().all(|&n| n == 500), "{per_thread:?}");
    // The blocks threads free are reused by others: the order pairs each
    // free with the allocation it frees (unfreed() asserts no block is
    // allocated twice without a free in between).
    let left = unfreed(&events);
    assert_eq!(
        left.iter().filter(|e| callers.caller(e) == "work").count(),
        4
    );
}

#[test]
fn a_fork_child_traces_its_own_heap() {
    let (dir, stdout) = collect("heap-fork", &["fork"]);
    assert_eq!(stdout.trim(), "done");
    let child = Experiment::open(dir.join("_f1.er")).expect("the child's experiment");
    let events = child.heap_events().expect("heap events");
    let callers = Callers::of(&child);
    let leaks = unfreed(&events)
        .into_iter()
        .filter(|e| callers.functions(e).iter().any(|f| f == "leaky"))
        .count();
    assert_eq!(leaks, 10, "the child's own leaky() calls");
}

#[test]
fn without_heaptrace_nothing_is_traced() {
    let dir = scratch_dir("heap-off");
    let output = Command::new(rdbx_bin())
        .args(["collect", "-A", "off", "-o", "t.er"])
        .arg(heap_known())
        .current_dir(&dir)
        .output()
        .expect("run rdbx collect");
    assert!(output.status.success());
    assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), "done");
    assert!(!dir.join("t.er/heap").exists());
}

/// tests/programs/leaks.c (its valgrind/memcheck.h comes with valgrind).
fn leaks_program() -> PathBuf {
    prog("leaks-O0")
}

/// (blocks, bytes) per class from memcheck's first LEAK SUMMARY: the
/// one the program asks for at its checkpoint.
fn valgrind_summary(program: &Path) -> HashMap<String, (u64, u64)> {
    let output = Command::new("valgrind")
        .args(["--leak-check=full", "--show-leak-kinds=all"])
        .arg(program)
        .output()
        .expect("valgrind must be installed");
    let text = String::from_utf8_lossy(&output.stderr);
    let summary = text
        .split("LEAK SUMMARY:")
        .nth(1)
        .unwrap_or_else(|| panic!("no leak summary:\n{text}"));
    let mut classes = HashMap::new();
    for line in summary.lines().take(6) {
        // "==123==    definitely lost: 144 bytes in 4 blocks"
        let Some((_, rest)) = line.split_once("==    ") else {
            continue;
        };
        let Some((class, figures)) = rest.trim().split_once(": ") else {
            continue;
        };
        let words: Vec<&str> = figures.split_whitespace().collect();
        if let [bytes, "bytes", "in", blocks, "blocks"] = words.as_slice() {
            let number = |s: &str| s.replace(',', "").parse::<u64>().expect("a number");
            classes.insert(class.replace(' ', "_"), (number(blocks), number(bytes)));
        }
    }
    classes
}

#[test]
fn showleaks_at_a_breakpoint_agrees_with_valgrind() {
    let program = &leaks_program();
    let expected = valgrind_summary(program);
    let dir = scratch_dir("showleaks");
    let out = Rdbx::batch()
        .cwd(&dir)
        .cmds(&[
            "collector heaptrace on",
            "collector enable",
            "stop in checkpoint",
            "run",
            "showleaks -json",
            "showleaks -a",
        ])
        .prog(program, &[])
        .run();
    let json_line = out
        .stdout
        .lines()
        .find(|l| l.starts_with('{'))
        .unwrap_or_else(|| panic!("no JSON:\n{}", out.transcript()));
    let doc: serde_json::Value = serde_json::from_str(json_line).expect("JSON");
    for class in [
        "definitely_lost",
        "indirectly_lost",
        "possibly_lost",
        "still_reachable",
    ] {
        let ours = (
            doc[class]["blocks"].as_u64().expect("blocks"),
            doc[class]["bytes"].as_u64().expect("bytes"),
        );
        assert_eq!(Some(&ours), expected.get(class), "{class}: {expected:?}");
    }
    // The leaks are grouped by where they were made.
    let leaks = doc["leaks"].as_array().expect("leaks");
    let made_in = |class: &str| -> Vec<(String, u64)> {
        leaks
            .iter()
            .filter(|l| l["class"] == class)
            .map(|l| {
                (
                    l["stack"][0]["function"].as_str().unwrap_or("").to_string(),
                    l["bytes_leaked"].as_u64().unwrap_or(0),
                )
            })
            .collect()
    };
    assert_eq!(
        made_in("definitely_lost"),
        vec![
            ("lose_plain".to_string(), 120),
            ("lose_list".to_string(), 24)
        ]
    );
    assert_eq!(
        made_in("possibly_lost"),
        vec![("keep_interior".to_string(), 64)]
    );
    out.assert_out_contains("Actual leaks report");
    out.assert_out_contains("lose_plain:");
}

#[test]
fn showblock_names_the_block_and_where_it_was_made() {
    let dir = scratch_dir("showblock");
    let out = Rdbx::batch()
        .cwd(&dir)
        .cmds(&[
            "collector heaptrace on",
            "collector enable",
            "stop in checkpoint",
            "run",
            "showblock -json inside",
            "showblock list->next",
            "showblock 8",
            "showmemuse -n 1",
        ])
        .prog(&leaks_program(), &[])
        .run();
    let json_line = out
        .stdout
        .lines()
        .find(|l| l.starts_with('{'))
        .unwrap_or_else(|| panic!("no JSON:\n{}", out.transcript()));
    let doc: serde_json::Value = serde_json::from_str(json_line).expect("JSON");
    assert_eq!(doc["size"], 64);
    assert_eq!(doc["stack"][0]["function"], "keep_interior");
    out.assert_out_contains("size 32 bytes");
    out.assert_out_contains("keep_reachable at line");
    assert!(
        out.stderr
            .contains("showblock: 0x8 is in no heap block in use"),
        "{}",
        out.transcript()
    );
    out.assert_out_contains("160   31.0%       5      32  keep_reachable:");
}

#[test]
fn heap_commands_without_heap_tracing_say_what_is_missing() {
    let dir = scratch_dir("showleaks-off");
    let out = Rdbx::batch()
        .cwd(&dir)
        .cmds(&[
            "showleaks",
            "collector enable",
            "stop in checkpoint",
            "run",
            "showleaks",
            "showblock kept",
        ])
        .prog(&leaks_program(), &[])
        .run();
    let errors = out.errors();
    assert!(
        errors[0].contains("showleaks: no process is stopped"),
        "{errors:?}"
    );
    assert!(
        errors[1].contains("does not trace the heap (collector heaptrace on before the run)"),
        "{errors:?}"
    );
    assert_eq!(errors.len(), 3, "{errors:?}");
}

#[test]
fn heap_tracing_after_attach_sees_what_is_allocated_from_then_on() {
    let program = prog("heap_attach-O0");
    let program = program.as_path();
    let dir = scratch_dir("heap-attach");
    let run = collect_after_attach(program, &dir, &["collector heaptrace on"]);
    assert_eq!(run.ready, "ready");
    let (rest, transcript) = (run.rest, run.transcript);
    assert_eq!(rest.trim(), "done", "the program's output changed");

    let expt = Experiment::open(dir.join("live.er"))
        .unwrap_or_else(|e| panic!("open live.er: {e}\n{transcript}"));
    let log = std::fs::read_to_string(dir.join("live.er/log")).expect("log");
    assert!(log.contains(" heap how=got entries="), "{log}");
    let events = expt.heap_events().expect("heap events");
    let callers = Callers::of_program(&expt, program);
    let sizes = |op: HeapOp, function: &str| count(&events, &callers, op, function);
    assert_eq!(sizes(HeapOp::Malloc, "after_attach"), vec![200; 7]);
    assert_eq!(sizes(HeapOp::Malloc, "churn"), vec![48; 500]);
    assert_eq!(sizes(HeapOp::Malloc, "work"), vec![16; 200]);
    let heap = analyzer::heap::HeapState::replay(&events);
    assert!(
        heap.unknown_frees >= 1,
        "the block allocated before tracing"
    );
    let mut leaked: Vec<u64> = heap
        .blocks()
        .iter()
        .filter(|b| ["after_attach", "work"].contains(&callers.caller_of(b.stack_id).as_str()))
        .map(|b| b.size)
        .collect();
    leaked.sort();
    assert_eq!(leaked, vec![16, 16, 200, 200, 200, 200, 200, 200, 200]);
}

/// A library loaded after the attach is followed by the collector's
/// watcher: its GOT entries redirected (its allocations are traced), its
/// unwind tables and `object` line added (its stacks go on into the
/// program's frames).
#[test]
fn heap_tracing_after_attach_follows_a_library_loaded_later() {
    let program = prog("heap_follow-O0");
    let program = program.as_path();
    let dir = scratch_dir("heap-follow");
    let run = collect_after_attach(program, &dir, &["collector heaptrace on"]);
    assert_eq!(run.ready, "ready");
    assert_eq!(run.rest.trim(), "done", "{}", run.transcript);
    let expt = Experiment::open(dir.join("live.er"))
        .unwrap_or_else(|e| panic!("open live.er: {e}\n{}", run.transcript));
    let events = expt.heap_events().expect("heap events");
    let callers = Callers::of_program(&expt, program);
    assert_eq!(
        count(&events, &callers, HeapOp::Malloc, "after_load"),
        vec![300; 9]
    );
    let log = std::fs::read_to_string(dir.join("live.er/log")).expect("log");
    assert!(
        log.lines()
            .any(|l| l.contains(" object path=") && l.contains("/libheap_follow.so ")),
        "{log}"
    );
}

fn collect_program(
    name: &str,
    program: &Path,
    options: &[&str],
    args: &[&str],
) -> (PathBuf, std::process::Output) {
    let dir = scratch_dir(name);
    let output = Command::new(rdbx_bin())
        .args(["collect", "-H", "on", "-A", "off", "-o", "t.er"])
        .args(options)
        .arg(program)
        .args(args)
        .current_dir(&dir)
        .output()
        .expect("run rdbx collect");
    (dir.join("t.er"), output)
}

#[test]
fn cpp_new_and_delete_arrive_through_malloc() {
    let program = built("heap_cpp.cpp", "g++");
    let (expt_dir, output) = collect_program("heap-cpp", &program, &[], &[]);
    assert!(output.status.success());
    assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), "done");
    let expt = Experiment::open(&expt_dir).expect("open");
    let events = expt.heap_events().expect("heap events");
    let callers = Callers::of_program(&expt, &program);
    // operator new is libstdc++'s: the first frame of the program is the
    // function that said `new`.
    let made_in = |function: &str| {
        events
            .iter()
            .filter(|e| e.event.op == HeapOp::Malloc && callers.caller(&e.event) == function)
            .map(|e| e.event.size)
            .collect::<Vec<_>>()
    };
    assert_eq!(made_in("grow_list()"), vec![48; 5]);
    assert_eq!(made_in("churn()"), vec![48; 100]);
    let left = unfreed(&events);
    let leaked_by = |function: &str| {
        left.iter()
            .filter(|e| callers.caller(e) == function)
            .count()
    };
    assert_eq!(leaked_by("grow_list()"), 5);
    assert_eq!(leaked_by("churn()"), 0);
}

#[test]
fn a_double_free_is_recorded_and_the_program_dies_as_it_would() {
    let program = prog("heap_bad-O0");
    let plain = Command::new(&program).arg("double").output().expect("run");
    let (expt_dir, output) = collect_program("heap-double", &program, &[], &["double"]);
    assert_eq!(
        output.status.code(),
        Some(128 + plain.status.signal().unwrap_or(0)),
        "{:?} vs {:?}",
        output.status,
        plain.status
    );
    let expt = Experiment::open(&expt_dir).expect("a readable experiment");
    let events = expt.heap_events().expect("heap events");
    let made = events
        .iter()
        .find(|e| e.event.op == HeapOp::Malloc && e.event.size == 40)
        .expect("the block");
    let frees = events
        .iter()
        .filter(|e| e.event.op == HeapOp::Free && e.event.address == made.event.address)
        .count();
    assert_eq!(frees, 2, "both frees, as the program made them");
}

#[test]
fn the_data_limit_stops_heap_tracing_and_the_program_runs_on() {
    let program = prog("heap_bad-O0");
    let (expt_dir, output) = collect_program("heap-limit", &program, &["-L", "1"], &["limit"]);
    assert!(output.status.success());
    assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), "done");
    let log = std::fs::read_to_string(expt_dir.join("log")).expect("log");
    assert!(
        log.contains("data%20limit%20reached:%20heap%20tracing%20stopped"),
        "{log}"
    );
    let expt = Experiment::open(&expt_dir).expect("open");
    let events = expt.heap_events().expect("heap events").len();
    assert!(events > 10_000 && events < 800_000, "{events} events");
}

#[test]
fn sigkill_leaves_a_readable_heap_experiment() {
    use std::io::BufRead;
    let program = prog("heap_bad-O0");
    let dir = scratch_dir("heap-kill");
    let mut child = Command::new(rdbx_bin())
        .args(["collect", "-H", "on", "-A", "off", "-o", "t.er"])
        .arg(&program)
        .arg("sleep")
        .current_dir(&dir)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("run rdbx collect");
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("allocated line");
    assert_eq!(line.trim(), "allocated");
    let pid = std::fs::read_to_string(dir.join("t.er/log"))
        .ok()
        .and_then(|log| {
            log.lines().find_map(|l| {
                l.split(" start pid=")
                    .nth(1)?
                    .split(' ')
                    .next()?
                    .parse()
                    .ok()
            })
        })
        .expect("the program's pid");
    // SAFETY: a signal to the program under test.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    let _ = child.wait();
    let expt = Experiment::open(dir.join("t.er")).expect("a readable experiment");
    let events = expt.heap_events().expect("heap events");
    let made = events
        .iter()
        .filter(|e| e.event.op == HeapOp::Malloc && e.event.size == 64)
        .count();
    assert_eq!(made, 1000, "every event written before the kill");
}

#[test]
fn analyze_lists_leaks_and_allocations_by_stack() {
    let (dir, _) = collect("heap-analyze", &[]);
    let output = Command::new(rdbx_bin())
        .args([
            "analyze", "--json", "-c", "leaks", "-c", "allocs", "-c", "heap",
        ])
        .arg(&dir)
        .output()
        .expect("run rdbx analyze");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let reports: serde_json::Value =
        serde_json::from_slice(&output.stdout).expect("one JSON document");
    let (leaks, allocs, heap) = (&reports[0], &reports[1], &reports[2]);

    // The same leaks as the events say, grouped by where they were made.
    let expt = Experiment::open(&dir).expect("open");
    let events = expt.heap_events().expect("heap events");
    let left = unfreed(&events);
    let malloc_family = |e: &&HeapEvent| e.op != HeapOp::Mmap;
    assert_eq!(
        leaks["leaks"].as_u64(),
        Some(left.iter().filter(malloc_family).count() as u64)
    );
    assert_eq!(
        leaks["bytes_leaked"].as_u64(),
        Some(left.iter().filter(malloc_family).map(|e| e.size).sum())
    );
    assert_eq!(heap["leaks"], leaks["leaks"]);
    assert_eq!(heap["bytes_leaked"], leaks["bytes_leaked"]);
    let group_of = |report: &serde_json::Value, function: &str, key: &str| -> Vec<u64> {
        report["groups"]
            .as_array()
            .expect("groups")
            .iter()
            .filter(|g| g["stack"][0]["function"] == function)
            .map(|g| g[key].as_u64().unwrap_or(0))
            .collect()
    };
    assert_eq!(group_of(leaks, "make", "bytes_leaked"), vec![1000]);
    assert_eq!(group_of(leaks, "make", "leaks"), vec![10]);
    assert_eq!(group_of(leaks, "edges", "bytes_leaked"), vec![24]);
    assert_eq!(group_of(leaks, "work", "leaks"), vec![4]);
    // Allocations: make's two callers (leaky, churn) are two stacks.
    let mut made = group_of(allocs, "make", "allocations");
    made.sort();
    assert_eq!(made, vec![10, 1000]);
    assert_eq!(group_of(allocs, "work", "bytes_allocated"), vec![2000 * 32]);
    let allocations: u64 = events
        .iter()
        .filter(|e| e.event.op.allocates() && e.event.op != HeapOp::Mmap && e.event.address != 0)
        .count() as u64;
    assert_eq!(allocs["allocations"].as_u64(), Some(allocations));
    assert_eq!(heap["allocations"].as_u64(), Some(allocations));
    assert!(heap["peak_bytes_in_use"].as_u64().unwrap_or(0) >= 4096);

    // The text, written as it is made, says the same totals and lists
    // every group.
    let text = Command::new(rdbx_bin())
        .args(["analyze", "-c", "leaks"])
        .arg(&dir)
        .output()
        .expect("run rdbx analyze");
    let text = String::from_utf8_lossy(&text.stdout);
    let groups = leaks["groups"].as_array().expect("groups").len();
    let summary = format!(
        "Summary Results: Distinct Leaks = {groups}, Total Instances = {}, Total Bytes Leaked = {}",
        leaks["leaks"], leaks["bytes_leaked"]
    );
    assert!(text.starts_with(&summary), "{text}");
    assert_eq!(text.matches("\nLeak #").count(), groups, "{text}");
}

#[test]
fn rust_allocations_arrive_through_the_system_allocator() {
    let program = built("heap_rust.rs", "rustc");
    let plain = Command::new(&program).output().expect("run heap_rust");
    assert!(plain.status.success());
    let (expt_dir, output) = collect_program("heap-rust", &program, &[], &[]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(
        output.stdout, plain.stdout,
        "the program's output is its own"
    );
    let expt = Experiment::open(&expt_dir).expect("open");
    let events = expt.heap_events().expect("heap events");
    let callers = Callers::of_program(&expt, &program);
    let own = |e: &HeapEvent| callers.first_with_prefix(e, "heap_rust::");
    // Every allocation of each of the program's functions: (op, size).
    let made_in = |function: &str| -> Vec<(HeapOp, u64)> {
        events
            .iter()
            .filter(|e| e.event.op.allocates() && own(&e.event) == function)
            .map(|e| (e.event.op, e.event.size))
            .collect()
    };
    assert_eq!(made_in("heap_rust::boxes"), vec![(HeapOp::Malloc, 300); 12]);
    assert_eq!(made_in("heap_rust::exact_vec"), vec![(HeapOp::Malloc, 800)]);
    assert_eq!(made_in("heap_rust::zeroed"), vec![(HeapOp::Calloc, 4096)]);
    assert_eq!(
        made_in("heap_rust::regrow"),
        vec![(HeapOp::Malloc, 40), (HeapOp::Realloc, 1200)]
    );
    assert_eq!(
        made_in("heap_rust::aligned"),
        vec![(HeapOp::Memalign, 192); 3]
    );
    let mut leaky = vec![(HeapOp::Malloc, 40); 5];
    leaky.push((HeapOp::Malloc, 100));
    assert_eq!(made_in("heap_rust::leak_boxes"), leaky);

    // At exit, the blocks leak_boxes leaked and nothing else of the
    // program's functions (std's own, such as stdout's buffer, are std's).
    let left = unfreed(&events);
    let mut leaked: HashMap<String, Vec<u64>> = HashMap::new();
    for e in left.iter().filter(|e| e.op != HeapOp::Mmap) {
        let function = own(e);
        if !function.is_empty() && function != "heap_rust::main" {
            leaked.entry(function).or_default().push(e.size);
        }
    }
    let expected = HashMap::from([(
        "heap_rust::leak_boxes".to_string(),
        vec![40, 40, 40, 40, 40, 100],
    )]);
    assert_eq!(leaked, expected);
}

/// The log's `heap` line: (allocator, traced).
fn allocator_line(expt_dir: &Path) -> (String, String) {
    let log = std::fs::read_to_string(expt_dir.join("log")).expect("log");
    let line = log
        .lines()
        .find(|l| l.contains(" heap allocator="))
        .unwrap_or_else(|| panic!("no heap allocator line:\n{log}"));
    let field = |key: &str| {
        line.split(' ')
            .find_map(|f| f.strip_prefix(key))
            .unwrap_or_default()
            .to_string()
    };
    (field("allocator="), field("traced="))
}

#[test]
fn a_program_with_its_own_malloc_is_told_apart_and_runs_as_it_would() {
    let program = prog("heap_own-O0");
    let plain = Command::new(&program).output().expect("run heap_own");
    assert!(plain.status.success());
    let (expt_dir, output) = collect_program("heap-own", &program, &[], &[]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert_eq!(
        output.stdout, plain.stdout,
        "the program's output is its own"
    );

    // The log, `rdbx collect` and the analyzer's header say the program's
    // allocator is not traced, and which functions hide the hooks.
    let executable = std::fs::canonicalize(&program).expect("the program's path");
    assert_eq!(
        allocator_line(&expt_dir),
        (executable.display().to_string(), "0".to_string())
    );
    let warning = format!(
        "the program's own malloc, free, calloc, realloc (in {}) come before rdbx's: heap tracing does not see their calls",
        executable.display()
    );
    let expt = Experiment::open(&expt_dir).expect("open");
    let warned = expt
        .log()
        .expect("log")
        .iter()
        .any(|e| e.event == Event::Warning(warning.clone()));
    assert!(warned, "{warning}");
    assert!(
        stderr.contains(&format!("rdbx collect: warning: {warning}")),
        "{stderr}"
    );
    let header = Command::new(rdbx_bin())
        .args(["analyze", "-c", "header"])
        .arg(&expt_dir)
        .output()
        .expect("run rdbx analyze");
    assert!(
        String::from_utf8_lossy(&header.stdout).contains(&warning),
        "{}",
        String::from_utf8_lossy(&header.stdout)
    );
    // What the hooks did not see is not made up.
    let events = expt.heap_events().expect("heap events");
    let callers = Callers::of_program(&expt, &program);
    let seen_in_work = events
        .iter()
        .filter(|e| callers.functions(&e.event).iter().any(|f| f == "work"))
        .count();
    assert_eq!(seen_in_work, 0);
}

/// libjemalloc.so.2 where Debian's libjemalloc2 puts it (.ci/run installs
/// it when missing).
fn jemalloc() -> PathBuf {
    let candidates = [
        "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2",
        "/usr/lib64/libjemalloc.so.2",
        "/usr/lib/libjemalloc.so.2",
    ];
    candidates
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
        .unwrap_or_else(|| {
            panic!("libjemalloc.so.2 is not installed (apt-get install libjemalloc2; .ci/run does)")
        })
}

#[test]
fn a_preloaded_allocator_is_traced_behind_the_hooks() {
    let library = jemalloc();
    let dir = scratch_dir("heap-jemalloc");
    let output = Command::new(rdbx_bin())
        .args(["collect", "-H", "on", "-A", "off", "-o", "t.er"])
        .arg(heap_known())
        .env("LD_PRELOAD", &library)
        .current_dir(&dir)
        .output()
        .expect("run rdbx collect");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), "done");
    assert!(!stderr.contains("warning"), "{stderr}");
    let expt_dir = dir.join("t.er");
    assert_eq!(
        allocator_line(&expt_dir),
        (library.display().to_string(), "1".to_string())
    );
    // The same calls as with libc's malloc, and the blocks jemalloc hands
    // out are freed and reused as the order says.
    let expt = Experiment::open(&expt_dir).expect("open");
    let events = expt.heap_events().expect("heap events");
    let callers = Callers::of(&expt);
    let mut made = vec![100; 10];
    made.extend([64; 1000]);
    assert_eq!(count(&events, &callers, HeapOp::Malloc, "make"), made);
    assert_eq!(
        count(&events, &callers, HeapOp::Malloc, "work"),
        vec![32; 2000]
    );
    // (jemalloc's own mappings, made under the first malloc of a thread,
    // stay: they are its arenas, not the program's leaks.)
    let left = unfreed(&events);
    let leaked_by = |function: &str| {
        left.iter()
            .filter(|e| e.op != HeapOp::Mmap)
            .filter(|e| callers.functions(e).iter().any(|f| f == function))
            .count()
    };
    assert_eq!(leaked_by("leaky"), 10);
    assert_eq!(leaked_by("work"), 4);
    assert_eq!(leaked_by("churn"), 0);
}

/// Runs `command` in its own process group, killed (with everything it
/// started) when it has not finished in two minutes: a hang fails the
/// test instead of hanging it. (The programs take well under a second.)
fn output_within_limit(mut command: Command) -> std::process::Output {
    use std::os::unix::process::CommandExt;
    let child = command
        .process_group(0)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start");
    let group = child.id() as i32;
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    let waiter = std::thread::spawn(move || {
        let output = child.wait_with_output();
        let _ = done_tx.send(());
        output
    });
    if done_rx
        .recv_timeout(std::time::Duration::from_secs(120))
        .is_err()
    {
        // SAFETY: a signal to the process group we made.
        unsafe { libc::kill(-group, libc::SIGKILL) };
        let output = waiter.join().expect("waiter").expect("output");
        panic!(
            "hung: {command:?}\n{}\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    waiter.join().expect("waiter").expect("output")
}

/// heap_faults in `mode`, untraced and traced: both finish, with the same
/// output and status; the traced run's experiment.
fn fault_run(mode: &str) -> (PathBuf, PathBuf, String) {
    let program = prog("heap_faults-O0");
    let mut plain = Command::new(&program);
    plain.arg(mode);
    let plain = output_within_limit(plain);
    assert!(plain.status.success(), "{plain:?}");
    let dir = scratch_dir(&format!("heap-faults-{mode}"));
    let mut traced = Command::new(rdbx_bin());
    traced
        .args(["collect", "-H", "on", "-A", "off", "-o", "t.er"])
        .arg(&program)
        .arg(mode)
        .current_dir(&dir);
    let traced = output_within_limit(traced);
    assert!(
        traced.status.success(),
        "{}",
        String::from_utf8_lossy(&traced.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&traced.stdout),
        String::from_utf8_lossy(&plain.stdout),
        "the program's output is its own"
    );
    (
        dir.join("t.er"),
        program,
        String::from_utf8_lossy(&plain.stdout).into_owned(),
    )
}

#[test]
fn a_signal_handler_that_mallocs_during_the_hooks_neither_hangs_nor_changes_the_program() {
    let (expt_dir, program, stdout) = fault_run("storm");
    assert_eq!(stdout, "storm: ok\nearly: blocks freed\n");
    let expt = Experiment::open(&expt_dir).expect("open");
    let events = expt.heap_events().expect("heap events");
    let callers = Callers::of_program(&expt, &program);
    // The handler's own mallocs are recorded when it interrupts the
    // program outside a hook, with the handler on the stack (the unwinder
    // passes the signal frame back to the interrupted function).
    let in_handler: Vec<Vec<String>> = events
        .iter()
        .filter(|e| e.event.op == HeapOp::Malloc && callers.caller(&e.event) == "on_alarm")
        .map(|e| callers.functions(&e.event))
        .collect();
    assert!(!in_handler.is_empty(), "no malloc of the handler recorded");
    assert!(
        in_handler.iter().any(|f| f.iter().any(|f| f == "storm")),
        "{:?}",
        &in_handler[..in_handler.len().min(5)]
    );
    // Every allocation's block freed before it is handed out again, and
    // nothing of the storm left.
    let left = unfreed(&events);
    assert!(
        left.iter().all(|e| !callers
            .functions(e)
            .iter()
            .any(|f| f == "storm" || f == "on_alarm")),
        "{left:?}"
    );
}

#[test]
fn forks_among_threads_that_malloc_and_fork_neither_hang_nor_change_the_program() {
    let (expt_dir, program, stdout) = fault_run("fork");
    assert_eq!(
        stdout,
        "fork: 40 of 40 children exited 0\nearly: blocks freed\n"
    );
    // Each child traced its own heap: 100 blocks made and freed.
    let mut children = 0;
    for entry in std::fs::read_dir(&expt_dir).expect("experiment") {
        let path = entry.expect("entry").path();
        if !path
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("_f"))
        {
            continue;
        }
        children += 1;
        let child = Experiment::open(&path).expect("a child's experiment");
        let events = child.heap_events().expect("heap events");
        let callers = Callers::of_program(&child, &program);
        let made: Vec<u64> = events
            .iter()
            .filter(|e| e.event.op == HeapOp::Malloc && callers.caller(&e.event) == "child_work")
            .map(|e| e.event.size)
            .collect();
        assert_eq!(made, (24..124).collect::<Vec<u64>>(), "{}", path.display());
        let left = unfreed(&events);
        assert!(
            !left.iter().any(|e| callers.caller(e) == "child_work"),
            "{}",
            path.display()
        );
    }
    assert_eq!(children, 40);
}

#[test]
fn pthread_key_destructors_that_free_and_malloc_are_traced() {
    let (expt_dir, program, stdout) = fault_run("keys");
    assert_eq!(stdout, "keys: 80 destructor calls\nearly: blocks freed\n");
    let expt = Experiment::open(&expt_dir).expect("open");
    let events = expt.heap_events().expect("heap events");
    let callers = Callers::of_program(&expt, &program);
    assert_eq!(
        count(&events, &callers, HeapOp::Malloc, "keyed"),
        vec![16; 40]
    );
    assert_eq!(
        count(&events, &callers, HeapOp::Malloc, "key_destructor"),
        vec![32; 40]
    );
    // The destructors' frees, after the collector's own destructor has
    // let the thread go, are recorded: nothing of theirs is left.
    let left = unfreed(&events);
    let of_keys: Vec<&HeapEvent> = left
        .iter()
        .filter(|e| ["keyed", "key_destructor"].contains(&callers.caller(e).as_str()))
        .collect();
    assert!(of_keys.is_empty(), "{of_keys:?}");
}

#[test]
fn allocations_before_the_collector_starts_are_freed_as_unknown_blocks() {
    let (expt_dir, program, stdout) = fault_run("early");
    assert_eq!(stdout, "early: blocks freed\n");
    let expt = Experiment::open(&expt_dir).expect("open");
    let events = expt.heap_events().expect("heap events");
    let callers = Callers::of_program(&expt, &program);
    // preinit_array runs before every constructor, the collector's too:
    // its block is not seen made, only freed; the constructor(101)'s are.
    assert!(count(&events, &callers, HeapOp::Malloc, "before_everything").is_empty());
    assert_eq!(
        count(&events, &callers, HeapOp::Malloc, "early_constructor"),
        vec![80; 4]
    );
    let heap = analyzer::heap::HeapState::replay(&events);
    assert!(heap.unknown_frees >= 1, "the preinit block's free");
    assert!(
        !heap
            .blocks()
            .iter()
            .any(|b| callers.caller_of(b.stack_id) == "early_constructor"),
        "the constructor's blocks are freed"
    );
}

#[test]
fn showleaks_lists_the_leaks_new_since_the_last_one_and_all_with_a() {
    let dir = scratch_dir("showleaks-new");
    let out = Rdbx::batch()
        .cwd(&dir)
        .cmds(&[
            "collector heaptrace on",
            "collector enable",
            "stop in checkpoint",
            "stop in later_checkpoint",
            "run",
            "showleaks -json",
            "showleaks -json",
            "showleaks",
            "cont",
            "showleaks -json",
            "showleaks -a",
            "showleaks -a -json",
        ])
        .prog(&leaks_program(), &[])
        .run();
    let docs: Vec<serde_json::Value> = out
        .stdout
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).expect("JSON"))
        .collect();
    assert_eq!(docs.len(), 4, "{}", out.transcript());
    // (class, function that made it, bytes) per group listed.
    let listed = |doc: &serde_json::Value| -> Vec<(String, String, u64)> {
        doc["leaks"]
            .as_array()
            .expect("leaks")
            .iter()
            .map(|l| {
                (
                    l["class"].as_str().unwrap_or("").to_string(),
                    l["stack"][0]["function"].as_str().unwrap_or("").to_string(),
                    l["bytes_leaked"].as_u64().unwrap_or(0),
                )
            })
            .collect()
    };
    let group =
        |class: &str, function: &str, bytes: u64| (class.to_string(), function.to_string(), bytes);
    let at_checkpoint = vec![
        group("definitely_lost", "lose_plain", 120),
        group("definitely_lost", "lose_list", 24),
        group("possibly_lost", "keep_interior", 64),
    ];
    assert_eq!(listed(&docs[0]), at_checkpoint);
    assert!(listed(&docs[1]).is_empty(), "nothing new at the same stop");
    // The totals are the heap's, whatever is listed.
    assert_eq!(docs[1]["definitely_lost"], docs[0]["definitely_lost"]);
    let new_later = vec![
        group("definitely_lost", "lose_more", 112),
        group("definitely_lost", "keep_reachable", 100),
    ];
    assert_eq!(listed(&docs[2]), new_later);
    assert_eq!(docs[2]["definitely_lost"]["bytes"], 120 + 24 + 112 + 100);
    let mut all = listed(&docs[3]);
    all.sort();
    let mut expected_all = [at_checkpoint, new_later].concat();
    expected_all.sort();
    assert_eq!(all, expected_all);
    assert_eq!(docs[3]["all"], true);
    // The text report says what it lists.
    let notes = out
        .stdout
        .matches("(new since the last showleaks; showleaks -a lists them all)")
        .count();
    assert_eq!(notes, 1, "{}", out.transcript());
    out.assert_out_contains("Actual leaks report    (actual leaks: 0  total size: 0 bytes)");
    out.assert_out_contains("Actual leaks report    (actual leaks: 7  total size: 356 bytes)");
}
