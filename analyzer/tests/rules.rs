//! The analyzer's metric rules (the manual's "Understanding the Performance Analyzer and Its Data" and "How Metrics Are Assigned to Program Structure"), checked through the
//! analysis language on synthetic experiments over real compiled code:
//! recursion, `<Truncated-stack>`, `<Unknown>`, `<static>@0x...`, PLT
//! stubs, aliases and inlined functions.

mod common;

use analyzer::Analysis;
use common::*;
use experiment::layout::StackStatus;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

const UNIT: u64 = 10_000_000;

/// Writes experiment `NAME.er` over `exe` (mapped at its link-time
/// addresses) with one 10 ms event per stack given, `count` times each.
fn experiment(tmp: &Path, name: &str, exe: &Path, stacks: &[(Vec<u64>, u32)]) -> PathBuf {
    experiment_with(tmp, name, exe, stacks, |_| {})
}

fn experiment_with(
    tmp: &Path,
    name: &str,
    exe: &Path,
    stacks: &[(Vec<u64>, u32)],
    more: impl FnOnce(&mut Synthetic),
) -> PathBuf {
    let mut expt = Synthetic::new(tmp, name, exe, 700);
    let (lo, hi) = load_span(exe);
    expt.object(1_000_000_001, exe, 0, lo, hi);
    more(&mut expt);
    let mut ts = 1_000_001_000;
    for (pcs, count) in stacks {
        for _ in 0..*count {
            ts += 1_000;
            expt.event(tick(ts, 700, pcs.clone()));
        }
    }
    expt.write()
}

fn units(ns: u64) -> u64 {
    assert_eq!(ns % UNIT, 0, "{ns} ns is not whole units");
    ns / UNIT
}

/// name -> (exclusive, inclusive) in units, from `functions` as JSON.
fn functions(analysis: &mut Analysis) -> HashMap<String, (u64, u64)> {
    rows_by_name(&run_json(analysis, "functions"))
        .into_iter()
        .map(|(n, (e, i))| (n, (units(e), units(i))))
        .collect()
}

/// (exclusive, inclusive, callers, callees) of `csingle NAME`, in units.
type Attributed = Vec<(String, u64)>;
fn csingle(analysis: &mut Analysis, name: &str) -> (u64, u64, Attributed, Attributed) {
    let block = run_json(analysis, &format!("csingle {name}"));
    let in_units = |list: Vec<(String, u64)>| -> Vec<(String, u64)> {
        let mut list: Vec<(String, u64)> = list.into_iter().map(|(n, ns)| (n, units(ns))).collect();
        // Equal values are listed in no particular order: compare by name.
        list.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        list
    };
    (
        units(block["exclusive"]["ns"].as_u64().unwrap()),
        units(block["inclusive"]["ns"].as_u64().unwrap()),
        in_units(attributed(&block, "callers")),
        in_units(attributed(&block, "callees")),
    )
}

/// Callers sum to the inclusive value; callees plus exclusive too.
fn assert_balanced(name: &str, cs: &(u64, u64, Attributed, Attributed)) {
    let (excl, incl, callers, callees) = cs;
    let callers_sum: u64 = callers.iter().map(|c| c.1).sum();
    let callees_sum: u64 = callees.iter().map(|c| c.1).sum();
    assert_eq!(callers_sum, *incl, "callers of {name}: {cs:?}");
    assert_eq!(callees_sum + excl, *incl, "callees of {name}: {cs:?}");
}

fn owned(list: &[(&str, u64)]) -> Vec<(String, u64)> {
    list.iter().map(|(n, v)| (n.to_string(), *v)).collect()
}

