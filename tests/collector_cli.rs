//! The launcher side of the collector: injected function calls in the
//! engine, the `collector` commands of a session, `rdbx collect`, where the
//! library comes from, and the errors before a target starts.
//!
//! Most tests preload tests/programs/fakecollector.c (RDBX_COLLECTOR):
//! its `__rdbx_collector_*` functions log what rdbx asked for, so the
//! launcher is tested without the real library; the tests named
//! `..._real_library...` use the embedded one. tests/collector.rs checks
//! what the real collector records.

mod common;

use common::*;
use std::path::{Path, PathBuf};

fn fake() -> PathBuf {
    prog("libfakecollector.so")
}

fn log_of(expt: &Path) -> String {
    std::fs::read_to_string(expt.join("log")).unwrap_or_default()
}

/// rdbx on callee-O0 with the fake collector, in `dir`.
fn session_in(dir: &Path, commands: &[&str], args: &[&str]) -> Outcome {
    Rdbx::batch()
        .env("RDBX_COLLECTOR", fake())
        .cwd(dir)
        .cmds(commands)
        .prog(&prog("callee-O0"), args)
        .run()
}

#[test]
fn run_with_collection_starts_the_collector_at_entry() {
    let dir = scratch_dir("collector-run");
    let out = session_in(
        &dir,
        &[
            "collector enable",
            "stop in tick",
            "run",
            "collector sample record phase2",
            "collector pause",
            "collector status",
            "collector resume",
            "delete all",
            "cont",
        ],
        &[],
    );
    out.assert_stderr_well_formed();
    assert!(out.errors().is_empty(), "{}", out.transcript());
    out.assert_out_contains("state: paused");
    out.assert_out_contains("execution completed, exit code is 0");
    let expt = dir.join("test.1.er");
    let log = log_of(&expt);
    let pid = out.process_ids()[0];
    let events: Vec<&str> = log
        .lines()
        .map(|l| l.split(' ').nth(1).unwrap_or(""))
        .collect();
    assert_eq!(
        events,
        [
            "start",
            "object",
            "sample",
            "sample",
            "pause",
            "resume",
            "terminated"
        ],
        "{log}"
    );
    assert!(
        log.contains(&format!("start pid={pid} pid_ok=1 mode=debugger")),
        "{log}"
    );
    assert!(log.contains("cause=dbx-stop label=-"), "{log}");
    assert!(log.contains("cause=manual label=phase2"), "{log}");
    assert!(log.contains("terminated how=exit code=0"), "{log}");
    let index = std::fs::read_to_string(expt.join("archives/index")).expect("archives/index");
    let exe = std::fs::canonicalize(prog("callee-O0")).unwrap();
    assert!(
        index.starts_with(&format!("path={} build_id=", exe.display())),
        "{index}"
    );
}

#[test]
fn the_next_run_gets_the_next_experiment_and_kill_terminates_it() {
    let dir = scratch_dir("collector-next");
    std::fs::create_dir(dir.join("test.4.er")).unwrap();
    let out = session_in(
        &dir,
        &[
            "collector enable",
            "collector dbxsample off",
            "stop in tick",
            "run",
            "run",
            "kill",
        ],
        &[],
    );
    assert!(out.errors().is_empty(), "{}", out.transcript());
    for (name, how) in [
        ("test.5.er", "signal code=9"),
        ("test.6.er", "signal code=9"),
    ] {
        let log = log_of(&dir.join(name));
        assert!(log.contains("start pid="), "{name}: {log}");
        assert!(!log.contains("dbx-stop"), "dbxsample off: {log}");
        assert!(
            log.contains(&format!("terminated how={how}")),
            "{name}: {log}"
        );
    }
}

