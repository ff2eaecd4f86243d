//! The annotated `source` and `disasm` listings over synthetic experiments
//! whose events sit on known lines and instructions of a program compiled
//! here. Lines and instructions are found with objdump (the line table and
//! the disassembly), independently of the analyzer's own lookups.

mod common;

use analyzer::annotate::{
    disasm_for_file, disasm_for_function, find_source, source_for_file, source_for_function,
    SourcePaths,
};
use analyzer::metrics::{View, ViewSettings, Weights};
use analyzer::model::{FunctionId, LineEntry, Model};
use analyzer::report::{Context, MetricKind, MetricName, ReportSettings, SortKey};
use common::{text_range, Event, Synthetic, TempDir};
use experiment::layout::StackStatus;
use serde_json::Value as Json;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// One unit: 10 ms.
const UNIT_NS: u32 = 10_000_000;

fn program_source() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/programs/annotate.c")
}

/// The line carrying `/* MARKER */` in the test program.
fn marker_line(marker: &str) -> u32 {
    let text = std::fs::read_to_string(program_source()).unwrap();
    let needle = format!("/* {marker} */");
    let index = text
        .lines()
        .position(|l| l.contains(&needle))
        .unwrap_or_else(|| panic!("no {needle} in annotate.c"));
    index as u32 + 1
}

/// Compiles `source` to `dir/annotate` (no PIE: link-time = run-time).
fn compile(source: &Path, dir: &Path, optimize: &str) -> PathBuf {
    let exe = dir.join("annotate");
    let status = Command::new("gcc")
        .args(["-g", optimize, "-no-pie", "-fno-inline", "-o"])
        .arg(&exe)
        .arg(source)
        .status()
        .expect("gcc runs");
    assert!(status.success());
    exe
}

/// What objdump says about the executable.
struct Objdump {
    /// (address, line) of every line-table row.
    rows: Vec<(u64, u32)>,
    /// Instructions by function: (address, text).
    functions: HashMap<String, Vec<(u64, String)>>,
    symbols: HashMap<String, (u64, u64)>,
}

impl Objdump {
    fn of(exe: &Path) -> Objdump {
        let run = |args: &[&str]| -> String {
            let out = Command::new("objdump")
                .args(args)
                .arg(exe)
                .output()
                .unwrap();
            assert!(out.status.success());
            String::from_utf8(out.stdout).unwrap()
        };
        let rows = run(&["--dwarf=decodedline"])
            .lines()
            .filter_map(|l| {
                let fields: Vec<&str> = l.split_whitespace().collect();
                if fields.len() < 3 || fields[0] != "annotate.c" {
                    return None;
                }
                let line = fields[1].parse().ok()?;
                let address = u64::from_str_radix(fields[2].strip_prefix("0x")?, 16).ok()?;
                Some((address, line))
            })
            .collect();
        let mut functions: HashMap<String, Vec<(u64, String)>> = HashMap::new();
        let mut current = None;
        for line in run(&["-d", "--no-show-raw-insn"]).lines() {
            if let Some(name) = line.strip_suffix(">:").and_then(|l| l.split_once(" <")) {
                current = Some(name.1.to_string());
                continue;
            }
            let Some((address, text)) = line.trim_start().split_once(":\t") else {
                continue;
            };
            if let (Some(f), Ok(address)) = (&current, u64::from_str_radix(address, 16)) {
                functions
                    .entry(f.clone())
                    .or_default()
                    .push((address, text.trim().to_string()));
            }
        }
        let symbols = functions
            .iter()
            .map(|(name, insns)| {
                let lo = insns[0].0;
                let hi = insns.last().unwrap().0 + 1;
                (name.clone(), (lo, hi - lo))
            })
            .collect();
        Objdump {
            rows,
            functions,
            symbols,
        }
    }

    /// Start addresses of the rows of `line` no row of another line shares
    /// (so every reader of the line table agrees on them).
    fn line_addresses(&self, line: u32) -> Vec<u64> {
        let mut out: Vec<u64> = self
            .rows
            .iter()
            .filter(|(a, l)| *l == line && !self.rows.iter().any(|(b, m)| b == a && *m != line))
            .map(|(a, _)| *a)
            .collect();
        out.dedup();
        assert!(!out.is_empty(), "no unambiguous row for line {line}");
        out
    }

