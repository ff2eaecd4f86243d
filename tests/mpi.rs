//! MPI tracing on real Open MPI jobs of 4 ranks, running
//! tests/programs/mpi_known.c, whose messages are known by construction
//! and which measures its own time in each MPI function: the bytes and
//! messages per function, per rank and from rank to rank are exact, the
//! MPI time of each rank is within 5% of what the program measured. Both
//! ways of running: `mpirun rdbx collect -M on -o job.er prog` (rank N
//! writes job.N.er, listed in job.erg) and `rdbx collect -M on -o job.er
//! mpirun prog` (the ranks are descendants of mpirun's experiment). A rank
//! killed with SIGKILL mid-run: its experiment loads and the analysis says
//! it ended early; the others' data is complete. A program that never
//! calls MPI_Init, with -M on: one warning, the run as usual. An MPI
//! program collected without -M: no MPI data, no errors. And in one rank
//! (tests/programs/mpi_attach.c, a singleton): `collector mpitrace on` in
//! the debugger, and a collector loaded into the running rank (its GOT
//! entries redirected).
//!
//! The tests need Open MPI (`mpirun`, `mpicc`; .ci/run installs them): they
//! are skipped, saying why, only when mpirun is not installed.

mod common;

use common::*;
use serde_json::Value as Json;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{mpsc, OnceLock};
use std::time::{Duration, Instant};

const RANKS: u32 = 4;
/// A whole job: four ranks starting Open MPI under a 2-core machine's load.
const JOB_TIMEOUT: Duration = Duration::from_secs(120);

// ---- Open MPI and the program ------------------------------------------------

/// The MPI test program, built with mpicc; None (the test is skipped) when
/// mpirun is not installed.
fn mpi_program() -> Option<&'static Path> {
    static BUILT: OnceLock<Option<PathBuf>> = OnceLock::new();
    BUILT.get_or_init(|| mpi_built("mpi_known")).as_deref()
}

/// tests/programs/`stem`.c built with mpicc (once per test process); None
/// when mpirun is not installed.
fn mpi_built(stem: &str) -> Option<PathBuf> {
    if !on_path("mpirun") {
        eprintln!("skipped: mpirun is not installed (Debian: openmpi-bin, libopenmpi-dev)");
        return None;
    }
    assert!(
        on_path("mpicc"),
        "mpirun is installed but mpicc is not (Debian: libopenmpi-dev)"
    );
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("mpi-programs");
    std::fs::create_dir_all(&dir).expect("create the program directory");
    let out = dir.join(format!("{stem}-{}", std::process::id()));
    let status = Command::new("mpicc")
        .args(["-g", "-O1", "-o"])
        .arg(&out)
        .arg(sources_dir().join(format!("{stem}.c")))
        .status()
        .expect("run mpicc");
    assert!(status.success(), "mpicc failed on {stem}.c");
    Some(out)
}

