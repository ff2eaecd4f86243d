use super::*;
use crate::disasm::Instruction;
use crate::unwind::test_support::{compile, Tracee};
use object::{Object, ObjectSection};

const PROGRAM: &str = r#"
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
int g1 = 7, g2 = 11; long g3 = 0x1234567; static int arr[8]; const char *p;
static double dd = 2.5;
__attribute__((noinline)) void work(int x) {
    g1 = g2 + 5;
    arr[3] = g1 * 2 + x;
    p = "constant string";
    g3 += g1;
    if (g1 > 3) arr[1]++;
    dd = dd * 1.5 + arr[3];
    arr[x & 7] -= (int)g3;
}
int main(int argc, char **argv) {
    unsigned long near = ((unsigned long)&work + 0x1000000UL) & ~0xfffUL;
    void *slot = mmap((void *)near, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    __asm__ volatile("int3" : : "a"(slot), "b"(&work));
    work(argc);
    printf("%d %p\n", g1, p);
    return 0;
}
"#;

fn text_instructions(binary: &std::path::Path) -> Vec<Instruction> {
    let data = std::fs::read(binary).unwrap();
    let file = object::File::parse(&*data).unwrap();
    let text = file.section_by_name(".text").unwrap();
    Disassembler::new()
        .unwrap()
        .decode(text.data().unwrap(), text.address(), usize::MAX)
}

/// Check one displaced instruction: same instruction, same rip-relative
/// target, then a jump to the original's next instruction.
fn check(disassembler: &Disassembler, original: &Instruction, slot: u64) -> Displacement {
    let mut bytes = original.bytes.clone();
    bytes.resize(MAX_INSTRUCTION_LEN, 0x90);
    let displacement = displace(&bytes, original.address, slot);
    match &displacement {
        Displacement::OutOfLine { code } => {
            assert!(code.len() <= SLOT_SIZE);
            let moved = disassembler
                .decode_one(code, slot)
                .expect("slot code decodes");
            assert_eq!(moved.mnemonic, original.mnemonic);
            assert_eq!(moved.len(), original.len());
            assert_eq!(
                moved.rip_relative_target, original.rip_relative_target,
                "{original:?}"
            );
            if original.rip_relative_target.is_none() {
                assert_eq!(moved.operands, original.operands);
            }
            let rest = &code[moved.len()..];
            let back = disassembler
                .decode_one(rest, moved.end_address())
                .expect("jump back");
            assert_eq!(back.mnemonic, "jmp");
            let destination = match back.branch_target {
                Some(target) => target,
                None => {
                    assert_eq!(back.rip_relative_target, Some(back.end_address()));
                    u64::from_le_bytes(rest[back.len()..back.len() + 8].try_into().unwrap())
                }
            };
            assert_eq!(destination, original.end_address());
        }
        Displacement::EmulateCall {
            target,
            return_address,
        } => {
            assert!(original.is_call);
            assert_eq!(Some(*target), original.branch_target);
            assert_eq!(*return_address, original.end_address());
        }
        Displacement::EmulateJump { target } => {
            assert_eq!(original.mnemonic, "jmp");
            assert_eq!(Some(*target), original.branch_target);
        }
        Displacement::SingleStep => {}
    }
    displacement
}

fn check_all(flags: &[&str]) {
    let name = format!("reloc{}", flags.join("").replace(['-', '='], ""));
    let binary = compile(&name, PROGRAM, flags);
    let instructions = text_instructions(&binary);
    let disassembler = Disassembler::new().unwrap();
    let mut seen = std::collections::HashSet::new();
    for original in &instructions {
        let near = check(&disassembler, original, original.address + 0x100_0000);
        let far = check(&disassembler, original, original.address + 0x3_0000_0000);
        let kind = |d: &Displacement| std::mem::discriminant(d);
        let mnemonic = original.mnemonic.as_str();
        match mnemonic {
            "call" if original.branch_target.is_some() => {
                assert!(matches!(near, Displacement::EmulateCall { .. }))
            }
            "jmp" if original.branch_target.is_some() => {
                assert!(matches!(near, Displacement::EmulateJump { .. }))
            }
            "jne" | "je" | "jle" | "jg" | "syscall" => assert_eq!(near, Displacement::SingleStep),
            // An indirect call would push the slot's address.
            "call" => assert_eq!(near, Displacement::SingleStep),
            _ if original.rip_relative_target.is_some() => {
                assert!(
                    matches!(near, Displacement::OutOfLine { .. }),
                    "{original:?}"
                );
                assert_eq!(far, Displacement::SingleStep, "{original:?}");
            }
            "push" | "mov" | "sub" | "ret" | "endbr64" | "add" | "pop" => {
                assert!(
                    matches!(near, Displacement::OutOfLine { .. }),
                    "{original:?}"
                );
                assert_eq!(kind(&near), kind(&far));
            }
            _ => {}
        }
        let rip = if original.rip_relative_target.is_some() {
            " rip"
        } else {
            ""
        };
        seen.insert(format!("{mnemonic}{rip}"));
    }
    for wanted in [
        "push", "mov", "sub", "lea rip", "mov rip", "call", "jmp", "ret", "endbr64",
    ] {
        assert!(seen.contains(wanted), "no {wanted} in {seen:?}");
    }
}

#[test]
fn every_instruction_of_a_program_at_o0() {
    check_all(&["-O0", "-fcf-protection=full"]);
}

#[test]
fn every_instruction_of_a_program_at_o2() {
    check_all(&["-O2", "-fcf-protection=full"]);
}

#[test]
fn syscall_and_undecodable_bytes_single_step() {
    assert_eq!(
        displace(&[0x0f, 0x05, 0x90], 0x1000, 0x2000),
        Displacement::SingleStep
    );
    assert_eq!(
        displace(&[0x0f, 0xff], 0x1000, 0x2000),
        Displacement::SingleStep
    );
    assert_eq!(displace(&[], 0x1000, 0x2000), Displacement::SingleStep);
    // loop, jrcxz, indirect call through rax.
    assert_eq!(
        displace(&[0xe2, 0x10], 0x1000, 0x2000),
        Displacement::SingleStep
    );
    assert_eq!(
        displace(&[0xe3, 0x10], 0x1000, 0x2000),
        Displacement::SingleStep
    );
    assert_eq!(
        displace(&[0xff, 0xd0], 0x1000, 0x2000),
        Displacement::SingleStep
    );
}

#[test]
fn immediate_after_rip_relative_displacement() {
    // cmpl $0x3,0x2ee6(%rip) and movl $0x11223344,0x10(%rip).
    for bytes in [
        &[0x83, 0x3d, 0xe6, 0x2e, 0, 0, 0x03][..],
        &[0xc7, 0x05, 0x10, 0, 0, 0, 0x44, 0x33, 0x22, 0x11],
    ] {
        let disassembler = Disassembler::new().unwrap();
        let original = disassembler.decode_one(bytes, 0x40_0000).unwrap();
        let Displacement::OutOfLine { code } = check(&disassembler, &original, 0x50_0000) else {
            panic!("not moved")
        };
        assert_eq!(
            code[code.len() - 5 - bytes.len() + 6..][..bytes.len() - 6],
            bytes[6..]
        );
    }
}

/// Execute each instruction of `work` both in place (single-step) and
/// displaced into a slot near the code, from the same registers and
/// memory, and compare the resulting registers and memory.
#[test]
fn displaced_execution_matches_single_stepping() {
    use nix::sys::ptrace;
    let binary = compile("relocrun", PROGRAM, &["-O0"]);
    let tracee = Tracee::spawn(&binary);
    tracee.run_to_trap();
    let start = ptrace::getregs(tracee.pid).unwrap();
    let slot = start.rax;
    let work = start.rbx;
    assert!(
        slot != u64::MAX && slot.abs_diff(work) < 0x7000_0000,
        "slot {slot:#x} work {work:#x}"
    );
    let disassembler = Disassembler::new().unwrap();
    let code = tracee.read_bytes(work, 200);
    let mut compared = 0;
    // Run work(3) on a fresh stack area below main's frame.
    let mut state = start;
    state.rip = work;
    state.rdi = 3;
    state.rsp = ((start.rsp - 0x400) & !0xf) - 8;
    for original in disassembler.decode(&code, work, usize::MAX) {
        if original.is_return {
            break;
        }
        if state.rip != original.address {
            continue; // skipped by a branch
        }
        let Displacement::OutOfLine { code } = displace(&original.bytes, original.address, slot)
        else {
            // Branches: just step them.
            ptrace::setregs(tracee.pid, state).unwrap();
            assert!(tracee.single_step());
            state = ptrace::getregs(tracee.pid).unwrap();
            continue;
        };
        let watched = original.rip_relative_target.unwrap_or(state.rsp - 8);
        let memory_before = tracee.read_bytes(watched, 8);
        // In place.
        ptrace::setregs(tracee.pid, state).unwrap();
        assert!(tracee.single_step(), "{original:?}");
        let in_place = ptrace::getregs(tracee.pid).unwrap();
        let memory_in_place = tracee.read_bytes(watched, 8);
        // Displaced, from the same state.
        tracee.write_bytes(watched, &memory_before);
        tracee.write_bytes(slot, &code);
        let mut regs = state;
        regs.rip = slot;
        ptrace::setregs(tracee.pid, regs).unwrap();
        assert!(tracee.single_step());
        assert!(tracee.single_step());
        let displaced = ptrace::getregs(tracee.pid).unwrap();
        let memory_displaced = tracee.read_bytes(watched, 8);
        assert_eq!(
            format!("{in_place:?}"),
            format!("{displaced:?}"),
            "{original:?}"
        );
        assert_eq!(memory_in_place, memory_displaced, "{original:?}");
        assert_eq!(displaced.rip, original.end_address());
        state = displaced;
        compared += 1;
    }
    assert!(compared >= 15, "only {compared} instructions compared");
}
