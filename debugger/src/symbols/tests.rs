//! Tests against real binaries built with gcc, with gdb as the reference.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::*;

const PROGRAM: &str = r#"#include <stdio.h>
#include <string.h>

struct point { int x; int y; };
enum color { RED, GREEN, BLUE };
static int counter = 5;
int global_total;

static inline int square(int v)
{
    return v * v;
}

static int add(int a, int b)
{
    int sum = a + b;
    return sum;
}

int compute(int n)
{
    int total = 0;
    for (int i = 0; i < n; i++) {
        total += square(i);
    }

    return total + add(n, counter);
}

int main(int argc, char **argv)
{
    struct point p = {1, 2};
    enum color c = GREEN;
    const char *msg = "hello";
    global_total = compute(argc + 3);
    printf("%s %d %d %d\n", msg, p.x, c, global_total);
    return 0;
}
"#;

/// A second file with a static function of the same name as in PROGRAM's
/// companion, to check functions found in several CUs.
const OTHER: &str = r#"static int helper(int x)
{
    return x * 3;
}

int other(int y)
{
    return helper(y) + 1;
}
"#;

const HELPER_MAIN: &str = r#"static int helper(int x)
{
    return x + 7;
}

int other(int y);

int main(void)
{
    return helper(other(2));
}
"#;

/// The tests compare with real tools; `.ci/run` installs them. A missing
/// tool fails the test rather than letting it pass unchecked.
fn require_tools(tools: &[&str]) {
    for tool in tools {
        let found = Command::new(tool)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        assert!(found, "this test needs `{tool}` (bash .ci/run installs it)");
    }
}

/// Runs `program` under gdb to `location`, writes a core file there and
/// prints `names`; returns the core's path and gdb's value for each name.
fn gdb_core_values(
    dir: &Path,
    program: &Path,
    location: &str,
    names: &[&str],
) -> (PathBuf, Vec<String>) {
    let core = dir.join("core");
    let mut cmd = Command::new("gdb");
    cmd.args([
        "-batch",
        "-nx",
        "-ex",
        &format!("break {location}"),
        "-ex",
        "run",
    ]);
    cmd.args(["-ex", &format!("gcore {}", core.display())]);
    for name in names {
        cmd.args(["-ex", &format!("print {name}")]);
    }
    let output = cmd.arg(program).output().expect("run gdb");
    let text = String::from_utf8_lossy(&output.stdout);
    let printed: Vec<String> = text
        .lines()
        .filter(|l| l.starts_with('$'))
        .filter_map(|l| l.split_once(" = ").map(|(_, v)| v.to_string()))
        .collect();
    assert!(
        core.exists() && printed.len() == names.len(),
        "gdb did not stop at {location} and print every value: {text}"
    );
    (core, printed)
}

