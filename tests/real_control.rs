//! Breakpoints and stepping on optimized real programs (Lua 5.4 at -O2,
//! wordfreq), against gdb: where a function breakpoint lands, inlined
//! functions' locations, names as users type them, `step` into inlined
//! calls, and options given after the program.

mod common;

use common::real::{lua, lua_script, wordfreq, Opt};
use common::*;

const FIND_FWD: &str = "regex_automata::hybrid::search::find_fwd";

/// rdbx's `where` after running with `setup`.
fn rdbx_where(program: &std::path::Path, args: &[&str], setup: &[&str]) -> (Outcome, Vec<Frame>) {
    let mut cmds: Vec<&str> = setup.to_vec();
    cmds.extend(["run", "where"]);
    let out = Rdbx::batch().cmds(&cmds).prog(program, args).run();
    let frames = out.nth_where(0);
    (out, frames)
}

/// (function, line) of the first `n` frames.
fn top(frames: &[Frame], n: usize) -> Vec<(String, Option<u32>)> {
    frames
        .iter()
        .take(n)
        .map(|f| (f.func.clone(), f.line))
        .collect()
}

/// The locations of breakpoint 1 in gdb's `info breakpoints` (`1.2 y 0x… in f at x.c:9`),
/// or its single address.
fn gdb_locations(text: &str) -> Vec<u64> {
    let mut found: Vec<u64> = text
        .lines()
        .filter_map(|l| {
            let rest = l.trim_start().strip_prefix("1.")?;
            let at = rest.find("0x")?;
            parse_hex(&rest[at..])
        })
        .collect();
    if found.is_empty() {
        found = text
            .lines()
            .filter(|l| l.starts_with("1 ") && l.contains("breakpoint"))
            .filter_map(|l| l.find("0x").and_then(|at| parse_hex(&l[at..])))
            .collect();
    }
    found.sort_unstable();
    found
}

/// The locations rdbx's `status` lists for breakpoint 1 (`(1.2) 0x…`).
fn rdbx_locations(out: &Outcome) -> Vec<u64> {
    let mut found: Vec<u64> = out
        .out_lines()
        .iter()
        .filter_map(|l| parse_hex(l.trim_start().strip_prefix("(1.")?.split_once(") ")?.1))
        .collect();
    found.sort_unstable();
    found
}

#[test]
fn a_function_breakpoint_at_o2_stops_in_the_function_not_in_code_inlined_into_it() {
    let program = wordfreq();
    let gdb_frames = gdb_bt(&program, &[], &[&format!("break {FIND_FWD}")]);
    let (out, frames) = rdbx_where(&program, &[], &[&format!("stop in {FIND_FWD}")]);
    assert_eq!(
        top(&frames, 3),
        top(&gdb_frames, 3),
        "rdbx:\n{}\ngdb:\n{}\n{}",
        show_frames(&frames),
        show_frames(&gdb_frames),
        out.transcript()
    );
    assert_eq!(frames[0].func, FIND_FWD);
    assert!(!frames[0].inlined, "{}", out.transcript());
}

#[test]
fn a_condition_on_the_functions_parameters_works_at_its_hits() {
    let program = wordfreq();
    let gdb_out = gdb(
        &program,
        &[],
        &[&format!("break {FIND_FWD}"), "run", "print/x (long)cache"],
    );
    let gdb_cache = parse_gdb_values(&gdb_out);
    let out = Rdbx::batch()
        .cmds(&[
            &format!("stop in {FIND_FWD} -if dfa != 0 && cache != 0"),
            "run",
            "print/x (long)cache",
        ])
        .prog(&program, &[])
        .run();
    out.assert_no_errors();
    let stop = out.nth_stop(0);
    assert_eq!(stop.func, FIND_FWD, "{}", out.transcript());
    assert_eq!(
        out.printed("(long)cache"),
        gdb_cache,
        "{}\ngdb:\n{gdb_out}",
        out.transcript()
    );
}

