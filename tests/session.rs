//! The session's dbx/gdb behaviour, compared with gdb where gdb has the
//! same command: thread ids as `threads` prints them, `where` ending at
//! main, `up`/`down`/`frame` at the ends of the stack, steps cut short by a
//! breakpoint, displays kept to the function they were made in, Enter
//! repeating the last step, `complete`, and the exit status.
mod common;
use common::*;

fn session_prog() -> std::path::PathBuf {
    prog("session-O0")
}

/// Lines starting with `N: `: what displays print.
fn display_lines(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| {
            l.split_once(": ")
                .is_some_and(|(n, rest)| n.parse::<u32>().is_ok() && !rest.is_empty())
        })
        .map(String::from)
        .collect()
}

// ----- threads ----------------------------------------------------------

/// The number of the current thread in a `threads` listing (`=> t@N ...`).
fn current_thread_number(o: &Outcome) -> u32 {
    let line = o
        .stdout
        .lines()
        .find(|l| l.starts_with("=> t@"))
        .unwrap_or_else(|| panic!("no current thread listed\n{}", o.transcript()));
    line["=> t@".len()..]
        .split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("bad thread line {line}"))
}

#[test]
fn threads_are_named_as_threads_lists_them() {
    let p = prog("threads-O0");
    let o = Rdbx::batch()
        .cmds(&[
            "stop in work",
            "run",
            "threads",
            "where t@1",
            "thread t@1",
            "where",
            "thread 1",
        ])
        .prog(&p, &[])
        .run();
    o.assert_no_errors();
    let worker = current_thread_number(&o);
    assert_ne!(worker, 1, "a worker hit work\n{}", o.transcript());
    let blocks = o.where_blocks();
    assert_eq!(blocks.len(), 2, "{}", o.transcript());
    // `where t@1` shows the main thread's stack without selecting it (no
    // frame is marked), the same stack `where` shows once it is selected.
    assert!(blocks[0].iter().all(|f| !f.selected), "{}", o.transcript());
    assert!(blocks[1][0].selected, "{}", o.transcript());
    let names =
        |frames: &[Frame]| -> Vec<String> { frames.iter().map(|f| f.func.clone()).collect() };
    assert_eq!(names(&blocks[0]), names(&blocks[1]), "{}", o.transcript());
    assert_eq!(
        blocks[1].last().map(|f| f.func.as_str()),
        Some("main"),
        "{}",
        o.transcript()
    );
    // Both spellings select t@1 and say so the same way.
    let selected: Vec<&str> = o
        .stdout
        .lines()
        .filter(|l| l.starts_with("t@1 (lwp "))
        .collect();
    assert_eq!(selected.len(), 2, "{}", o.transcript());
    assert_eq!(selected[0], selected[1], "{}", o.transcript());
}

#[test]
fn bad_thread_ids_are_one_line_errors() {
    let p = prog("threads-O0");
    let o = Rdbx::batch()
        .cmds(&[
            "stop in work",
            "run",
            "thread t@99",
            "thread t@x",
            "where t@0",
            "where t@42",
            "thread",
            "where",
        ])
        .prog(&p, &[])
        .run();
    o.assert_stderr_well_formed();
    assert_eq!(
        o.errors(),
        [
            "rdbx: no thread t@99 (threads lists them)",
            "rdbx: thread: invalid thread id \"t@x\" (expected t@N or N, as threads lists them); usage: thread t@N | thread N",
            "rdbx: where: invalid thread id \"t@0\" (expected t@N or N, as threads lists them); usage: where [N] [t@T]",
            "rdbx: no thread t@42 (threads lists them)",
            "rdbx: thread: missing thread id (t@N or N); usage: thread t@N | thread N",
        ],
        "{}",
        o.transcript()
    );
    // The session goes on in the thread that stopped.
    assert_eq!(o.nth_where(0)[0].func, "work", "{}", o.transcript());
}

