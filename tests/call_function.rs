//! Injected function calls in the engine (`Debugger::call_function`), the
//! way rdbx starts and drives the collector. These tests drive the debugger
//! in-process; they live in their own test binary because the engine
//! reaps with waitpid(-1): in a binary that also spawns rdbx processes it
//! would reap those too and the harness would wait for them forever.

mod common;

use common::*;
use debugger::breakpoints::{Action, LocationSpec};
use debugger::call::CallArg;
use debugger::engine::{Debugger, StopReason};
use debugger::inferior::LaunchSpec;

use std::sync::Mutex;

/// Tests that trace from this process: waitpid(-1) in one thread would
/// take another thread's events, so they run one at a time.
static PTRACE: Mutex<()> = Mutex::new(());

fn no_conditions(_: &Debugger, _: &str) -> debugger::Result<bool> {
    Ok(true)
}

/// A debugger on callee-O0, started and stopped at the first `tick`.
fn stopped_in_tick() -> (Debugger, i32) {
    let mut dbg = Debugger::new().expect("debugger");
    dbg.load(&prog("callee-O0")).expect("load");
    dbg.start(LaunchSpec::default()).expect("start");
    dbg.add_breakpoint(
        LocationSpec::Function("tick".into()),
        None,
        None,
        false,
        Action::Stop,
    )
    .expect("breakpoint");
    let stop = dbg.cont(&no_conditions).expect("cont");
    assert!(
        matches!(stop.reason, StopReason::Breakpoint { .. }),
        "{stop:?}"
    );
    (dbg, stop.tid)
}

fn address(dbg: &Debugger, name: &str) -> u64 {
    dbg.function_address(name)
        .unwrap_or_else(|| panic!("no function {name}"))
}

/// Continues to the end, counting the stops at `tick`; the exit code.
fn run_to_end(dbg: &mut Debugger) -> (usize, i32) {
    let mut ticks = 0;
    loop {
        let stop = dbg.cont(&no_conditions).expect("cont");
        match stop.reason {
            StopReason::Breakpoint { .. } => ticks += 1,
            StopReason::Exited { code } => return (ticks, code),
            other => panic!("unexpected stop {other:?}"),
        }
    }
}

#[test]
fn call_function_in_libc_and_the_program() {
    let _one = PTRACE.lock().unwrap_or_else(|e| e.into_inner());
    let (mut dbg, tid) = stopped_in_tick();
    let pid = dbg.process().unwrap().pid();
    let before = dbg.process().unwrap().regs(tid).unwrap();

    let getpid = address(&dbg, "getpid");
    assert_eq!(dbg.call_function(tid, getpid, &[]).unwrap() as i32, pid);
    let add2 = address(&dbg, "add2");
    assert_eq!(dbg.call_function(tid, add2, &[4, 2]).unwrap(), 42);
    let add6 = address(&dbg, "add6");
    assert_eq!(
        dbg.call_function(tid, add6, &[1, 2, 3, 4, 5, 6]).unwrap(),
        1 + 4 + 9 + 16 + 25 + 36
    );
    let length = address(&dbg, "length");
    let text = CallArg::CString(b"seven c".to_vec());
    assert_eq!(dbg.call_function_with(tid, length, &[text]).unwrap(), 7);
    // Arguments past the six registers go on the stack.
    assert_eq!(
        dbg.call_function(tid, add6, &[1, 2, 3, 4, 5, 6, 7])
            .unwrap(),
        1 + 4 + 9 + 16 + 25 + 36
    );
    // Signals raised during the call: SIGPROF (the profiler's) reaches the
    // program's handler; another signal abandons the call.
    let raise = address(&dbg, "raise_and_count");
    assert_eq!(
        dbg.call_function(tid, raise, &[libc::SIGPROF as u64])
            .unwrap(),
        1
    );
    let error = dbg
        .call_function(tid, raise, &[libc::SIGUSR1 as u64])
        .unwrap_err()
        .to_string();
    assert!(error.contains("interrupted by SIGUSR1"), "{error}");

    let after = dbg.process().unwrap().regs(tid).unwrap();
    assert_eq!(format!("{before:?}"), format!("{after:?}"));
    // The program goes on: the SIGUSR1 left pending is delivered to the
    // handler the abandoned call installed, and nothing else changes.
    assert_eq!(run_to_end(&mut dbg), (4, 0));
}

