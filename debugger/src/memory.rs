//! Reading and writing the memory of a traced process.
//!
//! Reads of more than a word go through `process_vm_readv`, which copies a
//! whole object (a 10,000-element array, a frame's locals) in one system
//! call. It honours page protections and stops at the first unreadable
//! page, so whatever it could not copy is retried through `/proc/PID/mem`,
//! which works for any mapping (text included, as the kernel writes through
//! page protections for a tracer) and tells us where the readable part ends.
//! Writes always use `/proc/PID/mem`.

use crate::{Error, Result};
use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicBool, Ordering};

/// Reads up to this size are one `pread` anyway; larger ones try
/// `process_vm_readv` first.
const WORD: usize = 8;

#[derive(Debug)]
pub struct Memory {
    pid: i32,
    file: File,
    /// Cleared once `process_vm_readv` is refused outright (a seccomp
    /// filter, an old kernel), so we stop asking.
    vm_readv_works: AtomicBool,
}

impl Memory {
    pub fn open(pid: i32) -> Result<Memory> {
        let path = format!("/proc/{pid}/mem");
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .map_err(|source| Error::Io {
                path: path.into(),
                source,
            })?;
        Ok(Memory {
            pid,
            file,
            vm_readv_works: AtomicBool::new(true),
        })
    }

    /// The /proc/PID/mem descriptor (for the rescue journal, which writes
    /// through it from a signal handler).
    pub fn raw_fd(&self) -> i32 {
        use std::os::fd::AsRawFd;
        self.file.as_raw_fd()
    }

    /// Fills `buf` from `addr`; fails unless every byte could be read.
    pub fn read(&self, addr: u64, buf: &mut [u8]) -> Result<()> {
        let done = self.read_partial(addr, buf);
        if done < buf.len() {
            return Err(Error::Memory(addr + done as u64));
        }
        Ok(())
    }

    /// Reads as many bytes as are readable from `addr`, up to `buf.len()`.
    pub fn read_partial(&self, addr: u64, buf: &mut [u8]) -> usize {
        let mut done = 0;
        if buf.len() > WORD {
            done = self.read_vm(addr, buf);
        }
        while done < buf.len() {
            match self.file.read_at(&mut buf[done..], addr + done as u64) {
                Ok(0) | Err(_) => break,
                Ok(n) => done += n,
            }
        }
        done
    }

    /// Copies what `process_vm_readv` can from `addr` into `buf`: all of it,
    /// the part before the first unreadable page, or nothing.
    fn read_vm(&self, addr: u64, buf: &mut [u8]) -> usize {
        if !self.vm_readv_works.load(Ordering::Relaxed) {
            return 0;
        }
        let mut done = 0;
        while done < buf.len() {
            let rest = &mut buf[done..];
            let local = libc::iovec {
                iov_base: rest.as_mut_ptr().cast(),
                iov_len: rest.len(),
            };
            let remote = libc::iovec {
                iov_base: (addr + done as u64) as *mut libc::c_void,
                iov_len: rest.len(),
            };
            // SAFETY: `local` describes `rest`, which we borrow mutably for
            // the call; the kernel writes at most `iov_len` bytes into it.
            // `remote` is only an address in the other process.
            let n = unsafe { libc::process_vm_readv(self.pid, &local, 1, &remote, 1, 0) };
            match usize::try_from(n) {
                Ok(0) => break,
                Ok(n) => done += n,
                Err(_) => {
                    let errno = std::io::Error::last_os_error().raw_os_error();
                    if matches!(errno, Some(libc::ENOSYS | libc::EPERM)) {
                        self.vm_readv_works.store(false, Ordering::Relaxed);
                    }
                    break;
                }
            }
        }
        done
    }

    pub fn write(&self, addr: u64, data: &[u8]) -> Result<()> {
        self.file
            .write_all_at(data, addr)
            .map_err(|_| Error::Memory(addr))
    }

    pub fn read_u64(&self, addr: u64) -> Result<u64> {
        let mut bytes = [0u8; 8];
        self.read(addr, &mut bytes)?;
        Ok(u64::from_le_bytes(bytes))
    }

    /// A NUL-terminated string of at most `limit` bytes.
    pub fn read_c_string(&self, addr: u64, limit: usize) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        let mut chunk = [0u8; 64];
        while out.len() < limit {
            let n = self.read_partial(addr + out.len() as u64, &mut chunk);
            if n == 0 {
                if out.is_empty() {
                    return Err(Error::Memory(addr));
                }
                break;
            }
            if let Some(end) = chunk[..n].iter().position(|&b| b == 0) {
                out.extend_from_slice(&chunk[..end]);
                return Ok(out);
            }
            out.extend_from_slice(&chunk[..n]);
        }
        out.truncate(limit);
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn own_memory() -> Memory {
        Memory::open(std::process::id() as i32).expect("open /proc/self/mem")
    }

    #[test]
    fn reads_a_large_object_whole() {
        let data: Vec<u8> = (0..100_000u32).map(|i| (i * 7) as u8).collect();
        let mut copy = vec![0u8; data.len()];
        let memory = own_memory();
        // One process_vm_readv copies it all.
        assert_eq!(memory.read_vm(data.as_ptr() as u64, &mut copy), data.len());
        assert_eq!(copy, data);
        copy.fill(0);
        memory.read(data.as_ptr() as u64, &mut copy).expect("read");
        assert_eq!(copy, data);
    }

    #[test]
    fn reads_up_to_an_unmapped_page() {
        let page = 4096;
        // SAFETY: a fresh anonymous mapping of two pages, of which the
        // second is unmapped again; only the first is touched.
        let base = unsafe {
            let p = libc::mmap(
                std::ptr::null_mut(),
                2 * page,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            );
            assert_ne!(p, libc::MAP_FAILED);
            libc::munmap(p.cast::<u8>().add(page).cast(), page);
            std::ptr::write_bytes(p.cast::<u8>(), 0xab, page);
            p as u64
        };
        let memory = own_memory();
        let mut buf = vec![0u8; 2 * page];
        let at = base + page as u64 - 100;
        assert_eq!(memory.read_partial(at, &mut buf[..200]), 100);
        assert!(buf[..100].iter().all(|&b| b == 0xab));
        match memory.read(at, &mut buf[..200]) {
            Err(Error::Memory(addr)) => assert_eq!(addr, base + page as u64),
            other => panic!("expected a memory error, got {other:?}"),
        }
        // SAFETY: unmapping the page mapped above.
        unsafe { libc::munmap(base as *mut libc::c_void, page) };
    }

    #[test]
    fn reads_without_process_vm_readv_too() {
        let memory = own_memory();
        memory.vm_readv_works.store(false, Ordering::Relaxed);
        let data = [5u8; 64];
        let mut copy = [0u8; 64];
        memory.read(data.as_ptr() as u64, &mut copy).expect("read");
        assert_eq!(copy, data);
    }
}
