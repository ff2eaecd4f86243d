//! Values of optimized real programs against gdb: the arguments and locals
//! of every frame up to main, in wordfreq (optimized Rust, full DWARF,
//! types and abstract origins in other units through DW_FORM_ref_addr)
//! and in Lua at -O2; a local or parameter shadows a function of the same
//! name, as in gdb.

mod common;

use common::real::{lua, lua_script, wordfreq, Opt};
use common::*;
use std::path::Path;

/// How a value compares between the two debuggers: the same number, both
/// `<optimized out>`, both a pointer, or both some other value (rdbx shows
/// Rust strings and vectors as text where gdb without its Python printers
/// shows their raw structures).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Shape {
    OptimizedOut,
    /// gdb's `<error reading variable x (Cannot access memory at address
    /// 0x8)>`: gdb reads the `Option` inside a Rust tuple that has no
    /// location from address 0; rdbx says `<optimized out>`.
    ReadError,
    Number(String),
    /// With the symbol it points into, when it points into one
    /// (`0x555555598530 <absentkey>`).
    Pointer(Option<String>),
    Other,
}

fn shape(value: &str) -> Shape {
    let value = value.trim();
    if value == "<optimized out>" {
        return Shape::OptimizedOut;
    }
    if value.starts_with("<error reading variable") {
        return Shape::ReadError;
    }
    // gdb writes `(*mut T) 0x...` for Rust raw pointers, rdbx `0x...`.
    let bare = match value.strip_prefix('(') {
        Some(rest) if value.contains(") 0x") => rest.split_once(") ").map_or(value, |(_, v)| v),
        _ => value,
    };
    if bare.starts_with("0x") && bare.split_whitespace().count() <= 2 {
        let symbol = bare
            .split_once(' ')
            .map(|(_, s)| s.to_string())
            .filter(|s| s.starts_with('<'));
        return Shape::Pointer(symbol);
    }
    let number = bare.strip_prefix('-').unwrap_or(bare);
    if !number.is_empty() && number.chars().all(|c| c.is_ascii_digit()) {
        return Shape::Number(bare.to_string());
    }
    Shape::Other
}

/// `name = value` lines of `info args` / `info locals` / `dump` output.
fn variables(text: &str) -> Vec<(String, Shape)> {
    text.lines()
        .filter_map(|line| {
            let (name, value) = line.split_once(" = ")?;
            let simple =
                !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            simple.then(|| (name.to_string(), shape(value)))
        })
        .collect()
}

/// One frame's arguments and locals.
#[derive(Debug, PartialEq, Eq)]
struct FrameValues {
    function: String,
    arguments: Vec<(String, Shape)>,
    locals: Vec<(String, Shape)>,
}

/// The frames to compare: up to and including the program's main.
const FRAMES: usize = 12;

/// gdb's view: for each frame, `frame N`, `info args`, `info locals`;
/// sections start at the frame line (`#N ...`) and are split by a marker
/// `info args` cannot print.
fn gdb_frames(prog: &Path, args: &[&str], stop: &[&str]) -> Vec<FrameValues> {
    let mut cmds: Vec<String> = stop.iter().map(|s| s.to_string()).collect();
    cmds.push("run".into());
    for n in 0..FRAMES {
        cmds.push(format!("frame {n}"));
        cmds.push("info args".into());
        cmds.push("print \"@@locals\"".into());
        cmds.push("info locals".into());
    }
    let refs: Vec<&str> = cmds.iter().map(String::as_str).collect();
    let text = gdb(prog, args, &refs);
    let mut frames = Vec::new();
    for section in text.split("\n#").skip(1) {
        let header = section.lines().next().unwrap_or("");
        let Some(frame) = parse_gdb_frame(&format!("#{header}")) else {
            continue;
        };
        let body = &section[header.len()..];
        let (arguments, locals) = body.split_once("\"@@locals\"").unwrap_or((body, ""));
        frames.push(FrameValues {
            function: frame.func.clone(),
            arguments: variables(arguments),
            locals: variables(locals),
        });
        if is_main(&frame.func) {
            break;
        }
    }
    frames
}

/// rdbx's view: `frame N` (numbered from 1), `info args`, `dump`.
fn rdbx_frames(prog: &Path, args: &[&str], stop: &[&str]) -> Vec<FrameValues> {
    let mut cmds: Vec<String> = stop.iter().map(|s| s.to_string()).collect();
    cmds.push("run".into());
    for n in 1..=FRAMES {
        cmds.push(format!("frame {n}"));
        cmds.push("info args".into());
        cmds.push("print \"@@locals\"".into());
        cmds.push("dump".into());
    }
    let mut rdbx = Rdbx::batch();
    for c in &cmds {
        rdbx = rdbx.cmd(c);
    }
    let out = rdbx.prog(prog, args).run();
    let mut frames = Vec::new();
    for section in out.stdout.split("=>[").skip(1) {
        let header = section.lines().next().unwrap_or("");
        let Some(function) = rdbx_frame_function(header) else {
            continue;
        };
        let body = &section[header.len()..];
        let (arguments, locals) = body.split_once("\"@@locals\"").unwrap_or((body, ""));
        frames.push(FrameValues {
            function: function.to_string(),
            arguments: variables(arguments),
            locals: variables(locals),
        });
        if is_main(function) {
            break;
        }
    }
    frames
}

