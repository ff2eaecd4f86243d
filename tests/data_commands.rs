//! The data-inspection commands through the rdbx binary: display and
//! undisplay, print formats and the value history, examine / x, dump /
//! info locals, info args, whatis. Values are compared with gdb's at the
//! same stop where the formats agree.
mod common;
use common::*;
use std::path::PathBuf;
use std::sync::OnceLock;

/// tests/programs/data_values.c built at -O0 (kept here so that the
/// shared build recipes need no change).
fn data_values() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let dir = scratch_dir("data_values_build");
            let out = dir.join("data_values");
            let status = std::process::Command::new("gcc")
                .args(["-g", "-O0", "-o"])
                .arg(&out)
                .arg(sources_dir().join("data_values.c"))
                .status()
                .expect("gcc runs");
            assert!(status.success(), "gcc failed on data_values.c");
            out
        })
        .clone()
}

/// tests/programs/data_types.c built at -O0.
fn data_types() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let dir = scratch_dir("data_types_build");
            let out = dir.join("data_types");
            let status = std::process::Command::new("gcc")
                .args(["-g", "-O0", "-o"])
                .arg(&out)
                .arg(sources_dir().join("data_types.c"))
                .status()
                .expect("gcc runs");
            assert!(status.success(), "gcc failed on data_types.c");
            out
        })
        .clone()
}

/// The lines of `type = ...` answers, multi-line ones included.
fn type_lines(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| l.starts_with("type = ") || l.starts_with("    ") || l.starts_with('}'))
        .map(String::from)
        .collect()
}

fn rdbx(cmds: &[&str]) -> Outcome {
    Rdbx::batch().cmds(cmds).prog(&data_values(), &[]).run()
}

/// Lines starting with `N: `, the display lines.
fn display_lines(o: &Outcome) -> Vec<&str> {
    o.stdout
        .lines()
        .filter(|l| {
            l.split_once(": ")
                .is_some_and(|(n, _)| n.parse::<u32>().is_ok())
        })
        .collect()
}

#[test]
fn displays_show_at_every_stop_in_the_stopped_frame() {
    let o = rdbx(&[
        "stop in work",
        "run",
        "display g_counter",
        "display/x n",
        "display total",
        "cont",
        "undisplay 1",
        "cont",
        "display",
        "undisplay 9",
    ]);
    let error = "3: total = <error: no symbol \"total\" in current context>";
    assert_eq!(
        display_lines(&o),
        [
            // When created.
            "1: g_counter = 0",
            "2: /x n = 0x0",
            error,
            // Second stop in work(1): work(0) added 0 + 1 + 2.
            "1: g_counter = 3",
            "2: /x n = 0x1",
            error,
            // Third stop, display 1 gone.
            "2: /x n = 0x2",
            error,
            // `display` shows them all now.
            "2: /x n = 0x2",
            error,
        ],
        "{}",
        o.transcript()
    );
    assert!(
        o.stderr.contains("rdbx: no display 9"),
        "{}",
        o.transcript()
    );
    o.assert_stderr_well_formed();
}

#[test]
fn display_after_up_evaluates_there_and_belongs_to_that_frame() {
    let o = rdbx(&[
        "stop in work",
        "run",
        "up",
        "display total",
        "cont",
        "display",
        "up",
        "display",
    ]);
    o.assert_no_errors();
    // Made in main, of main's local: shown at once, then not at the stop
    // in work (as gdb), and again once main's frame is selected.
    assert_eq!(
        display_lines(&o),
        ["1: total = 0", "1: total = 3"],
        "{}",
        o.transcript()
    );
}

/// Runs gdb-spelled `p` commands at `work` in both debuggers: every
/// `$N = VALUE` line must be the same.
fn assert_history_lines_agree_with_gdb(prints: &[&str]) {
    let mut cmds = vec!["stop in work", "run"];
    cmds.extend(prints);
    let o = rdbx(&cmds);
    o.assert_no_errors();
    let ours: Vec<String> = o
        .stdout
        .lines()
        .filter(|l| l.starts_with('$'))
        .map(String::from)
        .collect();
    let mut gdb_cmds = vec!["break work", "run"];
    gdb_cmds.extend(prints);
    let theirs: Vec<String> = parse_gdb_values(&gdb(&data_values(), &[], &gdb_cmds))
        .into_iter()
        .enumerate()
        .map(|(i, v)| format!("${} = {v}", i + 1))
        .collect();
    assert_eq!(ours, theirs, "{}", o.transcript());
}