#[test]
fn a_crash_inside_a_call_restores_the_thread() {
    let _one = PTRACE.lock().unwrap_or_else(|e| e.into_inner());
    let (mut dbg, tid) = stopped_in_tick();
    let before = dbg.process().unwrap().regs(tid).unwrap();
    let crash = address(&dbg, "crash");
    let error = dbg.call_function(tid, crash, &[0]).unwrap_err().to_string();
    assert!(error.contains("SIGSEGV"), "{error}");
    let after = dbg.process().unwrap().regs(tid).unwrap();
    assert_eq!(format!("{before:?}"), format!("{after:?}"));
    // A breakpoint inside the called function abandons the call too.
    let tick = address(&dbg, "tick");
    let error = dbg.call_function(tid, tick, &[0]).unwrap_err().to_string();
    assert!(error.contains("breakpoint"), "{error}");
    assert_eq!(run_to_end(&mut dbg), (4, 0));
}

#[test]
fn the_entry_point_stop_comes_once_before_main() {
    let _one = PTRACE.lock().unwrap_or_else(|e| e.into_inner());
    let mut dbg = Debugger::new().expect("debugger");
    dbg.load(&prog("callee-O0")).expect("load");
    dbg.start(LaunchSpec::default()).expect("start");
    dbg.stop_at_entry().expect("entry stop");
    let stop = dbg.cont(&no_conditions).expect("cont");
    assert_eq!(stop.reason, StopReason::EntryPoint);
    assert!(dbg.take_entry_reached());
    assert!(!dbg.take_entry_reached());
    // libc is loaded and initialized: calls work here.
    let pid = dbg.process().unwrap().pid();
    let getpid = address(&dbg, "getpid");
    assert_eq!(
        dbg.call_function(stop.tid, getpid, &[]).unwrap() as i32,
        pid
    );
    dbg.add_breakpoint(
        LocationSpec::Function("tick".into()),
        None,
        None,
        false,
        Action::Stop,
    )
    .unwrap();
    assert_eq!(run_to_end(&mut dbg), (5, 0));
}

// ----- sessions with the fake collector ---------------------------------
// ----- calls by name: call_args.c ---------------------------------------

use debugger::call::Argument;
use debugger::value::Value;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// tests/programs/call_args.c built once (per source text) with -g -O0.
fn call_args_program() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| build_c_program("call_args", &["-O0", "-pthread"]))
        .clone()
}

fn build_c_program(stem: &str, flags: &[&str]) -> PathBuf {
    use std::hash::{Hash, Hasher};
    let source = sources_dir().join(format!("{stem}.c"));
    let text = std::fs::read(&source).expect("read source");
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    (text, flags).hash(&mut hasher);
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("call-programs");
    std::fs::create_dir_all(&dir).expect("create dir");
    let out = dir.join(format!("{stem}-{:016x}", hasher.finish()));
    if out.exists() {
        return out;
    }
    // Another test binary may build it at the same time: build aside, rename.
    let aside = dir.join(format!("{stem}.{}.tmp", std::process::id()));
    let status = std::process::Command::new("gcc")
        .arg("-g")
        .args(flags)
        .arg(format!("{stem}.c"))
        .arg("-o")
        .arg(&aside)
        .current_dir(sources_dir())
        .status()
        .expect("gcc");
    assert!(status.success(), "gcc failed for {stem}.c");
    std::fs::rename(&aside, &out).expect("publish program");
    out
}

/// A debugger on call_args (with `args`), stdout to a file in `dir`.
fn launch(args: &[&str], dir: &Path) -> Debugger {
    let mut dbg = Debugger::new().expect("debugger");
    dbg.load(&call_args_program()).expect("load");
    dbg.start(LaunchSpec {
        args: args.iter().map(|a| a.to_string()).collect(),
        stdout: Some(dir.join("stdout")),
        ..LaunchSpec::default()
    })
    .expect("start");
    dbg
}

/// call_args with no arguments, stopped in stop_here.
fn stopped_in_stop_here(dir: &Path) -> (Debugger, i32) {
    let mut dbg = launch(&[], dir);
    dbg.add_breakpoint(
        LocationSpec::Function("stop_here".into()),
        None,
        None,
        false,
        Action::Stop,
    )
    .expect("breakpoint");
    let stop = dbg.cont(&no_conditions).expect("cont");
    assert!(
        matches!(stop.reason, StopReason::Breakpoint { .. }),
        "{stop:?}"
    );
    (dbg, stop.tid)
}

