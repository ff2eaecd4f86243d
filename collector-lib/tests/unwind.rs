//! The unwinder against real code: a C library built at test time with
//! `gcc -O2 -fomit-frame-pointer`, sampled by a SIGPROF timer on the thread's CPU clock,
//! each sample unwound inside the handler and symbolized afterwards.

use std::cell::{Cell, UnsafeCell};
use std::ffi::{c_void, CStr, CString};
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};

use collector::unwind::{
    refresh_tables, signal_restorer, unwind_from_signal, StackCache, UnwindStatus,
};
use object::{Object, ObjectSymbol};

const MAX_SAMPLES: usize = 512;
const MAX_FRAMES: usize = 1024;

// ---------------------------------------------------------------- sampling

struct Sample {
    depth: usize,
    status: UnwindStatus,
    ns: u64,
    warm_ns: u64,
    pcs: [u64; MAX_FRAMES],
}

const EMPTY_SAMPLE: Sample = Sample {
    depth: 0,
    status: UnwindStatus::Failed,
    ns: 0,
    warm_ns: 0,
    pcs: [0; MAX_FRAMES],
};

/// Written only by the SIGPROF handler while SAMPLING is on, read only while it is off.
struct SampleBuffer(UnsafeCell<[Sample; MAX_SAMPLES]>);
unsafe impl Sync for SampleBuffer {}

static SAMPLES: SampleBuffer = SampleBuffer(UnsafeCell::new([EMPTY_SAMPLE; MAX_SAMPLES]));
static TAKEN: AtomicUsize = AtomicUsize::new(0);
static FRAME_LIMIT: AtomicUsize = AtomicUsize::new(MAX_FRAMES);
static SAMPLING: AtomicBool = AtomicBool::new(false);
/// Unwind each sample a second time and record that time too (for `unwind_cost`).
static REPEAT_WARM: AtomicBool = AtomicBool::new(false);

thread_local! {
    static STACK_CACHE: Cell<StackCache> = const { Cell::new(StackCache::new()) };
}

fn now_ns() -> u64 {
    let mut time = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut time) };
    time.tv_sec as u64 * 1_000_000_000 + time.tv_nsec as u64
}

extern "C" fn on_sigprof(_signal: libc::c_int, _info: *mut libc::siginfo_t, context: *mut c_void) {
    if !SAMPLING.load(Ordering::Acquire) {
        return;
    }
    let index = TAKEN.fetch_add(1, Ordering::Relaxed);
    if index >= MAX_SAMPLES {
        return;
    }
    let limit = FRAME_LIMIT.load(Ordering::Relaxed).min(MAX_FRAMES);
    let sample = unsafe { &mut (*SAMPLES.0.get())[index] };
    let mut cache = STACK_CACHE.with(Cell::get);
    let start = now_ns();
    let mut unwound = unsafe { unwind_from_signal(context, &mut cache, &mut sample.pcs[..limit]) };
    sample.ns = now_ns() - start;
    if REPEAT_WARM.load(Ordering::Relaxed) {
        // The same walk again with warm caches (tables, stack, TLB).
        let start = now_ns();
        unwound = unsafe { unwind_from_signal(context, &mut cache, &mut sample.pcs[..limit]) };
        sample.warm_ns = now_ns() - start;
    }
    STACK_CACHE.with(|cell| cell.set(cache));
    sample.depth = unwound.depth;
    sample.status = unwound.status;
}

fn install_handler(signal: libc::c_int, handler: usize) {
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = handler;
        action.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
        libc::sigemptyset(&mut action.sa_mask);
        assert_eq!(libc::sigaction(signal, &action, std::ptr::null_mut()), 0);
    }
}

/// A timer on this thread's CPU clock that sends `signal` to this thread.
struct CpuTimer(libc::timer_t);

