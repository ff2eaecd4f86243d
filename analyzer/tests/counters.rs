//! Counter overflow profiling (the `counters` file) in the views: each
//! counter a metric named as the counter, exclusive at the leaf of its
//! records' stacks and inclusive up them, in every listing, text and JSON;
//! CPI and IPC from a cycles and an instructions counter; the note on
//! counts scaled for multiplexing; the error for a counter the experiments
//! do not have.

mod common;

use analyzer::{Analysis, Outcome};
use common::*;
use experiment::counters::{CounterEvent, CounterSpec, FLAG_SCALED};
use serde_json::{json, Value as Json};
use std::path::{Path, PathBuf};

/// perf's generic hardware events, as the launcher resolves `cycles` and
/// `insts`.
fn hardware(name: &str, config: u64) -> CounterSpec {
    CounterSpec {
        name: name.to_string(),
        kind: 0,
        config,
        config1: 0,
        config2: 0,
        interval: 1000,
        data_address: false,
    }
}

fn record(ms: u64, counter: u16, count: u64) -> CounterEvent {
    CounterEvent {
        time_ns: START + ms * 1_000_000,
        counter,
        count,
        ..CounterEvent::default()
    }
}

/// Counter 0 `cycles` and counter 1 `insts` on these stacks (thread 1 =
/// tid 700, thread 2 = tid 701), and one clock tick in A:
///
/// | stack        | thread | cycles | insts |
/// |--------------|--------|--------|-------|
/// | C A main     | 1      | 3000   | 1000  |
/// | C B main     | 1      | 5000   | 5000  |
/// | A main       | 1      | 2000   | 4000  |
/// | main         | 2      | 1000   |       |
///
/// So cycles: C 8000/8000 (exclusive/inclusive), A 2000/5000, B 0/5000,
/// main 1000/11000; insts: C 6000/6000, A 4000/5000, B 0/5000, main
/// 0/10000.
fn two_counters(tmp: &Path) -> PathBuf {
    let (_, syms, mut expt) = seed_synthetic(tmp, "hwc.er");
    expt.thread(START + 2, 701);
    expt.counter(START + 3, 0, &hardware("cycles", 0));
    expt.counter(START + 4, 1, &hardware("insts", 1));
    expt.event(tick(
        START + 50_000_000,
        700,
        stack_of(&syms, &["A", "main"]),
    ));
    let records: [(u32, u16, u64, &[&str]); 7] = [
        (700, 0, 3000, &["C", "A", "main"]),
        (700, 1, 1000, &["C", "A", "main"]),
        (700, 0, 5000, &["C", "B", "main"]),
        (700, 1, 5000, &["C", "B", "main"]),
        (700, 0, 2000, &["A", "main"]),
        (700, 1, 4000, &["A", "main"]),
        (701, 0, 1000, &["main"]),
    ];
    for (i, (tid, counter, count, names)) in records.into_iter().enumerate() {
        let event = record(i as u64 + 1, counter, count);
        expt.counter_event(tid, event, stack_of(&syms, names));
    }
    expt.write()
}

fn row<'a>(doc: &'a Json, name: &str) -> &'a Json {
    named(doc, "rows", name)
}

/// (exclusive, inclusive) of metric `key` in a JSON row.
fn pair(row: &Json, key: &str) -> (Json, Json) {
    (row[key]["exclusive"].clone(), row[key]["inclusive"].clone())
}

fn error_of(analysis: &mut Analysis, line: &str) -> String {
    match analysis.run_line(line) {
        Err(e) => e,
        other => panic!("{line}: {other:?}"),
    }
}

