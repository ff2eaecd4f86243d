//! Arrays, artificial arrays, slices, bitfields and expressions too deep or
//! too long, on tests/programs/expr_arrays.c: rdbx and gdb stop at the same
//! line and their answers are compared (stack addresses by form only, as
//! the two run the program with different environments; gdb's `(T *) `
//! before a pointer is dropped, as rdbx's dbx-style print leaves it out).
mod common;
use common::*;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

const SOURCE: &str = "expr_arrays.c";

/// expr_arrays.c built with `-g` and `flags` (once per set of flags: the
/// tests run in parallel and share it).
fn program(flags: &[&str]) -> PathBuf {
    static BUILT: Mutex<BTreeMap<String, PathBuf>> = Mutex::new(BTreeMap::new());
    let key = flags.join(" ");
    let mut built = BUILT
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    built
        .entry(key.clone())
        .or_insert_with(|| {
            let dir = scratch_dir(&format!("expr-arrays{}", key.replace(' ', "")));
            let out = dir.join("expr_arrays");
            let status = std::process::Command::new("gcc")
                .arg("-g")
                .args(flags)
                .arg("-o")
                .arg(&out)
                .arg(sources_dir().join(SOURCE))
                .status()
                .expect("gcc");
            assert!(status.success(), "gcc failed for {SOURCE} {key}");
            out
        })
        .clone()
}

fn o0() -> PathBuf {
    program(&["-O0"])
}

fn stop_line() -> u32 {
    line_of(SOURCE, "stop")
}

/// Stack addresses differ between the two debuggers' runs: keep the form.
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
    // gdb's `(int (*)[3]) 0x...`: the type before a top-level pointer.
    if out.starts_with('(') {
        if let Some(i) = out.find(") 0x") {
            return out[i + 2..].to_string();
        }
    }
    out
}

/// rdbx's and gdb's transcripts of `commands` run at the stop line (the
/// same commands in both: `print`, `whatis`, `ptype` are spelled alike).
fn both(program: &Path, rdbx_commands: &[String], gdb_commands: &[String]) -> (Outcome, String) {
    let line = stop_line();
    let mut cmds = vec![format!("stop at {SOURCE}:{line}"), "run".to_string()];
    cmds.extend(rdbx_commands.iter().cloned());
    let mut gcmds = vec![format!("break {SOURCE}:{line}"), "run".to_string()];
    gcmds.extend(gdb_commands.iter().cloned());
    let cmds: Vec<&str> = cmds.iter().map(String::as_str).collect();
    let gcmds: Vec<&str> = gcmds.iter().map(String::as_str).collect();
    let outcome = Rdbx::batch().cmds(&cmds).prog(program, &[]).run();
    outcome.assert_stderr_well_formed();
    (outcome, gdb(program, &[], &gcmds))
}

/// rdbx alone, `commands` run at the stop line.
fn rdbx_at_stop(program: &Path, commands: &[String]) -> Outcome {
    let mut cmds = vec![
        format!("stop at {SOURCE}:{}", stop_line()),
        "run".to_string(),
    ];
    cmds.extend(commands.iter().cloned());
    let cmds: Vec<&str> = cmds.iter().map(String::as_str).collect();
    let outcome = Rdbx::batch().cmds(&cmds).prog(program, &[]).run();
    outcome.assert_stderr_well_formed();
    outcome
}

/// `print EXPR` in both debuggers: (expression, rdbx's value, gdb's).
fn compare_prints(program: &Path, exprs: &[&str]) -> Vec<(String, String, String)> {
    let prints: Vec<String> = exprs.iter().map(|e| format!("print {e}")).collect();
    let (ours, gout) = both(program, &prints, &prints);
    ours.assert_no_errors();
    let theirs = parse_gdb_values(&gout);
    assert_eq!(theirs.len(), exprs.len(), "gdb:\n{gout}");
    exprs
        .iter()
        .zip(theirs)
        .map(|(e, g)| (e.to_string(), ours.printed_one(e), g))
        .collect()
}

