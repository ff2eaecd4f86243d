//! Bad input: every mistake gives exactly one `rdbx: ` line on stderr and the
//! session goes on (a following command still works).
mod common;
use common::*;
use std::path::Path;

/// Runs `bad` commands then `stop in main`; each bad command must produce
/// exactly one error line and the last command must still work.
fn each_is_one_error(p: &Path, setup: &[&str], bad: &[&str]) -> Outcome {
    let mut cmds: Vec<&str> = setup.to_vec();
    cmds.extend_from_slice(bad);
    cmds.push("stop in main");
    let o = Rdbx::batch().cmds(&cmds).prog(p, &[]).run();
    o.assert_stderr_well_formed();
    assert_eq!(
        o.errors().len(),
        bad.len(),
        "one error line per bad command {bad:?}\n{}",
        o.transcript()
    );
    assert!(
        o.stdout
            .lines()
            .any(|l| l.starts_with('(') && l.contains(") stop in main")),
        "the session goes on\n{}",
        o.transcript()
    );
    o
}

#[test]
fn unknown_command_suggests_nearest() {
    let o = each_is_one_error(&prog("recurse-O0"), &[], &["stpo in main"]);
    assert_eq!(
        o.errors()[0],
        "rdbx: unknown command \"stpo\"; did you mean \"stop\"?",
        "{}",
        o.transcript()
    );
    let o = each_is_one_error(&prog("recurse-O0"), &[], &["wehre"]);
    assert!(
        o.errors()[0].contains("\"wehre\"") && o.errors()[0].contains("\"where\""),
        "{}",
        o.transcript()
    );
}

#[test]
fn unknown_function_for_list_and_dis() {
    let o = each_is_one_error(
        &prog("recurse-O0"),
        &[],
        &["list no_such_function", "dis no_such_function"],
    );
    for e in o.errors() {
        assert!(
            e.contains("no_such_function"),
            "error names the function: {e}"
        );
    }
}

#[test]
fn file_and_line_errors() {
    let o = each_is_one_error(
        &prog("recurse-O0"),
        &[],
        &[
            "stop at \"no_such_file.c\":3",
            "stop at \"recurse.c\":9999",
            "list 9999",
            "list \"no_such_file.c\":1",
        ],
    );
    assert!(
        o.errors()[0].contains("no_such_file.c"),
        "{}",
        o.transcript()
    );
    assert!(o.errors()[1].contains("9999"), "{}", o.transcript());
}

#[test]
fn unknown_function_breakpoint_is_pending_not_an_error() {
    let p = prog("recurse-O0");
    let o = Rdbx::batch()
        .cmds(&["stop in no_such_function", "status", "run"])
        .prog(&p, &[])
        .run();
    o.assert_stderr_well_formed();
    assert!(o.errors().is_empty(), "{}", o.transcript());
    assert_eq!(
        o.error_lines(),
        ["rdbx: warning: no function \"no_such_function\" in the loaded objects; breakpoint (1) is pending until a library defines it"],
        "{}",
        o.transcript()
    );
    assert!(
        o.stdout
            .lines()
            .any(|l| l.starts_with("(1) stop in no_such_function")
                && l.trim_end().ends_with("[pending]")),
        "{}",
        o.transcript()
    );
    assert_eq!(o.exit_lines(), [0], "{}", o.transcript());
}

#[test]
fn unreadable_memory() {
    let p = prog("recurse-O0");
    each_is_one_error(&p, &[], &["dis 0x1"]);
    let o = each_is_one_error(
        &p,
        &["stop in fact", "run"],
        &["dis 0x1", "print *(int *)0", "print *(int *)1"],
    );
    // The process is still there and usable.
    assert_eq!(o.stops().len(), 1, "{}", o.transcript());
}

#[test]
fn bad_expressions_and_names() {
    let p = prog("types-O0");
    let o = each_is_one_error(
        &p,
        &["stop in show", "run"],
        &["print no_such_var", "print i +", "print (", "frame 99"],
    );
    assert!(o.errors()[0].contains("no_such_var"), "{}", o.transcript());
}

#[test]
fn commands_needing_a_process() {
    let p = prog("recurse-O0");
    let o = each_is_one_error(
        &p,
        &[],
        &[
            "cont", "step", "next", "finish", "stepi", "where", "regs", "print n", "kill",
        ],
    );
    assert_eq!(o.errors()[0], "rdbx: no process", "{}", o.transcript());
}

#[test]
fn bad_breakpoint_options() {
    let p = prog("loop-O0");
    each_is_one_error(
        &p,
        &[],
        &[
            "stop in hit -count",
            "stop in hit -count x",
            "stop in hit -if",
            "delete 42",
            "stop in",
        ],
    );
}

