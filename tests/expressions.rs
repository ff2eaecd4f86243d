//! The expression evaluator on a real program: `print EXPR` in rdbx and in
//! gdb at the same line of tests/programs/expr_values.c, values compared
//! (stack addresses only by form, since the two run the program with
//! different environments; gdb's `(T *) ` before pointers is dropped, as
//! rdbx's print leaves it out).
mod common;
use common::*;

use std::path::{Path, PathBuf};

use debugger::breakpoints::{Action, LocationSpec};
use debugger::engine::{Debugger, StopReason};
use debugger::expr::{self, EvalContext};
use debugger::inferior::LaunchSpec;
use debugger::symbols::TypeRef;
use debugger::value::Value;

const SOURCE: &str = "expr_values.c";

/// The engine-level tests trace the program from this test process, and
/// the debugger's waits would reap the gdb and rdbx children that other
/// tests spawn: tests of this file run one at a time.
fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// expr_values.c built with `-g -O0` in a scratch directory.
fn program() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT.get_or_init(|| build("-O0")).clone()
}

/// The same program at `-O2`: locals in registers and location lists.
fn program_o2() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT.get_or_init(|| build("-O2")).clone()
}

fn build(optimization: &str) -> PathBuf {
    let dir = scratch_dir(&format!("expressions{optimization}"));
    let out = dir.join("expr_values");
    let status = std::process::Command::new("gcc")
        .args(["-g", optimization, "-o"])
        .arg(&out)
        .arg(sources_dir().join(SOURCE))
        .status()
        .expect("gcc");
    assert!(status.success(), "gcc failed for {SOURCE}");
    out
}

fn stop_line() -> u32 {
    line_of(SOURCE, "stop")
}

/// Stack addresses differ between the two debuggers' runs: keep the form.
fn normalize(value: &str) -> String {
    let mut out = String::new();
    let mut rest = value;
    while let Some(i) = rest.find("0x7ff") {
        out.push_str(&rest[..i]);
        out.push_str("0x7ff...");
        rest = rest[i..]
            .trim_start_matches("0x")
            .trim_start_matches(|c: char| c.is_ascii_hexdigit());
    }
    out.push_str(rest);
    let out = out.split_whitespace().collect::<Vec<_>>().join(" ");
    // gdb's `(int *) 0x...`: the type before a top-level pointer.
    if out.starts_with('(') {
        if let Some(i) = out.find(") 0x") {
            return out[i + 2..].to_string();
        }
    }
    out
}

/// (expression, rdbx's value, gdb's value) for each expression.
fn compare(exprs: &[&str]) -> Vec<(String, String, String)> {
    compare_in(&program(), exprs)
}

fn compare_in(p: &Path, exprs: &[&str]) -> Vec<(String, String, String)> {
    let line = stop_line();
    let mut cmds = vec![format!("stop at {SOURCE}:{line}"), "run".to_string()];
    let mut gcmds = vec![format!("break {SOURCE}:{line}"), "run".to_string()];
    for e in exprs {
        cmds.push(format!("print {e}"));
        gcmds.push(format!("print {e}"));
    }
    let cmds: Vec<&str> = cmds.iter().map(String::as_str).collect();
    let gcmds: Vec<&str> = gcmds.iter().map(String::as_str).collect();
    let o = Rdbx::batch().cmds(&cmds).prog(p, &[]).run();
    o.assert_no_errors();
    let gout = gdb(p, &[], &gcmds);
    let gvals = parse_gdb_values(&gout);
    assert_eq!(gvals.len(), exprs.len(), "gdb:\n{gout}");
    exprs
        .iter()
        .zip(gvals)
        .map(|(e, g)| (e.to_string(), o.printed_one(e), g))
        .collect()
}

fn assert_agree(exprs: &[&str]) {
    for (expr, ours, theirs) in compare(exprs) {
        assert_eq!(
            normalize(&ours),
            normalize(&theirs),
            "print {expr}: rdbx {ours:?} gdb {theirs:?}"
        );
    }
}

