//! Shared harness for rdbx's integration tests.
//!
//! - `programs()` builds the C programs in tests/programs once per build of the
//!   sources (cached on disk, shared by all test binaries, guarded by a lock file).
//! - `Rdbx` runs the real binary with a timeout and returns an `Outcome` whose
//!   parsers understand rdbx's output (docs/commands.md): stop lines,
//!   `where` frames, `print` results, exit lines, error lines.
//! - `gdb_*` run `gdb -batch` on the same program: ground truth for lines,
//!   backtraces and values.
//! - Every finished run checks that no process it started remains.
#![allow(dead_code)]

pub mod real;

use std::collections::hash_map::DefaultHasher;
use std::fs;
use std::hash::{Hash, Hasher};
use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread;
use std::time::{Duration, Instant};

/// Default limit for one rdbx or gdb run; a hang fails the test instead of the suite.
pub const TIMEOUT: Duration = Duration::from_secs(30);

/// Bump when the build recipe changes so cached builds are not reused.
const RECIPE_VERSION: &str = "recipe-5";

// ---------------------------------------------------------------------------
// Building the test programs
// ---------------------------------------------------------------------------

pub fn sources_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/programs")
}

pub struct Programs {
    dir: PathBuf,
}

impl Programs {
    /// Path of a built program, e.g. `path("recurse-O0")`, `path("libdllib.so")`.
    pub fn path(&self, name: &str) -> PathBuf {
        let p = self.dir.join(name);
        assert!(
            p.exists(),
            "test program {name} was not built ({})",
            p.display()
        );
        p
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

/// One gcc invocation: output file name and arguments (sources relative to tests/programs).
struct Recipe {
    out: String,
    args: Vec<String>,
}

fn recipe(out: &str, args: &[&str]) -> Recipe {
    Recipe {
        out: out.to_string(),
        args: args.iter().map(|s| s.to_string()).collect(),
    }
}

/// Programs that only need their own source. (stem, variant suffix, extra flags)
fn single_source_recipes() -> Vec<Recipe> {
    let table: &[(&str, &str, &[&str])] = &[
        ("recurse", "O0", &["-O0"]),
        ("recurse", "O2", &["-O2"]),
        ("recurse", "O0-nopie", &["-O0", "-no-pie"]),
        ("loop", "O0", &["-O0"]),
        ("loop", "O2", &["-O2"]),
        ("threads", "O0", &["-O0", "-pthread"]),
        ("signals", "O0", &["-O0"]),
        ("dlmain", "O0", &["-O0", "-ldl"]),
        ("fork", "O0", &["-O0"]),
        ("exec", "O0", &["-O0"]),
        ("inline", "O0", &["-O0"]),
        ("inline", "O2", &["-O2"]),
        ("types", "O0", &["-O0"]),
        ("io", "O0", &["-O0"]),
        ("steps", "O0", &["-O0"]),
        ("steps", "O2", &["-O2"]),
        ("spin", "O0", &["-O0"]),
        ("ctrlc", "O0", &["-O0", "-pthread"]),
        ("survivor", "O0", &["-O0", "-pthread"]),
        ("fork_in_loader", "O0", &["-O0", "-pthread"]),
        ("callee", "O0", &["-O0"]),
        ("session", "O0", &["-O0"]),
        // Heap and sync tracing: every call kept as written (gcc turns
        // realloc(NULL, n) into malloc(n) and drops free(NULL)).
        ("heap_known", "O0", &["-O0", "-fno-builtin", "-pthread"]),
        ("leaks", "O0", &["-O0", "-fno-builtin", "-pthread"]),
        ("heap_attach", "O0", &["-O0", "-fno-builtin", "-pthread"]),
        ("heap_follow", "O0", &["-O0", "-fno-builtin", "-ldl"]),
        ("heap_bad", "O0", &["-O0", "-fno-builtin", "-pthread"]),
        ("heap_own", "O0", &["-O0", "-fno-builtin", "-pthread"]),
        ("heap_faults", "O0", &["-O0", "-fno-builtin", "-pthread"]),
        ("sync_waits", "O0", &["-O0", "-fno-builtin", "-pthread"]),
        ("sync_attach", "O0", &["-O0", "-fno-builtin", "-pthread"]),
        ("sync_faults", "O0", &["-O0", "-fno-builtin", "-pthread"]),
        ("sync_joins", "O0", &["-O0", "-fno-builtin", "-pthread"]),
        ("io_known", "O0", &["-O0", "-fno-builtin", "-pthread"]),
        ("io_faults", "O0", &["-O0", "-fno-builtin", "-pthread"]),
        ("io_attach", "O0", &["-O0", "-fno-builtin", "-pthread"]),
        ("io_timed", "O0", &["-O0", "-fno-builtin", "-pthread"]),
        ("offcpu", "O0", &["-O0", "-pthread"]),
        ("offcpu_hold", "O0", &["-O0", "-pthread"]),
        ("offcpu_eintr", "O0", &["-O0", "-pthread"]),
        ("offcpu_traced", "O0", &["-O0", "-pthread"]),
        ("counters_known", "O0", &["-O0", "-pthread"]),
        ("compare", "O1", &["-O1"]),
    ];
    let mut out = Vec::new();
    for (stem, variant, flags) in table {
        let name = format!("{stem}-{variant}");
        let src = format!("{stem}.c");
        let mut args = vec!["-g", src.as_str(), "-o", name.as_str()];
        args.extend_from_slice(flags);
        out.push(recipe(&name, &args));
    }
    for (library, source) in [
        ("libdllib.so", "dllib.c"),
        ("libheap_follow.so", "heap_follow_lib.c"),
    ] {
        out.push(recipe(
            library,
            &["-g", "-O0", "-shared", "-fPIC", source, "-o", library],
        ));
    }
    // A stand-in for libcollector.so (tests of the launcher side).
    out.push(recipe(
        "libfakecollector.so",
        &[
            "-g",
            "-O0",
            "-shared",
            "-fPIC",
            "fakecollector.c",
            "-o",
            "libfakecollector.so",
        ],
    ));
    // No -g on purpose: main must step over/through a function without line info.
    out.push(recipe(
        "nodebug_lib-O0.o",
        &["-O0", "-c", "nodebug_lib.c", "-o", "nodebug_lib-O0.o"],
    ));
    out.push(recipe(
        "nodebug_lib-O2.o",
        &["-O2", "-c", "nodebug_lib.c", "-o", "nodebug_lib-O2.o"],
    ));
    out
}

/// Programs linked from objects built in the first phase.
fn linked_recipes() -> Vec<Recipe> {
    ["O0", "O2"]
        .iter()
        .map(|opt| {
            let name = format!("nodebug-{opt}");
            let obj = format!("nodebug_lib-{opt}.o");
            let flag = format!("-{opt}");
            recipe(&name, &["-g", &flag, "nodebug_main.c", &obj, "-o", &name])
        })
        .collect()
}

fn hash_sources() -> String {
    let mut entries: Vec<PathBuf> = fs::read_dir(sources_dir())
        .expect("tests/programs exists")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "c" || x == "h"))
        .collect();
    entries.sort();
    let mut h = DefaultHasher::new();
    RECIPE_VERSION.hash(&mut h);
    for p in entries {
        p.file_name().hash(&mut h);
        fs::read(&p).expect("read source").hash(&mut h);
    }
    format!("{:016x}", h.finish())
}

