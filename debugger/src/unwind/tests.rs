use super::test_support::*;
use super::*;

/// Run `binary` to its int3 under our ptrace, unwind, and return the pcs
/// together with the frames.
fn our_backtrace(binary: &std::path::Path) -> (Vec<Frame>, MappedObjects) {
    let tracee = Tracee::spawn(binary);
    tracee.run_to_trap();
    let objects = tracee.objects();
    let frames = unwind(&objects, &tracee, tracee.registers(), 64);
    (frames, objects)
}

fn describe(frames: &[Frame], objects: &MappedObjects) -> String {
    frames
        .iter()
        .map(|f| {
            let name = symbol_name(objects, f.lookup_pc()).unwrap_or_default();
            format!("{:#x} {name} {:?} {:?}\n", f.pc, f.method, f.kind)
        })
        .collect()
}

/// Our pcs must be exactly gdb's, frame for frame, to the end of the stack.
fn assert_same_as_gdb(binary: &std::path::Path) -> (Vec<Frame>, MappedObjects) {
    let (frames, objects) = our_backtrace(binary);
    let ours: Vec<u64> = frames.iter().map(|f| f.pc).collect();
    let gdb = gdb_backtrace_pcs(binary);
    assert_eq!(
        ours,
        gdb,
        "ours:\n{}gdb: {:x?}",
        describe(&frames, &objects),
        gdb
    );
    (frames, objects)
}

fn names(frames: &[Frame], objects: &MappedObjects) -> Vec<String> {
    frames
        .iter()
        .map(|f| match f.kind {
            FrameKind::SignalHandlerCaller => "<signal handler called>".to_string(),
            FrameKind::Normal => symbol_name(objects, f.lookup_pc()).unwrap_or_default(),
        })
        .collect()
}

const RECURSION: &str = r#"
volatile int sink;
__attribute__((noinline)) int leaf(int n) { __asm__ volatile("int3"); sink = n; return n + 1; }
__attribute__((noinline)) int rec(int n) {
    int local[4]; local[n & 3] = n; sink = local[sink & 3];
    if (n == 0) return leaf(sink);
    int r = rec(n - 1);
    return r * 3 + local[n & 3] + sink;
}
int main(void) { return rec(5) == 7; }
"#;

#[test]
fn recursion_without_frame_pointers_matches_gdb() {
    let binary = compile("rec", RECURSION, &["-O2", "-fomit-frame-pointer"]);
    let (frames, objects) = assert_same_as_gdb(&binary);
    let names = names(&frames, &objects);
    assert_eq!(names[0], "leaf");
    assert!(
        names.iter().filter(|n| *n == "rec").count() >= 4,
        "{names:?}"
    );
    assert!(names.iter().any(|n| n == "main"));
    assert_eq!(names.last().map(String::as_str), Some("_start"));
    assert!(frames[1..].iter().all(|f| f.method == UnwindMethod::Cfi));
}

const SIGNAL: &str = r#"
#include <signal.h>
#include <unistd.h>
volatile int sink;
__attribute__((noinline)) void deep(int x) { __asm__ volatile("int3"); sink = x; }
void handler(int s) { deep(s); sink++; }
__attribute__((noinline)) void send_signal(void) { kill(getpid(), SIGUSR1); sink++; }
int main(void) {
    struct sigaction sa = {0};
    sa.sa_handler = handler;
    sigaction(SIGUSR1, &sa, 0);
    send_signal();
    return 0;
}
"#;

#[test]
fn through_signal_handler_matches_gdb() {
    let binary = compile("sig", SIGNAL, &["-O2", "-fomit-frame-pointer"]);
    let (frames, objects) = assert_same_as_gdb(&binary);
    let names = names(&frames, &objects);
    let signal = names
        .iter()
        .position(|n| n == "<signal handler called>")
        .expect("signal frame");
    assert_eq!(&names[..signal], ["deep", "handler"]);
    assert_eq!(frames[signal + 1].method, UnwindMethod::SignalContext);
    assert!(
        names[signal + 1..].iter().any(|n| n == "send_signal"),
        "{names:?}"
    );
}

const QSORT: &str = r#"
#include <stdlib.h>
volatile int calls;
int compare(const void *a, const void *b) {
    if (calls++ == 3) __asm__ volatile("int3");
    return *(const int *)a - *(const int *)b;
}
int main(void) {
    int v[9] = {5, 3, 8, 1, 9, 2, 7, 4, 6};
    qsort(v, 9, sizeof v[0], compare);
    return v[0];
}
"#;

#[test]
fn callback_from_libc_matches_gdb() {
    let binary = compile("qs", QSORT, &["-O2"]);
    let (frames, objects) = assert_same_as_gdb(&binary);
    let names = names(&frames, &objects);
    assert_eq!(names[0], "compare");
    assert!(names.iter().any(|n| n.contains("qsort")), "{names:?}");
}

