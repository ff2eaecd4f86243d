//! The analysis language's commands on synthetic experiments: selections
//! and filters, hidden load objects, name styles, several experiments and
//! descendants, exports, and JSON output of every listing.

mod common;

use analyzer::{Analysis, Outcome};
use common::*;
use serde_json::json;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

const UNIT: u64 = 10_000_000;
const SECOND: u64 = 1_000_000_000;

fn total_units(analysis: &mut Analysis) -> u64 {
    let listing = run_json(analysis, "functions");
    let ns = listing["total"]["ns"].as_u64().unwrap();
    assert_eq!(ns % UNIT, 0);
    ns / UNIT
}

fn units_by_name(analysis: &mut Analysis) -> HashMap<String, (u64, u64)> {
    rows_by_name(&run_json(analysis, "functions"))
        .into_iter()
        .map(|(n, (e, i))| (n, (e / UNIT, i / UNIT)))
        .collect()
}

/// Six events whose weights are powers of two (1, 2, 4, ... 32 units), so
/// a selected total names exactly which events were kept:
///
/// | event | time (s) | thread (tid) | cpu | sample | stack |
/// |-------|----------|--------------|-----|--------|-------|
/// | 1     | 0.5      | 1 (700)      | 0   | 1      | A main |
/// | 2     | 1.0      | 2 (701)      | 1   | 1      | B main |
/// | 4     | 1.2      | 1 (700)      | 1   | 2      | C A main |
/// | 8     | 1.6      | 2 (701)      | 1   | 2      | C B main |
/// | 16    | 2.0      | 2 (701)      | 0   | 2      | B main |
/// | 32    | 2.5      | 1 (700)      | 1   | 3 (open) | A main |
///
/// Samples 1 and 2 are logged at exactly 1.0 s and 2.0 s.
fn selection_experiment(tmp: &Path) -> PathBuf {
    let (_, syms, mut expt) = seed_synthetic(tmp, "sel.er");
    expt.thread(START + 2, 701);
    expt.sample(START + SECOND, 1, "periodic", "", 400_000_000);
    expt.sample(START + 2 * SECOND, 2, "manual", "phase two", 900_000_000);
    let events: [(u64, u32, u16, &[&str]); 6] = [
        (500, 700, 0, &["A", "main"]),
        (1000, 701, 1, &["B", "main"]),
        (1200, 700, 1, &["C", "A", "main"]),
        (1600, 701, 1, &["C", "B", "main"]),
        (2000, 701, 0, &["B", "main"]),
        (2500, 700, 1, &["A", "main"]),
    ];
    for (i, (ms, tid, cpu, names)) in events.into_iter().enumerate() {
        let mut event = tick(START + ms * 1_000_000, tid, stack_of(&syms, names));
        event.cpu = cpu;
        event.weight_ns = (UNIT << i) as u32;
        expt.event(event);
    }
    expt.write()
}

#[test]
fn selections_and_filters_choose_the_events_counted() {
    let tmp = TempDir::new("select");
    let dir = selection_experiment(&tmp.0);
    let mut analysis = Analysis::open(&[dir]).expect("opens");
    assert_eq!(total_units(&mut analysis), 63);
    let cases: [(&str, u64); 15] = [
        ("sample_select 1", 1 + 2),
        ("sample_select 2", 4 + 8 + 16),
        ("sample_select 3", 32),
        ("sample_select 1,3", 1 + 2 + 32),
        ("sample_select 2-3", 4 + 8 + 16 + 32),
        ("sample_select all", 63),
        ("thread_select 2", 2 + 8 + 16),
        ("thread_select 1", 1 + 4 + 32),
        ("thread_select all", 63),
        ("cpu_select 1", 2 + 4 + 8 + 32),
        ("cpu_select 0", 1 + 16),
        ("cpu_select all", 63),
        ("filters time > 1.5", 8 + 16 + 32),
        ("filters thread == 2 && cpu == 1", 2 + 8),
        ("filters none", 63),
    ];
    for (command, expected) in cases {
        run(&mut analysis, command);
        assert_eq!(total_units(&mut analysis), expected, "after {command}");
    }
    // More filter forms.
    for (filter, expected) in [
        ("time >= 1 && time <= 2", 2 + 4 + 8 + 16),
        ("TSTAMP < 1100000000", 1 + 2),
        ("!(sample == 2) || tid == 701", 1 + 2 + 8 + 16 + 32),
        ("THRID == 1 && CPUID == 1", 4 + 32),
        ("experiment == 1 && SAMPLE == 3", 32),
    ] {
        run(&mut analysis, &format!("filters {filter}"));
        assert_eq!(total_units(&mut analysis), expected, "filter {filter}");
    }
    let shown = run(&mut analysis, "filters");
    assert_eq!(shown, "filter: experiment == 1 && sample == 3\n");
    // Selections and the filter combine.
    run(&mut analysis, "filters time > 1");
    run(&mut analysis, "thread_select 1");
    assert_eq!(total_units(&mut analysis), 4 + 32);
    let overview = run_json(&mut analysis, "overview");
    assert_eq!(overview["selected"]["ns"].as_u64(), Some(36 * UNIT));
    assert_eq!(overview["total"]["ns"].as_u64(), Some(63 * UNIT));
    // The metrics follow the selection.
    let f = units_by_name(&mut analysis);
    assert_eq!(f["A"], (32, 36), "{f:?}");
    assert_eq!(f["C"], (4, 4), "{f:?}");
    assert!(!f.contains_key("B"), "{f:?}");
    run(&mut analysis, "filters none");
    run(&mut analysis, "thread_select all");
    assert_eq!(total_units(&mut analysis), 63);
    // Bad lists are refused, the selection unchanged.
    assert!(analysis.run_line("sample_select 3-1").is_err());
    assert!(analysis.run_line("filters time >").is_err());
    assert_eq!(total_units(&mut analysis), 63);
}