#[test]
fn pointers_members_and_indexing_agree_with_gdb() {
    let _serial = one_at_a_time();
    assert_agree(&[
        "p",
        "*pp",
        "**ppp",
        "pp->x",
        "(*pp).y",
        "ppp[0][0].x",
        "list->next->next->name",
        "list->next->next->next->v",
        "*list->next",
        "&p.y",
        "h.pts",
        "h.pts[2].x",
        "&h.pts[1]",
        "h.pp->y",
        "h.n.f",
        "h.label",
        "ap[2]",
        "*(ap + 3)",
        "arr + 1",
        "*arr",
        "&arr[1]",
        "&arr[3] - &arr[0]",
        "garr[1] + gpoint.y",
        // gdb adds `<gpoint>` after pointers to data symbols; rdbx only
        // names code (listed in the report as a difference).
        "&gpoint == &gpoint",
        "*&gpoint",
        "num",
        "h",
        "a",
        "ops.ready",
        "ops.level",
        "opsp->mode",
        "opsp->level + 1",
    ]);
}

#[test]
fn casts_and_sizeof_agree_with_gdb() {
    let _serial = one_at_a_time();
    assert_agree(&[
        "(long)x",
        "(unsigned char)c1",
        "(double)x",
        "(char)x",
        "(double)x / 8",
        "(int)d",
        "*(int *)&x",
        "(struct point *)vp",
        "*(struct point *)vp",
        "((struct point *)vp)->y",
        "(point_t)pt",
        "(mylong)x",
        "sizeof(int)",
        "sizeof p",
        "sizeof(h)",
        "sizeof arr",
        "sizeof(long double)",
        "sizeof(char *)",
    ]);
}

#[test]
fn enums_and_flag_enums_agree_with_gdb() {
    let _serial = one_at_a_time();
    assert_agree(&["fl1", "fl2", "fl3", "fl0", "col", "h.fl"]);
}

#[test]
fn unreadable_memory_stays_inside_the_value() {
    let _serial = one_at_a_time();
    assert_agree(&["bad", "bad.name"]);
    let p = program();
    let line = stop_line();
    let stop = format!("stop at {SOURCE}:{line}");
    let o = Rdbx::batch()
        .cmds(&[
            &stop,
            "run",
            "print *(int *)0",
            "print *bad.next",
            "print x / 0",
            "print x % (x - 42)",
            "print p.nosuch",
            "print x.y",
            "print (struct)x",
            "print *vp",
        ])
        .prog(&p, &[])
        .run();
    let errors = o.errors().join("\n");
    for expected in [
        "cannot access memory at 0x0",
        "cannot access memory at 0x8",
        "division by zero",
        "there is no member named nosuch in \"struct point\"",
        "not a structure",
        "syntax error at column 8: expected a name after 'struct', found ')'",
        "attempt to take contents of a non-pointer value",
    ] {
        assert!(errors.contains(expected), "{expected}:\n{}", o.transcript());
    }
    assert_eq!(
        errors.matches("division by zero").count(),
        2,
        "{}",
        o.transcript()
    );
}

#[test]
fn a_cycle_of_pointers_prints_one_level() {
    let _serial = one_at_a_time();
    // c.next points back to a: each print shows one node, never loops.
    let r = compare(&["list->next->next->next->next->next->next->v", "*c.next"]);
    for (expr, ours, theirs) in r {
        assert_eq!(normalize(&ours), normalize(&theirs), "{expr}");
    }
}

// ------------------------------------------------------ through the engine

fn no_conditions(_: &Debugger, _: &str) -> debugger::Result<bool> {
    Ok(true)
}

/// What a session gives the evaluator, plus the program's types by name.
struct Context<'a> {
    dbg: &'a Debugger,
}