/// Runs a batch of gcc invocations in parallel inside `build_dir`, with
/// sources reached through relative paths so DWARF names the file `foo.c`.
fn run_gcc_batch(build_dir: &Path, recipes: &[Recipe]) {
    let src = sources_dir();
    let children: Vec<(String, Child)> = recipes
        .iter()
        .map(|r| {
            // Sources are given relative to tests/programs; outputs go to build_dir.
            let args: Vec<String> = r
                .args
                .iter()
                .enumerate()
                .map(|(i, a)| {
                    let is_output = i > 0 && r.args[i - 1] == "-o";
                    let is_object = a.ends_with(".o") && !is_output;
                    if is_output || is_object {
                        build_dir.join(a).to_string_lossy().into_owned()
                    } else {
                        a.clone()
                    }
                })
                .collect();
            let child = Command::new("gcc")
                .args(&args)
                .current_dir(&src)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("gcc must be installed");
            (r.out.clone(), child)
        })
        .collect();
    for (out, child) in children {
        let o = child.wait_with_output().expect("wait gcc");
        assert!(
            o.status.success(),
            "gcc failed for {out}:\n{}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
}

fn build_all(root: &Path, key: &str) -> PathBuf {
    fs::create_dir_all(root).expect("create test-programs dir");
    let final_dir = root.join(key);
    let lock_path = root.join(".lock");
    let lock = fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .expect("open lock file");
    let _guard = FileLock::new(&lock);
    if final_dir.join(".complete").exists() {
        remove_stale_builds(root, key);
        return final_dir;
    }
    let tmp = root.join(format!("{key}.tmp.{}", std::process::id()));
    let _ = fs::remove_dir_all(&tmp);
    fs::create_dir_all(&tmp).expect("create build dir");
    run_gcc_batch(&tmp, &single_source_recipes());
    run_gcc_batch(&tmp, &linked_recipes());
    fs::write(tmp.join(".complete"), key).expect("mark build complete");
    let _ = fs::remove_dir_all(&final_dir);
    fs::rename(&tmp, &final_dir).expect("publish build dir");
    remove_stale_builds(root, key);
    final_dir
}

/// Builds of older sources (other hash keys); called with the lock held.
fn remove_stale_builds(root: &Path, key: &str) {
    let Ok(entries) = fs::read_dir(root) else {
        return;
    };
    for e in entries.filter_map(|e| e.ok()) {
        let name = e.file_name().to_string_lossy().into_owned();
        if name != key && !name.starts_with('.') && e.path().join(".complete").exists() {
            let _ = fs::remove_dir_all(e.path());
        }
    }
}

/// flock-based lock: several test binaries may start building at once.
struct FileLock<'a>(&'a fs::File);

impl<'a> FileLock<'a> {
    fn new(f: &'a fs::File) -> Self {
        use std::os::fd::AsRawFd;
        // SAFETY: plain flock on a file descriptor we own.
        let rc = unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) };
        assert_eq!(rc, 0, "flock failed");
        FileLock(f)
    }
}

impl Drop for FileLock<'_> {
    fn drop(&mut self) {
        use std::os::fd::AsRawFd;
        // SAFETY: unlocking the descriptor locked in new().
        unsafe { libc::flock(self.0.as_raw_fd(), libc::LOCK_UN) };
    }
}

/// The built test programs (built at most once per process; cached across runs).
pub fn programs() -> &'static Programs {
    static PROGRAMS: OnceLock<Programs> = OnceLock::new();
    PROGRAMS.get_or_init(|| {
        let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("test-programs");
        let dir = build_all(&root, &hash_sources());
        Programs { dir }
    })
}

pub fn prog(name: &str) -> PathBuf {
    programs().path(name)
}