#[test]
fn the_lists_show_every_event_and_mark_the_selected_rows() {
    let tmp = TempDir::new("lists");
    let dir = selection_experiment(&tmp.0);
    let mut analysis = Analysis::open(&[dir]).expect("opens");
    run(&mut analysis, "sample_select 2");
    run(&mut analysis, "thread_select 2");
    run(&mut analysis, "cpu_select 1");
    run(&mut analysis, "filters time > 100");

    let samples = run_json(&mut analysis, "sample_list");
    let rows: Vec<(u64, bool, u64, u64, String)> = samples["samples"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["sample"].as_u64().unwrap(),
                r["selected"].as_bool().unwrap(),
                r["cpu"]["events"].as_u64().unwrap(),
                r["cpu"]["ns"].as_u64().unwrap() / UNIT,
                r["cause"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            (1, false, 2, 3, "periodic".to_string()),
            (2, true, 3, 28, "manual".to_string()),
            (3, false, 1, 32, "(open)".to_string()),
        ]
    );
    assert_eq!(samples["samples"][1]["label"], "phase two");
    assert_eq!(samples["samples"][1]["time_seconds"].as_f64(), Some(2.0));
    let text = run(&mut analysis, "sample_list");
    assert_marked(&text, &[false, true, false]);

    let threads = run_json(&mut analysis, "thread_list");
    let rows: Vec<(u64, u64, bool, u64)> = threads["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["thread"].as_u64().unwrap(),
                r["tid"].as_u64().unwrap(),
                r["selected"].as_bool().unwrap(),
                r["cpu"]["ns"].as_u64().unwrap() / UNIT,
            )
        })
        .collect();
    assert_eq!(rows, [(1, 700, false, 37), (2, 701, true, 26)]);
    assert_marked(&run(&mut analysis, "thread_list"), &[false, true]);

    let cpus = run_json(&mut analysis, "cpu_list");
    let rows: Vec<(u64, bool, u64)> = cpus["cpus"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["cpu"].as_u64().unwrap(),
                r["selected"].as_bool().unwrap(),
                r["cpu_time"]["ns"].as_u64().unwrap() / UNIT,
            )
        })
        .collect();
    assert_eq!(rows, [(0, false, 17), (1, true, 46)]);
    assert_marked(&run(&mut analysis, "cpu_list"), &[false, true]);

    // Nothing is selected at all (the filter keeps no event).
    assert_eq!(total_units(&mut analysis), 0);
    // statistics: the process figures of the selected sample (2 minus 1).
    let stats = run_json(&mut analysis, "statistics");
    assert_eq!(stats["user_cpu_seconds"].as_f64(), Some(0.5), "{stats}");
    assert_eq!(stats["minor_faults"].as_u64(), Some(100), "{stats}");
}

/// The data rows of a list (after its header lines) start with `*`
/// exactly when `selected` says.
fn assert_marked(text: &str, selected: &[bool]) {
    let lines: Vec<&str> = text.lines().collect();
    let data = &lines[lines.len() - selected.len()..];
    for (line, &on) in data.iter().zip(selected) {
        assert_eq!(line.starts_with('*'), on, "{line:?} in\n{text}");
    }
}