#[test]
fn shaping_settings_are_refused_while_an_experiment_is_active() {
    let dir = scratch_dir("collector-refuse");
    let out = session_in(
        &dir,
        &[
            "collector enable",
            "stop in tick",
            "run",
            "collector profile timer hi",
            "collector limit 10",
            "collector store filename other.er",
            "collector archive off",
            "collector show",
            "collector disable",
            "collector profile timer hi",
            "collector show profile",
            "collector pause",
        ],
        &[],
    );
    out.assert_stderr_well_formed();
    let errors = out.errors();
    let refused = errors
        .iter()
        .filter(|l| l.contains("not changed while an experiment is active"))
        .count();
    assert_eq!(refused, 4, "{}", out.transcript());
    out.assert_out_contains("profile: on, timer 10 ms");
    out.assert_out_contains("archive: on");
    out.assert_out_contains("profile: on, timer 1 ms");
    assert!(
        errors.iter().any(|l| l.contains("no experiment is active")),
        "{}",
        out.transcript()
    );
    let log = log_of(&dir.join("test.1.er"));
    assert!(log.contains(" end\n"), "{log}");
    assert!(log.contains("terminated how=signal code=9"), "{log}");
}

#[test]
fn a_collector_that_does_not_start_leaves_the_program_running() {
    let dir = scratch_dir("collector-fail");
    let out = Rdbx::batch()
        .env("RDBX_COLLECTOR", fake())
        .env("FAKE_COLLECTOR_FAIL", "1")
        .cwd(&dir)
        .cmds(&["collector enable", "run", "collector status"])
        .prog(&prog("callee-O0"), &[])
        .run();
    out.assert_stderr_well_formed();
    assert!(
        out.stderr.contains("__rdbx_collector_start returned -3"),
        "{}",
        out.transcript()
    );
    out.assert_out_contains("execution completed, exit code is 0");
    out.assert_out_contains("state: failed");
}

#[test]
fn collector_without_the_library_in_the_process_is_a_clear_error() {
    // An "library" that is not the collector: nothing to call at entry.
    let dir = scratch_dir("collector-nolib");
    let out = Rdbx::batch()
        .env("RDBX_COLLECTOR", prog("libdllib.so"))
        .cwd(&dir)
        .cmds(&["collector enable", "run"])
        .prog(&prog("callee-O0"), &[])
        .run();
    out.assert_stderr_well_formed();
    assert!(
        out.stderr
            .contains("__rdbx_collector_start is not in the process"),
        "{}",
        out.transcript()
    );
    out.assert_out_contains("execution completed, exit code is 0");
}

#[test]
fn settings_and_bad_input() {
    let out = Rdbx::batch()
        .cmds(&[
            "collector show",
            "collector profile timer 250u",
            "collector profile depth 64",
            "collector sample period 0.5",
            "collector sample manual",
            "collector limit 20",
            "collector archive copy",
            "collector store filename mine.er",
            "collector show",
            "collector profile sometimes",
            "collector store filename mine",
            "collector hwprofile counter page-fault 1",
            "collector hwprofile counter page-faults 1 context-switches hi",
            "collector show hwprofile",
            "collector hwprofile off",
            "collector show hwprofile",
            "collector status",
            "collector enable",
            "collector pause",
        ])
        .run();
    out.assert_stderr_well_formed();
    for line in [
        "collection: disabled",
        "profile: on, timer 10 ms, stack depth 256",
        "sample: periodic, period 1 s",
        "dbxsample: on",
        "limit: unlimited",
        "archive: on",
        "store filename: test.1.er",
        "profile: on, timer 250 us, stack depth 64",
        "sample: manual (period 0.5 s)",
        "limit: 20 MB",
        "archive: copy",
        "store filename: mine.er",
        "hwprofile: on, counters page-faults every 1, context-switches every 10",
        "hwprofile: off (counters page-faults every 1, context-switches every 10)",
        "no experiment (collector enable, then run)",
    ] {
        assert!(out.has_line(line), "{line}\n{}", out.transcript());
    }
    let errors = out.errors().join("\n");
    for needle in [
        "collector profile: expected on or off, got \"sometimes\"",
        "must end in .er",
        "collector hwprofile counter: unknown counter \"page-fault\" (did you mean \"page-faults\"?)",
        "collector pause: no experiment is active",
    ] {
        assert!(errors.contains(needle), "{needle}\n{}", out.transcript());
    }
}