/// The function of an rdbx frame line after its `=>[`: `N] NAME(ARGS)...`,
/// the name ending at the first `(` outside angle brackets (Rust names
/// hold `<impl FnMut<A> for &mut F>` and `Fn<(), Output = i32>`).
fn rdbx_frame_function(header: &str) -> Option<&str> {
    let (_, rest) = header.split_once("] ")?;
    let mut depth = 0i32;
    for (i, c) in rest.char_indices() {
        match c {
            '<' => depth += 1,
            '>' if depth > 0 => depth -= 1,
            '(' if depth == 0 => return Some(&rest[..i]),
            _ => {}
        }
    }
    None
}

fn is_main(function: &str) -> bool {
    function == "main" || function.ends_with("::main")
}

/// Compares two views frame by frame: the same variables, with values of
/// the same shape.
fn assert_same_frames(what: &str, gdb: &[FrameValues], rdbx: &[FrameValues]) {
    assert!(!gdb.is_empty(), "{what}: gdb showed no frames");
    assert_eq!(
        gdb.len(),
        rdbx.len(),
        "{what}: frames differ\ngdb:  {gdb:#?}\nrdbx: {rdbx:#?}"
    );
    for (n, (g, r)) in gdb.iter().zip(rdbx).enumerate() {
        for (kind, gdb_vars, rdbx_vars) in [
            ("arguments", &g.arguments, &r.arguments),
            ("locals", &g.locals, &r.locals),
        ] {
            let same = gdb_vars.len() == rdbx_vars.len()
                && gdb_vars
                    .iter()
                    .zip(rdbx_vars.iter())
                    .all(|((gn, gs), (rn, rs))| gn == rn && agrees(gs, rs));
            assert!(
                same,
                "{what}: {kind} of frame {n} ({} / {})\ngdb:  {gdb_vars:?}\nrdbx: {rdbx_vars:?}",
                g.function, r.function
            );
        }
    }
}

fn agrees(gdb: &Shape, rdbx: &Shape) -> bool {
    gdb == rdbx || (*gdb == Shape::ReadError && *rdbx == Shape::OptimizedOut)
}

#[test]
fn rust_frames_show_the_arguments_and_locals_gdb_shows() {
    let prog = wordfreq();
    for line in ["62", "71"] {
        let stop = format!("main.rs:{line}");
        let gdb_view = gdb_frames(&prog, &[], &[&format!("break {stop}")]);
        let rdbx_view = rdbx_frames(&prog, &[], &[&format!("stop at {stop}")]);
        assert_same_frames(&stop, &gdb_view, &rdbx_view);
    }
}

#[test]
fn lua_frames_show_the_arguments_and_locals_gdb_shows() {
    let script = lua_script("tables.lua");
    let script = script.to_str().expect("a UTF-8 path");
    for opt in [Opt::O0, Opt::O2] {
        let prog = lua(opt);
        // luaH_finishset's `slot` points to the static `absentkey`.
        for function in ["luaH_resize", "gmatch_aux", "luaH_newkey", "luaH_finishset"] {
            let what = format!("{opt:?} {function}");
            let gdb_view = gdb_frames(&prog, &[script], &[&format!("break {function}")]);
            let rdbx_view = rdbx_frames(&prog, &[script], &[&format!("stop in {function}")]);
            assert_same_frames(&what, &gdb_view, &rdbx_view);
        }
    }
}

/// `key` is a parameter of `Counter::feed` (a closure the inlined copy
/// keeps no bytes of) and a method of the standard library's `DebugMap`;
/// `text` a local and a method of the `Source` trait: the variables win,
/// as in gdb.
#[test]
fn locals_and_parameters_shadow_functions() {
    let prog = wordfreq();
    let names = ["key", "text", "seen"];
    let mut gdb_cmds = vec!["break main.rs:62".to_string(), "run".to_string()];
    gdb_cmds.extend(names.iter().map(|n| format!("print {n}")));
    let refs: Vec<&str> = gdb_cmds.iter().map(String::as_str).collect();
    let gdb_values: Vec<Shape> = parse_gdb_values(&gdb(&prog, &[], &refs))
        .iter()
        .map(|v| shape(v))
        .collect();
    let mut rdbx = Rdbx::batch().cmd("stop at main.rs:62").cmd("run");
    for n in names {
        rdbx = rdbx.cmd(&format!("print {n}"));
    }
    let out = rdbx.prog(&prog, &[]).run();
    let rdbx_values: Vec<Shape> = names
        .iter()
        .map(|n| {
            let line = out
                .stdout
                .lines()
                .find_map(|l| l.strip_prefix(&format!("{n} = ")))
                .unwrap_or_else(|| panic!("no value of {n}:\n{}{}", out.stdout, out.stderr));
            shape(line)
        })
        .collect();
    assert_eq!(gdb_values.len(), names.len(), "gdb printed {gdb_values:?}");
    assert_eq!(gdb_values, rdbx_values, "{names:?}");
    assert_eq!(rdbx_values[0], Shape::OptimizedOut, "key");
}