impl EvalContext for Context<'_> {
    fn variable(&self, name: &str) -> debugger::Result<Value> {
        self.dbg.read_variable(name)
    }

    fn register(&self, _: &str) -> Option<Value> {
        None
    }

    fn read_memory(&self, addr: u64, buf: &mut [u8]) -> debugger::Result<()> {
        self.dbg.read_memory(addr, buf)
    }

    fn lookup_type(&self, name: &str) -> Option<TypeRef> {
        self.dbg
            .objects()
            .list
            .iter()
            .find_map(|o| o.file.lookup_type(name))
    }

    fn symbol_at(&self, address: u64) -> Option<String> {
        let object = self.dbg.objects().object_at(address)?;
        let symbol = object.file.symbol_at(object.file_address(address))?;
        Some(symbol.name)
    }
}

/// The program stopped in stop_here, main's frame selected.
fn stopped(program: &Path) -> Debugger {
    let mut dbg = Debugger::new().expect("debugger");
    dbg.load(program).expect("load");
    let dir = scratch_dir("expressions-engine");
    dbg.start(LaunchSpec {
        stdout: Some(dir.join("stdout")),
        ..LaunchSpec::default()
    })
    .expect("start");
    dbg.add_breakpoint(
        LocationSpec::Function("stop_here".into()),
        None,
        None,
        false,
        Action::Stop,
    )
    .expect("breakpoint");
    let stop = dbg.cont(&no_conditions).expect("cont");
    assert!(
        matches!(stop.reason, StopReason::Breakpoint { .. }),
        "{stop:?}"
    );
    dbg.select_frame(1);
    dbg
}

/// Casts to types no value of the expression has: they need the
/// context's `lookup_type`.
#[test]
fn named_types_come_from_lookup_type() {
    let _serial = one_at_a_time();
    let p = program();
    let exprs = [
        "sizeof(struct point)",
        "sizeof(point_t)",
        "sizeof(struct holder)",
        "(enum color)1",
        "(enum flags)3",
        "(struct point *)0",
        "*(struct point *)&gpoint",
        "((point_t *)&h.pts[1])->y",
        "(mylong)(-3)",
        "ops.fn",
        "opsp->fn",
        "*opsp",
    ];
    let mut dbg = stopped(&p);
    let ours: Vec<String> = exprs
        .iter()
        .map(|e| {
            let parsed = expr::parse(e).unwrap_or_else(|err| panic!("{e}: {err}"));
            match expr::evaluate(&parsed, &Context { dbg: &dbg }) {
                Ok(v) => v.to_string(),
                Err(err) => panic!("{e}: {err}"),
            }
        })
        .collect();
    dbg.kill();
    let mut gcmds = vec!["break stop_here".to_string(), "run".into(), "up".into()];
    gcmds.extend(exprs.iter().map(|e| format!("print {e}")));
    let gcmds: Vec<&str> = gcmds.iter().map(String::as_str).collect();
    let gout = gdb(&p, &[], &gcmds);
    let theirs = parse_gdb_values(&gout);
    assert_eq!(theirs.len(), exprs.len(), "gdb:\n{gout}");
    for ((e, ours), theirs) in exprs.iter().zip(&ours).zip(&theirs) {
        assert_eq!(normalize(ours), normalize(theirs), "print {e}");
    }
}

/// A frame view of the stopped thread that also knows its thread pointer
/// (what FrameView gives once it maps DWARF register 58, fs_base).
struct ThreadFrame<'a> {
    dbg: &'a Debugger,
    fs_base: Option<u64>,
    bias: u64,
}

impl debugger::symbols::FrameContext for ThreadFrame<'_> {
    fn read_memory(&self, addr: u64, buf: &mut [u8]) -> debugger::Result<()> {
        self.dbg.read_memory(addr, buf)
    }
    fn register(&self, dwarf_regno: u16) -> Option<u64> {
        self.fs_base.filter(|_| dwarf_regno == 58)
    }
    fn cfa(&self) -> Option<u64> {
        None
    }
    fn load_bias(&self) -> u64 {
        self.bias
    }
}

