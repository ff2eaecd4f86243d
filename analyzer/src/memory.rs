//! Large tables in huge pages.

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