/// Runs `collector enable` + `run` with a setup; the outcome, which must
/// show no started process.
fn refused_run(dir: &Path, program: &Path, setup: &[&str]) -> Outcome {
    let mut commands = vec!["collector enable"];
    commands.extend_from_slice(setup);
    commands.push("run");
    let out = Rdbx::batch()
        .env("RDBX_COLLECTOR", fake())
        .cwd(dir)
        .cmds(&commands)
        .prog(program, &[])
        .run();
    out.assert_stderr_well_formed();
    out.assert_out_lacks("Running:");
    out
}

#[test]
fn errors_before_the_target_starts() {
    let dir = scratch_dir("collector-refusals");
    std::fs::create_dir(dir.join("taken.er")).unwrap();
    let out = refused_run(
        &dir,
        &prog("callee-O0"),
        &["collector store filename taken.er"],
    );
    assert!(
        out.stderr.contains("taken.er already exists"),
        "{}",
        out.transcript()
    );

    let out = refused_run(
        &dir,
        &prog("callee-O0"),
        &["collector store directory /nonexistent/place"],
    );
    assert!(
        out.stderr.contains("/nonexistent/place"),
        "{}",
        out.transcript()
    );

    // Unwritable: as root every directory is writable, /proc is not.
    let unwritable = dir.join("readonly");
    std::fs::create_dir(&unwritable).unwrap();
    let mut permissions = std::fs::metadata(&unwritable).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o555);
    std::fs::set_permissions(&unwritable, permissions).unwrap();
    // SAFETY: getuid cannot fail.
    let target = if unsafe { libc::getuid() } == 0 {
        PathBuf::from("/proc")
    } else {
        unwritable
    };
    let setup = format!("collector store directory {}", target.display());
    let out = refused_run(&dir, &prog("callee-O0"), &[&setup]);
    assert!(
        out.stderr.contains("cannot write experiments in")
            || out.stderr.contains("cannot create experiment"),
        "{}",
        out.transcript()
    );

    let setuid = dir.join("callee-setuid");
    std::fs::copy(prog("callee-O0"), &setuid).unwrap();
    let mut permissions = std::fs::metadata(&setuid).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o4755);
    std::fs::set_permissions(&setuid, permissions).unwrap();
    let out = refused_run(&dir, &setuid, &[]);
    assert!(
        out.stderr.contains("setuid or setgid"),
        "{}",
        out.transcript()
    );

    if let Some(program) = static_program(&dir) {
        let out = refused_run(&dir, &program, &[]);
        assert!(
            out.stderr.contains("statically linked"),
            "{}",
            out.transcript()
        );
    }
    // Nothing was created by the refused runs.
    let experiments: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".er") && n != "taken.er")
        .collect();
    assert!(experiments.is_empty(), "{experiments:?}");
}

/// callee.c linked with -static, if the toolchain has a static libc.
fn static_program(dir: &Path) -> Option<PathBuf> {
    let out = dir.join("callee-static");
    let built = std::process::Command::new("gcc")
        .args(["-O0", "-static", "-o"])
        .arg(&out)
        .arg(sources_dir().join("callee.c"))
        .status()
        .is_ok_and(|s| s.success());
    if !built {
        eprintln!("no static libc: the static-executable check is not tested");
    }
    built.then_some(out)
}

#[test]
fn enable_on_a_process_started_without_collection_loads_the_collector() {
    // (tests/live_collect.rs checks the data; here the session's view.)
    let dir = scratch_dir("collector-live-nolib");
    let out = Rdbx::batch()
        .cwd(&dir)
        .cmds(&[
            "stop in tick",
            "run",
            "collector enable",
            "collector status",
        ])
        .prog(&prog("callee-O0"), &[])
        .run();
    out.assert_stderr_well_formed();
    out.assert_out_contains("Creating experiment database");
    out.assert_out_contains("state: active");
    assert!(dir.join("test.1.er").exists(), "{}", out.transcript());
}