#[test]
fn hidden_objects_fold_into_one_frame_and_show_all_restores_them() {
    let tmp = TempDir::new("hide");
    let (exe, syms) = compile("seed", &tmp.0, &["-O0", "-g"]);
    let lib = compile_shared("libshow", &tmp.0, &["-O0", "-g"]);
    let lib_syms = text_symbols(&lib);
    let base = 0x7f00_0000_0000u64;
    let (lo, hi) = load_span(&lib);
    let in_lib = |name: &str, leaf: bool| base + lib_syms[name].0 + if leaf { 4 } else { 8 };
    let main_ret = syms["main"].0 + 8;
    let a_ret = syms["A"].0 + 8;
    let stacks: [(Vec<u64>, u32); 3] = [
        (
            vec![
                in_lib("lib_secret", true),
                in_lib("lib_inner", false),
                in_lib("lib_outer", false),
                main_ret,
            ],
            3,
        ),
        (
            vec![
                in_lib("lib_inner", true),
                in_lib("lib_call", false),
                main_ret,
            ],
            1,
        ),
        // A callback: main -> lib_call -> A -> lib_inner.
        (
            vec![
                in_lib("lib_inner", true),
                a_ret,
                in_lib("lib_call", false),
                main_ret,
            ],
            2,
        ),
    ];
    let mut expt = Synthetic::new(&tmp.0, "hide.er", &exe, 700);
    let (elo, ehi) = load_span(&exe);
    expt.object(START + 1, &exe, 0, elo, ehi);
    expt.object(START + 2, &lib, base, base + lo, base + hi);
    let mut ts = START + 1000;
    for (pcs, n) in stacks {
        for _ in 0..n {
            ts += 1000;
            expt.event(tick(ts, 700, pcs.clone()));
        }
    }
    let dir = expt.write();
    let mut analysis = Analysis::open(&[dir]).expect("opens");
    let shown = units_by_name(&mut analysis);
    assert_eq!(shown["lib_secret"], (3, 3), "{shown:?}");
    assert_eq!(shown["lib_inner"], (3, 6), "{shown:?}");

    let said = run(&mut analysis, "object_hide libshow.so");
    assert!(said.contains("libshow.so"), "{said}");
    let hidden = units_by_name(&mut analysis);
    assert_eq!(hidden["<libshow.so>"], (6, 6), "{hidden:?}");
    assert_eq!(hidden["A"], (0, 2), "{hidden:?}");
    assert_eq!(hidden["main"], (0, 6), "{hidden:?}");
    assert!(!hidden.keys().any(|n| n.starts_with("lib_")), "{hidden:?}");
    // Consecutive frames of the library are one call; the callback
    // splits it in two.
    let block = run_json(&mut analysis, "csingle <libshow.so>");
    let mut callers = attributed(&block, "callers");
    callers.sort();
    assert_eq!(
        callers,
        [("A".to_string(), 2 * UNIT), ("main".to_string(), 4 * UNIT)]
    );
    // Taken at the innermost occurrence, always the leaf here.
    assert!(attributed(&block, "callees").is_empty(), "{block}");
    assert_eq!(block["exclusive"]["ns"].as_u64(), Some(6 * UNIT));
    // Written as it is made (rdbx analyze), the call tree's text is what
    // the command returns whole.
    run(&mut analysis, "format text");
    let whole = run(&mut analysis, "calltree");
    let mut streamed = Vec::new();
    let outcome = analysis.run_line_to("calltree", &mut streamed).unwrap();
    assert_eq!(outcome, Outcome::Output(String::new()));
    assert_eq!(String::from_utf8(streamed).unwrap(), whole);
    assert!(whole.contains("<libshow.so>"), "{whole}");
    let tree = run_json(&mut analysis, "calltree");
    let under_main = &tree["root"]["children"][0]["children"];
    assert_eq!(under_main.as_array().unwrap().len(), 1, "{tree}");
    assert_eq!(under_main[0]["name"], "<libshow.so>");
    let listed = run_json(&mut analysis, "object_list");
    let lib_row = listed["objects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["name"] == "libshow.so")
        .cloned()
        .unwrap();
    assert_eq!(lib_row["shown"], false);
    assert!(run(&mut analysis, "object_list")
        .lines()
        .any(|l| l.starts_with("hidden") && l.contains("libshow.so")));
    // The objects listing is unchanged by hiding.
    let objects = rows_by_name(&run_json(&mut analysis, "objects"));
    assert_eq!(objects["libshow.so"].0, 6 * UNIT, "{objects:?}");

    run(&mut analysis, "object_show all");
    assert_eq!(units_by_name(&mut analysis), shown);
    run(&mut analysis, "object_hide libshow.so");
    run(&mut analysis, "object_show libshow.so");
    assert_eq!(units_by_name(&mut analysis), shown);
    let err = analysis.run_line("object_hide libnothere.so").unwrap_err();
    assert!(err.contains("libnothere.so"), "{err}");
}

#[test]
fn cpp_names_long_short_mangled_and_overload_choices() {
    let tmp = TempDir::new("cpp");
    let (exe, syms) = compile_cpp("names", &tmp.0, &["-O0", "-g"]);
    let (int_sym, double_sym) = ("_ZN4calc5scaleEi", "_ZN4calc5scaleEd");
    let mut expt = Synthetic::new(&tmp.0, "cpp.er", &exe, 700);
    let (lo, hi) = load_span(&exe);
    expt.object(START + 1, &exe, 0, lo, hi);
    let mut ts = START + 1000;
    for (leaf, n) in [(int_sym, 1), (double_sym, 2)] {
        for _ in 0..n {
            ts += 1000;
            expt.event(tick(ts, 700, stack_of(&syms, &[leaf, "main"])));
        }
    }
    let dir = expt.write();
    let mut analysis = Analysis::open(&[dir]).expect("opens");

    let long = units_by_name(&mut analysis);
    assert_eq!(long.get("calc::scale(int)"), Some(&(1, 1)), "{long:?}");
    assert_eq!(long.get("calc::scale(double)"), Some(&(2, 2)), "{long:?}");
    run(&mut analysis, "name mangled");
    let mangled = units_by_name(&mut analysis);
    assert_eq!(mangled.get(int_sym), Some(&(1, 1)), "{mangled:?}");
    assert_eq!(mangled.get(double_sym), Some(&(2, 2)), "{mangled:?}");
    assert!(run(&mut analysis, "functions").contains(double_sym));
    run(&mut analysis, "name short");
    let text = run(&mut analysis, "functions");
    assert!(text.lines().any(|l| l.ends_with(" calc::scale")), "{text}");
    assert!(
        !text.contains("(int)") && !text.contains("(double)"),
        "{text}"
    );
    assert_eq!(run(&mut analysis, "name"), "name: short\n");
    run(&mut analysis, "name long");

    // The overloaded name lists its choices; a number picks one, in
    // address order.
    let choices = run(&mut analysis, "csingle calc::scale");
    assert!(choices.contains("names 2 functions"), "{choices}");
    assert!(choices.contains("1) calc::scale(int)") || choices.contains("1) calc::scale(double)"));
    let second = if syms[int_sym].0 > syms[double_sym].0 {
        ("calc::scale(int)", 1)
    } else {
        ("calc::scale(double)", 2)
    };
    let picked = run_json(&mut analysis, "csingle calc::scale 2");
    assert_eq!(picked["function"], second.0, "{picked}");
    assert_eq!(picked["inclusive"]["ns"].as_u64(), Some(second.1 * UNIT));
    assert!(choices.contains(&format!("2) {}", second.0)), "{choices}");
    // The full name or the mangled one needs no number.
    let exact = run_json(&mut analysis, "csingle calc::scale(double)");
    assert_eq!(exact["callers"][0]["name"], "main");
    let by_linkage = run_json(&mut analysis, &format!("fsingle {int_sym}"));
    assert_eq!(by_linkage["name"], "calc::scale(int)");
    assert!(analysis.run_line("csingle calc::scale 3").is_err());
    let err = analysis.run_line("csingle calc::scal").unwrap_err();
    assert!(
        err.contains("did you mean") && err.contains("calc::scale"),
        "{err}"
    );
    let err = analysis.run_line("fsingle zzzzzz").unwrap_err();
    assert!(err.contains("no function \"zzzzzz\""), "{err}");
}

/// An experiment over seed.c with `n` 10 ms events on `main`, started
/// at `start`, inside `parent`.
fn small(parent: &Path, name: &str, pid: u32, start: u64, lineage: &str, n: u32) -> PathBuf {
    let (exe, syms) = compile("seed", parent, &["-O0", "-g"]);
    let mut expt = Synthetic::started_at(parent, name, &exe, pid, start, lineage);
    let (lo, hi) = load_span(&exe);
    expt.object(start + 1, &exe, 0, lo, hi);
    for i in 0..n {
        let leaf = if i % 2 == 0 { "A" } else { "B" };
        let event = tick(
            start + SECOND / 2 + u64::from(i) * 1000,
            pid,
            stack_of(&syms, &[leaf, "main"]),
        );
        expt.event(event);
    }
    expt.write()
}

#[test]
fn several_experiments_and_descendants_add_up() {
    let tmp = TempDir::new("multi");
    let a = small(&tmp.0, "a.er", 700, START, "", 3);
    let b = small(&tmp.0, "b.er", 800, START, "", 4);
    let mut both = Analysis::open(&[a.clone(), b.clone()]).expect("opens");
    assert_eq!(total_units(&mut both), 7);
    let list = run_json(&mut both, "experiment_list");
    let per: Vec<(u64, u64)> = list["experiments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["pid"].as_u64().unwrap(),
                e["cpu"]["events"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(per, [(700, 3), (800, 4)]);
    run(&mut both, "filters experiment == 2");
    assert_eq!(total_units(&mut both), 4);
    run(&mut both, "filters none");
    // Each experiment numbers its own threads.
    let threads = run_json(&mut both, "thread_list");
    assert_eq!(threads["threads"].as_array().unwrap().len(), 2);
    run(&mut both, "thread_select 1");
    assert_eq!(total_units(&mut both), 7);

    // A descendant inside a founder, started a second after it.
    let founder = small(&tmp.0, "f.er", 900, START, "", 2);
    small(&founder, "_f1.er", 901, START + SECOND, "_f1", 5);
    let mut analysis = Analysis::open(&[founder]).expect("opens");
    assert_eq!(total_units(&mut analysis), 7);
    assert_eq!(
        run_json(&mut analysis, "experiment_list")["experiments"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    // `time` counts from each experiment's own start (the descendant's
    // events are 0.5 s into it).
    run(&mut analysis, "filters time < 1");
    assert_eq!(total_units(&mut analysis), 7);
    run(&mut analysis, "filters none");
    assert_eq!(run(&mut analysis, "en_desc off"), "en_desc: off\n");
    assert_eq!(total_units(&mut analysis), 2);
    assert_eq!(
        run_json(&mut analysis, "experiment_list")["experiments"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    run(&mut analysis, "en_desc on");
    assert_eq!(total_units(&mut analysis), 7);
}

#[test]
fn collapsed_stacks_and_flame_graphs_are_written() {
    let tmp = TempDir::new("export");
    let dir = selection_experiment(&tmp.0);
    let mut analysis = Analysis::open(&[dir]).expect("opens");
    let folded = tmp.0.join("out.folded");
    let said = run(&mut analysis, &format!("collapsed {}", folded.display()));
    assert!(said.starts_with("wrote "), "{said}");
    let text = std::fs::read_to_string(&folded).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines.sort();
    // Microseconds per distinct stack, root first.
    assert_eq!(
        lines,
        [
            "main;A 330000",
            "main;A;C 40000",
            "main;B 180000",
            "main;B;C 80000",
        ]
    );
    // The selection applies.
    run(&mut analysis, "thread_select 2");
    run(&mut analysis, &format!("collapsed {}", folded.display()));
    let text = std::fs::read_to_string(&folded).unwrap();
    assert_eq!(text, "main;B 180000\nmain;B;C 80000\n");
    run(&mut analysis, "thread_select all");

    let svg = tmp.0.join("flame.svg");
    run(&mut analysis, &format!("flamegraph {}", svg.display()));
    let drawn = std::fs::read_to_string(&svg).unwrap();
    assert!(drawn.contains("<svg"), "not an SVG");
    for name in ["main", "A", "B", "C"] {
        assert!(drawn.contains(&format!(">{name}<")) || drawn.contains(&format!("{name} (")));
    }
    // Nothing selected: nothing to draw, said plainly.
    run(&mut analysis, "filters time > 100");
    let err = analysis
        .run_line(&format!("flamegraph {}", svg.display()))
        .unwrap_err();
    assert!(err.contains("no events"), "{err}");
    let err = analysis
        .run_line("collapsed /nonexistent-dir/x.folded")
        .unwrap_err();
    assert!(err.contains("cannot write"), "{err}");
}

#[test]
fn every_listing_parses_as_json() {
    let tmp = TempDir::new("json");
    let dir = selection_experiment(&tmp.0);
    let mut analysis = Analysis::open(&[dir]).expect("opens");
    assert_eq!(
        analysis.run_line("format json"),
        Ok(Outcome::Json(
            serde_json::json!({"report": "format", "message": "format: json"})
        ))
    );
    let commands = [
        ("functions", "functions"),
        ("objects", "load objects"),
        ("lines", "lines"),
        ("pcs", "PCs"),
        ("fsummary", "fsummary"),
        ("fsingle C", ""),
        ("callers-callees", "callers-callees"),
        ("csingle C", "callers-callees"),
        ("calltree", "calltree"),
        ("overview", "overview"),
        ("statistics", "statistics"),
        ("header", "header"),
        ("sample_list", "sample_list"),
        ("thread_list", "thread_list"),
        ("cpu_list", "cpu_list"),
        ("experiment_list", "experiment_list"),
        ("object_list", "object_list"),
    ];
    let mut document = |line: &str| match analysis.run_line(line) {
        Ok(Outcome::Json(value)) => value,
        other => panic!("{line}: {other:?}"),
    };
    for (command, report) in commands {
        let value = document(command);
        if !report.is_empty() {
            assert_eq!(value["report"], report, "{command}: {value}");
        }
    }
    let functions = document("functions");
    assert_eq!(functions["total"]["ns"].as_u64(), Some(63 * UNIT));
    assert_eq!(functions["rows"][0]["name"], "<Total>");
    let fsingle = document("fsingle C");
    assert_eq!(fsingle["inclusive"]["ns"].as_u64(), Some(12 * UNIT));
    let fsummary = document("fsummary");
    assert_eq!(fsummary["functions"].as_array().unwrap().len(), 5);
    let cc = document("callers-callees");
    assert_eq!(cc["functions"].as_array().unwrap().len(), 4);
    // Settings answer with a document too, named after the command.
    assert_eq!(
        document("limit 5"),
        serde_json::json!({"report": "limit", "message": "limit: 5"})
    );
    assert_eq!(document("sort name")["report"], "sort");
    // The answer is in the format in effect after the command.
    assert_eq!(run(&mut analysis, "format text"), "format: text\n");
    // An empty line or a comment shows nothing.
    assert_eq!(
        analysis.run_line("# nothing"),
        Ok(Outcome::Output(String::new()))
    );
    assert!(run(&mut analysis, "functions").contains("<Total>"));
}

/// Thread numbers are dbx's, as the collector wrote them in the
/// `thread-start` lines: not the order of the lines (a thread created
/// second may start running first) nor of the events, with gaps for threads
/// that were not profiled, and the collector's own thread listed as rdbx's.
#[test]
fn thread_numbers_come_from_the_log_not_from_the_order_of_lines() {
    let tmp = TempDir::new("numbers");
    let (_, syms, mut expt) = seed_synthetic(&tmp.0, "n.er");
    let numbered = |expt: &mut Synthetic, ts: u64, event: &str, tid: u64, number: u64| {
        expt.line(|w| {
            w.event(ts, event).u64("tid", tid).u64("number", number);
        });
    };
    // t@3 (tid 703) started before t@2 (tid 702); t@4 was never profiled;
    // t@5 is the collector's watcher; t@6 is tid 706.
    numbered(&mut expt, START + 2, "thread-start", 700, 1);
    numbered(&mut expt, START + 3, "thread-start", 703, 3);
    numbered(&mut expt, START + 4, "thread-start", 702, 2);
    numbered(&mut expt, START + 5, "collector-thread", 705, 5);
    numbered(&mut expt, START + 6, "thread-start", 706, 6);
    // Events of 706 first, then 703, 702, 700: 1, 2, 3, 4 units.
    let mut ts = START + 1000;
    for (tid, count) in [(706, 1), (703, 2), (702, 3), (700, 4)] {
        for _ in 0..count {
            ts += 1000;
            expt.event(tick(ts, tid, stack_of(&syms, &["A", "main"])));
        }
    }
    let mut analysis = Analysis::open(&[expt.write()]).expect("opens");
    let threads = run_json(&mut analysis, "thread_list");
    let rows: Vec<(u64, u64, u64, bool)> = threads["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["thread"].as_u64().unwrap(),
                r["tid"].as_u64().unwrap(),
                r["cpu"]["ns"].as_u64().unwrap() / UNIT,
                r["collector"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            (1, 700, 4, false),
            (2, 702, 3, false),
            (3, 703, 2, false),
            (5, 705, 0, true),
            (6, 706, 1, false),
        ]
    );
    let text = run(&mut analysis, "thread_list");
    assert!(
        text.lines()
            .any(|l| l.contains(" 705 ") && l.ends_with("(rdbx collector)")),
        "{text}"
    );
    // Selections and filters use the same numbers, and tid follows them.
    run(&mut analysis, "thread_select 6");
    assert_eq!(total_units(&mut analysis), 1);
    run(&mut analysis, "thread_select all");
    run(&mut analysis, "filters thread == 3 && tid == 703");
    assert_eq!(total_units(&mut analysis), 2);
}

/// Sync waits (the `sync` file) in the views: Sync Wait Time and Count,
/// exclusive at the caller of the wait, inclusive up the stack, attributed
/// to callers, under their own JSON keys, and the default metrics.
#[test]
fn sync_waits_are_metrics_of_every_view() {
    use experiment::sync::{SyncEvent, SyncOp};
    let tmp = TempDir::new("sync-views");
    let (exe, syms, mut expt) = seed_synthetic(&tmp.0, "sync.er");
    expt.event(tick(
        START + 1_000_000,
        700,
        stack_of(&syms, &["A", "main"]),
    ));
    let waits: [(u64, SyncOp, &[&str]); 3] = [
        (20_000_000, SyncOp::MutexLock, &["C", "A", "main"]),
        (30_000_000, SyncOp::CondWait, &["C", "B", "main"]),
        (5_000_000, SyncOp::Join, &["main"]),
    ];
    // The first two wait on the global queue_lock (at +8 for the second),
    // the join on a thread (an address no symbol holds).
    let lock = data_symbol(&exe, "queue_lock");
    let objects = [lock, lock + 8, 0x5000];
    for (i, (wait_ns, op, names)) in waits.into_iter().enumerate() {
        let event = SyncEvent {
            op,
            start_ns: START + (i as u64 + 2) * 1_000_000,
            wait_ns,
            object: objects[i],
            stack_id: 0,
        };
        expt.wait(700, event, stack_of(&syms, names));
    }
    let path = expt.write();
    let mut analysis = Analysis::open(&[path]).expect("open");
    let metrics = run(&mut analysis, "metrics");
    assert!(
        metrics.contains("e.%totalcpu:i.%totalcpu:i.sync:i.syncn:name"),
        "{metrics}"
    );
    run(&mut analysis, "metrics ei.sync:ei.syncn:name");
    let doc = run_json(&mut analysis, "functions");
    let row = |name: &str| -> (f64, f64, u64, u64) {
        let r = named(&doc, "rows", name);
        (
            r["sync_wait_time"]["exclusive"].as_f64().unwrap(),
            r["sync_wait_time"]["inclusive"].as_f64().unwrap(),
            r["sync_wait_count"]["exclusive"].as_u64().unwrap(),
            r["sync_wait_count"]["inclusive"].as_u64().unwrap(),
        )
    };
    assert_eq!(row("C"), (0.050, 0.050, 2, 2));
    assert_eq!(row("A"), (0.0, 0.020, 0, 1));
    assert_eq!(row("main"), (0.005, 0.055, 1, 3));
    assert_eq!(doc["total"]["sync_wait_count"], 3);
    let text = run(&mut analysis, "functions");
    assert!(text.contains("Excl. Sync Wait Time"), "{text}");
    assert!(
        text.contains("Functions sorted by metric: Excl. Sync Wait Time"),
        "{text}"
    );
    let c = text.lines().find(|l| l.ends_with(" C")).expect("C row");
    assert_eq!(c.split_whitespace().next(), Some("0.050"), "{c}");
    let cc = run_json(&mut analysis, "csingle C");
    let callers = cc["callers"].as_array().unwrap();
    let from = |name: &str| {
        callers.iter().find(|c| c["name"] == name).unwrap()["sync_wait_time"]["attributed"]
            .as_f64()
            .unwrap()
    };
    assert_eq!((from("A"), from("B")), (0.020, 0.030));
    // The flame graph of the sort metric: microseconds waited.
    let folded = tmp.0.join("waits.txt");
    run(&mut analysis, &format!("collapsed {}", folded.display()));
    let text = std::fs::read_to_string(&folded).unwrap();
    assert!(text.lines().any(|l| l == "main;B;C 30000"), "{text}");
    // Per object: named by the symbol that holds it, else by address.
    let objects = run_json(&mut analysis, "syncobjects");
    let rows: Vec<(String, String, f64, u64)> = objects["objects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            (
                o["object"].as_str().unwrap().to_string(),
                o["kind"].as_str().unwrap().to_string(),
                o["sync_wait_time"].as_f64().unwrap(),
                o["sync_wait_count"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            (
                "queue_lock+8".to_string(),
                "cond_wait".to_string(),
                0.030,
                1
            ),
            ("queue_lock".to_string(), "mutex_lock".to_string(), 0.020, 1),
            ("0x5000".to_string(), "join".to_string(), 0.005, 1),
        ]
    );
    assert_eq!(objects["total"]["sync_wait_count"], 3);
    let text = run(&mut analysis, "syncobjects");
    assert!(
        text.lines().any(|l| l.ends_with("mutex_lock  queue_lock")),
        "{text}"
    );
}

/// A join's object is the joined thread's `pthread_t`; a `thread-start`
/// line that gives it names the thread: the last thread with that
/// `pthread_t` to start before the join returned (a `pthread_t` is reused
/// once its thread is joined, and a thread may start after the join
/// began). Without such a line the join keeps its address.
#[test]
fn a_join_is_named_by_the_thread_it_waited_for() {
    use experiment::sync::{SyncEvent, SyncOp};
    let tmp = TempDir::new("sync-joins");
    let (_, syms, mut expt) = seed_synthetic(&tmp.0, "joins.er");
    let ms = |n: u64| START + n * 1_000_000;
    // Threads 2 and 3 have pthread_t 0x7000 one after the other; 4 has
    // 0x8000 and starts 1 ms after the join of it began.
    for (at, tid, number, pthread) in [
        (ms(1), 700, 1, 0x6000),
        (ms(2), 701, 2, 0x7000),
        (ms(20), 702, 3, 0x7000),
        (ms(41), 703, 4, 0x8000),
    ] {
        expt.line(|w| {
            w.event(at, "thread-start")
                .u64("tid", tid)
                .u64("number", number)
                .hex("pthread", pthread);
        });
    }
    let joins = [
        (ms(3), 10, 0x7000),
        (ms(21), 15, 0x7000),
        (ms(40), 5, 0x8000),
        (ms(50), 2, 0x9000),
    ];
    for (start_ns, wait_ms, object) in joins {
        let event = SyncEvent {
            op: SyncOp::Join,
            start_ns,
            wait_ns: wait_ms * 1_000_000,
            object,
            stack_id: 0,
        };
        expt.wait(700, event, stack_of(&syms, &["main"]));
    }
    let mut analysis = Analysis::open(&[expt.write()]).expect("open");
    let objects = run_json(&mut analysis, "syncobjects");
    let rows: Vec<(String, serde_json::Value, serde_json::Value, u64)> = objects["objects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            (
                o["object"].as_str().unwrap().to_string(),
                o["thread"].clone(),
                o["address"].clone(),
                (o["sync_wait_time"].as_f64().unwrap() * 1e3).round() as u64,
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            ("t@3".to_string(), json!(3), json!(0x7000), 15),
            ("t@2".to_string(), json!(2), json!(0x7000), 10),
            ("t@4".to_string(), json!(4), json!(0x8000), 5),
            (
                "0x9000".to_string(),
                serde_json::Value::Null,
                json!(0x9000),
                2
            ),
        ]
    );
    let text = run(&mut analysis, "syncobjects");
    assert!(text.lines().any(|l| l.ends_with("join  t@3")), "{text}");
}

/// The address of data symbol `name` in an ELF file.
fn data_symbol(path: &Path, name: &str) -> u64 {
    use object::{Object, ObjectSymbol};
    let data = std::fs::read(path).unwrap();
    let file = object::File::parse(&*data).unwrap();
    let symbol = file.symbols().find(|s| s.name() == Ok(name));
    symbol.expect("the data symbol").address()
}

/// Traced I/O (the `io` file) in the views: the I/O metrics exclusive at
/// the caller of the call and inclusive up the stack, and gprofng's
/// ioactivity (per file name), iodetail (per opening), iocallstack and
/// iostat, text and JSON.
#[test]
fn io_calls_are_metrics_and_views() {
    use common::IoCall;
    use experiment::io::IoOp;
    let tmp = TempDir::new("io-views");
    let (_, syms, mut expt) = seed_synthetic(&tmp.0, "io.er");
    expt.event(tick(
        START + 1_000_000,
        700,
        stack_of(&syms, &["A", "main"]),
    ));
    let call = |op, fd, at_ms: u64, time_us: u64, bytes, name: &str| IoCall {
        op,
        failed: false,
        fd,
        start_ns: START + at_ms * 1_000_000,
        time_ns: time_us * 1_000,
        bytes,
        aux_fd: -1,
        name: name.as_bytes().to_vec(),
    };
    // /tmp/a: opened by A, written twice by C under A, closed by A; then
    // opened again by B and read by C under B. stdout written by main.
    let calls: Vec<(IoCall, &[&str])> = vec![
        (call(IoOp::Open, 3, 2, 10, 0, "/tmp/a"), &["A", "main"]),
        (call(IoOp::Write, 3, 3, 100, 1000, ""), &["C", "A", "main"]),
        (call(IoOp::Write, 3, 4, 200, 9000, ""), &["C", "A", "main"]),
        (call(IoOp::Close, 3, 5, 5, 0, ""), &["A", "main"]),
        (call(IoOp::Open, 3, 6, 10, 0, "/tmp/a"), &["B", "main"]),
        (call(IoOp::Read, 3, 7, 300, 4000, ""), &["C", "B", "main"]),
        (call(IoOp::Write, 1, 8, 50, 12, ""), &["main"]),
        (
            IoCall {
                failed: true,
                ..call(IoOp::Open, -1, 9, 20, 0, "/missing")
            },
            &["main"],
        ),
    ];
    for (c, names) in calls {
        expt.io_call(700, c, stack_of(&syms, names));
    }
    let path = expt.write();
    let mut analysis = Analysis::open(&[path]).expect("open");
    let metrics = run(&mut analysis, "metrics");
    assert!(
        metrics.contains(
            "e.%totalcpu:i.%totalcpu:i.iotime:i.ioreadbytes:i.iowritebytes:i.ioreadcnt:\
             i.iowritecnt:i.ioothercnt:name"
        ),
        "{metrics}"
    );
    run(
        &mut analysis,
        "metrics ei.iotime:ei.iowritebytes:ei.ioreadcnt:e.ioothercnt:name",
    );
    let doc = run_json(&mut analysis, "functions");
    let row = |name: &str| {
        let r = named(&doc, "rows", name).clone();
        (
            r["io_time"]["inclusive"].as_f64().unwrap(),
            r["write_bytes"]["exclusive"].as_u64().unwrap(),
            r["write_bytes"]["inclusive"].as_u64().unwrap(),
            r["read_count"]["inclusive"].as_u64().unwrap(),
            r["other_io_count"]["exclusive"].as_u64().unwrap(),
        )
    };
    assert_eq!(row("C"), (0.000600, 10000, 10000, 1, 0));
    assert_eq!(row("A"), (0.000315, 0, 10000, 0, 2));
    assert_eq!(row("B"), (0.000310, 0, 0, 1, 1));
    assert_eq!(row("main").2, 10012);
    assert_eq!(doc["total"]["write_count"], 3);
    let text = run(&mut analysis, "functions");
    assert!(text.contains("Excl. I/O Time"), "{text}");

    let activity = run_json(&mut analysis, "ioactivity");
    let file = |name: &str| named(&activity, "files", name).clone();
    let a = file("/tmp/a");
    assert_eq!(
        (
            &a["write_bytes"],
            &a["read_bytes"],
            &a["write_count"],
            &a["other_io_count"]
        ),
        (&json!(10000), &json!(4000), &json!(2), &json!(3))
    );
    assert_eq!(file("<stdout>")["write_bytes"], 12);
    // A failed call is an error only, as in gprofng.
    assert_eq!(file("/missing")["other_io_count"], 0);
    assert_eq!(file("/missing")["io_error_count"], 1);
    assert_eq!(activity["total"]["write_bytes"], 10012);
    assert_eq!(activity["files"][0]["name"], "/tmp/a", "most time first");
    let text = run(&mut analysis, "ioactivity");
    assert!(text.lines().any(|l| l.ends_with(" /tmp/a")), "{text}");

    let detail = run_json(&mut analysis, "iodetail");
    let openings: Vec<_> = detail["files"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["name"] == "/tmp/a")
        .map(|f| {
            (
                f["write_bytes"].as_u64().unwrap(),
                f["read_bytes"].as_u64().unwrap(),
                f["fd"].as_i64().unwrap(),
                f["closed"].is_null(),
            )
        })
        .collect();
    assert_eq!(openings, [(10000, 0, 3, false), (0, 4000, 3, true)]);
    let text = run(&mut analysis, "iodetail");
    assert!(text.contains("/tmp/a (IOVFD="), "{text}");

    let stacks = run_json(&mut analysis, "iocallstack");
    let first = &stacks["stacks"][0];
    // 300 µs each: the one with more calls first.
    assert_eq!(first["frames"], json!(["C", "A", "main"]), "{stacks}");
    assert_eq!(first["write_bytes"], 10000);
    assert_eq!(stacks["stacks"][1]["read_bytes"], 4000);

    let stat = run_json(&mut analysis, "iostat");
    assert_eq!(stat["write"]["calls"], 3);
    assert_eq!(stat["write"]["largest_bytes"], 9000);
    assert_eq!(stat["write"]["smallest_bytes"], 12);
    assert_eq!(stat["read"]["bytes"], 4000);
    assert_eq!(stat["other"]["calls"], 3);
    assert_eq!(stat["error"]["calls"], 1);
    assert_eq!(stat["failed_calls"], 1);
    let text = run(&mut analysis, "iostat");
    assert!(
        text.contains("Write Statistics") && text.contains("1KB - 8KB"),
        "{text}"
    );

    // Selections apply: the calls of thread 2 (none) leave nothing.
    run(&mut analysis, "thread_select 2");
    let empty = run_json(&mut analysis, "ioactivity");
    assert_eq!(empty["total"]["write_bytes"], 0);
}

/// gprofng's per-class I/O times and errors: Read Time, Write Time and
/// Other I/O Time of the calls that did not fail, I/O Error Time and
/// Count of those that did (and nowhere else), a transfer's time its
/// write's; I/O Time is their sum. In the function list, ioactivity,
/// iocallstack and iostat alike.
#[test]
fn io_times_per_class_and_errors() {
    use common::IoCall;
    use experiment::io::IoOp;
    let tmp = TempDir::new("io-classes");
    let (_, syms, mut expt) = seed_synthetic(&tmp.0, "io.er");
    let call = |op, failed, fd, at_ms: u64, time_us: u64, bytes| IoCall {
        op,
        failed,
        fd,
        start_ns: START + at_ms * 1_000_000,
        time_ns: time_us * 1_000,
        bytes,
        aux_fd: -1,
        name: Vec::new(),
    };
    let open = |fd, at_ms, time_us, path: &str| IoCall {
        name: path.as_bytes().to_vec(),
        ..call(IoOp::Open, fd < 0, fd, at_ms, time_us, 0)
    };
    // A reads /in and fails a read of a descriptor never opened; B writes
    // /out, fails a write to a read-only /in and syncs; C copies /in to
    // /out with sendfile; main fails to open /missing.
    let calls: Vec<(IoCall, &[&str])> = vec![
        (open(3, 2, 10, "/in"), &["A", "main"]),
        (open(4, 3, 20, "/out"), &["B", "main"]),
        (call(IoOp::Read, false, 3, 4, 100, 512), &["A", "main"]),
        (call(IoOp::Read, true, 9, 5, 30, 0), &["A", "main"]),
        (call(IoOp::Write, false, 4, 6, 200, 256), &["B", "main"]),
        (call(IoOp::Write, true, 3, 7, 7, 0), &["B", "main"]),
        (call(IoOp::Sync, false, 4, 8, 50, 0), &["B", "main"]),
        (
            IoCall {
                aux_fd: 3,
                ..call(IoOp::Transfer, false, 4, 9, 80, 64)
            },
            &["C", "main"],
        ),
        (open(-1, 10, 40, "/missing"), &["main"]),
    ];
    for (c, names) in calls {
        expt.io_call(700, c, stack_of(&syms, names));
    }
    let path = expt.write();
    let mut analysis = Analysis::open(&[path]).expect("open");
    run(
        &mut analysis,
        "metrics e.ioreadtime:e.iowritetime:e.ioothertime:e.ioerrortime:e.ioerrorcnt:\
         i.iotime:e.ioreadcnt:e.iowritecnt:name",
    );
    let doc = run_json(&mut analysis, "functions");
    let micros = |v: &serde_json::Value| (v.as_f64().unwrap() * 1e6).round() as u64;
    let row = |name: &str| {
        let r = named(&doc, "rows", name).clone();
        (
            [
                micros(&r["read_time"]["exclusive"]),
                micros(&r["write_time"]["exclusive"]),
                micros(&r["other_io_time"]["exclusive"]),
                micros(&r["io_error_time"]["exclusive"]),
            ],
            [
                r["io_error_count"]["exclusive"].as_u64().unwrap(),
                r["read_count"]["exclusive"].as_u64().unwrap(),
                r["write_count"]["exclusive"].as_u64().unwrap(),
            ],
        )
    };
    // [read, write, other, error] µs; [errors, reads, writes].
    assert_eq!(row("A"), ([100, 0, 10, 30], [1, 1, 0]));
    assert_eq!(row("B"), ([0, 200, 70, 7], [1, 0, 1]));
    assert_eq!(row("C"), ([0, 80, 0, 0], [0, 1, 1]), "a transfer");
    assert_eq!(row("main"), ([0, 0, 0, 40], [1, 0, 0]));
    let total = &doc["total"];
    assert_eq!(micros(&total["io_time"]), 537);
    assert_eq!(total["io_error_count"], 3);
    let text = run(&mut analysis, "functions");
    for heading in [
        "Read Time",
        "Write Time",
        "Other I/O Time",
        "I/O Error Time",
    ] {
        assert!(text.contains(&format!("Excl. {heading}")), "{text}");
    }
    // Every I/O metric is in every row's JSON, whatever the list shows.
    run(&mut analysis, "metrics i.iotime:name");
    let doc = run_json(&mut analysis, "csingle main");
    assert!(doc.to_string().contains("\"io_error_time\""), "{doc}");

    let activity = run_json(&mut analysis, "ioactivity");
    let file = |name: &str| named(&activity, "files", name).clone();
    let times = |f: &serde_json::Value| {
        [
            micros(&f["read_time"]),
            micros(&f["write_time"]),
            micros(&f["other_io_time"]),
            micros(&f["io_error_time"]),
            f["io_error_count"].as_u64().unwrap(),
        ]
    };
    // The failed write was to /in; the transfer read /in (no time) and
    // wrote /out; the read of descriptor 9 is its own.
    assert_eq!(times(&file("/in")), [100, 0, 10, 7, 1]);
    assert_eq!(times(&file("/out")), [0, 280, 70, 0, 0]);
    assert_eq!(times(&file("<fd 9>")), [0, 0, 0, 30, 1]);
    assert_eq!(times(&file("/missing")), [0, 0, 0, 40, 1]);
    assert_eq!(file("/in")["read_count"], 2);
    let text = run(&mut analysis, "ioactivity");
    assert!(text.contains("I/O Error"), "{text}");

    let stacks = run_json(&mut analysis, "iocallstack");
    let errors: u64 = stacks["stacks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["io_error_count"].as_u64().unwrap())
        .sum();
    assert_eq!(errors, 3);

    let stat = run_json(&mut analysis, "iostat");
    assert_eq!(
        (&stat["read"]["calls"], &stat["write"]["calls"]),
        (&json!(2), &json!(2))
    );
    assert_eq!(
        micros(&stat["read"]["io_time"]),
        100,
        "the transfer's is the write's"
    );
    assert_eq!(micros(&stat["write"]["io_time"]), 280);
    assert_eq!(micros(&stat["other"]["io_time"]), 80);
    assert_eq!(stat["error"]["calls"], 3);
    assert_eq!(micros(&stat["error"]["io_time"]), 77);
    let text = run(&mut analysis, "iostat");
    assert!(text.contains("I/O Error Statistics"), "{text}");
}

/// Off-CPU records in the views: Off-CPU Time at the stack where the thread
/// was switched out, and Wall Time = Total CPU Time + Off-CPU Time.
#[test]
fn off_cpu_time_and_wall_time() {
    use experiment::offcpu::OffCpuEvent;
    let tmp = TempDir::new("offcpu-views");
    let (_, syms, mut expt) = seed_synthetic(&tmp.0, "offcpu.er");
    // 3 units of CPU in A (tick() weighs UNIT each).
    for i in 0..3 {
        expt.event(tick(
            START + (i + 1) * 1_000_000,
            700,
            stack_of(&syms, &["A", "main"]),
        ));
    }
    let off = |end_ms: u64, off_ms: u64| OffCpuEvent {
        end_ns: START + end_ms * 1_000_000,
        off_ns: off_ms * 1_000_000,
        stack_id: 0,
    };
    expt.off_cpu(700, off(50, 40), stack_of(&syms, &["C", "B", "main"]));
    expt.off_cpu(700, off(80, 20), stack_of(&syms, &["A", "main"]));
    let path = expt.write();
    let mut analysis = Analysis::open(&[path]).expect("open");
    let metrics = run(&mut analysis, "metrics");
    assert!(
        metrics.contains("e.%totalcpu:i.%totalcpu:i.offcpu:i.walltime:name"),
        "{metrics}"
    );
    let doc = run_json(&mut analysis, "functions");
    let row = |name: &str| {
        let r = named(&doc, "rows", name).clone();
        (
            r["off_cpu_time"]["inclusive"].as_f64().unwrap(),
            r["wall_time"]["inclusive"].as_f64().unwrap(),
        )
    };
    let unit = UNIT as f64 / 1e9;
    assert_eq!(row("B"), (0.040, 0.040));
    assert_eq!(row("A"), (0.020, 0.020 + 3.0 * unit));
    assert_eq!(row("main"), (0.060, 0.060 + 3.0 * unit));
    run(&mut analysis, "sort i.walltime");
    let text = run(&mut analysis, "functions");
    assert!(text.contains("Incl. Wall Time"), "{text}");
}