// ----- where, up, down, frame -------------------------------------------

#[test]
fn where_ends_at_main_as_gdb_bt() {
    let p = prog("recurse-O0");
    let o = Rdbx::batch()
        .cmds(&[
            "stop in fact -if n == 1",
            "run",
            "where",
            "where 3",
            "where 50",
        ])
        .prog(&p, &[])
        .run();
    o.assert_no_errors();
    let gdb_text = gdb(
        &p,
        &[],
        &["break fact if n == 1", "run", "bt", "bt 3", "bt 50"],
    );
    let gdb_frames = parse_gdb_bt(&gdb_text);
    let ours = o.where_blocks();
    assert_eq!(ours.len(), 3, "{}", o.transcript());
    let shown = |frames: &[Frame]| -> Vec<(String, Option<u32>)> {
        frames.iter().map(|f| (f.func.clone(), f.line)).collect()
    };
    // gdb's three backtraces, one after the other: 7, 3 and 7 frames.
    let all: Vec<(String, Option<u32>)> = ours.iter().flat_map(|b| shown(b)).collect();
    assert_eq!(
        all,
        shown(&gdb_frames),
        "gdb:\n{gdb_text}\n{}",
        o.transcript()
    );
    assert_eq!(ours[0].len(), 7);
    assert_eq!(ours[0].last().unwrap().func, "main");
}

#[test]
fn past_main_shows_the_frames_below_main_as_gdb() {
    let p = prog("recurse-O0");
    let o = Rdbx::batch()
        .cmds(&[
            "stop in fact -if n == 1",
            "run",
            "dbxenv stack_past_main on",
            "where",
            "up 100",
            "set backtrace past-main off",
            "where",
            "dbxenv stack_past_main",
        ])
        .prog(&p, &[])
        .run();
    o.assert_no_errors();
    let gdb_text = gdb(
        &p,
        &[],
        &[
            "break fact if n == 1",
            "run",
            "set backtrace past-main on",
            "bt",
        ],
    );
    let theirs: Vec<String> = parse_gdb_bt(&gdb_text)
        .into_iter()
        .map(|f| f.func)
        .collect();
    let blocks = o.where_blocks();
    let ours: Vec<String> = blocks[0].iter().map(|f| f.func.clone()).collect();
    assert_eq!(ours, theirs, "gdb:\n{gdb_text}\n{}", o.transcript());
    assert!(ours.len() > 7, "frames below main\n{}", o.transcript());
    // `up 100` reaches the outermost of them; off again, where ends at main.
    assert!(
        o.stdout.lines().any(|l| l.starts_with(&format!(
            "=>[{}] {}",
            ours.len(),
            ours[ours.len() - 1]
        ))),
        "{}",
        o.transcript()
    );
    assert_eq!(blocks.last().unwrap().last().unwrap().func, "main");
    assert_eq!(blocks.last().unwrap().len(), 7);
    assert!(o.has_line("stack_past_main  off"), "{}", o.transcript());
}

