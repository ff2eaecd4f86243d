//! Heap metrics (Allocations, Bytes Allocated, Leaks, Bytes Leaked) in
//! every view of the analysis language, against a program whose
//! allocations are known by construction (tests/programs/heap_known.c):
//! `functions`, `callers-callees`, `calltree`, `lines`, `pcs`, `source`,
//! `disasm`, folded stacks, text and JSON.

mod common;

use common::*;
use serde_json::Value as Json;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// heap_known.c at -O0 without builtins (every call kept as written).
fn heap_known() -> PathBuf {
    prog("heap_known-O0")
}

/// One heap-tracing experiment of heap_known (clock profiling off, so the
/// default metrics are the heap's), shared by the tests.
fn experiment() -> &'static Path {
    static DONE: OnceLock<PathBuf> = OnceLock::new();
    DONE.get_or_init(|| {
        let dir = scratch_dir("heap-views");
        let output = Command::new(rdbx_bin())
            .args([
                "collect", "-H", "on", "-p", "off", "-A", "off", "-o", "t.er",
            ])
            .arg(heap_known())
            .current_dir(&dir)
            .output()
            .expect("run rdbx collect");
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        dir.join("t.er")
    })
}

/// `rdbx analyze` with `commands`: stdout.
fn analyze(json: bool, commands: &[&str]) -> String {
    let mut cmd = Command::new(rdbx_bin());
    cmd.arg("analyze");
    if json {
        cmd.arg("--json");
    }
    for c in commands {
        cmd.args(["-c", c]);
    }
    let output = cmd.arg(experiment()).output().expect("run rdbx analyze");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The document of the last command, with `commands` before it.
fn report(commands: &[&str]) -> Json {
    let all: Json = serde_json::from_str(&analyze(true, commands)).expect("JSON output");
    all.as_array()
        .and_then(|docs| docs.last())
        .cloned()
        .expect("one document per command")
}

const ALL_HEAP: &str = "ei.heapalloccnt:ei.heapallocbytes:ei.heapleakcnt:ei.heapleakbytes:name";

/// (allocations, bytes allocated, leaks, bytes leaked) of `kind` in `row`.
fn heap_of(row: &Json, kind: &str) -> [u64; 4] {
    ["allocations", "bytes_allocated", "leaks", "bytes_leaked"].map(|key| {
        row[key][kind]
            .as_u64()
            .unwrap_or_else(|| panic!("{key} in {row}"))
    })
}

/// The number (from 1) of the one line of `file` that holds `text`.
fn line_containing(file: &str, text: &str) -> u32 {
    let source = std::fs::read_to_string(sources_dir().join(file)).expect("read source");
    let hits: Vec<usize> = source
        .lines()
        .enumerate()
        .filter(|(_, l)| l.contains(text))
        .map(|(i, _)| i + 1)
        .collect();
    assert_eq!(hits.len(), 1, "{text} in {file}");
    hits[0] as u32
}

fn row<'a>(rows: &'a Json, name: &str) -> &'a Json {
    rows.as_array()
        .and_then(|rows| rows.iter().find(|r| r["name"] == name))
        .unwrap_or_else(|| panic!("no row {name} in {rows}"))
}

#[test]
fn functions_carry_the_heap_metrics_known_by_construction() {
    let doc = report(&[&format!("metrics {ALL_HEAP}"), "functions"]);
    let rows = &doc["rows"];
    // make() is the caller of malloc for leaky (10 x 100, kept) and churn
    // (1000 x 64, freed).
    assert_eq!(
        heap_of(row(rows, "make"), "exclusive"),
        [1010, 65000, 10, 1000]
    );
    assert_eq!(
        heap_of(row(rows, "leaky"), "inclusive"),
        [10, 1000, 10, 1000]
    );
    assert_eq!(heap_of(row(rows, "leaky"), "exclusive"), [0, 0, 0, 0]);
    assert_eq!(
        heap_of(row(rows, "churn"), "inclusive"),
        [1000, 64000, 0, 0]
    );
    // calloc(4, 256) then realloc to 4096, freed.
    assert_eq!(heap_of(row(rows, "grow"), "exclusive"), [2, 5120, 0, 0]);
    // realloc(NULL, 24) kept; malloc(40) given back by realloc(p, 0).
    assert_eq!(heap_of(row(rows, "edges"), "exclusive"), [2, 64, 1, 24]);
    // 4 threads x 500 malloc(32), each keeps its last block.
    assert_eq!(
        heap_of(row(rows, "work"), "exclusive"),
        [2000, 64000, 4, 128]
    );
    // <Total> is what `heap` counts.
    let stats = report(&["heap"]);
    let total = &doc["total"];
    for key in ["allocations", "bytes_allocated", "leaks", "bytes_leaked"] {
        assert_eq!(total[key], stats[key], "{key}");
    }
    // The text form: the metric's own headings, sorted by the first.
    let text = analyze(false, &[&format!("metrics {ALL_HEAP}"), "functions"]);
    assert!(text.contains("Excl. Allocations"), "{text}");
    assert!(text.contains("Incl. Bytes Leaked"), "{text}");
    let make = text
        .lines()
        .find(|l| l.ends_with(" make"))
        .expect("make row");
    let numbers: Vec<&str> = make.split_whitespace().collect();
    assert_eq!(&numbers[..4], ["1010", "1010", "65000", "65000"], "{make}");
}

#[test]
fn default_metrics_of_a_heap_experiment_are_gprofngs() {
    let text = analyze(false, &["metrics", "functions"]);
    assert!(
        text.contains(
            "current metrics: i.heapleakbytes:i.heapleakcnt:i.heapallocbytes:i.heapalloccnt:name"
        ),
        "{text}"
    );
    assert!(
        text.contains("Functions sorted by metric: Incl. Bytes Leaked"),
        "{text}"
    );
}

