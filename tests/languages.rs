//! Rust and C++ values, from DWARF alone: tests/programs/lang_rust.rs
//! (built with the installed rustc) and tests/programs/lang_cpp.cpp (g++),
//! printed by rdbx and compared with gdb at the same stops. A part whose
//! compiler is missing is skipped with a note.
//!
//! gdb (without Rust pretty-printers) shows `String` and `Vec` as their
//! raw structs; those are checked against the values the program holds.
mod common;
use common::*;

use std::path::{Path, PathBuf};
use std::process::Command;

/// Builds `source` with `compiler args`, or `None` (with a note) when the
/// compiler is not installed.
fn build(compiler: &str, args: &[&str], source: &str, out_name: &str) -> Option<PathBuf> {
    if Command::new(compiler).arg("--version").output().is_err() {
        eprintln!("note: {compiler} is not installed; skipping the {source} checks");
        return None;
    }
    let dir = scratch_dir(&format!("languages-{out_name}"));
    let out = dir.join(out_name);
    let status = Command::new(compiler)
        .args(args)
        .arg(sources_dir().join(source))
        .arg("-o")
        .arg(&out)
        .current_dir(&dir)
        .status()
        .expect("run compiler");
    assert!(status.success(), "{compiler} failed for {source}");
    Some(out)
}

fn rust_program() -> Option<PathBuf> {
    build(
        "rustc",
        &["-g", "-C", "opt-level=0", "--edition", "2021"],
        "lang_rust.rs",
        "lang_rust",
    )
}

fn cpp_program() -> Option<PathBuf> {
    build("g++", &["-g", "-O0"], "lang_cpp.cpp", "lang_cpp")
}

/// Stack and heap addresses differ between the two debuggers' runs: keep
/// the form. gdb's `(T *) ` / `(T &) ` before a top-level pointer or
/// reference is dropped, as rdbx's print leaves it out.
fn normalize(value: &str) -> String {
    let mut out = String::new();
    let mut rest = value;
    while let Some(i) = rest.find("0x") {
        out.push_str(&rest[..i]);
        out.push_str("0x...");
        rest = rest[i + 2..].trim_start_matches(|c: char| c.is_ascii_hexdigit());
    }
    out.push_str(rest);
    if out.starts_with('(') {
        if let Some(i) = out.find(") 0x").or_else(|| out.find(") @0x")) {
            return out[i + 2..].to_string();
        }
    }
    out
}

/// gdb spells the prelude's enums in full: `core::option::Option<u8>::Some(7)`;
/// rdbx as in source, `Some(7)`. Slices: gdb `&[i32] [2, 3]`, rdbx `[2, 3]`.
fn rust_spelling(gdb_value: &str) -> String {
    let mut text = gdb_value.to_string();
    for prefix in ["core::option::Option<", "core::result::Result<"] {
        while let Some(start) = text.find(prefix) {
            let Some(end) = text[start..].find(">::") else {
                break;
            };
            text.replace_range(start..start + end + 3, "");
        }
    }
    if text.starts_with("&[") {
        if let Some(i) = text.find("] [") {
            text = text[i + 2..].to_string();
        }
    }
    text
}

/// rdbx's `print` (and `whatis`) results at a stop.
fn rdbx_at(program: &Path, stop: &[&str], exprs: &[&str], whatis: &[&str]) -> Outcome {
    let mut cmds: Vec<String> = stop.iter().map(|s| s.to_string()).collect();
    cmds.extend(exprs.iter().map(|e| format!("print {e}")));
    cmds.extend(whatis.iter().map(|e| format!("whatis {e}")));
    let cmds: Vec<&str> = cmds.iter().map(String::as_str).collect();
    let o = Rdbx::batch().cmds(&cmds).prog(program, &[]).run();
    o.assert_no_errors();
    o
}

