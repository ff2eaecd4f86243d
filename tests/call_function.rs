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
    let pid = dbg.process().unwrap().pid;
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
    assert!(dbg.call_function(tid, add6, &[0; 7]).is_err());
    // Signals raised during the call reach the program's handler.
    let raise = address(&dbg, "raise_and_count");
    for signal in [libc::SIGPROF, libc::SIGUSR1] {
        assert_eq!(dbg.call_function(tid, raise, &[signal as u64]).unwrap(), 1);
    }

    let after = dbg.process().unwrap().regs(tid).unwrap();
    assert_eq!(format!("{before:?}"), format!("{after:?}"));
    // The program goes on unchanged: four more ticks, exit 0 (counter == 10).
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
    let pid = dbg.process().unwrap().pid;
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
