// Allocations known by construction through Rust's default allocator
// (std's System: malloc, calloc for zeroed memory, realloc, and
// posix_memalign for over-aligned types), for tests/heap.rs. Each
// allocating function is its own #[inline(never)] function, so a heap
// event's stack names it under the frames of std's allocator path
// (__rust_alloc, __rdl_alloc, System::alloc). The program checks the
// capacities it relies on, so a change in std's growth policy fails here
// rather than in a count.
use std::hint::black_box;

/// Twelve boxes of 300 bytes, each dropped: 12 malloc(300), 12 frees.
#[inline(never)]
fn boxes() {
    for i in 0..12u8 {
        let b = Box::new([i; 300]);
        black_box(&b);
    }
}

/// A Vec with its exact capacity reserved and never exceeded: one
/// malloc(800), freed.
#[inline(never)]
fn exact_vec() -> u64 {
    let mut v: Vec<u64> = Vec::with_capacity(100);
    for i in 0..100 {
        v.push(i);
    }
    assert_eq!(v.capacity(), 100);
    v.iter().sum()
}

/// Zeroed memory: one calloc of 4096 bytes, freed.
#[inline(never)]
fn zeroed() -> usize {
    let v = vec![0u8; 4096];
    black_box(&v);
    v.len()
}

/// A Vec grown once to an exact capacity: malloc(40), realloc to 1200,
/// freed.
#[inline(never)]
fn regrow() -> usize {
    let mut v: Vec<u32> = Vec::with_capacity(10);
    v.extend(0..10);
    v.reserve_exact(290);
    assert_eq!(v.capacity(), 300);
    black_box(&v);
    v.len()
}

/// Aligned beyond what malloc gives: std asks posix_memalign.
#[repr(align(64))]
struct Line([u8; 192]);

/// Three over-aligned boxes of 192 bytes, dropped.
#[inline(never)]
fn aligned() {
    for i in 0..3u8 {
        let b = Box::new(Line([i; 192]));
        assert_eq!(&*b as *const Line as usize % 64, 0);
        black_box(b.0[191]);
    }
}

/// Never freed: five 40-byte boxes leaked and one Vec of 50 u16
/// (100 bytes) forgotten.
#[inline(never)]
fn leak_boxes() {
    for i in 0..5u8 {
        let b = Box::new([i; 40]);
        black_box(Box::leak(b));
    }
    let v: Vec<u16> = Vec::with_capacity(50);
    assert_eq!(v.capacity(), 50);
    std::mem::forget(v);
}

fn main() {
    boxes();
    let sum = exact_vec();
    let zeros = zeroed();
    let grown = regrow();
    aligned();
    leak_boxes();
    println!("done {sum} {zeros} {grown}");
}
