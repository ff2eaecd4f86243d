//! Frames of optimized real programs, compared with gdb: Lua 5.4 at -O0
//! and at -O2 -fomit-frame-pointer, and wordfreq (optimized Rust on the
//! regex crate). At each stop both debuggers list the stack, then select
//! every frame up to `main` and list its arguments and locals: the frames
//! (tail-call frames rebuilt from DWARF call sites, inlined calls) and the
//! values (entry values from the callers' call sites, `<optimized out>`
//! where gdb has nothing) must agree. The registers of a selected outer
//! frame are that frame's.
mod common;

use common::real::{lua, lua_script, wordfreq, Opt};
use common::*;
use std::path::PathBuf;

/// A program run and where both debuggers stop in it.
struct Stop {
    program: PathBuf,
    args: Vec<String>,
    /// rdbx's commands up to the stop (`run` included).
    rdbx: Vec<String>,
    /// gdb's.
    gdb: Vec<String>,
    /// The outermost frame compared: `main`, or for Rust the program's
    /// own main (below it the runtime's frames, which gdb and rdbx name
    /// differently).
    outermost: &'static str,
    /// Whether aggregates are compared too. rdbx renders Rust's strings,
    /// vectors and enums as Rust writes them where gdb (without its Python
    /// pretty-printers) shows their raw fields: for Rust, scalars,
    /// pointers and `<optimized out>` are compared.
    aggregates: bool,
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

/// Lua running tables.lua, stopped at the first call of `function` (the
/// `skip` calls before it are let go).
fn lua_stop(opt: Opt, function: &str, skip: u32) -> Stop {
    let script = lua_script("tables.lua").display().to_string();
    let (rdbx, gdb) = if skip == 0 {
        (
            vec![format!("stop in {function}"), "run".into()],
            vec![format!("break {function}"), "run".into()],
        )
    } else {
        (
            vec![
                format!("stop in {function} -count {}", skip + 1),
                "run".into(),
            ],
            vec![
                format!("break {function}"),
                format!("ignore 1 {skip}"),
                "run".into(),
            ],
        )
    };
    Stop {
        program: lua(opt),
        args: vec![script],
        rdbx,
        gdb,
        outermost: "main",
        aggregates: true,
    }
}

/// One frame as a debugger lists it.
#[derive(Debug, Clone)]
struct Listed {
    /// The frame's line (`where`'s or `bt`'s).
    line: String,
    function: String,
    source_line: Option<u32>,
    /// `NAME = VALUE` from `info args` then `info locals`.
    values: Vec<(String, String)>,
}

/// gdb names the symbol a data pointer points to where rdbx does not, and
/// a `jmp_buf` holds pointers mangled with a key random in every process:
/// compare the rest.
fn normalize(value: &str) -> String {
    let mut text = without_symbol_names(value.trim());
    while let Some(i) = text.find("__jmpbuf = {") {
        let start = i + "__jmpbuf = ".len();
        let Some(len) = text[start..].find('}') else {
            break;
        };
        text.replace_range(start..start + len + 1, "<mangled>");
    }
    text
}

/// `0x5555555873f0 <absentkey>` -> `0x5555555873f0`.
fn without_symbol_names(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find(" <") {
        let before = &rest[..i];
        let after = &rest[i + 2..];
        let is_pointer = before
            .rsplit(|c: char| !c.is_ascii_hexdigit() && c != 'x')
            .next()
            .is_some_and(|word| word.starts_with("0x"));
        let close = after.find('>');
        match close {
            Some(end) if is_pointer && !after[..end].contains(' ') => {
                out.push_str(before);
                rest = &after[end + 1..];
            }
            _ => {
                out.push_str(&rest[..i + 2]);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// `NAME = VALUE` lines, by frame: a frame starts at a line for which
/// `frame_line` gives its function and line.
fn listed_frames(
    text: &str,
    frame_line: impl Fn(&str) -> Option<(String, Option<u32>)>,
) -> Vec<Listed> {
    let mut frames: Vec<Listed> = Vec::new();
    for line in text.lines() {
        if let Some((function, source_line)) = frame_line(line) {
            frames.push(Listed {
                line: line.to_string(),
                function,
                source_line,
                values: Vec::new(),
            });
            continue;
        }
        let Some((name, value)) = line.split_once(" = ") else {
            continue;
        };
        let is_name = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '#');
        if let (true, Some(frame)) = (is_name, frames.last_mut()) {
            frame.values.push((name.to_string(), value.to_string()));
        }
    }
    frames
}

/// Both debuggers' frames at `stop`, up to `main`, each with its
/// arguments and locals; rdbx's transcript for messages.
fn list_both(stop: &Stop) -> (Vec<Listed>, Vec<Listed>, String) {
    let args: Vec<&str> = stop.args.iter().map(String::as_str).collect();
    // gdb adds LINES and COLUMNS to the program's environment: without
    // them the stacks of both runs are at the same addresses.
    let mut gcmds = strings(&["unset environment LINES", "unset environment COLUMNS"]);
    gcmds.extend(stop.gdb.iter().cloned());
    gcmds.push("bt".into());
    let gdb_frames: Vec<String> = gdb(&stop.program, &args, &strs(&gcmds))
        .lines()
        .filter_map(gdb_frame_line)
        .map(|(function, _)| function)
        .collect();
    let depth = gdb_frames
        .iter()
        .position(|f| f == stop.outermost)
        .map_or(gdb_frames.len(), |main| main + 1);
    assert!(depth > 0, "gdb shows no frames at {:?}", stop.gdb);
    let mut rcmds = stop.rdbx.clone();
    for n in 0..depth {
        // dbx numbers frames from 1, gdb from 0.
        rcmds.push(format!("frame {}", n + 1));
        gcmds.push(format!("frame {n}"));
        for c in ["info args", "info locals"] {
            rcmds.push(c.into());
            gcmds.push(c.into());
        }
    }
    let gout = gdb(&stop.program, &args, &strs(&gcmds));
    let o = Rdbx::batch()
        .cmds(&strs(&rcmds))
        .prog(&stop.program, &args)
        .run();
    o.assert_stderr_well_formed();
    let gdb_listed = listed_frames(&gout, gdb_frame_line);
    let rdbx_listed = listed_frames(&o.stdout, rdbx_frame_line);
    // gdb's first `bt` lists its frames too: keep the selected ones only.
    let gdb_listed = gdb_listed[gdb_listed.len().saturating_sub(depth)..].to_vec();
    (rdbx_listed, gdb_listed, o.transcript())
}

/// The function and line of a frame `frame N` selected:
/// `=>[3] NAME(ARGS) [inlined], line 12 in "file.c"`. A Rust name may hold
/// parentheses inside its angle brackets (`Fn<()>`).
fn rdbx_frame_line(line: &str) -> Option<(String, Option<u32>)> {
    let rest = line.strip_prefix("=>[")?;
    let (_, rest) = rest.split_once("] ")?;
    let mut depth = 0i32;
    let open = rest.char_indices().find_map(|(i, c)| {
        match c {
            '<' => depth += 1,
            '>' => depth -= 1,
            '(' if depth <= 0 => return Some(i),
            _ => {}
        }
        None
    })?;
    let source_line = rest
        .rsplit_once(", line ")
        .and_then(|(_, tail)| tail.split_whitespace().next()?.parse().ok());
    Some((rest[..open].to_string(), source_line))
}

/// The function and line of a gdb frame line:
/// `#3  0x... in NAME (ARGS) at FILE:LINE`. A Rust name may hold `, (`
/// inside its angle brackets (`try_fold<Iter<..>, (), ..>`).
fn gdb_frame_line(line: &str) -> Option<(String, Option<u32>)> {
    let rest = line.strip_prefix('#')?;
    let (level, rest) = rest.split_once(' ')?;
    level.parse::<u32>().ok()?;
    let rest = rest.trim_start();
    let rest = match rest.split_once(" in ") {
        Some((address, name)) if address.starts_with("0x") => name,
        _ => rest,
    };
    let mut depth = 0i32;
    let open = rest.char_indices().find_map(|(i, c)| {
        match c {
            '<' => depth += 1,
            '>' => depth -= 1,
            ' ' if depth <= 0 && rest[i..].starts_with(" (") => return Some(i),
            _ => {}
        }
        None
    })?;
    let source_line = rest
        .rsplit_once(" at ")
        .and_then(|(_, place)| place.rsplit_once(':'))
        .and_then(|(_, n)| n.trim().parse().ok());
    Some((rest[..open].to_string(), source_line))
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// A number, a pointer, a character, or no value at all. (gdb cannot read
/// a Rust enum some of whose pieces are optimized out, and says so with an
/// error where rdbx shows what is known: not compared.)
fn is_scalar(value: &str) -> bool {
    let value = value.trim();
    if value.starts_with("<error reading variable") {
        return false;
    }
    value.starts_with('<')
        || value.starts_with("0x")
        || value.starts_with('\'')
        || value == "true"
        || value == "false"
        || value.parse::<f64>().is_ok()
}

/// gdb's name for a function may carry its template arguments where rdbx's
/// does not, and the reverse, and Rust's impl blocks and closures are
/// written differently (`{impl#8}::next::{closure#0}`,
/// `<FindMatches as Iterator>::next::{{closure}}`): compare the names'
/// last components, without their arguments.
fn plain_name(name: &str) -> String {
    let mut out = String::new();
    let mut depth = 0;
    for c in name.chars() {
        match c {
            '<' => depth += 1,
            '>' if depth > 0 => depth -= 1,
            _ if depth == 0 => out.push(c),
            _ => {}
        }
    }
    let last = out.rsplit("::").next().unwrap_or_default();
    last.trim_matches(|c| c == '{' || c == '}')
        .split('#')
        .next()
        .unwrap_or_default()
        .to_string()
}

/// Every frame up to `main` is the same function at the same line, and
/// every argument and local gdb lists rdbx lists with the same value.
fn assert_frames_agree(what: &str, stop: &Stop) -> Vec<Listed> {
    let (ours, theirs, transcript) = list_both(stop);
    let mut differences = Vec::new();
    if ours.len() != theirs.len() {
        differences.push(format!(
            "{} frames in rdbx, {} in gdb",
            ours.len(),
            theirs.len()
        ));
    }
    for (n, (our, their)) in ours.iter().zip(&theirs).enumerate() {
        if plain_name(&our.function) != plain_name(&their.function)
            || our.source_line != their.source_line
        {
            differences.push(format!(
                "frame {n}: rdbx {:?} gdb {:?}",
                our.line, their.line
            ));
            continue;
        }
        let names = |v: &[(String, String)]| v.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
        if names(&our.values) != names(&their.values) {
            differences.push(format!(
                "frame {n} {}: rdbx lists {:?}, gdb {:?}",
                our.function,
                names(&our.values),
                names(&their.values)
            ));
            continue;
        }
        for ((name, our_value), (_, their_value)) in our.values.iter().zip(&their.values) {
            let compared = stop.aggregates || is_scalar(their_value);
            if compared && normalize(our_value) != normalize(their_value) {
                differences.push(format!(
                    "frame {n} {}: {name}: rdbx {our_value:?} gdb {their_value:?}",
                    our.function
                ));
            }
        }
    }
    assert!(
        differences.is_empty(),
        "{what}: rdbx and gdb differ:\n{}\n\nrdbx:\n{transcript}",
        differences.join("\n")
    );
    ours
}

#[test]
fn lua_o2_newkey_shows_the_tail_call_frame_gdb_shows() {
    let frames = assert_frames_agree("-O2 luaH_newkey", &lua_stop(Opt::O2, "luaH_newkey", 0));
    // luaH_finishset ends with a jump to luaH_newkey: only the call sites
    // say it was there.
    assert_eq!(frames[0].function, "luaH_newkey");
    assert_eq!(frames[1].function, "luaH_finishset");
    assert!(frames[1].line.contains("[tail call]"), "{}", frames[1].line);
    // up and down go through it like any frame.
    let stop = lua_stop(Opt::O2, "luaH_newkey", 0);
    let mut cmds = stop.rdbx.clone();
    cmds.extend(strings(&["up", "print $pc", "up", "down", "down"]));
    let args: Vec<&str> = stop.args.iter().map(String::as_str).collect();
    let o = Rdbx::batch()
        .cmds(&strs(&cmds))
        .prog(&stop.program, &args)
        .run();
    o.assert_no_errors();
    let selected: Vec<String> = o
        .stdout
        .lines()
        .filter_map(rdbx_frame_line)
        .map(|(function, _)| function)
        .collect();
    assert_eq!(
        selected,
        [
            "luaH_finishset",
            "luaV_finishset",
            "luaH_finishset",
            "luaH_newkey"
        ],
        "{}",
        o.transcript()
    );
}

#[test]
fn lua_o2_frames_of_a_c_function_called_from_lua_agree_with_gdb() {
    let frames = assert_frames_agree("-O2 gmatch_aux", &lua_stop(Opt::O2, "gmatch_aux", 0));
    assert!(frames.iter().any(|f| f.function == "luaV_execute"));
    // In the interpreter itself, at its entry for the script's chunk.
    assert_frames_agree("-O2 luaV_execute", &lua_stop(Opt::O2, "luaV_execute", 0));
}

#[test]
fn lua_o2_newkey_from_the_script_agrees_with_gdb() {
    // A later luaH_newkey: the script's table of squares grows (rehash,
    // luaH_resize, reinsert inlined), below luaV_execute; two tail calls
    // of luaH_finishset on the way.
    let frames = assert_frames_agree("-O2 luaH_newkey", &lua_stop(Opt::O2, "luaH_newkey", 520));
    assert!(frames.iter().any(|f| f.function == "luaV_execute"));
    let tail_calls = frames
        .iter()
        .filter(|f| f.line.contains("[tail call]"))
        .count();
    assert!(tail_calls >= 1, "{frames:#?}");
}

#[test]
fn lua_o0_frames_agree_with_gdb() {
    assert_frames_agree("-O0 luaH_newkey", &lua_stop(Opt::O0, "luaH_newkey", 0));
    assert_frames_agree("-O0 gmatch_aux", &lua_stop(Opt::O0, "gmatch_aux", 0));
}

/// wordfreq stopped where `stop_rdbx` and `stop_gdb` say.
fn wordfreq_stop(stop_rdbx: &str, stop_gdb: &str) -> Stop {
    Stop {
        program: wordfreq(),
        args: Vec::new(),
        rdbx: strings(&[stop_rdbx, "run"]),
        gdb: strings(&[stop_gdb, "run"]),
        outermost: "wordfreq::main",
        aggregates: false,
    }
}

#[test]
fn wordfreq_closure_frames_agree_with_gdb() {
    // report's filter closure, called through call_mut and the iterator's
    // find, all inlined: their parameters and locals are in abstract
    // instances of other units (core's), which gdb lists too.
    let frames = assert_frames_agree(
        "wordfreq closure",
        &wordfreq_stop("stop at src/main.rs:71", "break src/main.rs:71"),
    );
    assert!(frames[0].values.iter().any(|(name, _)| name == "minimum"));
    assert!(frames[1].values.iter().any(|(name, _)| name == "args"));
}

#[test]
fn wordfreq_frames_agree_with_gdb() {
    // In Counter::feed (inlined into main), then in the regex crate below
    // it, where generics, closures and iterators are inlined in layers.
    let frames = assert_frames_agree(
        "wordfreq feed",
        &wordfreq_stop("stop at src/main.rs:62", "break src/main.rs:62"),
    );
    assert!(frames[0].function.contains("Counter") && frames[0].function.contains("feed"));
    let function = "regex_automata::hybrid::dfa::Lazy::cache_next_state";
    let frames = assert_frames_agree(
        "wordfreq regex",
        &wordfreq_stop(&format!("stop in {function}"), &format!("break {function}")),
    );
    assert!(frames.iter().any(|f| f.function.contains("feed")));
    assert!(
        frames
            .iter()
            .filter(|f| f.line.contains("[inlined]"))
            .count()
            > 3
    );
}

/// The registers every frame up to `main` shows, from `print $REG` after
/// `frame N`, in each debugger: per frame, per register, the value.
fn registers_by_frame(
    stop: &Stop,
    registers: &[&str],
) -> (Vec<Vec<String>>, Vec<Vec<String>>, String) {
    let (ours, _, _) = list_both(stop);
    let args: Vec<&str> = stop.args.iter().map(String::as_str).collect();
    let mut rcmds = stop.rdbx.clone();
    let mut gcmds = strings(&["unset environment LINES", "unset environment COLUMNS"]);
    gcmds.extend(stop.gdb.iter().cloned());
    for n in 0..ours.len() {
        rcmds.push(format!("frame {}", n + 1));
        gcmds.push(format!("frame {n}"));
        for r in registers {
            rcmds.push(format!("print ${r}"));
            gcmds.push(format!("print ${r}"));
        }
    }
    let o = Rdbx::batch()
        .cmds(&strs(&rcmds))
        .prog(&stop.program, &args)
        .run();
    o.assert_stderr_well_formed();
    let gout = gdb(&stop.program, &args, &strs(&gcmds));
    let theirs: Vec<String> = parse_gdb_values(&gout)
        .iter()
        .map(|v| register_value(v))
        .collect();
    let ours: Vec<String> = o
        .stdout
        .lines()
        .filter_map(|l| l.strip_prefix('$')?.split_once(" = "))
        .filter(|(name, _)| registers.contains(name))
        .map(|(_, v)| register_value(v))
        .collect();
    let by_frame = |values: Vec<String>| {
        values
            .chunks(registers.len())
            .map(<[String]>::to_vec)
            .collect::<Vec<_>>()
    };
    (by_frame(ours), by_frame(theirs), o.transcript())
}

/// A register's value without gdb's type prefix and symbol suffix:
/// `(void (*)()) 0x5555 <luaH_set>` -> `0x5555`.
fn register_value(text: &str) -> String {
    let text = text.trim();
    let text = match text.strip_prefix('(') {
        Some(rest) if text.contains(") ") => rest.split_once(") ").map_or(text, |(_, v)| v),
        _ => text,
    };
    without_symbol_names(text)
}

#[test]
fn registers_are_the_selected_frames_as_in_gdb() {
    // $pc and $sp after `frame N`, rip and the callee-saved registers
    // the unwinder recovers, in every frame (tail-call frames too).
    let registers = [
        "pc", "sp", "rip", "rsp", "rbx", "rbp", "r12", "r13", "r14", "r15",
    ];
    let stop = lua_stop(Opt::O2, "luaH_newkey", 520);
    let (ours, theirs, transcript) = registers_by_frame(&stop, &registers);
    assert!(ours.len() > 10, "{transcript}");
    assert_eq!(ours.len(), theirs.len(), "{transcript}");
    for (n, (our, their)) in ours.iter().zip(&theirs).enumerate() {
        for ((register, o), t) in registers.iter().zip(our).zip(their) {
            assert_eq!(o, t, "frame {n}: ${register}\n{transcript}");
        }
    }
    // Not the innermost frame's pc in an outer frame.
    assert_ne!(ours[0][0], ours[2][0]);
}

/// `print NAME` of every argument and local in every frame up to `main`:
/// the value `where` and `info locals` showed, and gdb's `print`.
fn assert_print_agrees(what: &str, stop: &Stop) {
    let listed = assert_frames_agree(what, stop);
    let args: Vec<&str> = stop.args.iter().map(String::as_str).collect();
    let mut rcmds = stop.rdbx.clone();
    let mut gcmds = strings(&["unset environment LINES", "unset environment COLUMNS"]);
    gcmds.extend(stop.gdb.iter().cloned());
    let mut printed = Vec::new();
    for (n, frame) in listed.iter().enumerate() {
        rcmds.push(format!("frame {}", n + 1));
        gcmds.push(format!("frame {n}"));
        // A name listed twice (shadowed) prints the innermost one only.
        for (name, value) in &frame.values {
            if frame
                .values
                .iter()
                .filter(|(other, _)| other == name)
                .count()
                == 1
            {
                rcmds.push(format!("print {name}"));
                gcmds.push("echo @@print\\n".to_string());
                gcmds.push(format!("print {name}"));
                printed.push((n, name.clone(), value.clone()));
            }
        }
    }
    let o = Rdbx::batch()
        .cmds(&strs(&rcmds))
        .prog(&stop.program, &args)
        .run();
    let gout = gdb(&stop.program, &args, &strs(&gcmds));
    // What each print gave: a value, or None for an error (a label is no
    // variable to print).
    let theirs: Vec<Option<String>> = gout
        .split("@@print\n")
        .skip(1)
        .map(|answer| parse_gdb_values(answer.lines().next().unwrap_or("")).pop())
        .collect();
    assert_eq!(theirs.len(), printed.len(), "{what}: gdb\n{gout}");
    let printed: Vec<_> = printed
        .into_iter()
        .zip(&theirs)
        .filter(|(_, value)| value.is_some())
        .map(|(p, _)| p)
        .collect();
    let theirs: Vec<String> = theirs.into_iter().flatten().collect();
    let names: Vec<&str> = printed.iter().map(|(_, name, _)| name.as_str()).collect();
    let ours: Vec<String> = o
        .stdout
        .lines()
        .filter_map(|l| l.split_once(" = "))
        .filter(|(name, _)| names.contains(name))
        .map(|(_, v)| v.to_string())
        .collect();
    assert_eq!(ours.len(), printed.len(), "{what}:\n{}", o.transcript());
    let mut differences = Vec::new();
    for (((n, name, listed), our), their) in printed.iter().zip(&ours).zip(&theirs) {
        let (our, their) = (
            normalize(&register_value(our)),
            normalize(&register_value(their)),
        );
        if our != their || our != normalize(listed) {
            differences.push(format!(
                "frame {n}: print {name}: rdbx {our:?} (listed {listed:?}) gdb {their:?}"
            ));
        }
    }
    assert!(
        differences.is_empty(),
        "{what}:\n{}\n\nrdbx:\n{}",
        differences.join("\n"),
        o.transcript()
    );
}

#[test]
fn print_shows_what_where_shows_in_every_frame() {
    // Entry values (luaH_newkey's value, reached by a tail call) and
    // values gdb cannot know print as `where` shows them, in every frame.
    assert_print_agrees("-O2 luaH_newkey", &lua_stop(Opt::O2, "luaH_newkey", 0));
    assert_print_agrees("-O2 luaH_newkey", &lua_stop(Opt::O2, "luaH_newkey", 520));
}

#[test]
fn a_breakpoint_on_a_function_stops_in_it_not_in_calls_inlined_at_its_start() {
    // find_fwd's first instruction is also the first of two calls inlined
    // into it (Input::is_done, Input::get_span): gdb shows the stop in
    // find_fwd, at the line of the call, and `step` enters is_done.
    let function = "regex_automata::hybrid::search::find_fwd";
    let frames = assert_frames_agree(
        "wordfreq find_fwd",
        &wordfreq_stop(&format!("stop in {function}"), &format!("break {function}")),
    );
    assert_eq!(frames[0].function, function);
    let o = Rdbx::batch()
        .cmds(&[&format!("stop in {function}"), "run", "step"])
        .prog(&wordfreq(), &[])
        .run();
    o.assert_no_errors();
    let stops: Vec<&str> = o
        .stdout
        .lines()
        .filter(|l| l.starts_with("stopped in"))
        .collect();
    assert_eq!(stops.len(), 2, "{}", o.transcript());
    let at_call = format!("stopped in {function} at line 18");
    assert!(stops[0].starts_with(&at_call), "{}", o.transcript());
    assert!(stops[1].contains("Input::is_done"), "{}", o.transcript());
    // A condition is evaluated in that frame too: `dfa` is find_fwd's.
    let o = Rdbx::batch()
        .cmds(&[
            &format!("stop in {function} -if dfa != 0 && cache != 0"),
            "run",
        ])
        .prog(&wordfreq(), &[])
        .run();
    o.assert_no_errors();
    assert!(
        o.stdout.lines().any(|l| l.starts_with(&at_call)),
        "{}",
        o.transcript()
    );
    assert!(!o.stdout.contains("condition"), "{}", o.transcript());
}

/// Tail calls of each kind: a chain of two (top jumps to middle, which
/// jumps to leaf), an ambiguous one (pick jumps to via_a or via_b, both of
/// which jump to leaf: gdb shows neither), and functions that reach
/// themselves by tail calls (even and odd: the chains from even to leaf
/// share their last call, from even; no entry value of even is trusted).
const TAIL_CALLS_C: &str = r#"#include <stdio.h>
volatile int sink;
__attribute__((noinline)) int leaf(int x) { sink = x; return x * 2; }
__attribute__((noinline)) int middle(int x) { sink = x + 1; return leaf(x + 3); }
__attribute__((noinline)) int top(int x) { sink = x + 2; return middle(x * 5); }
__attribute__((noinline)) int via_a(int x) { sink = 1; return leaf(x); }
__attribute__((noinline)) int via_b(int x) { sink = 2; return leaf(x + 1); }
__attribute__((noinline)) int pick(int x) { if (x & 1) return via_a(x); return via_b(x * 3); }
int odd(int n);
__attribute__((noinline)) int even(int n) { if (n <= 0) return leaf(n + 40); sink = n; return odd(n - 1); }
__attribute__((noinline)) int odd(int n) { if (n <= 0) return 0; sink = n; return even(n - 1); }
int main(int argc, char **argv) {
    int r = top(argc + 6);
    r += pick(argc + 1);
    r += even(argc + 3);
    printf("%d %s\n", r, argv[0] ? "ok" : "");
    return 0;
}
"#;

/// TAIL_CALLS_C built at -O2 with DWARF `version` (4: DW_TAG_GNU_call_site
/// and DW_AT_GNU_tail_call; 5: DW_TAG_call_site and DW_AT_call_tail_call).
fn tail_calls_program(version: u32) -> PathBuf {
    let dir = scratch_dir(&format!("tail-calls-dwarf{version}"));
    let source = dir.join("tail.c");
    write_file(&source, TAIL_CALLS_C);
    let program = dir.join("tail");
    let status = std::process::Command::new("gcc")
        .args(["-O2", "-g", &format!("-gdwarf-{version}"), "-o"])
        .arg(&program)
        .arg(&source)
        .status()
        .expect("gcc must be installed");
    assert!(status.success(), "gcc failed on tail.c");
    program
}

#[test]
fn tail_call_chains_of_dwarf_4_and_5_are_rebuilt_as_gdb_does() {
    for version in [4, 5] {
        let program = tail_calls_program(version);
        let stop = |skip: u32| Stop {
            program: program.clone(),
            args: Vec::new(),
            rdbx: strings(&[&format!("stop in leaf -count {}", skip + 1), "run"]),
            gdb: strings(&["break leaf", &format!("ignore 1 {skip}"), "run"]),
            outermost: "main",
            aggregates: true,
        };
        let what = format!("DWARF {version}");
        let chain = assert_frames_agree(&format!("{what}, top"), &stop(0));
        let names: Vec<&str> = chain.iter().map(|f| f.function.as_str()).collect();
        assert_eq!(names, ["leaf", "middle", "top", "main"], "{what}");
        assert!(chain[1].line.contains("[tail call]") && chain[2].line.contains("[tail call]"));
        // Two chains from pick to leaf share no call: no frame is shown.
        let ambiguous = assert_frames_agree(&format!("{what}, pick"), &stop(1));
        let names: Vec<&str> = ambiguous.iter().map(|f| f.function.as_str()).collect();
        assert_eq!(names, ["leaf", "main"], "{what}");
        let mutual = assert_frames_agree(&format!("{what}, even"), &stop(2));
        let names: Vec<&str> = mutual.iter().map(|f| f.function.as_str()).collect();
        assert_eq!(names, ["leaf", "even", "main"], "{what}");
    }
}

/// A recursion that passes a value down: each frame's `acc` is an entry
/// value computed from its caller's, which is one too, down to main.
const DEEP_ENTRY_VALUES_C: &str = r#"#include <stdio.h>
volatile int sink;
__attribute__((noipa)) int down(int n, int acc) {
    if (n == 0) { printf("%d\n", acc); return 0; }
    sink = acc;
    int r = down(n - 1, acc + n);
    sink = r;
    return r + n;
}
int main(void) { return down(300, 0) & 1; }
"#;

/// `NAME=VALUE` pairs of a gdb frame line, `NAME=NAME@entry=VALUE` read
/// as VALUE (the value is the same; gdb says where it came from). The
/// `NAME@entry=VALUE` gdb adds after a value it cannot read is left out:
/// rdbx shows the value, not the entry value beside it.
fn gdb_frame_arguments(line: &str) -> Vec<(String, String)> {
    let Some(open) = line.find(" (") else {
        return Vec::new();
    };
    let Some(close) = line.rfind(") at ") else {
        return Vec::new();
    };
    let mut pairs = Vec::new();
    let (mut depth, mut start) = (0, open + 2);
    let text = &line[..close];
    for (i, c) in text.char_indices().skip(open + 2) {
        match c {
            '(' | '<' | '{' => depth += 1,
            ')' | '>' | '}' => depth -= 1,
            ',' if depth == 0 => {
                pairs.push(text[start..i].trim().to_string());
                start = i + 1;
            }
            _ => {}
        }
    }
    pairs.push(text[start..].trim().to_string());
    pairs
        .iter()
        .filter_map(|pair| {
            let (name, value) = pair.split_once('=')?;
            if name.ends_with("@entry") {
                return None;
            }
            let value = value
                .strip_prefix(&format!("{name}@entry="))
                .unwrap_or(value);
            Some((name.to_string(), value.to_string()))
        })
        .collect()
}

#[test]
fn entry_values_nested_deeper_than_gdb_goes_are_errors_as_in_gdb() {
    let dir = scratch_dir("deep-entry-values");
    let source = dir.join("deep.c");
    write_file(&source, DEEP_ENTRY_VALUES_C);
    let program = dir.join("deep");
    let status = std::process::Command::new("gcc")
        .args(["-O2", "-g", "-o"])
        .arg(&program)
        .arg(&source)
        .status()
        .expect("gcc must be installed");
    assert!(status.success(), "gcc failed on deep.c");
    let gout = gdb(
        &program,
        &[],
        &[
            "unset environment LINES",
            "unset environment COLUMNS",
            "break printf",
            "run",
            "bt",
        ],
    );
    let theirs: Vec<Vec<(String, String)>> = gout
        .lines()
        .filter(|l| l.starts_with('#') && l.contains(" down ("))
        .map(gdb_frame_arguments)
        .collect();
    let o = Rdbx::batch()
        .cmds(&["stop in printf", "run", "where"])
        .prog(&program, &[])
        .run();
    o.assert_no_errors();
    let ours: Vec<Vec<(String, String)>> = o
        .stdout
        .lines()
        .filter(|l| l.contains("] down("))
        .map(|l| {
            let args = &l[l.find('(').unwrap_or(0) + 1..l.rfind("), line").unwrap_or(l.len())];
            args.split(", ")
                .filter_map(|pair| pair.split_once(" = "))
                .map(|(name, value)| (name.to_string(), value.to_string()))
                .collect()
        })
        .collect();
    assert_eq!(ours.len(), 301, "{}", o.transcript());
    assert_eq!(ours, theirs, "{}", o.transcript());
    // The innermost frames are too deep for gdb: it says so, and so do we.
    assert!(ours[0][1].1.contains("Loop detected"), "{:?}", ours[0]);
    assert!(ours[300][1].1 == "0", "{:?}", ours[300]);
}

#[test]
fn next_and_step_at_inlined_calls_stop_where_gdbs_do() {
    // From find_fwd's breakpoint: `next` steps over the inlined calls of
    // its lines and stops at the next line's calls (shown in find_fwd);
    // `step` enters the inlined call there without running, then the one
    // inside it.
    let function = "regex_automata::hybrid::search::find_fwd";
    let moves = [
        "next", "next", "step", "step", "next", "next", "step", "step", "step",
    ];
    let mut gcmds = vec![format!("break {function}"), "run".to_string()];
    for m in moves {
        gcmds.push(m.to_string());
        gcmds.push(GDB_WHERE_AM_I.to_string());
    }
    let theirs: Vec<(String, u32)> = parse_gdb_markers(&gdb(&wordfreq(), &[], &strs(&gcmds)))
        .into_iter()
        .map(|(f, line)| (plain_name(&f), line))
        .collect();
    let mut rcmds = vec![format!("stop in {function}"), "run".to_string()];
    rcmds.extend(moves.iter().map(|m| m.to_string()));
    let o = Rdbx::batch()
        .cmds(&strs(&rcmds))
        .prog(&wordfreq(), &[])
        .run();
    o.assert_no_errors();
    let ours: Vec<(String, u32)> = o
        .stops()
        .into_iter()
        .skip(1)
        .map(|s| (plain_name(&s.func), s.line.unwrap_or(0)))
        .collect();
    assert_eq!(theirs.len(), moves.len(), "gdb stopped {theirs:?}");
    assert_eq!(ours, theirs, "{}", o.transcript());
}