/// A fresh scratch directory for one test.
pub fn scratch_dir(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("scratch")
        .join(format!("{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&d);
    fs::create_dir_all(&d).expect("create scratch dir");
    d
}

pub fn write_file(path: &Path, text: &str) {
    fs::write(path, text).expect("write file");
}

pub fn make_executable(path: &Path) {
    let mut perm = fs::metadata(path).expect("stat").permissions();
    perm.set_mode(0o755);
    fs::set_permissions(path, perm).expect("chmod");
}

// ---------------------------------------------------------------------------
// Source markers
// ---------------------------------------------------------------------------

/// Line number (1-based) of the unique line containing `MARK:<marker>` in a test source.
pub fn line_of(file: &str, marker: &str) -> u32 {
    let text = fs::read_to_string(sources_dir().join(file)).expect("read source");
    let needle = format!("MARK:{marker} ");
    let needle_end = format!("MARK:{marker}");
    let hits: Vec<u32> = text
        .lines()
        .enumerate()
        .filter(|(_, l)| l.contains(&needle) || l.trim_end().ends_with(&needle_end))
        .map(|(i, _)| i as u32 + 1)
        .collect();
    assert_eq!(hits.len(), 1, "marker {marker} in {file}: {hits:?}");
    hits[0]
}

/// Text of line `n` (1-based) of a test source.
pub fn source_line(file: &str, n: u32) -> String {
    let text = fs::read_to_string(sources_dir().join(file)).expect("read source");
    text.lines()
        .nth(n as usize - 1)
        .unwrap_or_else(|| panic!("{file} has no line {n}"))
        .to_string()
}

// ---------------------------------------------------------------------------
// Running rdbx
// ---------------------------------------------------------------------------

pub fn rdbx_bin() -> &'static str {
    env!("CARGO_BIN_EXE_rdbx")
}

/// Builder for one rdbx run.
pub struct Rdbx {
    args: Vec<String>,
    stdin: Option<String>,
    timeout: Duration,
    check_leftovers: bool,
    cwd: Option<PathBuf>,
    env: Vec<(String, String)>,
}

impl Rdbx {
    /// `rdbx --batch ...`
    pub fn batch() -> Self {
        let mut r = Self::interactive();
        r.args.push("--batch".into());
        r
    }

    /// rdbx without --batch (commands come from stdin, which is a pipe).
    pub fn interactive() -> Self {
        Rdbx {
            args: Vec::new(),
            stdin: None,
            timeout: TIMEOUT,
            check_leftovers: true,
            cwd: None,
            env: Vec::new(),
        }
    }

    /// An environment variable for rdbx (and the programs it starts).
    pub fn env(mut self, key: &str, value: impl AsRef<std::ffi::OsStr>) -> Self {
        self.env.push((
            key.to_string(),
            value.as_ref().to_string_lossy().into_owned(),
        ));
        self
    }

    pub fn cmd(mut self, c: &str) -> Self {
        self.args.push("-c".into());
        self.args.push(c.into());
        self
    }

    pub fn cmds(mut self, cs: &[&str]) -> Self {
        for c in cs {
            self = self.cmd(c);
        }
        self
    }

    pub fn arg(mut self, a: impl AsRef<std::ffi::OsStr>) -> Self {
        self.args.push(a.as_ref().to_string_lossy().into_owned());
        self
    }

    /// The program to debug and its arguments (must come last).
    pub fn prog(mut self, p: &Path, args: &[&str]) -> Self {
        self.args.push(p.to_string_lossy().into_owned());
        self.args.extend(args.iter().map(|s| s.to_string()));
        self
    }

    pub fn stdin(mut self, text: &str) -> Self {
        self.stdin = Some(text.to_string());
        self
    }

    pub fn cwd(mut self, d: &Path) -> Self {
        self.cwd = Some(d.to_path_buf());
        self
    }

    pub fn timeout(mut self, t: Duration) -> Self {
        self.timeout = t;
        self
    }

    /// Runs rdbx to completion (or kills it at the timeout and panics).
    /// Afterwards asserts that no process started in the session remains.
    pub fn run(self) -> Outcome {
        let mut cmd = Command::new(rdbx_bin());
        cmd.args(&self.args)
            .stdin(if self.stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .env("RUST_BACKTRACE", "1")
            .process_group(0);
        if let Some(d) = &self.cwd {
            cmd.current_dir(d);
        }
        for (key, value) in &self.env {
            cmd.env(key, value);
        }
        let mut child = cmd.spawn().expect("spawn rdbx");
        let pgid = child.id() as i32;
        if let Some(text) = &self.stdin {
            let mut sin = child.stdin.take().expect("stdin pipe");
            let text = text.clone();
            // A separate thread: rdbx may not read all input before exiting.
            thread::spawn(move || {
                let _ = sin.write_all(text.as_bytes());
            });
        }
        let out = Capture::start(child.stdout.take().expect("stdout"));
        let err = Capture::start(child.stderr.take().expect("stderr"));
        let status = wait_with_deadline(&mut child, self.timeout);
        let Some(status) = status else {
            kill_group(pgid);
            let partial = Outcome::from_parts(out.text(), err.text(), None);
            partial.kill_known_pids();
            panic!(
                "rdbx did not finish within {:?}; args {:?}\n{}",
                self.timeout,
                self.args,
                partial.transcript()
            );
        };
        // A target left behind would keep the pipes open: give readers a grace period.
        let readers_done = out.wait(Duration::from_secs(5)) && err.wait(Duration::from_secs(2));
        let outcome = Outcome::from_parts(out.text(), err.text(), Some(status));
        if !readers_done {
            kill_group(pgid);
            outcome.kill_known_pids();
            panic!(
                "a process started by rdbx still holds its output pipe after rdbx exited\n{}",
                outcome.transcript()
            );
        }
        if self.check_leftovers {
            outcome.assert_no_leftover_processes();
        }
        outcome
    }
}

fn wait_with_deadline(child: &mut Child, timeout: Duration) -> Option<ExitStatus> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Ok(Some(st)) = child.try_wait() {
            return Some(st);
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        thread::sleep(Duration::from_millis(5));
    }
}

fn kill_group(pgid: i32) {
    // SAFETY: kill(2) on the process group this harness created for rdbx.
    unsafe {
        libc::kill(-pgid, libc::SIGKILL);
    }
}

/// Collects a pipe's bytes on a thread; the text so far is readable at any time.
struct Capture {
    buf: Arc<Mutex<Vec<u8>>>,
    done: Arc<AtomicBool>,
}

impl Capture {
    fn start(mut r: impl Read + Send + 'static) -> Self {
        let buf = Arc::new(Mutex::new(Vec::new()));
        let done = Arc::new(AtomicBool::new(false));
        let (b, d) = (buf.clone(), done.clone());
        thread::spawn(move || {
            let mut chunk = [0u8; 8192];
            loop {
                match r.read(&mut chunk) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => b.lock().unwrap().extend_from_slice(&chunk[..n]),
                }
            }
            d.store(true, Ordering::SeqCst);
        });
        Capture { buf, done }
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.buf.lock().unwrap()).into_owned()
    }

    fn wait(&self, t: Duration) -> bool {
        let deadline = Instant::now() + t;
        while !self.done.load(Ordering::SeqCst) {
            if Instant::now() >= deadline {
                return false;
            }
            thread::sleep(Duration::from_millis(5));
        }
        true
    }
}

// ---------------------------------------------------------------------------
// Interactive sessions: commands written one at a time to rdbx's stdin
// ---------------------------------------------------------------------------

/// rdbx reading commands from a pipe, so a test can look at the system
/// (e.g. /proc) between commands.
pub struct Session {
    child: Child,
    stdin: Option<std::process::ChildStdin>,
    out: Capture,
    err: Capture,
    pgid: i32,
}

impl Session {
    pub fn start(prog: &Path, args: &[&str]) -> Self {
        let mut child = Command::new(rdbx_bin())
            .arg(prog)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .env("RUST_BACKTRACE", "1")
            .process_group(0)
            .spawn()
            .expect("spawn rdbx");
        let pgid = child.id() as i32;
        let stdin = child.stdin.take();
        let out = Capture::start(child.stdout.take().expect("stdout"));
        let err = Capture::start(child.stderr.take().expect("stderr"));
        Session {
            child,
            stdin,
            out,
            err,
            pgid,
        }
    }

    /// What Ctrl-C on a terminal does: SIGINT to rdbx's process group
    /// (the program it runs is in that group too).
    pub fn interrupt(&self) {
        // SAFETY: plain kill(2) on our own child's process group.
        unsafe { libc::kill(-self.pgid, libc::SIGINT) };
    }

    pub fn send(&mut self, cmd: &str) {
        let sin = self.stdin.as_mut().expect("session stdin open");
        writeln!(sin, "{cmd}").expect("write command to rdbx");
        sin.flush().expect("flush");
    }

    pub fn stdout(&self) -> String {
        self.out.text()
    }

    pub fn stderr(&self) -> String {
        self.err.text()
    }