#[test]
fn enable_after_disable_starts_a_new_experiment_in_the_live_process() {
    let dir = scratch_dir("collector-live-again");
    let out = session_in(
        &dir,
        &[
            "collector enable",
            "stop in tick",
            "run",
            "collector disable",
            "collector enable",
            "collector enable",
            "collector sample record again",
            "collector status",
            "delete all",
            "cont",
        ],
        &[],
    );
    out.assert_stderr_well_formed();
    let errors = out.errors();
    assert_eq!(errors.len(), 1, "{}", out.transcript());
    assert!(errors[0].contains("already active"), "{}", out.transcript());
    let (first, second) = (dir.join("test.1.er"), dir.join("test.2.er"));
    out.assert_out_contains(&format!("experiment {} closed", first.display()));
    out.assert_out_contains(&format!(
        "Creating experiment database {} ...",
        second.display()
    ));
    out.assert_out_contains(&format!("experiment: {}", second.display()));
    out.assert_out_contains("state: active");
    out.assert_out_contains("execution completed, exit code is 0");
    let pid = out.process_ids()[0];
    let log = log_of(&second);
    assert!(
        log.contains(&format!("start pid={pid} pid_ok=1 mode=debugger")),
        "{log}"
    );
    assert!(log.contains("cause=manual label=again"), "{log}");
    assert!(log_of(&first).contains(" end\n"), "closed by disable");
    // Both experiments of the process are finished when it ends.
    for expt in [&first, &second] {
        let log = log_of(expt);
        assert!(
            log.contains("terminated how=exit code=0"),
            "{}: {log}",
            expt.display()
        );
        assert!(expt.join("archives/index").is_file(), "{}", expt.display());
    }
    assert!(!log_of(&first).contains("label=again"));
}

// ----- rdbx collect -----------------------------------------------------

fn collect(dir: &Path, options: &[&str], args: &[&str]) -> std::process::Output {
    std::process::Command::new(rdbx_bin())
        .arg("collect")
        .args(options)
        .arg(prog("callee-O0"))
        .args(args)
        .current_dir(dir)
        .env("RDBX_COLLECTOR", fake())
        .output()
        .expect("run rdbx collect")
}

#[test]
fn collect_propagates_the_exit_status_and_makes_the_experiment() {
    let dir = scratch_dir("collect-status");
    let output = collect(
        &dir,
        &["-o", "seven.er", "-C", "first try", "-p", "hi"],
        &["exit", "7"],
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(7), "{stderr}");
    let expt = dir.join("seven.er");
    assert!(
        stderr.contains(&format!("rdbx collect: experiment {}", expt.display())),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(expt.join("notes")).unwrap(),
        "first try\n"
    );
    let log = log_of(&expt);
    assert!(log.contains("pid_ok=1 mode=collect"), "{log}");
    assert!(log.contains("terminated how=exit code=7"), "{log}");
    assert!(expt.join("archives/index").exists());

    let output = collect(&dir, &["-A", "off"], &["kill", "15"]);
    assert_eq!(output.status.code(), Some(128 + 15));
    let log = log_of(&dir.join("test.1.er"));
    assert!(log.contains("terminated how=signal code=15"), "{log}");
    assert!(!dir.join("test.1.er/archives").exists());

    let output = collect(&dir, &["-A", "copy", "-d", "sub"], &[]);
    assert_eq!(output.status.code(), Some(127), "no directory sub");
    std::fs::create_dir(dir.join("sub")).unwrap();
    let output = collect(&dir, &["-A", "copy", "-d", "sub"], &[]);
    assert_eq!(output.status.code(), Some(0));
    let copied = std::fs::read_dir(dir.join("sub/test.1.er/archives/files"))
        .unwrap()
        .count();
    assert_eq!(copied, 1);
}