impl CpuTimer {
    fn start(signal: libc::c_int, first_ns: i64, interval_ns: i64) -> CpuTimer {
        unsafe {
            let mut event: libc::sigevent = std::mem::zeroed();
            event.sigev_notify = libc::SIGEV_THREAD_ID;
            event.sigev_signo = signal;
            event.sigev_notify_thread_id = libc::gettid();
            let mut timer: libc::timer_t = std::ptr::null_mut();
            assert_eq!(
                libc::timer_create(libc::CLOCK_THREAD_CPUTIME_ID, &mut event, &mut timer),
                0
            );
            let spec = |ns: i64| libc::timespec {
                tv_sec: ns / 1_000_000_000,
                tv_nsec: ns % 1_000_000_000,
            };
            let times = libc::itimerspec {
                it_interval: spec(interval_ns),
                it_value: spec(first_ns),
            };
            assert_eq!(
                libc::timer_settime(timer, 0, &times, std::ptr::null_mut()),
                0
            );
            CpuTimer(timer)
        }
    }
}

impl Drop for CpuTimer {
    fn drop(&mut self) {
        unsafe { libc::timer_delete(self.0) };
    }
}

/// One symbolized sample.
struct Stack {
    status: UnwindStatus,
    depth: usize,
    ns: u64,
    warm_ns: u64,
    pcs: Vec<u64>,
    frames: Vec<Frame>,
}

impl Stack {
    fn position(&self, wanted: impl Fn(&Frame) -> bool) -> Option<usize> {
        self.frames.iter().position(wanted)
    }

    fn count(&self, symbol: &str) -> usize {
        self.frames.iter().filter(|frame| frame.is(symbol)).count()
    }
}

impl std::fmt::Display for Stack {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        writeln!(f, "status {:?} depth {}", self.status, self.depth)?;
        for (pc, frame) in self.pcs.iter().zip(&self.frames) {
            writeln!(f, "  {pc:#014x} {} in {}", frame.symbol, frame.object)?;
        }
        Ok(())
    }
}

/// Run `work` (again and again until `wanted` samples were taken, for 10 s at most) with
/// SIGPROF sampling every `interval_ns` of thread CPU time, each sample unwound into at most
/// `frame_limit` frames.
fn profile(interval_ns: i64, frame_limit: usize, wanted: usize, work: impl Fn()) -> Vec<Stack> {
    static HANDLER: OnceLock<()> = OnceLock::new();
    HANDLER.get_or_init(|| install_handler(libc::SIGPROF, on_sigprof as *const () as usize));
    TAKEN.store(0, Ordering::Relaxed);
    FRAME_LIMIT.store(frame_limit, Ordering::Relaxed);
    SAMPLING.store(true, Ordering::Release);
    let timer = CpuTimer::start(libc::SIGPROF, interval_ns, interval_ns);
    let deadline = now_ns() + 10_000_000_000;
    while TAKEN.load(Ordering::Relaxed) < wanted && now_ns() < deadline {
        work();
    }
    drop(timer);
    SAMPLING.store(false, Ordering::Release);
    let taken = TAKEN.load(Ordering::Relaxed).min(MAX_SAMPLES);
    let samples = unsafe { &*SAMPLES.0.get() };
    samples[..taken].iter().map(symbolize).collect()
}

fn symbolize(sample: &Sample) -> Stack {
    let symbols = symbolizer();
    let pcs = sample.pcs[..sample.depth].to_vec();
    let frames = pcs
        .iter()
        .enumerate()
        // Return addresses: the call is the byte before.
        .map(|(index, &pc)| symbols.frame(if index == 0 { pc } else { pc - 1 }))
        .collect();
    Stack {
        status: sample.status,
        depth: sample.depth,
        ns: sample.ns,
        warm_ns: sample.warm_ns,
        pcs,
        frames,
    }
}

// ---------------------------------------------------------------- symbolizing

struct Frame {
    object: String,
    symbol: String,
}

impl Frame {
    fn is(&self, symbol: &str) -> bool {
        self.symbol == symbol
    }

    fn in_libc(&self) -> bool {
        self.object.contains("libc.so")
    }