#[test]
fn up_down_and_frame_at_the_ends_of_the_stack_as_gdb() {
    let p = prog("recurse-O0");
    let o = Rdbx::batch()
        .cmds(&[
            "stop in fact -if n == 1",
            "run",
            "up 100",
            "up",
            "up 2",
            "down 100",
            "down",
            "down 3",
            "frame 9",
            "frame 0",
            "frame 2",
        ])
        .prog(&p, &[])
        .run();
    o.assert_stderr_well_formed();
    assert_eq!(
        o.errors(),
        [
            "rdbx: outermost frame selected; you cannot go up",
            "rdbx: innermost frame selected; you cannot go down",
            "rdbx: no frame 9: the outermost frame is 7",
            "rdbx: no frame 0: frames are numbered from 1, as where shows them",
        ],
        "{}",
        o.transcript()
    );
    // The frames selected, in order: gdb's frame numbers are one less.
    let ours: Vec<(u32, String, Option<u32>)> = o
        .stdout
        .lines()
        .filter(|l| l.starts_with("=>["))
        .filter_map(parse_rdbx_frame)
        .map(|f| (f.index - 1, f.func, f.line))
        .collect();
    let gdb_text = gdb(
        &p,
        &[],
        &[
            "break fact if n == 1",
            "run",
            "up 100",
            "up",
            "up 2",
            "down 100",
            "down",
            "down 3",
            "frame 9",
            "frame 2",
        ],
    );
    assert!(gdb_text.contains("Initial frame selected; you cannot go up."));
    assert!(gdb_text.contains("Bottom (innermost) frame selected; you cannot go down."));
    assert!(gdb_text.contains("No frame at level 9."));
    let theirs: Vec<(u32, String, Option<u32>)> = parse_gdb_bt(&gdb_text)
        .into_iter()
        .map(|f| (f.index, f.func, f.line))
        .collect();
    // gdb's `frame 2` is rdbx's `frame 3`; rdbx's `frame 2` is gdb's 1.
    let mut theirs_adjusted = theirs.clone();
    theirs_adjusted.pop();
    let frame_2 = ours.last().cloned();
    assert_eq!(
        ours[..ours.len() - 1],
        theirs_adjusted[..],
        "gdb:\n{gdb_text}\n{}",
        o.transcript()
    );
    assert_eq!(
        frame_2,
        Some((
            1,
            "fact".to_string(),
            Some(line_of("recurse.c", "fact_rec"))
        )),
        "{}",
        o.transcript()
    );
}

#[test]
fn step_up_out_of_main_is_refused_as_gdb_finish() {
    let p = session_prog();
    let o = Rdbx::batch()
        .cmds(&["stop in main", "run", "step up", "up 0", "next"])
        .prog(&p, &[])
        .run();
    o.assert_stderr_well_formed();
    assert_eq!(
        o.errors(),
        ["rdbx: \"step up\" not meaningful in the outermost frame"],
        "{}",
        o.transcript()
    );
    let gdb_text = gdb(&p, &[], &["break main", "run", "finish"]);
    assert!(
        gdb_text.contains("\"finish\" not meaningful in the outermost frame."),
        "{gdb_text}"
    );
    // The program is where it was: next goes on in main.
    let stops = o.stops();
    assert_eq!(stops.len(), 2, "{}", o.transcript());
    assert_eq!(stops[1].func, "main", "{}", o.transcript());
}

// ----- steps cut short by a breakpoint ----------------------------------

/// Each `"CMD" interrupted by breakpoint (N)` line: the command, the
/// breakpoints, and the stop shown on the next line.
fn interrupted(o: &Outcome) -> Vec<(String, String, Stop)> {
    let lines: Vec<&str> = o.stdout.lines().collect();
    lines
        .windows(2)
        .filter_map(|pair| {
            let (command, ids) = pair[0].split_once(" interrupted by ")?;
            let stop = parse_stop(pair[1])?;
            Some((command.to_string(), ids.to_string(), stop))
        })
        .collect()
}