/// The exit status, after running to the end.
fn finish(dbg: &mut Debugger) -> i32 {
    match dbg.cont(&no_conditions).expect("cont").reason {
        StopReason::Exited { code } => code,
        other => panic!("unexpected stop {other:?}"),
    }
}

/// What the program prints and its status when run without a debugger.
fn plain_run(args: &[&str]) -> (String, i32) {
    let output = std::process::Command::new(call_args_program())
        .args(args)
        .output()
        .expect("run call_args");
    (
        String::from_utf8_lossy(&output.stdout).into_owned(),
        output.status.code().unwrap_or(-1),
    )
}

fn int(v: i128) -> Argument {
    Argument::Value(Value::int(v))
}

fn double(v: f64) -> Argument {
    Argument::Value(Value::Float {
        value: v,
        size: 8,
        type_name: "double".into(),
    })
}

fn text(s: &str) -> Argument {
    Argument::String(s.as_bytes().to_vec())
}

/// The value of a call, as `print` shows it, with its type name.
fn shown(dbg: &mut Debugger, tid: i32, function: &str, args: &[Argument]) -> (String, String) {
    let value = dbg
        .call(tid, function, args)
        .unwrap_or_else(|e| panic!("{function}: {e}"))
        .unwrap_or_else(|| panic!("{function} returned void"));
    (value.to_string(), value.type_name().to_string())
}

/// Everything a call must leave as it was: general registers and the
/// whole XSAVE area (x87, SSE, AVX state).
fn thread_state(dbg: &Debugger, tid: i32) -> (String, Vec<u8>) {
    let regs = dbg.process().unwrap().regs(tid).unwrap();
    let xstate = debugger::ptrace::get_xstate(tid).expect("xstate");
    (format!("{regs:?}"), xstate)
}

#[test]
fn typed_arguments_and_results() {
    let _one = PTRACE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = scratch_dir("call-typed");
    let (mut dbg, tid) = stopped_in_stop_here(&dir);
    let before = thread_state(&dbg, tid);

    // int, double, long, float (a double literal converted), char *.
    let mix = [int(1), double(2.5), int(3), double(0.25), text("abcd")];
    assert_eq!(
        shown(&mut dbg, tid, "mix", &mix),
        ("10.75".into(), "double".into())
    );
    // An int literal for a double parameter becomes 3.0.
    assert_eq!(shown(&mut dbg, tid, "half", &[int(3)]).0, "1.5");
    assert_eq!(
        shown(&mut dbg, tid, "scale", &[double(1.5), int(3)]),
        ("4.5".into(), "float".into())
    );
    // Past the registers: integers and doubles on the stack.
    let eight: Vec<Argument> = (1..=8).map(int).collect();
    assert_eq!(shown(&mut dbg, tid, "many", &eight).0, "204");
    let ten: Vec<Argument> = (1..=10).map(|i| double(i as f64)).collect();
    assert_eq!(shown(&mut dbg, tid, "many_doubles", &ten).0, "385");
    let mut crowded: Vec<Argument> = (1..=7).map(int).collect();
    crowded.extend((0..8).map(|_| double(0.5)));
    crowded.push(double(2.0));
    crowded.push(int(3));
    // 21 + 700 + 4 + 2000 + 30000
    assert_eq!(shown(&mut dbg, tid, "crowded", &crowded).0, "32725");
    // Variadic doubles: xmm registers, and rax says how many.
    let vsum = [int(3), double(1.5), double(2.5), double(3.0)];
    assert_eq!(shown(&mut dbg, tid, "vsum", &vsum).0, "7");
    // Strings and what comes back.
    assert_eq!(
        shown(&mut dbg, tid, "measure", &[text("hello")]),
        ("5".into(), "size_t".into())
    );
    let compared = shown(&mut dbg, tid, "compare", &[text("abc"), text("abd")]).0;
    assert!(compared.parse::<i32>().unwrap() < 0, "{compared}");
    assert_eq!(
        shown(&mut dbg, tid, "compare", &[text("x"), text("x")]).0,
        "0"
    );
    let (greeting, type_name) = shown(&mut dbg, tid, "greeting", &[]);
    assert!(greeting.ends_with(" \"hello there\""), "{greeting}");
    assert_eq!(type_name, "const char *");
    assert_eq!(shown(&mut dbg, tid, "initial", &[text("xyz")]).0, "120 'x'");
    // libc, without DWARF of its own.
    let pid = dbg.process().unwrap().pid();
    assert_eq!(shown(&mut dbg, tid, "getpid", &[]).0, pid.to_string());
    // An indirect function: its resolver picks the implementation first.
    assert_eq!(shown(&mut dbg, tid, "strlen", &[text("abcd")]).0, "4");
    // A void function's side effect, seen afterwards.
    assert_eq!(dbg.call(tid, "bump", &[int(5)]).unwrap(), None);
    assert_eq!(dbg.read_variable("counter").unwrap().to_string(), "5");
    assert_eq!(
        dbg.call(tid, "remember", &[text("from rdbx")]).unwrap(),
        None
    );

    // Arity against the prototype, unknown functions, strings for numbers.
    let error = |dbg: &mut Debugger, f: &str, args: &[Argument]| {
        dbg.call(tid, f, args).unwrap_err().to_string()
    };
    assert_eq!(
        error(&mut dbg, "mix", &mix[..2]),
        "too few arguments in the call to mix: it takes 5, 2 given"
    );
    assert_eq!(
        error(&mut dbg, "half", &[int(1), int(2)]),
        "too many arguments in the call to half: it takes 1, 2 given"
    );
    assert_eq!(
        error(&mut dbg, "nosuch", &[]),
        "no function named \"nosuch\""
    );
    assert!(error(&mut dbg, "half", &[text("x")]).contains("a string cannot be passed there"));

    assert_eq!(before, thread_state(&dbg, tid));
    assert_eq!(finish(&mut dbg), 0);
    let stdout = std::fs::read_to_string(dir.join("stdout")).unwrap();
    assert_eq!(stdout, "counter=5 text=from rdbx\nusr1=0\n");
}