    pub fn transcript(&self) -> String {
        format!(
            "--- stdout ---\n{}\n--- stderr ---\n{}",
            self.stdout(),
            self.stderr()
        )
    }

    /// Waits until `pred(stdout, stderr)` holds; panics with the transcript at the timeout.
    pub fn wait_until(&mut self, what: &str, pred: impl Fn(&str, &str) -> bool) {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            if pred(&self.stdout(), &self.stderr()) {
                return;
            }
            let exited = matches!(self.child.try_wait(), Ok(Some(_)));
            if exited {
                // Give the readers a moment for the last output, then look once more.
                thread::sleep(Duration::from_millis(50));
                if pred(&self.stdout(), &self.stderr()) {
                    return;
                }
                let t = self.transcript();
                self.abort();
                panic!("rdbx exited while waiting for {what}\n{t}");
            }
            if Instant::now() >= deadline {
                let t = self.transcript();
                self.abort();
                panic!("timed out waiting for {what}\n{t}");
            }
            thread::sleep(Duration::from_millis(10));
        }
    }

    /// Waits for the `n`th occurrence of `needle` in stdout.
    pub fn wait_for_count(&mut self, needle: &str, n: usize) {
        let needle = needle.to_string();
        self.wait_until(&format!("{n} x {needle:?}"), move |o, _| {
            o.matches(&needle).count() >= n
        });
    }

    pub fn wait_for(&mut self, needle: &str) {
        self.wait_for_count(needle, 1);
    }

    fn abort(&mut self) {
        kill_group(self.pgid);
        let _ = self.child.kill();
        let _ = self.child.wait();
        Outcome::from_parts(self.stdout(), self.stderr(), None).kill_known_pids();
    }

    /// Sends `quit`, closes stdin and waits for rdbx to exit; checks leftovers.
    pub fn finish(mut self) -> Outcome {
        self.send("quit");
        self.stdin = None;
        let status = wait_with_deadline(&mut self.child, TIMEOUT);
        if status.is_none() {
            let t = self.transcript();
            self.abort();
            panic!("rdbx did not exit after quit\n{t}");
        }
        self.out.wait(Duration::from_secs(5));
        self.err.wait(Duration::from_secs(2));
        let o = Outcome::from_parts(self.stdout(), self.stderr(), status);
        o.assert_no_leftover_processes();
        o
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            self.abort();
        }
    }
}

// ---------------------------------------------------------------------------
// Outcome and parsers for rdbx output
// ---------------------------------------------------------------------------

pub struct Outcome {
    pub stdout: String,
    pub stderr: String,
    pub status: Option<ExitStatus>,
}

/// `stopped in F at line L in file "X"` (or `signal SIGX (...) in F at ...`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stop {
    pub func: String,
    pub line: Option<u32>,
    pub file: Option<String>,
    pub addr: Option<u64>,
    /// `Some("SIGSEGV")` for signal stops.
    pub signal: Option<String>,
}

/// One frame of `where` (rdbx) or `bt` (gdb).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    pub index: u32,
    pub func: String,
    pub line: Option<u32>,
    pub file: Option<String>,
    pub inlined: bool,
    /// rdbx only: the `=>` marker.
    pub selected: bool,
    /// gdb `from LIB` / rdbx `in LIB` for frames without debug info.
    pub lib: Option<String>,
}

impl Outcome {
    fn from_parts(stdout: String, stderr: String, status: Option<ExitStatus>) -> Self {
        Outcome {
            stdout,
            stderr,
            status,
        }
    }

    pub fn transcript(&self) -> String {
        format!(
            "--- status: {:?}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.status, self.stdout, self.stderr
        )
    }

    pub fn exit_code(&self) -> Option<i32> {
        self.status.and_then(|s| s.code())
    }

    pub fn out_lines(&self) -> Vec<&str> {
        self.stdout.lines().collect()
    }

    pub fn has_line(&self, line: &str) -> bool {
        self.stdout.lines().any(|l| l.trim_end() == line)
    }

    /// Asserts stdout contains `needle`, printing the transcript otherwise.
    pub fn assert_out_contains(&self, needle: &str) {
        assert!(
            self.stdout.contains(needle),
            "stdout lacks {needle:?}\n{}",
            self.transcript()
        );
    }

    pub fn assert_out_lacks(&self, needle: &str) {
        assert!(
            !self.stdout.contains(needle),
            "stdout unexpectedly has {needle:?}\n{}",
            self.transcript()
        );
    }

    /// Error lines (stderr), which the contract says all start with `rdbx: `.
    pub fn error_lines(&self) -> Vec<&str> {
        self.stderr
            .lines()
            .filter(|l| !l.trim().is_empty())
            .collect()
    }

    /// Every stderr line is a one-line `rdbx: ` message (no panics, no noise).
    pub fn assert_stderr_well_formed(&self) {
        for l in self.error_lines() {
            assert!(
                l.starts_with("rdbx: "),
                "stderr line not starting with \"rdbx: \": {l:?}\n{}",
                self.transcript()
            );
        }
        assert!(
            !self.stderr.contains("panicked"),
            "rdbx panicked\n{}",
            self.transcript()
        );
    }

    /// Error lines that are not warnings.
    pub fn errors(&self) -> Vec<&str> {
        self.error_lines()
            .into_iter()
            .filter(|l| !l.starts_with("rdbx: warning:"))
            .collect()
    }

    pub fn assert_no_errors(&self) {
        assert!(
            self.errors().is_empty(),
            "unexpected errors\n{}",
            self.transcript()
        );
    }

    /// PIDs from `(process id PID)` lines.
    pub fn process_ids(&self) -> Vec<u32> {
        Self::pids_in(&self.stdout)
    }

    /// PIDs from `(process id PID)` lines of any transcript.
    pub fn pids_in(text: &str) -> Vec<u32> {
        text.lines()
            .filter_map(|l| {
                let rest = l.trim().strip_prefix("(process id ")?;
                rest.strip_suffix(')')?.trim().parse().ok()
            })
            .collect()
    }

    /// PIDs of fork children from `[Detaching after fork from child process PID]`.
    pub fn fork_child_ids(&self) -> Vec<u32> {
        self.stdout
            .lines()
            .filter_map(|l| {
                let i = l.find("Detaching after fork from child process ")?;
                let rest = &l[i + "Detaching after fork from child process ".len()..];
                let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
                digits.parse().ok()
            })
            .collect()
    }

    fn all_pids(&self) -> Vec<u32> {
        let mut v = self.process_ids();
        v.extend(self.fork_child_ids());
        v
    }

    fn kill_known_pids(&self) {
        for pid in self.all_pids() {
            if is_test_program(pid) {
                // SAFETY: kill(2) on a pid this session reported starting, checked to be ours.
                unsafe {
                    libc::kill(pid as i32, libc::SIGKILL);
                }
            }
        }
    }

