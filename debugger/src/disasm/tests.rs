use super::*;
use std::process::Command;

/// Compile `source` with gcc into a fresh temp dir and return the binary path.
fn compile(name: &str, source: &str, flags: &[&str]) -> std::path::PathBuf {
    let dir = crate::unwind::test_support::scratch_dir(&format!("disasm-{name}"));
    let c = dir.join(format!("{name}.c"));
    std::fs::write(&c, source).unwrap();
    let out = dir.join(name);
    let status = Command::new("gcc")
        .args(flags)
        .arg("-o")
        .arg(&out)
        .arg(&c)
        .status()
        .unwrap();
    assert!(status.success());
    out
}

/// objdump's lines for the text section: (address, "mnemonic operands") with
/// `<sym>` annotations and `# comments` removed.
fn objdump_lines(binary: &std::path::Path) -> Vec<(u64, String)> {
    let out = Command::new("objdump")
        .args(["-d", "--no-show-raw-insn", "-j", ".text"])
        .arg(binary)
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let mut lines = Vec::new();
    for line in text.lines() {
        let Some((addr, rest)) = line.split_once(":\t") else {
            continue;
        };
        let Ok(addr) = u64::from_str_radix(addr.trim(), 16) else {
            continue;
        };
        let rest = rest.split('#').next().unwrap();
        let rest = match rest.find(" <") {
            Some(i) => &rest[..i],
            None => rest,
        };
        let words: Vec<String> = rest
            .split_whitespace()
            .enumerate()
            .map(|(i, w)| match u64::from_str_radix(w, 16) {
                // objdump prints branch targets as bare hex, gdb with 0x.
                Ok(target) if i > 0 && w.len() >= 3 => format!("{target:#x}"),
                _ => w.to_string(),
            })
            .collect();
        lines.push((addr, words.join(" ")));
    }
    lines
}

const PROGRAM: &str = r#"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int g; static int s[10]; static double d[4]; char buf[64];
int f(int x){ s[x&7]+=x; if (x>3) g++; return g + s[1]*x; }
double h(double a, float b){ d[1] = a * b; return d[1] / 3.0 + (long)a; }
unsigned short u(unsigned char c, short t){ return c * t + (signed char)c; }
int cmp(const void *a, const void *b){ return *(const int*)a - *(const int*)b; }
int main(int c, char**v){
    unsigned char b = c; long q = c*3; s[2] = (int)q;
    memset(buf, c, sizeof buf); strcpy(buf, v[0]);
    int arr[5] = {5, 3, 1, 4, 2}; qsort(arr, 5, sizeof(int), cmp);
    for (int i = 0; i < c; i++) g += arr[i % 5] * i;
    printf("%d %f %d %s\n", f(c)+b, h(c, 2.5f), u(c, c), buf);
    return 0;
}
"#;

fn compare_with_objdump(flags: &[&str]) {
    let binary = compile(
        &format!("p{}", flags.join("").replace('-', "")),
        PROGRAM,
        flags,
    );
    let data = std::fs::read(&binary).unwrap();
    let file = object::File::parse(&*data).unwrap();
    use object::{Object, ObjectSection};
    let text = file.section_by_name(".text").unwrap();
    let bytes = text.data().unwrap();
    let dis = Disassembler::new().unwrap();
    let ours = dis.decode(bytes, text.address(), usize::MAX);
    let theirs = objdump_lines(&binary);
    let mut mismatches = Vec::new();
    let mut ours_iter = ours.iter();
    for (addr, expected) in &theirs {
        let Some(insn) = ours_iter.next() else {
            panic!("ran out at {addr:x}")
        };
        assert_eq!(insn.address, *addr, "instruction boundaries differ");
        let got = format!("{} {}", insn.mnemonic, insn.operands);
        if got.trim() != expected {
            mismatches.push(format!(
                "{addr:x}: ours `{}` objdump `{expected}`",
                got.trim()
            ));
        }
    }
    assert!(
        mismatches.is_empty(),
        "{} mismatches:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
}

#[test]
fn matches_objdump_at_o0() {
    compare_with_objdump(&["-O0"]);
}

#[test]
fn matches_objdump_at_o2() {
    compare_with_objdump(&["-O2"]);
}