fn assert_prints_agree(program: &Path, exprs: &[&str]) {
    for (expr, ours, theirs) in compare_prints(program, exprs) {
        assert_eq!(
            normalize(&ours),
            normalize(&theirs),
            "print {expr} ({}): rdbx {ours:?} gdb {theirs:?}",
            program.display()
        );
    }
}

/// The `type = ...` answers of a transcript; a `ptype` of a structure
/// runs to its closing brace.
fn type_answers(text: &str) -> Vec<String> {
    let mut answers = Vec::new();
    let mut open: Option<String> = None;
    for line in text.lines() {
        if let Some(body) = open.as_mut() {
            body.push('\n');
            body.push_str(line);
            if line.starts_with('}') {
                answers.extend(open.take());
            }
        } else if line.starts_with("type = ") {
            if line.ends_with('{') {
                open = Some(line.to_string());
            } else {
                answers.push(line.to_string());
            }
        }
    }
    answers
}

fn assert_types_agree(program: &Path, commands: &[&str]) {
    let commands: Vec<String> = commands.iter().map(|c| c.to_string()).collect();
    let (ours, gout) = both(program, &commands, &commands);
    ours.assert_no_errors();
    let theirs = type_answers(&gout);
    assert_eq!(theirs.len(), commands.len(), "gdb:\n{gout}");
    let mine = type_answers(&ours.stdout);
    for ((command, mine), theirs) in commands.iter().zip(&mine).zip(&theirs) {
        assert_eq!(mine, theirs, "{command}\n{}", ours.transcript());
    }
    assert_eq!(mine.len(), theirs.len(), "{}", ours.transcript());
}

// ------------------------------------------------- deep and long input

/// Expressions far deeper or longer than anyone writes: long chains are
/// answered (as gdb does), deep nesting is one error line (gdb: "memory
/// exhausted"), rdbx does not crash and the program runs on to its right
/// end. The test binary is a debug build, whose frames are the largest.
#[test]
fn deep_and_long_expressions_do_not_crash() {
    let p = o0();
    let terms = 10_000;
    let sum = vec!["1"; terms].join("+");
    let products = vec!["table[1] / 10"; terms].join(" + ");
    let ors = vec!["n == 0"; terms].join(" || ");
    let parens = format!("{}1{}", "(".repeat(terms), ")".repeat(terms));
    let negations = format!("{}n", "-".repeat(terms));
    let members = format!("r{}", "->grid[0][0]".repeat(terms));
    let casts = format!("{}n", "(long)".repeat(terms));
    let ats = format!("table[0]{}", "@1".repeat(terms));
    // Longer than one argument may be: the commands come on stdin.
    let mut commands = format!("stop at {SOURCE}:{}\nrun\n", stop_line());
    for e in [
        &sum, &products, &ors, &parens, &negations, &members, &casts, &ats,
    ] {
        commands.push_str(&format!("print {e}\n"));
    }
    commands.push_str("print n\ncont\n");
    let o = Rdbx::interactive().prog(&p, &[]).stdin(&commands).run();
    o.assert_stderr_well_formed();
    assert_eq!(o.printed_one(&sum), terms.to_string(), "{}", o.transcript());
    assert_eq!(o.printed_one(&products), (2 * terms).to_string());
    assert_eq!(o.printed_one(&ors), "0");
    let errors = o.errors();
    let nested = "expression nested too deeply at column ";
    assert_eq!(
        errors.iter().filter(|e| e.contains(nested)).count(),
        4,
        "{}",
        o.transcript()
    );
    let too_many_arrays = "arrays made with @ nest at most 32 deep";
    assert!(
        errors
            .iter()
            .all(|e| e.contains(nested) || e.contains(too_many_arrays)),
        "{}",
        o.transcript()
    );
    assert_eq!(errors.len(), 5, "{}", o.transcript());
    // The session went on: later commands ran and the program ended well.
    assert_eq!(o.printed_one("n"), "5");
    assert!(o.has_line("sum 94"), "{}", o.transcript());
    assert_eq!(o.exit_lines(), [0], "{}", o.transcript());
    assert_eq!(o.exit_code(), Some(0), "{}", o.transcript());

    // gdb answers the long ones alike and runs out of parser stack on
    // the deep parentheses.
    let gout = gdb(
        &p,
        &[],
        &[&format!("print {sum}"), &format!("print {parens}")],
    );
    assert_eq!(
        parse_gdb_values(&gout),
        [terms.to_string()],
        "gdb:\n{}",
        &gout[..gout.len().min(2000)]
    );
    assert!(gout.contains("memory exhausted in expression"));
}