    /// After rdbx exited: none of the processes it reported remains
    /// (neither running, stopped nor zombie).
    pub fn assert_no_leftover_processes(&self) {
        for pid in self.all_pids() {
            if let Some(state) = wait_gone(pid, Duration::from_secs(3)) {
                let ours = is_test_program(pid);
                if ours || matches!(state, 'T' | 't' | 'Z') {
                    self.kill_known_pids();
                    panic!(
                        "process {pid} (state {state}) remains after the session\n{}",
                        self.transcript()
                    );
                }
            }
        }
    }

    /// Parsed stop lines, in order.
    pub fn stops(&self) -> Vec<Stop> {
        self.stdout.lines().filter_map(parse_stop).collect()
    }

    /// The only stop; panics with the transcript otherwise.
    pub fn nth_stop(&self, n: usize) -> Stop {
        let s = self.stops();
        s.get(n)
            .cloned()
            .unwrap_or_else(|| panic!("no stop #{n}\n{}", self.transcript()))
    }

    /// `where` listings: maximal runs of consecutive frame lines numbered 1, 2, ...
    pub fn where_blocks(&self) -> Vec<Vec<Frame>> {
        let mut blocks: Vec<Vec<Frame>> = Vec::new();
        let mut cur: Vec<Frame> = Vec::new();
        for l in self.stdout.lines() {
            match parse_rdbx_frame(l) {
                Some(f) if f.index as usize == cur.len() + 1 => cur.push(f),
                Some(f) if f.index == 1 => {
                    blocks.push(std::mem::take(&mut cur));
                    cur.push(f);
                }
                // A lone frame line (up/down print one); ends the current listing.
                _ => {
                    if !cur.is_empty() {
                        blocks.push(std::mem::take(&mut cur));
                    }
                }
            }
        }
        if !cur.is_empty() {
            blocks.push(cur);
        }
        blocks.retain(|b| !b.is_empty() && b[0].index == 1);
        blocks
    }

    pub fn nth_where(&self, n: usize) -> Vec<Frame> {
        self.where_blocks()
            .get(n)
            .cloned()
            .unwrap_or_else(|| panic!("no where listing #{n}\n{}", self.transcript()))
    }

    /// Values printed as `NAME = VALUE`, in order.
    pub fn printed(&self, name: &str) -> Vec<String> {
        let prefix = format!("{name} = ");
        self.stdout
            .lines()
            .filter_map(|l| l.strip_prefix(&prefix).map(|v| v.trim_end().to_string()))
            .collect()
    }

    pub fn printed_one(&self, name: &str) -> String {
        let v = self.printed(name);
        assert!(
            !v.is_empty(),
            "nothing printed for {name}\n{}",
            self.transcript()
        );
        v[0].clone()
    }

    /// Exit codes from `execution completed, exit code is N`.
    pub fn exit_lines(&self) -> Vec<i32> {
        self.stdout
            .lines()
            .filter_map(|l| {
                l.trim()
                    .strip_prefix("execution completed, exit code is ")?
                    .trim()
                    .parse()
                    .ok()
            })
            .collect()
    }
}

/// None if the pid disappeared within `t`; otherwise its /proc state letter.
fn wait_gone(pid: u32, t: Duration) -> Option<char> {
    let deadline = Instant::now() + t;
    loop {
        let state = proc_state(pid)?;
        if Instant::now() >= deadline {
            return Some(state);
        }
        thread::sleep(Duration::from_millis(20));
    }
}

/// The state letter from /proc/PID/stat, None if the process does not exist.
pub fn proc_state(pid: u32) -> Option<char> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 1..];
    after.trim_start().chars().next()
}

/// The PPid field of /proc/PID/status.
pub fn proc_ppid(pid: u32) -> Option<u32> {
    let st = fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    st.lines()
        .find_map(|l| l.strip_prefix("PPid:"))
        .and_then(|v| v.trim().parse().ok())
}

/// Whether pid's command name is one of the test programs (guards kill against pid reuse).
fn is_test_program(pid: u32) -> bool {
    let Ok(comm) = fs::read_to_string(format!("/proc/{pid}/comm")) else {
        return false;
    };
    let comm = comm.trim();
    let Ok(entries) = fs::read_dir(programs().dir()) else {
        return false;
    };
    entries.filter_map(|e| e.ok()).any(|e| {
        let name = e.file_name().to_string_lossy().into_owned();
        let short: String = name.chars().take(15).collect();
        !comm.is_empty() && short == comm
    })
}

/// Parses `stopped in F at line L in file "X"`, `stopped in F at 0xADDR`, and
/// `signal SIGX (desc) in F at ...`.
pub fn parse_stop(line: &str) -> Option<Stop> {
    let line = line.trim();
    let (signal, rest) = if let Some(r) = line.strip_prefix("stopped in ") {
        (None, r)
    } else if let Some(r) = line.strip_prefix("signal ") {
        let sig = r.split_whitespace().next()?.to_string();
        let i = r.find(") in ")?;
        (Some(sig), &r[i + ") in ".len()..])
    } else {
        return None;
    };
    let (func, loc) = rest.split_once(" at ")?;
    let mut stop = Stop {
        func: func.trim().to_string(),
        line: None,
        file: None,
        addr: None,
        signal,
    };
    if let Some(l) = loc.strip_prefix("line ") {
        let (num, file) = l.split_once(" in file ")?;
        stop.line = Some(num.trim().parse().ok()?);
        stop.file = Some(file.trim().trim_matches('"').to_string());
    } else {
        stop.addr = Some(parse_hex(loc.trim())?);
    }
    Some(stop)
}

pub fn parse_hex(s: &str) -> Option<u64> {
    let s = s.trim();
    let h = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X"))?;
    let digits: String = h.chars().take_while(|c| c.is_ascii_hexdigit()).collect();
    u64::from_str_radix(&digits, 16).ok()
}

/// Parses one rdbx `where` line:
/// `=>[1] fact(n = 1), line 5 in "recurse.c"`, `  [2] <signal handler called>`,
/// `  [3] raise() + 0x10, at 0x7fff... in libc.so.6`, `... [inlined], line 9 in "x.c"`.
pub fn parse_rdbx_frame(line: &str) -> Option<Frame> {
    let selected = line.starts_with("=>");
    let body = line.strip_prefix("=>").unwrap_or(line).trim_start();
    let body = body.strip_prefix('[')?;
    let (idx, rest) = body.split_once(']')?;
    let index: u32 = idx.trim().parse().ok()?;
    let rest = rest.trim();
    if rest.starts_with("<signal handler called>") {
        return Some(Frame {
            index,
            func: "<signal handler called>".into(),
            line: None,
            file: None,
            inlined: false,
            selected,
            lib: None,
        });
    }
    let paren = rest.find('(')?;
    let func = rest[..paren].trim().to_string();
    if func.is_empty() || func.contains(' ') {
        return None;
    }
    let close = matching_paren(rest, paren)?;
    let tail = &rest[close + 1..];
    let inlined = tail.contains("[inlined]");
    let mut frame = Frame {
        index,
        func,
        line: None,
        file: None,
        inlined,
        selected,
        lib: None,
    };
    if let Some(i) = tail.rfind("line ") {
        let t = &tail[i + 5..];
        if let Some((num, file)) = t.split_once(" in ") {
            frame.line = num.trim().parse().ok();
            frame.file = Some(file.trim().trim_matches('"').to_string());
        }
    } else if let Some(i) = tail.rfind(" in ") {
        frame.lib = Some(tail[i + 4..].trim().to_string());
    }
    Some(frame)
}

