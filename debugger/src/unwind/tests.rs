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
    assert!(names.iter().filter(|n| *n == "rec").count() >= 4, "{names:?}");
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
    let signal = names.iter().position(|n| n == "<signal handler called>").expect("signal frame");
    assert_eq!(&names[..signal], ["deep", "handler"]);
    assert_eq!(frames[signal + 1].method, UnwindMethod::SignalContext);
    assert!(names[signal + 1..].iter().any(|n| n == "send_signal"), "{names:?}");
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
    let flags = ["-O0", "-fno-omit-frame-pointer", "-fno-asynchronous-unwind-tables", "-fno-unwind-tables"];
    let binary = compile("fp", FRAME_POINTERS, &flags);
    let (frames, objects) = our_backtrace(&binary);
    let names = names(&frames, &objects);
    assert_eq!(&names[..4], ["c", "b", "a", "main"], "{}", describe(&frames, &objects));
    assert_eq!(frames[1].method, UnwindMethod::FramePointer);
    let gdb = gdb_backtrace_pcs(&binary);
    let ours: Vec<u64> = frames.iter().map(|f| f.pc).collect();
    assert_eq!(ours, gdb);
}
