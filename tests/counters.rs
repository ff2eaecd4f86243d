//! Counter overflow profiling against a program whose page faults per
//! function are known by construction and measured by the program itself
//! with getrusage around each call (tests/programs/counters_known.c: fresh
//! pages of a global array, of a malloc'ed block, of a global struct's
//! member, of a local array on a fresh thread's stack; and a function that
//! sleeps, for context switches): per function, the counts of the records
//! whose stack holds it add up to the program's measure within 2%, at
//! interval 1 and at 16; every data address lies in the object the
//! function touched, and the local array's are in touch_stack's frame, at
//! the offsets of the array from its CFA. Also with the clock profiling at
//! the same time, with a context-switch counter, under the debugger, with
//! the collector loaded into a running process, in a fork child and across
//! exec (where an overflow inside execve used to kill the new image), with
//! a counter the kernel refuses, and paused. The data-object views
//! (`data_objects`, `data_single`, `data_layout`) give each object the
//! events whose addresses the program says are in it.

mod common;

use common::*;
use experiment::counters::{CounterEvent, FLAG_IN_FRAME};
use experiment::log::Event;
use experiment::Experiment;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const FUNCTIONS: [&str; 4] = ["touch_table", "touch_heap", "touch_member", "touch_stack"];

fn program() -> PathBuf {
    prog("counters_known-O0")
}

/// What the program said about itself on stderr.
#[derive(Debug, Default)]
struct Measures {
    /// `measure NAME FAULTS SWITCHES`
    faults: HashMap<String, u64>,
    switches: HashMap<String, u64>,
    /// `object NAME ADDRESS SIZE`: what the function touched.
    objects: HashMap<String, (u64, u64)>,
    /// `frame touch_stack CFA`
    stack_cfa: u64,
}

fn measures(stderr: &str) -> Measures {
    let mut out = Measures::default();
    for line in stderr.lines() {
        match line.split_whitespace().collect::<Vec<_>>()[..] {
            ["measure", name, faults, switches] => {
                out.faults
                    .insert(name.into(), faults.parse().expect("faults"));
                out.switches
                    .insert(name.into(), switches.parse().expect("switches"));
            }
            ["object", name, address, size] => {
                let address = parse_hex(address).expect("object address");
                out.objects
                    .insert(name.into(), (address, size.parse().expect("size")));
            }
            ["frame", "touch_stack", cfa] => out.stack_cfa = parse_hex(cfa).expect("cfa"),
            _ => {}
        }
    }
    for name in FUNCTIONS {
        assert!(
            out.faults.contains_key(name) && out.objects.contains_key(name),
            "{name} not measured:\n{stderr}"
        );
    }
    out
}

/// `rdbx collect -A off -o t.er OPTIONS counters_known ARGS` in `dir`.
fn collect(dir: &Path, options: &[&str], args: &[&str]) -> Output {
    Command::new(rdbx_bin())
        .args(["collect", "-A", "off", "-o", "t.er"])
        .args(options)
        .arg(program())
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run rdbx collect")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// One counter record with the program functions on its stack (leaf first).
struct Record {
    event: CounterEvent,
    functions: Vec<String>,
    /// The function of the stack frame `event.frame`, when IN_FRAME.
    frame_function: Option<String>,
}

/// The records of counter `index` (all counters when None).
fn records(expt: &Experiment, index: Option<u16>) -> Vec<Record> {
    let program = program();
    let callers = Callers::of(expt, &program);
    let symbols = debugger::symbols::ObjectFile::open(&program).expect("the program's symbols");
    let base = program_base(expt, &program);
    let mut out = Vec::new();
    let stats = expt
        .for_each_counter_event(|record| {
            let event = record.event;
            if index.is_some_and(|i| i != event.counter) {
                return;
            }
            let frame_function = event.stack_frame().and_then(|(frame, _)| {
                let pc = *callers.stack(event.stack_id)?.pcs.get(usize::from(frame))?;
                // The leaf's pc is exact; callers' are return addresses.
                let pc = if frame == 0 { pc } else { pc.checked_sub(1)? };
                symbols.symbol_at(pc.checked_sub(base)?).map(|s| s.name)
            });
            out.push(Record {
                event,
                functions: callers.functions(event.stack_id),
                frame_function,
            });
        })
        .expect("read the counters file");
    assert_eq!(stats.damaged, 0, "{stats:?}");
    out
}

fn program_base(expt: &Experiment, program: &Path) -> u64 {
    expt.log()
        .expect("log")
        .iter()
        .find_map(|e| match &e.event {
            Event::Object { path, base, .. } if path == program => Some(*base),
            _ => None,
        })
        .expect("the program's object line")
}

/// The innermost of `names` on the record's stack.
fn function_of<'a>(record: &Record, names: &[&'a str]) -> Option<&'a str> {
    record
        .functions
        .iter()
        .find_map(|f| names.iter().find(|n| *n == f).copied())
}