#[test]
fn callers_callees_attribute_allocations_to_each_caller() {
    let doc = report(&[&format!("metrics {ALL_HEAP}"), "csingle make"]);
    let callers = &doc["callers"];
    assert_eq!(
        heap_of(row(callers, "leaky"), "attributed"),
        [10, 1000, 10, 1000]
    );
    assert_eq!(
        heap_of(row(callers, "churn"), "attributed"),
        [1000, 64000, 0, 0]
    );
    assert_eq!(heap_of(&doc, "inclusive"), [1010, 65000, 10, 1000]);
    let text = analyze(false, &["csingle make"]);
    assert!(text.contains("Attr. Bytes Leaked"), "{text}");
    let leaky = text.lines().find(|l| l.ends_with(" leaky")).expect("leaky");
    assert!(leaky.split_whitespace().next() == Some("1000"), "{leaky}");
}

#[test]
fn the_call_tree_holds_the_leaks_on_their_path() {
    let doc = report(&["calltree"]);
    // Depth first to leaky -> make.
    let mut found = None;
    let mut pending = vec![&doc["root"]];
    while let Some(node) = pending.pop() {
        if node["name"] == "leaky" {
            found = Some(node);
        }
        pending.extend(node["children"].as_array().into_iter().flatten());
    }
    let leaky = found.expect("leaky in the call tree");
    assert_eq!(heap_of(leaky, "inclusive"), [10, 1000, 10, 1000]);
    let make = row(&leaky["children"], "make");
    assert_eq!(heap_of(make, "exclusive"), [10, 1000, 10, 1000]);
}

#[test]
fn lines_pcs_source_and_disasm_place_the_allocations() {
    let line = line_containing("heap_known.c", "keep = make(100);");
    let doc = report(&[&format!("metrics {ALL_HEAP}"), "lines"]);
    let at_line = doc["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["line"] == line && r["function"] == "leaky")
        .expect("the line calling make in leaky");
    assert_eq!(heap_of(at_line, "inclusive"), [10, 1000, 10, 1000]);

    let doc = report(&[&format!("metrics {ALL_HEAP}"), "pcs"]);
    let in_make: u64 = doc["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["function"] == "make")
        .map(|r| heap_of(r, "exclusive")[0])
        .sum();
    assert_eq!(in_make, 1010);

    let doc = report(&[&format!("metrics {ALL_HEAP}"), "source leaky"]);
    let source_line = doc["lines"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["line"] == line)
        .expect("the line in the source listing");
    assert_eq!(heap_of(source_line, "inclusive"), [10, 1000, 10, 1000]);
    let text = analyze(false, &[&format!("metrics {ALL_HEAP}"), "source leaky"]);
    assert!(text.contains("Bytes Leaked"), "{text}");

    let doc = report(&[&format!("metrics {ALL_HEAP}"), "disasm make"]);
    let instructions: u64 = doc["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["kind"] == "instruction")
        .map(|r| heap_of(r, "exclusive")[0])
        .sum();
    assert_eq!(instructions, 1010);
}

#[test]
fn folded_stacks_and_flame_graphs_are_of_the_sort_metric() {
    let dir = scratch_dir("heap-views-folded");
    let folded = dir.join("leaks.txt");
    let svg = dir.join("leaks.svg");
    analyze(
        false,
        &[
            "sort i.heapleakbytes",
            &format!("collapsed {}", folded.display()),
            &format!("flamegraph {}", svg.display()),
        ],
    );
    let text = std::fs::read_to_string(&folded).expect("folded stacks");
    let value = |path: &str| -> u64 {
        text.lines()
            .find(|l| l.rsplit_once(' ').is_some_and(|(s, _)| s.ends_with(path)))
            .and_then(|l| l.rsplit_once(' ')?.1.parse().ok())
            .unwrap_or_else(|| panic!("no stack ending {path} in\n{text}"))
    };
    assert_eq!(value("main;leaky;make"), 1000);
    assert_eq!(value(";work"), 128);
    // Freed allocations leak nothing: no churn stack.
    assert!(!text.contains("churn"), "{text}");
    let drawing = std::fs::read_to_string(&svg).expect("flame graph");
    assert!(drawing.contains("Bytes Leaked"), "title names the metric");
    assert!(drawing.contains("leaky"), "leaky is drawn");
}

#[test]
fn at_a_stop_the_views_count_what_is_not_freed_yet() {
    let dir = scratch_dir("heap-views-live");
    let out = Rdbx::batch()
        .cwd(&dir)
        .cmds(&[
            "collector heaptrace on",
            "collector enable",
            "stop in churn",
            "run",
            "analyze metrics i.heapleakcnt:i.heapalloccnt:name",
            "analyze functions",
            "kill",
        ])
        .prog(&heap_known(), &[])
        .run();
    let transcript = out.transcript();
    // Stopped before churn: leaky's ten blocks are all that is made, and
    // none is freed yet.
    let row = |name: &str| -> Vec<String> {
        out.stdout
            .lines()
            .find(|l| l.ends_with(&format!(" {name}")))
            .unwrap_or_else(|| panic!("no {name} row\n{transcript}"))
            .split_whitespace()
            .map(str::to_string)
            .collect()
    };
    assert_eq!(row("leaky")[..2], ["10", "10"], "{transcript}");
    assert_eq!(row("make")[..2], ["10", "10"], "{transcript}");
    let churn_row = out
        .stdout
        .lines()
        .any(|l| l.ends_with(" churn") && l.trim_start().starts_with(|c: char| c.is_ascii_digit()));
    assert!(!churn_row, "churn has made nothing yet\n{transcript}");
}
