//! Variables in outer frames of optimized code, compared with gdb.
//!
//! tests/programs/inspect_opt.c is built at -O0 and -O2; both debuggers stop
//! at the first call of `leaf` (innermost of leaf < middle < recurse x4 <
//! outer < main), select every frame in turn and list its arguments and
//! locals. At -O2 the values live in callee-saved registers, in caller-saved
//! registers gcc knows the callee keeps (-fipa-ra), or in location lists that
//! end partway through the function, so the frames' registers must come from
//! the CFI. Values must agree with gdb's, those gdb gets from the caller's
//! call site (`NAME=NAME@entry=...`, DW_OP_entry_value) included.
//! Breakpoint conditions use the same evaluator: one that cannot be
//! evaluated at a hit stops there and says why.
mod common;
use common::*;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Mutex;

const SOURCE: &str = "inspect_opt.c";

/// Frames from `leaf` out to `main`.
const FRAMES: usize = 8;

/// inspect_opt.c built with `-g -O<level>` (once per level: tests run in
/// parallel and share it).
fn program(level: &str) -> PathBuf {
    static BUILT: Mutex<BTreeMap<String, PathBuf>> = Mutex::new(BTreeMap::new());
    let mut built = BUILT
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    built
        .entry(level.to_string())
        .or_insert_with(|| {
            let dir = scratch_dir(&format!("inspect-{level}"));
            let out = dir.join(format!("inspect_opt-{level}"));
            let status = std::process::Command::new("gcc")
                .args(["-g", &format!("-{level}"), "-o"])
                .arg(&out)
                .arg(sources_dir().join(SOURCE))
                .status()
                .expect("gcc");
            assert!(status.success(), "gcc failed for {SOURCE} at {level}");
            out
        })
        .clone()
}

/// Stack addresses differ between the two runs (different environments):
/// compare their form only.
fn normalize(value: &str) -> String {
    let mut out = String::new();
    let mut rest = value.trim();
    while let Some(i) = rest.find("0x7ff") {
        out.push_str(&rest[..i]);
        out.push_str("0x7ff...");
        rest = rest[i..]
            .trim_start_matches("0x")
            .trim_start_matches(|c: char| c.is_ascii_hexdigit());
    }
    out.push_str(rest);
    // gdb's `(T *) 0x...`: the type before a top-level pointer, which
    // rdbx's print leaves out.
    if out.starts_with('(') {
        if let Some(i) = out.find(") 0x") {
            return out[i + 2..].to_string();
        }
    }
    out
}

/// `NAME = VALUE` lines, by frame: a frame starts at a line for which
/// `starts_frame` is true.
fn values_by_frame(text: &str, starts_frame: impl Fn(&str) -> bool) -> Vec<Vec<(String, String)>> {
    let mut frames: Vec<Vec<(String, String)>> = Vec::new();
    for line in text.lines() {
        if starts_frame(line) {
            frames.push(Vec::new());
            continue;
        }
        let Some((name, value)) = line.split_once(" = ") else {
            continue;
        };
        let is_name =
            !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if let (true, Some(frame)) = (is_name, frames.last_mut()) {
            frame.push((name.to_string(), value.to_string()));
        }
    }
    frames
}

/// Parameters gdb shows as `NAME=NAME@entry=VALUE` in a frame line: their
/// value came from the caller's call site.
fn entry_values(frame_line: &str) -> Vec<String> {
    frame_line
        .split(['(', ',', ' '])
        .filter_map(|part| {
            let (name, rest) = part.split_once('=')?;
            rest.starts_with(&format!("{name}@entry="))
                .then(|| name.to_string())
        })
        .collect()
}

struct Listing {
    /// Per frame, innermost first: `NAME = VALUE` from `info args` and
    /// `info locals`.
    rdbx: Vec<Vec<(String, String)>>,
    gdb: Vec<Vec<(String, String)>>,
    /// Per frame: parameters whose gdb value is an entry value.
    gdb_entry_values: Vec<Vec<String>>,
}

fn list_frames(level: &str) -> Listing {
    let p = program(level);
    let mut cmds = vec!["stop in leaf".to_string(), "run".to_string()];
    let mut gcmds = vec!["break leaf".to_string(), "run".to_string()];
    for n in 0..FRAMES {
        // dbx numbers frames from 1, gdb from 0.
        cmds.push(format!("frame {}", n + 1));
        gcmds.push(format!("frame {n}"));
        for c in ["info args", "info locals"] {
            cmds.push(c.to_string());
            gcmds.push(c.to_string());
        }
    }
    let cmds: Vec<&str> = cmds.iter().map(String::as_str).collect();
    let gcmds: Vec<&str> = gcmds.iter().map(String::as_str).collect();
    let o = Rdbx::batch().cmds(&cmds).prog(&p, &[]).run();
    o.assert_stderr_well_formed();
    let gout = gdb(&p, &[], &gcmds);
    let is_gdb_frame = |l: &str| l.starts_with('#');
    let rdbx = values_by_frame(&o.stdout, |l| l.starts_with("=>["));
    let gdb_values = values_by_frame(&gout, is_gdb_frame);
    let gdb_entry_values = gout
        .lines()
        .filter(|l| is_gdb_frame(l))
        .map(entry_values)
        .collect();
    assert_eq!(rdbx.len(), FRAMES, "rdbx frames\n{}", o.transcript());
    assert_eq!(gdb_values.len(), FRAMES, "gdb frames\n{gout}");
    Listing {
        rdbx,
        gdb: gdb_values,
        gdb_entry_values,
    }
}