/// A fresh directory for one test's binaries.
fn scratch(name: &str) -> PathBuf {
    let dir = crate::unwind::test_support::scratch_dir(&format!("symbols-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create scratch dir");
    dir
}

/// Compile `sources` (name, text) in `dir` with `flags`; returns the
/// program path. Compiles from inside `dir` so DWARF names are relative.
fn build(dir: &Path, out: &str, sources: &[(&str, &str)], flags: &[&str]) -> PathBuf {
    for (name, text) in sources {
        std::fs::write(dir.join(name), text).expect("write source");
    }
    let status = Command::new("gcc")
        .current_dir(dir)
        .args(flags)
        .args(["-o", out])
        .args(sources.iter().map(|(n, _)| *n))
        .status()
        .expect("run gcc");
    assert!(status.success(), "gcc failed");
    dir.join(out)
}

/// What gdb says for `break SPEC`: one (address, file, line) per location.
#[derive(Debug, Clone, PartialEq)]
struct GdbBreak {
    addresses: Vec<u64>,
    /// (address, line) of each location of a multi-location breakpoint.
    located: Vec<(u64, u32)>,
    file: Option<String>,
    line: Option<u32>,
}

fn gdb_breaks(program: &Path, specs: &[&str]) -> Vec<Option<GdbBreak>> {
    // stderr merged into stdout, to keep gdb's answers in order.
    let mut cmd = Command::new("sh");
    cmd.args(["-c", "exec gdb \"$@\" 2>&1", "sh", "-batch", "-nx"]);
    for spec in specs {
        cmd.args(["-ex", &format!("break {spec}")]);
    }
    cmd.args(["-ex", "info breakpoints"]).arg(program);
    let output = cmd.output().expect("run gdb");
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    let mut results = vec![None; specs.len()];
    // gdb numbers only the breakpoints it could set; map numbers to specs
    // by the order of its answers.
    let mut cursor = 0;
    let mut spec_of_number = std::collections::HashMap::new();
    for line in text.lines() {
        if line.contains("not defined")
            || line.starts_with("No line")
            || line.starts_with("No source")
        {
            cursor += 1;
            continue;
        }
        // "Breakpoint 1 at 0x11be: file t.c, line 32."
        if let Some(rest) = line.strip_prefix("Breakpoint ") {
            let mut parts = rest.splitn(2, " at 0x");
            let number: usize = parts.next().and_then(|n| n.parse().ok()).unwrap_or(0);
            let Some(rest) = parts.next() else { continue };
            let address = u64::from_str_radix(rest.split(':').next().unwrap_or(""), 16).ok();
            let (file, line_no) = match rest.split_once(": file ") {
                Some((_, fl)) => {
                    let (f, l) = fl.split_once(", line ").unwrap_or((fl, ""));
                    (Some(f.to_string()), l.trim_end_matches('.').parse().ok())
                }
                None => (None, None),
            };
            spec_of_number.insert(number, cursor);
            cursor += 1;
            if let Some(slot) = results.get_mut(cursor - 1) {
                *slot = Some(GdbBreak {
                    located: Vec::new(),
                    addresses: address.into_iter().collect(),
                    file,
                    line: line_no,
                });
            }
        }
    }
    // Multi-location breakpoints: "1.2   y   0x0000000000001190 in compute at t.c:23"
    for line in text.lines() {
        let trimmed = line.trim_start();
        let Some((id, rest)) = trimmed.split_once(' ') else {
            continue;
        };
        let Some((number, _)) = id.split_once('.') else {
            continue;
        };
        let Ok(number) = number.parse::<usize>() else {
            continue;
        };
        let Some(hex) = rest.split_whitespace().find(|w| w.starts_with("0x")) else {
            continue;
        };
        let Ok(address) = u64::from_str_radix(&hex[2..], 16) else {
            continue;
        };
        let Some(&index) = spec_of_number.get(&number) else {
            continue;
        };
        if let Some(Some(b)) = results.get_mut(index) {
            if b.file.is_none() {
                b.addresses.retain(|_| false);
                b.file = Some(String::new());
            }
            b.addresses.push(address);
            if let Some(line) = rest.rsplit(':').next().and_then(|l| l.trim().parse().ok()) {
                b.located.push((address, line));
            }
        }
    }
    for b in results.iter_mut().flatten() {
        b.addresses.sort_unstable();
        b.addresses.dedup();
    }
    results
}

const VARIANTS: &[(&str, &[&str])] = &[
    ("o0_pie", &["-g", "-O0", "-fPIE", "-pie"]),
    ("o0_nopie", &["-g", "-O0", "-fno-pie", "-no-pie"]),
    ("o2_pie", &["-g", "-O2", "-fPIE", "-pie"]),
    ("o2_nopie", &["-g", "-O2", "-fno-pie", "-no-pie"]),
];

#[test]
fn breakpoint_addresses_match_gdb() {
    require_tools(&["gcc", "gdb"]);
    let dir = scratch("breaks");
    let functions = ["main", "compute", "add", "square"];
    for (name, flags) in VARIANTS {
        let program = build(&dir, name, &[("t.c", PROGRAM)], flags);
        let object = ObjectFile::open(&program).expect("open");
        let expected = gdb_breaks(&program, &functions);
        for (function, want) in functions.iter().zip(&expected) {
            let found = object.find_functions(function);
            let Some(want) = want else {
                assert!(
                    found.is_empty(),
                    "{name}: gdb has no {function}, we found {found:?}"
                );
                continue;
            };
            let mut ours: Vec<u64> = found.iter().map(|f| f.breakpoint_address).collect();
            ours.sort_unstable();
            assert_eq!(ours, want.addresses, "{name}: break {function}: {found:x?}");
            if want.addresses.len() > 1 {
                assert_eq!(want.located.len(), want.addresses.len(), "parsed {want:?}");
            }
            for (address, line) in &want.located {
                let f = found
                    .iter()
                    .find(|f| f.breakpoint_address == *address)
                    .unwrap();
                let ours = f.location.as_ref().map(|l| l.line);
                assert_eq!(
                    ours,
                    Some(*line),
                    "{name}: break {function} at {address:#x}"
                );
            }
            if let (Some(line), [single]) = (want.line, found.as_slice()) {
                let location = single.location.as_ref().expect("location");
                assert_eq!(location.line, line, "{name}: line of break {function}");
                assert_eq!(location.file, PathBuf::from("t.c"));
            }
        }
    }
}

#[test]
fn file_line_breakpoints_match_gdb() {
    require_tools(&["gcc", "gdb"]);
    let dir = scratch("lines");
    // 26 is blank, 21 is an opening brace, 23 a loop header.
    let lines = [21u32, 22, 23, 24, 26, 27, 32, 36];
    for (name, flags) in VARIANTS {
        let program = build(&dir, name, &[("t.c", PROGRAM)], flags);
        let object = ObjectFile::open(&program).expect("open");
        let specs: Vec<String> = lines.iter().map(|l| format!("t.c:{l}")).collect();
        let spec_refs: Vec<&str> = specs.iter().map(String::as_str).collect();
        let expected = gdb_breaks(&program, &spec_refs);
        for (line, want) in lines.iter().zip(&expected) {
            let want = want.as_ref().expect("gdb resolves every line");
            let got = object.lines_for("t.c", *line).expect("lines_for");
            assert_eq!(
                got.addresses, want.addresses,
                "{name}: t.c:{line}: {got:x?}"
            );
            if let Some(l) = want.line {
                assert_eq!(got.line, l, "{name}: line reported for t.c:{line}");
            }
            assert_eq!(got.file, PathBuf::from("t.c"));
        }
    }
}

#[test]
fn lines_for_reports_missing_files_and_lines() {
    require_tools(&["gcc"]);
    let dir = scratch("nolines");
    let program = build(&dir, "p", &[("t.c", PROGRAM)], &["-g", "-O0"]);
    let object = ObjectFile::open(&program).expect("open");
    assert!(matches!(
        object.lines_for("nosuch.c", 3),
        Err(Error::NoSuchFile(_))
    ));
    assert!(matches!(
        object.lines_for("t.c", 500),
        Err(Error::NoCodeAtLine { .. })
    ));
    // By full path and by a path suffix.
    let full = dir.join("t.c");
    assert!(object.lines_for(full.to_str().unwrap(), 32).is_ok());
    let suffix = format!("{}/t.c", dir.file_name().unwrap().to_string_lossy());
    assert!(object.lines_for(&suffix, 32).is_ok());
    assert!(object.source_files().contains(&PathBuf::from("t.c")));
}

#[test]
fn open_reports_clear_errors() {
    let missing = ObjectFile::open(Path::new("/nonexistent/prog"));
    assert!(matches!(missing, Err(Error::Io { .. })));
    let dir = scratch("errors");
    let text = dir.join("text");
    std::fs::write(&text, "hello").unwrap();
    assert!(matches!(ObjectFile::open(&text), Err(Error::NotElf { .. })));
}

#[test]
fn elf_facts_and_symbols() {
    require_tools(&["gcc"]);
    let dir = scratch("elf");
    let pie = build(
        &dir,
        "pie",
        &[("t.c", PROGRAM)],
        &["-g", "-O0", "-pie", "-fPIE"],
    );
    let exec = build(&dir, "exec", &[("t.c", PROGRAM)], &["-g", "-O0", "-no-pie"]);
    let pie = ObjectFile::open(&pie).unwrap();
    let exec = ObjectFile::open(&exec).unwrap();
    assert_eq!(pie.kind(), ObjectKind::Dynamic);
    assert_eq!(exec.kind(), ObjectKind::Executable);
    assert!(exec.segments().iter().any(|s| s.executable));
    assert!(pie.has_debug_info());
    assert!(pie.build_id().is_some_and(|id| id.len() >= 8));

    let main = pie.lookup_symbol("main");
    assert_eq!(main.len(), 1);
    let main = &main[0];
    assert!(main.is_function && main.size > 0);
    let inside = pie.symbol_at(main.address + 3).unwrap();
    assert_eq!(inside.name, "main");
    assert_eq!(
        pie.symbol_at(main.address + main.size - 1).unwrap().name,
        "main"
    );

    let global = pie.lookup_symbol("global_total");
    assert_eq!(global.len(), 1);
    assert!(!global[0].is_function);
    assert_eq!(
        pie.symbol_at(global[0].address).unwrap().name,
        "global_total"
    );

    // printf is called through the PLT.
    for object in [&pie, &exec] {
        let plt = object.lookup_symbol("printf@plt");
        assert_eq!(plt.len(), 1, "printf@plt in {:?}", object.path());
        let at = object.symbol_at(plt[0].address + 2).unwrap();
        assert_eq!(at.name, "printf@plt");
        let objdump = Command::new("objdump")
            .arg("-d")
            .arg(object.path())
            .output();
        if let Ok(out) = objdump {
            let text = String::from_utf8_lossy(&out.stdout);
            let needle = format!("{:x} <printf@plt>:", plt[0].address);
            assert!(text.contains(&needle), "objdump agrees on {needle}");
        }
    }
    assert!(pie.function_names().contains(&"compute".to_string()));
}

#[test]
fn locations_and_ranges() {
    require_tools(&["gcc"]);
    let dir = scratch("loc");
    let program = build(&dir, "p", &[("t.c", PROGRAM)], &["-g", "-O0"]);
    let object = ObjectFile::open(&program).unwrap();
    let compute = object.find_functions("compute").pop().unwrap();
    let loc = object.location_at(compute.breakpoint_address).unwrap();
    assert_eq!(loc.line, 22);
    assert_eq!(loc.file, PathBuf::from("t.c"));
    assert_eq!(loc.full_path, dir.join("t.c"));
    assert!(object.is_statement_start(compute.breakpoint_address));
    assert!(!object.is_statement_start(compute.breakpoint_address + 1));

    let range = object
        .line_range_at(compute.breakpoint_address + 1)
        .unwrap();
    assert_eq!(range.start, compute.breakpoint_address);
    assert!(range.end > range.start);
    assert_eq!(range.location.line, 22);
    let next = object.location_at(range.end).unwrap();
    assert_ne!(next.line, 22);

    let f = object.function_at(compute.low_pc + 5).unwrap();
    assert_eq!(f.name, "compute");
    assert_eq!(f.low_pc, compute.low_pc);
    assert!(object.function_at(compute.high_pc).map(|f| f.name) != Some("compute".into()));
}

/// gdb's `bt` at a breakpoint inside an inlined function at -O2.
#[test]
fn inline_frames_match_gdb_backtrace() {
    require_tools(&["gcc", "gdb"]);
    let dir = scratch("inline");
    let program = build(&dir, "p", &[("t.c", PROGRAM)], &["-g", "-O2"]);
    let object = ObjectFile::open(&program).unwrap();
    let output = Command::new("gdb")
        .args([
            "-batch",
            "-nx",
            "-ex",
            "break t.c:11",
            "-ex",
            "run",
            "-ex",
            "bt",
        ])
        .arg(&program)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    // "#0  square (v=0) at t.c:11" / "#1  compute (n=4) at t.c:24" / "#2  main (...) at t.c:35"
    let gdb_frames: Vec<(String, u32)> = text
        .lines()
        .filter(|l| l.starts_with('#'))
        .filter_map(|l| {
            let mut words = l.split_whitespace().skip(1);
            let mut function = words.next()?.to_string();
            if function.starts_with("0x") {
                words.next(); // "in"
                function = words.next()?.to_string();
            }
            let line = l.rsplit(':').next()?.trim().parse().ok()?;
            Some((function, line))
        })
        .collect();
    assert!(gdb_frames.len() >= 3, "gdb backtrace: {text}");
    let stop_pc = text
        .lines()
        .find_map(|l| l.strip_prefix("Breakpoint 1 at 0x"))
        .and_then(|r| u64::from_str_radix(r.split(':').next()?, 16).ok())
        .expect("breakpoint address");
    // PIE: gdb printed the file address before `run`.
    let frames = object.inline_frames_at(stop_pc);
    let ours: Vec<(String, u32)> = frames
        .iter()
        .map(|f| {
            (
                f.function.clone(),
                f.location.as_ref().map_or(0, |l| l.line),
            )
        })
        .collect();
    assert_eq!(ours, gdb_frames, "frames at {stop_pc:#x}: {frames:?}");
    assert!(frames[0].inlined && !frames.last().unwrap().inlined);
}

#[test]
fn static_functions_in_several_units() {
    require_tools(&["gcc", "gdb"]);
    let dir = scratch("statics");
    let program = build(
        &dir,
        "p",
        &[("a.c", HELPER_MAIN), ("b.c", OTHER)],
        &["-g", "-O0"],
    );
    let object = ObjectFile::open(&program).unwrap();
    let found = object.find_functions("helper");
    assert_eq!(found.len(), 2, "{found:?}");
    let want = gdb_breaks(&program, &["helper"]);
    let mut ours: Vec<u64> = found.iter().map(|f| f.breakpoint_address).collect();
    ours.sort_unstable();
    assert_eq!(ours, want[0].as_ref().unwrap().addresses);
}

#[test]
fn variables_in_scope() {
    require_tools(&["gcc"]);
    let dir = scratch("vars");
    let program = build(&dir, "p", &[("t.c", PROGRAM)], &["-g", "-O0"]);
    let object = ObjectFile::open(&program).unwrap();
    let compute = object.find_functions("compute").pop().unwrap();
    let params: Vec<String> = object
        .parameters_at(compute.breakpoint_address, 0)
        .iter()
        .map(|v| v.name().to_string())
        .collect();
    assert_eq!(params, ["n"]);
    // Inside the loop body both `i` (inner block) and `total` are visible.
    let in_loop = object.lines_for("t.c", 24).unwrap().addresses[0];
    let locals: Vec<String> = object
        .locals_at(in_loop)
        .iter()
        .map(|v| v.name().to_string())
        .collect();
    assert_eq!(locals, ["i", "total"]);
    let n = object.lookup_variable(Some(in_loop), "n").unwrap();
    assert!(n.is_parameter());
    assert_eq!(object.variable_type_name(&n), "int");
    let counter = object.lookup_variable(Some(in_loop), "counter").unwrap();
    assert!(counter.is_global());
    let total = object.lookup_variable(None, "global_total").unwrap();
    assert!(total.is_global());
    let main = object.find_functions("main").pop().unwrap();
    let argv = object
        .lookup_variable(Some(main.breakpoint_address), "argv")
        .unwrap();
    assert_eq!(object.variable_type_name(&argv), "char **");
    let msg = object
        .lookup_variable(Some(main.breakpoint_address), "msg")
        .unwrap();
    assert_eq!(object.variable_type_name(&msg), "const char *");
    let p = object
        .lookup_variable(Some(main.breakpoint_address), "p")
        .unwrap();
    assert_eq!(object.variable_type_name(&p), "struct point");
    assert!(object
        .lookup_variable(Some(main.breakpoint_address), "nosuch")
        .is_none());
}

/// A fake stopped frame over a snapshot of the file's data: memory reads
/// come from the ELF's segments, the stack from a buffer.
struct FakeFrame<'a> {
    object: &'a ObjectFile,
    stack_base: u64,
    stack: Vec<u8>,
    rip: u64,
}