    fn in_rust(&self, function: &str) -> bool {
        self.object == "<test executable>" && self.symbol.contains(function)
    }
}

/// dladdr for shared objects (their dynamic symbols), the executable's own symbol table
/// for the Rust test code (a Rust executable exports no dynamic symbols).
struct Symbolizer {
    exe_base: u64,
    exe_symbols: Vec<(u64, u64, String)>,
}

fn symbolizer() -> &'static Symbolizer {
    static SYMBOLIZER: OnceLock<Symbolizer> = OnceLock::new();
    SYMBOLIZER.get_or_init(|| {
        let data = std::fs::read("/proc/self/exe").expect("read /proc/self/exe");
        let file = object::File::parse(&*data).expect("parse the test executable");
        let mut exe_symbols: Vec<(u64, u64, String)> = file
            .symbols()
            .filter(|symbol| symbol.kind() == object::SymbolKind::Text && symbol.size() > 0)
            .filter_map(|symbol| {
                let name = symbol.name().ok()?.to_string();
                Some((symbol.address(), symbol.address() + symbol.size(), name))
            })
            .collect();
        exe_symbols.sort();
        let exe_base = dladdr(now_ns as *const () as usize as u64)
            .expect("dladdr of test code")
            .1;
        Symbolizer {
            exe_base,
            exe_symbols,
        }
    })
}

/// (object path, object base, symbol name) of `address`.
fn dladdr(address: u64) -> Option<(String, u64, Option<String>)> {
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    if unsafe { libc::dladdr(address as *const c_void, &mut info) } == 0 {
        return None;
    }
    let text = |name: *const libc::c_char| {
        (!name.is_null()).then(|| {
            unsafe { CStr::from_ptr(name) }
                .to_string_lossy()
                .into_owned()
        })
    };
    Some((
        text(info.dli_fname).unwrap_or_default(),
        info.dli_fbase as u64,
        text(info.dli_sname),
    ))
}

impl Symbolizer {
    fn frame(&self, address: u64) -> Frame {
        let Some((object, base, symbol)) = dladdr(address) else {
            return Frame {
                object: "?".into(),
                symbol: "?".into(),
            };
        };
        if base == self.exe_base {
            let offset = address - base;
            let after = self
                .exe_symbols
                .partition_point(|&(start, _, _)| start <= offset);
            let symbol = after
                .checked_sub(1)
                .and_then(|index| self.exe_symbols.get(index))
                .filter(|&&(_, end, _)| offset < end)
                .map_or("?".to_string(), |(_, _, name)| name.clone());
            return Frame {
                object: "<test executable>".into(),
                symbol,
            };
        }
        Frame {
            object,
            symbol: symbol.unwrap_or_else(|| "?".into()),
        }
    }
}

// ---------------------------------------------------------------- the C target

type SortOuter = extern "C" fn(libc::c_int, libc::c_int) -> libc::c_long;
type InstallUsr1 = extern "C" fn(libc::c_long) -> libc::c_int;
type SpinUntilUsr1 = extern "C" fn() -> libc::c_long;
type Recurse = extern "C" fn(libc::c_int, libc::c_long) -> libc::c_long;

struct Target {
    sort_outer: SortOuter,
    install_usr1: InstallUsr1,
    spin_until_usr1: SpinUntilUsr1,
    recurse: Recurse,
}

