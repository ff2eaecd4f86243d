//! Commands not covered by the topic suites: gdb spellings and the
//! smaller dbx commands, each driving a real program.

mod common;
use common::*;

fn loop_run(commands: &[&str]) -> Outcome {
    let o = Rdbx::batch()
        .cmds(commands)
        .prog(&prog("loop-O0"), &[])
        .run();
    o.assert_stderr_well_formed();
    o
}

#[test]
fn tbreak_stops_once() {
    let o = loop_run(&["tbreak hit", "run", "print i", "cont", "info breakpoints"]);
    assert_eq!(o.printed("i"), ["1"], "{}", o.transcript());
    assert_eq!(o.stops().len(), 1, "{}", o.transcript());
    assert_eq!(o.exit_lines(), [3], "{}", o.transcript());
    assert!(
        o.stdout.contains("(1) stop in hit -temp"),
        "{}",
        o.transcript()
    );
    assert!(
        !o.stdout.contains("[hits:"),
        "the temporary breakpoint is gone\n{}",
        o.transcript()
    );
}

#[test]
fn disable_and_enable_a_breakpoint() {
    let o = loop_run(&["b hit", "run", "disable 1", "cont", "info b"]);
    assert_eq!(o.stops().len(), 1, "{}", o.transcript());
    assert_eq!(o.exit_lines(), [3], "{}", o.transcript());
    assert!(o.stdout.contains("[disabled]"), "{}", o.transcript());
    let o = loop_run(&["b hit", "disable 1", "enable 1", "run", "print i"]);
    assert_eq!(o.printed("i"), ["1"], "{}", o.transcript());
}

#[test]
fn condition_sets_and_removes_a_condition() {
    let o = loop_run(&[
        "break hit",
        "condition 1 i == 4",
        "run",
        "print i",
        "condition 1",
        "cont",
        "print i",
    ]);
    assert_eq!(o.printed("i"), ["4", "5"], "{}", o.transcript());
}

#[test]
fn gdb_ignore_count_and_cont_n_skip_hits() {
    let o = loop_run(&[
        "break hit",
        "ignore 1 2",
        "run",
        "print i",
        "cont 3",
        "print i",
    ]);
    // ignore 2: the first stop is the 3rd hit; cont 3: the 3rd hit after that.
    assert_eq!(o.printed("i"), ["3", "6"], "{}", o.transcript());
}

#[test]
fn nexti_steps_over_the_call() {
    let line = line_of("loop.c", "loop_call");
    let o = loop_run(&[
        &format!("stop at \"loop.c\":{line}"),
        "run",
        "nexti 20",
        "print total",
    ]);
    // Twenty instructions from the call line go past at least one call of
    // hit without stopping inside it.
    assert!(
        o.stops().iter().all(|s| s.func == "main"),
        "{}",
        o.transcript()
    );
    let total: i64 = o.printed_one("total").parse().unwrap();
    assert!(total >= 1, "{}", o.transcript());
}

#[test]
fn whatis_and_ptype_name_the_type() {
    let o = loop_run(&["stop in hit", "run", "whatis i", "ptype total"]);
    assert!(o.stdout.contains("type = int"), "{}", o.transcript());
    assert!(o.stdout.contains("type = long"), "{}", o.transcript());
}

#[test]
fn disassemble_shows_the_whole_function() {
    let o = loop_run(&["stop in hit", "run", "disassemble"]);
    assert!(o.stdout.contains("<hit>:"), "{}", o.transcript());
    assert!(o.stdout.contains("=> 0x"), "{}", o.transcript());
    assert!(
        o.stdout.lines().any(|l| l.contains("ret")),
        "{}",
        o.transcript()
    );
}

#[test]
fn info_spellings() {
    let o = loop_run(&["b hit", "run", "info threads", "info sharedlibrary", "bt"]);
    assert!(o.stdout.contains("=> t@1 (lwp "), "{}", o.transcript());
    assert!(o.stdout.contains("libc.so.6"), "{}", o.transcript());
    assert!(o.stdout.contains("=>[1] hit(i = 1)"), "{}", o.transcript());
}

#[test]
fn help_lists_and_explains_commands() {
    let o = loop_run(&["help", "help b", "help nosuch"]);
    assert!(o.stdout.contains("stop"), "{}", o.transcript());
    assert!(o.stdout.contains("tbreak"), "{}", o.transcript());
    assert_eq!(o.errors().len(), 1, "{}", o.transcript());
}

#[test]
fn source_runs_a_command_file() {
    let dir = std::env::temp_dir().join(format!("rdbx-source-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("cmds");
    std::fs::write(&script, "stop in hit -count 2\nrun\nprint i\n").unwrap();
    let o = loop_run(&[&format!("source {}", script.display())]);
    assert_eq!(o.printed("i"), ["2"], "{}", o.transcript());
    let o = loop_run(&["source /no/such/file", "stop in main"]);
    assert_eq!(o.errors().len(), 1, "{}", o.transcript());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn cont_sig_0_discards_the_signal() {
    let p = prog("signals-O0");
    let o = Rdbx::batch()
        .cmds(&["run", "cont sig 0"])
        .prog(&p, &[])
        .run();
    o.assert_stderr_well_formed();
    assert!(o.stdout.contains("signal SIGUSR1"), "{}", o.transcript());
    // The handler never ran.
    assert!(o.stdout.contains("handled 0"), "{}", o.transcript());
}
