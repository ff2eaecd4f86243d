//! Ctrl-C always stops. rdbx is attached to ctrlc.c, a program in its own
//! session (so the terminal's SIGINT would never reach it) whose threads
//! block in a futex, nanosleep and read while one burns CPU; SIGINT goes
//! to rdbx at a random moment of `cont`, `next` over a blocking call,
//! `step up` out of it and `collector enable`, and while the collector
//! profiles the busy thread (a SIGPROF stop every millisecond), 200 times
//! in a row. Each time every thread must stop and the next command must
//! work; the time from SIGINT to every thread stopped must have a median
//! under 20 ms and never pass 100 ms.

mod common;

use common::{all_threads_traced_stopped, line_of, prog, thread_states, Console, Target, TIMEOUT};
use std::time::{Duration, Instant};

/// A small deterministic generator: the moments are random, the test is
/// repeatable.
struct Moments(u64);

impl Moments {
    fn next_ms(&mut self, below: u64) -> Duration {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        Duration::from_micros(self.0 % (below * 1000))
    }
}

/// What is interrupted.
#[derive(Debug, Clone, Copy)]
enum Activity {
    /// The program runs free.
    Cont,
    /// `next` over the line calling blocking_call (50 ms in nanosleep).
    NextOverCall,
    /// `step up` out of blocking_call.
    StepUp,
}

struct Trial {
    rdbx: Console,
    pid: u32,
    moments: Moments,
    sync: u64,
    latencies: Vec<Duration>,
}

impl Trial {
    /// Waits until rdbx has set some thread running (the command is under
    /// way, so the SIGINT cannot land while rdbx waits for input).
    fn wait_until_running(&self) {
        let deadline = Instant::now() + TIMEOUT;
        while thread_states(self.pid).iter().all(|&s| s == 't') {
            assert!(Instant::now() < deadline, "the program never ran");
            std::thread::sleep(Duration::from_micros(200));
        }
    }

    /// Sends SIGINT to rdbx and measures how long until every thread of
    /// the program is stopped; then checks the stop was reported and the
    /// next command works.
    fn interrupt(&mut self, what: Activity) {
        let sent = Instant::now();
        self.rdbx.signal(libc::SIGINT);
        while !all_threads_traced_stopped(self.pid) {
            assert!(
                sent.elapsed() < TIMEOUT,
                "{what:?}: the program did not stop (threads {:?}, rdbx in {:?})\n{}",
                thread_states(self.pid),
                std::fs::read_to_string(format!("/proc/{}/syscall", self.rdbx.pid())),
                self.rdbx.transcript()
            );
            std::thread::sleep(Duration::from_micros(100));
        }
        self.latencies.push(sent.elapsed());
        self.rdbx
            .expect("the stop", TIMEOUT, |l| l.starts_with("stopped in"));
        assert!(
            all_threads_traced_stopped(self.pid),
            "{what:?}: a thread runs after the stop was reported\n{}",
            self.rdbx.transcript()
        );
        // The next command works.
        self.rdbx.send("print calls >= 0");
        self.rdbx
            .expect("print after the stop", TIMEOUT, |l| l == "calls >= 0 = 1");
    }

    fn sync(&mut self) {
        self.sync += 1;
        self.rdbx.sync(self.sync);
    }

    /// Stops in the program's main loop at the call of blocking_call, or
    /// at its first line (for `step up`).
    fn position(&mut self, what: Activity) {
        let at = match what {
            Activity::Cont => return,
            Activity::NextOverCall => line_of("ctrlc.c", "call_blocking"),
            Activity::StepUp => line_of("ctrlc.c", "blocking_body"),
        };
        self.rdbx.send(&format!("stop at ctrlc.c:{at} -temp"));
        self.rdbx.send("cont");
        self.rdbx.expect("the temporary breakpoint", TIMEOUT, |l| {
            l.starts_with("stopped in") && l.contains(&format!("line {at} "))
        });
        self.sync();
    }

    fn once(&mut self, what: Activity) {
        self.position(what);
        self.rdbx.send(match what {
            Activity::Cont => "cont",
            Activity::NextOverCall => "next",
            Activity::StepUp => "step up",
        });
        self.wait_until_running();
        // Within the 50 ms the call blocks (cont blocks forever).
        std::thread::sleep(self.moments.next_ms(25));
        self.interrupt(what);
    }

    /// `collector enable` with a SIGINT at a random moment of it: the
    /// collector's own injected calls finish (one cut short could leave
    /// the loader's lock held), and the program stays stopped.
    fn enable_collector(&mut self) {
        self.rdbx.send("collector enable");
        std::thread::sleep(self.moments.next_ms(15));
        self.rdbx.signal(libc::SIGINT);
        self.sync();
        assert!(
            all_threads_traced_stopped(self.pid),
            "a thread runs after collector enable\n{}",
            self.rdbx.transcript()
        );
        self.rdbx.send("collector status");
        self.rdbx.expect("an active experiment", TIMEOUT, |l| {
            l.contains("state: active")
        });
    }
}