/// Build tests/c/unwind_target.c, dlopen it, prepare the unwind tables.
fn target() -> &'static Target {
    static TARGET: OnceLock<Target> = OnceLock::new();
    TARGET.get_or_init(|| {
        let source = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/c/unwind_target.c");
        // Under the target directory, not /tmp (nothing left behind there);
        // built under this process's name and renamed, so that a
        // concurrent run never dlopens a half-written file.
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
        let library = dir.join("libunwind_target.so");
        let building = dir.join(format!("libunwind_target.so.{}", std::process::id()));
        let status = Command::new("gcc")
            .args(["-O2", "-fomit-frame-pointer", "-shared", "-fPIC", "-o"])
            .arg(&building)
            .arg(&source)
            .status()
            .expect("gcc must be installed");
        assert!(status.success(), "gcc failed");
        std::fs::rename(&building, &library).expect("rename the built library");
        let path = CString::new(library.to_str().unwrap()).unwrap();
        let handle = unsafe { libc::dlopen(path.as_ptr(), libc::RTLD_NOW) };
        assert!(!handle.is_null(), "dlopen {library:?}");
        let symbol = |name: &str| {
            let name = CString::new(name).unwrap();
            let address = unsafe { libc::dlsym(handle, name.as_ptr()) };
            assert!(!address.is_null(), "dlsym {name:?}");
            address
        };
        // The SIGPROF handler first, so the restorer glibc installs with it is known.
        install_handler(libc::SIGPROF, on_sigprof as *const () as usize);
        let summary = refresh_tables().expect("refresh_tables");
        assert!(summary.objects >= 3 && summary.rows > 1000, "{summary:?}");
        println!("tables: {summary:?}");
        assert!(
            summary.without_cfi.is_empty(),
            "objects without CFI: {:?}",
            summary.without_cfi
        );
        assert!(
            signal_restorer().is_some(),
            "the signal restorer was not found"
        );
        unsafe {
            Target {
                sort_outer: std::mem::transmute::<*mut c_void, SortOuter>(symbol(
                    "unwind_sort_outer",
                )),
                install_usr1: std::mem::transmute::<*mut c_void, InstallUsr1>(symbol(
                    "unwind_install_usr1",
                )),
                spin_until_usr1: std::mem::transmute::<*mut c_void, SpinUntilUsr1>(symbol(
                    "unwind_spin_until_usr1",
                )),
                recurse: std::mem::transmute::<*mut c_void, Recurse>(symbol("unwind_recurse")),
            }
        }
    })
}

/// One test at a time: the SIGPROF handler and the sample buffer are process-wide.
fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

// ---------------------------------------------------------------- the tests

#[inline(never)]
fn unwind_test_sort_from_rust(target: &Target) {
    std::hint::black_box((target.sort_outer)(std::hint::black_box(2000), 2));
}

#[test]
fn qsort_stacks_go_through_libc_up_to_the_thread_start() {
    let _serial = serial();
    let target = target();
    let stacks = profile(1_000_000, MAX_FRAMES, 100, || {
        unwind_test_sort_from_rust(target)
    });
    assert!(stacks.len() >= 20, "only {} samples", stacks.len());
    let mut under_qsort = 0;
    for stack in &stacks {
        assert_eq!(stack.status, UnwindStatus::Complete, "{stack}");
        // A tick delivered just after the closure returned (before the
        // timer is stopped) is outside the code under test: it must not
        // show the C library either, and it proves nothing else.
        let Some(rust) = stack.position(|frame| frame.in_rust("unwind_test_sort_from_rust")) else {
            assert!(
                stack
                    .position(|frame| frame.is("unwind_sort_outer"))
                    .is_none(),
                "the Rust caller is missing:\n{stack}"
            );
            continue;
        };
        let outer = stack
            .position(|frame| frame.is("unwind_sort_outer"))
            .unwrap_or_else(|| panic!("unwind_sort_outer is missing:\n{stack}"));
        assert_eq!(outer + 1, rust, "{stack}");
        let Some(compare) = stack.position(|frame| frame.is("unwind_compare_ints")) else {
            continue;
        };
        // comparator (or libc below it) <- libc's qsort machinery <- unwind_sort_outer
        if under_qsort == 0 {
            println!("a sample under qsort:\n{stack}");
        }
        under_qsort += 1;
        assert!(stack.frames[..compare].iter().all(Frame::in_libc) || compare == 0);
        assert!(compare + 1 < outer, "{stack}");
        assert!(
            stack.frames[compare + 1..outer].iter().all(Frame::in_libc),
            "{stack}"
        );
        assert!(
            stack.frames[compare + 1..outer]
                .iter()
                .any(|frame| frame.symbol.contains("qsort")),
            "{stack}"
        );
    }
    assert!(
        under_qsort * 2 > stacks.len(),
        "{under_qsort} of {} samples under the comparator",
        stacks.len()
    );
}