/// gdb's values for `exprs` and types for `whatis`, in order.
fn gdb_at(
    program: &Path,
    stop: &[&str],
    exprs: &[&str],
    whatis: &[&str],
) -> (Vec<String>, Vec<String>) {
    let mut cmds: Vec<String> = stop.iter().map(|s| s.to_string()).collect();
    cmds.extend(exprs.iter().map(|e| format!("print {e}")));
    cmds.extend(whatis.iter().map(|e| format!("whatis {e}")));
    let cmds: Vec<&str> = cmds.iter().map(String::as_str).collect();
    let out = gdb(program, &[], &cmds);
    let values = parse_gdb_values(&out);
    assert_eq!(values.len(), exprs.len(), "gdb:\n{out}");
    let types = type_lines(&out);
    assert_eq!(types.len(), whatis.len(), "gdb:\n{out}");
    (values, types)
}

fn type_lines(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.strip_prefix("type = ").map(str::to_string))
        .collect()
}

const RUST_STOP: &[&str] = &["stop in lang_rust::stop_here", "run", "up"];
const GDB_RUST_STOP: &[&str] = &["break lang_rust::stop_here", "run", "up"];

#[test]
fn rust_values_read_as_in_source() {
    let Some(program) = rust_program() else {
        return;
    };
    let expected = [
        ("point", "lang_rust::Point {x: 3, y: -4}"),
        ("pair", "lang_rust::Pair (7, 8)"),
        ("unit", "lang_rust::Unit"),
        ("tuple", "(1, 2.5, 122 'z')"),
        ("color", "lang_rust::Color::Green"),
        ("circle", "lang_rust::Shape::Circle{r: 1.5}"),
        ("square", "lang_rust::Shape::Square(4)"),
        ("empty", "lang_rust::Shape::Empty"),
        ("some", "Some(7)"),
        ("none", "None"),
        ("none_ref", "None"),
        ("ok", "Ok(5)"),
        ("err", "Err(\"bad\")"),
        ("text", "\"hey\""),
        ("owned", "\"five\""),
        ("array", "[1, 2, 3]"),
        ("slice", "[2, 3]"),
        ("vector", "vec![10, 20, 30]"),
        ("zeros", "vec![0 <repeats 12 times>]"),
        ("empty_vec", "vec![]"),
        (
            "person",
            "lang_rust::Person {age: 30, name: \"Ann\", tags: vec![\"a\", \"b\"]}",
        ),
        ("*boxed", "lang_rust::Point {x: 1, y: 2}"),
        ("flag", "true"),
    ];
    let mut exprs: Vec<&str> = expected.iter().map(|(e, _)| *e).collect();
    exprs.push("some_ref");
    let o = rdbx_at(&program, RUST_STOP, &exprs, &["point", "person"]);
    for (expr, want) in expected {
        assert_eq!(o.printed_one(expr), want, "print {expr}");
    }
    // Option<&i32> keeps its niche in the pointer: Some(address).
    assert!(
        o.printed_one("some_ref").starts_with("Some(0x7ff"),
        "{}",
        o.transcript()
    );
    assert_eq!(
        type_lines(&o.stdout),
        ["lang_rust::Point", "lang_rust::Person"],
        "{}",
        o.transcript()
    );
}

