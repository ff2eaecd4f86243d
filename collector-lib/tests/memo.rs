//! The memoized walk gives exactly the frames of a full walk: stacks whose
//! depth changes from one walk to the next (frames reused above, new ones
//! below), and stacks whose frames are the same at every address but one
//! return address far up (a different caller), which only the check of
//! remembered reads can tell.

use collector::unwind::{
    refresh_tables, unwind_from_registers, unwind_memoized, MemoFrameSlot, StackCache, Unwound,
    WalkMemo, MEMO_FRAMES,
};
use std::hint::black_box;

const MAX_FRAMES: usize = 512;

struct Walks {
    memo: Box<WalkMemo>,
    scratch: Box<[MemoFrameSlot; MEMO_FRAMES]>,
    plain_cache: StackCache,
    memo_cache: StackCache,
    compared: usize,
}

impl Walks {
    fn new() -> Walks {
        Walks {
            memo: Box::new(WalkMemo::new()),
            scratch: Box::new([MemoFrameSlot::EMPTY; MEMO_FRAMES]),
            plain_cache: StackCache::new(),
            memo_cache: StackCache::new(),
            compared: 0,
        }
    }
}

/// Both walks from this function's own registers; panics if they differ.
#[inline(never)]
fn compare_here(walks: &mut Walks, limit: usize) {
    let (pc, rsp, rbp): (u64, u64, u64);
    unsafe {
        std::arch::asm!(
            "lea {pc}, [rip]",
            "mov {sp}, rsp",
            "mov {bp}, rbp",
            pc = out(reg) pc,
            sp = out(reg) rsp,
            bp = out(reg) rbp,
            options(nomem, nostack, preserves_flags)
        );
    }
    let mut plain = [0u64; MAX_FRAMES];
    let mut memoized = [0u64; MAX_FRAMES];
    let full: Unwound =
        unwind_from_registers(pc, rsp, rbp, &mut walks.plain_cache, &mut plain[..limit]);
    let fast = unwind_memoized(
        (pc, rsp, rbp),
        &mut walks.memo_cache,
        &mut walks.memo,
        &mut walks.scratch[..],
        &mut memoized[..limit],
    );
    assert_eq!(full, fast, "walk {}", walks.compared);
    assert_eq!(
        plain[..full.depth],
        memoized[..fast.depth],
        "walk {}",
        walks.compared
    );
    walks.compared += 1;
}

#[inline(never)]
fn descend(walks: &mut Walks, levels: usize, limit: usize) -> usize {
    if levels == 0 {
        compare_here(walks, limit);
        return 0;
    }
    black_box(descend(walks, black_box(levels - 1), limit)) + 1
}

#[inline(never)]
fn through_a(walks: &mut Walks, levels: usize) -> usize {
    black_box(descend(walks, levels, MAX_FRAMES)) + 1
}

#[inline(never)]
fn through_b(walks: &mut Walks, levels: usize) -> usize {
    black_box(descend(walks, levels, MAX_FRAMES)) + 2
}

#[test]
fn memoized_walks_equal_full_walks() {
    refresh_tables().expect("unwind tables");
    let mut walks = Walks::new();
    let depths = [5, 6, 7, 5, 30, 29, 31, 1, 0, 12, 12, 12, 40, 3];
    for round in 0..4 {
        for &depth in &depths {
            through_a(&mut walks, depth + round);
            through_b(&mut walks, depth + round);
            through_b(&mut walks, depth);
            through_a(&mut walks, depth);
        }
    }
    // Deeper than the memo holds, and cut by a small output.
    descend(&mut walks, MEMO_FRAMES + 20, MAX_FRAMES);
    descend(&mut walks, 50, 10);
    descend(&mut walks, 50, 10);
    let (total, hits) = walks.memo.counts();
    assert_eq!(total as usize, walks.compared);
    assert!(hits * 2 > total, "{hits} of {total} walks reused frames");
}