#[test]
fn collect_o_takes_a_path_as_gprofng_collect_does() {
    let dir = scratch_dir("collect-path");
    std::fs::create_dir_all(dir.join("runs/inner")).unwrap();
    let absolute = dir.join("runs/abs.er");
    for (options, made) in [
        (vec!["-o", "runs/one.er"], dir.join("runs/one.er")),
        (vec!["-o", absolute.to_str().unwrap()], absolute.clone()),
        (
            vec!["-d", "runs", "-o", "inner/two.er"],
            dir.join("runs/inner/two.er"),
        ),
        (vec!["-o", "runs/../three.er"], dir.join("three.er")),
    ] {
        let output = collect(&dir, &options, &[]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(0), "{options:?}: {stderr}");
        assert!(
            log_of(&made).contains("start pid="),
            "{options:?}: {stderr}"
        );
        let shown = std::fs::canonicalize(&made).unwrap();
        assert!(
            stderr.contains(&format!("rdbx collect: experiment {}", shown.display())),
            "{options:?}: {stderr}"
        );
    }
    // The directory is not created (gprofng: "Store directory ... is not
    // accessible"), an existing experiment is not touched.
    let output = collect(&dir, &["-o", "runs/missing/x.er"], &[]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(127), "{stderr}");
    assert_eq!(
        stderr.trim_end(),
        "rdbx collect: experiment directory runs/missing: No such file or directory (os error 2)"
    );
    assert!(!dir.join("runs/missing").exists());
    let output = collect(&dir, &["-o", "runs/one.er"], &[]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(127), "{stderr}");
    assert_eq!(
        stderr.trim_end(),
        "rdbx collect: experiment runs/one.er already exists; choose another name"
    );
}

#[test]
fn collect_passes_sigterm_on_and_waits() {
    let dir = scratch_dir("collect-term");
    let mut child = std::process::Command::new(rdbx_bin())
        .args(["collect", "-o", "term.er"])
        .arg(prog("callee-O0"))
        .args(["spin", "20"])
        .current_dir(&dir)
        .env("RDBX_COLLECTOR", fake())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let expt = dir.join("term.er");
    let deadline = std::time::Instant::now() + TIMEOUT;
    while !log_of(&expt).contains("start pid=") {
        assert!(
            std::time::Instant::now() < deadline,
            "the program never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    // SAFETY: kill(2) on our own child (rdbx, not the program).
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(128 + libc::SIGTERM));
    let log = log_of(&expt);
    assert!(log.ends_with("terminated how=signal code=15\n"), "{log}");
}

#[test]
fn collect_refuses_bad_input_before_starting() {
    let dir = scratch_dir("collect-bad");
    std::fs::create_dir(dir.join("taken.er")).unwrap();
    for (options, needle) in [
        (&["-o", "taken.er"][..], "already exists"),
        (&["-o", "noext"][..], "must end in .er"),
        (&["-o", "taken.er/"][..], "already exists"),
        (
            &["-o", "nosuch/x.er"][..],
            "nosuch: No such file or directory",
        ),
        (&["-o", "taken.er/plain"][..], "\"plain\" must end in .er"),
        (&["-o", "/"][..], "no experiment name"),
        (&["-p", "sometimes"][..], "-p: expected on, hi, lo"),
        (&["-y", "SIGBOGUS"][..], "-y: unknown signal"),
        (&["-A", "maybe"][..], "-A: expected on, off or copy"),
        (&["-M", "maybe"][..], "-M: expected on or off"),
    ] {
        let output = collect(&dir, options, &[]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(127), "{options:?}: {stderr}");
        assert!(stderr.contains(needle), "{options:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{options:?}: {stderr}");
        // And the program did not run.
        assert!(!stderr.contains("counter="), "{stderr}");
    }
}

// ----- the library --------------------------------------------------------

#[test]
fn the_embedded_library_is_installed_into_the_cache() {
    let home = scratch_dir("collector-home");
    let out = Rdbx::batch()
        .env("HOME", &home)
        .env("XDG_CACHE_HOME", "")
        .env("RDBX_COLLECTOR", "")
        .cmd("collector version")
        .run();
    out.assert_stderr_well_formed();
    let line = out
        .out_lines()
        .first()
        .copied()
        .unwrap_or_default()
        .to_string();
    assert!(line.starts_with("collector "), "{}", out.transcript());
    assert!(line.contains("(embedded, "), "{line}");
    let path = line.rsplit(" at ").next().unwrap();
    assert!(
        path.starts_with(&format!("{}/.cache/rdbx/libcollector-", home.display())),
        "{line}"
    );
    assert!(Path::new(path).exists(), "{line}");
    let out = Rdbx::batch()
        .env("RDBX_COLLECTOR", fake())
        .cmd("collector version")
        .run();
    out.assert_out_contains("(RDBX_COLLECTOR, ");
}

#[test]
fn the_real_library_records_clock_events_and_samples() {
    let dir = scratch_dir("collector-real");
    let out = Rdbx::batch()
        .env("RDBX_COLLECTOR", "")
        .cwd(&dir)
        .cmds(&[
            "collector enable",
            "stop in main",
            "run",
            "collector sample record begin",
            "delete all",
            "cont",
            "collector status",
        ])
        .prog(&prog("callee-O0"), &["spin", "0.5"])
        .run();
    out.assert_stderr_well_formed();
    assert!(out.errors().is_empty(), "{}", out.transcript());
    let status = out.stdout.clone();
    let events: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("clock events: "))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert!(events >= 20, "{status}");
    let log = log_of(&dir.join("test.1.er"));
    assert!(log.contains("label=begin"), "{log}");
    assert!(log.contains(" end\n"), "{log}");
}