/// The same while attached to a process rdbx did not start: the session
/// goes on (a crash would leave the process without its debugger halfway
/// through), and after `detach` the process runs to its end with the
/// value assigned.
#[test]
fn deep_expressions_leave_an_attached_process_running() {
    let p = o0();
    // With an argument the program waits for `released` to be set.
    let target = Target::start_with_args(&p, &["wait"], false);
    let pid = target.pid();
    let deep = format!("{}1{}", "(".repeat(10_000), ")".repeat(10_000));
    let long = vec!["table[5]"; 10_000].join(" - ");
    let commands = format!("print {deep}\nprint {long}\nassign released = 1\ndetach\n");
    let o = Rdbx::interactive()
        .arg("-p")
        .arg(pid.to_string())
        .stdin(&commands)
        .run();
    o.assert_stderr_well_formed();
    assert_eq!(o.errors().len(), 1, "{}", o.transcript());
    assert!(o.errors()[0].contains("expression nested too deeply"));
    assert_eq!(o.printed_one(&long), (60 - 60 * 9_999).to_string());
    o.assert_out_contains(&format!("Detached from process {pid}"));
    let (rest, code) = target.finish();
    // argc is 2: bits.level and packed.a are one more than in the other
    // runs.
    assert_eq!((rest.as_str(), code), ("sum 95\nsmall 1234476\n", Some(0)));
}

// ------------------------------------------------- multi-dimensional arrays

#[test]
fn multidimensional_arrays_agree_with_gdb() {
    let exprs = [
        "r->grid",
        "r->grid[1]",
        "r->grid[1][2]",
        "r->grid[0][1] + r->grid[1][0]",
        "*r->grid",
        "*(r->grid + 1)",
        "(*(r->grid + 1))[2]",
        "&r->grid[1]",
        "r->grid + 1",
        "&r->grid[1][2]",
        "*&r->grid[1]",
        "r->grid[0][4]",
        "sizeof(r->grid)",
        "sizeof r->grid[1]",
        "sizeof(r->grid[1][0])",
        "r->cube",
        "r->cube[1]",
        "r->cube[1][0]",
        "r->cube[1][1][0]",
        "r->names",
        "r->names[2]",
        "r->names[1][2]",
        "r->pts[1]",
        "r->pts[1][0]",
        "r->pts[1][0].y",
        "rec.grid[1][1]",
    ];
    for p in [o0(), program(&["-O2"])] {
        assert_prints_agree(&p, &exprs);
    }
}

#[test]
fn types_of_array_rows_agree_with_gdb() {
    assert_types_agree(
        &o0(),
        &[
            "whatis r->grid",
            "whatis r->grid[1]",
            "whatis r->grid[1][2]",
            "whatis &r->grid[1]",
            "whatis r->grid + 1",
            "whatis r->cube[1]",
            "whatis r->cube[1][0]",
            "whatis r->pts[1]",
            "ptype r->grid",
            "ptype r->grid[1]",
            "ptype r->pts[1]",
            "ptype &r->pts[1]",
            "whatis heap[0]@2@3",
            "whatis &(heap[0]@3)",
            "ptype r->pts[0][0]@2",
        ],
    );
}

// ------------------------------------------------- gdb's @

