// Rust waits known by construction: a thread joined after it slept 40 ms
// (std's join is pthread_join: a traced wait), and a std::sync::Mutex held
// 30 ms by another thread (std's Mutex is a futex, not pthreads: not a
// traced wait). Each is measured here and printed as `wait KIND NS FUNCTION`
// on stderr.
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

#[inline(never)]
fn join_sleeper() {
    let sleeper = thread::spawn(|| thread::sleep(Duration::from_millis(40)));
    let start = Instant::now();
    sleeper.join().unwrap();
    eprintln!("wait join {} join_sleeper", start.elapsed().as_nanos());
}

#[inline(never)]
fn lock_std_mutex() {
    let held = Arc::new(Mutex::new(0u32));
    let other = Arc::clone(&held);
    let (tx, rx) = std::sync::mpsc::channel();
    let holder = thread::spawn(move || {
        let mut guard = other.lock().unwrap();
        tx.send(()).unwrap();
        thread::sleep(Duration::from_millis(30));
        *guard += 1;
    });
    rx.recv().unwrap();
    let start = Instant::now();
    *held.lock().unwrap() += 1;
    eprintln!("wait futex {} lock_std_mutex", start.elapsed().as_nanos());
    holder.join().unwrap();
}

fn main() {
    join_sleeper();
    lock_std_mutex();
    println!("done");
}