#[test]
fn calls_that_do_not_return_restore_the_thread() {
    let _one = PTRACE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = scratch_dir("call-abandoned");
    let (mut dbg, tid) = stopped_in_stop_here(&dir);
    let before = thread_state(&dbg, tid);

    let error = dbg
        .call(tid, "crash_here", &[int(0)])
        .unwrap_err()
        .to_string();
    assert!(
        error.starts_with("the call to crash_here got SIGSEGV in crash_here at 0x"),
        "{error}"
    );
    assert_eq!(before, thread_state(&dbg, tid));

    let id = dbg
        .add_breakpoint(
            LocationSpec::Function("inner".into()),
            None,
            None,
            false,
            Action::Stop,
        )
        .unwrap();
    let error = dbg
        .call(tid, "calls_inner", &[int(1)])
        .unwrap_err()
        .to_string();
    assert_eq!(
        error,
        format!(
            "the call to calls_inner hit breakpoint ({id}) in inner; abandoned and the \
             thread's state restored"
        )
    );
    dbg.delete_breakpoint(id).unwrap();
    assert_eq!(shown(&mut dbg, tid, "calls_inner", &[int(1)]).0, "3");
    assert_eq!(before, thread_state(&dbg, tid));

    dbg.set_call_timeout(Duration::from_secs(1));
    let started = Instant::now();
    let error = dbg.call(tid, "forever", &[]).unwrap_err().to_string();
    assert_eq!(
        error,
        "the call to forever did not return within 1 s; abandoned and the thread's state \
         restored"
    );
    assert!(started.elapsed() < Duration::from_secs(3));
    assert_eq!(before, thread_state(&dbg, tid));
    // The thread calls again normally after a timeout.
    assert_eq!(shown(&mut dbg, tid, "half", &[int(1)]).0, "0.5");

    // Output and status as without any call.
    assert_eq!(finish(&mut dbg), 0);
    let stdout = std::fs::read_to_string(dir.join("stdout")).unwrap();
    assert_eq!((stdout, 0), plain_run(&[]));
}

#[test]
fn a_signal_during_a_call_stays_pending() {
    let _one = PTRACE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = scratch_dir("call-signal");
    let (mut dbg, tid) = stopped_in_stop_here(&dir);
    let before = thread_state(&dbg, tid);
    let error = dbg.call(tid, "raise_usr1", &[]).unwrap_err().to_string();
    assert_eq!(
        error,
        "the call to raise_usr1 was interrupted by SIGUSR1 in raise; abandoned and the \
         thread's state restored (the signal stays pending)"
            .replace(" in raise;", &format!(" in {};", error_place(&error)))
    );
    assert_eq!(before, thread_state(&dbg, tid));
    // The program's handler gets it when the program goes on.
    assert_eq!(finish(&mut dbg), 0);
    let stdout = std::fs::read_to_string(dir.join("stdout")).unwrap();
    assert_eq!(stdout, "counter=0 text=none\nusr1=1\n");
}