#[test]
fn recursion_counts_each_event_once_and_attributes_to_the_innermost_call() {
    let tmp = TempDir::new("recursion");
    let (exe, syms) = compile("shapes", &tmp.0, &["-O0", "-g"]);
    let s = |names: &[&str]| stack_of(&syms, names);
    let stacks = [
        // Direct recursion: I -> R -> R -> R.
        (s(&["R", "R", "R", "I", "main"]), 3),
        (s(&["R", "I", "main"]), 2),
        (s(&["say", "R", "R", "I", "main"]), 2),
        (s(&["I", "main"]), 1),
        // Mutual recursion: main -> A -> B -> A.
        (s(&["A", "B", "A", "main"]), 2),
        (s(&["B", "A", "main"]), 1),
        (s(&["A", "main"]), 1),
    ];
    let dir = experiment(&tmp.0, "rec.er", &exe, &stacks);
    let mut analysis = Analysis::open(&[dir]).expect("opens");
    assert!(analysis.warnings().is_empty(), "{:?}", analysis.warnings());

    let f = functions(&mut analysis);
    assert_eq!(f["<Total>"], (12, 12));
    assert_eq!(f["main"], (0, 12));
    // Inclusive counted once per event, however deep the recursion.
    assert_eq!(f["R"], (5, 7), "{f:?}");
    assert_eq!(f["I"], (1, 8), "{f:?}");
    assert_eq!(f["say"], (2, 2));
    assert_eq!(f["A"], (3, 4), "{f:?}");
    assert_eq!(f["B"], (1, 3), "{f:?}");

    // R is its own caller for the deeper calls (the manual's recursion rule).
    let r = csingle(&mut analysis, "R");
    assert_eq!((r.0, r.1), (5, 7));
    assert_eq!(r.2, owned(&[("R", 5), ("I", 2)]));
    assert_eq!(r.3, owned(&[("say", 2)]));
    assert_balanced("R", &r);
    // The initiating function sees R as a callee with the full value.
    let i = csingle(&mut analysis, "I");
    assert_eq!((i.0, i.1), (1, 8));
    assert_eq!(i.2, owned(&[("main", 8)]));
    assert_eq!(i.3, owned(&[("R", 7)]));
    assert_balanced("I", &i);

    let a = csingle(&mut analysis, "A");
    assert_eq!((a.0, a.1), (3, 4));
    assert_eq!(a.2, owned(&[("B", 2), ("main", 2)]), "{a:?}");
    assert_eq!(a.3, owned(&[("B", 1)]));
    assert_balanced("A", &a);
    let b = csingle(&mut analysis, "B");
    assert_eq!((b.0, b.1), (1, 3));
    assert_eq!(b.2, owned(&[("A", 3)]));
    assert_eq!(b.3, owned(&[("A", 2)]));
    assert_balanced("B", &b);

    // Every function balances, `<Total>` included.
    for name in ["main", "say", "<Total>"] {
        let cs = csingle(&mut analysis, name);
        if name != "<Total>" {
            assert_balanced(name, &cs);
        }
        if name == "<Total>" {
            let roots: u64 = cs.3.iter().map(|c| c.1).sum();
            assert_eq!(roots, 12, "{cs:?}");
        }
    }

    // The text form marks the centre and lists R twice around it.
    let text = run(&mut analysis, "csingle R");
    let lines: Vec<String> = text
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    let centre = lines.iter().position(|l| l == "0.050 41.67 *R");
    assert!(centre.is_some(), "{text}");
    let c = centre.unwrap();
    assert_eq!(lines[c - 2], "0.050 41.67 R", "{text}");
    assert_eq!(lines[c - 1], "0.020 16.67 I", "{text}");
    assert_eq!(lines[c + 1], "0.020 16.67 say", "{text}");

    // The call tree keeps each recursion level as its own node.
    let tree = run_json(&mut analysis, "calltree");
    let child = |node: &serde_json::Value, name: &str| -> serde_json::Value {
        node["children"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .unwrap_or_else(|| panic!("no {name} under {}", node["name"]))
            .clone()
    };
    let r1 = child(&child(&child(&tree["root"], "main"), "I"), "R");
    let r2 = child(&r1, "R");
    let r3 = child(&r2, "R");
    assert_eq!(units(r1["inclusive"]["ns"].as_u64().unwrap()), 7);
    assert_eq!(units(r2["inclusive"]["ns"].as_u64().unwrap()), 5);
    assert_eq!(units(r3["exclusive"]["ns"].as_u64().unwrap()), 3);
}

#[test]
fn truncated_and_failed_stacks_end_in_truncated_stack() {
    let tmp = TempDir::new("truncated");
    let (exe, syms) = compile("shapes", &tmp.0, &["-O0", "-g"]);
    let s = |names: &[&str]| stack_of(&syms, names);
    let mut expt = Synthetic::new(&tmp.0, "trunc.er", &exe, 700);
    let (lo, hi) = load_span(&exe);
    expt.object(1_000_000_001, &exe, 0, lo, hi);
    let mut ts = 1_000_001_000;
    let mut push = |pcs: Vec<u64>, status: StackStatus, n: u32| {
        for _ in 0..n {
            ts += 1_000;
            let mut event = tick(ts, 700, pcs.clone());
            event.status = status;
            expt.event(event);
        }
    };
    // Cut at the depth limit: the outermost frames (I, main) are gone.
    push(s(&["R", "R", "R"]), StackStatus::Truncated, 3);
    // The unwinder gave up after two frames.
    push(s(&["say", "A"]), StackStatus::Failed, 2);
    push(s(&["I", "main"]), StackStatus::Complete, 1);
    let dir = expt.write();
    let mut analysis = Analysis::open(&[dir]).expect("opens");

    let f = functions(&mut analysis);
    assert_eq!(f["<Truncated-stack>"], (0, 5), "{f:?}");
    assert_eq!(f["main"], (0, 1));
    let t = csingle(&mut analysis, "<Truncated-stack>");
    assert_eq!(t.2, owned(&[("<Total>", 5)]), "{t:?}");
    assert_eq!(t.3, owned(&[("R", 3), ("A", 2)]), "{t:?}");
    assert_balanced("<Truncated-stack>", &t);
    // The outermost real frame's caller is the pseudo-frame.
    let r = csingle(&mut analysis, "R");
    assert_eq!(r.2, owned(&[("R", 3)]));
    let a = csingle(&mut analysis, "A");
    assert_eq!(a.2, owned(&[("<Truncated-stack>", 2)]), "{a:?}");
    assert_eq!(a.3, owned(&[("say", 2)]));
    let total = csingle(&mut analysis, "<Total>");
    assert_eq!(
        total.3,
        owned(&[("<Truncated-stack>", 5), ("main", 1)]),
        "{total:?}"
    );
    // Not charged to any load object.
    let objects = rows_by_name(&run_json(&mut analysis, "objects"));
    assert_eq!(units(objects["<Unknown>"].1), 5, "{objects:?}");
    assert_eq!(units(objects["shapes"].1), 6, "{objects:?}");
}

#[test]
fn pcs_outside_objects_or_symbols_are_unknown_and_stripped_statics_named() {
    let tmp = TempDir::new("unknown");
    let (exe, syms) = compile("shapes", &tmp.0, &["-O0", "-g"]);
    let lib = compile_shared("libshow", &tmp.0, &["-O0"]);
    let lib_syms = text_symbols(&lib);
    let bare = stripped_copy(&lib, &tmp.0, "libbare.so");
    let main_ret = syms["main"].0 + 8;
    let rodata = section_range(&exe, ".rodata").expect(".rodata").0;
    let lib_base = 0x7f00_0000_0000u64;
    let (lib_lo, lib_hi) = load_span(&bare);
    let secret = lib_base + lib_syms["lib_secret"].0 + 4;
    let inner_ret = lib_base + lib_syms["lib_inner"].0 + 8;
    let gone_base = 0x7f10_0000_0000u64;
    let stacks = [
        // In no mapped object.
        (vec![0xdead_0000, main_ret], 2),
        // In the executable's mapping, but in data: no function there.
        (vec![rodata + 2, main_ret], 1),
        // In an object whose file no longer exists.
        (vec![gone_base + 0x1234, main_ret], 1),
        // A static function of a stripped library.
        (vec![secret, inner_ret, main_ret], 3),
    ];
    let dir = experiment_with(&tmp.0, "unknown.er", &exe, &stacks, |e| {
        e.object(
            1_000_000_002,
            &bare,
            lib_base,
            lib_base + lib_lo,
            lib_base + lib_hi,
        );
        e.object(
            1_000_000_003,
            Path::new("/nonexistent/libgone.so"),
            gone_base,
            gone_base,
            gone_base + 0x10000,
        );
    });
    let mut analysis = Analysis::open(&[dir]).expect("opens");
    assert!(
        analysis
            .warnings()
            .iter()
            .any(|w| w.contains("libgone.so") && w.contains("no longer exists")),
        "{:?}",
        analysis.warnings()
    );
    let f = functions(&mut analysis);
    assert_eq!(f["<Unknown>"], (4, 4), "{f:?}");
    assert_eq!(f["main"], (0, 7), "{f:?}");
    assert_eq!(f["lib_inner"], (0, 3), "{f:?}");
    let unknown = csingle(&mut analysis, "<Unknown>");
    assert_eq!(unknown.2, owned(&[("main", 4)]));

    // The static's name: the start of the symbol-less region holding it,
    // the end of the nearest exported function below it or the start of
    // the executable segment.
    let region = expected_static_region(&bare, lib_syms["lib_secret"].0 + 4);
    let name = format!("<static>@0x{region:x} (libbare.so)");
    assert_eq!(f.get(&name), Some(&(3, 3)), "{name} in {f:?}");
    let st = csingle(&mut analysis, &name);
    assert_eq!(st.2, owned(&[("lib_inner", 3)]), "{st:?}");
    // Its object is the library.
    let objects = rows_by_name(&run_json(&mut analysis, "objects"));
    assert_eq!(units(objects["libbare.so"].0), 3, "{objects:?}");
    // Short names keep the library of a static.
    run(&mut analysis, "name short");
    let short = functions(&mut analysis);
    assert!(short.contains_key(&name), "{short:?}");
}

/// The rule the analyzer names stripped statics by, from the stripped
/// file's remaining (dynamic) symbols.
fn expected_static_region(stripped: &Path, offset: u64) -> u64 {
    use object::{Object, ObjectSegment, ObjectSymbol};
    let data = std::fs::read(stripped).unwrap();
    let file = object::File::parse(&*data).unwrap();
    assert!(file.symbols().next().is_none(), "strip left .symtab");
    let below = file
        .dynamic_symbols()
        .filter(|s| s.kind() == object::SymbolKind::Text && s.address() != 0)
        .filter(|s| s.address() <= offset)
        .map(|s| s.address() + s.size())
        .filter(|&end| end <= offset)
        .max();
    let segment = file
        .segments()
        .find(|s| {
            matches!(s.flags(), object::SegmentFlags::Elf { p_flags } if p_flags & 1 != 0)
                && s.address() <= offset
                && offset < s.address() + s.size()
        })
        .expect("executable segment")
        .address();
    below.filter(|&b| b >= segment).unwrap_or(segment)
}

#[test]
fn a_leaf_in_a_plt_stub_is_charged_to_the_call_instruction() {
    let tmp = TempDir::new("plt");
    let (exe, syms) = compile("shapes", &tmp.0, &["-O0", "-g"]);
    let plt = section_range(&exe, ".plt.sec")
        .or_else(|| section_range(&exe, ".plt"))
        .expect("a PLT");
    let in_plt = |a: u64| a >= plt.0 && a < plt.1;
    let calls = calls_from(&exe, &syms, "say", in_plt);
    assert_eq!(calls.len(), 1, "say calls puts through the PLT once");
    let (say_ret, stub) = calls[0];
    let main_ret = calls_from(&exe, &syms, "main", |a| a == syms["say"].0)[0].0;
    let stacks = [
        (vec![stub + 4, say_ret, main_ret], 3),
        (stack_of(&syms, &["main"]), 1),
    ];
    let dir = experiment(&tmp.0, "plt.er", &exe, &stacks);
    let mut analysis = Analysis::open(&[dir]).expect("opens");
    let f = functions(&mut analysis);
    assert_eq!(f["say"], (3, 3), "{f:?}");
    assert_eq!(f["main"], (1, 4), "{f:?}");
    assert!(!f.keys().any(|n| n.contains("plt")), "{f:?}");
    assert_eq!(f.len(), 3, "{f:?}");
    // The time sits on the call instruction: say's PC is the call.
    let pcs = run_json(&mut analysis, "pcs");
    let say_pc: Vec<&serde_json::Value> = pcs["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["function"] == "say")
        .collect();
    assert_eq!(say_pc.len(), 1, "{pcs}");
    assert_eq!(say_pc[0]["address"].as_u64(), Some(say_ret - 1));
    assert_eq!(units(say_pc[0]["exclusive"]["ns"].as_u64().unwrap()), 3);
    assert_eq!(
        say_pc[0]["name"],
        format!("say + 0x{:x}", say_ret - 1 - syms["say"].0)
    );
}

#[test]
fn aliases_show_the_last_name_and_fsingle_lists_the_others() {
    let tmp = TempDir::new("aliases");
    let (exe, syms) = compile("aliases", &tmp.0, &["-O0"]);
    assert_eq!(syms["compute"].0, syms["weak_compute"].0);
    assert_eq!(syms["compute"].0, syms["alias_compute"].0);
    let stacks = [(stack_of(&syms, &["compute", "main"]), 2)];
    let dir = experiment(&tmp.0, "alias.er", &exe, &stacks);
    let mut analysis = Analysis::open(&[dir]).expect("opens");
    let f = functions(&mut analysis);
    assert_eq!(f["weak_compute"], (2, 2), "{f:?}");
    assert!(!f.contains_key("compute") && !f.contains_key("alias_compute"));
    for asked in ["weak_compute", "compute", "alias_compute"] {
        let single = run_json(&mut analysis, &format!("fsingle {asked}"));
        assert_eq!(single["name"], "weak_compute", "{single}");
        assert_eq!(
            single["aliases"],
            serde_json::json!(["alias_compute", "compute"]),
            "{single}"
        );
        assert_eq!(single["address"].as_u64(), Some(syms["compute"].0));
    }
    let text = run(&mut analysis, "fsingle compute");
    assert!(text.starts_with("weak_compute\n"), "{text}");
    assert!(
        text.lines()
            .any(|l| l.contains("Aliases:") && l.ends_with("alias_compute, compute")),
        "{text}"
    );
}

#[test]
fn versioned_names_and_aliases_of_one_address_are_one_function() {
    let tmp = TempDir::new("versioned");
    let (exe, syms) = compile("seed", &tmp.0, &["-O0", "-g"]);
    let script = program("versioned.map");
    let lib = compile_shared(
        "versioned",
        &tmp.0,
        &["-O1", &format!("-Wl,--version-script={}", script.display())],
    );
    let lib_syms = text_symbols(&lib);
    // The symbol table holds the versions in the names, as glibc's does.
    let start = lib_syms["__measure_impl"].0;
    for name in ["measure@VERS_1", "measure@@VERS_2", "__measure"] {
        assert_eq!(lib_syms.get(name).map(|s| s.0), Some(start), "{lib_syms:?}");
    }
    let base = 0x7f00_0000_0000u64;
    let (lo, hi) = load_span(&lib);
    let main_ret = syms["main"].0 + 8;
    let other_ret = base + lib_syms["other"].0 + 8;
    let stacks = [
        (vec![base + start + 4, main_ret], 3),
        (vec![base + start + 8, other_ret, main_ret], 2),
    ];
    let dir = experiment_with(&tmp.0, "versioned.er", &exe, &stacks, |e| {
        e.object(1_000_000_002, &lib, base, base + lo, base + hi);
    });
    let mut analysis = Analysis::open(&[dir]).expect("opens");
    let f = functions(&mut analysis);
    // One row, the last name in alphabetical order once versions are
    // dropped: `measure`, not `measure@VERS_1` or `__measure_impl`.
    assert_eq!(f["measure"], (5, 5), "{f:?}");
    assert!(
        !f.keys().any(|n| n.contains("measure") && n != "measure"),
        "{f:?}"
    );
    for asked in ["measure", "__measure", "__measure_impl"] {
        let single = run_json(&mut analysis, &format!("fsingle {asked}"));
        assert_eq!(single["name"], "measure", "{single}");
        assert_eq!(
            single["aliases"],
            serde_json::json!(["__measure", "__measure_impl"]),
            "{single}"
        );
    }
    let (_, _, callers, _) = csingle(&mut analysis, "measure");
    assert_eq!(
        callers,
        [("main".to_string(), 3), ("other".to_string(), 2)],
        "{callers:?}"
    );
}

/// Line number of the line of `tests/programs/FILE` containing `marker`.
fn line_of(file: &str, marker: &str) -> u32 {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/programs")
        .join(file);
    let text = std::fs::read_to_string(path).unwrap();
    text.lines().position(|l| l.contains(marker)).unwrap() as u32 + 1
}

#[test]
fn inlined_helpers_are_charged_to_the_call_site_unless_inlines_on() {
    let tmp = TempDir::new("inlines");
    let (exe, syms) = compile("inlines", &tmp.0, &["-O2", "-g"]);
    // A PC of work whose inline chain has mix in it (DWARF, through the
    // debugger's symbols).
    let object = debugger::symbols::ObjectFile::open(&exe).expect("symbols");
    let (start, size) = syms["work"];
    let in_mix = (start..start + size)
        .find(|&a| {
            let frames = object.inline_frames_at(a);
            frames.len() == 2 && frames[0].function == "mix" && frames[0].inlined
        })
        .expect("mix is inlined into work");
    let main_ret = calls_from(&exe, &syms, "main", |a| a == start)[0].0;
    let call_site = line_of("inlines.c", "CALL_SITE");
    let work_only = (start..start + size)
        .find(|&a| {
            object.inline_frames_at(a).len() == 1
                && object.location_at(a).is_some_and(|l| l.line != call_site)
        })
        .expect("work has code of its own");
    let stacks = [(vec![in_mix, main_ret], 4), (vec![work_only, main_ret], 1)];
    let dir = experiment(&tmp.0, "inl.er", &exe, &stacks);
    let mut analysis = Analysis::open(&[dir]).expect("opens");
    assert_eq!(run(&mut analysis, "inlines"), "inlines: off\n");

    let f = functions(&mut analysis);
    assert_eq!(f["work"], (5, 5), "{f:?}");
    assert!(!f.contains_key("mix"), "{f:?}");
    // The helper's time is on the call-site line of work.
    let lines = run_json(&mut analysis, "lines");
    let at_call_site: Vec<&serde_json::Value> = lines["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["line"].as_u64() == Some(u64::from(call_site)))
        .collect();
    assert_eq!(at_call_site.len(), 1, "line {call_site} in {lines}");
    assert_eq!(at_call_site[0]["function"], "work");
    assert_eq!(
        units(at_call_site[0]["exclusive"]["ns"].as_u64().unwrap()),
        4
    );
    assert!(
        !lines["rows"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["function"] == "mix"),
        "{lines}"
    );

    assert_eq!(run(&mut analysis, "inlines on"), "inlines: on\n");
    let f = functions(&mut analysis);
    assert_eq!(f["mix"], (4, 4), "{f:?}");
    assert_eq!(f["work"], (1, 5), "{f:?}");
    assert_eq!(f["main"], (0, 5), "{f:?}");
    let mix = csingle(&mut analysis, "mix");
    assert_eq!(mix.2, owned(&[("work", 4)]));
    let work = csingle(&mut analysis, "work");
    assert_eq!(work.3, owned(&[("mix", 4)]));
    // The call-site line is now work's, inclusive only.
    let lines = run_json(&mut analysis, "lines");
    let row = lines["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["line"].as_u64() == Some(u64::from(call_site)) && r["function"] == "work")
        .cloned()
        .unwrap_or_else(|| panic!("{lines}"));
    assert_eq!(units(row["exclusive"]["ns"].as_u64().unwrap()), 0, "{row}");
    assert_eq!(units(row["inclusive"]["ns"].as_u64().unwrap()), 4, "{row}");
    assert!(
        lines["rows"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["function"] == "mix"),
        "{lines}"
    );
    run(&mut analysis, "inlines off");
    assert!(!functions(&mut analysis).contains_key("mix"));
}