impl FrameContext for FakeFrame<'_> {
    fn read_memory(&self, addr: u64, buf: &mut [u8]) -> Result<()> {
        if addr >= self.stack_base
            && addr + buf.len() as u64 <= self.stack_base + self.stack.len() as u64
        {
            let at = (addr - self.stack_base) as usize;
            buf.copy_from_slice(&self.stack[at..at + buf.len()]);
            return Ok(());
        }
        let bytes = self
            .object
            .code_bytes(addr, buf.len())
            .ok_or(Error::Memory(addr))?;
        if bytes.len() < buf.len() {
            return Err(Error::Memory(addr));
        }
        buf.copy_from_slice(bytes);
        Ok(())
    }
    fn register(&self, regno: u16) -> Option<u64> {
        match regno {
            16 => Some(self.rip),
            6 => Some(self.stack_base + 0x100),
            _ => None,
        }
    }
    fn cfa(&self) -> Option<u64> {
        Some(self.stack_base + 0x110)
    }
    fn load_bias(&self) -> u64 {
        0
    }
}

#[test]
fn reading_variables_from_a_fake_frame() {
    require_tools(&["gcc"]);
    let dir = scratch("read");
    let program = build(&dir, "p", &[("t.c", PROGRAM)], &["-g", "-O0", "-no-pie"]);
    let object = ObjectFile::open(&program).unwrap();
    let main = object.find_functions("main").pop().unwrap();
    let mut frame = FakeFrame {
        object: &object,
        stack_base: 0x7000_0000,
        stack: vec![0; 0x200],
        rip: main.breakpoint_address,
    };
    // `counter` is initialized data in the file: 5.
    let counter = object
        .lookup_variable(Some(main.breakpoint_address), "counter")
        .unwrap();
    assert_eq!(
        object.read_variable(&counter, &frame).unwrap().to_string(),
        "5"
    );

    // Locals at -O0 are at DW_OP_fbreg(N) from the CFA: find their slots
    // by writing distinct patterns and reading them back.
    let p = object
        .lookup_variable(Some(main.breakpoint_address), "p")
        .unwrap();
    let c = object
        .lookup_variable(Some(main.breakpoint_address), "c")
        .unwrap();
    let msg = object
        .lookup_variable(Some(main.breakpoint_address), "msg")
        .unwrap();
    let slot = |var: &Variable| -> u64 {
        // Evaluate the location alone through a frame that records reads.
        let data = object.dwarf.as_ref().unwrap();
        let cu = data.cu_at(var.cu).unwrap();
        let ctx = super::eval::EvalContext {
            dwarf: &data.dwarf,
            unit: &cu.unit,
            frame: &frame,
            frame_base: var.frame_base.as_ref(),
        };
        match ctx.place_of(var.location.as_ref().unwrap()).unwrap() {
            super::eval::Place::Memory(a) => a,
            other => panic!("{other:?}"),
        }
    };
    let (p_at, c_at, msg_at) = (slot(&p), slot(&c), slot(&msg));
    let string_at = object.lookup_symbol("global_total")[0].address; // any readable address
    let mut put = |at: u64, bytes: &[u8]| {
        let o = (at - frame.stack_base) as usize;
        frame.stack[o..o + bytes.len()].copy_from_slice(bytes);
    };
    put(p_at, &[1, 0, 0, 0, 2, 0, 0, 0]);
    put(c_at, &[1, 0, 0, 0]);
    put(msg_at, &0u64.to_le_bytes());
    let _ = string_at;
    assert_eq!(
        object.read_variable(&p, &frame).unwrap().to_string(),
        "{x = 1, y = 2}"
    );
    assert_eq!(
        object.read_variable(&c, &frame).unwrap().to_string(),
        "GREEN"
    );
    assert_eq!(
        object.read_variable(&msg, &frame).unwrap().to_string(),
        "0x0"
    );
}

