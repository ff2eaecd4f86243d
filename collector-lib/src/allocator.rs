//! The collector's own memory: Rust's allocations inside libcollector.so
//! go straight to glibc's `__libc_*` entry points, never through the
//! exported `malloc` hooks, so the collector's work is not traced as the
//! program's and a hook never re-enters itself through our own code.

use crate::sys::{__libc_calloc, __libc_free, __libc_malloc, __libc_memalign, __libc_realloc};
use std::alloc::{GlobalAlloc, Layout};

/// What malloc aligns to on x86-64 glibc.
const MALLOC_ALIGNMENT: usize = 16;

pub struct LibcDirect;

// SAFETY: glibc's allocator honours malloc's contract; larger alignments
// go to memalign.
unsafe impl GlobalAlloc for LibcDirect {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.align() <= MALLOC_ALIGNMENT {
            __libc_malloc(layout.size()).cast()
        } else {
            __libc_memalign(layout.align(), layout.size()).cast()
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if layout.align() <= MALLOC_ALIGNMENT {
            __libc_calloc(1, layout.size()).cast()
        } else {
            let block = self.alloc(layout);
            if !block.is_null() {
                block.write_bytes(0, layout.size());
            }
            block
        }
    }

    unsafe fn dealloc(&self, pointer: *mut u8, _layout: Layout) {
        __libc_free(pointer.cast());
    }

    unsafe fn realloc(&self, pointer: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if layout.align() <= MALLOC_ALIGNMENT {
            return __libc_realloc(pointer.cast(), new_size).cast();
        }
        let new_layout = Layout::from_size_align_unchecked(new_size, layout.align());
        let block = self.alloc(new_layout);
        if !block.is_null() {
            std::ptr::copy_nonoverlapping(pointer, block, layout.size().min(new_size));
            self.dealloc(pointer, layout);
        }
        block
    }
}

#[global_allocator]
static ALLOCATOR: LibcDirect = LibcDirect;