#[test]
fn steps_cut_short_by_a_breakpoint_say_so_as_gdb() {
    let p = session_prog();
    let rdbx_cmds = [
        "stop in combine",
        "run",
        "next",
        "stop in scale",
        "next",
        "step up",
        "step up",
        "step up",
        "step up",
        "next 3",
    ];
    let o = Rdbx::batch().cmds(&rdbx_cmds).prog(&p, &[]).run();
    o.assert_no_errors();
    let mut g = vec!["break combine", "run", "next", "break scale"];
    for step in ["next", "finish", "finish", "finish", "finish", "next 3"] {
        g.push(step);
        g.push(GDB_WHERE_AM_I);
    }
    let gdb_text = gdb(&p, &[], &g);
    let expected = parse_gdb_markers(&gdb_text);
    // Where each command ended, as gdb's (`next 3` ended at its second
    // step, on breakpoint 1: stop 8).
    let stops: Vec<(String, u32)> = o
        .stops()
        .into_iter()
        .map(|s| (s.func, s.line.unwrap_or(0)))
        .collect();
    assert_eq!(stops.len(), 9, "{}", o.transcript());
    let ends: Vec<(String, u32)> = [2, 3, 4, 5, 6, 8]
        .iter()
        .map(|&i| stops[i].clone())
        .collect();
    assert_eq!(ends, expected, "gdb:\n{gdb_text}\n{}", o.transcript());
    // gdb said "Breakpoint N, " where rdbx says which command was cut
    // short by which breakpoint; neither shows a return value for the
    // finish that did not finish.
    assert_eq!(
        gdb_text.matches("\nBreakpoint 2, scale").count(),
        2,
        "{gdb_text}"
    );
    assert_eq!(
        gdb_text.matches("\nBreakpoint 1, combine").count(),
        2,
        "{gdb_text}"
    );
    let said: Vec<(String, String, String, Option<u32>)> = interrupted(&o)
        .into_iter()
        .map(|(command, ids, stop)| (command, ids, stop.func, stop.line))
        .collect();
    let body = line_of("session.c", "scale_body");
    let combine_first = stops[0].1;
    assert_eq!(
        said,
        [
            (
                "\"next\"".into(),
                "breakpoint (2)".into(),
                "scale".into(),
                Some(body)
            ),
            (
                "\"step up\"".into(),
                "breakpoint (2)".into(),
                "scale".into(),
                Some(body)
            ),
            (
                "\"next\"".into(),
                "breakpoint (1)".into(),
                "combine".into(),
                Some(combine_first)
            ),
        ],
        "{}",
        o.transcript()
    );
    let returned = o.stdout.lines().filter(|l| l.contains(" returns ")).count();
    assert_eq!(returned, 3, "{}", o.transcript());
    assert_eq!(gdb_text.matches("Value returned").count(), 3, "{gdb_text}");
}

#[test]
fn a_completed_step_up_still_shows_its_value() {
    let p = session_prog();
    let o = Rdbx::batch()
        .cmds(&["stop in scale", "run", "step up"])
        .prog(&p, &[])
        .run();
    o.assert_no_errors();
    assert!(o.has_line("scale returns 4"), "{}", o.transcript());
    assert!(interrupted(&o).is_empty(), "{}", o.transcript());
}

// ----- displays ---------------------------------------------------------

#[test]
fn displays_of_locals_show_only_in_their_function_as_gdb() {
    let p = session_prog();
    let sequence = ["next", "finish", "next", "step", "next", "cont", "finish"];
    let mut cmds = vec![
        "stop in scale",
        "run",
        "display scaled",
        "display g_total",
        "display/x factor * pp->left",
    ];
    cmds.extend(sequence);
    let o = Rdbx::batch().cmds(&cmds).prog(&p, &[]).run();
    o.assert_no_errors();
    let mut g = vec![
        "break scale",
        "run",
        "display scaled",
        "display g_total",
        "display/x factor * pp->left",
    ];
    g.extend(sequence);
    let gdb_text = gdb(&p, &[], &g);
    let theirs = display_lines(&gdb_text);
    let ours = display_lines(&o.stdout);
    // rdbx shows new displays at once (gdb -batch does not): three lines.
    assert_eq!(
        ours.len(),
        theirs.len() + 3,
        "gdb:\n{gdb_text}\n{}",
        o.transcript()
    );
    assert_eq!(
        ours[3..],
        theirs[..],
        "gdb:\n{gdb_text}\n{}",
        o.transcript()
    );
    // Out of scale, only the global was shown, and no error anywhere.
    assert!(theirs.iter().any(|l| l.starts_with("2: g_total")));
    assert!(
        ours.iter().all(|l| !l.contains("<error")),
        "{}",
        o.transcript()
    );
}