/// Index of the parenthesis closing the one at `open`.
fn matching_paren(s: &str, open: usize) -> Option<usize> {
    let mut depth = 0i32;
    for (i, c) in s.char_indices().skip_while(|(i, _)| *i < open) {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// (function, line) pairs of a frame list, up to and including `main`.
pub fn through_main(frames: &[Frame]) -> Vec<(String, Option<u32>)> {
    let mut v = Vec::new();
    for f in frames {
        v.push((f.func.clone(), f.line));
        if f.func == "main" {
            break;
        }
    }
    v
}

// ---------------------------------------------------------------------------
// gdb as ground truth
// ---------------------------------------------------------------------------

/// gdb command printing `@@STOP FUNC LINE` for the selected frame (LINE 0 without line info).
pub const GDB_WHERE_AM_I: &str =
    "python f = gdb.selected_frame(); print('@@STOP %s %d' % (f.name(), f.find_sal().line))";

/// Runs `gdb -batch -nx` with the given commands on `prog args`; returns stdout+stderr.
pub fn gdb(prog: &Path, args: &[&str], cmds: &[&str]) -> String {
    let mut c = Command::new("gdb");
    c.args(["-batch", "-nx", "-ex", "set debuginfod enabled off"]);
    c.args(["-ex", "set width 0", "-ex", "set height 0"]);
    for cmd in cmds {
        c.args(["-ex", cmd]);
    }
    c.arg("--args").arg(prog).args(args);
    c.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let mut child = c.spawn().expect("gdb must be installed");
    let pgid = child.id() as i32;
    let out = Capture::start(child.stdout.take().expect("stdout"));
    let err = Capture::start(child.stderr.take().expect("stderr"));
    if wait_with_deadline(&mut child, TIMEOUT).is_none() {
        kill_group(pgid);
        panic!("gdb timed out: {cmds:?}\n{}", out.text());
    }
    out.wait(Duration::from_secs(5));
    err.wait(Duration::from_secs(2));
    format!("{}{}", out.text(), err.text())
}

/// Parses gdb `bt` lines from a transcript (all of them, in order).
pub fn parse_gdb_bt(text: &str) -> Vec<Frame> {
    text.lines().filter_map(parse_gdb_frame).collect()
}

/// Parses `#3  0x... in fact (n=2) at recurse.c:7`, `#2  <signal handler called>`,
/// `#4  0x... in raise () from /lib/x86_64-linux-gnu/libc.so.6`.
pub fn parse_gdb_frame(line: &str) -> Option<Frame> {
    let rest = line.strip_prefix('#')?;
    let (idx, rest) = rest.split_once(' ')?;
    let index: u32 = idx.parse().ok()?;
    let mut rest = rest.trim_start();
    if rest.starts_with("0x") {
        let i = rest.find(" in ")?;
        rest = &rest[i + 4..];
    }
    if rest.starts_with("<signal handler called>") {
        return Some(Frame {
            index,
            func: "<signal handler called>".into(),
            line: None,
            file: None,
            inlined: false,
            selected: false,
            lib: None,
        });
    }
    let sp = rest.find(" (")?;
    let func = rest[..sp].to_string();
    let close = matching_paren(rest, sp + 1)?;
    let tail = &rest[close + 1..];
    let mut frame = Frame {
        index,
        func,
        line: None,
        file: None,
        inlined: false,
        selected: false,
        lib: None,
    };
    if let Some(loc) = tail.trim().strip_prefix("at ") {
        if let Some((file, line)) = loc.rsplit_once(':') {
            frame.file = Some(file.to_string());
            frame.line = line.trim().parse().ok();
        }
    } else if let Some(lib) = tail.trim().strip_prefix("from ") {
        frame.lib = Some(lib.to_string());
    }
    Some(frame)
}

/// `Breakpoint 1 at 0x1139: file recurse.c, line 5.` -> (address, line) of every such line.
pub fn parse_gdb_breakpoints(text: &str) -> Vec<(u64, u32)> {
    text.lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("Breakpoint ")?;
            let (_, rest) = rest.split_once(" at ")?;
            let (addr, rest) = rest.split_once(": file ")?;
            let (_, line) = rest.rsplit_once(", line ")?;
            Some((parse_hex(addr)?, line.trim_end_matches('.').parse().ok()?))
        })
        .collect()
}

/// `@@STOP FUNC LINE` markers printed by GDB_WHERE_AM_I.
pub fn parse_gdb_markers(text: &str) -> Vec<(String, u32)> {
    text.lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("@@STOP ")?;
            let (f, n) = rest.rsplit_once(' ')?;
            Some((f.to_string(), n.parse().ok()?))
        })
        .collect()
}

/// gdb `print` results (`$N = VALUE`), in order.
pub fn parse_gdb_values(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| {
            let rest = l.strip_prefix('$')?;
            let (n, v) = rest.split_once(" = ")?;
            n.parse::<u32>().ok()?;
            Some(v.to_string())
        })
        .collect()
}

/// gdb's backtrace at the first stop after running with the given setup commands.
pub fn gdb_bt(prog: &Path, args: &[&str], setup: &[&str]) -> Vec<Frame> {
    let mut cmds: Vec<&str> = setup.to_vec();
    cmds.extend(["run", "bt"]);
    let out = gdb(prog, args, &cmds);
    let frames = parse_gdb_bt(&out);
    assert!(!frames.is_empty(), "gdb printed no backtrace:\n{out}");
    frames
}