#[test]
fn artificial_arrays_agree_with_gdb() {
    let exprs = [
        "*heap@n",
        "heap[1]@3",
        "*heap@n-2",
        "*argv@argc",
        "table[2]@3",
        "*words@3",
        "*r->grid@2",
        "r->grid[0][1]@4",
        "r->pts[0][1]@2",
        "heap[0]@2@2",
        "sizeof(heap[0]@3)",
        "(heap[0]@3)[1]",
        "*(heap[0]@3)",
        "&(heap[0]@3)",
        "r->names[0]@2",
        "r->names[1][0]@3",
        "r->names[0][1]@4",
    ];
    assert_prints_agree(&o0(), &exprs);
    // At -O2 argv and argc are gone by the stop: both debuggers say so.
    let mut optimized: Vec<&str> = exprs.to_vec();
    optimized.retain(|e| !e.contains("argv"));
    assert_prints_agree(&program(&["-O2"]), &optimized);
    let (o, gout) = both(
        &program(&["-O2"]),
        &["print *argv@argc".into()],
        &["print *argv@argc".into()],
    );
    assert_eq!(o.errors(), ["rdbx: value has been optimized out"]);
    assert!(
        gout.contains("value has been optimized out"),
        "gdb:\n{gout}"
    );
    // Formats apply to each element.
    let (ours, gout) = both(
        &o0(),
        &["print -x table[2]@3".into(), "print -d *words@2".into()],
        &["print/x table[2]@3".into(), "print/d *words@2".into()],
    );
    ours.assert_no_errors();
    let theirs = parse_gdb_values(&gout);
    assert_eq!(ours.printed_one("table[2]@3"), theirs[0]);
    assert_eq!(ours.printed_one("*words@2"), theirs[1]);
}

/// What gdb refuses, rdbx refuses too, each in one line that says why.
#[test]
fn bad_counts_after_at_are_one_line_errors() {
    let cases = [
        ("*heap@0", "invalid count 0 after @: it must be at least 1"),
        (
            "*heap@-1",
            "invalid count -1 after @: it must be at least 1",
        ),
        (
            "*heap@100000000",
            "100000000 objects of 4 bytes are more than the 16777216 bytes read at once",
        ),
        (
            "*heap@0x4000000000000000",
            "4611686018427387904 objects of 4 bytes are more than",
        ),
        ("*heap@1.5", "the count after @ must be an integer"),
        ("1@2", "only values in memory can be extended with @"),
        ("n + 1@2", "only values in memory can be extended with @"),
    ];
    // A bitfield has no address of its own, and functions are no objects.
    // (gdb reads the word the bitfield starts in, and the function's
    // bytes, as if they were.)
    let refused = rdbx_at_stop(&o0(), &["print bits.wide@2".into(), "print main@2".into()]);
    assert_eq!(
        refused.errors(),
        [
            "rdbx: only values in memory can be extended with @",
            "rdbx: @ makes arrays of objects, not of functions"
        ],
        "{}",
        refused.transcript()
    );
    let prints: Vec<String> = cases.iter().map(|(e, _)| format!("print {e}")).collect();
    let (ours, gout) = both(&o0(), &prints, &prints);
    let errors = ours.errors();
    assert_eq!(errors.len(), cases.len(), "{}", ours.transcript());
    for ((expr, message), line) in cases.iter().zip(&errors) {
        assert!(line.contains(message), "print {expr}: {line}");
    }
    // gdb prints no value for any of them either.
    assert!(parse_gdb_values(&gout).is_empty(), "gdb:\n{gout}");
}

// ------------------------------------------------- dbx's slices