#[test]
fn print_formats_and_history_agree_with_gdb() {
    let prints = [
        "p g_arr",
        "p/x g_arr",
        "p/o g_arr",
        "p/t g_counter",
        "p/x g_pt",
        "p/d g_pt",
        "p/c g_arr",
        "p/x g_doubles",
        "p/x -1",
        "p/c 65",
        "p/x 2.5",
        "p/z 5",
        "p $",
        "p $$2",
        "p $1",
        "p $$",
    ];
    assert_history_lines_agree_with_gdb(&prints);
}

/// Formats on aggregates use each member's own type (a `short` of -2 is
/// 0xfffe, doubles show their bits, `/f` reads ints as floats), and the
/// value history keeps types: `$.y`, `$[2]`, `*&$N` go on from it.
#[test]
fn aggregate_formats_and_typed_history_agree_with_gdb() {
    let prints = [
        "p/x g_rec",
        "p/d g_rec",
        "p/c g_rec",
        "p/u g_rec",
        "p/t g_rec",
        "p/o g_rec",
        "p/x g_text",
        "p/c g_text",
        "p/d g_bytes",
        "p/f g_arr",
        "p/x g_longs",
        "p/a g_fn",
        "p/z g_pt",
        "p g_pt",
        "p $.y",
        "p g_arr",
        "p $[2]",
        "p g_rec",
        "p $.where",
        "p $$.counts[1]",
        "p *&$$2",
        "p/x $1.small",
        // Pointers on their own: gdb's `(TYPE) ` and the symbol.
        "p &g_pt",
        "p g_fn",
        "p &g_arr[1]",
        "p (char *)0",
        "p *$$3",
    ];
    assert_history_lines_agree_with_gdb(&prints);
}

#[test]
fn print_dbx_style_names_the_expression() {
    let o = rdbx(&[
        "stop in work",
        "run",
        "print g_counter",
        "print -x g_pt",
        "print -o g_arr",
        "p $9",
    ]);
    assert_eq!(o.printed_one("g_counter"), "0");
    assert_eq!(o.printed_one("g_pt"), "{x = 0x3, y = 0xfffffffc}");
    assert_eq!(o.printed_one("g_arr"), "{01, 02, 037777777775, 04}");
    // dbx-style prints do not enter the history.
    assert!(
        o.stderr.contains("history has not yet reached $9"),
        "{}",
        o.transcript()
    );
}

#[test]
fn examine_matches_gdb_x() {
    let examines = [
        "x/4xw &g_arr",
        "x/2dw &g_arr",
        "x/9xb g_bytes",
        "x/3xh &g_bytes",
        "x/2xg g_longs",
        "x/2dg g_longs",
        "x/3c g_text",
        "x/2s g_text",
        "x/2fg g_doubles",
        "x/a &g_fn",
        "x/2tb g_bytes",
        "x/3ow &g_arr",
        "x/2ub g_bytes",
    ];
    let mut cmds = vec!["stop in work", "run"];
    cmds.extend(examines);
    let o = rdbx(&cmds);
    o.assert_no_errors();
    let mut gdb_cmds = vec!["break work", "run"];
    gdb_cmds.extend(examines);
    let gdb_text = gdb(&data_values(), &[], &gdb_cmds);
    let memory_lines = |text: &str| -> Vec<String> {
        text.lines()
            .filter(|l| l.starts_with("0x") && l.contains(":\t"))
            .map(String::from)
            .collect()
    };
    let ours = memory_lines(&o.stdout);
    assert_eq!(ours, memory_lines(&gdb_text), "{}", o.transcript());
    assert_eq!(ours.len(), 15, "{}", o.transcript());
}

#[test]
fn examine_continues_and_reports_unreadable_memory() {
    let o = rdbx(&[
        "stop in work",
        "run",
        "examine &g_arr /2d",
        "x",
        "examine g_bytes / 4 xb",
        "x/2x",
        "x/xw 0",
        "x/2i $pc",
    ]);
    let lines: Vec<&str> = o.stdout.lines().filter(|l| l.starts_with("0x")).collect();
    assert!(lines[0].ends_with(" <g_arr>:\t1\t2"), "{}", o.transcript());
    // `x` goes on after the last unit, in the same format and size.
    assert!(lines[1].ends_with(" <g_arr+8>:\t-3"), "{}", o.transcript());
    assert!(
        lines[2].ends_with(" <g_bytes>:\t0xde\t0xad\t0xbe\t0xef"),
        "{}",
        o.transcript()
    );
    assert!(
        lines[3].ends_with(" <g_bytes+4>:\t0x01\t0x02"),
        "{}",
        o.transcript()
    );
    assert_eq!(
        o.errors(),
        ["rdbx: cannot access memory at 0x0"],
        "{}",
        o.transcript()
    );
    // x/i disassembles from the pc.
    assert!(
        o.stdout.contains("=> 0x") && o.stdout.contains("<work+"),
        "{}",
        o.transcript()
    );
}