/// Formats frames for assertion messages.
pub fn show_frames(frames: &[Frame]) -> String {
    frames
        .iter()
        .map(|f| {
            format!(
                "[{}] {}{} line {:?} {}",
                f.index,
                f.func,
                if f.inlined { " [inlined]" } else { "" },
                f.line,
                f.lib.clone().unwrap_or_default()
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// tests/programs/phases.c at -O2 without frame pointers, with the
/// collector API header: the program that measures its own CPU time per
/// function (built once per test binary).
pub fn phases() -> &'static Path {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("collector-programs");
        fs::create_dir_all(&dir).expect("mkdir");
        let out = dir.join(format!("phases-O2-{}", std::process::id()));
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let status = Command::new("gcc")
            .args(["-O2", "-g", "-pthread", "-fomit-frame-pointer", "-I"])
            .arg(root.join("collector-lib/include"))
            .arg(root.join("tests/programs/phases.c"))
            .arg("-o")
            .arg(&out)
            .status()
            .expect("gcc must be installed");
        assert!(status.success(), "gcc failed on phases.c");
        out
    })
}

// ---------------------------------------------------------------------------
// Consoles: rdbx driven line by line, each output line timestamped
// ---------------------------------------------------------------------------

/// rdbx reading commands from a pipe, its stdout read line by line with
/// the time each line arrived (for latencies), its stderr kept.
pub struct Console {
    child: Child,
    stdin: Option<std::process::ChildStdin>,
    lines: std::sync::mpsc::Receiver<(Instant, String)>,
    seen: Vec<String>,
    err: Capture,
}

impl Console {
    /// Starts rdbx with `args`, in a process group of its own (so a test's
    /// SIGINT reaches rdbx alone unless it says otherwise).
    pub fn start(args: &[&str]) -> Console {
        let mut child = Command::new(rdbx_bin())
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .expect("spawn rdbx");
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("stdout");
        let err = Capture::start(child.stderr.take().expect("stderr"));
        let (send, lines) = std::sync::mpsc::channel();
        thread::spawn(move || {
            use std::io::BufRead;
            for line in std::io::BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if send.send((Instant::now(), line)).is_err() {
                    break;
                }
            }
        });
        Console {
            child,
            stdin,
            lines,
            seen: Vec::new(),
            err,
        }
    }

    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    pub fn send(&mut self, command: &str) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        writeln!(stdin, "{command}").expect("write command to rdbx");
        stdin.flush().expect("flush");
    }

    /// Sends `signal` to rdbx alone.
    pub fn signal(&self, signal: i32) {
        // SAFETY: kill(2) of our own child.
        unsafe { libc::kill(self.pid(), signal) };
    }

    /// The next stdout line that satisfies `want`, with its arrival time;
    /// panics with the transcript after `timeout`.
    pub fn expect(
        &mut self,
        what: &str,
        timeout: Duration,
        want: impl Fn(&str) -> bool,
    ) -> (Instant, String) {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok((at, line)) => {
                    self.seen.push(line.clone());
                    if want(&line) {
                        return (at, line);
                    }
                }
                Err(_) => panic!("timed out waiting for {what}\n{}", self.transcript()),
            }
        }
    }

    /// The first stdout line that arrives within `quiet`, if any.
    pub fn line_within(&mut self, quiet: Duration) -> Option<String> {
        let (_, line) = self.lines.recv_timeout(quiet).ok()?;
        self.seen.push(line.clone());
        Some(line)
    }

    /// Sends `signal` to rdbx's process group (rdbx and a program it
    /// started), as the terminal does for Ctrl-C.
    pub fn signal_group(&self, signal: i32) {
        // SAFETY: kill(2) of the process group made for our child.
        unsafe { libc::kill(-self.pid(), signal) };
    }

    /// Runs `print N` and waits for its answer: every command before it is done.
    pub fn sync(&mut self, n: u64) {
        self.send(&format!("print {n}"));
        let answer = format!("{n} = {n}");
        self.expect(&answer.clone(), TIMEOUT, |l| l == answer);
    }

    pub fn transcript(&self) -> String {
        let unread: Vec<String> = self.lines.try_iter().map(|(_, line)| line).collect();
        format!(
            "--- stdout ---\n{}\n--- stdout not read yet ---\n{}\n--- stderr ---\n{}",
            self.seen.join("\n"),
            unread.join("\n"),
            self.err.text()
        )
    }

    pub fn stderr(&self) -> String {
        self.err.text()
    }

    /// Closes stdin (after `quit` if asked) and waits for rdbx to end.
    pub fn finish(mut self, quit: bool) -> Option<ExitStatus> {
        if quit {
            self.send("quit");
        }
        self.stdin = None;
        let status = wait_with_deadline(&mut self.child, TIMEOUT);
        while let Ok((_, line)) = self.lines.recv_timeout(Duration::from_millis(100)) {
            self.seen.push(line);
        }
        status
    }

    /// Waits for rdbx to end on its own (it was made to crash).
    pub fn wait_for_end(&mut self) -> Option<ExitStatus> {
        wait_with_deadline(&mut self.child, TIMEOUT)
    }
}

impl Drop for Console {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The scheduling state of every thread of `pid` ('R', 'S', 't'...).
pub fn thread_states(pid: u32) -> Vec<char> {
    let Ok(tasks) = fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .filter_map(|t| t.ok())
        .filter_map(|t| {
            let stat = fs::read_to_string(t.path().join("stat")).ok()?;
            let after = stat.rsplit_once(')')?.1;
            after.trim_start().chars().next()
        })
        .collect()
}

/// Every thread of `pid` is in a tracing stop.
pub fn all_threads_traced_stopped(pid: u32) -> bool {
    let states = thread_states(pid);
    !states.is_empty() && states.iter().all(|&s| s == 't')
}

/// A program started by the test itself (not under rdbx), its first line
/// read; in a session of its own with `own_session`.
pub struct Target {
    pub child: Child,
    pub stdout: std::io::BufReader<std::process::ChildStdout>,
}

impl Target {
    pub fn start(program: &Path, own_session: bool) -> Target {
        Target::start_with_args(program, &[], own_session)
    }

