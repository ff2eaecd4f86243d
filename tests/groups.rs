//! Many experiments at once: experiment groups (`.erg` files), experiment
//! numbers in `experiment_list` and `experiment_select`, load objects and
//! functions matched across runs and builds, experiments whose process was
//! killed, and compare mode with its difference flame graph. The runs are
//! real: tests/programs/compare.c does a fixed amount of work in `steady`
//! and FACTOR times as much in `scaled`, and prints the thread CPU time
//! each took, which the analyzer's numbers are checked against.

mod common;

use common::*;
use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Work units of `steady` (about 0.3 s of CPU at -O1).
const ROUNDS: &str = "2000";

/// `rdbx collect -p hi` of `program ARGS` into `dir/name`; the seconds the
/// program measured per function ("cpu NAME SECONDS").
fn collect(dir: &Path, name: &str, program: &Path, args: &[&str]) -> HashMap<String, f64> {
    collect_with(dir, name, program, args, &[])
}

fn collect_with(
    dir: &Path,
    name: &str,
    program: &Path,
    args: &[&str],
    options: &[&str],
) -> HashMap<String, f64> {
    let options = [&["-p", "hi"], options].concat();
    let output = rdbx_collect(dir, name, &options, program, args);
    measured_cpu(&String::from_utf8_lossy(&output.stdout))
}

fn analyze(dir: &Path, args: &[&str]) -> Output {
    Command::new(rdbx_bin())
        .arg("analyze")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run rdbx analyze")
}

/// `rdbx analyze --json ARGS`: each command's document; the run must
/// succeed.
fn documents(dir: &Path, args: &[&str]) -> (Vec<Value>, String) {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    let out = analyze(dir, &all);
    assert!(out.status.success(), "{}", output_text(&out));
    let docs = json_documents(&out.stdout);
    (docs, String::from_utf8_lossy(&out.stderr).into_owned())
}

fn row<'a>(doc: &'a Value, name: &str) -> &'a Value {
    doc["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .find(|r| r["name"] == name)
        .unwrap_or_else(|| panic!("no row {name} in {doc:#}"))
}

fn rows_named(doc: &Value, name: &str) -> usize {
    doc["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .filter(|r| r["name"] == name)
        .count()
}

/// Inclusive seconds of the function row `name` of a `functions` document.
fn inclusive(doc: &Value, name: &str) -> f64 {
    row(doc, name)["inclusive"]["seconds"]
        .as_f64()
        .expect("seconds")
}

/// Per function: (exclusive ns, inclusive ns), for exact comparisons.
fn function_ns(doc: &Value) -> HashMap<String, (u64, u64)> {
    doc["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| {
            let ns = |kind: &str| r[kind]["ns"].as_u64().expect("ns");
            (
                r["name"].as_str().expect("name").to_string(),
                (ns("exclusive"), ns("inclusive")),
            )
        })
        .collect()
}

fn compare_program() -> PathBuf {
    prog("compare-O1")
}