#[test]
fn return_values_are_decoded_by_type() {
    require_tools(&["gcc"]);
    let dir = scratch("ret");
    let program = build(&dir, "p", &[("t.c", PROGRAM)], &["-g", "-O0"]);
    let object = ObjectFile::open(&program).unwrap();
    let compute = object.find_functions("compute").pop().unwrap();
    let value = object
        .return_value(compute.low_pc, (-3i64) as u64, 0)
        .unwrap();
    assert_eq!(value.to_string(), "-3");
}

/// `find_functions("main")` on a large binary must be fast: this test
/// binary itself has megabytes of DWARF.
#[test]
fn finding_main_in_a_large_binary_is_fast() {
    let me = std::env::current_exe().unwrap();
    let start = std::time::Instant::now();
    let object = ObjectFile::open(&me).unwrap();
    let found = object.find_functions("main");
    let elapsed = start.elapsed();
    eprintln!(
        "open + find_functions(main) on {}: {elapsed:?}",
        me.display()
    );
    assert!(!found.is_empty());
    assert!(elapsed.as_millis() < 2000, "took {elapsed:?}");
}

#[test]
fn separate_debug_file_via_debuglink() {
    require_tools(&["gcc", "objcopy"]);
    let dir = scratch("debuglink");
    let program = build(&dir, "p", &[("t.c", PROGRAM)], &["-g", "-O0"]);
    let run = |args: &[&str]| {
        let ok = Command::new("objcopy")
            .current_dir(&dir)
            .args(args)
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "objcopy {args:?}");
    };
    run(&["--only-keep-debug", "p", "p.debug"]);
    run(&["--strip-all", "p"]);
    run(&["--add-gnu-debuglink=p.debug", "p"]);
    let object = ObjectFile::open(&program).unwrap();
    assert!(object.has_debug_info());
    assert!(object.debug_file_bytes().is_some());
    let compute = object.find_functions("compute");
    assert_eq!(compute.len(), 1);
    assert_eq!(compute[0].location.as_ref().unwrap().line, 22);
    // The symbol table also comes from the debug file.
    assert_eq!(object.symbol_at(compute[0].low_pc).unwrap().name, "compute");

    // A debug file whose CRC does not match is ignored.
    let mut bytes = std::fs::read(dir.join("p.debug")).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    std::fs::write(dir.join("p.debug"), bytes).unwrap();
    let object = ObjectFile::open(&program).unwrap();
    assert!(!object.has_debug_info());
}