/// `__thread` variables of the executable, through fs_base and the static
/// TLS layout, agree with gdb.
#[test]
fn thread_local_variables_of_the_executable() {
    let _serial = one_at_a_time();
    let p = program();
    let names = ["tls_counter", "tls_big"];
    let mut dbg = stopped(&p);
    let tid = dbg.current_thread();
    let fs_base = dbg
        .process()
        .expect("process")
        .regs(tid)
        .expect("regs")
        .fs_base;
    let exe = dbg
        .objects()
        .list
        .iter()
        .find(|o| o.path.file_name() == p.file_name())
        .expect("the executable is loaded");
    let frame = ThreadFrame {
        dbg: &dbg,
        fs_base: Some(fs_base),
        bias: exe.bias,
    };
    let ours: Vec<String> = names
        .iter()
        .map(|name| {
            let var = exe.file.lookup_variable(None, name).expect(name);
            exe.file
                .read_variable(&var, &frame)
                .unwrap_or_else(|e| panic!("{name}: {e}"))
                .to_string()
        })
        .collect();
    // Without the thread pointer it says so rather than guessing.
    let var = exe.file.lookup_variable(None, "tls_counter").expect("tls");
    let blind = ThreadFrame {
        fs_base: None,
        ..frame
    };
    let unknown = exe.file.read_variable(&var, &blind).expect("read");
    assert_eq!(unknown.to_string(), "<thread-local storage>");
    dbg.kill();
    let mut gcmds = vec!["break stop_here".to_string(), "run".into()];
    gcmds.extend(names.iter().map(|e| format!("print {e}")));
    let gcmds: Vec<&str> = gcmds.iter().map(String::as_str).collect();
    let theirs = parse_gdb_values(&gdb(&p, &[], &gcmds));
    assert_eq!(ours, theirs);
}

/// expr_tls_main linked with libexpr_tls_lib.so, plus the same library
/// source built as libexpr_tls_dl.so (its names prefixed `dl_`), which the
/// program dlopen's: (program, the dlopen'ed library's path).
fn tls_programs() -> (PathBuf, PathBuf) {
    let dir = scratch_dir("expressions-tls");
    let gcc = |args: &[&str]| {
        let status = std::process::Command::new("gcc")
            .current_dir(&dir)
            .args(args)
            .status()
            .expect("gcc");
        assert!(status.success(), "gcc {args:?}");
    };
    let lib = sources_dir().join("expr_tls_lib.c");
    let lib = lib.to_str().expect("utf-8 path");
    gcc(&["-shared", "-fPIC", "-g", "-o", "libexpr_tls_lib.so", lib]);
    let renamed = ["-Dlib_tls=dl_tls", "-Dlib_tls_pair=dl_tls_pair"];
    gcc(&[
        &renamed[..],
        &["-Dlib_set=dl_set", "-shared", "-fPIC", "-g", "-o"],
        &["libexpr_tls_dl.so", lib],
    ]
    .concat());
    let main = sources_dir().join("expr_tls_main.c");
    let rpath = format!("-Wl,-rpath,{}", dir.display());
    gcc(&[
        "-g",
        "-o",
        "expr_tls_main",
        main.to_str().expect("utf-8 path"),
        "-L.",
        "-lexpr_tls_lib",
        &rpath,
        "-ldl",
        "-lpthread",
    ]);
    (dir.join("expr_tls_main"), dir.join("libexpr_tls_dl.so"))
}

