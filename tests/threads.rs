//! Threads: a breakpoint in a worker thread, the `threads` list, `where` in
//! the worker, and continuing through all four hits.
mod common;
use common::*;

#[test]
fn breakpoint_in_worker_thread() {
    let p = prog("threads-O0");
    let body = line_of("threads.c", "work_body");
    let o = Rdbx::batch()
        .cmds(&["stop in work", "run", "threads", "where"])
        .prog(&p, &[])
        .run();
    o.assert_stderr_well_formed();
    let stop = o.nth_stop(0);
    assert_eq!(
        (stop.func.as_str(), stop.line),
        ("work", Some(body)),
        "{}",
        o.transcript()
    );

    // All five threads exist (the workers passed a barrier with main).
    let listed: Vec<&str> = o
        .stdout
        .lines()
        .filter(|l| l.trim_start().starts_with("=> t@") || l.trim_start().starts_with("t@"))
        .collect();
    assert_eq!(
        listed.len(),
        5,
        "threads lists 5 threads\n{}",
        o.transcript()
    );
    let current: Vec<&&str> = listed.iter().filter(|l| l.starts_with("=> t@")).collect();
    assert_eq!(
        current.len(),
        1,
        "exactly one current thread\n{}",
        o.transcript()
    );
    assert!(current[0].contains("(lwp "), "{}", o.transcript());
    assert!(
        current[0].contains("work()"),
        "current thread is in work\n{}",
        o.transcript()
    );
    assert!(
        !current[0].contains("t@1 "),
        "the breakpoint is hit by a worker, not the main thread\n{}",
        o.transcript()
    );
    assert!(
        listed.iter().any(|l| l.contains("t@1 ")),
        "{}",
        o.transcript()
    );
    // lwps are distinct
    let mut lwps: Vec<&str> = listed
        .iter()
        .filter_map(|l| l.split("(lwp ").nth(1)?.split(')').next())
        .collect();
    lwps.sort();
    lwps.dedup();
    assert_eq!(lwps.len(), 5, "{}", o.transcript());

    let frames = o.nth_where(0);
    assert_eq!(frames[0].func, "work");
    assert_eq!(frames[1].func, "worker", "{}", o.transcript());
    assert_eq!(frames[1].line, Some(line_of("threads.c", "worker_call")));
    assert!(
        frames.iter().all(|f| f.func != "main"),
        "a worker's stack does not contain main\n{}",
        o.transcript()
    );
}

#[test]
fn worker_breakpoint_hit_four_times_then_exit() {
    let p = prog("threads-O0");
    let o = Rdbx::batch()
        .cmds(&["stop in work", "run", "cont", "cont", "cont", "cont"])
        .prog(&p, &[])
        .run();
    o.assert_stderr_well_formed();
    let stops: Vec<Stop> = o.stops().into_iter().filter(|s| s.func == "work").collect();
    assert_eq!(stops.len(), 4, "{}", o.transcript());
    o.assert_out_contains("threads done sum=60");
    assert_eq!(o.exit_lines(), [0], "{}", o.transcript());
    let new_threads = o.stdout.matches("[New thread t@").count();
    assert!(
        new_threads >= 4,
        "new threads are announced\n{}",
        o.transcript()
    );
    let exited = o
        .stdout
        .lines()
        .filter(|l| l.starts_with("[Thread t@") && l.contains(" exited]"))
        .count();
    assert!(
        exited >= 4,
        "thread exits are announced\n{}",
        o.transcript()
    );
}

#[test]
fn print_in_each_worker_shows_its_id() {
    let p = prog("threads-O0");
    let o = Rdbx::batch()
        .cmds(&["when in work { print id }", "run"])
        .prog(&p, &[])
        .run();
    o.assert_stderr_well_formed();
    let mut ids = o.printed("id");
    ids.sort();
    assert_eq!(ids, ["0", "1", "2", "3"], "{}", o.transcript());
    assert_eq!(o.exit_lines(), [0], "{}", o.transcript());
}