    /// [`Target::start`] with arguments for the program.
    pub fn start_with_args(program: &Path, args: &[&str], own_session: bool) -> Target {
        let mut command = Command::new(program);
        command
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped());
        if own_session {
            // SAFETY: setsid is async-signal-safe.
            unsafe {
                command.pre_exec(|| {
                    libc::setsid();
                    Ok(())
                });
            }
        }
        let mut child = command.spawn().expect("start target");
        let mut stdout = std::io::BufReader::new(child.stdout.take().expect("stdout"));
        let mut first = String::new();
        use std::io::BufRead;
        stdout.read_line(&mut first).expect("first line");
        assert_eq!(first.trim(), "ready", "target's first line");
        Target { child, stdout }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The rest of its output and its exit code, once it ends.
    pub fn finish(mut self) -> (String, Option<i32>) {
        let mut rest = String::new();
        let _ = self.stdout.read_to_string(&mut rest);
        let status = wait_with_deadline(&mut self.child, TIMEOUT);
        if let Some(signal) = status.and_then(|s| std::os::unix::process::ExitStatusExt::signal(&s))
        {
            rest.push_str(&format!("[killed by signal {signal}]"));
        }
        (rest, status.and_then(|s| s.code()))
    }
}

impl Drop for Target {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// What [`collect_after_attach`] saw: the program's first line, the rest
/// of its output, its standard error, and rdbx's transcript.
pub struct AttachedRun {
    pub ready: String,
    pub rest: String,
    pub stderr: String,
    pub transcript: String,
}

/// Starts `program` (which prints a line starting `ready` and then waits
/// for a line on stdin), attaches rdbx to it, runs `settings`, then
/// `collector store filename live.er`, `collector enable` and `detach`,
/// lets the program go and waits for it, which must succeed. The
/// experiment is `dir/live.er`.
pub fn collect_after_attach(program: &Path, dir: &Path, settings: &[&str]) -> AttachedRun {
    use std::io::BufRead;
    let mut target = Command::new(program)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("start {}: {e}", program.display()));
    let mut stdout = std::io::BufReader::new(target.stdout.take().expect("stdout"));
    // Drained meanwhile, so a program that writes much there never blocks.
    let mut stderr_pipe = target.stderr.take().expect("stderr");
    let stderr_reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr_pipe.read_to_string(&mut text);
        text
    });
    let mut ready = String::new();
    stdout.read_line(&mut ready).expect("ready line");
    assert!(ready.starts_with("ready"), "{ready}");
    let mut cmds = settings.to_vec();
    cmds.extend([
        "collector store filename live.er",
        "collector enable",
        "detach",
    ]);
    let out = Rdbx::batch()
        .cwd(dir)
        .arg("-p")
        .arg(target.id().to_string())
        .cmds(&cmds)
        .run();
    let transcript = out.transcript();
    target
        .stdin
        .take()
        .expect("stdin")
        .write_all(b"go\n")
        .expect("release the program");
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).expect("stdout");
    let status = target.wait().expect("wait");
    let stderr = stderr_reader.join().unwrap_or_default();
    assert!(status.success(), "{rest}\n{stderr}\n{transcript}");
    AttachedRun {
        ready: ready.trim().to_string(),
        rest,
        stderr,
        transcript,
    }
}

/// A C++ or Rust test program (in tests/programs; the C ones are in
/// tests/common's recipes) built once per test process with `compiler`,
/// unoptimized, C++ without builtins as the C ones. Tests run in parallel
/// and share the build: a second build would replace the file under a
/// running one.
pub fn built(source: &str, compiler: &str) -> PathBuf {
    static BUILT: Mutex<std::collections::BTreeMap<String, PathBuf>> =
        Mutex::new(std::collections::BTreeMap::new());
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(out) = built.get(source) {
        return out.clone();
    }
    let stem = source.split('.').next().unwrap_or(source);
    let out = scratch_dir(&format!("{stem}-build")).join(stem);
    let flags: &[&str] = match compiler {
        "rustc" => &["-g", "-C", "opt-level=0", "--edition", "2021"],
        _ => &["-g", "-O0", "-fno-builtin", "-pthread"],
    };
    let status = Command::new(compiler)
        .args(flags)
        .arg("-o")
        .arg(&out)
        .arg(sources_dir().join(source))
        .status()
        .unwrap_or_else(|e| panic!("{compiler} must be installed: {e}"));
    assert!(status.success(), "{compiler} failed on {source}");
    built.insert(source.to_string(), out.clone());
    out
}

/// The program functions on a recorded stack, leaf first (its leaf frame is
/// the call in the caller), from the experiment's `object` line for the
/// program and the program's symbols.
pub struct Callers {
    base: u64,
    program: debugger::symbols::ObjectFile,
    stacks: std::collections::HashMap<u64, experiment::Stack>,
}

impl Callers {
    pub fn of(expt: &experiment::Experiment, program: &Path) -> Callers {
        let log = expt.log().expect("log");
        let base = log
            .iter()
            .find_map(|e| match &e.event {
                experiment::log::Event::Object { path, base, .. } if path == program => Some(*base),
                _ => None,
            })
            .expect("the program's object line");
        Callers {
            base,
            program: debugger::symbols::ObjectFile::open(program).expect("open the program"),
            stacks: expt.stacks().expect("stacks"),
        }
    }

    pub fn functions(&self, stack_id: u64) -> Vec<String> {
        let Some(stack) = self.stacks.get(&stack_id) else {
            return Vec::new();
        };
        stack
            .pcs
            .iter()
            .filter_map(|&pc| {
                let file = pc.checked_sub(self.base)?.checked_sub(1)?;
                self.program.symbol_at(file).map(|s| s.name)
            })
            .collect()
    }

    /// The recorded stack.
    pub fn stack(&self, stack_id: u64) -> Option<&experiment::Stack> {
        self.stacks.get(&stack_id)
    }

    /// The first program function on the stack ("" when none).
    pub fn caller(&self, stack_id: u64) -> String {
        self.functions(stack_id)
            .into_iter()
            .next()
            .unwrap_or_default()
    }
}

// ---------------------------------------------------------------------------
// Runs of rdbx collect and rdbx analyze
// ---------------------------------------------------------------------------

/// A finished command's status, stdout and stderr, for an assertion message.
pub fn output_text(output: &std::process::Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// `rdbx collect OPTIONS -o NAME PROGRAM ARGS` in `dir`, which must succeed.
pub fn rdbx_collect(
    dir: &Path,
    name: &str,
    options: &[&str],
    program: &Path,
    args: &[&str],
) -> std::process::Output {
    let output = Command::new(rdbx_bin())
        .arg("collect")
        .args(options)
        .args(["-o", name])
        .arg(program)
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run rdbx collect");
    assert!(output.status.success(), "{}", output_text(&output));
    output
}

/// The thread CPU time a test program measured per function: its
/// "cpu NAME SECONDS" lines (phases.c, compare.c).
pub fn measured_cpu(stdout: &str) -> std::collections::HashMap<String, f64> {
    stdout
        .lines()
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            match w.as_slice() {
                ["cpu", name, s] => Some((name.to_string(), s.parse().ok()?)),
                _ => None,
            }
        })
        .collect()
}

/// `rdbx analyze --json`'s output: one JSON array holding each command's
/// document, in order.
pub fn json_documents(stdout: &[u8]) -> Vec<serde_json::Value> {
    match serde_json::from_slice(stdout) {
        Ok(serde_json::Value::Array(documents)) => documents,
        other => panic!(
            "stdout is not one JSON array: {other:?}\n{}",
            String::from_utf8_lossy(stdout)
        ),
    }
}

/// Whether `tool` is an executable file on PATH (the MPI tests need
/// mpirun and mpicc).
pub fn on_path(tool: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(tool).is_file()))
}
