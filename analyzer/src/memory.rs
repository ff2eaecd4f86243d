//! Large vectors with room to grow in place, memory faulted in on
//! another thread, and fetching what will be read soon.
//!
//! Nothing here asks for transparent huge pages, though the large tables
//! are read in random order and would miss the TLB less in them. In a VM
//! whose guest hands its free memory back to the host (virtio-balloon's
//! free page reporting, which reports free blocks of 2 MiB and more), a
//! fresh huge page is such a block: the host faults in all of it, 4 KiB
//! at a time. Measured on this project's VM by bench/first_touch.sh (a
//! first write of 512 MiB after the machine sat idle for 20 s): 0.44 GB/s
//! in huge pages, 2.9 GB/s in small ones, 21 GB/s in huge pages the same
//! process freed a moment before. A benchmark run back to back sees the
//! last figure, a user's first analysis the first: a heap `calltree`
//! took 0.84 s one way and 1.35 s the other with huge pages, 1.07 s
//! either way without.

/// A vector of `len` copies of `value` with room for at least `room`
/// elements, if the allocator gives it (address space only until used);
/// else just `len`.
pub(crate) fn vec_with_room<T: Clone>(value: T, len: usize, room: usize) -> Vec<T> {
    let mut data = Vec::new();
    if data.try_reserve_exact(room.max(len)).is_err() {
        data.reserve_exact(len);
    }
    data.resize(len, value);
    data
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

/// Linux's MADV_POPULATE_WRITE (5.14): fault pages in, writable, as a
/// write would (the libc crate does not name it yet).
const MADV_POPULATE_WRITE: libc::c_int = 23;

/// A thread faulting memory in; dropping it waits for the thread.
pub(crate) struct Populating(Option<std::thread::JoinHandle<()>>);

impl Drop for Populating {
    fn drop(&mut self) {
        if let Some(thread) = self.0.take() {
            let _ = thread.join();
        }
    }
}

/// Faults in the memory `regions` describes (start address and length in
/// bytes: a vector's spare capacity, from [`spare`], or a large zeroed
/// vector not written yet) on another thread, front to back, when it takes
/// at least `worth` bytes: the kernel zeroes the pages there while this
/// thread fills them, instead of stopping it at every new page (a fifth of
/// loading a big experiment). Keep the vectors where they are until the
/// result is dropped.
pub(crate) fn populate_in_background(regions: Vec<(usize, usize)>, worth: usize) -> Populating {
    const CHUNK: usize = 2 << 20;
    let page = 4096;
    if regions.iter().map(|&(_, len)| len).sum::<usize>() < worth {
        return Populating(None);
    }
    let populate = move || {
        for (start, len) in regions {
            let first = start.next_multiple_of(page);
            let end = start + len;
            for chunk in (first..end).step_by(CHUNK) {
                let size = CHUNK.min(end - chunk);
                // SAFETY: the range lies in a live vector's buffer the
                // caller keeps in place until the join. Even were it moved,
                // populating changes no byte of a page already there and
                // gives a new page the zeros it would get at its first
                // write; an unmapped range or a kernel without the advice
                // makes madvise fail, and the thread stops.
                let failed = unsafe {
                    libc::madvise(chunk as *mut libc::c_void, size, MADV_POPULATE_WRITE) != 0
                };
                if failed {
                    return;
                }
            }
        }
    };
    Populating(
        std::thread::Builder::new()
            .name("populate".into())
            .spawn(populate)
            .ok(),
    )
}

/// The spare capacity of `data`: its address and length in bytes.
pub(crate) fn spare<T>(data: &Vec<T>) -> (usize, usize) {
    let size = std::mem::size_of::<T>();
    let start = data.as_ptr() as usize + data.len() * size;
    (start, (data.capacity() - data.len()) * size)
}