const FRAME_POINTERS: &str = r#"
volatile int sink;
__attribute__((noinline)) void c(void) { __asm__ volatile("int3"); sink++; }
__attribute__((noinline)) void b(void) { c(); sink++; }
__attribute__((noinline)) void a(void) { b(); sink++; }
int main(void) { a(); return 0; }
"#;

#[test]
fn frame_pointers_without_cfi() {
    let flags = [
        "-O0",
        "-fno-omit-frame-pointer",
        "-fno-asynchronous-unwind-tables",
        "-fno-unwind-tables",
    ];
    let binary = compile("fp", FRAME_POINTERS, &flags);
    let (frames, objects) = our_backtrace(&binary);
    let names = names(&frames, &objects);
    assert_eq!(
        &names[..4],
        ["c", "b", "a", "main"],
        "{}",
        describe(&frames, &objects)
    );
    assert_eq!(frames[1].method, UnwindMethod::FramePointer);
    let gdb = gdb_backtrace_pcs(&binary);
    let ours: Vec<u64> = frames.iter().map(|f| f.pc).collect();
    assert_eq!(ours, gdb);
}

const LAZY_CALL: &str = r#"
#include <stdio.h>
int main(void) {
    __asm__ volatile("int3");
    puts("hello from the test program");
    __asm__ volatile("int3");
    return 0;
}
"#;

/// Single-step from main through the PLT, the lazy-binding resolver in
/// ld.so and puts, unwinding at every instruction: main must always be
/// found and the walk must reach _start's end-of-stack marker.
#[test]
fn every_instruction_of_a_lazy_plt_call_unwinds_to_main() {
    let binary = compile("lazy", LAZY_CALL, &["-O1", "-Wl,-z,lazy"]);
    let tracee = Tracee::spawn(&binary);
    tracee.run_to_trap();
    let objects = tracee.objects();
    let main_pc = tracee.registers().pc().unwrap();
    let main_mapping = objects.mapping_for(main_pc).unwrap().path.clone();
    let mut steps = 0;
    let mut failures = Vec::new();
    let mut visited_plt = false;
    let mut left_main = false;
    while tracee.single_step() {
        steps += 1;
        let regs = tracee.registers();
        let pc = regs.pc().unwrap();
        let Some(mapping) = objects.mapping_for(pc) else {
            continue;
        };
        left_main |= mapping.path != main_mapping;
        if mapping.path == main_mapping {
            let name = symbol_name(&objects, pc).unwrap_or_default();
            if name == "main" {
                if left_main {
                    break;
                }
                continue;
            }
            left_main = true;
            visited_plt |= name.is_empty() || name.contains("plt");
        }
        let frames = unwind(&objects, &tracee, regs, 64);
        let names = names(&frames, &objects);
        let reached_main = names.iter().any(|n| n == "main");
        let reached_start = names.last().is_some_and(|n| n == "_start");
        if !reached_main || !reached_start {
            failures.push(format!("step {steps} {}", describe(&frames, &objects)));
        }
        assert!(steps < 200_000, "never returned to main");
    }
    assert!(steps > 100, "only {steps} steps");
    assert!(visited_plt);
    assert!(
        failures.is_empty(),
        "{} of {steps} stops failed, first:\n{}",
        failures.len(),
        failures[0]
    );
}

/// Memory made of a few words; everything else is unreadable.
struct FakeMemory(Vec<(u64, u64)>);

impl UnwindMemory for FakeMemory {
    fn read_u64(&self, addr: u64) -> Option<u64> {
        self.0.iter().find(|(a, _)| *a == addr).map(|(_, v)| *v)
    }
}

struct NoObjects;

impl ObjectLookup for NoObjects {
    fn cfi_for(&self, _pc: u64) -> Option<(&CfiTable, u64)> {
        None
    }
}

fn regs(pc: u64, sp: u64, bp: u64) -> UnwindRegs {
    let mut regs = UnwindRegs::default();
    regs.set(RIP, Some(pc));
    regs.set(RSP, Some(sp));
    regs.set(RBP, Some(bp));
    regs
}

#[test]
fn a_frame_pointer_cycle_stops() {
    // rbp points at itself: saved rbp == rbp, return address 0x1234.
    let memory = FakeMemory(vec![(0x7000, 0x7000), (0x7008, 0x1234)]);
    let frames = unwind(&NoObjects, &memory, regs(0x1000, 0x6ff0, 0x7000), 1000);
    assert_eq!(frames.len(), 2, "{frames:?}");
    assert_eq!(frames[0].cfa, Some(0x7010));
}

#[test]
fn a_descending_frame_pointer_chain_stops() {
    // Each saved rbp lies below the current one: not a caller frame.
    let memory = FakeMemory(vec![
        (0x7000, 0x6000),
        (0x7008, 0x1234),
        (0x6000, 0x7000),
        (0x6008, 0x1234),
    ]);
    let frames = unwind(&NoObjects, &memory, regs(0x1000, 0x6ff0, 0x7000), 1000);
    assert_eq!(frames.len(), 2);
}