/// Every variable gdb lists, rdbx lists with the same value (entry values
/// too). Returns the (frame, name, value) that rdbx showed, for further
/// checks, and the (frame, name) of gdb's entry values.
fn assert_agree(level: &str) -> BTreeMap<(usize, String), String> {
    let listing = list_frames(level);
    let mut shown = BTreeMap::new();
    for (n, (ours, theirs)) in listing.rdbx.iter().zip(&listing.gdb).enumerate() {
        let names =
            |vars: &[(String, String)]| vars.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
        assert_eq!(
            names(ours),
            names(theirs),
            "-{level} frame {n}: names differ"
        );
        for ((name, our_value), (_, their_value)) in ours.iter().zip(theirs) {
            let (ours_n, theirs_n) = (normalize(our_value), normalize(their_value));
            let from_call_site = listing.gdb_entry_values[n].contains(name);
            assert_eq!(
                ours_n, theirs_n,
                "-{level} frame {n} (gdb #{n}): {name} (entry value: {from_call_site}): \
                 rdbx {our_value:?} gdb {their_value:?}"
            );
            shown.insert((n, name.clone()), our_value.clone());
        }
    }
    shown
}

fn value<'a>(shown: &'a BTreeMap<(usize, String), String>, frame: usize, name: &str) -> &'a str {
    shown
        .get(&(frame, name.to_string()))
        .map(String::as_str)
        .unwrap_or_else(|| panic!("frame {frame} has no {name}"))
}

#[test]
fn outer_frames_agree_with_gdb_at_o0() {
    let shown = assert_agree("O0");
    // At -O0 everything is on the stack: no exceptions.
    assert_eq!(value(&shown, 1, "keep"), "292");
    assert_eq!(value(&shown, 5, "acc"), "10");
    assert_eq!(value(&shown, 6, "count"), "2");
}

#[test]
fn outer_frames_agree_with_gdb_at_o2() {
    let shown = assert_agree("O2");
    // middle: a in rdi, which leaf does not touch (-fipa-ra); keep and
    // scaled computed from it.
    assert_eq!(value(&shown, 1, "a"), "97");
    assert_eq!(value(&shown, 1, "keep"), "292");
    assert_eq!(value(&shown, 1, "scaled"), "50");
    // The callee's result does not exist yet: its location starts at the
    // return address.
    assert_eq!(value(&shown, 1, "r"), "<optimized out>");
    // recurse: here and depth in rbx/rbp, saved by the callee's prologue.
    assert_eq!(value(&shown, 3, "here"), "97");
    assert_eq!(value(&shown, 4, "here"), "48");
    assert_eq!(value(&shown, 5, "here"), "23");
    assert_eq!(value(&shown, 4, "depth"), "2");
    assert_eq!(value(&shown, 3, "below"), "<optimized out>");
    // outer: the loop's registers.
    assert_eq!(value(&shown, 6, "i"), "0");
    assert_eq!(value(&shown, 6, "total"), "0");
    // Entry values (DW_OP_entry_value) from the callers' call sites:
    // recurse's acc is dead in its register by the recursive call.
    assert_eq!(value(&shown, 3, "acc"), "48");
    assert_eq!(value(&shown, 4, "acc"), "23");
}

#[test]
fn entry_values_print_as_gdb_prints_them() {
    let p = program("O2");
    let cmds = [
        "stop in leaf",
        "run",
        "frame 4",
        "print acc",
        "print acc * 2 + depth",
        "frame 5",
        "print acc",
        "frame 1",
        "print depth",
        "print salt",
    ];
    let gcmds = [
        "break leaf",
        "run",
        "frame 3",
        "print acc",
        "print acc * 2 + depth",
        "frame 4",
        "print acc",
        "frame 0",
        "print depth",
        "print salt",
    ];
    let o = Rdbx::batch().cmds(&cmds).prog(&p, &[]).run();
    o.assert_no_errors();
    let gout = gdb(&p, &[], &gcmds);
    let theirs = parse_gdb_values(&gout);
    let exprs = ["acc", "acc * 2 + depth", "acc", "depth", "salt"];
    assert_eq!(theirs.len(), exprs.len(), "gdb:\n{gout}");
    let ours: Vec<String> = o
        .stdout
        .lines()
        .filter_map(|l| l.split_once(" = "))
        .filter(|(name, _)| exprs.contains(name))
        .map(|(_, v)| v.to_string())
        .collect();
    assert_eq!(ours, theirs, "{}", o.transcript());
    assert_eq!(theirs[0], "48");
}