#[test]
fn functions_that_exist_only_inlined_have_a_location_per_copy() {
    let lua2 = lua(Opt::O2);
    let script = lua_script("tables.lua");
    let script = script.to_str().unwrap();
    for function in ["arrayindex", "luaS_newlstr"] {
        let gdb_out = gdb(
            &lua2,
            &[script],
            &[
                &format!("break {function}"),
                "run",
                "info breakpoints",
                "bt",
            ],
        );
        let out = Rdbx::batch()
            .cmds(&[&format!("stop in {function}"), "run", "status", "where"])
            .prog(&lua2, &[script])
            .run();
        let expected = gdb_locations(&gdb_out);
        assert!(expected.len() > 1, "gdb:\n{gdb_out}");
        assert_eq!(
            rdbx_locations(&out),
            expected,
            "{function}\n{}\ngdb:\n{gdb_out}",
            out.transcript()
        );
        let gdb_frames = parse_gdb_bt(&gdb_out);
        assert_eq!(
            top(&out.nth_where(0), 2),
            top(&gdb_frames, 2),
            "{function}\n{}\ngdb:\n{gdb_out}",
            out.transcript()
        );
    }
    // Rust: a method of the regex crate inlined into wordfreq's main.
    let program = wordfreq();
    let find_iter = "regex::regex::string::Regex::find_iter";
    let gdb_frames = gdb_bt(&program, &[], &[&format!("break {find_iter}")]);
    let (out, frames) = rdbx_where(&program, &[], &[&format!("stop in {find_iter}")]);
    assert_eq!(frames[0].func, find_iter, "{}", out.transcript());
    assert_eq!(frames[0].line, gdb_frames[0].line, "{}", out.transcript());
    assert_eq!(
        frames.get(1).map(|f| f.line),
        gdb_frames.get(1).map(|f| f.line)
    );
}

#[test]
fn rust_functions_are_found_by_the_names_gdb_shows_and_by_suffixes() {
    let program = wordfreq();
    let full = "wordfreq::Counter<alloc::string::String>::feed<alloc::string::String, wordfreq::main::{closure_env#1}>";
    let gdb_frames = gdb_bt(&program, &[], &[&format!("break {full}")]);
    assert_eq!(gdb_frames[0].func, full);
    for name in [full, "Counter::feed", "wordfreq::Counter::feed"] {
        let (out, frames) = rdbx_where(&program, &[], &[&format!("stop in {name}"), "status"]);
        out.assert_no_errors();
        assert_eq!(
            top(&frames, 2),
            top(&gdb_frames, 2)
                .into_iter()
                .map(|(f, l)| (f.replace(full, "wordfreq::Counter<K>::feed"), l))
                .collect::<Vec<_>>(),
            "{name}\n{}",
            out.transcript()
        );
    }
    // `<X as Y>::f` unquoted; gdb's name for it is `wordfreq::{impl#0}::text`.
    let gdb_frames = gdb_bt(&program, &[], &["break wordfreq::{impl#0}::text"]);
    let out = Rdbx::batch()
        .cmds(&[
            "stop in <wordfreq::Builtin as wordfreq::Source>::text",
            "run",
        ])
        .prog(&program, &[])
        .run();
    out.assert_no_errors();
    let stop = out.nth_stop(0);
    assert_eq!(stop.func, "<wordfreq::Builtin as wordfreq::Source>::text");
    assert_eq!(stop.line, gdb_frames[0].line, "{}", out.transcript());
}

