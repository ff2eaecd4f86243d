//! Large tables in huge pages, and fetching what will be read soon.

/// Asks the kernel to back `data`'s buffer with transparent huge pages
/// (where it is set to `madvise`): a table of hundreds of megabytes read in
/// random order otherwise misses the TLB on nearly every access, which in a
/// VM costs as much as the cache miss. Only advice: errors are ignored.
pub(crate) fn advise_huge_pages<T>(data: &Vec<T>) {
    const HUGE: usize = 2 << 20;
    let start = data.as_ptr() as usize;
    let end = start + data.capacity() * std::mem::size_of::<T>();
    let first = start.next_multiple_of(HUGE);
    let last = end - end % HUGE;
    if last > first {
        // SAFETY: [first, last) lies inside the vector's allocation, which
        // lives on; MADV_HUGEPAGE changes how pages are backed, not their
        // contents.
        unsafe {
            libc::madvise(
                first as *mut libc::c_void,
                last - first,
                libc::MADV_HUGEPAGE,
            );
        }
    }
}

/// Starts fetching the cache lines of `data` (at most the first 16): many
/// fetches started together take the time of one, where reads one after
/// another wait for each.
pub(crate) fn prefetch<T>(data: &[T]) {
    const LINE: usize = 64;
    let bytes = std::mem::size_of_val(data).min(16 * LINE);
    let start = data.as_ptr().cast::<i8>();
    for offset in (0..bytes).step_by(LINE) {
        prefetch_line(start.wrapping_add(offset));
    }
}

/// Starts fetching the cache line of `value`.
pub(crate) fn prefetch_one<T>(value: &T) {
    prefetch_line((value as *const T).cast::<i8>());
}

fn prefetch_line(address: *const i8) {
    // SAFETY: SSE is part of x86_64; a prefetch only hints the cache and
    // never faults, whatever the address.
    #[cfg(target_arch = "x86_64")]
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(address)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = address;
}