#[test]
fn thread_local_variables_of_shared_libraries_agree_with_gdb() {
    let _serial = one_at_a_time();
    let (p, dl) = tls_programs();
    let dl = dl.to_str().expect("utf-8 path");
    // The first stop is in the second thread; `thread 1` reads the main
    // thread's copies from a frame in libc; the second stop is in main.
    let names = [
        "lib_tls",
        "lib_tls_pair",
        "dl_tls",
        "dl_tls_pair",
        "exe_tls",
    ];
    let prints: Vec<String> = names.iter().map(|n| format!("print {n}")).collect();
    let mut cmds = vec!["stop in stop_here".to_string(), "run".into()];
    let mut gcmds = vec!["break stop_here".to_string(), "run".into()];
    for switch in ["thread 1", "cont"] {
        cmds.extend(prints.iter().cloned());
        gcmds.extend(prints.iter().cloned());
        cmds.push(switch.into());
        gcmds.push(if switch == "cont" { "continue" } else { switch }.into());
    }
    cmds.extend(prints.iter().cloned());
    gcmds.extend(prints.iter().cloned());
    let cmds: Vec<&str> = cmds.iter().map(String::as_str).collect();
    let gcmds: Vec<&str> = gcmds.iter().map(String::as_str).collect();
    let o = Rdbx::batch().cmds(&cmds).prog(&p, &[dl]).run();
    o.assert_no_errors();
    let gout = gdb(&p, &[dl], &gcmds);
    let theirs = parse_gdb_values(&gout);
    assert_eq!(theirs.len(), 3 * names.len(), "gdb:\n{gout}");
    for (i, name) in names.iter().enumerate() {
        let ours = o.printed(name);
        let expected: Vec<&String> = theirs.iter().skip(i).step_by(names.len()).collect();
        assert_eq!(
            ours.iter().collect::<Vec<_>>(),
            expected,
            "print {name}\n{}",
            o.transcript()
        );
    }
    // The values differ between the threads (the test would not notice
    // the wrong thread's block otherwise).
    assert_eq!(o.printed("lib_tls"), ["2", "1", "1"]);
    // In the dlopen'ed library's first call, before its first access, the
    // thread has no block for it yet: said, not guessed. (gdb cannot read
    // thread-local storage at all this early.)
    let early = Rdbx::batch()
        .cmds(&["stop in dl_set", "run", "print dl_tls", "print lib_tls"])
        .prog(&p, &[dl])
        .run();
    early.assert_no_errors();
    assert_eq!(
        early.printed("dl_tls"),
        ["<thread-local storage not allocated in this thread yet>"],
        "{}",
        early.transcript()
    );
    assert_eq!(early.printed("lib_tls"), ["1"], "{}", early.transcript());
}

#[test]
fn scoped_names_and_functions_as_values_agree_with_gdb() {
    let _serial = one_at_a_time();
    assert_agree(&[
        "'expr_values.c'::gpoint",
        "'expr_values.c'::garr[1]",
        "main::p",
        "main::x + 1",
        "main::pp->y",
        "twice",
        "*twice",
        "&twice",
        "ops.fn == twice",
        "twice != main",
        "sizeof(twice)",
        "stop_here",
        "main",
        // Shared libraries' globals, also those DWARF only declares (libc
        // defines `environ` as `__environ`): found through the ELF symbol.
        "program_invocation_short_name",
        "environ != 0",
    ]);
}

#[test]
fn whatis_and_ptype_of_functions_agree_with_gdb() {
    let _serial = one_at_a_time();
    let p = program();
    let stop = format!("stop at {SOURCE}:{}", stop_line());
    let brk = format!("break {SOURCE}:{}", stop_line());
    let asks = [
        "whatis twice",
        "ptype twice",
        "whatis &twice",
        "whatis main",
        "ptype stop_here",
    ];
    let mut cmds = vec![stop.as_str(), "run"];
    cmds.extend(asks);
    let mut gcmds = vec![brk.as_str(), "run"];
    gcmds.extend(asks);
    let o = Rdbx::batch().cmds(&cmds).prog(&p, &[]).run();
    o.assert_no_errors();
    let types = |text: &str| -> Vec<String> {
        text.lines()
            .filter(|l| l.starts_with("type = "))
            .map(str::to_string)
            .collect()
    };
    let theirs = types(&gdb(&p, &[], &gcmds));
    assert_eq!(theirs.len(), asks.len());
    assert_eq!(types(&o.stdout), theirs);
    assert_eq!(theirs[0], "type = int (int)");
}