    /// The call of `callee` in `caller`: (call address, return address).
    fn call(&self, caller: &str, callee: &str) -> (u64, u64) {
        let insns = &self.functions[caller];
        let i = insns
            .iter()
            .position(|(_, t)| t.starts_with("call") && t.ends_with(&format!("<{callee}>")))
            .unwrap_or_else(|| panic!("{caller} does not call {callee}: {insns:?}"));
        (insns[i].0, insns[i + 1].0)
    }

    /// The instruction after the one at `address`.
    fn next_instruction(&self, function: &str, address: u64) -> u64 {
        let insns = &self.functions[function];
        let i = insns.iter().position(|(a, _)| *a == address).unwrap();
        insns[i + 1].0
    }
}

/// Writes an experiment with `units` events at each stack (leaf first).
fn experiment(dir: &Path, exe: &Path, dump: &Objdump, stacks: &[(Vec<u64>, u32)]) -> PathBuf {
    let mut expt = Synthetic::new(dir, "test.1.er", exe, 700);
    let symbols: HashMap<String, (u64, u64)> = dump.symbols.clone();
    let (lo, hi) = text_range(&symbols);
    expt.object(1_000_000_001, exe, 0, lo, hi);
    let mut ts = 1_000_000_100;
    for (pcs, units) in stacks {
        for _ in 0..*units {
            ts += 1_000;
            expt.event(Event {
                timestamp_ns: ts,
                tid: 700,
                cpu: 0,
                weight_ns: UNIT_NS,
                status: StackStatus::Complete,
                pcs: pcs.clone(),
            });
        }
    }
    expt.write()
}

struct Analysis {
    model: Model,
    view: View,
    weights: Weights,
    settings: ReportSettings,
}

impl Analysis {
    fn of(dir: PathBuf) -> Analysis {
        let model = analyzer::load(&[dir], true).expect("loads");
        assert!(model.warnings.is_empty(), "{:?}", model.warnings);
        let view = View::new(&model, &ViewSettings::default());
        let weights = Weights::new(&model, |_| true);
        Analysis {
            model,
            view,
            weights,
            settings: ReportSettings::default(),
        }
    }

    fn ctx(&self) -> Context<'_> {
        Context {
            model: &self.model,
            view: &self.view,
            weights: &self.weights,
            settings: &self.settings,
        }
    }

    fn function(&self, name: &str) -> FunctionId {
        self.model.functions_named(name)[0]
    }
}

/// Lines with runs of spaces squeezed: alignment is the table's job.
fn squeeze(text: &str) -> Vec<String> {
    text.lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect()
}

fn has_line(text: &str, expected: &str) -> bool {
    squeeze(text).iter().any(|l| l == expected)
}

/// The -O0 program with events: HOT 8 units (4 at the line's first
/// instruction, 4 inside it), LOOP 6 (exactly 75% of HOT: hot too),
/// RETURN 5 (not hot); all called from caller, called from main.
struct O0 {
    _tmp: TempDir,
    analysis: Analysis,
    dump: Objdump,
    hot_pc: u64,
    call: (u64, u64),
}

fn o0() -> O0 {
    let tmp = TempDir::new("annotate-o0");
    let exe = compile(&program_source(), &tmp.0, "-O0");
    let dump = Objdump::of(&exe);
    let (_, ret_in_caller) = dump.call("caller", "work");
    let (_, ret_in_main) = dump.call("main", "caller");
    let hot_pc = dump.line_addresses(marker_line("HOT"))[0];
    let loop_pc = dump.line_addresses(marker_line("LOOP"))[0];
    let return_pc = dump.line_addresses(marker_line("RETURN"))[0];
    let stack = |leaf: u64| vec![leaf, ret_in_caller, ret_in_main];
    let stacks = [
        (stack(hot_pc), 4),
        (stack(hot_pc + 2), 4),
        (stack(loop_pc), 6),
        (stack(return_pc), 5),
    ];
    let dir = experiment(&tmp.0, &exe, &dump, &stacks);
    O0 {
        analysis: Analysis::of(dir),
        call: dump.call("caller", "work"),
        dump,
        hot_pc,
        _tmp: tmp,
    }
}