#[test]
fn display_without_argument_shows_what_applies_here() {
    let p = session_prog();
    let o = Rdbx::batch()
        .cmds(&[
            "stop in scale",
            "run",
            "display scaled",
            "display g_total",
            "up",
            "display",
            "down",
            "display",
        ])
        .prog(&p, &[])
        .run();
    o.assert_no_errors();
    let ours = display_lines(&o.stdout);
    // At creation, in combine's frame (global only), back in scale (both).
    assert_eq!(ours.len(), 2 + 1 + 2, "{}", o.transcript());
    assert!(ours[2].starts_with("2: g_total = "), "{}", o.transcript());
    assert!(ours[3].starts_with("1: scaled = "), "{}", o.transcript());
}

// ----- Enter repeats -------------------------------------------------------

#[test]
fn enter_repeats_next_and_continues_x_through_a_pipe_as_gdb() {
    let p = session_prog();
    let o = Rdbx::interactive()
        .stdin("stop in combine\nrun\nnext\n\n\nx/2x &g_pair\n\nprint g_total\n\nquit\n")
        .prog(&p, &[])
        .run();
    o.assert_no_errors();
    // gdb reading the same lines from a pipe repeats the same way.
    let gdb_out = gdb_from_pipe(
        &p,
        "break combine\nrun\nnext\n\n\nx/2x &g_pair\n\nprint g_total\n\nquit\n",
    );
    let steps = gdb(
        &p,
        &[],
        &[
            "break combine",
            "run",
            "next",
            GDB_WHERE_AM_I,
            "next",
            GDB_WHERE_AM_I,
            "next",
            GDB_WHERE_AM_I,
        ],
    );
    let expected = parse_gdb_markers(&steps);
    let ours: Vec<(String, u32)> = o
        .stops()
        .into_iter()
        .skip(1)
        .map(|s| (s.func, s.line.unwrap_or(0)))
        .collect();
    assert_eq!(ours, expected, "gdb:\n{steps}\n{}", o.transcript());
    // Two lines of memory, the second where the first ended, as gdb's.
    let memory = |text: &str| -> Vec<String> {
        text.lines()
            .filter_map(|l| {
                let l = l.trim_start_matches("(gdb) ");
                l.starts_with("0x").then(|| l.to_string())
            })
            .collect()
    };
    assert_eq!(
        memory(&o.stdout),
        memory(&gdb_out),
        "gdb:\n{gdb_out}\n{}",
        o.transcript()
    );
    assert_eq!(memory(&o.stdout).len(), 2, "{}", o.transcript());
    // print is not repeated (gdb repeats it; rdbx only steps and x).
    assert_eq!(
        o.stdout.matches("g_total = ").count(),
        1,
        "{}",
        o.transcript()
    );
}

#[test]
fn enter_repeats_cont_and_stepi() {
    let p = session_prog();
    let o = Rdbx::interactive()
        .stdin("stop in scale\nrun\ncont\n\nstepi\n\n\nquit\n")
        .prog(&p, &[])
        .run();
    o.assert_no_errors();
    let stops = o.stops();
    // Three breakpoint stops (run, cont, Enter), then three instructions
    // (stepi and Enter twice), all in scale.
    assert_eq!(stops.len(), 6, "{}", o.transcript());
    assert!(
        stops.iter().all(|s| s.func == "scale"),
        "{}",
        o.transcript()
    );
    assert_eq!(o.stdout.matches("returns").count(), 0);
}