#[inline(never)]
fn unwind_test_wait_usr1_from_rust(target: &Target) {
    std::hint::black_box((target.spin_until_usr1)());
}

#[test]
fn signal_frames_lead_to_the_interrupted_function() {
    let _serial = serial();
    let target = target();
    let restorer = signal_restorer().expect("restorer");
    let stacks = profile(1_000_000, MAX_FRAMES, 100, || {
        assert_eq!((target.install_usr1)(50_000_000), 0);
        let _usr1 = CpuTimer::start(libc::SIGUSR1, 5_000_000, 0);
        unwind_test_wait_usr1_from_rust(target);
    });
    let in_handler: Vec<&Stack> = stacks
        .iter()
        .filter(|stack| {
            stack
                .frames
                .first()
                .is_some_and(|frame| frame.is("unwind_usr1_handler"))
        })
        .collect();
    assert!(
        in_handler.len() >= 5,
        "{} samples in the handler",
        in_handler.len()
    );
    println!("a sample in the SIGUSR1 handler:\n{}", in_handler[0]);
    for stack in in_handler {
        assert_eq!(stack.status, UnwindStatus::Complete, "{stack}");
        assert_eq!(stack.pcs[1], restorer, "{stack}");
        // The interrupted pc is exact: symbolize it as is.
        let interrupted = symbolizer().frame(stack.pcs[2]);
        assert!(interrupted.is("unwind_spin_until_usr1"), "{stack}");
        assert!(
            stack.frames[3].in_rust("unwind_test_wait_usr1_from_rust"),
            "{stack}"
        );
    }
}

#[test]
fn deep_stacks_are_truncated_at_the_limit_and_complete_below_it() {
    let _serial = serial();
    let target = target();
    let recurse = || {
        std::hint::black_box((target.recurse)(300, 100_000_000));
    };
    let truncated = profile(1_000_000, 256, 50, recurse);
    let deep: Vec<&Stack> = truncated
        .iter()
        .filter(|stack| stack.frames[0].is("unwind_recurse"))
        .collect();
    assert!(deep.len() >= 10, "{} samples", deep.len());
    for stack in deep {
        assert_eq!(stack.status, UnwindStatus::Truncated, "{stack}");
        assert_eq!(stack.depth, 256);
        assert_eq!(stack.count("unwind_recurse"), 256);
    }
    let complete = profile(1_000_000, 1024, 50, recurse);
    let leaf_samples: Vec<&Stack> = complete
        .iter()
        .filter(|stack| stack.count("unwind_recurse") == 300)
        .collect();
    assert!(
        leaf_samples.len() >= 10,
        "{} samples at full depth",
        leaf_samples.len()
    );
    for stack in &complete {
        assert_eq!(stack.status, UnwindStatus::Complete, "{stack}");
    }
}

#[test]
fn code_without_cfi_fails_the_unwind_without_guessing() {
    let _serial = serial();
    target();
    // mov rcx, rdi; 1: dec rcx; jnz 1b; ret
    let code: [u8; 9] = [0x48, 0x89, 0xf9, 0x48, 0xff, 0xc9, 0x75, 0xfb, 0xc3];
    let page = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            4096,
            libc::PROT_READ | libc::PROT_WRITE | libc::PROT_EXEC,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    assert_ne!(page, libc::MAP_FAILED);
    unsafe { std::ptr::copy_nonoverlapping(code.as_ptr(), page.cast::<u8>(), code.len()) };
    let spin: extern "C" fn(u64) = unsafe { std::mem::transmute(page) };
    let stacks = profile(1_000_000, MAX_FRAMES, 50, || {
        spin(std::hint::black_box(100_000_000))
    });
    let page = page as u64;
    let inside: Vec<&Stack> = stacks
        .iter()
        .filter(|stack| (page..page + 4096).contains(&stack.pcs[0]))
        .collect();
    assert!(inside.len() >= 5, "{} samples in the page", inside.len());
    for stack in inside {
        assert_eq!(stack.status, UnwindStatus::Failed, "{stack}");
        assert_eq!(stack.depth, 1, "{stack}");
    }
}