#[test]
fn ctrl_c_stops_every_thread_every_time() {
    let target = Target::start(&prog("ctrlc-O0"), true);
    let pid = target.pid();
    let store = common::scratch_dir("interrupt");
    let mut trial = Trial {
        rdbx: Console::start(&["-p", &pid.to_string()]),
        pid,
        moments: Moments(0x9e37_79b9_7f4a_7c15),
        sync: 0,
        latencies: Vec::new(),
    };
    trial.rdbx.expect("the attach", TIMEOUT, |l| {
        l.starts_with("Attached to process")
    });
    trial
        .rdbx
        .send(&format!("collector store directory {}", store.display()));
    trial.rdbx.send("collector profile timer hi");
    trial.sync();
    let activities = [Activity::Cont, Activity::NextOverCall, Activity::StepUp];
    for round in 0..120 {
        trial.once(activities[round % 3]);
    }
    // Now with the collector profiling the busy thread every millisecond:
    // SIGPROF stops keep coming while the engine waits for Ctrl-C.
    trial.enable_collector();
    for round in 0..80 {
        if round % 20 == 19 {
            trial.rdbx.send("collector disable");
            trial.enable_collector();
        }
        trial.once(activities[round % 3]);
    }
    let mut latencies = trial.latencies.clone();
    latencies.sort();
    let median = latencies[latencies.len() / 2];
    let worst = *latencies.last().expect("measured");
    eprintln!(
        "ctrl-c latency over {} interrupts: median {:.2} ms, max {:.2} ms",
        latencies.len(),
        median.as_secs_f64() * 1000.0,
        worst.as_secs_f64() * 1000.0
    );
    assert_eq!(latencies.len(), 200);
    assert!(median < Duration::from_millis(20), "median {median:?}");
    assert!(worst < Duration::from_millis(100), "worst {worst:?}");
    trial.rdbx.send("detach");
    trial.rdbx.expect("the detach", TIMEOUT, |l| {
        l.starts_with("Detached from process")
    });
    let status = trial.rdbx.finish(true);
    assert_eq!(status.and_then(|s| s.code()), Some(0));
    // Untraced and running again: not one thread left stopped.
    std::thread::sleep(Duration::from_millis(100));
    assert!(
        thread_states(pid).iter().all(|&s| s != 't' && s != 'T'),
        "{:?}",
        thread_states(pid)
    );
    drop(target);
}

/// A thread stepped alone in a system call that waits for ever (read on a
/// pipe nobody writes): Ctrl-C stops it, and the next command works.
#[test]
fn ctrl_c_ends_a_step_blocked_in_a_system_call() {
    let target = Target::start(&prog("ctrlc-O0"), true);
    let pid = target.pid();
    let mut rdbx = Console::start(&["-p", &pid.to_string()]);
    rdbx.expect("the attach", TIMEOUT, |l| {
        l.starts_with("Attached to process")
    });
    rdbx.send("threads");
    let (_, reader) = rdbx.expect("the thread in read", TIMEOUT, |l| l.contains("_read()"));
    let number = reader
        .trim_start_matches(['=', '>', ' '])
        .split_whitespace()
        .next()
        .expect("t@N")
        .trim_start_matches("t@")
        .to_string();
    rdbx.send(&format!("thread {number}"));
    rdbx.sync(1);
    rdbx.send("stepi");
    std::thread::sleep(Duration::from_millis(200));
    // Still in the kernel, waiting: nothing was reported.
    rdbx.signal(libc::SIGINT);
    rdbx.expect("the stop", TIMEOUT, |l| l.starts_with("stopped in"));
    assert!(all_threads_traced_stopped(pid), "{}", rdbx.transcript());
    rdbx.send("print calls >= 0");
    rdbx.expect("print after the stop", TIMEOUT, |l| l == "calls >= 0 = 1");
    rdbx.send("detach");
    rdbx.finish(true);
}

/// `[New thread ...]` is printed as the thread starts, while the program
/// runs, not at the next stop.
#[test]
fn new_threads_are_told_while_the_program_runs() {
    let mut rdbx = Console::start(&[prog("ctrlc-O0").to_str().unwrap()]);
    rdbx.send("run");
    let (started, _) = rdbx.expect("a new thread", TIMEOUT, |l| {
        l.starts_with("[New thread t@2")
    });
    std::thread::sleep(Duration::from_millis(300));
    rdbx.signal(libc::SIGINT);
    let (stopped, _) = rdbx.expect("the stop", TIMEOUT, |l| l.starts_with("stopped in"));
    assert!(
        stopped.duration_since(started) >= Duration::from_millis(250),
        "{}",
        rdbx.transcript()
    );
    rdbx.finish(true);
}

/// A program on rdbx's terminal gets the terminal's SIGINT too: each
/// Ctrl-C is one stop, reported as SIGINT, and the program is not stopped
/// again by that same SIGINT when it goes on (whichever of rdbx and the
/// program took the signal first).
#[test]
fn ctrl_c_on_the_terminal_stops_once() {
    let mut rdbx = Console::start(&[prog("ctrlc-O0").to_str().unwrap()]);
    rdbx.send("run");
    rdbx.expect("the program's threads", TIMEOUT, |l| {
        l.starts_with("[New thread t@5")
    });
    let mut moments = Moments(0x2545_f491_4f6c_dd1d);
    for _ in 0..40 {
        std::thread::sleep(Duration::from_millis(5) + moments.next_ms(20));
        rdbx.signal_group(libc::SIGINT);
        rdbx.expect("the SIGINT stop", TIMEOUT, |l| {
            l.starts_with("signal SIGINT (Interrupt)")
        });
        rdbx.send("cont");
        if let Some(line) = rdbx.line_within(Duration::from_millis(60)) {
            panic!(
                "a second stop for one Ctrl-C: {line}\n{}",
                rdbx.transcript()
            );
        }
    }
    rdbx.signal_group(libc::SIGINT);
    rdbx.expect("the last stop", TIMEOUT, |l| l.starts_with("signal SIGINT"));
    rdbx.finish(true);
}