/// gdb reading `input` from a pipe, as a user's commands (not -batch).
fn gdb_from_pipe(p: &std::path::Path, input: &str) -> String {
    use std::io::Write;
    let mut child = std::process::Command::new("gdb")
        .args(["-nx", "-q", "-ex", "set debuginfod enabled off"])
        .arg(p)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("gdb must be installed");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().expect("gdb runs");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

// ----- completion ---------------------------------------------------------

/// The answers of `complete TEXT` for each text, in rdbx and in gdb, at
/// the same stop (in the caller's frame with `up`).
fn completions(stop_at: &str, up: bool, texts: &[&str]) -> Vec<(Vec<String>, Vec<String>)> {
    const SEPARATOR: &str = "@@next";
    let p = session_prog();
    let mut cmds = vec![format!("stop in {stop_at}"), "run".to_string()];
    let mut g = vec![format!("break {stop_at}"), "run".to_string()];
    if up {
        cmds.push("up".into());
        g.push("up".into());
    }
    cmds.push("print 0".into());
    g.push(format!("echo {SEPARATOR}\\n"));
    for text in texts {
        cmds.push(format!("complete {text}"));
        cmds.push("print 0".into());
        g.push(format!("complete {text}"));
        g.push(format!("echo {SEPARATOR}\\n"));
    }
    let refs: Vec<&str> = cmds.iter().map(String::as_str).collect();
    let o = Rdbx::batch().cmds(&refs).prog(&p, &[]).run();
    o.assert_no_errors();
    let grefs: Vec<&str> = g.iter().map(String::as_str).collect();
    let gdb_text = gdb(&p, &[], &grefs);
    // The answers are between the separators (`0 = 0` in rdbx).
    let answers = |text: &str, separator: &str| -> Vec<Vec<String>> {
        let mut parts: Vec<Vec<String>> = vec![Vec::new()];
        for line in text.lines() {
            if line == separator {
                parts.push(Vec::new());
            } else {
                parts.last_mut().unwrap().push(line.to_string());
            }
        }
        parts.remove(0);
        parts.truncate(texts.len());
        parts
    };
    let ours = answers(&o.stdout, "0 = 0");
    let theirs = answers(&gdb_text, SEPARATOR);
    assert_eq!(ours.len(), texts.len(), "{}", o.transcript());
    assert_eq!(theirs.len(), texts.len(), "{gdb_text}");
    ours.into_iter().zip(theirs).collect()
}

#[test]
fn complete_variables_and_members_as_gdb() {
    let members = [
        "print pp->",
        "print pp->ne",
        "p (*pp).r",
        "display/x g_pair.",
        "ptype g_pair.next_pair->",
    ];
    for (text, (ours, theirs)) in members.iter().zip(completions("scale", false, &members)) {
        assert!(!ours.is_empty(), "{text}: no completion");
        assert_eq!(ours, theirs, "{text}");
    }
    // Names: gdb adds libc's; ours are the program's, every one in gdb's.
    let names = ["print sca", "print g_", "whatis fa"];
    let answers = completions("scale", false, &names);
    for (text, (ours, theirs)) in names.iter().zip(&answers) {
        assert!(
            ours.iter().all(|line| theirs.contains(line)),
            "{text}: {ours:?} not all in gdb's {theirs:?}"
        );
    }
    assert_eq!(answers[0].0, ["print scale", "print scaled"]);
    assert_eq!(answers[1].0, ["print g_pair", "print g_total"]);
    assert_eq!(answers[2].0, ["whatis factor"]);
}

#[test]
fn complete_in_an_outer_frame_and_through_a_null_pointer_as_gdb() {
    let texts = [
        "print local_pair.",
        "ptype local_pair.next_pair->r",
        "print local_pair.next_pair->next_pair->",
        "print com",
    ];
    let answers = completions("scale", true, &texts);
    for (text, (ours, theirs)) in texts[..3].iter().zip(&answers) {
        assert_eq!(ours, theirs, "{text}");
    }
    // The function, the local of this frame (and static symbols such as
    // crt's completed.0), every one of them in gdb's answer.
    let (ours, theirs) = &answers[3];
    for name in ["print combine", "print combined"] {
        assert!(ours.iter().any(|l| l == name), "{ours:?}");
    }
    assert!(
        ours.iter().all(|l| theirs.contains(l)),
        "{ours:?} {theirs:?}"
    );
}

#[test]
fn complete_commands_and_functions() {
    let p = session_prog();
    let o = Rdbx::batch()
        .cmds(&["complete whe", "complete stop in sc", "complete print g_t"])
        .prog(&p, &[])
        .run();
    o.assert_no_errors();
    // Before run: command names, function names, and the globals.
    assert_eq!(
        o.out_lines(),
        ["when", "where", "stop in scale", "print g_total"],
        "{}",
        o.transcript()
    );
}

// ----- exit status --------------------------------------------------------

#[test]
fn a_program_that_cannot_be_debugged_is_a_failure() {
    let dir = scratch_dir("exit-status");
    let missing = dir.join("no_such_program");
    let o = Rdbx::interactive().stdin("").arg(&missing).run();
    assert_eq!(o.exit_code(), Some(1), "{}", o.transcript());
    assert_eq!(o.errors().len(), 1, "{}", o.transcript());
    let o = Rdbx::interactive().arg("-p").arg("999999").run();
    assert_eq!(o.exit_code(), Some(1), "{}", o.transcript());
    assert_eq!(
        o.errors(),
        ["rdbx: no process 999999"],
        "{}",
        o.transcript()
    );
    // A program that loads: 0, whatever failed in the session.
    let o = Rdbx::interactive()
        .stdin("print nosuch\n")
        .prog(&session_prog(), &[])
        .run();
    assert_eq!(o.exit_code(), Some(0), "{}", o.transcript());
}

#[test]
fn batch_exit_status_is_the_last_commands_as_gdb() {
    let p = session_prog();
    let dir = scratch_dir("batch-status");
    let failing_script = dir.join("fails");
    write_file(&failing_script, "print nosuch\nprint 2\n");
    let cases: [(&[&str], &[&str]); 5] = [
        (&["-c", "print nosuch"], &["-ex", "print nosuch"]),
        (
            &["-c", "print nosuch", "-c", "print 1"],
            &["-ex", "print nosuch", "-ex", "print 1"],
        ),
        (&["-c", "print 1"], &["-ex", "print 1"]),
        (&["-c", "cont"], &["-ex", "continue"]),
        (
            &[
                "-c",
                "stop in scale",
                "-c",
                "run",
                "-c",
                "print nosuch",
                "-c",
                "cont",
            ],
            &[
                "-ex",
                "break scale",
                "-ex",
                "run",
                "-ex",
                "print nosuch",
                "-ex",
                "continue",
            ],
        ),
    ];
    for (ours, theirs) in cases {
        let mut r = Rdbx::batch();
        for a in ours {
            r = r.arg(a);
        }
        let o = r.prog(&p, &[]).run();
        let status = std::process::Command::new("gdb")
            .args(["-batch", "-nx"])
            .args(theirs)
            .arg(&p)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .expect("gdb runs");
        assert_eq!(o.exit_code(), status.code(), "{ours:?}\n{}", o.transcript());
    }
    // A script counts as one command, failed if one of its commands did
    // (gdb stops a script at its first error, which fails it).
    let o = Rdbx::batch()
        .arg("-x")
        .arg(&failing_script)
        .prog(&p, &[])
        .run();
    assert_eq!(o.exit_code(), Some(1), "{}", o.transcript());
    // The program's loading is the first command.
    let o = Rdbx::batch().arg(dir.join("no_such_program")).run();
    assert_eq!(o.exit_code(), Some(1), "{}", o.transcript());
    let o = Rdbx::batch()
        .cmd("print 1")
        .arg(dir.join("no_such_program"))
        .run();
    assert_eq!(
        o.exit_code(),
        Some(0),
        "as gdb -batch -ex 'print 1' nosuch\n{}",
        o.transcript()
    );
}