#[test]
fn dump_and_info_args_follow_the_selected_frame() {
    let line = line_of("data_values.c", "work_update");
    let o = rdbx(&[
        &format!("stop at \"data_values.c\":{line}"),
        "run",
        "dump",
        "info args",
        "up",
        "info locals",
        "info args",
        "frame 1",
        "dump main",
    ]);
    o.assert_no_errors();
    let gdb_text = gdb(
        &data_values(),
        &[],
        &[
            &format!("break data_values.c:{line}"),
            "run",
            "info locals",
            "info args",
            "up",
            "info locals",
            "info args",
        ],
    );
    let value_lines = |text: &str| -> Vec<String> {
        text.lines()
            .filter(|l| {
                let name_first = l
                    .split_once(" = ")
                    .is_some_and(|(name, _)| name.chars().all(|c| c.is_alphanumeric() || c == '_'));
                name_first || l.starts_with("No ")
            })
            .map(String::from)
            .collect()
    };
    let ours = value_lines(&o.stdout);
    let theirs = value_lines(&gdb_text);
    assert_eq!(ours[..theirs.len()], theirs[..], "{}", o.transcript());
    // `dump main` from work's frame shows main's locals.
    assert_eq!(
        ours[theirs.len()..],
        ["i = 0", "origin = {x = 1, y = 2}", "total = 0"],
        "{}",
        o.transcript()
    );
}

#[test]
fn whatis_names_the_type() {
    let o = rdbx(&[
        "stop in work",
        "run",
        "whatis g_rec",
        "whatis n",
        "ptype g_counter",
    ]);
    let types: Vec<&str> = o
        .stdout
        .lines()
        .filter(|l| l.starts_with("type = "))
        .collect();
    assert_eq!(
        types,
        ["type = struct record", "type = int", "type = int"],
        "{}",
        o.transcript()
    );
}

#[test]
fn ptype_expands_types_like_gdb() {
    let queries = [
        "ptype g_shape",
        "ptype struct point",
        "ptype g_pt",
        "whatis g_pt",
        "ptype point_t",
        "whatis point_t",
        "ptype myint",
        "whatis myint",
        "ptype g_bits",
        "ptype enum color",
        "ptype g_flags",
        "ptype g_sparse",
        "ptype union number",
        "ptype g_node",
        "ptype g_arr",
        "ptype g_fn",
        "ptype &g_pt",
        "whatis struct point",
        "ptype g_shape.area",
        "ptype g_shape.range",
        "whatis g_shape.range",
        "ptype g_shape.counts",
        "ptype point_t *",
        "whatis g_long",
        "up",
        "ptype pp",
        "whatis pp",
    ];
    let mut cmds = vec!["stop in report", "run"];
    cmds.extend(queries);
    let o = Rdbx::batch().cmds(&cmds).prog(&data_types(), &[]).run();
    o.assert_no_errors();
    let mut gdb_cmds = vec!["break report", "run"];
    gdb_cmds.extend(queries);
    let theirs = type_lines(&gdb(&data_types(), &[], &gdb_cmds));
    // gdb's source line at the stop is indented too; keep type lines only.
    let ours: Vec<String> = type_lines(&o.stdout)
        .into_iter()
        .filter(|l| !l.trim_start().starts_with(|c: char| c.is_ascii_digit()))
        .collect();
    let theirs: Vec<String> = theirs
        .into_iter()
        .filter(|l| !l.trim_start().starts_with(|c: char| c.is_ascii_digit()))
        .collect();
    assert!(ours.len() > 40, "{}", o.transcript());
    assert_eq!(ours, theirs, "{}", o.transcript());
}