#[test]
fn step_enters_the_inlined_calls_a_breakpoint_stopped_before() {
    let program = wordfreq();
    let steps = 4;
    let mut gdb_cmds = vec![format!("break {FIND_FWD}"), "run".into()];
    let mut rdbx_cmds = vec![format!("stop in {FIND_FWD}"), "run".into()];
    for _ in 0..steps {
        gdb_cmds.extend(["step".to_string(), GDB_WHERE_AM_I.to_string()]);
        rdbx_cmds.push("step".into());
    }
    let gdb_out = gdb(
        &program,
        &[],
        &gdb_cmds.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    let expected = parse_gdb_markers(&gdb_out);
    assert_eq!(expected.len(), steps, "gdb:\n{gdb_out}");
    let out = Rdbx::batch()
        .cmds(&rdbx_cmds.iter().map(String::as_str).collect::<Vec<_>>())
        .prog(&program, &[])
        .run();
    let stops: Vec<(String, u32)> = out
        .stops()
        .iter()
        .skip(1)
        .map(|s| (s.func.clone(), s.line.unwrap_or(0)))
        .collect();
    assert_eq!(stops, expected, "{}\ngdb:\n{gdb_out}", out.transcript());
}

#[test]
fn rdbx_options_after_the_program_draw_a_warning() {
    let program = prog("loop-O0");
    let out = Rdbx::batch()
        .arg(&program)
        .arg("--batch")
        .arg("-c")
        .arg("where")
        .stdin("")
        .run();
    let warning = "rdbx: warning: \"--batch\" after the program is the program's argument; rdbx's options go before it";
    assert!(
        out.stderr.lines().any(|l| l == warning),
        "{}",
        out.transcript()
    );
    // Plain program arguments draw nothing.
    let out = Rdbx::batch().cmd("quit").prog(&program, &["-n", "3"]).run();
    assert!(!out.stderr.contains("warning"), "{}", out.transcript());
}

#[test]
fn rust_function_breakpoints_land_at_gdbs_address_and_line() {
    let program = wordfreq();
    for function in [
        "regex_automata::meta::regex::Builder::build",
        "regex_automata::hybrid::dfa::Lazy::cache_next_state",
        "core::fmt::write",
        "wordfreq::main",
    ] {
        let gdb_out = gdb(
            &program,
            &[],
            &[&format!("break {function}"), "run", "print/x $pc"],
        );
        let out = Rdbx::batch()
            .cmds(&[&format!("stop in {function}"), "run", "print $pc"])
            .prog(&program, &[])
            .run();
        let stop = out.nth_stop(0);
        let gdb_line = parse_gdb_breakpoints(&gdb_out).first().map(|b| b.1);
        assert_eq!(
            stop.line,
            gdb_line,
            "{function}\n{}\ngdb:\n{gdb_out}",
            out.transcript()
        );
        assert_eq!(
            out.printed("$pc"),
            parse_gdb_values(&gdb_out),
            "{function}\n{}\ngdb:\n{gdb_out}",
            out.transcript()
        );
    }
}

#[test]
fn a_function_with_a_body_also_breaks_in_its_copies_inlined_in_other_units() {
    let program = wordfreq();
    let function = "regex_automata::meta::wrappers::HybridEngine::try_search";
    let gdb_out = gdb(
        &program,
        &[],
        &[&format!("break {function}"), "run", "info breakpoints"],
    );
    let out = Rdbx::batch()
        .cmds(&[&format!("stop in {function}"), "run", "status"])
        .prog(&program, &[])
        .run();
    let expected = gdb_locations(&gdb_out);
    assert!(expected.len() > 2, "gdb:\n{gdb_out}");
    assert_eq!(rdbx_locations(&out), expected, "{}", out.transcript());
}

/// A function name without generic arguments: gdb names frames as DWARF
/// does (`f<fn(), ()>`), rdbx as the demangler does (`f`); which is right
/// is not what these tests are about.
fn without_generics(name: &str) -> String {
    let mut out = String::new();
    let mut depth = 0usize;
    for c in name.chars() {
        match c {
            '<' => depth += 1,
            '>' => depth = depth.saturating_sub(1),
            _ if depth == 0 => out.push(c),
            _ => {}
        }
    }
    out
}

/// The last component of a function name, without generic arguments:
/// trait methods are `<str as ToOwned>::to_owned` to the demangler and
/// `alloc::str::{impl#4}::to_owned` in DWARF.
fn method_name(name: &str) -> String {
    // `f::<T>` (a turbofish) leaves `f::` once the generics are out.
    let plain = without_generics(name);
    let plain = plain.trim_end_matches("::");
    plain.rsplit("::").next().unwrap_or(plain).to_string()
}

/// (function, line) of each stop.
type Stops = Vec<(String, u32)>;

/// The (function, line) of each stop of `count` `cmd`s after the first
/// stop at `location`, in gdb and in rdbx.
fn step_sequences(
    program: &std::path::Path,
    args: &[&str],
    location: &str,
    cmd: &str,
    count: usize,
) -> (Stops, Stops, String) {
    // A function name or FILE:LINE.
    let stop = match location.contains(':') && !location.contains("::") {
        true => format!("stop at {location}"),
        false => format!("stop in {location}"),
    };
    let mut gdb_cmds = vec![format!("break {location}"), "run".into()];
    let mut rdbx_cmds = vec![stop, "run".into()];
    for _ in 0..count {
        gdb_cmds.extend([cmd.to_string(), GDB_WHERE_AM_I.to_string()]);
        rdbx_cmds.push(cmd.into());
    }
    let gdb_out = gdb(
        program,
        args,
        &gdb_cmds.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    let out = Rdbx::batch()
        .cmds(&rdbx_cmds.iter().map(String::as_str).collect::<Vec<_>>())
        .prog(program, args)
        .run();
    let rdbx: Stops = out
        .stops()
        .iter()
        .skip(1)
        .map(|s| (method_name(&s.func), s.line.unwrap_or(0)))
        .collect();
    let expected = parse_gdb_markers(&gdb_out)
        .into_iter()
        .map(|(f, l)| (method_name(&f), l))
        .collect();
    let context = format!("{}\ngdb:\n{gdb_out}", out.transcript());
    (rdbx, expected, context)
}

#[test]
fn next_and_step_in_lua_at_o2_and_o0_follow_gdbs_lines() {
    let script = lua_script("tables.lua");
    let script = script.to_str().unwrap();
    for opt in [Opt::O2, Opt::O0] {
        for cmd in ["next", "step"] {
            let (rdbx, gdb, context) = step_sequences(&lua(opt), &[script], "lvm.c:1161", cmd, 25);
            assert_eq!(gdb.len(), 25, "{context}");
            assert_eq!(rdbx, gdb, "{opt:?} {cmd}\n{context}");
        }
    }
    // Loops whose rows are not statements, inlined static helpers, calls
    // and tail calls through the PLT into libc (stepped into where libc
    // has line information, as gdb does).
    for function in ["luaH_newkey", "luaS_newlstr", "luaV_finishget"] {
        for cmd in ["next", "step"] {
            let (rdbx, gdb, context) = step_sequences(&lua(Opt::O2), &[script], function, cmd, 40);
            assert_eq!(gdb.len(), 40, "{context}");
            assert_eq!(rdbx, gdb, "{function} {cmd}\n{context}");
        }
    }
}

#[test]
fn next_and_step_in_wordfreq_follow_gdbs_lines() {
    let program = wordfreq();
    for cmd in ["next", "step"] {
        let (rdbx, gdb, context) = step_sequences(&program, &[], "main.rs:97", cmd, 12);
        assert_eq!(gdb.len(), 12, "{context}");
        assert_eq!(rdbx, gdb, "{cmd}\n{context}");
    }
    // `step` into std::env::args, its tail call into args_os (a jump, so
    // the line rules stop at its entry) and the code inlined there.
    let (rdbx, gdb, context) = step_sequences(&program, &[], "main.rs:89", "step", 30);
    assert_eq!(gdb.len(), 30, "{context}");
    assert_eq!(rdbx, gdb, "{context}");
    // `next` through feed (inlined into main), out of main into the C
    // `main` without line information, where gdb stops too.
    let feed = "wordfreq::Counter<alloc::string::String>::feed<alloc::string::String, wordfreq::main::{closure_env#1}>";
    let (rdbx, gdb, context) = step_sequences(&program, &[], feed, "next", 13);
    assert_eq!(gdb.len(), 13, "{context}");
    assert_eq!(rdbx, gdb, "{context}");
}

/// rdbx's `FUNCTION returns VALUE` line after `step up`.
fn returned(out: &Outcome) -> Option<String> {
    out.out_lines()
        .iter()
        .find_map(|l| l.split_once(" returns ").map(|(_, v)| v.to_string()))
}

/// gdb's `Value returned is $1 = VALUE`.
fn gdb_returned(text: &str) -> Option<String> {
    text.lines().find_map(|l| {
        l.strip_prefix("Value returned is $")
            .and_then(|rest| rest.split_once(" = "))
            .map(|(_, v)| v.to_string())
    })
}

#[test]
fn step_up_out_of_rust_functions_shows_the_value_and_the_callers_line() {
    let program = wordfreq();
    // Result<usize, String>: 24 bytes, returned through the hidden pointer.
    let gdb_out = gdb(
        &program,
        &[],
        &[
            "break wordfreq::parse_minimum",
            "run",
            "up 3",
            "finish",
            GDB_WHERE_AM_I,
        ],
    );
    let out = Rdbx::batch()
        .cmds(&["stop in wordfreq::parse_minimum", "run", "up 3", "step up"])
        .prog(&program, &[])
        .run();
    out.assert_no_errors();
    let value = returned(&out).unwrap_or_else(|| panic!("no value\n{}", out.transcript()));
    let gdb_value = gdb_returned(&gdb_out).expect("gdb's value");
    // gdb spells the enum's type before the variant.
    assert!(
        gdb_value.ends_with(&format!("::{value}")),
        "rdbx {value}, gdb {gdb_value}\n{}",
        out.transcript()
    );
    let marker = parse_gdb_markers(&gdb_out);
    let stop = out.stops().pop().expect("a stop after step up");
    assert_eq!(
        (stop.func.clone(), stop.line.unwrap_or(0)),
        marker[0],
        "{}\ngdb:\n{gdb_out}",
        out.transcript()
    );
    // &str: a pair of registers.
    let gdb_out = gdb(
        &program,
        &[],
        &["break wordfreq::{impl#0}::name", "run", "finish"],
    );
    let out = Rdbx::batch()
        .cmds(&[
            "stop in <wordfreq::Builtin as wordfreq::Source>::name",
            "run",
            "step up",
        ])
        .prog(&program, &[])
        .run();
    assert_eq!(
        returned(&out),
        gdb_returned(&gdb_out),
        "{}",
        out.transcript()
    );
}

#[test]
fn a_string_returned_in_memory_prints_as_print_shows_it_and_the_stop_is_in_the_caller() {
    let program = wordfreq();
    let gdb_out = gdb(
        &program,
        &[],
        &[
            "break wordfreq::{impl#0}::text",
            "run",
            "finish",
            GDB_WHERE_AM_I,
        ],
    );
    let out = Rdbx::batch()
        .cmds(&[
            "stop in <wordfreq::Builtin as wordfreq::Source>::text",
            "run",
            "step up",
            "stop at main.rs:62",
            "cont",
            "print text",
        ])
        .prog(&program, &[])
        .run();
    out.assert_no_errors();
    let value = returned(&out).unwrap_or_else(|| panic!("no value\n{}", out.transcript()));
    assert_eq!(vec![value], out.printed("text"), "{}", out.transcript());
    let stops = out.stops();
    let marker = parse_gdb_markers(&gdb_out);
    assert_eq!(
        (method_name(&stops[1].func), stops[1].line.unwrap_or(0)),
        (method_name(&marker[0].0), marker[0].1),
        "{}\ngdb:\n{gdb_out}",
        out.transcript()
    );
}

/// tests/programs/step_up_threads.c, built here with gcc.
fn step_up_threads() -> std::path::PathBuf {
    let dir = scratch_dir("real_control_threads");
    let program = dir.join("step_up_threads");
    let status = std::process::Command::new("gcc")
        .args(["-g", "-O0", "-pthread", "-o"])
        .arg(&program)
        .arg(sources_dir().join("step_up_threads.c"))
        .status()
        .expect("gcc must be installed");
    assert!(status.success(), "building step_up_threads.c");
    program
}

#[test]
fn a_breakpoint_another_thread_hits_during_step_up_names_the_thread() {
    let program = step_up_threads();
    let gdb_out = gdb(
        &program,
        &[],
        &["break start_and_join", "run", "break worker_hit", "finish"],
    );
    // gdb: `Thread 2 "step_up_threads" hit Breakpoint 2, worker_hit (n=1) at ...`.
    let gdb_thread: u32 = gdb_out
        .lines()
        .find_map(|l| {
            let rest = l.strip_prefix("Thread ")?;
            rest.contains(" hit Breakpoint ")
                .then(|| rest.split_whitespace().next()?.parse().ok())?
        })
        .unwrap_or_else(|| panic!("gdb named no thread:\n{gdb_out}"));
    let out = Rdbx::batch()
        .cmds(&[
            "stop in start_and_join",
            "run",
            "stop in worker_hit",
            "step up",
        ])
        .prog(&program, &[])
        .run();
    out.assert_no_errors();
    let line = out
        .out_lines()
        .iter()
        .find(|l| l.starts_with("\"step up\" interrupted by breakpoint (2)"))
        .map(|l| l.to_string())
        .unwrap_or_else(|| panic!("no interruption\n{}", out.transcript()));
    assert!(
        line.contains(&format!(" in t@{gdb_thread} (lwp ")),
        "{line}\n{}\ngdb:\n{gdb_out}",
        out.transcript()
    );
    let stop = out.stops().pop().expect("a stop");
    assert_eq!(stop.func, "worker_hit", "{}", out.transcript());
}

#[test]
fn cpp_template_functions_are_named_with_spaces_and_commas_as_in_gdb() {
    let dir = scratch_dir("real_control_templates");
    let program = dir.join("control_templates");
    let status = std::process::Command::new("g++")
        .args(["-g", "-O0", "-o"])
        .arg(&program)
        .arg(sources_dir().join("control_templates.cpp"))
        .status()
        .expect("g++ must be installed");
    assert!(status.success(), "building control_templates.cpp");
    for name in [
        "geo::Pair<int, char>::first",
        "Pair<int,char>::first",
        "geo::Pair<long, double>::first",
        "Pair::first",
    ] {
        let gdb_out = gdb(
            &program,
            &[],
            &[&format!("break {name}"), "run", "info breakpoints"],
        );
        let out = Rdbx::batch()
            .cmds(&[&format!("stop in {name}"), "run", "status"])
            .prog(&program, &[])
            .run();
        out.assert_no_errors();
        let mut rdbx_addresses = rdbx_locations(&out);
        if rdbx_addresses.is_empty() {
            // One location: where the program stopped.
            let pc = Rdbx::batch()
                .cmds(&[&format!("stop in {name}"), "run", "print $pc"])
                .prog(&program, &[])
                .run()
                .printed("$pc");
            rdbx_addresses = pc.iter().filter_map(|v| parse_hex(v)).collect();
        }
        assert_eq!(
            rdbx_addresses,
            gdb_locations(&gdb_out),
            "{name}\n{}\ngdb:\n{gdb_out}",
            out.transcript()
        );
    }
}

#[test]
fn step_up_out_of_an_inlined_call_stops_in_its_caller_as_gdbs_finish() {
    let program = wordfreq();
    for (function, times) in [
        ("wordfreq::parse_minimum", 3),
        ("regex::regex::string::Regex::find_iter", 1),
    ] {
        let mut gdb_cmds = vec![format!("break {function}"), "run".to_string()];
        let mut rdbx_cmds = vec![format!("stop in {function}"), "run".to_string()];
        for _ in 0..times {
            gdb_cmds.extend(["finish".to_string(), GDB_WHERE_AM_I.to_string()]);
            rdbx_cmds.push("step up".into());
        }
        let gdb_out = gdb(
            &program,
            &[],
            &gdb_cmds.iter().map(String::as_str).collect::<Vec<_>>(),
        );
        let out = Rdbx::batch()
            .cmds(&rdbx_cmds.iter().map(String::as_str).collect::<Vec<_>>())
            .prog(&program, &[])
            .run();
        out.assert_no_errors();
        let rdbx: Stops = out
            .stops()
            .iter()
            .skip(1)
            .map(|s| (method_name(&s.func), s.line.unwrap_or(0)))
            .collect();
        let expected: Stops = parse_gdb_markers(&gdb_out)
            .into_iter()
            .map(|(f, l)| (method_name(&f), l))
            .collect();
        assert_eq!(expected.len(), times, "gdb:\n{gdb_out}");
        assert_eq!(
            rdbx,
            expected,
            "{function}\n{}\ngdb:\n{gdb_out}",
            out.transcript()
        );
    }
}

#[test]
fn a_breakpoint_on_an_address_stops_in_the_innermost_inlined_call_as_gdbs() {
    let program = wordfreq();
    // Where `break find_iter` lands: the first instruction of calls
    // inlined into it, which only a function breakpoint leaves out.
    let find_iter = "regex::regex::string::Regex::find_iter";
    let gdb_out = gdb(
        &program,
        &[],
        &[&format!("break {find_iter}"), "run", "info breakpoints"],
    );
    let address = gdb_locations(&gdb_out)[0];
    let gdb_frames = gdb_bt(&program, &[], &[&format!("break *0x{address:x}")]);
    let (out, frames) = rdbx_where(&program, &[], &[&format!("stopi at 0x{address:x}")]);
    let names = |frames: &[Frame]| -> Vec<(String, Option<u32>)> {
        frames
            .iter()
            .take(3)
            .map(|f| (method_name(&f.func), f.line))
            .collect()
    };
    assert_eq!(
        names(&frames),
        names(&gdb_frames),
        "{}\ngdb:\n{}",
        out.transcript(),
        show_frames(&gdb_frames)
    );
    assert!(frames[0].inlined, "{}", out.transcript());
}