/// Loading `path` fails: one error line per failed command, exit status 1 in batch.
fn load_fails(path: &Path) -> Outcome {
    let o = Rdbx::batch().cmds(&["run", "cont"]).arg(path).run();
    o.assert_stderr_well_formed();
    assert!(
        o.errors().len() >= 2,
        "load error, then the session goes on\n{}",
        o.transcript()
    );
    assert!(o.process_ids().is_empty(), "{}", o.transcript());
    assert!(o.exit_lines().is_empty());
    o
}

#[test]
fn program_does_not_exist() {
    let dir = scratch_dir("noexist");
    let missing = dir.join("no_such_program");
    let o = load_fails(&missing);
    assert!(
        o.errors()[0].contains("no_such_program"),
        "{}",
        o.transcript()
    );
    assert_eq!(o.exit_code(), Some(1), "{}", o.transcript());
}

#[test]
fn program_not_elf() {
    let dir = scratch_dir("notelf");
    let f = dir.join("script.txt");
    write_file(&f, "#!/bin/sh\necho hello\n");
    make_executable(&f);
    let o = load_fails(&f);
    assert_eq!(o.exit_code(), Some(1), "{}", o.transcript());
}

#[test]
fn program_for_another_machine() {
    let dir = scratch_dir("aarch64");
    let f = dir.join("arm64-prog");
    std::fs::write(&f, aarch64_elf_header()).unwrap();
    make_executable(&f);
    let o = load_fails(&f);
    assert_eq!(o.exit_code(), Some(1), "{}", o.transcript());
}

#[test]
fn program_not_executable() {
    let dir = scratch_dir("noexec");
    let f = dir.join("loop-copy");
    std::fs::copy(prog("loop-O0"), &f).unwrap();
    let mut perm = std::fs::metadata(&f).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perm, 0o644);
    std::fs::set_permissions(&f, perm).unwrap();
    // It may load (it is a valid ELF) but cannot run.
    let o = Rdbx::batch().cmds(&["run", "cont"]).arg(&f).run();
    o.assert_stderr_well_formed();
    assert!(o.errors().len() >= 2, "{}", o.transcript());
    assert!(o.exit_lines().is_empty(), "{}", o.transcript());
    o.assert_out_lacks("sum=");
}

#[test]
fn directory_as_program() {
    let dir = scratch_dir("dirprog");
    let o = load_fails(&dir);
    assert_eq!(o.exit_code(), Some(1), "{}", o.transcript());
}

/// A minimal, valid ELF64 header for AArch64 (EM_AARCH64 = 183), no segments.
fn aarch64_elf_header() -> Vec<u8> {
    let mut h = vec![0x7f, b'E', b'L', b'F', 2, 1, 1, 0];
    h.resize(16, 0);
    h.extend_from_slice(&2u16.to_le_bytes()); // ET_EXEC
    h.extend_from_slice(&183u16.to_le_bytes()); // EM_AARCH64
    h.extend_from_slice(&1u32.to_le_bytes()); // EV_CURRENT
    h.extend_from_slice(&0x400000u64.to_le_bytes()); // e_entry
    h.extend_from_slice(&0u64.to_le_bytes()); // e_phoff
    h.extend_from_slice(&0u64.to_le_bytes()); // e_shoff
    h.extend_from_slice(&0u32.to_le_bytes()); // e_flags
    h.extend_from_slice(&64u16.to_le_bytes()); // e_ehsize
    h.extend_from_slice(&56u16.to_le_bytes()); // e_phentsize
    h.extend_from_slice(&0u16.to_le_bytes()); // e_phnum
    h.extend_from_slice(&64u16.to_le_bytes()); // e_shentsize
    h.extend_from_slice(&0u16.to_le_bytes()); // e_shnum
    h.extend_from_slice(&0u16.to_le_bytes()); // e_shstrndx
    assert_eq!(h.len(), 64);
    h
}

#[test]
fn crafted_header_is_really_aarch64() {
    let dir = scratch_dir("aarch64check");
    let f = dir.join("arm64-prog");
    std::fs::write(&f, aarch64_elf_header()).unwrap();
    let out = std::process::Command::new("readelf")
        .arg("-h")
        .arg(&f)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("AArch64"), "{text}");
}

/// A script that sources itself is refused past a depth, not run until
/// rdbx's stack overflows.
#[test]
fn a_script_that_sources_itself_stops_at_a_depth() {
    let dir = scratch_dir("self-source");
    let script = dir.join("again.rdbx");
    write_file(&script, &format!("source {}\n", script.display()));
    let o = each_is_one_error(
        &prog("recurse-O0"),
        &[],
        &[&format!("source {}", script.display())],
    );
    assert!(
        o.stderr
            .contains("scripts nested too deeply (the limit is 32)"),
        "{}",
        o.transcript()
    );
}
