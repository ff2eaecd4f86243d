// Off-CPU time in Rust, measured by the program itself, for
// tests/offcpu.rs: wall time (Instant) less the thread's CPU time
// (CLOCK_THREAD_CPUTIME_ID) around each wait, printed on stderr as
//   measure FUNCTION WALL_NS CPU_NS
// - sleeper: std::thread::sleep, 10 x 20 ms;
// - mutex_waiter: std::sync::Mutex::lock of a mutex a helper thread holds
//   for 20 ms, 10 times. std's Mutex is a futex, not pthreads: sync
//   tracing does not see the wait, off-CPU profiling does.
// The handshakes that make the helper hold the lock first are waits of
// mutex_rounds, not of mutex_waiter. stdout gets one deterministic line.
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

const ROUNDS: usize = 10;
const WAIT: Duration = Duration::from_millis(20);

#[repr(C)]
struct Timespec {
    seconds: i64,
    nanoseconds: i64,
}

extern "C" {
    fn clock_gettime(clock: i32, now: *mut Timespec) -> i32;
}

const CLOCK_THREAD_CPUTIME_ID: i32 = 3;

fn thread_cpu_ns() -> u64 {
    let mut now = Timespec {
        seconds: 0,
        nanoseconds: 0,
    };
    // SAFETY: a valid out-pointer; this clock always exists.
    unsafe { clock_gettime(CLOCK_THREAD_CPUTIME_ID, &mut now) };
    now.seconds as u64 * 1_000_000_000 + now.nanoseconds as u64
}

/// Wall and CPU nanoseconds spent in the measured regions.
#[derive(Default)]
struct Measure {
    wall: u64,
    cpu: u64,
}

impl Measure {
    fn add(&mut self, started: Instant, cpu_before: u64) {
        self.cpu += thread_cpu_ns() - cpu_before;
        self.wall += started.elapsed().as_nanos() as u64;
    }

    fn report(&self, name: &str) {
        eprintln!("measure {name} {} {}", self.wall, self.cpu);
    }
}

#[inline(never)]
fn sleeper(measure: &mut Measure) {
    for _ in 0..ROUNDS {
        let (started, cpu) = (Instant::now(), thread_cpu_ns());
        thread::sleep(WAIT);
        measure.add(started, cpu);
    }
}

/// Holds the lock for 20 ms each time it is told to.
fn holder(lock: Arc<Mutex<u64>>, go: Receiver<()>, holding: Sender<()>) {
    for _ in 0..ROUNDS {
        go.recv().unwrap();
        let mut guard = lock.lock().unwrap();
        holding.send(()).unwrap();
        thread::sleep(WAIT);
        *guard += 1;
    }
}

#[inline(never)]
fn mutex_waiter(lock: &Mutex<u64>, measure: &mut Measure) {
    let (started, cpu) = (Instant::now(), thread_cpu_ns());
    let mut guard = lock.lock().unwrap();
    measure.add(started, cpu);
    *guard += 1;
}

#[inline(never)]
fn mutex_rounds(measure: &mut Measure) -> u64 {
    let lock = Arc::new(Mutex::new(0));
    let (go, go_seen) = channel();
    let (holding_told, holding) = channel();
    let held = Arc::clone(&lock);
    let helper = thread::spawn(move || holder(held, go_seen, holding_told));
    for _ in 0..ROUNDS {
        go.send(()).unwrap();
        holding.recv().unwrap();
        mutex_waiter(&lock, measure);
    }
    helper.join().unwrap();
    let count = *lock.lock().unwrap();
    count
}

fn main() {
    let (mut slept, mut waited) = (Measure::default(), Measure::default());
    sleeper(&mut slept);
    let count = mutex_rounds(&mut waited);
    slept.report("sleeper");
    waited.report("mutex_waiter");
    println!("offcpu_rust done: {count} increments");
}