/// A slice shows its elements with their indexes, the form gdb's `print
/// -array-indexes` uses; whole arrays and rows agree with it exactly, and
/// partial ones element by element.
#[test]
fn slices_show_elements_with_their_indexes() {
    let p = o0();
    let slices = [
        "table[0..5]",
        "r->grid[0..1][0..2]",
        "heap[0..4]",
        "table[2..4]",
        "table[..2]",
        "table[3..]",
        "table[1..5:2]",
        "r->grid[1][..:2]",
        "r->pts[1][0..1]",
        "words[1..2]",
    ];
    let prints: Vec<String> = slices.iter().map(|e| format!("print {e}")).collect();
    let gprints: Vec<String> = [
        "table",
        "r->grid",
        "*heap@5",
        "table[2]",
        "table[3]",
        "table[4]",
        "table[0]@3",
        "table[3]@3",
        "table[1]",
        "table[5]",
        "r->grid[1][0]",
        "r->grid[1][2]",
        "r->pts[1][0]",
        "r->pts[1][1]",
        "words[1]",
        "words[2]",
    ]
    .iter()
    .map(|e| format!("print -array-indexes on -- {e}"))
    .collect();
    let (ours, gout) = both(&p, &prints, &gprints);
    ours.assert_no_errors();
    let g = parse_gdb_values(&gout);
    assert_eq!(g.len(), 16, "gdb:\n{gout}");
    let shown = |expr: &str| normalize(&ours.printed_one(expr));
    assert_eq!(shown("table[0..5]"), g[0]);
    assert_eq!(shown("r->grid[0..1][0..2]"), g[1]);
    assert_eq!(shown("heap[0..4]"), g[2]);
    let indexed = |pairs: &[(u32, &String)]| {
        let parts: Vec<String> = pairs
            .iter()
            .map(|(i, v)| format!("[{i}] = {}", normalize(v)))
            .collect();
        format!("{{{}}}", parts.join(", "))
    };
    assert_eq!(
        shown("table[2..4]"),
        indexed(&[(2, &g[3]), (3, &g[4]), (4, &g[5])])
    );
    // `table[0]@3` is indexed from 0 in gdb as the slice is.
    assert_eq!(shown("table[..2]"), g[6]);
    assert_eq!(
        shown("table[3..]"),
        g[7].replace("[0]", "[3]")
            .replace("[1]", "[4]")
            .replace("[2]", "[5]")
    );
    assert_eq!(
        shown("table[1..5:2]"),
        indexed(&[(1, &g[8]), (3, &g[4]), (5, &g[9])])
    );
    assert_eq!(
        shown("r->grid[1][..:2]"),
        indexed(&[(0, &g[10]), (2, &g[11])])
    );
    assert_eq!(
        shown("r->pts[1][0..1]"),
        indexed(&[(0, &g[12]), (1, &g[13])])
    );
    assert_eq!(shown("words[1..2]"), indexed(&[(1, &g[14]), (2, &g[15])]));
}

#[test]
fn bad_slices_are_one_line_errors() {
    let cases = [
        (
            "table[3..1]",
            "empty slice: its last index, 1, is below its first, 3",
        ),
        (
            "table[0..2:0]",
            "the stride of a slice must be at least 1, not 0",
        ),
        (
            "heap[1..]",
            "a slice of \"int *\" needs its last index (first..last)",
        ),
        (
            "n[0..1]",
            "cannot slice something of type \"int\": only arrays and pointers",
        ),
        ("table[0..1.5]", "array subscript is not an integer"),
        ("table[0..", "syntax error at column 10"),
    ];
    let mut cmds: Vec<String> = cases.iter().map(|(e, _)| format!("print {e}")).collect();
    // A slice of more elements than print shows is cut as gdb cuts arrays.
    cmds.push("print heap[0..100000]".into());
    let ours = rdbx_at_stop(&o0(), &cmds);
    let errors = ours.errors();
    assert_eq!(errors.len(), cases.len(), "{}", ours.transcript());
    for ((expr, message), line) in cases.iter().zip(&errors) {
        assert!(line.contains(message), "print {expr}: {line}");
    }
    let long = ours.printed_one("heap[0..100000]");
    assert!(long.starts_with("{[0] = 1, [1] = 4, [2] = 9, [3] = 16, [4] = 25, "));
    assert!(long.ends_with("...}"), "{long}");
    assert_eq!(long.matches("] = ").count(), 200, "{long}");
    assert!(long.contains(", [199] = "), "{long}");
}