#[test]
fn build_id_paths() {
    let path = super::debugfile::build_id_path(Path::new("/usr/lib/debug"), &[0xab, 0xcd, 0xef]);
    assert_eq!(
        path,
        Some(PathBuf::from("/usr/lib/debug/.build-id/ab/cdef.debug"))
    );
}

const CPP_PROGRAM: &str = r#"namespace ns {
int f(int x) { return x + 1; }
struct S { int g(int y) const; };
int S::g(int y) const { return y * 2; }
}
int main() { ns::S s; return ns::f(1) + s.g(2); }
"#;

#[test]
fn cpp_names_are_demangled_and_found_either_way() {
    require_tools(&["g++", "gdb"]);
    let dir = scratch("cpp");
    std::fs::write(dir.join("c.cc"), CPP_PROGRAM).unwrap();
    let ok = Command::new("g++")
        .current_dir(&dir)
        .args(["-g", "-O0", "-o", "c", "c.cc"])
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok);
    let program = dir.join("c");
    let object = ObjectFile::open(&program).unwrap();
    let specs = ["ns::f", "ns::S::g", "f"];
    let want = gdb_breaks(&program, &specs);
    for (spec, want) in specs.iter().zip(&want) {
        let found = object.find_functions(spec);
        let ours: Vec<u64> = found.iter().map(|f| f.breakpoint_address).collect();
        assert_eq!(ours, want.as_ref().unwrap().addresses, "break {spec}");
    }
    let by_linkage = object.lookup_symbol("_ZN2ns1fEi");
    assert_eq!(by_linkage[0].name, "ns::f(int)");
    assert_eq!(object.lookup_symbol("ns::f(int)").len(), 1);
    let f = &object.find_functions("ns::f")[0];
    assert_eq!(f.name, "ns::f(int)");
    assert_eq!(f.linkage_name.as_deref(), Some("_ZN2ns1fEi"));
}