/// `assign` and `set var` write memory, registers and bitfields, convert
/// to the target's type, and the program sees the new values; what
/// cannot be assigned is refused with the reason.
#[test]
fn assign_writes_what_the_program_then_sees() {
    let in_register = format!("stop at {}", line_of("data_types.c", "in_register"));
    let o = Rdbx::batch()
        .cmds(&[
            &in_register,
            "stop in report",
            "run",
            "assign kept = 100",
            "cont",
            "assign g_myint = 42",
            "assign g_double = 7",
            "assign g_char = 'z'",
            "assign g_color = BLUE",
            "set var g_pt.y = -9",
            "assign g_bits.b = 30",
            "set variable g_bits.c = -2",
            "assign g_long = 2.9",
            "assign g_float = g_double / 4",
            "assign g_shape.corner = g_pt",
            "assign 3 = 4",
            "set var *(unsigned char *)$pc = 0x90",
            "up",
            "assign local = 99",
            "assign $rax = 1",
            "delete all",
            "cont",
        ])
        .prog(&data_types(), &[])
        .run();
    assert_eq!(o.printed_one("kept"), "100");
    assert_eq!(o.printed_one("g_myint"), "42");
    assert_eq!(o.printed_one("g_double"), "7");
    assert_eq!(o.printed_one("g_char"), "122 'z'");
    assert_eq!(o.printed_one("g_color"), "BLUE");
    assert_eq!(o.printed_one("g_bits.b"), "30");
    assert_eq!(o.printed_one("g_long"), "2");
    assert_eq!(o.printed_one("g_float"), "1.75");
    assert_eq!(o.printed_one("g_shape.corner"), "{x = 3, y = -9}");
    assert_eq!(o.printed_one("local"), "99");
    // gdb's `set var` prints nothing.
    assert!(!o.stdout.contains("g_pt.y ="), "{}", o.transcript());
    for refusal in [
        "cannot assign to 3: not an lvalue",
        "cannot set register rax in an outer frame",
        // The breakpoint's int3 at report is not overwritten.
        "a breakpoint is at 0x",
    ] {
        assert!(o.stderr.contains(refusal), "{}", o.transcript());
    }
    for seen in [
        "in_register=101",
        "step=1 local=10 g_myint=42 g_double=7 g_char=z g_color=2 pt=3,-9 bits=5,30,-2 long=2 float=1.75",
        "step=2 local=100 ",
    ] {
        assert!(o.stdout.contains(seen), "{seen}\n{}", o.transcript());
    }
}

/// Print formats on nested aggregates (bitfields, unions, anonymous
/// structs, char arrays, function pointers) agree with gdb's.
#[test]
fn formats_on_nested_aggregates_agree_with_gdb() {
    gdb_values_agree(&[
        "p/x g_bits",
        "p/t g_bits",
        "p/c g_bits",
        "p/x g_shape",
        "p/d g_shape",
        "p/x g_color",
        "p g_shape",
        "p $.range.lo",
        "p/x $$.name",
        "p g_shape.origin",
        "p &g_shape.range",
    ]);
}

/// Runs `cmds` at the first stop in report() in rdbx and gdb and
/// compares the `$N = ...` lines.
fn gdb_values_agree(cmds: &[&str]) {
    let mut ours = vec!["stop in report", "run"];
    ours.extend(cmds);
    let o = Rdbx::batch().cmds(&ours).prog(&data_types(), &[]).run();
    o.assert_no_errors();
    let mine: Vec<String> = o
        .stdout
        .lines()
        .filter(|l| l.starts_with('$'))
        .map(String::from)
        .collect();
    let mut gdb_cmds = vec!["break report", "run"];
    gdb_cmds.extend(cmds);
    let theirs: Vec<String> = parse_gdb_values(&gdb(&data_types(), &[], &gdb_cmds))
        .into_iter()
        .enumerate()
        .map(|(i, v)| format!("${} = {v}", i + 1))
        .collect();
    assert_eq!(mine, theirs, "{}", o.transcript());
}

/// The values `set var` leaves agree with gdb's.
#[test]
fn set_var_agrees_with_gdb() {
    gdb_values_agree(&[
        "set var g_double = 3",
        "set var g_myint = g_double * 2.5",
        "set var g_char = 65",
        "set var g_color = GREEN",
        "set var g_bits.a = 9",
        "set var g_bits.c = 7",
        "set var g_ptr = &g_myint",
        "set var g_shape.counts[1] = -5",
        "p g_double",
        "p g_myint",
        "p g_char",
        "p g_color",
        "p g_bits",
        "p *g_ptr",
        "p g_shape.counts",
    ]);
}

/// Types are known before the program runs.
#[test]
fn ptype_and_whatis_work_without_a_process() {
    let o = Rdbx::batch()
        .cmds(&[
            "ptype g_pt",
            "whatis g_pt",
            "whatis point_t",
            "ptype enum flags",
        ])
        .prog(&data_types(), &[])
        .run();
    o.assert_no_errors();
    let types: Vec<String> = type_lines(&o.stdout);
    assert_eq!(
        types,
        [
            "type = struct point {",
            "    int x;",
            "    int y;",
            "}",
            "type = point_t",
            "type = struct point",
            "type = enum flags {F_A = 1, F_B, F_C = 4}",
        ],
        "{}",
        o.transcript()
    );
}