fn source_text(line: u32) -> String {
    let text = std::fs::read_to_string(program_source()).unwrap();
    let line = text.lines().nth(line as usize - 1).unwrap();
    line.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `N. text` squeezed as the listing shows it.
fn numbered(line: u32) -> String {
    format!("{line}. {}", source_text(line))
        .trim_end()
        .to_string()
}

#[test]
fn source_puts_seconds_beside_lines_and_marks_hot_ones() {
    let t = o0();
    let ctx = t.analysis.ctx();
    let work = t.analysis.function("work");
    let report = source_for_function(&ctx, work, &SourcePaths::default()).expect("source found");
    let text = &report.text;
    let (hot, lp, ret) = (
        marker_line("HOT"),
        marker_line("LOOP"),
        marker_line("RETURN"),
    );
    assert!(
        has_line(text, &format!("## 0.080 0.080 {}", numbered(hot))),
        "{text}"
    );
    assert!(
        has_line(text, &format!("## 0.060 0.060 {}", numbered(lp))),
        "{text}"
    );
    assert!(
        has_line(text, &format!("0.050 0.050 {}", numbered(ret))),
        "{text}"
    );
    // A line with code but no time shows zeros; a blank line nothing.
    assert!(
        has_line(text, &format!("0.000 0.000 {}", numbered(lp - 1))),
        "{text}"
    );
    assert!(text.contains("Source file: "), "{text}");
    assert!(text.contains("Function: work"), "{text}");
    // The function's lines with three lines of context, not the whole file.
    assert!(!text.contains("MAIN-CALL"), "{text}");
    assert!(
        has_line(text, &format!("{}.", lp - 4)),
        "context before: {text}"
    );

    let lines = report.json["lines"].as_array().unwrap();
    let row = |n: u32| -> &Json { lines.iter().find(|l| l["line"] == n).unwrap() };
    assert_eq!(report.json["report"], "source");
    assert_eq!(row(hot)["exclusive"]["ns"], 80_000_000u64);
    assert_eq!(row(hot)["exclusive"]["events"], 8);
    assert_eq!(row(hot)["hot"], true);
    assert_eq!(row(ret)["hot"], false);
    assert!(row(hot)["text"].as_str().unwrap().contains("HOT"));
    assert!(row(lp - 4)["exclusive"].is_null());
}

#[test]
fn caller_time_is_inclusive_on_the_call_line_and_hot_by_the_sort_metric() {
    let mut t = o0();
    let caller = t.analysis.function("caller");
    let call = marker_line("CALL");
    {
        let ctx = t.analysis.ctx();
        let report = source_for_function(&ctx, caller, &SourcePaths::default()).unwrap();
        // Sorted by exclusive time, the hottest line is in work: no marks here.
        assert!(
            has_line(&report.text, &format!("0.000 0.190 {}", numbered(call))),
            "{}",
            report.text
        );
        assert!(!report.text.contains("##"), "{}", report.text);
    }
    t.analysis.settings.sort = SortKey::Metric(MetricName::TotalCpu, MetricKind::Inclusive);
    let ctx = t.analysis.ctx();
    let report = source_for_function(&ctx, caller, &SourcePaths::default()).unwrap();
    assert!(
        has_line(&report.text, &format!("## 0.000 0.190 {}", numbered(call))),
        "{}",
        report.text
    );
}

#[test]
fn disasm_puts_leaf_time_on_its_instruction_and_caller_time_on_the_call() {
    let t = o0();
    let ctx = t.analysis.ctx();
    let work = t.analysis.function("work");
    let report = disasm_for_function(&ctx, work, &SourcePaths::default()).unwrap();
    let text = squeeze(&report.text);
    let hot = marker_line("HOT");
    // 8 events: 4 exactly at the instruction, 4 inside it.
    let hot_row = text
        .iter()
        .position(|l| l.contains(&format!("] {:x}:", t.hot_pc)))
        .unwrap_or_else(|| panic!("{}", report.text));
    assert!(
        text[hot_row].starts_with(&format!("## 0.080 0.080 [{hot}] {:x}:", t.hot_pc)),
        "{}",
        report.text
    );
    // The source line is interleaved just before its first instruction.
    assert_eq!(text[hot_row - 1], numbered(hot), "{}", report.text);
    // The next instruction (same line) has no time.
    let next = t.dump.next_instruction("work", t.hot_pc);
    assert!(
        text.iter()
            .any(|l| l.starts_with(&format!("0.000 0.000 [{hot}] {next:x}:"))),
        "{}",
        report.text
    );
    assert!(report.text.contains("<work+0x"), "branch targets named");
    assert_eq!(report.json["report"], "disasm");

    let caller = t.analysis.function("caller");
    let report = disasm_for_function(&ctx, caller, &SourcePaths::default()).unwrap();
    let (call_at, _) = t.call;
    let rows = report.json["rows"].as_array().unwrap();
    let call_row = rows
        .iter()
        .find(|r| r["address"] == call_at)
        .expect("call instruction listed");
    assert_eq!(call_row["exclusive"]["ns"], 0);
    assert_eq!(call_row["inclusive"]["ns"], 190_000_000u64);
    assert!(call_row["text"].as_str().unwrap().starts_with("call"));
    let timed: Vec<&Json> = rows
        .iter()
        .filter(|r| r["kind"] == "instruction" && r["inclusive"]["ns"] != 0)
        .collect();
    assert_eq!(timed.len(), 1, "only the call has time: {rows:?}");
    let text = squeeze(&report.text);
    assert!(
        text.iter().any(|l| l.starts_with("0.000 0.190 [")
            && l.contains(&format!("{call_at:x}:"))
            && l.contains("call")),
        "{}",
        report.text
    );
}

#[test]
fn source_for_file_lists_the_whole_file() {
    let t = o0();
    let ctx = t.analysis.ctx();
    let report = source_for_file(&ctx, "annotate.c", &SourcePaths::default()).unwrap();
    let file_lines = std::fs::read_to_string(program_source())
        .unwrap()
        .lines()
        .count();
    assert_eq!(
        report.json["lines"].as_array().unwrap().len(),
        file_lines,
        "{}",
        report.text
    );
    let main_call = marker_line("MAIN-CALL");
    assert!(
        has_line(
            &report.text,
            &format!("0.000 0.190 {}", numbered(main_call))
        ),
        "{}",
        report.text
    );
    assert!(has_line(&report.text, &numbered(1)), "{}", report.text);
    // Each function's rows start with a `<Function: f>` row carrying its
    // metrics, just before the line its code begins at.
    let rows: Vec<&str> = report.text.lines().collect();
    for (function, definition) in [("work", "long work(long n)"), ("main", "int main(void)")] {
        let at = rows
            .iter()
            .position(|r| r.ends_with(&format!("<Function: {function}>")))
            .unwrap_or_else(|| panic!("no <Function: {function}> row:\n{}", report.text));
        let next = rows[at + 1..].iter().find(|r| r.contains(". ")).unwrap();
        assert!(
            next.ends_with(definition) || next.ends_with(". {"),
            "<Function: {function}> is not before its code:\n{}",
            report.text
        );
    }
    let listed: Vec<&str> = report.json["functions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["function"].as_str().unwrap())
        .collect();
    assert_eq!(listed, ["work", "caller", "main"], "{}", report.text);
    assert!(
        has_line(&report.text, "0.000 0.190 <Function: main>"),
        "{}",
        report.text
    );
    // A suffix of the path matches too; other names do not.
    assert!(source_for_file(&ctx, "programs/annotate.c", &SourcePaths::default()).is_ok());
    let err = source_for_file(&ctx, "nosuch.c", &SourcePaths::default()).unwrap_err();
    assert!(err.contains("nosuch.c"), "{err}");
    assert!(source_for_file(&ctx, "notate.c", &SourcePaths::default()).is_err());

    // disasm FILE: every function of the file the experiment saw.
    let report = disasm_for_file(&ctx, "annotate.c", &SourcePaths::default()).unwrap();
    let blocks = report.json["functions"].as_array().unwrap();
    let names: Vec<&str> = blocks
        .iter()
        .map(|b| b["function"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["work", "caller", "main"], "{}", report.text);
}

#[test]
fn time_without_line_numbers_gets_its_own_row() {
    let mut t = o0();
    // Pretend the PC inside the hot instruction had no line.
    let inside = t.hot_pc + 2;
    let pc = t
        .analysis
        .model
        .pcs
        .iter()
        .position(|p| p.offset == inside)
        .unwrap();
    t.analysis.model.pcs[pc].line = None;
    t.analysis.view = View::new(&t.analysis.model, &ViewSettings::default());
    let ctx = t.analysis.ctx();
    let work = t.analysis.function("work");
    let report = source_for_function(&ctx, work, &SourcePaths::default()).unwrap();
    let hot = marker_line("HOT");
    assert!(
        has_line(
            &report.text,
            "0.040 0.040 <Function: work, instructions without line numbers>"
        ),
        "{}",
        report.text
    );
    // LOOP (0.060) is now the hottest line; HOT (0.040) is below 75% of it.
    assert!(
        has_line(&report.text, &format!("0.040 0.040 {}", numbered(hot))),
        "{}",
        report.text
    );
    assert_eq!(report.json["no_line"][0]["exclusive"]["ns"], 40_000_000u64);
}

#[test]
fn missing_source_is_explained_and_pathmap_or_setpath_finds_it() {
    let tmp = TempDir::new("annotate-moved");
    let src = tmp.0.join("src");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::copy(program_source(), src.join("annotate.c")).unwrap();
    let exe = compile(&src.join("annotate.c"), &tmp.0, "-O0");
    let dump = Objdump::of(&exe);
    let (_, ret_in_caller) = dump.call("caller", "work");
    let (_, ret_in_main) = dump.call("main", "caller");
    let hot_pc = dump.line_addresses(marker_line("HOT"))[0];
    let dir = experiment(
        &tmp.0,
        &exe,
        &dump,
        &[(vec![hot_pc, ret_in_caller, ret_in_main], 3)],
    );
    let moved = tmp.0.join("moved");
    std::fs::rename(&src, &moved).unwrap();

    let analysis = Analysis::of(dir);
    let ctx = analysis.ctx();
    let work = analysis.function("work");
    let hot = marker_line("HOT");
    let err = source_for_function(&ctx, work, &SourcePaths::default()).unwrap_err();
    let recorded = src.join("annotate.c");
    assert!(err.contains(&recorded.display().to_string()), "{err}");
    assert!(err.contains("pathmap") && err.contains("setpath"), "{err}");
    // The numbers survive without the text.
    assert!(has_line(&err, &format!("## 0.030 0.030 {hot}.")), "{err}");

    let mapped = SourcePaths {
        pathmaps: vec![(src.display().to_string(), moved.display().to_string())],
        search: Vec::new(),
    };
    let report = source_for_function(&ctx, work, &mapped).expect("pathmap finds it");
    assert!(
        has_line(&report.text, &format!("## 0.030 0.030 {}", numbered(hot))),
        "{}",
        report.text
    );
    assert!(report.text.contains(&format!(
        "Source file: {}",
        moved.join("annotate.c").display()
    )));
    assert!(!report.text.contains("newer"), "{}", report.text);
    // Editing the source after the build is pointed out.
    let later = std::time::SystemTime::now() + std::time::Duration::from_secs(60);
    std::fs::File::options()
        .write(true)
        .open(moved.join("annotate.c"))
        .unwrap()
        .set_modified(later)
        .unwrap();
    let report = source_for_function(&ctx, work, &mapped).unwrap();
    assert!(
        report.text.contains("newer than the object"),
        "{}",
        report.text
    );

    let searched = SourcePaths {
        pathmaps: Vec::new(),
        search: vec![tmp.0.join("nowhere"), moved.clone()],
    };
    assert!(source_for_function(&ctx, work, &searched).is_ok());

    // disasm still lists the code, saying what it could not find.
    let report = disasm_for_function(&ctx, work, &SourcePaths::default()).unwrap();
    assert!(report.text.contains("not found"), "{}", report.text);
    assert!(
        squeeze(&report.text)
            .iter()
            .any(|l| l.starts_with(&format!("## 0.030 0.030 [{hot}] {hot_pc:x}:"))),
        "{}",
        report.text
    );
    let report = disasm_for_function(&ctx, work, &mapped).unwrap();
    assert!(!report.text.contains("not found"), "{}", report.text);
    assert!(squeeze(&report.text).contains(&numbered(hot)));
}

#[test]
fn find_source_tries_pathmaps_the_recorded_path_then_search_dirs() {
    let tmp = TempDir::new("annotate-find");
    let sub = tmp.0.join("tree/sub");
    std::fs::create_dir_all(&sub).unwrap();
    std::fs::write(sub.join("t.c"), "int x;\n").unwrap();
    std::fs::write(tmp.0.join("t.c"), "int y;\n").unwrap();
    let line = LineEntry {
        file: PathBuf::from("sub/t.c"),
        full_path: PathBuf::from("/nonexistent/build/sub/t.c"),
        line: 1,
    };
    assert_eq!(find_source(&SourcePaths::default(), &line), None);
    // The path relative to the compilation directory beats the basename.
    let paths = SourcePaths {
        pathmaps: Vec::new(),
        search: vec![tmp.0.join("tree"), tmp.0.clone()],
    };
    assert_eq!(find_source(&paths, &line), Some(sub.join("t.c")));
    let paths = SourcePaths {
        pathmaps: Vec::new(),
        search: vec![tmp.0.clone()],
    };
    assert_eq!(find_source(&paths, &line), Some(tmp.0.join("t.c")));
    // A pathmap prefix is matched by whole components.
    let paths = SourcePaths {
        pathmaps: vec![(
            "/nonexistent/build".into(),
            tmp.0.join("tree").display().to_string(),
        )],
        search: Vec::new(),
    };
    assert_eq!(find_source(&paths, &line), Some(sub.join("t.c")));
    let paths = SourcePaths {
        pathmaps: vec![(
            "/nonexistent/bui".into(),
            tmp.0.join("tree").display().to_string(),
        )],
        search: Vec::new(),
    };
    assert_eq!(find_source(&paths, &line), None);
}

#[test]
fn optimized_code_lines_and_instructions_agree() {
    let tmp = TempDir::new("annotate-o2");
    let exe = compile(&program_source(), &tmp.0, "-O2");
    let dump = Objdump::of(&exe);
    let (call_at, ret_in_caller) = dump.call("caller", "work");
    let hot = marker_line("HOT");
    // The loop body's line is split in several ranges at -O2.
    let hot_pcs = dump.line_addresses(hot);
    let mut stacks = Vec::new();
    for (i, &pc) in hot_pcs.iter().enumerate() {
        stacks.push((vec![pc, ret_in_caller], i as u32 + 2));
    }
    let hot_units: u32 = stacks.iter().map(|s| s.1).sum();
    let dir = experiment(&tmp.0, &exe, &dump, &stacks);
    let analysis = Analysis::of(dir);
    let ctx = analysis.ctx();
    let work = analysis.function("work");
    let seconds = |units: u32| format!("{:.3}", f64::from(units) * 0.01);

    let report = source_for_function(&ctx, work, &SourcePaths::default()).unwrap();
    let expected = format!("## {0} {0} {1}", seconds(hot_units), numbered(hot));
    assert!(has_line(&report.text, &expected), "{}", report.text);
    let lines = report.json["lines"].as_array().unwrap();
    let sum: u64 = lines
        .iter()
        .filter_map(|l| l["exclusive"]["ns"].as_u64())
        .sum();
    assert_eq!(sum, u64::from(hot_units) * u64::from(UNIT_NS));

    let report = disasm_for_function(&ctx, work, &SourcePaths::default()).unwrap();
    let rows = report.json["rows"].as_array().unwrap();
    let instructions: Vec<&Json> = rows.iter().filter(|r| r["kind"] == "instruction").collect();
    for (i, &pc) in hot_pcs.iter().enumerate() {
        let row = instructions.iter().find(|r| r["address"] == pc).unwrap();
        assert_eq!(row["exclusive"]["ns"], (i as u64 + 2) * u64::from(UNIT_NS));
        assert_eq!(row["line"], hot);
    }
    // The hottest instruction is marked, and only those at >= 75% of it.
    let most = (hot_pcs.len() as u64 + 1) * u64::from(UNIT_NS);
    for row in &instructions {
        let ns = row["exclusive"]["ns"].as_u64().unwrap();
        assert_eq!(row["hot"], ns > 0 && ns * 4 >= most * 3, "{row}");
    }
    // The line is interleaved once per range of it.
    let hot_source_rows = rows
        .iter()
        .filter(|r| r["kind"] == "source" && r["line"] == hot)
        .count();
    assert!(hot_source_rows >= hot_pcs.len(), "{}", report.text);

    let caller = analysis.function("caller");
    let report = disasm_for_function(&ctx, caller, &SourcePaths::default()).unwrap();
    let rows = report.json["rows"].as_array().unwrap();
    let call_row = rows.iter().find(|r| r["address"] == call_at).unwrap();
    assert_eq!(
        call_row["inclusive"]["ns"],
        u64::from(hot_units) * u64::from(UNIT_NS)
    );
}