/// The innermost of `names` on stack `stack_id`.
fn function_of_stack<'a>(callers: &Callers, stack_id: u64, names: &[&'a str]) -> Option<&'a str> {
    callers
        .functions(stack_id)
        .iter()
        .find_map(|f| names.iter().find(|n| *n == f).copied())
}

/// Sum of the counts of the records whose stack holds each of `names`.
fn counts_per_function(records: &[Record], names: &[&str]) -> HashMap<String, u64> {
    let mut out = HashMap::new();
    for record in records {
        if let Some(name) = function_of(record, names) {
            *out.entry(name.to_string()).or_default() += record.event.count;
        }
    }
    out
}

/// Each function's recorded count within `percent`% of the program's own
/// measure, plus `slack` events.
fn check_counts(
    recorded: &HashMap<String, u64>,
    measured: &HashMap<String, u64>,
    names: &[&str],
    percent: u64,
    slack: u64,
    context: &str,
) {
    for name in names {
        let got = recorded.get(*name).copied().unwrap_or(0);
        let want = measured[*name];
        eprintln!("{name}: recorded {got}, measured {want}");
        let allowed = want * percent / 100 + slack;
        assert!(
            got.abs_diff(want) <= allowed,
            "{name}: recorded {got} events, the program measured {want} (allowed ±{allowed})\n\
             recorded {recorded:?}\nmeasured {measured:?}\n{context}"
        );
    }
}

/// Page-fault records carry their address: per function, the events of
/// the records whose address lies in the object the function touched are
/// at least 98% of its events (the rest: faults of the signal frames the
/// kernel writes below a thread's stack pointer, the first time, on a
/// fresh stack; a record made for a trap another one hid, without
/// address); no record has an address in another function's object; the
/// array's addresses are in touch_stack's frame, whose CFA the program
/// printed, at offsets inside the array.
fn check_addresses(records: &[Record], measures: &Measures, context: &str) {
    let mut total: HashMap<&str, u64> = HashMap::new();
    let mut inside: HashMap<&str, u64> = HashMap::new();
    let (cfa, (array, array_size)) = (measures.stack_cfa, measures.objects["touch_stack"]);
    let object_of = |address: u64| {
        FUNCTIONS.into_iter().find(|name| {
            let (lo, size) = measures.objects[*name];
            (lo..lo + size).contains(&address)
        })
    };
    for record in records {
        let Some(name) = function_of(record, &FUNCTIONS) else {
            continue;
        };
        let event = &record.event;
        *total.entry(name).or_default() += event.count;
        let Some(address) = event.address() else {
            continue;
        };
        match object_of(address) {
            Some(object) if object == name => {}
            None => continue,
            Some(object) => {
                panic!("{name}: a record's address {address:#x} is in {object}'s object\n{context}")
            }
        }
        *inside.entry(name).or_default() += event.count;
        if name == "touch_stack" {
            assert!(
                event.flags & FLAG_IN_FRAME != 0,
                "an address in the array is in no frame: {event:?}"
            );
            assert_eq!(record.frame_function.as_deref(), Some("touch_stack"));
            assert_eq!(event.frame_cfa, cfa, "touch_stack's CFA: {event:?}");
            let offset = address as i64 - cfa as i64;
            let extent =
                (array as i64 - cfa as i64)..(array as i64 + array_size as i64 - cfa as i64);
            assert!(extent.contains(&offset), "{offset} not in {extent:?}");
        }
    }
    for name in FUNCTIONS {
        let total = total.get(name).copied().unwrap_or(0);
        let inside = inside.get(name).copied().unwrap_or(0);
        eprintln!("{name}: {inside} of {total} events at an address in its object");
        assert!(
            total > 0 && inside * 100 >= total * 98,
            "{name}: only {inside} of {total} events at an address in its object\n{context}"
        );
    }
}

/// Counter 0 (page faults at interval 1) against what the program said:
/// counts per function within 2%, each address where it belongs.
fn check_page_faults(expt: &Experiment, said: &str) {
    let records = records(expt, Some(0));
    let measures = measures(said);
    check_counts(
        &counts_per_function(&records, &FUNCTIONS),
        &measures.faults,
        &FUNCTIONS,
        2,
        0,
        said,
    );
    check_addresses(&records, &measures, said);
}