#[test]
fn zero_unreadable_and_limits_stop() {
    let memory = FakeMemory(vec![(0x7000, 0x8000), (0x7008, 0)]);
    assert_eq!(
        unwind(&NoObjects, &memory, regs(0x1000, 0x6ff0, 0x7000), 10).len(),
        1
    );
    assert_eq!(
        unwind(&NoObjects, &memory, regs(0x1000, 0x6ff0, 0x7003), 10).len(),
        1
    );
    assert_eq!(
        unwind(
            &NoObjects,
            &FakeMemory(vec![]),
            regs(0x1000, 0x6ff0, 0x7000),
            10
        )
        .len(),
        1
    );
    assert!(unwind(&NoObjects, &memory, regs(0x1000, 0x6ff0, 0x7000), 0).is_empty());
    assert!(unwind(&NoObjects, &memory, UnwindRegs::default(), 10).is_empty());
    // A long, valid chain is cut at max_frames.
    let chain: Vec<(u64, u64)> = (0..100u64)
        .flat_map(|i| {
            [
                (0x7000 + 16 * i, 0x7000 + 16 * (i + 1)),
                (0x7008 + 16 * i, 0x1000 + i),
            ]
        })
        .collect();
    assert_eq!(
        unwind(
            &NoObjects,
            &FakeMemory(chain),
            regs(0x1000, 0x6ff0, 0x7000),
            10
        )
        .len(),
        10
    );
}

/// Without unwind tables gcc -g puts the CFI only in .debug_frame; move it
/// to a separate debug file and unwind with that.
#[test]
fn debug_frame_from_a_separate_debug_file_matches_gdb() {
    let flags = [
        "-O2",
        "-g",
        "-fomit-frame-pointer",
        "-fno-asynchronous-unwind-tables",
        "-fno-unwind-tables",
    ];
    let binary = compile("dframe", RECURSION, &flags);
    let gdb = gdb_backtrace_pcs(&binary);
    let debug_path = binary.with_extension("debug");
    let run = |args: &[&std::ffi::OsStr]| {
        assert!(std::process::Command::new("objcopy")
            .args(args)
            .status()
            .unwrap()
            .success())
    };
    run(&[
        "--only-keep-debug".as_ref(),
        binary.as_os_str(),
        debug_path.as_os_str(),
    ]);
    run(&["--strip-debug".as_ref(), binary.as_os_str()]);
    let debug: &'static [u8] = Box::leak(std::fs::read(&debug_path).unwrap().into_boxed_slice());

    let tracee = Tracee::spawn(&binary);
    tracee.run_to_trap();
    let objects = tracee.objects_with_debug(&|path| (path == binary).then_some(debug));
    let frames = unwind(&objects, &tracee, tracee.registers(), 64);
    let ours: Vec<u64> = frames.iter().map(|f| f.pc).collect();
    assert_eq!(ours, gdb, "{}", describe(&frames, &objects));

    // Proof that the frames came from .debug_frame: without it we fail.
    let bare = tracee.objects();
    let frames = unwind(&bare, &tracee, tracee.registers(), 64);
    assert_ne!(frames.iter().map(|f| f.pc).collect::<Vec<_>>(), gdb);
}

/// A leaf's CFI row at its first instruction: CFA = rsp + 8, return address
/// at CFA - 8, nothing else said.
fn leaf_entry_recipe() -> super::cfi::FrameRecipe {
    super::cfi::FrameRecipe {
        cfa: super::cfi::CfaRecipe::RegisterOffset {
            register: RSP as u16,
            offset: 8,
        },
        registers: vec![(RIP as u16, super::cfi::RegisterRecipe::AtCfaOffset(-8))],
        return_address_register: RIP as u16,
        encoding: gimli::Encoding {
            address_size: 8,
            format: gimli::Format::Dwarf32,
            version: 4,
        },
    }
}

#[test]
fn registers_the_cfi_leaves_unspecified_keep_their_value_in_the_caller() {
    let sp = 0x7000;
    let memory = FakeMemory(vec![(sp, 0x4010)]);
    let mut callee = regs(0x5000, sp, 0x9999);
    callee.set(5, Some(97)); // rdi: caller-saved, but the callee left it alone
    callee.set(3, Some(42)); // rbx: callee-saved
    let step = super::cfi_step(&memory, &callee, &leaf_entry_recipe()).expect("a step");
    let caller = step.caller.expect("a caller");
    assert_eq!(step.cfa, sp + 8);
    assert_eq!(caller.pc(), Some(0x4010));
    assert_eq!(caller.sp(), Some(sp + 8));
    assert_eq!(caller.get(5), Some(97));
    assert_eq!(caller.get(3), Some(42));
    assert_eq!(caller.get(RBP), Some(0x9999));
}