// ------------------------------------------------- bitfields

const BITFIELD_PRINTS: [&str; 25] = [
    "bits",
    "bits.flag",
    "bits.level",
    "bits.delta",
    "bits.wide",
    "bits.span",
    "bits.tiny",
    "bits.big",
    "bits.sbig",
    "bits.mode",
    "bits.ok",
    "bits.level + 1",
    "-bits.delta",
    "bits.span * 2",
    "late",
    "late.flag",
    "late.level",
    "late.neg",
    "late.top",
    "sizeof(struct flags)",
    "sizeof(late)",
    "(long)bits.big",
    "bits.big >> 20",
    "bits.tiny == -1",
    "r->id",
];

/// Each bitfield of `struct flags` (mixed widths, signed and unsigned, one
/// across a 32-bit unit, a `char`, an enum and a `_Bool` among them) and of
/// `struct late` (past 16 bytes), at -O0, -O2 and in DWARF 4's form of
/// bitfields (DW_AT_bit_offset), in rdbx and gdb.
#[test]
fn bitfields_agree_with_gdb() {
    for flags in [
        &["-O0"][..],
        &["-O2"],
        &["-O0", "-gdwarf-4"],
        &["-O2", "-gdwarf-4"],
    ] {
        let p = program(flags);
        assert_prints_agree(&p, &BITFIELD_PRINTS);
        let formats = [
            "bits",
            "late",
            "bits.delta",
            "bits.sbig",
            "bits.span",
            "bits.tiny",
        ];
        let ours: Vec<String> = formats.iter().map(|e| format!("print -x {e}")).collect();
        let theirs: Vec<String> = formats.iter().map(|e| format!("print/x {e}")).collect();
        let (o, gout) = both(&p, &ours, &theirs);
        o.assert_no_errors();
        let g = parse_gdb_values(&gout);
        assert_eq!(g.len(), formats.len(), "gdb:\n{gout}");
        for (expr, theirs) in formats.iter().zip(&g) {
            assert_eq!(
                &o.printed_one(expr),
                theirs,
                "print/x {expr} with {flags:?}"
            );
        }
    }
}

#[test]
fn bitfields_through_a_pointer_parameter_agree_with_gdb() {
    for p in [o0(), program(&["-O2"])] {
        let (o, gout) = {
            let cmds = [
                "stop in stop_here",
                "run",
                "print f->level",
                "print f->sbig",
                "print *f",
                "print f->tiny",
            ];
            let gcmds = [
                "break stop_here",
                "run",
                "print f->level",
                "print f->sbig",
                "print *f",
                "print f->tiny",
            ];
            (
                Rdbx::batch().cmds(&cmds).prog(&p, &[]).run(),
                gdb(&p, &[], &gcmds),
            )
        };
        o.assert_no_errors();
        let g = parse_gdb_values(&gout);
        assert_eq!(g.len(), 4, "gdb:\n{gout}");
        for (expr, theirs) in ["f->level", "f->sbig", "*f", "f->tiny"].iter().zip(&g) {
            assert_eq!(&o.printed_one(expr), theirs, "{expr} in {}", p.display());
        }
    }
}