#[test]
fn expressions_in_outer_frames_agree_with_gdb() {
    for level in ["O0", "O2"] {
        let p = program(level);
        let exprs: &[(usize, &[&str])] = &[
            (1, &["keep * scaled", "a + b", "(char)(a - 32)"]),
            (5, &["here + depth", "depth * 100"]),
            (
                6,
                &["list->key", "*list->next", "list->next->next->key + count"],
            ),
            (7, &["nodes[2]", "nodes[3].next", "sizeof(nodes)"]),
        ];
        let mut cmds = vec!["stop in leaf".to_string(), "run".to_string()];
        let mut gcmds = vec!["break leaf".to_string(), "run".to_string()];
        for (frame, list) in exprs {
            cmds.push(format!("frame {}", frame + 1));
            gcmds.push(format!("frame {frame}"));
            for e in *list {
                cmds.push(format!("print {e}"));
                gcmds.push(format!("print {e}"));
            }
        }
        let cmds: Vec<&str> = cmds.iter().map(String::as_str).collect();
        let gcmds: Vec<&str> = gcmds.iter().map(String::as_str).collect();
        let o = Rdbx::batch().cmds(&cmds).prog(&p, &[]).run();
        o.assert_no_errors();
        let gout = gdb(&p, &[], &gcmds);
        let theirs = parse_gdb_values(&gout);
        let all: Vec<&str> = exprs.iter().flat_map(|(_, l)| l.iter().copied()).collect();
        assert_eq!(theirs.len(), all.len(), "gdb:\n{gout}");
        for (e, their) in all.iter().zip(&theirs) {
            let ours = o.printed_one(e);
            assert_eq!(
                normalize(&ours),
                normalize(their),
                "-{level}: print {e}: rdbx {ours:?} gdb {their:?}"
            );
        }
    }
}

#[test]
fn a_condition_selects_the_hit_gdb_selects() {
    let p = program("O2");
    let o = Rdbx::batch()
        .cmds(&[
            "stop in leaf -if salt == 103 && depth > 97",
            "run",
            "print depth",
            "frame 7",
            "print i",
        ])
        .prog(&p, &["3"])
        .run();
    o.assert_no_errors();
    let gout = gdb(
        &p,
        &["3"],
        &[
            "break leaf if salt == 103 && depth > 97",
            "run",
            "print depth",
            "frame 6",
            "print i",
        ],
    );
    let theirs = parse_gdb_values(&gout);
    assert_eq!(theirs.len(), 2, "gdb:\n{gout}");
    assert_eq!(o.printed_one("depth"), theirs[0]);
    assert_eq!(o.printed_one("i"), theirs[1]);
    assert_ne!(theirs[0], "97", "the condition skipped the first call");
}

/// A condition that fails at a hit stops there with the reason on stderr.
fn failing_condition(stop: &str, expected: &str) {
    let p = program("O2");
    let o = Rdbx::batch()
        .cmds(&[stop, "run", "where 1"])
        .prog(&p, &[])
        .run();
    o.assert_stderr_well_formed();
    let why: Vec<&str> = o
        .error_lines()
        .into_iter()
        .filter(|l| l.contains("condition of breakpoint (1) could not be evaluated"))
        .collect();
    assert_eq!(why.len(), 1, "{}", o.transcript());
    assert!(why[0].contains(expected), "{}", o.transcript());
    assert_eq!(o.stops().len(), 1, "stopped at the hit\n{}", o.transcript());
    o.assert_no_leftover_processes();
}

#[test]
fn a_condition_reading_unreadable_memory_stops_and_says_why() {
    failing_condition("stop in leaf -if *(int*)0 == 1", "0x0");
}

#[test]
fn a_condition_naming_a_variable_out_of_scope_stops_and_says_why() {
    // keep is middle's, not leaf's (gdb refuses this when it is set).
    failing_condition("stop in leaf -if keep > 0", "\"keep\"");
}

#[test]
fn a_condition_on_an_optimized_out_variable_stops_and_says_why() {
    // below has no location before the recursive call returns; gdb says
    // "value has been optimized out" too.
    let line = line_of(SOURCE, "call");
    failing_condition(
        &format!("stop at {SOURCE}:{line} -if below == 1"),
        "optimized out",
    );
}