/// The function named after " in " in a call error (libc's name for the
/// place raise() stops in varies: raise, __pthread_kill_implementation...).
fn error_place(error: &str) -> String {
    error
        .split(" in ")
        .nth(1)
        .and_then(|rest| rest.split(';').next())
        .unwrap_or("")
        .to_string()
}

#[test]
fn the_program_exiting_in_a_call() {
    let _one = PTRACE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = scratch_dir("call-exit");
    let (mut dbg, tid) = stopped_in_stop_here(&dir);
    let error = dbg.call(tid, "leave", &[int(7)]).unwrap_err().to_string();
    assert_eq!(
        error,
        "the program exited with code 7 during the call to leave"
    );
    assert!(dbg.process_has_ended());
    assert_eq!(finish(&mut dbg), 7);
    assert!(!dbg.is_running());
}

/// Stops call_args MODE with SIGINT after `after` (the main thread is then
/// blocked in a system call), as Ctrl-C would.
fn stopped_in_system_call(mode: &str, dir: &Path, after: Duration) -> (Debugger, i32) {
    let mut dbg = launch(&[mode], dir);
    let pid = dbg.process().unwrap().pid();
    let interrupter = std::thread::spawn(move || {
        std::thread::sleep(after);
        // SAFETY: plain system call; pid is our traced child.
        unsafe { libc::syscall(libc::SYS_tgkill, pid, pid, libc::SIGINT) };
    });
    let stop = dbg.cont(&no_conditions).expect("cont");
    interrupter.join().unwrap();
    assert_eq!(
        stop.reason,
        StopReason::Signal {
            signal: libc::SIGINT
        }
    );
    assert_eq!(stop.tid, pid);
    (dbg, pid)
}

#[test]
fn a_call_in_nanosleep_keeps_the_sleep() {
    let _one = PTRACE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = scratch_dir("call-nanosleep");
    let (mut dbg, tid) = stopped_in_system_call("sleep", &dir, Duration::from_millis(300));
    let regs = dbg.process().unwrap().regs(tid).unwrap();
    // Inside clock_nanosleep, to be restarted with the time left.
    assert_eq!(regs.orig_rax, libc::SYS_clock_nanosleep as u64);
    assert_eq!(regs.rax as i64, -516, "-ERESTART_RESTARTBLOCK");
    let before = thread_state(&dbg, tid);
    let mix = [int(1), double(2.5), int(3), double(0.25), text("abcd")];
    assert_eq!(shown(&mut dbg, tid, "mix", &mix).0, "10.75");
    assert_eq!(shown(&mut dbg, tid, "measure", &[text("abc")]).0, "3");
    assert_eq!(before, thread_state(&dbg, tid));
    // A while stopped: a sleep restarted from scratch would end late.
    std::thread::sleep(Duration::from_millis(500));
    let tenths = finish(&mut dbg);
    assert!(
        (20..=21).contains(&tenths),
        "slept {tenths} tenths of a second"
    );
    let stdout = std::fs::read_to_string(dir.join("stdout")).unwrap();
    assert_eq!(stdout, "nanosleep returned 0\nusr1=0\n");
}

#[test]
fn a_call_in_read_keeps_the_read() {
    let _one = PTRACE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = scratch_dir("call-read");
    let (mut dbg, tid) = stopped_in_system_call("read", &dir, Duration::from_millis(300));
    let regs = dbg.process().unwrap().regs(tid).unwrap();
    assert_eq!(regs.orig_rax, libc::SYS_read as u64);
    assert_eq!(regs.rax as i64, -512, "-ERESTARTSYS");
    let before = thread_state(&dbg, tid);
    assert_eq!(shown(&mut dbg, tid, "half", &[double(5.0)]).0, "2.5");
    assert_eq!(
        shown(&mut dbg, tid, "compare", &[text("a"), text("a")]).0,
        "0"
    );
    assert_eq!(before, thread_state(&dbg, tid));
    assert_eq!(finish(&mut dbg), 0);
    let stdout = std::fs::read_to_string(dir.join("stdout")).unwrap();
    assert_eq!(stdout, "read 4 bytes: data\nusr1=0\n");
    assert_eq!(plain_run(&["read"]), (stdout, 0));
}