/// A structure of bitfields passed in two registers: at -O2 its bytes are
/// pieces of rdi and rsi, its bitfields cut out of them.
#[test]
fn bitfields_in_registers_agree_with_gdb() {
    let exprs = ["s", "s.a", "s.b", "s.c", "s.d", "s.b * 2", "sizeof(s)"];
    for flags in [&["-O0"][..], &["-O2"], &["-O2", "-gdwarf-4"]] {
        let p = program(flags);
        let mut cmds = vec!["stop in use_small".to_string(), "run".into()];
        let mut gcmds = vec!["break use_small".to_string(), "run".into()];
        for e in exprs {
            cmds.push(format!("print {e}"));
            gcmds.push(format!("print {e}"));
        }
        cmds.push("print -x s".into());
        gcmds.push("print/x s".into());
        let cmds: Vec<&str> = cmds.iter().map(String::as_str).collect();
        let gcmds: Vec<&str> = gcmds.iter().map(String::as_str).collect();
        let o = Rdbx::batch().cmds(&cmds).prog(&p, &[]).run();
        o.assert_no_errors();
        let gout = gdb(&p, &[], &gcmds);
        let theirs = parse_gdb_values(&gout);
        assert_eq!(theirs.len(), exprs.len() + 1, "gdb:\n{gout}");
        for (expr, theirs) in exprs.iter().zip(&theirs) {
            assert_eq!(&o.printed_one(expr), theirs, "{expr} with {flags:?}");
        }
        assert_eq!(
            o.printed("s")[1],
            theirs[exprs.len()],
            "p/x s with {flags:?}"
        );
    }
}

#[test]
fn ptype_of_bitfields_agrees_with_gdb() {
    assert_types_agree(
        &o0(),
        &[
            "ptype struct flags",
            "ptype struct late",
            "ptype struct small",
            "whatis bits.level",
            "whatis bits.tiny",
            "whatis bits.mode",
        ],
    );
}

/// `assign` (and gdb's `set var`) changes a bitfield's bits and no
/// others: the neighbours print unchanged in both debuggers, and the
/// program, run on, computes with the new values.
#[test]
fn assigning_bitfields_agrees_with_gdb() {
    let assignments = [
        ("bits.level", "7"),
        ("bits.delta", "-16"),
        ("bits.span", "0xfff"),
        ("bits.tiny", "1"),
        ("bits.sbig", "-5"),
        ("bits.mode", "ON"),
        ("bits.ok", "0"),
        ("late.neg", "7"),
        ("late.flag", "0"),
        ("r->grid[1][0]", "40"),
    ];
    let mut ours = Vec::new();
    let mut theirs = Vec::new();
    for (target, value) in assignments {
        ours.push(format!("assign {target} = {value}"));
        theirs.push(format!("set var {target} = {value}"));
    }
    for cmd in ["print bits", "print late", "print -x bits", "cont"] {
        ours.push(cmd.to_string());
    }
    for cmd in ["print bits", "print late", "print/x bits", "continue"] {
        theirs.push(cmd.to_string());
    }
    let p = o0();
    let (o, gout) = both(&p, &ours, &theirs);
    o.assert_no_errors();
    let g = parse_gdb_values(&gout);
    assert_eq!(g.len(), 3, "gdb:\n{gout}");
    assert_eq!(o.printed("bits")[0], g[0]);
    assert_eq!(o.printed_one("late"), g[1]);
    assert_eq!(o.printed("bits")[1], g[2]);
    // The program's own sum, with bits.level 7, delta -16, late.neg 7 and
    // grid[1][0] 40: 55 + (21 - 4 + 40) + 7 - 16 + 2 + 7 + 20.
    assert!(o.has_line("sum 132"), "{}", o.transcript());
    assert!(o.has_line("small 1234475"), "{}", o.transcript());
    assert!(gout.contains("sum 132"), "gdb:\n{gout}");
    // Each assign printed the value read back.
    assert_eq!(o.printed_one("bits.level"), "7");
    assert_eq!(o.printed_one("bits.delta"), "-16");
    assert_eq!(o.printed_one("bits.mode"), "ON");
    // More bits than the field has: the low ones are stored, as in C (gdb
    // warns that it does).
    let (o, gout) = both(
        &p,
        &["assign bits.level = 9".into(), "print bits.level".into()],
        &["set var bits.level = 9".into(), "print bits.level".into()],
    );
    assert_eq!(o.printed("bits.level"), ["1", "1"]);
    assert_eq!(parse_gdb_values(&gout), ["1"]);
}