#[test]
fn object_files_can_move_between_threads() {
    fn assert_send<T: Send>() {}
    assert_send::<ObjectFile>();
}

const VALUES_PROGRAM: &str = r#"#include <stdbool.h>
struct point { int x; int y; };
union both { int i; unsigned char b[4]; };
enum color { RED, GREEN, BLUE };
static int twice(int v) { return 2 * v; }
int inspect(int n, const char *name)
{
    int i = -42;
    unsigned char uc = 200;
    char c = 'q';
    short s = -7;
    long l = 1234567890123L;
    double d = 2.5;
    float f = 0.1f;
    bool flag = true;
    char buf[8] = "hi";
    char big[40] = "x";
    int arr[3] = {1, 2, 3};
    int zeros[12] = {0};
    struct point p = {3, -4};
    struct point *pp = &p;
    union both u = { .i = 0x01020304 };
    enum color col = BLUE;
    int (*fn)(int) = twice;
    const char *nul = 0;
    return i + uc + c + s + (int)l + (int)d + (int)f + flag + buf[0] + big[0] + arr[1]
        + zeros[0] + p.x + pp->y + u.b[0] + col + fn(n) + (nul != 0) + name[0];
}
int main(void) { return inspect(5, "wor\"ld\n") & 1; }
"#;

/// A stopped frame read from a core file written by gdb's `gcore`.
struct CoreFrame {
    segments: Vec<(u64, Vec<u8>)>,
    registers: Vec<u64>,
}

impl CoreFrame {
    /// Memory from the core, then (for read-only data gcore leaves out)
    /// from the program file.
    fn open(path: &Path, program: &Path) -> CoreFrame {
        use object::{Object, ObjectSegment};
        let data = std::fs::read(path).unwrap();
        let file = object::File::parse(&*data).unwrap();
        let exe_data = std::fs::read(program).unwrap();
        let exe = object::File::parse(&*exe_data).unwrap();
        let segments = file
            .segments()
            .chain(exe.segments())
            .filter_map(|s| Some((s.address(), s.data().ok()?.to_vec())))
            .filter(|(_, d)| !d.is_empty())
            .collect();
        // NT_PRSTATUS: user_regs_struct starts 112 bytes into the note.
        let elf = object::read::elf::ElfFile64::<object::Endianness>::parse(&*data).unwrap();
        let mut registers = Vec::new();
        use object::read::elf::ProgramHeader;
        for ph in elf.elf_program_headers() {
            let Ok(Some(mut notes)) = ph.notes(elf.endian(), &*data) else {
                continue;
            };
            while let Ok(Some(note)) = notes.next() {
                if note.n_type(elf.endian()) == object::elf::NT_PRSTATUS && registers.is_empty() {
                    let desc = note.desc();
                    registers = desc[112..112 + 27 * 8]
                        .chunks(8)
                        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
                        .collect();
                }
            }
        }
        assert!(!registers.is_empty(), "no NT_PRSTATUS in core");
        CoreFrame {
            segments,
            registers,
        }
    }
}