/// The `counter` lines: (index, name, interval, kernel=).
fn counter_lines(expt: &Experiment) -> Vec<(u16, String, u64)> {
    expt.log()
        .expect("log")
        .iter()
        .filter_map(|e| match &e.event {
            Event::Counter { index, spec } => Some((*index, spec.name.clone(), spec.interval)),
            _ => None,
        })
        .collect()
}

/// The value of `key` on the log's `counter_totals` line of counter `index`.
fn totals(dir: &Path, index: u16, key: &str) -> Option<u64> {
    let log = std::fs::read_to_string(dir.join("log")).expect("log");
    let line = log.lines().find(|l| {
        l.split_whitespace().nth(1) == Some("counter_totals")
            && l.contains(&format!(" index={index} "))
    })?;
    line.split_whitespace()
        .find_map(|field| field.strip_prefix(&format!("{key}=")))
        .and_then(|v| v.parse().ok())
}

fn errors(expt: &Experiment) -> Vec<String> {
    expt.log()
        .expect("log")
        .iter()
        .filter_map(|e| match &e.event {
            Event::Error(text) => Some(text.clone()),
            _ => None,
        })
        .collect()
}

/// A page-faults run at `interval`: counts per function within 2%, the
/// addresses where they belong, the log's lines and totals.
fn page_faults_at(interval: u64) {
    let dir = scratch_dir(&format!("counters-faults-{interval}"));
    let output = collect(
        &dir,
        &["-p", "off", "-h", &format!("page-faults,{interval}")],
        &[],
    );
    let stderr = text(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert_eq!(text(&output.stdout), "counters_known done\n");
    let expt_dir = dir.join("t.er");
    let expt = Experiment::open(&expt_dir).expect("open t.er");
    let manifest = expt.manifest();
    assert!(
        manifest.files.iter().any(|f| f == "counters"),
        "{manifest:?}"
    );
    assert!(
        manifest.kinds.iter().any(|k| k == "counters"),
        "{manifest:?}"
    );
    assert_eq!(counter_lines(&expt), [(0, "page-faults".into(), interval)]);
    assert!(errors(&expt).is_empty(), "{:?}", errors(&expt));
    let records = records(&expt, Some(0));
    assert_eq!(totals(&expt_dir, 0, "records"), Some(records.len() as u64));
    // A software counter is never multiplexed: no count was scaled.
    assert_eq!(totals(&expt_dir, 0, "scaled"), Some(0));
    let measures = measures(&stderr);
    check_counts(
        &counts_per_function(&records, &FUNCTIONS),
        &measures.faults,
        &FUNCTIONS,
        2,
        0,
        &stderr,
    );
    check_addresses(&records, &measures, &stderr);
    if interval == 1 {
        // One trap per fault, each its own record, but for those merged.
        let merged = records.iter().filter(|r| r.event.count > 1).count();
        assert!(merged * 50 < records.len(), "{merged} of {}", records.len());
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn every_page_fault_is_counted_where_it_happens() {
    page_faults_at(1);
}

#[test]
fn every_sixteenth_page_fault_counts_sixteen() {
    page_faults_at(16);
}

/// Clock profiling (1 ms) at the same time: its ticks are recorded in the
/// touch functions, their weights add up to the CPU time the process used,
/// and the counts still add up. The clock ticks in user mode only, and
/// most of the program's time is the kernel's (its faults): a dozen ticks,
/// but all the time. Most of its user time is in the counters' handler,
/// one trap per fault: a tick that comes there is recorded when the
/// handler is done, at the program's stack it interrupted.
#[test]
fn with_the_clock_at_the_same_time() {
    let dir = scratch_dir("counters-clock");
    let output = collect(&dir, &["-p", "1", "-h", "page-faults,1"], &[]);
    let stderr = text(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let expt = Experiment::open(dir.join("t.er")).expect("open t.er");
    let summary = expt.summary().expect("summary");
    let cpu: Vec<u64> = expt
        .log()
        .expect("log")
        .iter()
        .filter_map(|e| match &e.event {
            Event::Sample(sample) => Some(sample.utime_ns + sample.stime_ns),
            _ => None,
        })
        .collect();
    let used = cpu.last().expect("an end sample") - cpu.first().expect("a start sample");
    eprintln!("{summary:?}\nCPU between the start and end samples: {used} ns");
    assert!(summary.clock_events >= 3, "{summary:?}");
    let weight = summary.clock_weight_ns;
    assert!(
        weight * 10 >= used * 7 && weight <= used + used / 10,
        "clock weight {weight} ns, CPU used {used} ns"
    );
    let callers = Callers::of(&expt, &program());
    let ticks_in_touches = expt
        .clock_events()
        .expect("clock events")
        .iter()
        .filter(|e| function_of_stack(&callers, e.stack_id, &FUNCTIONS).is_some())
        .count() as u64;
    eprintln!("{ticks_in_touches} ticks in the touch functions");
    assert!(
        ticks_in_touches * 2 >= summary.clock_events,
        "{ticks_in_touches} of {} ticks in the touch functions",
        summary.clock_events
    );
    check_page_faults(&expt, &stderr);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A context-switch counter (every second switch) with the page faults:
/// the sleeping function's switches, as many as it measured, and the
/// faults as before.
#[test]
fn context_switches_with_page_faults() {
    let dir = scratch_dir("counters-switches");
    let output = collect(
        &dir,
        &["-p", "off", "-h", "page-faults,1,context-switches,2"],
        &[],
    );
    let stderr = text(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let expt = Experiment::open(dir.join("t.er")).expect("open t.er");
    assert_eq!(
        counter_lines(&expt),
        [
            (0, "page-faults".into(), 1),
            (1, "context-switches".into(), 2)
        ]
    );
    let measures = measures(&stderr);
    let switches = records(&expt, Some(1));
    assert!(switches.iter().all(|r| r.event.address().is_none()));
    // At either end of the function, one record may hold a switch of the
    // neighbour's (the interval is 2).
    check_counts(
        &counts_per_function(&switches, &["switcher"]),
        &measures.switches,
        &["switcher"],
        5,
        2,
        &stderr,
    );
    let faults = records(&expt, Some(0));
    check_counts(
        &counts_per_function(&faults, &FUNCTIONS),
        &measures.faults,
        &FUNCTIONS,
        2,
        0,
        &stderr,
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Under the debugger every trap is a ptrace stop rdbx passes on: the
/// program runs to its end and the counts are the same.
#[test]
fn under_the_debugger() {
    let dir = scratch_dir("counters-debugger");
    let out = Rdbx::batch()
        .cwd(&dir)
        .cmds(&[
            "collector hwprofile counter page-faults 1",
            "collector store filename dbx.er",
            "collector enable",
            "run",
        ])
        .arg(program())
        .timeout(std::time::Duration::from_secs(120))
        .run();
    let transcript = out.transcript();
    out.assert_out_contains("counters_known done");
    let expt = Experiment::open(dir.join("dbx.er"))
        .unwrap_or_else(|e| panic!("open dbx.er: {e}\n{transcript}"));
    check_page_faults(&expt, &transcript);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Loaded into a running process (rdbx attaches, loads the collector,
/// starts the experiment, detaches): the main thread and a thread that
/// existed before count from the start, a thread created after from when
/// the watcher finds it (touch_stack's waits for that).
#[test]
fn loaded_into_a_running_process() {
    let dir = scratch_dir("counters-attach");
    let script = dir.join("counters-attach.sh");
    write_file(
        &script,
        &format!("#!/bin/sh\nexec {} attach\n", program().display()),
    );
    make_executable(&script);
    let run = collect_after_attach(
        &script,
        &dir,
        &["collector hwprofile counter page-faults 1"],
    );
    assert!(run.rest.contains("counters_known done"), "{}", run.rest);
    let expt = Experiment::open(dir.join("live.er"))
        .unwrap_or_else(|e| panic!("open live.er: {e}\n{}", run.transcript));
    assert_eq!(counter_lines(&expt), [(0, "page-faults".into(), 1)]);
    check_page_faults(&expt, &run.stderr);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Loaded into a running process that then execs (execv, execl) with an
/// argument in a page it never touched: the exec family's GOT entries
/// were redirected too, so the counter is stopped before execve and the
/// new image (without the collector) runs to its end.
#[test]
fn loaded_into_a_running_process_that_execs() {
    for how in ["execv", "execl"] {
        let dir = scratch_dir(&format!("counters-attach-{how}"));
        let script = dir.join("counters-attach.sh");
        write_file(
            &script,
            &format!("#!/bin/sh\nexec {} attach {how}\n", program().display()),
        );
        make_executable(&script);
        let run = collect_after_attach(
            &script,
            &dir,
            &["collector hwprofile counter page-faults 1"],
        );
        assert!(
            run.rest.contains("counters_known done"),
            "{how}: {}",
            run.rest
        );
        let expt = Experiment::open(dir.join("live.er")).expect("open live.er");
        assert_eq!(counter_lines(&expt), [(0, "page-faults".into(), 1)]);
        assert!(!records(&expt, Some(0)).is_empty());
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// Context switches at interval 1 are refused (under a debugger each
/// signal would be a switch itself, counted again, forever): one line
/// before the program runs, no experiment.
#[test]
fn context_switches_at_interval_1_are_refused() {
    let dir = scratch_dir("counters-switches-1");
    let output = collect(&dir, &["-p", "off", "-h", "context-switches,1"], &[]);
    let stderr = text(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("counter \"context-switches\": interval 1 is refused"),
        "{stderr}"
    );
    assert_eq!(text(&output.stdout), "", "the program did not run");
    assert!(!dir.join("t.er").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

/// `NAME?` asks for a counter only where the machine can count it: on a
/// machine without a hardware PMU `cycles?` is one warning and the run
/// goes on with the other counters; where there is a PMU it counts.
#[test]
fn a_counter_asked_if_available() {
    let dir = scratch_dir("counters-if-available");
    let output = collect(&dir, &["-p", "off", "-h", "cycles?,page-faults"], &[]);
    let stderr = text(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert_eq!(text(&output.stdout), "counters_known done\n");
    let expt = Experiment::open(dir.join("t.er")).expect("open t.er");
    let names: Vec<String> = counter_lines(&expt).into_iter().map(|l| l.1).collect();
    let pmu = Path::new("/sys/bus/event_source/devices/cpu").exists();
    if pmu {
        assert_eq!(names, ["cycles", "page-faults"], "{stderr}");
    } else {
        assert_eq!(names, ["page-faults"], "{stderr}");
        let warnings: Vec<&str> = stderr.lines().filter(|l| l.contains("warning")).collect();
        assert_eq!(warnings.len(), 1, "{stderr}");
        assert!(
            warnings[0].contains("\"cycles\" needs a hardware PMU")
                && warnings[0].contains("going on without it"),
            "{stderr}"
        );
    }
    assert!(!records(&expt, None).is_empty());
    // Without the `?` the same request is refused before the program runs.
    if !pmu {
        std::fs::remove_dir_all(dir.join("t.er")).expect("remove t.er");
        let refused = collect(&dir, &["-p", "off", "-h", "cycles,page-faults"], &[]);
        assert!(!refused.status.success());
        assert_eq!(text(&refused.stdout), "", "the program did not run");
        assert!(!dir.join("t.er").exists());
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A fork child counts in its own experiment from the fork on; the parent,
/// which only waits, records none of the child's.
#[test]
fn in_a_fork_child() {
    let dir = scratch_dir("counters-fork");
    let output = collect(&dir, &["-p", "off", "-h", "page-faults,1"], &["fork"]);
    let stderr = text(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert_eq!(text(&output.stdout), "counters_known done\n");
    let parent = Experiment::open(dir.join("t.er")).expect("open t.er");
    let in_parent = counts_per_function(&records(&parent, Some(0)), &FUNCTIONS);
    assert!(in_parent.is_empty(), "{in_parent:?}");
    let child = Experiment::open(dir.join("t.er/_f1.er")).expect("open _f1.er");
    assert_eq!(counter_lines(&child), [(0, "page-faults".into(), 1)]);
    let records = records(&child, Some(0));
    let measures = measures(&stderr);
    check_counts(
        &counts_per_function(&records, &FUNCTIONS),
        &measures.faults,
        &FUNCTIONS,
        2,
        0,
        &stderr,
    );
    check_addresses(&records, &measures, &stderr);
    let _ = std::fs::remove_dir_all(&dir);
}

/// execv and execl with an argument in a file page the program never
/// touched: the kernel faults inside execve, in kernel mode, where the
/// counter counts. Its trap would kill the new image (SIGTRAP back to the
/// default action) had the exec family not stopped the counter first. The
/// new image counts in its own experiment.
#[test]
fn across_exec() {
    for how in ["exec", "execl"] {
        let dir = scratch_dir(&format!("counters-{how}"));
        let output = collect(&dir, &["-p", "off", "-h", "page-faults,1"], &[how]);
        let stderr = text(&output.stderr);
        assert!(
            output.status.success(),
            "{how}: {:?}\n{stderr}",
            output.status
        );
        assert_eq!(text(&output.stdout), "counters_known done\n", "{how}");
        let new_image = Experiment::open(dir.join("t.er/_x1.er")).expect("open _x1.er");
        let records = records(&new_image, Some(0));
        // The new image runs the main thread's functions only.
        let mut measured = HashMap::new();
        for line in stderr.lines() {
            if let ["measure", name, faults, _] = line.split_whitespace().collect::<Vec<_>>()[..] {
                measured.insert(name.to_string(), faults.parse::<u64>().expect("faults"));
            }
        }
        check_counts(
            &counts_per_function(&records, &["touch_table", "touch_heap"]),
            &measured,
            &["touch_table", "touch_heap"],
            2,
            0,
            &stderr,
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// The path of the collector library rdbx preloads (`collector version`).
fn library() -> PathBuf {
    let out = Rdbx::batch().cmd("collector version").run();
    let line = out
        .out_lines()
        .first()
        .copied()
        .unwrap_or_default()
        .to_string();
    PathBuf::from(line.rsplit(" at ").next().expect("a path"))
}

/// Runs the program with the collector preloaded and `counters` in the
/// config, as the launcher does (the experiment directory made first, the
/// program's pid in the config); rdbx refuses hardware counters on a
/// machine without a PMU before the program starts, so a config made for
/// another machine is how the collector meets one.
fn run_with_counters(dir: &Path, counters: &[experiment::counters::CounterSpec]) -> Output {
    let expt = dir.join("t.er");
    std::fs::create_dir_all(&expt).expect("experiment directory");
    let config = experiment::Config {
        expt: expt.clone(),
        founder: expt,
        pid: 0,
        mode: experiment::Mode::Collect,
        profile_ns: 0,
        counters: counters.to_vec(),
        ..experiment::Config::default()
    }
    .to_config_string();
    assert!(config.contains(";pid=0;"), "{config}");
    let config = config.replace(";pid=0;", ";pid=$$;");
    Command::new("sh")
        .arg("-c")
        .arg(format!(
            "exec env RDBX_COLLECTOR_CONFIG=\"{config}\" LD_PRELOAD=\"{}\" \"{}\"",
            library().display(),
            program().display()
        ))
        .current_dir(dir)
        .output()
        .expect("run the program")
}

fn spec(text: &str) -> experiment::counters::CounterSpec {
    experiment::counters::CounterSpec::parse(text).expect("a counter spec")
}

/// A counter the kernel refuses (cycles: no PMU on a VM; any counter
/// elsewhere, where the kernel has none of that number) is one error line;
/// the others are recorded, and the program's output is its own.
#[test]
fn a_refused_counter_is_an_error_line() {
    let plain = Command::new(program()).output().expect("run the program");
    let absent = "0:0:0:0:1000003:0:cycles";
    // A software event number no kernel has: refused everywhere.
    let unknown = "1:4242:0:0:100:0:no-such-software-event";
    let cases: [(&str, &[&str]); 2] = [
        ("counters-refused-alone", &[absent, unknown]),
        (
            "counters-refused-with",
            &[absent, "1:2:0:0:1:1:page-faults", unknown],
        ),
    ];
    for (name, specs) in cases {
        let dir = scratch_dir(name);
        let specs: Vec<_> = specs.iter().map(|s| spec(s)).collect();
        let output = run_with_counters(&dir, &specs);
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), plain.status.code(), "{stderr}");
        assert_eq!(output.stdout, plain.stdout, "{stderr}");
        let expt = Experiment::open(dir.join("t.er")).expect("open t.er");
        let errors = errors(&expt);
        // With a hardware PMU (none on the VMs this runs on) cycles counts.
        let pmu = Path::new("/sys/bus/event_source/devices/cpu").exists();
        assert!(
            pmu || errors
                .iter()
                .any(|e| e.starts_with("counter cycles is off: ") && e.contains("hardware")),
            "{errors:?}"
        );
        assert!(
            errors
                .iter()
                .any(|e| e.starts_with("counter no-such-software-event is off: ")),
            "{errors:?}"
        );
        let lines = counter_lines(&expt);
        let counted = expt.manifest().files.iter().any(|f| f == "counters");
        if specs.len() == 2 {
            assert!(pmu || (lines.is_empty() && !counted), "{lines:?}");
            let _ = std::fs::remove_dir_all(&dir);
            continue;
        }
        // Indices are the config's: page-faults keeps 1.
        assert!(lines.contains(&(1, "page-faults".into(), 1)), "{lines:?}");
        assert!(counted);
        let records = records(&expt, None);
        assert!(records.iter().all(|r| r.event.counter == 1));
        check_counts(
            &counts_per_function(&records, &FUNCTIONS),
            &measures(&stderr).faults,
            &FUNCTIONS,
            2,
            0,
            &stderr,
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// Started paused (-y, never resumed): the counter is set up, nothing is
/// recorded.
#[test]
fn nothing_recorded_while_paused() {
    let dir = scratch_dir("counters-paused");
    let output = collect(
        &dir,
        &["-p", "off", "-y", "USR2", "-h", "page-faults,1"],
        &[],
    );
    let stderr = text(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let expt_dir = dir.join("t.er");
    let expt = Experiment::open(&expt_dir).expect("open t.er");
    assert_eq!(counter_lines(&expt), [(0, "page-faults".into(), 1)]);
    assert!(records(&expt, None).is_empty());
    assert_eq!(totals(&expt_dir, 0, "records"), Some(0));
    let _ = std::fs::remove_dir_all(&dir);
}

/// `rdbx analyze --json -c LINE...` of experiment `expt`: the documents.
fn analyze_json(expt: &Path, lines: &[&str]) -> Vec<serde_json::Value> {
    let mut command = Command::new(rdbx_bin());
    command.arg("analyze").arg("--json").arg(expt);
    for line in lines {
        command.args(["-c", line]);
    }
    let output = command.output().expect("run rdbx analyze");
    assert!(output.status.success(), "{}", text(&output.stderr));
    let documents: serde_json::Value =
        serde_json::from_slice(&output.stdout).expect("one JSON document");
    documents.as_array().expect("an array").clone()
}

/// The events of the records whose address lies in `[lo, lo + size)`
/// (for the stack array, in touch_stack's frame as well): what the data
/// views must give the object, known without the DWARF reader.
fn events_in(records: &[Record], (lo, size): (u64, u64), frame_cfa: Option<u64>) -> u64 {
    records
        .iter()
        .filter(|r| {
            r.event
                .address()
                .is_some_and(|address| (lo..lo + size).contains(&address))
        })
        .filter(|r| frame_cfa.is_none_or(|cfa| r.event.stack_frame().map(|f| f.1) == Some(cfa)))
        .map(|r| r.event.count)
        .sum()
}

/// A data_objects row by name (and scope): its events.
fn row_events(rows: &[serde_json::Value], name: &str, scope: Option<&str>) -> u64 {
    let row = rows
        .iter()
        .find(|r| r["name"] == name && scope.is_none_or(|s| r["scope"] == s))
        .unwrap_or_else(|| panic!("no row {name} ({scope:?}) in {rows:#?}"));
    row["metrics"][0].as_u64().expect("a count")
}

/// Within 2% of the program's own getrusage measure.
fn near_measure(got: u64, function: &str, measures: &Measures) {
    let want = measures.faults[function];
    eprintln!("{function}: its object has {got} events, the program measured {want}");
    assert!(
        got.abs_diff(want) * 50 <= want,
        "{function}: {got} events in its object, measured {want}"
    );
}

/// The data-object views on the program's page faults, with heap tracing
/// (so that its block is named): each object the program touched has the
/// events of the records whose address the program says is in it (exact)
/// and the faults it measured (within 2%); big_table as a variable of the
/// executable, the member under its structure, the local array as a stack
/// object of touch_stack, the heap block under <Heap> by its allocation
/// site; <Total> is every record's events and the sum of the top-level
/// objects; data_single and data_layout agree; an unknown name is one line.
#[test]
fn data_objects_of_the_pages_touched() {
    let dir = scratch_dir("counters-dataspace");
    let output = collect(&dir, &["-p", "off", "-h", "page-faults,1", "-H", "on"], &[]);
    let stderr = text(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let measures = measures(&stderr);
    let expt_dir = dir.join("t.er");
    let expt = Experiment::open(&expt_dir).expect("open t.er");
    let records = records(&expt, Some(0));
    let documents = analyze_json(
        &expt_dir,
        &["data_objects", "data_single big_table", "data_layout"],
    );
    let objects = &documents[0];
    assert_eq!(objects["report"], "data_objects");
    assert_eq!(objects["counters"], serde_json::json!(["page-faults"]));
    assert_eq!(objects["sort"], "page-faults");
    assert!(objects.get("note").is_none(), "heap tracing was on");
    let rows = objects["rows"].as_array().expect("rows");
    for key in ["name", "scope", "kind", "size", "metrics"] {
        assert!(rows.iter().all(|r| r.get(key).is_some()), "{key}");
    }
    let exe = program();
    let exe_name = exe.file_name().unwrap().to_str().unwrap();

    let table = measures.objects["touch_table"];
    let big_table = format!("{{array:char[{}] big_table}}", table.1);
    let in_table = row_events(rows, &big_table, Some(exe_name));
    assert_eq!(in_table, events_in(&records, table, None));
    near_measure(in_table, "touch_table", &measures);

    let member_range = measures.objects["touch_member"];
    let holder = "{structure:holder big_struct}";
    let member = format!("{holder}.{{array:char[{}] pages}}", member_range.1);
    let in_member = row_events(rows, &member, Some(exe_name));
    assert_eq!(in_member, events_in(&records, member_range, None));
    assert_eq!(row_events(rows, holder, Some(exe_name)), in_member);
    near_measure(in_member, "touch_member", &measures);

    let array = measures.objects["touch_stack"];
    let local = rows
        .iter()
        .find(|r| r["scope"] == "touch_stack" && r["kind"] == "object")
        .unwrap_or_else(|| panic!("no stack object of touch_stack in {rows:#?}"));
    let name = local["name"].as_str().unwrap();
    assert!(name.ends_with(&format!("[{}] local}}", array.1)), "{name}");
    assert_eq!(local["size"], array.1);
    let on_stack = local["metrics"][0].as_u64().unwrap();
    assert_eq!(
        on_stack,
        events_in(&records, array, Some(measures.stack_cfa))
    );
    near_measure(on_stack, "touch_stack", &measures);

    let block = measures.objects["touch_heap"];
    let heap_block = format!(
        "<Heap>.(block of {} bytes from run_main_thread_functions < run_all < main)",
        block.1
    );
    let in_block = row_events(rows, &heap_block, None);
    assert_eq!(in_block, events_in(&records, block, None));
    near_measure(in_block, "touch_heap", &measures);

    let total = row_events(rows, "<Total>", None);
    assert_eq!(total, records.iter().map(|r| r.event.count).sum::<u64>());
    let top_level: u64 = rows
        .iter()
        .filter(|r| {
            let name = r["name"].as_str().unwrap();
            !name.contains("}.")
                && !name.contains(">.")
                && !["<Total>", "<Scalars>"].contains(&name)
        })
        .map(|r| r["metrics"][0].as_u64().unwrap())
        .sum();
    assert_eq!(top_level, total, "{rows:#?}");

    let single = &documents[1];
    assert_eq!(single["report"], "data_single");
    assert_eq!(single["total"][0], total);
    let found = single["objects"].as_array().expect("objects");
    assert_eq!(found.len(), 1, "{single}");
    assert_eq!(found[0]["object"]["name"], big_table.as_str());
    assert_eq!(found[0]["object"]["metrics"][0], in_table);
    assert_eq!(found[0]["members"], serde_json::json!([]));

    let layout = &documents[2];
    assert_eq!(layout["report"], "data_layout");
    assert_eq!(layout["total"][0], total);
    let holder_type = layout["types"]
        .as_array()
        .expect("types")
        .iter()
        .find(|t| t["name"] == "{structure:holder -}")
        .unwrap_or_else(|| panic!("struct holder in {layout}"));
    assert_eq!(holder_type["metrics"][0], in_member);
    let members: Vec<(String, u64, u64)> = holder_type["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let name = m["name"].as_str().unwrap().to_string();
            (
                name,
                m["offset"].as_u64().unwrap(),
                m["metrics"][0].as_u64().unwrap(),
            )
        })
        .collect();
    let pages = format!("{{array:char[{}] pages}}", member_range.1);
    let after = 8 + member_range.1;
    assert_eq!(
        members,
        [
            ("{long_int before}".to_string(), 0, 0),
            (pages, 8, in_member),
            ("{long_int after}".to_string(), after, 0),
        ]
    );

    let output = Command::new(rdbx_bin())
        .arg("analyze")
        .arg(&expt_dir)
        .args(["-c", "data_single nosuch"])
        .output()
        .expect("run rdbx analyze");
    let stderr = text(&output.stderr);
    assert!(!output.status.success());
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("no data object \"nosuch\" had events"),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Hardware counters where the machine has a PMU: cycles and instructions
/// both record, and the analyzer derives CPI from them. Skipped, with the
/// reason printed, on a machine without one (the VMs this usually runs
/// on): there the refusal is what `a_refused_counter_is_an_error_line`
/// and tests/collector_cli.rs check.
#[test]
fn hardware_counters_where_there_is_a_pmu() {
    if !perfevents::Catalog::probe().has_cpu_pmu() {
        println!(
            "skipped: this machine has no hardware PMU (no CPU PMU in {}); \
             hardware counters cannot be tested here",
            perfevents::SYSFS_DEVICES
        );
        return;
    }
    let dir = scratch_dir("counters-hardware");
    let output = collect(&dir, &["-p", "off", "-h", "cycles,hi,insts,hi"], &[]);
    let stderr = text(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert_eq!(text(&output.stdout), "counters_known done\n");
    let expt_dir = dir.join("t.er");
    let expt = Experiment::open(&expt_dir).expect("open t.er");
    assert!(errors(&expt).is_empty(), "{:?}", errors(&expt));
    let lines = counter_lines(&expt);
    assert_eq!(lines.len(), 2, "{lines:?}");
    for index in 0..2 {
        let events = totals(&expt_dir, index, "events").unwrap_or(0);
        assert!(events >= 1_000_003, "counter {index}: {events} events");
    }
    let documents = analyze_json(&expt_dir, &["functions"]);
    let json = documents[0].to_string();
    assert!(json.contains("\"cpi\""), "{json}");
    let _ = std::fs::remove_dir_all(&dir);
}