#[test]
fn counters_are_exclusive_and_inclusive_metrics_by_their_names() {
    let tmp = TempDir::new("counters-functions");
    let mut analysis = Analysis::open(&[two_counters(&tmp.0)]).expect("open");
    let metrics = run(&mut analysis, "metrics");
    assert!(
        metrics
            .contains("e.%totalcpu:i.%totalcpu:e.cycles:i.cycles:e.insts:i.insts:e.cpi:i.cpi:name"),
        "{metrics}"
    );
    let doc = run_json(&mut analysis, "functions");
    let expected = [
        ("C", (8000, 8000), (6000, 6000)),
        ("A", (2000, 5000), (4000, 5000)),
        ("B", (0, 5000), (0, 5000)),
        ("main", (1000, 11000), (0, 10000)),
        ("<Total>", (11000, 11000), (10000, 10000)),
    ];
    for (name, cycles, insts) in expected {
        let r = row(&doc, name);
        assert_eq!(
            pair(r, "cycles"),
            (json!(cycles.0), json!(cycles.1)),
            "{name}"
        );
        assert_eq!(pair(r, "insts"), (json!(insts.0), json!(insts.1)), "{name}");
    }
    assert_eq!(doc["total"]["cycles"], 11000);
    assert_eq!(doc["total"]["insts"], 10000);
    // CPI = cycles / instructions, IPC its inverse, per function.
    let c = row(&doc, "C");
    assert_eq!(c["cpi"]["exclusive"].as_f64().unwrap(), 8000.0 / 6000.0);
    assert_eq!(row(&doc, "A")["cpi"]["exclusive"], 0.5);
    assert_eq!(row(&doc, "A")["ipc"]["inclusive"], 1.0);
    assert_eq!(row(&doc, "main")["ipc"]["inclusive"], 10000.0 / 11000.0);
    // No instructions: no ratio.
    assert_eq!(row(&doc, "main")["cpi"]["exclusive"], Json::Null);

    let text = run(&mut analysis, "functions");
    for heading in ["Excl. cycles", "Incl. insts", "Excl. CPI", "ratio"] {
        assert!(text.contains(heading), "{heading} in\n{text}");
    }
    // Total CPU (4 columns), cycles, cycles, insts, insts, CPI, CPI, name.
    let c_row: Vec<&str> = text
        .lines()
        .find(|l| l.ends_with(" C"))
        .expect("C row")
        .split_whitespace()
        .collect();
    assert_eq!(
        c_row[4..],
        ["8000", "8000", "6000", "6000", "1.333", "1.333", "C"]
    );
    let main_row: Vec<&str> = text
        .lines()
        .find(|l| l.ends_with(" main"))
        .unwrap()
        .split_whitespace()
        .collect();
    assert_eq!(
        main_row[4..],
        ["1000", "11000", "0", "10000", "-", "1.100", "main"]
    );

    // Sorted by a counter, by CPI.
    run(&mut analysis, "sort e.cycles");
    let text = run(&mut analysis, "functions");
    assert!(text.starts_with("Functions sorted by metric: Excl. cycles\n"));
    let first = text.lines().skip_while(|l| !l.contains("<Total>")).nth(1);
    assert!(first.unwrap().ends_with(" C"), "{text}");
    run(&mut analysis, "sort i.cpi");
    let doc = run_json(&mut analysis, "functions");
    assert_eq!(doc["sort"], "i.cpi");
    let order: Vec<&str> = doc["rows"]
        .as_array()
        .unwrap()
        .iter()
        .skip(1)
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    // Inclusive CPI: C 1.333, main 1.1, A and B 1.0.
    assert_eq!(order[..2], ["C", "main"], "{order:?}");

    // Only the chosen metrics: a counter by name, with its events.
    run(&mut analysis, "metrics i.%insts:e+cycles:name");
    let text = run(&mut analysis, "functions");
    let total: Vec<&str> = text
        .lines()
        .find(|l| l.ends_with("<Total>"))
        .unwrap()
        .split_whitespace()
        .collect();
    assert_eq!(total, ["10000", "100.00", "11000", "<Total>"], "{text}");
}