#[test]
fn rust_values_agree_with_gdb() {
    let Some(program) = rust_program() else {
        return;
    };
    // Everything gdb shows without Rust pretty-printers.
    let exprs = [
        "point",
        "pair",
        "unit",
        "tuple",
        "color",
        "circle",
        "square",
        "empty",
        "some",
        "none",
        "some_ref",
        "none_ref",
        "ok",
        "text",
        "array",
        "slice",
        "*boxed",
        "boxed",
        "flag",
        "point.y",
        "tuple.__1",
        "tuple.1",
        "tuple.0 + 1",
        "(tuple).2",
    ];
    let whatis = ["point", "circle", "tuple"];
    let o = rdbx_at(&program, RUST_STOP, &exprs, &whatis);
    let (theirs, their_types) = gdb_at(&program, GDB_RUST_STOP, &exprs, &whatis);
    for (expr, gdb_value) in exprs.iter().zip(theirs) {
        assert_eq!(
            normalize(&o.printed_one(expr)),
            normalize(&rust_spelling(&gdb_value)),
            "print {expr}: gdb {gdb_value:?}"
        );
    }
    assert_eq!(type_lines(&o.stdout), their_types);
    // String and Vec: gdb's raw structs hold the same length.
    let (raw, _) = gdb_at(
        &program,
        GDB_RUST_STOP,
        &["owned.vec.len", "vector.len", "person.tags.len"],
        &[],
    );
    assert_eq!(raw, ["4", "3", "2"]);
}

#[test]
fn cpp_classes_references_this_and_namespaces_agree_with_gdb() {
    let Some(program) = cpp_program() else {
        return;
    };
    let source = "lang_cpp.cpp";
    let in_use = line_of(source, "in_use");
    let in_method = line_of(source, "in_method");
    // In use(): a reference to an int and to a derived class, seen
    // through by operators; casts to namespaced types.
    let exprs = [
        "ref",
        "obj",
        "obj.b",
        "obj.d + 1",
        "ref + 1",
        "-ref",
        "ref * obj.d",
        "&ref",
        "*&obj",
        "(geo::Base *)&obj",
        "*(geo::Base *)&obj",
        "((geo::Base *)&obj)->b",
    ];
    let o = rdbx_at(
        &program,
        &[&format!("stop at {source}:{in_use}"), "run"],
        &exprs,
        &["obj"],
    );
    let (theirs, their_types) = gdb_at(
        &program,
        &[&format!("break {source}:{in_use}"), "run"],
        &exprs,
        &["obj"],
    );
    for (expr, gdb_value) in exprs.iter().zip(theirs) {
        assert_eq!(
            normalize(&o.printed_one(expr)),
            normalize(&gdb_value),
            "print {expr}"
        );
    }
    let obj = o.printed_one("obj");
    assert!(obj.ends_with(": {<geo::Base> = {b = 1}, d = 2}"), "{obj}");
    assert_eq!(type_lines(&o.stdout), their_types);

    // In the method: this, *this, members through this, a namespace global.
    let exprs = ["this", "*this", "d", "b", "b + d", "geo::global", "this->d"];
    let o = rdbx_at(
        &program,
        &[&format!("stop at {source}:{in_method}"), "run"],
        &exprs,
        &[],
    );
    let (theirs, _) = gdb_at(
        &program,
        &[&format!("break {source}:{in_method}"), "run"],
        &exprs,
        &[],
    );
    for (expr, gdb_value) in exprs.iter().zip(theirs) {
        assert_eq!(
            normalize(&o.printed_one(expr)),
            normalize(&gdb_value),
            "print {expr}"
        );
    }
    assert_eq!(o.printed_one("*this"), "{<geo::Base> = {b = 1}, d = 2}");
    assert_eq!(o.printed_one("geo::global"), "17");

    // A method of a class with a struct member: members through `this`
    // go on as typed values.
    let in_shape = line_of(source, "in_shape");
    let exprs = [
        "origin",
        "origin.x",
        "origin.y + side",
        "this->origin.y",
        "(geo::Pt)origin",
        "sizeof(geo::Pt)",
    ];
    let o = rdbx_at(
        &program,
        &[&format!("stop at {source}:{in_shape}"), "run"],
        &exprs,
        &[],
    );
    let (theirs, _) = gdb_at(
        &program,
        &[&format!("break {source}:{in_shape}"), "run"],
        &exprs,
        &[],
    );
    for (expr, gdb_value) in exprs.iter().zip(theirs) {
        assert_eq!(
            normalize(&o.printed_one(expr)),
            normalize(&gdb_value),
            "print {expr}"
        );
    }
}