impl FrameContext for CoreFrame {
    fn read_memory(&self, addr: u64, buf: &mut [u8]) -> Result<()> {
        for (start, data) in &self.segments {
            if addr >= *start && addr + buf.len() as u64 <= start + data.len() as u64 {
                let at = (addr - start) as usize;
                buf.copy_from_slice(&data[at..at + buf.len()]);
                return Ok(());
            }
        }
        Err(Error::Memory(addr))
    }
    fn register(&self, regno: u16) -> Option<u64> {
        // user_regs_struct order: r15 r14 r13 r12 rbp rbx r11 r10 r9 r8 rax
        // rcx rdx rsi rdi orig_rax rip cs eflags rsp ...
        let index = match regno {
            0 => 10,
            1 => 12,
            2 => 11,
            3 => 5,
            4 => 13,
            5 => 14,
            6 => 4,
            7 => 19,
            8 => 9,
            9 => 8,
            10 => 7,
            11 => 6,
            12 => 3,
            13 => 2,
            14 => 1,
            15 => 0,
            16 => 16,
            _ => return None,
        };
        self.registers.get(index).copied()
    }
    fn cfa(&self) -> Option<u64> {
        // -O0 code after the prologue: the frame pointer is set up.
        self.register(6).map(|rbp| rbp + 16)
    }
    fn load_bias(&self) -> u64 {
        0
    }
}

#[test]
fn read_variable_matches_gdb_print_on_a_core() {
    require_tools(&["gcc", "gdb"]);
    let dir = scratch("values");
    let program = build(
        &dir,
        "v",
        &[("v.c", VALUES_PROGRAM)],
        &["-g", "-O0", "-no-pie"],
    );
    let names = [
        "n", "name", "i", "uc", "c", "s", "l", "d", "f", "flag", "buf", "big", "arr", "zeros", "p",
        "pp", "u", "col", "fn", "nul",
    ];
    let (core, printed) = gdb_core_values(&dir, &program, "v.c:27", &names);
    let object = ObjectFile::open(&program).unwrap();
    let frame = CoreFrame::open(&core, &program);
    let pc = frame.register(16).unwrap();
    for (name, want) in names.iter().zip(&printed) {
        let var = object
            .lookup_variable(Some(pc), name)
            .unwrap_or_else(|| panic!("no variable {name}"));
        let value = object.read_variable(&var, &frame).unwrap();
        // gdb prefixes non-string pointers with their type: `(T *) 0x...`.
        let want = match want.strip_prefix('(') {
            Some(rest) if value.type_name().contains('*') => {
                rest.split_once(") ").map_or(want.as_str(), |(_, v)| v)
            }
            _ => want.as_str(),
        };
        if value.is_float() {
            // value.rs prints the shortest round-trip form; gdb uses %.9g
            // for float. Compare the numbers.
            let ours: f32 = value.to_string().parse().unwrap();
            assert_eq!(Some(ours), want.parse::<f32>().ok(), "print {name}");
            continue;
        }
        assert_eq!(value.to_string(), want, "print {name}");
    }
}

const OPTIMIZED_PROGRAM: &str = r#"__attribute__((noinline)) int work(int a, int b)
{
    int sum = a * b;
    int twice = sum + sum;
    __asm__ volatile("" : : "r"(twice), "r"(sum) : "memory");
    return twice + a;
}
int main(int argc, char **argv) { (void)argv; return work(argc + 2, 7) & 1; }
"#;

/// At -O2 variables live in registers or have location lists; those gdb
/// cannot show are `<optimized out>` for us too.
#[test]
fn optimized_variables_match_gdb_on_a_core() {
    require_tools(&["gcc", "gdb"]);
    let dir = scratch("optvalues");
    let program = build(
        &dir,
        "o",
        &[("o.c", OPTIMIZED_PROGRAM)],
        &["-g", "-O2", "-no-pie"],
    );
    let names = ["a", "b", "sum", "twice"];
    let (core, printed) = gdb_core_values(&dir, &program, "o.c:6", &names);
    let object = ObjectFile::open(&program).unwrap();
    let frame = CoreFrame::open(&core, &program);
    let pc = frame.register(16).unwrap();
    for (name, want) in names.iter().zip(&printed) {
        let var = object.lookup_variable(Some(pc), name).unwrap();
        let value = object.read_variable(&var, &frame).unwrap();
        if *name == "b" {
            // Only DW_OP_entry_value(rsi) describes `b` here; gdb resolves
            // it from the caller's call-site parameters, we do not (yet).
            assert_eq!(value, crate::value::Value::OptimizedOut);
            continue;
        }
        assert_eq!(&value.to_string(), want, "print {name} at {pc:#x}");
    }
}

#[test]
fn zero_size_symbols_cover_up_to_the_next_symbol() {
    require_tools(&["gcc"]);
    let dir = scratch("zerosize");
    let source = "__asm__(\".text\\n.globl marker\\nmarker:\\n nop\\n nop\\n nop\\n\");\nint main(void) { return 0; }\n";
    let program = build(&dir, "z", &[("z.c", source)], &["-g", "-O0"]);
    let object = ObjectFile::open(&program).unwrap();
    let marker = object.lookup_symbol("marker");
    assert_eq!(marker.len(), 1);
    assert_eq!(marker[0].size, 0);
    let hit = object.symbol_at(marker[0].address + 2).unwrap();
    assert_eq!(hit.name, "marker");
}