/// `cargo test --release -p collector --test unwind -- --ignored --nocapture`
#[test]
#[ignore]
fn unwind_cost() {
    let _serial = serial();
    let target = target();
    REPEAT_WARM.store(true, Ordering::Relaxed);
    let stacks = profile(1_000_000, 256, 400, || {
        std::hint::black_box((target.recurse)(25, 100_000_000));
    });
    REPEAT_WARM.store(false, Ordering::Relaxed);
    let samples: Vec<&Stack> = stacks
        .iter()
        .filter(|stack| {
            stack.status == UnwindStatus::Complete && stack.frames[0].is("unwind_recurse")
        })
        .collect();
    assert!(samples.len() >= 50, "{} samples", samples.len());
    let median = |mut values: Vec<u64>| {
        values.sort();
        values[values.len() / 2]
    };
    println!(
        "{} samples of {} frames: median {} ns as sampled (cold caches), {} ns warm; \
         first sample (reads /proc/self/maps) {} ns",
        samples.len(),
        samples[0].depth,
        median(samples.iter().map(|stack| stack.ns).collect()),
        median(samples.iter().map(|stack| stack.warm_ns).collect()),
        samples[0].ns,
    );
}

#[inline(never)]
fn unwind_test_read_clock_in_a_loop() {
    for _ in 0..100_000 {
        std::hint::black_box(now_ns());
    }
}

#[test]
fn vdso_frames_unwind_with_the_vdso_cfi() {
    let _serial = serial();
    target();
    let stacks = profile(1_000_000, MAX_FRAMES, 100, unwind_test_read_clock_in_a_loop);
    let in_vdso: Vec<&Stack> = stacks
        .iter()
        .filter(|stack| stack.frames[0].object.contains("vdso"))
        .collect();
    assert!(in_vdso.len() >= 5, "{} samples in the vdso", in_vdso.len());
    for stack in in_vdso {
        assert_eq!(stack.status, UnwindStatus::Complete, "{stack}");
        assert!(
            stack
                .position(|frame| frame.in_rust("unwind_test_read_clock_in_a_loop"))
                .is_some(),
            "{stack}"
        );
    }
}

#[test]
fn the_main_thread_unwinds_down_to_start() {
    let _serial = serial();
    target();
    // The main thread waits in libtest for this test to end: interrupt it there.
    TAKEN.store(0, Ordering::Relaxed);
    FRAME_LIMIT.store(MAX_FRAMES, Ordering::Relaxed);
    SAMPLING.store(true, Ordering::Release);
    let pid = std::process::id() as libc::c_long;
    let sent = unsafe { libc::syscall(libc::SYS_tgkill, pid, pid, libc::SIGPROF) };
    assert_eq!(sent, 0);
    let deadline = now_ns() + 5_000_000_000;
    while TAKEN.load(Ordering::Relaxed) == 0 && now_ns() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    SAMPLING.store(false, Ordering::Release);
    assert_eq!(
        TAKEN.load(Ordering::Relaxed),
        1,
        "the main thread took no sample"
    );
    let stack = symbolize(unsafe { &(*SAMPLES.0.get())[0] });
    println!("the main thread:\n{stack}");
    assert_eq!(stack.status, UnwindStatus::Complete, "{stack}");
    assert!(
        stack.position(|frame| frame.in_rust("main")).is_some(),
        "{stack}"
    );
    assert!(stack.frames.last().unwrap().in_rust("_start"), "{stack}");
}