#[test]
fn counters_show_in_every_view() {
    let tmp = TempDir::new("counters-views");
    let mut analysis = Analysis::open(&[two_counters(&tmp.0)]).expect("open");
    run(&mut analysis, "sort e.cycles");

    // Callers-callees: attributed along the call edges.
    let cc = run_json(&mut analysis, "csingle C");
    let attributed =
        |list: &str, name: &str| named(&cc, list, name)["cycles"]["attributed"].clone();
    assert_eq!(
        (attributed("callers", "A"), attributed("callers", "B")),
        (json!(3000), json!(5000))
    );
    assert_eq!(pair(&cc, "insts"), (json!(6000), json!(6000)));
    let text = run(&mut analysis, "csingle C");
    assert!(text.contains("inclusive cycles 8000 (72.73%)"), "{text}");
    let all = run_json(&mut analysis, "callers-callees");
    assert!(all["functions"].as_array().unwrap().len() >= 4);

    // The call tree: main > A > C holds C's cycles under A.
    let tree = run_json(&mut analysis, "calltree");
    let child = |node: &Json, name: &str| -> Json { named(node, "children", name).clone() };
    let main = child(&tree["root"], "main");
    assert_eq!(pair(&main, "cycles"), (json!(1000), json!(11000)));
    let a = child(&main, "A");
    assert_eq!(pair(&child(&a, "C"), "cycles"), (json!(3000), json!(3000)));
    assert_eq!(pair(&a, "insts"), (json!(4000), json!(5000)));
    let text = run(&mut analysis, "calltree");
    assert!(text.contains("Incl. cycles"), "{text}");

    // Objects, lines and PCs: every record's events, once.
    let objects = run_json(&mut analysis, "objects");
    let exe = objects["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "seed")
        .unwrap()
        .clone();
    assert_eq!(pair(&exe, "cycles"), (json!(11000), json!(11000)));
    for listing in ["lines", "pcs"] {
        let doc = run_json(&mut analysis, listing);
        let rows = doc["rows"].as_array().unwrap();
        let exclusive: u64 = rows
            .iter()
            .skip(1)
            .map(|r| r["cycles"]["exclusive"].as_u64().unwrap())
            .sum();
        assert_eq!(exclusive, 11000, "{listing}");
    }

    // Source and disassembly of C: its 8000 cycles at its line (the hot
    // one by the sort metric) and instructions.
    let source = run_json(&mut analysis, "source C");
    let line_of_c = source["lines"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["text"].as_str().unwrap().starts_with("void C("))
        .unwrap();
    assert_eq!(pair(line_of_c, "cycles"), (json!(8000), json!(8000)));
    assert_eq!(line_of_c["hot"], true);
    assert!(run(&mut analysis, "source C").contains("cycles"));
    let disasm = run_json(&mut analysis, "disasm C");
    let at_instructions: u64 = disasm["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["kind"] == "instruction")
        .map(|r| r["insts"]["exclusive"].as_u64().unwrap())
        .sum();
    assert_eq!(at_instructions, 6000);

    // Flame graphs of a counter; none of a ratio.
    let folded = tmp.0.join("cycles.txt");
    run(&mut analysis, &format!("collapsed {}", folded.display()));
    let text = std::fs::read_to_string(&folded).unwrap();
    assert!(text.lines().any(|l| l == "main;B;C 5000"), "{text}");
    assert!(text.lines().any(|l| l == "main 1000"), "{text}");
    run(&mut analysis, "sort e.cpi");
    let refused = error_of(&mut analysis, &format!("collapsed {}", folded.display()));
    assert!(refused.contains("cpi is a ratio"), "{refused}");
    run(&mut analysis, "sort e.cycles");

    // Selections apply to counter records as to events: thread 1 only.
    run(&mut analysis, "thread_select 1");
    let doc = run_json(&mut analysis, "functions");
    assert_eq!(doc["total"]["cycles"], 10000);
    assert_eq!(pair(row(&doc, "main"), "cycles"), (json!(0), json!(10000)));
    run(&mut analysis, "thread_select all");
    run(&mut analysis, "filters time < 0.0035");
    assert_eq!(
        run_json(&mut analysis, "functions")["total"]["cycles"],
        3000 + 5000
    );
}

#[test]
fn header_and_overview_list_the_counters() {
    let tmp = TempDir::new("counters-header");
    let mut analysis = Analysis::open(&[two_counters(&tmp.0)]).expect("open");
    let header = run(&mut analysis, "header");
    assert!(
        header.contains("  Counters:         cycles every 1000 events, insts every 1000 events\n"),
        "{header}"
    );
    let doc = run_json(&mut analysis, "header");
    let counters = &doc["experiments"][0]["counters"];
    assert_eq!(counters[1]["name"], "insts");
    assert_eq!(counters[1]["config"], 1);
    assert_eq!(counters[1]["interval"], 1000);
    let overview = run(&mut analysis, "overview");
    assert!(
        overview
            .contains("Counters:           cycles every 1000 events; insts every 1000 events\n"),
        "{overview}"
    );
    assert!(
        overview.contains("cycles, insts, CPI (cpi), IPC (ipc)"),
        "{overview}"
    );
    assert!(
        overview.contains("cycles:             11000 events"),
        "{overview}"
    );
    let doc = run_json(&mut analysis, "overview");
    assert_eq!(doc["counters"][0]["events"], 11000);
    assert_eq!(
        doc["metrics"],
        json!(["totalcpu", "cycles", "insts", "cpi", "ipc"])
    );
}

/// A multiplexed counter's counts were scaled: every view says so once,
/// text and JSON. A counter named like a listing's own key gets a prefixed
/// JSON key.
#[test]
fn scaled_counts_are_noted_once() {
    let tmp = TempDir::new("counters-scaled");
    let (_, syms, mut expt) = seed_synthetic(&tmp.0, "scaled.er");
    let faults = CounterSpec {
        name: "page-faults".to_string(),
        kind: 1,
        config: 2,
        config1: 0,
        config2: 0,
        interval: 1,
        data_address: true,
    };
    expt.counter(START + 2, 0, &faults);
    expt.counter(
        START + 3,
        1,
        &CounterSpec {
            name: "Name".to_string(),
            ..hardware("Name", 0)
        },
    );
    expt.event(tick(
        START + 50_000_000,
        700,
        stack_of(&syms, &["A", "main"]),
    ));
    let scaled = CounterEvent {
        flags: FLAG_SCALED,
        ..record(1, 0, 7)
    };
    expt.counter_event(700, scaled, stack_of(&syms, &["C", "A", "main"]));
    expt.counter_event(700, record(2, 0, 3), stack_of(&syms, &["B", "main"]));
    expt.counter_event(700, record(3, 1, 40), stack_of(&syms, &["B", "main"]));
    let mut analysis = Analysis::open(&[expt.write()]).expect("open");
    let note = "Note: counts of page-faults were scaled for multiplexing\n";
    for view in [
        "functions",
        "lines",
        "calltree",
        "callers-callees",
        "csingle C",
        "source C",
    ] {
        let text = run(&mut analysis, view);
        assert_eq!(text.matches(note).count(), 1, "{view}:\n{text}");
    }
    let doc = run_json(&mut analysis, "functions");
    assert_eq!(
        doc["notes"],
        json!(["counts of page-faults were scaled for multiplexing"])
    );
    assert_eq!(
        pair(row(&doc, "main"), "page_faults"),
        (json!(0), json!(10))
    );
    assert_eq!(pair(row(&doc, "B"), "counter_name"), (json!(40), json!(40)));
    assert_eq!(row(&doc, "B")["name"], "B");
    assert!(run(&mut analysis, "header")
        .contains("page-faults every 1 events, with data addresses, scaled for multiplexing"));
    assert_eq!(
        run_json(&mut analysis, "header")["experiments"][0]["counters"][0]["scaled"],
        true
    );
    // Not CPI: a counter with config 0 but named Name makes cycles, no
    // instructions counter.
    let refused = error_of(&mut analysis, "metrics e.cpi:name");
    assert!(
        refused.contains("cpi needs a cycles counter and an instructions counter"),
        "{refused}"
    );
}

#[test]
fn an_unknown_counter_is_a_one_line_error_naming_the_counters() {
    let tmp = TempDir::new("counters-unknown");
    let mut analysis = Analysis::open(&[two_counters(&tmp.0)]).expect("open");
    let before = run(&mut analysis, "metrics");
    for line in ["metrics e.bogus:name", "sort i.bogus"] {
        let e = error_of(&mut analysis, line);
        assert_eq!(
            e, "no metric or counter \"bogus\"; the experiments' counters: cycles, insts",
            "{line}"
        );
    }
    assert_eq!(run(&mut analysis, "metrics"), before, "nothing changed");
    // `einsts` is kinds e and i of `nsts`: the error says how to write it.
    let e = error_of(&mut analysis, "metrics einsts");
    assert!(e.contains("follows a \".\": e.insts"), "{e}");
    assert!(!e.contains('\n'));
    // A name without flags is no counter: the parser says so.
    let e = error_of(&mut analysis, "metrics cycles");
    assert!(e.contains("unknown metric \"cycles\""), "{e}");

    // An experiment without counters.
    let (exe, syms) = compile("seed", &tmp.0, &["-O0", "-g"]);
    let mut plain = Synthetic::new(&tmp.0, "plain.er", &exe, 800);
    plain.event(tick(
        START + 1_000_000,
        800,
        stack_of(&syms, &["A", "main"]),
    ));
    let mut analysis = Analysis::open(&[plain.write()]).expect("open");
    assert_eq!(
        error_of(&mut analysis, "metrics e.cycles"),
        "no metric or counter \"cycles\"; the experiments recorded no counters"
    );
    assert!(matches!(
        analysis.run_line("metrics"),
        Ok(Outcome::Output(text)) if text == "current metrics: e.%totalcpu:i.%totalcpu:name\n"
    ));
}

/// A counter named like a built-in metric (`cpu` is Total CPU Time's
/// alias, `async` reads as kinds `a` of `sync`) is spelled `counter_NAME`:
/// the default list and `metrics` show it so, that spelling chooses it and
/// sorts by it, and the plain name still means the built-in metric.
#[test]
fn a_counter_named_like_a_built_in_metric_is_chosen_with_its_prefix() {
    let tmp = TempDir::new("counters-clash");
    let (_, syms, mut expt) = seed_synthetic(&tmp.0, "clash.er");
    let software = |name: &str, config| CounterSpec {
        kind: 1,
        ..hardware(name, config)
    };
    expt.counter(START + 3, 0, &software("cpu", 0));
    expt.counter(START + 4, 1, &software("async", 2));
    // Two clock ticks in A; the counters' records in C and B.
    for ms in [10, 20] {
        expt.event(tick(
            START + ms * 1_000_000,
            700,
            stack_of(&syms, &["A", "main"]),
        ));
    }
    expt.counter_event(
        700,
        record(30, 0, 7000),
        stack_of(&syms, &["C", "A", "main"]),
    );
    expt.counter_event(700, record(31, 1, 300), stack_of(&syms, &["B", "main"]));
    let mut analysis = Analysis::open(&[expt.write()]).expect("open");
    let metrics = run(&mut analysis, "metrics");
    assert!(
        metrics.contains(
            "e.%totalcpu:i.%totalcpu:e.counter_cpu:i.counter_cpu:e.counter_async:\
             i.counter_async:name"
        ),
        "{metrics}"
    );
    let listed = metrics
        .trim()
        .trim_start_matches("current metrics: ")
        .to_string();
    run(&mut analysis, &format!("metrics {listed}"));
    assert_eq!(
        run(&mut analysis, "metrics"),
        metrics,
        "the list reads back"
    );

    run(
        &mut analysis,
        "metrics e.counter_cpu:e.cpu:e.counter_async:name",
    );
    let text = run(&mut analysis, "functions");
    assert!(
        text.contains("Excl. cpu") && text.contains("Excl. Total CPU"),
        "{text}"
    );
    assert!(text.contains("Excl. async"), "{text}");
    let doc = run_json(&mut analysis, "functions");
    assert_eq!(row(&doc, "C")["cpu"]["exclusive"], 7000);
    assert_eq!(row(&doc, "B")["async"]["exclusive"], 300);
    assert_eq!(row(&doc, "A")["exclusive"]["events"], 2, "CPU time");
    run(&mut analysis, "sort e.counter_cpu");
    let doc = run_json(&mut analysis, "functions");
    assert_eq!(doc["sort"], "e.counter_cpu");
    assert_eq!(doc["rows"][1]["name"], "C", "{doc}");
    // The plain names are the built-in metrics'.
    run(&mut analysis, "metrics e.cpu:name");
    assert!(run(&mut analysis, "functions").contains("Excl. Total CPU"));
    let e = error_of(&mut analysis, "metrics e.counter_bogus");
    assert!(e.contains("no metric or counter \"bogus\""), "{e}");
}

/// Counters without data addresses (and no counters at all) have no data
/// objects: the data views say so, and how to get them, in one line.
#[test]
fn data_views_without_data_addresses_say_how_to_get_them() {
    let tmp = TempDir::new("counters-no-addresses");
    let mut with_counters = Analysis::open(&[two_counters(&tmp.0)]).expect("open");
    let (exe, syms) = compile("seed", &tmp.0, &["-O0", "-g"]);
    let mut plain = Synthetic::new(&tmp.0, "plain.er", &exe, 800);
    plain.event(tick(
        START + 1_000_000,
        800,
        stack_of(&syms, &["A", "main"]),
    ));
    let mut without = Analysis::open(&[plain.write()]).expect("open");
    for analysis in [&mut with_counters, &mut without] {
        for line in ["data_objects", "data_single x", "data_layout"] {
            let text = run(analysis, line);
            assert_eq!(text.lines().count(), 1, "{text}");
            assert!(
                text.starts_with("no counter recorded data addresses")
                    && text.contains("-h page-faults,1")
                    && text.contains("collector hwprofile counter page-faults"),
                "{text}"
            );
            let doc = run_json(analysis, line);
            assert_eq!(doc["message"], text.trim_end());
        }
    }
}