/// `mpirun` for 4 ranks on this machine (more ranks than cores, as root
/// when the tests run as root), then `args`.
fn mpirun(args: &[&str]) -> Command {
    let mut command = Command::new("mpirun");
    command
        .args(["--oversubscribe", "-np", &RANKS.to_string()])
        .args(args)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        // Nothing of the machine's MPI tuning: the same job every time.
        .env_remove("OMPI_MCA_btl")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

/// Runs a command to its end, or kills it at the timeout and panics.
fn finish(mut child: Child, what: &str) -> Output {
    let started = Instant::now();
    loop {
        if child.try_wait().expect("wait").is_some() {
            return child.wait_with_output().expect("output");
        }
        if started.elapsed() > JOB_TIMEOUT {
            let _ = child.kill();
            let output = child.wait_with_output().expect("output");
            panic!(
                "{what} did not finish in {JOB_TIMEOUT:?}\nstdout:\n{}\nstderr:\n{}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The lines `from` gives, read on a thread of their own (a job that hangs
/// must not hang the test).
fn read_lines(from: impl std::io::Read + Send + 'static) -> mpsc::Receiver<String> {
    let (send, receive) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(from).lines() {
            let Ok(line) = line else { break };
            if send.send(line).is_err() {
                break;
            }
        }
    });
    receive
}

fn run(mut command: Command, what: &str) -> Output {
    let child = command.spawn().unwrap_or_else(|e| panic!("{what}: {e}"));
    finish(child, what)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

// ---- what the program did, by construction and by its own clock -------------

/// The program's own measure: per (rank, MPI function), ns and calls.
fn measured(stdout: &str) -> BTreeMap<(u32, String), (u64, u64)> {
    stdout
        .lines()
        .filter_map(
            |line| match line.split_whitespace().collect::<Vec<_>>()[..] {
                ["time", rank, function, ns, calls] => Some((
                    (rank.parse().ok()?, function.to_string()),
                    (ns.parse().ok()?, calls.parse().ok()?),
                )),
                _ => None,
            },
        )
        .collect()
}

fn ring_bytes(rank: u32) -> u64 {
    u64::from(rank + 1) * 1000
}

fn pair_bytes(from: u32, to: u32) -> u64 {
    4 * u64::from(100 * (from + 1) + 10 * (to + 1))
}

/// Messages rank 1 sends rank 0 in the `many` phase: 8, 16, ... bytes.
const MANY: u64 = 40;

fn many_bytes() -> u64 {
    (1..=MANY).map(|k| 8 * k).sum()
}

/// Point-to-point bytes and messages from rank to rank, as mpi_known.c
/// sends them: the ring, the all-pairs exchange, the many messages from 1
/// to 0, the late messages (1 → 0: 8 bytes, 2 → 3: 64 bytes) and the shift
/// (256 bytes to the next rank).
fn expected_matrix() -> (Vec<Vec<u64>>, Vec<Vec<u64>>) {
    let mut bytes = vec![vec![0u64; RANKS as usize]; RANKS as usize];
    let mut messages = vec![vec![0u64; RANKS as usize]; RANKS as usize];
    let mut add = |from: u32, to: u32, n: u64| {
        bytes[from as usize][to as usize] += n;
        messages[from as usize][to as usize] += 1;
    };
    for rank in 0..RANKS {
        let next = (rank + 1) % RANKS;
        add(rank, next, ring_bytes(rank));
        for to in (0..RANKS).filter(|&to| to != rank) {
            add(rank, to, pair_bytes(rank, to));
        }
        add(rank, next, 256);
    }
    for k in 1..=MANY {
        add(1, 0, 8 * k);
    }
    add(1, 0, 8);
    add(2, 3, 64);
    (bytes, messages)
}

/// Per MPI function over the 4 ranks: (calls, sends, bytes sent,
/// receives, bytes received), by construction and the manual's model of
/// the collectives (G = 4: every rank exchanges with every rank).
fn expected_functions() -> BTreeMap<&'static str, [u64; 5]> {
    let g = u64::from(RANKS);
    let all_pairs: u64 = (0..RANKS)
        .flat_map(|from| {
            (0..RANKS)
                .filter(move |&to| to != from)
                .map(move |to| (from, to))
        })
        .map(|(from, to)| pair_bytes(from, to))
        .sum();
    let ring: u64 = (0..RANKS).map(ring_bytes).sum();
    BTreeMap::from([
        ("MPI_Init", [g, 0, 0, 0, 0]),
        ("MPI_Finalize", [g, 0, 0, 0, 0]),
        // The ring's 4 and rank 1's late send.
        ("MPI_Send", [g + 1, g + 1, ring + 8, 0, 0]),
        ("MPI_Recv", [g + 1, 0, 0, g + 1, ring + 8]),
        (
            "MPI_Isend",
            [g * 3 + MANY, g * 3 + MANY, all_pairs + many_bytes(), 0, 0],
        ),
        // 3 each, the many, and rank 3's late one.
        ("MPI_Irecv", [g * 3 + MANY + 1, 0, 0, g * 3 + MANY + 1, 0]),
        // The bytes of the receives they completed; ranks 0 and 1 twice.
        ("MPI_Waitall", [g + 2, 0, 0, 0, all_pairs + many_bytes()]),
        ("MPI_Wait", [1, 0, 0, 0, 64]),
        ("MPI_Ssend", [1, 1, 64, 0, 0]),
        ("MPI_Sendrecv", [g, g, g * 256, g, g * 256]),
        ("MPI_Barrier", [g, 0, 0, 0, 0]),
        // The root sends G messages of 8000 bytes, every rank receives one.
        ("MPI_Bcast", [g, g, g * 8000, g, g * 8000]),
        ("MPI_Allreduce", [g, g * g, g * g * 64, g * g, g * g * 64]),
        // Every rank sends 64 bytes to the root, which receives G.
        ("MPI_Reduce", [g, g, g * 64, g, g * 64]),
        ("MPI_Gather", [g, g, g * 16, g, g * 16]),
        ("MPI_Alltoall", [g, g * g, g * g * 8, g * g, g * g * 8]),
    ])
}

// ---- the analysis ------------------------------------------------------------

/// `rdbx analyze --json` of `experiments` with `commands`: one document each.
fn analyze(experiments: &[PathBuf], commands: &[&str]) -> Vec<Json> {
    let mut command = Command::new(rdbx_bin());
    command.arg("analyze").arg("--json").args(experiments);
    for c in commands {
        command.args(["-c", c]);
    }
    let output = command.output().expect("run rdbx analyze");
    assert!(
        output.status.success(),
        "rdbx analyze failed:\n{}",
        text(&output.stderr)
    );
    match serde_json::from_slice(&output.stdout).expect("JSON") {
        Json::Array(documents) => documents,
        other => panic!("not an array: {other}"),
    }
}

fn u64_of(json: &Json, key: &str) -> u64 {
    json[key]
        .as_u64()
        .unwrap_or_else(|| panic!("no number {key} in {json}"))
}

fn matrix_of(json: &Json, key: &str) -> Vec<Vec<u64>> {
    serde_json::from_value(json[key].clone()).unwrap_or_else(|e| panic!("{key}: {e} in {json}"))
}

/// Checks the message matrix, the functions and each rank's MPI time
/// against the program's construction and its own clock.
fn check_job(experiments: &[PathBuf], stdout: &str) {
    let documents = analyze(experiments, &["mpi_matrix", "mpi_functions", "mpi_ranks"]);
    let (matrix, functions, ranks) = (&documents[0], &documents[1], &documents[2]);
    let ranks_listed: Vec<u32> = serde_json::from_value(matrix["ranks"].clone()).unwrap();
    assert_eq!(ranks_listed, vec![0, 1, 2, 3], "{matrix}");
    let (bytes, messages) = expected_matrix();
    assert_eq!(matrix_of(matrix, "bytes"), bytes, "bytes sent");
    assert_eq!(matrix_of(matrix, "messages"), messages, "messages");
    assert_eq!(
        matrix_of(matrix, "received_bytes"),
        bytes,
        "bytes as the receivers recorded them"
    );
    check_functions(functions);
    check_rank_times(ranks, &measured(stdout));
}

fn check_functions(document: &Json) {
    let listed: BTreeMap<String, [u64; 5]> = document["functions"]
        .as_array()
        .expect("functions")
        .iter()
        .map(|f| {
            let name = f["name"].as_str().expect("name").to_string();
            let keys = [
                "calls",
                "mpi_sends",
                "mpi_bytes_sent",
                "mpi_receives",
                "mpi_bytes_received",
            ];
            (name, keys.map(|k| u64_of(f, k)))
        })
        .collect();
    let expected: BTreeMap<String, [u64; 5]> = expected_functions()
        .into_iter()
        .map(|(name, values)| (name.to_string(), values))
        .collect();
    assert_eq!(
        listed, expected,
        "per MPI function: calls, sends, bytes sent, receives, bytes received"
    );
    let others: u64 = [
        "MPI_Init",
        "MPI_Finalize",
        "MPI_Waitall",
        "MPI_Wait",
        "MPI_Barrier",
    ]
    .iter()
    .map(|name| expected[*name][0])
    .sum();
    assert_eq!(
        u64_of(&document["total"], "mpi_other_calls"),
        others,
        "{document}"
    );
}

/// Each rank's MPI time against the sum of the program's own measures,
/// and the calls that wait long (MPI_Init, the late receive and wait)
/// one by one: within 5%.
fn check_rank_times(document: &Json, measured: &BTreeMap<(u32, String), (u64, u64)>) {
    assert!(!measured.is_empty(), "the program printed no times");
    for row in document["ranks"].as_array().expect("ranks") {
        let rank = u64_of(row, "rank") as u32;
        let recorded = row["mpi_time"].as_f64().expect("mpi_time") * 1e9;
        let own: u64 = measured
            .iter()
            .filter(|((r, _), _)| *r == rank)
            .map(|(_, (ns, _))| ns)
            .sum();
        let own = own as f64;
        assert!(
            (recorded - own).abs() <= 0.05 * own,
            "rank {rank}: MPI time {recorded:.0} ns recorded, {own:.0} ns measured by the program"
        );
    }
}

/// Each long call's own time (per rank and function) against the records
/// of that rank's experiment.
fn check_long_calls(expt: &Path, rank: u32, measured: &BTreeMap<(u32, String), (u64, u64)>) {
    let documents = analyze(&[expt.to_path_buf()], &["mpi_functions"]);
    for function in documents[0]["functions"].as_array().expect("functions") {
        let name = function["name"].as_str().expect("name");
        let Some(&(own, calls)) = measured.get(&(rank, name.to_string())) else {
            panic!("rank {rank} recorded {name}, which the program did not time");
        };
        assert_eq!(u64_of(function, "calls"), calls, "rank {rank} {name}");
        if own < 50_000_000 {
            continue;
        }
        let recorded = function["mpi_time"].as_f64().expect("mpi_time") * 1e9;
        let own = own as f64;
        assert!(
            (recorded - own).abs() <= 0.05 * own,
            "rank {rank} {name}: {recorded:.0} ns recorded, {own:.0} ns measured by the program"
        );
    }
}

fn rank_experiments(dir: &Path) -> Vec<PathBuf> {
    (0..RANKS)
        .map(|r| dir.join(format!("job.{r}.er")))
        .collect()
}

// ---- the tests ---------------------------------------------------------------

#[test]
fn ranks_under_mpirun_write_a_group_of_exact_messages() {
    let Some(program) = mpi_program() else { return };
    let dir = scratch_dir("mpi-ranks");
    let output = run(
        {
            let mut c = mpirun(&[rdbx_bin(), "collect", "-M", "on", "-o"]);
            c.arg(dir.join("job.er")).arg(program);
            c
        },
        "mpirun rdbx collect",
    );
    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert!(output.status.success(), "mpirun failed:\n{stderr}");
    assert!(!stderr.contains("warning"), "{stderr}");
    let group = std::fs::read_to_string(dir.join("job.erg")).expect("the group job.erg");
    let mut lines: Vec<&str> = group.lines().collect();
    assert_eq!(lines.remove(0), experiment::GROUP_HEADER, "{group}");
    lines.sort_unstable();
    assert_eq!(
        lines,
        ["job.0.er", "job.1.er", "job.2.er", "job.3.er"],
        "{group}"
    );
    let experiments = rank_experiments(&dir);
    for (rank, path) in experiments.iter().enumerate() {
        let expt = experiment::Experiment::open(path).expect("open a rank's experiment");
        assert_eq!(
            expt.mpi_rank().unwrap(),
            Some(rank as u32),
            "{}",
            path.display()
        );
        assert!(expt.host().unwrap().is_some_and(|h| !h.is_empty()));
        check_long_calls(path, rank as u32, &measured(&stdout));
    }
    check_job(&experiments, &stdout);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn mpirun_under_the_collector_has_every_rank_as_a_descendant() {
    let Some(program) = mpi_program() else { return };
    let dir = scratch_dir("mpi-founder");
    let founder = dir.join("job.er");
    let mut command = Command::new(rdbx_bin());
    command
        .args(["collect", "-M", "on", "-o"])
        .arg(&founder)
        .args(["mpirun", "--oversubscribe", "-np", "4"])
        .arg(program)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let output = run(command, "rdbx collect mpirun");
    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert!(output.status.success(), "rdbx collect failed:\n{stderr}");
    assert!(!stderr.contains("warning"), "{stderr}");
    let expt = experiment::Experiment::open(&founder).expect("the founder");
    let ranks: Vec<u32> = expt
        .descendants()
        .iter()
        .filter_map(|d| experiment::Experiment::open(d).ok()?.mpi_rank().ok()?)
        .collect();
    let mut sorted = ranks.clone();
    sorted.sort_unstable();
    assert_eq!(
        sorted,
        vec![0, 1, 2, 3],
        "one descendant per rank: {ranks:?}"
    );
    check_job(&[founder], &stdout);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_rank_killed_mid_run_ends_early_and_the_others_are_complete() {
    let Some(program) = mpi_program() else { return };
    let dir = scratch_dir("mpi-killed");
    // Open MPI ends the whole job when a rank dies, unless told to carry
    // on: then the other ranks finish.
    let mut command = mpirun(&["--mca", "orte_enable_recovery", "1"]);
    command
        .args([rdbx_bin(), "collect", "-M", "on", "-o"])
        .arg(dir.join("job.er"))
        .arg(program)
        .arg("hang");
    let mut child = command.spawn().expect("mpirun");
    let lines = read_lines(child.stdout.take().expect("stdout"));
    let mut printed = String::new();
    let pid = loop {
        let line = lines
            .recv_timeout(JOB_TIMEOUT)
            .unwrap_or_else(|_| panic!("rank 3 did not say it sleeps:\n{printed}"));
        printed.push_str(&line);
        printed.push('\n');
        if let Some(pid) = line.strip_prefix("sleeping ") {
            break pid.trim().parse::<i32>().expect("pid");
        }
    };
    // SAFETY: kill(2) on the pid rank 3 printed.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0, "kill rank 3");
    let output = finish(child, "mpirun with a killed rank");
    // The job is over: its output has ended.
    for line in lines.iter() {
        printed.push_str(&line);
        printed.push('\n');
    }
    let experiments = rank_experiments(&dir);
    let killed =
        experiment::Experiment::open(&experiments[3]).expect("the killed rank's experiment");
    assert_eq!(killed.mpi_rank().unwrap(), Some(3));
    let documents = analyze(&experiments, &["mpi_ranks", "mpi_matrix"]);
    let ranks = &documents[0];
    assert_eq!(ranks["early"], serde_json::json!([3]), "{ranks}");
    let rows = ranks["ranks"].as_array().expect("ranks");
    for row in rows {
        match u64_of(row, "rank") {
            3 => assert_eq!(row["signal"], 9, "{row}"),
            _ => assert_eq!(row["exit_code"], 0, "{row}\n{}", text(&output.stderr)),
        }
    }
    // Rank 3 was killed after its last message: every message is there.
    let (bytes, messages) = expected_matrix();
    assert_eq!(matrix_of(&documents[1], "bytes"), bytes);
    assert_eq!(matrix_of(&documents[1], "messages"), messages);
    // The others ran to their end: each timed call is recorded.
    let measured = measured(&printed);
    for rank in 0..3 {
        check_long_calls(&experiments[rank as usize], rank, &measured);
    }
    let text_out = Command::new(rdbx_bin())
        .arg("analyze")
        .args(&experiments)
        .args(["-c", "mpi_ranks"])
        .output()
        .expect("rdbx analyze");
    let shown = text(&text_out.stdout);
    assert!(
        shown.contains("rank 3 ended early: killed by signal 9 (SIGKILL)"),
        "{shown}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_program_without_mpi_runs_with_one_warning() {
    if mpi_program().is_none() {
        return;
    }
    let dir = scratch_dir("mpi-none");
    let expt = dir.join("plain.er");
    let output = Command::new(rdbx_bin())
        .args(["collect", "-M", "on", "-o"])
        .arg(&expt)
        .arg(prog("loop-O0"))
        .output()
        .expect("rdbx collect");
    let stderr = text(&output.stderr);
    assert_eq!(
        output.status.code(),
        Some(3),
        "loop.c's own exit status:\n{stderr}"
    );
    let warnings: Vec<&str> = stderr.lines().filter(|l| l.contains("warning")).collect();
    assert_eq!(warnings.len(), 1, "{stderr}");
    assert!(
        warnings[0].contains("-M on") && warnings[0].contains("MPI_Init"),
        "{stderr}"
    );
    let opened = experiment::Experiment::open(&expt).expect("the experiment");
    assert_eq!(opened.mpi_rank().unwrap(), None);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_mpi_program_without_mpi_tracing_has_no_mpi_data() {
    let Some(program) = mpi_program() else { return };
    let dir = scratch_dir("mpi-off");
    let output = run(
        {
            let mut c = mpirun(&[rdbx_bin(), "collect", "-o"]);
            c.arg(dir.join("job.er")).arg(program);
            c
        },
        "mpirun rdbx collect without -M",
    );
    let stderr = text(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(
        !stderr.contains("warning") && !stderr.contains("error"),
        "{stderr}"
    );
    let finished = measured(&text(&output.stdout))
        .keys()
        .filter(|(_, function)| function == "MPI_Finalize")
        .count();
    assert_eq!(finished, RANKS as usize, "every rank ran to its end");
    let experiments = rank_experiments(&dir);
    for path in &experiments {
        let expt = experiment::Experiment::open(path).expect("a rank's experiment");
        assert!(
            !expt.manifest().files.iter().any(|f| f == "mpi"),
            "{}",
            path.display()
        );
        assert_eq!(expt.mpi_rank().unwrap(), None);
    }
    let output = Command::new(rdbx_bin())
        .arg("analyze")
        .args(&experiments)
        .args(["-c", "functions", "-c", "mpi_functions"])
        .output()
        .expect("rdbx analyze");
    let (shown, errors) = (text(&output.stdout), text(&output.stderr));
    assert!(output.status.success(), "{errors}");
    assert!(!shown.contains("MPI Time"), "no MPI metrics:\n{shown}");
    assert!(shown.contains("no MPI tracing data"), "{shown}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_collector_loaded_into_a_running_rank_traces_its_later_calls() {
    let Some(program) = mpi_built("mpi_attach") else {
        return;
    };
    let dir = scratch_dir("mpi-attach");
    let run = collect_after_attach(&program, &dir, &["collector mpitrace on"]);
    assert_eq!(run.rest, "done\n", "{}", run.transcript);
    let expt = experiment::Experiment::open(dir.join("live.er")).expect("live.er");
    assert_eq!(
        expt.mpi_rank().unwrap(),
        Some(0),
        "MPI was initialized before the attach"
    );
    let log = std::fs::read_to_string(dir.join("live.er/log")).expect("log");
    assert!(
        log.contains(" kinds available=clock-profile,samples,mpi "),
        "{log}"
    );
    let entries: u64 = log
        .lines()
        .find_map(|line| line.split(" mpi_got entries=").nth(1)?.trim().parse().ok())
        .unwrap_or_else(|| panic!("no mpi_got line: {log}"));
    assert!(
        entries >= 3,
        "MPI_Sendrecv, MPI_Barrier, MPI_Finalize at least: {log}"
    );
    let mut calls = Vec::new();
    expt.for_each_mpi_event(|r| calls.push(r.event))
        .expect("the mpi file");
    let shown: Vec<_> = calls
        .iter()
        .map(|e| {
            (
                e.op.name(),
                e.bytes_sent,
                e.bytes_received,
                e.dest,
                e.source,
                e.tag,
            )
        })
        .collect();
    assert_eq!(
        shown,
        [
            ("MPI_Sendrecv", 300, 300, 0, 0, 5),
            ("MPI_Barrier", 0, 0, -1, -1, -1),
            ("MPI_Finalize", 0, 0, -1, -1, -1),
        ],
        "the calls after the attach, none before"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn collector_mpitrace_in_the_debugger_traces_the_run() {
    let Some(program) = mpi_built("mpi_attach") else {
        return;
    };
    let dir = scratch_dir("mpi-debugger");
    let out = Rdbx::batch()
        .cwd(&dir)
        .cmds(&[
            "collector mpitrace on",
            "collector show mpitrace",
            "collector store filename dbg.er",
            "collector enable",
            "run",
        ])
        .prog(&program, &[])
        .stdin("go\n")
        .run();
    let transcript = out.transcript();
    assert!(out.has_line("mpitrace: on"), "{transcript}");
    assert!(transcript.contains("done"), "{transcript}");
    let documents = analyze(&[dir.join("dbg.er")], &["mpi_functions"]);
    let calls: BTreeMap<String, u64> = documents[0]["functions"]
        .as_array()
        .expect("functions")
        .iter()
        .map(|f| {
            (
                f["name"].as_str().unwrap().to_string(),
                u64_of(f, "mpi_bytes_sent"),
            )
        })
        .collect();
    let expected: BTreeMap<String, u64> = [
        ("MPI_Init", 0),
        ("MPI_Sendrecv", 300),
        ("MPI_Barrier", 0),
        ("MPI_Finalize", 0),
    ]
    .into_iter()
    .map(|(name, bytes)| (name.to_string(), bytes))
    .collect();
    assert_eq!(calls, expected, "{transcript}");
    let _ = std::fs::remove_dir_all(&dir);
}