#[test]
fn collect_with_the_real_library() {
    let dir = scratch_dir("collect-real");
    let output = std::process::Command::new(rdbx_bin())
        .args(["collect", "-o", "spin.er"])
        .arg(prog("callee-O0"))
        .args(["spin", "0.3"])
        .current_dir(&dir)
        .env_remove("RDBX_COLLECTOR")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    let manifest = std::fs::read_to_string(dir.join("spin.er/manifest")).unwrap();
    assert!(manifest.starts_with("format=rdbx-experiment"), "{manifest}");
    let log = log_of(&dir.join("spin.er"));
    assert!(
        log.contains(" end\n") && log.contains("terminated how=exit code=0"),
        "{log}"
    );
}

/// The program's "cpu FUNCTION SECONDS" lines.
fn cpu_seconds(stdout: &str, function: &str) -> f64 {
    stdout
        .lines()
        .find_map(|l| l.strip_prefix(&format!("cpu {function} ")))
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or_else(|| panic!("no cpu line for {function}:\n{stdout}"))
}

/// The second experiment, started by `collector enable` on the live
/// process, profiles threads that existed before it started.
#[test]
fn enable_on_a_live_process_with_the_real_library_profiles_existing_threads() {
    let dir = scratch_dir("collector-live-real");
    let out = Rdbx::batch()
        .env("RDBX_COLLECTOR", "")
        .cwd(&dir)
        .cmds(&[
            "collector enable",
            "stop in main_work",
            "run",
            "collector disable",
            "collector enable",
            "cont",
        ])
        .prog(phases(), &["threads", "0.6"])
        .run();
    out.assert_stderr_well_formed();
    assert!(out.errors().is_empty(), "{}", out.transcript());
    out.assert_out_contains("execution completed, exit code is 0");
    let expt = experiment::Experiment::open(dir.join("test.2.er"))
        .unwrap_or_else(|e| panic!("{e}\n{}", out.transcript()));
    let profile = analyzer::functions::clock_profile(&expt).expect("clock profile");
    let recorded = |function: &str| {
        profile
            .function(function)
            .map_or(0.0, |f| f.inclusive_ns as f64 / 1e9)
    };
    for worker in ["worker_a", "worker_b"] {
        assert!(
            recorded(worker) > 0.1,
            "{worker}: {:.3}s\n{:#?}",
            recorded(worker),
            profile.functions
        );
    }
    let expected = cpu_seconds(&out.stdout, "main_work");
    let measured = recorded("main_work");
    let tolerance = (expected * 0.10).max(0.05);
    assert!(
        (measured - expected).abs() <= tolerance,
        "main_work: recorded {measured:.3}s, the program measured {expected:.3}s\n{:#?}",
        profile.functions
    );
    let summary = expt.summary().expect("summary");
    assert!(summary.ended, "the collector closed the second experiment");
    assert!(summary.terminated.is_some(), "rdbx wrote terminated");
    assert!(expt.has_archive());
    // The first experiment ended at the disable, before main_work ran.
    let first = experiment::Experiment::open(dir.join("test.1.er")).expect("first");
    let first_profile = analyzer::functions::clock_profile(&first).expect("clock profile");
    assert!(first_profile
        .function("main_work")
        .is_none_or(|f| f.inclusive_ns < 50_000_000));
    assert!(first.summary().expect("summary").terminated.is_some());
}