#[test]
fn compare_shows_the_ratio_of_a_function_made_twice_as_slow() {
    let dir = scratch_dir("groups-compare");
    let program = compare_program();
    let base = collect(&dir, "base.er", &program, &["1", ROUNDS]);
    let new = collect(&dir, "new.er", &program, &["2", ROUNDS]);
    let measured = |name: &str| new[name] / base[name];
    // The program did twice the work in `scaled`: its own clock says so
    // (within what a shared machine's speed changes allow).
    assert!(
        (1.6..2.5).contains(&measured("scaled")),
        "the program measured {base:?} then {new:?}"
    );
    let (docs, _) = documents(
        &dir,
        &["--compare=ratio", "base.er", "new.er", "-c", "functions"],
    );
    let doc = &docs[0];
    assert_eq!(doc["compare"], "ratio");
    assert_eq!(doc["groups"][0]["name"], "base.er");
    assert_eq!(doc["groups"][1]["experiments"], serde_json::json!([2]));
    for name in ["scaled", "steady"] {
        let r = row(doc, name);
        let recorded = r["ratio"][1]["total_cpu"]["inclusive"]
            .as_f64()
            .expect("a ratio");
        let truth = measured(name);
        assert!(
            (recorded - truth).abs() <= truth * 0.1,
            "{name}: compare shows x {recorded:.3}, the program measured x {truth:.3}"
        );
        // The side-by-side values are each run's own.
        for (g, run) in [&base, &new].into_iter().enumerate() {
            let seconds = r["groups"][g]["inclusive"]["seconds"].as_f64().unwrap();
            assert!(
                (seconds - run[name]).abs() <= (run[name] * 0.1).max(0.02),
                "{name} in group {g}: {seconds:.3} s recorded, {:.3} s measured",
                run[name]
            );
        }
        assert!(r["ratio"][0].is_null() && r["delta"][0].is_null());
    }
    // The text form shows the same ratio under the second group's name.
    let out = analyze(
        &dir,
        &["--compare=ratio", "base.er", "new.er", "-c", "functions"],
    );
    let listing = String::from_utf8_lossy(&out.stdout);
    assert!(
        listing.contains("ratio") && listing.contains("new.er"),
        "{listing}"
    );
    let line = listing
        .lines()
        .find(|l| l.ends_with(" scaled"))
        .expect("a scaled row");
    let shown: f64 = line
        .split("x ")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no ratio in {line:?}"));
    assert!(
        (shown - measured("scaled")).abs() <= measured("scaled") * 0.1,
        "{line}"
    );
    // Delta: the second group's difference from the baseline.
    let (docs, _) = documents(
        &dir,
        &["--compare=delta", "base.er", "new.er", "-c", "functions"],
    );
    let delta = row(&docs[0], "scaled")["delta"][1]["total_cpu"]["inclusive"]
        .as_f64()
        .unwrap();
    let truth = new["scaled"] - base["scaled"];
    assert!(
        (delta - truth).abs() <= truth * 0.1 + 0.02,
        "{delta} vs {truth}"
    );
    // One group cannot be compared.
    let out = analyze(&dir, &["--compare", "base.er", "-c", "functions"]);
    assert_eq!(out.status.code(), Some(2), "{}", output_text(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("two or more"));
}

/// The fill colour of the frame `name` in a flame graph, and its title.
fn frame_fill(svg: &str, name: &str) -> (u8, u8, u8, String) {
    let title = format!("<title>{name} (");
    let at = svg
        .find(&title)
        .unwrap_or_else(|| panic!("no frame {name}"));
    let end = svg[at..].find("</title>").unwrap() + at;
    let fill = svg[end..].find("fill=\"rgb(").unwrap() + end + "fill=\"rgb(".len();
    let close = svg[fill..].find(')').unwrap() + fill;
    let rgb: Vec<u8> = svg[fill..close]
        .split(',')
        .map(|c| c.trim().parse().unwrap())
        .collect();
    (rgb[0], rgb[1], rgb[2], svg[at..end].to_string())
}

#[test]
fn a_difference_flame_graph_is_red_where_a_function_grew_and_blue_where_it_shrank() {
    let dir = scratch_dir("groups-flame");
    let program = compare_program();
    collect(&dir, "base.er", &program, &["1", ROUNDS]);
    collect(&dir, "new.er", &program, &["2", ROUNDS]);
    let out = analyze(
        &dir,
        &[
            "--compare",
            "base.er",
            "new.er",
            "-c",
            "flamegraph grew.svg",
            "-c",
            "collapsed grew.txt",
        ],
    );
    assert!(out.status.success(), "{}", output_text(&out));
    let svg = std::fs::read_to_string(dir.join("grew.svg")).expect("the SVG");
    let (r, g, b, title) = frame_fill(&svg, "scaled");
    assert!(
        r == 255 && g < 200 && b < 200,
        "scaled grew: {title} rgb({r},{g},{b})"
    );
    let (r, g, b, title) = frame_fill(&svg, "steady");
    assert!(
        r >= 230 && g >= 230 && b >= 230,
        "steady did not change much: {title} rgb({r},{g},{b})"
    );
    // Collapsed stacks: the baseline's value, then the second group's.
    let folded = std::fs::read_to_string(dir.join("grew.txt")).unwrap();
    let scaled = folded
        .lines()
        .find(|l| l.contains(";scaled"))
        .expect("a scaled stack");
    let values: Vec<u64> = scaled
        .rsplitn(3, ' ')
        .take(2)
        .map(|v| v.parse().unwrap())
        .collect();
    let (after, before) = (values[0], values[1]);
    assert!(after > before * 3 / 2, "{scaled}");
    // The other way round, scaled shrank.
    let out = analyze(
        &dir,
        &[
            "new.er",
            "base.er",
            "-c",
            "compare on",
            "-c",
            "flamegraph shrank.svg",
        ],
    );
    assert!(out.status.success(), "{}", output_text(&out));
    let svg = std::fs::read_to_string(dir.join("shrank.svg")).expect("the SVG");
    let (r, g, b, title) = frame_fill(&svg, "scaled");
    assert!(
        b == 255 && r < 200 && g < 200,
        "scaled shrank: {title} rgb({r},{g},{b})"
    );
    // The second group selected away: nothing as wide as its values.
    let out = analyze(
        &dir,
        &[
            "--compare",
            "base.er",
            "new.er",
            "-c",
            "experiment_select 1",
            "-c",
            "flamegraph none.svg",
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", output_text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.lines().count() == 1 && stderr.contains("no events of new.er selected"),
        "{stderr}"
    );
    assert!(!dir.join("none.svg").exists());
}

#[test]
fn experiment_groups_are_read_from_erg_files_as_a_job_writes_them() {
    let dir = scratch_dir("groups-erg");
    let program = compare_program();
    let job = dir.join("job");
    std::fs::create_dir_all(&job).unwrap();
    let mut measured = Vec::new();
    for (i, factor) in ["1", "2", "3"].iter().enumerate() {
        measured.push(collect(
            &job,
            &format!("job.{i}.er"),
            &program,
            &[factor, "300"],
        ));
    }
    collect(&dir, "other.er", &program, &["1", "300"]);
    // As concurrent writers may leave it: a line twice, an experiment not
    // there (yet), a blank line, and an unfinished last line.
    let group = "#analyzer experiment group\njob.0.er\njob.1.er\njob.0.er\nmissing.er\n\n\
                 job.2.er\njob.3.e";
    write_file(&job.join("job.erg"), group);
    // Read from another directory: the entries are relative to the file.
    let (docs, stderr) = documents(
        &dir,
        &["job/job.erg", "-c", "experiment_list", "-c", "functions"],
    );
    let experiments = docs[0]["experiments"].as_array().unwrap();
    let paths: Vec<&str> = experiments
        .iter()
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["job/job.0.er", "job/job.1.er", "job/job.2.er"]);
    assert!(experiments.iter().all(|e| e["group"] == 1));
    assert!(
        stderr.contains("job.0.er is listed again: read once"),
        "{stderr}"
    );
    assert!(stderr.contains("missing.er cannot be read"), "{stderr}");
    assert!(
        stderr.contains("last line \"job.3.e\" is unfinished"),
        "{stderr}"
    );
    // Summed: each function's time is the three runs' together.
    let scaled: f64 = measured.iter().map(|m| m["scaled"]).sum();
    let recorded = inclusive(&docs[1], "scaled");
    assert!(
        (recorded - scaled).abs() <= (scaled * 0.1).max(0.03),
        "{recorded} vs {scaled}"
    );
    // A group beside an experiment, compared; a nested group is not read.
    write_file(
        &dir.join("nested.erg"),
        "#analyzer experiment group\njob/job.erg\nother.er\n",
    );
    let (docs, stderr) = documents(
        &dir,
        &[
            "--compare",
            "other.er",
            "job/job.erg",
            "nested.erg",
            "-c",
            "experiment_list",
            "-c",
            "functions",
        ],
    );
    assert!(
        stderr.contains("nested.erg, line 2: job/job.erg is a group"),
        "{stderr}"
    );
    let groups: Vec<Vec<u64>> = docs[0]["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            g["experiments"]
                .as_array()
                .unwrap()
                .iter()
                .map(|n| n.as_u64().unwrap())
                .collect()
        })
        .collect();
    assert_eq!(groups, vec![vec![1], vec![2, 3, 4], vec![5]]);
    let compared = row(&docs[1], "scaled");
    let group_seconds = |g: usize| {
        compared["groups"][g]["inclusive"]["seconds"]
            .as_f64()
            .unwrap()
    };
    assert!(
        (group_seconds(1) - recorded).abs() < 1e-9,
        "the group sums its runs"
    );
    // Not a group, not an experiment: refused.
    write_file(&dir.join("notes.erg"), "job.0.er\n");
    let out = analyze(&dir, &["notes.erg", "-c", "functions"]);
    assert_eq!(out.status.code(), Some(2), "{}", output_text(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("nor an experiment group"));
}

/// Group files that stand for no experiment are refused in one line that
/// says why; one that lists itself beside an experiment reads the
/// experiment.
#[test]
fn group_files_of_no_experiment_are_refused_in_one_line() {
    let dir = scratch_dir("groups-none");
    collect(&dir, "a.er", &compare_program(), &["1", "100"]);
    let header = "#analyzer experiment group\n";
    write_file(&dir.join("empty.erg"), "");
    write_file(&dir.join("header.erg"), header);
    write_file(&dir.join("self.erg"), &format!("{header}self.erg\n"));
    for (file, says) in [
        (
            "empty.erg",
            "empty.erg: not a directory (an experiment) nor an experiment group",
        ),
        ("header.erg", "header.erg: the group lists no experiment"),
        (
            "self.erg",
            "self.erg: the group lists no readable experiment (line 2: self.erg is a group",
        ),
    ] {
        let out = analyze(&dir, &[file, "-c", "functions"]);
        assert_eq!(out.status.code(), Some(2), "{}", output_text(&out));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.lines().count() == 1 && stderr.contains(says),
            "{file}: {stderr}"
        );
    }
    write_file(&dir.join("both.erg"), &format!("{header}both.erg\na.er\n"));
    let (docs, stderr) = documents(&dir, &["both.erg", "-c", "experiment_list"]);
    assert!(
        stderr.contains("both.erg, line 2: both.erg is a group"),
        "{stderr}"
    );
    assert_eq!(docs[0]["experiments"][0]["path"], "a.er");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn experiment_select_keeps_exactly_the_experiments_chosen() {
    let dir = scratch_dir("groups-select");
    let program = compare_program();
    let names = ["a.er", "b.er", "c.er"];
    for (name, factor) in names.iter().zip(["1", "2", "3"]) {
        collect(&dir, name, &program, &[factor, "200"]);
    }
    let alone: Vec<HashMap<String, (u64, u64)>> = names
        .iter()
        .map(|name| function_ns(&documents(&dir, &[name, "-c", "functions"]).0[0]))
        .collect();
    let mut args = names.to_vec();
    args.extend([
        "-c",
        "experiment_select 2",
        "-c",
        "functions",
        "-c",
        "experiment_select 1,3",
        "-c",
        "functions",
        "-c",
        "experiment_list",
    ]);
    let (docs, _) = documents(&dir, &args);
    assert_eq!(function_ns(&docs[1]), alone[1], "experiment 2 alone");
    let mut both = alone[0].clone();
    for (name, (e, i)) in &alone[2] {
        let sum = both.entry(name.clone()).or_default();
        *sum = (sum.0 + e, sum.1 + i);
    }
    assert_eq!(function_ns(&docs[3]), both, "experiments 1 and 3");
    let selected: Vec<bool> = docs[4]["experiments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["selected"].as_bool().unwrap())
        .collect();
    assert_eq!(selected, [true, false, true]);
    let out = analyze(&dir, &["a.er", "-c", "experiment_select 4"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no such experiment"));
}

#[test]
fn runs_at_other_addresses_and_other_builds_are_one_row_per_function() {
    let dir = scratch_dir("groups-builds");
    // Two runs of one PIE: loaded at different addresses.
    let program = compare_program();
    collect(&dir, "one.er", &program, &["1", "300"]);
    collect(&dir, "two.er", &program, &["1", "300"]);
    let bases: Vec<String> = ["one.er", "two.er"]
        .iter()
        .map(|e| {
            let log = std::fs::read_to_string(dir.join(e).join("log")).unwrap();
            let line = log
                .lines()
                .find(|l| l.contains(" object ") && l.contains(&*program.to_string_lossy()))
                .expect("the program's object line")
                .to_string();
            line.split_whitespace()
                .find(|w| w.starts_with("base="))
                .unwrap()
                .to_string()
        })
        .collect();
    assert_ne!(bases[0], bases[1], "address-space randomization is off?");
    let (docs, _) = documents(
        &dir,
        &[
            "one.er",
            "two.er",
            "-c",
            "functions",
            "-c",
            "pcs",
            "-c",
            "objects",
        ],
    );
    for name in ["steady", "scaled", "main"] {
        assert_eq!(rows_named(&docs[0], name), 1, "{name} in {:#}", docs[0]);
    }
    let pcs: Vec<&str> = docs[1]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    let mut unique = pcs.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(
        unique.len(),
        pcs.len(),
        "an instruction listed twice: {pcs:?}"
    );
    assert_eq!(rows_named(&docs[2], "compare-O1"), 1);
    // Two builds of one path: the first archived (its copy kept), then the
    // program rebuilt differently in place and run again.
    let built = dir.join("prog");
    let build = |flags: &[&str]| {
        let status = Command::new("gcc")
            .args(flags)
            .arg("-g")
            .arg(sources_dir().join("compare.c"))
            .arg("-o")
            .arg(&built)
            .status()
            .expect("gcc");
        assert!(status.success());
    };
    build(&["-O0"]);
    let first = collect_with(&dir, "old.er", &built, &["1", "300"], &["-A", "copy"]);
    build(&["-O2", "-fno-inline-functions"]);
    let second = collect(&dir, "rebuilt.er", &built, &["2", "300"]);
    let (docs, stderr) = documents(
        &dir,
        &[
            "old.er",
            "rebuilt.er",
            "-c",
            "functions",
            "-c",
            "object_list",
        ],
    );
    assert!(!stderr.contains("<Unknown>"), "{stderr}");
    for name in ["steady", "scaled"] {
        assert_eq!(rows_named(&docs[0], name), 1, "{name} in {:#}", docs[0]);
        let truth = first[name] + second[name];
        let recorded = inclusive(&docs[0], name);
        assert!(
            (recorded - truth).abs() <= (truth * 0.1).max(0.03),
            "{name}: {recorded:.3} s recorded over both builds, {truth:.3} s measured"
        );
    }
    // Each build was read from its own file.
    let objects: Vec<&Value> = docs[1]["objects"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| o["name"] == "prog")
        .collect();
    assert_eq!(objects.len(), 2, "{:#}", docs[1]);
    assert!(objects[0]["symbols_from"]
        .as_str()
        .unwrap()
        .contains("archives"));
    assert_eq!(objects[1]["symbols_from"], built.to_string_lossy().as_ref());
}

/// Starts `rdbx collect -o name phases forever` in its own process group;
/// returns once the experiment holds some profile data.
fn start_forever(dir: &Path, name: &str) -> std::process::Child {
    use std::os::unix::process::CommandExt;
    let child = Command::new(rdbx_bin())
        .args(["collect", "-o", name])
        .arg(phases())
        .arg("forever")
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .expect("start rdbx collect");
    let profile = dir.join(name).join("profile");
    let deadline = Instant::now() + Duration::from_secs(20);
    // Two samples' worth of clock events (the collector writes a block
    // when it fills or a sample is taken).
    while std::fs::metadata(&profile).map_or(0, |m| m.len()) == 0
        || !std::fs::read_to_string(dir.join(name).join("log"))
            .unwrap_or_default()
            .contains("sample number=2")
    {
        assert!(Instant::now() < deadline, "{name}: no data in 20 s");
        std::thread::sleep(Duration::from_millis(50));
    }
    child
}

/// The processes whose parent is `pid`.
fn children_of(pid: u32) -> Vec<i32> {
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

#[test]
fn a_killed_experiment_loads_and_says_it_ended_early() {
    let dir = scratch_dir("groups-killed");
    // kill -9 of the whole run: the launcher dies with the program, no end
    // record is written.
    let mut whole = start_forever(&dir, "whole.er");
    unsafe { libc::kill(-(whole.id() as i32), libc::SIGKILL) };
    whole.wait().unwrap();
    // kill -9 of the program only: the launcher records the signal.
    let mut program = start_forever(&dir, "program.er");
    for pid in children_of(program.id()) {
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    let status = program.wait().unwrap();
    assert!(!status.success());
    collect(&dir, "fine.er", &compare_program(), &["1", "100"]);
    let (docs, stderr) = documents(
        &dir,
        &[
            "whole.er",
            "program.er",
            "fine.er",
            "-c",
            "experiment_list",
            "-c",
            "header",
            "-c",
            "functions",
        ],
    );
    let experiments = docs[0]["experiments"].as_array().unwrap();
    let ends: Vec<(&str, bool)> = experiments
        .iter()
        .map(|e| {
            (
                e["end"].as_str().unwrap(),
                e["ended_normally"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        ends,
        [
            ("no end record (killed, or still running)", false),
            ("killed by signal 9", false),
            ("exit 0", true)
        ],
        "{stderr}"
    );
    let notes: Vec<&str> = docs[1]["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    assert!(
        notes.contains(&"experiment 1 (whole.er) did not end normally: no end record (killed, or still running)"),
        "{notes:?}"
    );
    assert!(
        notes.contains(&"experiment 2 (program.er) did not end normally: killed by signal 9"),
        "{notes:?}"
    );
    // Different programs in one analysis: allowed, and said.
    assert!(
        notes
            .iter()
            .any(|n| n.starts_with("the experiments ran different programs")
                && n.contains("(experiment 1, 2)")
                && n.contains("compare-O1 (experiment 3)")),
        "{notes:?}"
    );
    // What the killed runs recorded is there.
    let spun = inclusive(&docs[2], "phase_one");
    assert!(spun > 0.1, "phase_one: {spun} s");
    assert!(inclusive(&docs[2], "scaled") > 0.0);
}

/// `rdbx analyze --json ARGS` with the analyzer merging clock events
/// (`RDBX_MERGE_EVENTS_BEYOND=0`) or keeping each (a limit no run reaches).
fn documents_merged(dir: &Path, merged: bool, args: &[&str]) -> Vec<Value> {
    let limit = if merged { "0" } else { "1000000000" };
    let out = Command::new(rdbx_bin())
        .arg("analyze")
        .arg("--json")
        .args(args)
        .env("RDBX_MERGE_EVENTS_BEYOND", limit)
        .current_dir(dir)
        .output()
        .expect("run rdbx analyze");
    assert!(out.status.success(), "{}", output_text(&out));
    json_documents(&out.stdout)
}

#[test]
fn merged_clock_events_give_the_numbers_each_event_gives() {
    let dir = scratch_dir("groups-merged");
    // Threads, samples every 0.1 s, and a second run: every dimension a
    // selection can keep.
    for name in ["t1.er", "t2.er"] {
        let output = Command::new(rdbx_bin())
            .args(["collect", "-p", "hi", "-S", "0.1", "-o", name])
            .arg(phases())
            .args(["threads", "0.3"])
            .current_dir(&dir)
            .output()
            .expect("run rdbx collect");
        assert!(output.status.success(), "{}", output_text(&output));
    }
    let commands = [
        "functions",
        "lines",
        "callers-callees",
        "thread_list",
        "sample_list",
        "cpu_list",
        "experiment_list",
        "thread_select 2",
        "functions",
        "thread_select all",
        "sample_select 2-3",
        "functions",
        "sample_select all",
        "cpu_select 0",
        "functions",
        "cpu_select all",
        "experiment_select 2",
        "functions",
        "experiment_select all",
        "filters thread == 1 && sample > 1",
        "functions",
        // Time needs each event: the merged analysis reads them again.
        "filters time > 0.2",
        "functions",
        "overview",
    ];
    let mut args = vec!["t1.er", "t2.er"];
    for command in commands {
        args.extend(["-c", command]);
    }
    let each = documents_merged(&dir, false, &args);
    let merged = documents_merged(&dir, true, &args);
    assert_eq!(each.len(), merged.len());
    for (i, (a, b)) in each.iter().zip(&merged).enumerate() {
        if a["report"] == "overview" {
            assert_eq!(a["total"], b["total"]);
            assert_eq!(a["selected"], b["selected"]);
            continue;
        }
        assert_eq!(a, b, "document {i} ({}) differs when merged", a["report"]);
    }
    // Merged until the time filter, then each event again.
    let overview = documents_merged(&dir, true, &["t1.er", "t2.er", "-c", "overview"]);
    assert_eq!(overview[0]["clock_events_merged"], true);
    let entries = overview[0]["clock_entries"].as_u64().unwrap();
    let events = overview[0]["total"]["events"].as_u64().unwrap();
    assert!(entries < events, "{entries} entries for {events} events");
    assert_eq!(merged.last().unwrap()["clock_events_merged"], false);
}

#[test]
fn the_ranks_of_an_mpi_job_are_listed_and_selected_by_rank_and_host() {
    if !on_path("mpirun") || !on_path("mpicc") {
        eprintln!("skipped: Open MPI is not installed (Debian: openmpi-bin, libopenmpi-dev)");
        return;
    }
    let dir = scratch_dir("groups-mpi");
    let program = dir.join("mpi_known");
    let status = Command::new("mpicc")
        .args(["-g", "-O1", "-o"])
        .arg(&program)
        .arg(sources_dir().join("mpi_known.c"))
        .status()
        .expect("run mpicc");
    assert!(status.success(), "mpicc failed");
    // The ranks write job.0.er .. job.3.er and list them in job.erg.
    let output = Command::new("mpirun")
        .args(["--oversubscribe", "-np", "4"])
        .args([rdbx_bin(), "collect", "-M", "on", "-o"])
        .arg(dir.join("job.er"))
        .arg(&program)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .stdin(Stdio::null())
        .output()
        .expect("run mpirun");
    assert!(output.status.success(), "{}", output_text(&output));
    let (docs, _) = documents(
        &dir,
        &[
            "job.erg",
            "-c",
            "experiment_list",
            "-c",
            "experiment_select rank 1-2",
            "-c",
            "functions",
            "-c",
            "experiment_list",
        ],
    );
    let ranks_of = |doc: &Value| -> Vec<(String, u64, bool)> {
        let mut ranks: Vec<(String, u64, bool)> = doc["experiments"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                let path = e["path"].as_str().unwrap().to_string();
                (
                    path,
                    e["rank"].as_u64().expect("a rank"),
                    e["selected"].as_bool().unwrap(),
                )
            })
            .collect();
        ranks.sort();
        ranks
    };
    let listed = ranks_of(&docs[0]);
    let expected: Vec<(String, u64, bool)> =
        (0..4).map(|r| (format!("job.{r}.er"), r, true)).collect();
    assert_eq!(listed, expected);
    let host = docs[0]["experiments"][0]["host"]
        .as_str()
        .expect("a host")
        .to_string();
    assert!(!host.is_empty());
    let selected: Vec<bool> = ranks_of(&docs[3]).into_iter().map(|(_, _, s)| s).collect();
    assert_eq!(selected, [false, true, true, false]);
    // Ranks 1 and 2 selected: the numbers of their two experiments alone.
    let alone = documents(&dir, &["job.1.er", "job.2.er", "-c", "functions"]).0;
    assert_eq!(function_ns(&docs[2]), function_ns(&alone[0]));
    // Every rank ran on this host.
    let (docs, _) = documents(
        &dir,
        &[
            "job.erg",
            "-c",
            &format!("experiment_select host {host}"),
            "-c",
            "experiment_list",
        ],
    );
    assert!(ranks_of(&docs[1]).iter().all(|(_, _, s)| *s));
    let out = analyze(&dir, &["job.erg", "-c", "experiment_select rank 7"]);
    assert!(!out.status.success(), "{}", output_text(&out));
}