/// The same tables at -O2: where gdb finds a value rdbx must find the same
/// one, and where gdb says `<optimized out>` so must rdbx. Objects made of
/// DWARF pieces (`h`, `bad`, `ops`) print member by member; pointers the
/// compiler removed (`ap`, `ip`, `opsp`) still lead to their targets.
#[test]
fn optimized_code_agrees_with_gdb() {
    let _serial = one_at_a_time();
    let exprs = [
        "p",
        "h.pts",
        "h.pts[2].x",
        "h.n",
        "h.n.f",
        "h.n.bytes[1]",
        "h.label",
        "h.pp",
        "arr",
        "garr[1] + gpoint.y",
        "*&gpoint",
        "num",
        "h",
        "bad",
        "bad.name",
        "a",
        "ops",
        "ops.fn",
        "ops.level",
        "ops.mode",
        "pt",
        "(unsigned char)c1",
        "sizeof(h)",
        "sizeof arr",
        // Synthetic pointers (DW_OP_implicit_pointer) reach their targets.
        "ap[2]",
        "*(ap + 3)",
        "*(1 + ap)",
        "*ip",
        "*ppp",
        "opsp->level",
        "*opsp",
        "opsp->fn",
        // No location at all: the type is still known.
        "p.x",
        "num.i",
        "sizeof(p)",
        "x",
    ];
    for (expr, ours, theirs) in compare_in(&program_o2(), &exprs) {
        assert_eq!(
            normalize(&ours),
            normalize(&theirs),
            "-O2 print {expr}: rdbx {ours:?} gdb {theirs:?}"
        );
    }
}

/// At -O2, what gdb refuses rdbx refuses too: operating on an optimized-out
/// value is "value has been optimized out" in both.
#[test]
fn optimized_out_operands_are_errors_as_in_gdb() {
    let _serial = one_at_a_time();
    let exprs = [
        "*pp",
        "pp->x",
        "(long)x",
        "(double)x / 8",
        "h.pp->x",
        "**ppp",
    ];
    let p = program_o2();
    let line = stop_line();
    let mut cmds = vec![format!("stop at {SOURCE}:{line}"), "run".to_string()];
    let mut gcmds = vec![format!("break {SOURCE}:{line}"), "run".to_string()];
    for e in exprs {
        cmds.push(format!("print {e}"));
        gcmds.push(format!("print {e}"));
    }
    let cmds: Vec<&str> = cmds.iter().map(String::as_str).collect();
    let gcmds: Vec<&str> = gcmds.iter().map(String::as_str).collect();
    let o = Rdbx::batch().cmds(&cmds).prog(&p, &[]).run();
    let gout = gdb(&p, &[], &gcmds);
    let message = "value has been optimized out";
    assert_eq!(gout.matches(message).count(), exprs.len(), "gdb:\n{gout}");
    let ours = o.errors();
    assert_eq!(ours.len(), exprs.len(), "{}", o.transcript());
    for line in ours {
        assert!(line.contains(message), "{}", o.transcript());
    }
}

/// `whatis` of values that are optimized out still names their type.
#[test]
fn whatis_of_optimized_out_values_agrees_with_gdb() {
    let _serial = one_at_a_time();
    let exprs = ["x", "h.n", "ip", "p", "ops"];
    let p = program_o2();
    let line = stop_line();
    let mut cmds = vec![format!("stop at {SOURCE}:{line}"), "run".to_string()];
    let mut gcmds = vec![format!("break {SOURCE}:{line}"), "run".to_string()];
    for e in exprs {
        cmds.push(format!("whatis {e}"));
        gcmds.push(format!("whatis {e}"));
    }
    let cmds: Vec<&str> = cmds.iter().map(String::as_str).collect();
    let gcmds: Vec<&str> = gcmds.iter().map(String::as_str).collect();
    let o = Rdbx::batch().cmds(&cmds).prog(&p, &[]).run();
    o.assert_no_errors();
    let types = |out: &str| -> Vec<String> {
        out.lines()
            .filter(|l| l.starts_with("type = "))
            .map(str::to_string)
            .collect()
    };
    let theirs = types(&gdb(&p, &[], &gcmds));
    assert_eq!(theirs.len(), exprs.len());
    assert_eq!(types(&o.stdout), theirs);
}