#[test]
fn status_counts_descendants() {
    let dir = scratch_dir("collector-status-fork");
    let out = Rdbx::batch()
        .env("RDBX_COLLECTOR", "")
        .cwd(&dir)
        .cmds(&["collector enable", "run", "collector status"])
        .prog(phases(), &["fork", "0.2"])
        .run();
    out.assert_stderr_well_formed();
    assert!(out.errors().is_empty(), "{}", out.transcript());
    let expt = dir.join("test.1.er");
    out.assert_out_contains(&format!("experiment: {} (1 descendant)", expt.display()));
    out.assert_out_contains("state: closed");
    let number = |key: &str| -> u64 {
        out.stdout
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no {key}\n{}", out.transcript()))
    };
    // Both processes spin 0.2 s at 10 ms: about 40 clock events.
    assert!(number("clock events: ") >= 30, "{}", out.transcript());
    // start + end in each (periodic samples may add more).
    assert!(number("samples: ") >= 4, "{}", out.transcript());
    let founder = experiment::Experiment::open(&expt).unwrap();
    assert_eq!(number("data bytes: "), founder.total_data_bytes());
}

/// `rdbx collect -h` with a bad counter: one line before the program runs,
/// no experiment left behind.
#[test]
fn a_bad_counter_is_one_line_before_the_program_runs() {
    let dir = scratch_dir("counters-bad");
    let pmu = perfevents::Catalog::probe().has_cpu_pmu();
    let mut cases = vec![
        (
            "pagefaults,1",
            "unknown counter \"pagefaults\" (did you mean \"page-faults\"?)",
        ),
        ("page-faults,0", "counter \"page-faults\": interval 0"),
        ("page-faults,1e13", "interval 10000000000000 is absurd"),
        ("page-faults,faults", "counter \"faults\" is given twice"),
        ("1,page-faults", "expected a counter name, got \"1\""),
    ];
    if pmu {
        println!("this machine has a hardware PMU: the no-PMU refusal is not checked");
    } else {
        cases.push(("cycles,on", "counter \"cycles\" needs a hardware PMU"));
    }
    for (value, needle) in cases {
        let output = std::process::Command::new(rdbx_bin())
            .args(["collect", "-h", value, "-o", "t.er", "/bin/touch", "ran"])
            .current_dir(&dir)
            .output()
            .expect("run rdbx collect");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{value}");
        assert_eq!(stderr.trim().lines().count(), 1, "{value}: {stderr}");
        assert!(stderr.contains(needle), "{value}: {stderr}");
        assert!(!dir.join("t.er").exists(), "{value}");
        assert!(!dir.join("ran").exists(), "{value}: the program ran");
    }
}

/// `-h` is the counter flag, as in gprofng; alone or as `-h list` it lists
/// the machine's counters, and help is --help.
#[test]
fn collect_h_lists_counters_and_help_is_long_only() {
    for args in [&["collect", "-h"][..], &["collect", "-h", "list"]] {
        let output = std::process::Command::new(rdbx_bin())
            .args(args)
            .output()
            .expect("run rdbx collect");
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(output.status.success(), "{args:?}");
        assert!(stdout.contains("Software counters:"), "{stdout}");
        assert!(stdout.contains("page-faults"), "{stdout}");
        let pmu = perfevents::Catalog::probe().has_cpu_pmu();
        assert_eq!(stdout.contains("no hardware PMU"), !pmu, "{stdout}");
    }
    let output = std::process::Command::new(rdbx_bin())
        .args(["collect", "--help"])
        .output()
        .expect("run rdbx collect --help");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success());
    assert!(
        stdout.contains("-h [<NAME[,INTERVAL]...|on|off|list>]"),
        "{stdout}"
    );
    assert!(stdout.contains("--help"), "{stdout}");
}