/// Functions missing from the ELF symbol table are found through DWARF.
#[test]
fn dwarf_fallback_when_the_symbol_table_lacks_a_function() {
    require_tools(&["gcc", "gdb", "objcopy"]);
    let dir = scratch("fallback");
    let program = build(&dir, "p", &[("t.c", PROGRAM)], &["-g", "-O0"]);
    let ok = Command::new("objcopy")
        .args(["-N", "add"])
        .arg(&program)
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok);
    let object = ObjectFile::open(&program).unwrap();
    assert!(object.lookup_symbol("add").is_empty());
    let found = object.find_functions("add");
    let want = gdb_breaks(&program, &["add"]);
    let ours: Vec<u64> = found.iter().map(|f| f.breakpoint_address).collect();
    assert_eq!(ours, want[0].as_ref().unwrap().addresses);
    assert_eq!(found[0].name, "add");
    // function_at still names it, from DWARF.
    assert_eq!(object.function_at(found[0].low_pc + 1).unwrap().name, "add");
}

const DATA_PROGRAM: &str = r#"struct cell { char tag; double weight; int counts[3]; };
struct cell cells[4];
struct flags { unsigned a : 3; unsigned b : 7; short s; } mode;
int hits;
static long file_total;

long work(int n)
{
    static int calls;
    struct cell local = { 1, 2.0, { 3, 4, 5 } };
    int buffer[32];
    for (int i = 0; i < 32; i++)
        buffer[i] = i * n + local.counts[i % 3];
    calls++;
    file_total += buffer[n & 31];
    return file_total + calls + cells[n & 3].counts[1];
}

int main(void)
{
    hits = (int)work(3) + mode.b;
    return 0;
}
"#;

/// Fixed addresses agree with the symbol table, and frame offsets with
/// the evaluator's reading of the same locations.
#[test]
fn variables_with_fixed_places() {
    require_tools(&["gcc"]);
    let dir = scratch("places");
    let program = build(&dir, "p", &[("t.c", DATA_PROGRAM)], &["-g", "-O0"]);
    let object = ObjectFile::open(&program).unwrap();
    let statics = object.static_variables();
    for name in ["cells", "hits", "file_total", "calls"] {
        let (_, address) = statics
            .iter()
            .find(|(v, _)| v.name() == name)
            .unwrap_or_else(|| panic!("{name} not found"));
        let symbol = object
            .data_symbols()
            .into_iter()
            .find(|s| s.name == name || s.name.starts_with(&format!("{name}.")))
            .unwrap();
        assert_eq!(*address, symbol.address, "{name}");
    }
    let work = object.find_functions("work").pop().unwrap();
    let frame = FakeFrame {
        object: &object,
        stack_base: 0x7000_0000,
        stack: vec![0; 0x200],
        rip: work.breakpoint_address,
    };
    let slots = object.cfa_variables_at(work.breakpoint_address);
    let mut names: Vec<&str> = slots.iter().map(|(v, _)| v.name()).collect();
    names.sort_unstable();
    assert_eq!(names, ["buffer", "local", "n"]);
    let data = object.dwarf.as_ref().unwrap();
    for (var, offset) in &slots {
        let cu = data.cu_at(var.cu).unwrap();
        let ctx = super::eval::EvalContext {
            dwarf: &data.dwarf,
            unit: &cu.unit,
            frame: &frame,
            frame_base: var.frame_base.as_ref(),
        };
        let place = ctx.place_of(var.location.as_ref().unwrap()).unwrap();
        let cfa = frame.cfa().unwrap();
        assert!(
            matches!(place, super::eval::Place::Memory(a) if a == cfa.wrapping_add_signed(*offset)),
            "{}: {place:?} vs CFA{offset:+}",
            var.name()
        );
    }
}

/// A structure's shape and fields as DWARF lays them out.
#[test]
fn aggregate_shapes_and_fields() {
    require_tools(&["gcc"]);
    let dir = scratch("shapes");
    let program = build(&dir, "p", &[("t.c", DATA_PROGRAM)], &["-g", "-O0"]);
    let object = ObjectFile::open(&program).unwrap();
    let cells = object.lookup_variable(None, "cells").unwrap();
    let ty = object.variable_type(&cells).unwrap();
    assert_eq!(ty.size(), Some(4 * 32));
    let TypeShape::Array(element, 4) = ty.shape() else {
        panic!("{:?}", ty.shape());
    };
    assert!(matches!(
        element.shape(),
        TypeShape::Aggregate(AggregateKind::Structure, Some(ref n)) if n == "cell"
    ));
    let fields: Vec<(String, u64, Option<u64>)> = element
        .fields()
        .into_iter()
        .map(|f| (f.name.unwrap_or_default(), f.offset, f.size))
        .collect();
    assert_eq!(
        fields,
        [
            ("tag".to_string(), 0, Some(1)),
            ("weight".to_string(), 8, Some(8)),
            ("counts".to_string(), 16, Some(12)),
        ]
    );
    // Bitfields occupy the bytes their bits touch.
    let mode = object.lookup_variable(None, "mode").unwrap();
    type Placed = (u64, Option<u64>, Option<(u64, u64)>);
    let bits: Vec<Placed> = object
        .variable_type(&mode)
        .unwrap()
        .fields()
        .into_iter()
        .map(|f| (f.offset, f.size, f.bits))
        .collect();
    assert_eq!(
        bits,
        [
            (0, Some(1), Some((0, 3))),
            (0, Some(2), Some((3, 7))),
            (2, Some(2), None)
        ]
    );
    let hits = object.lookup_variable(None, "hits").unwrap();
    let hits_type = object.variable_type(&hits).unwrap();
    assert!(matches!(hits_type.shape(), TypeShape::Base(ref n) if n == "int"));
    assert!(hits_type.fields().is_empty());
}
