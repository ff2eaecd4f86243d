//! Reading and writing the memory of a traced process through
//! `/proc/PID/mem`, which works for any mapping (text included, as the
//! kernel writes through page protections for a tracer) and moves a whole
//! buffer in one system call rather than a word per `PTRACE_PEEKDATA`.

use crate::{Error, Result};
use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;

#[derive(Debug)]
pub struct Memory {
    file: File,
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
        Ok(Memory { file })
    }

    /// Fills `buf` from `addr`; fails unless every byte could be read.
    pub fn read(&self, addr: u64, buf: &mut [u8]) -> Result<()> {
        let mut done = 0;
        while done < buf.len() {
            match self.file.read_at(&mut buf[done..], addr + done as u64) {
                Ok(0) | Err(_) => return Err(Error::Memory(addr + done as u64)),
                Ok(n) => done += n,
            }
        }
        Ok(())
    }

    /// Reads as many bytes as are readable from `addr`, up to `buf.len()`.
    pub fn read_partial(&self, addr: u64, buf: &mut [u8]) -> usize {
        let mut done = 0;
        while done < buf.len() {
            match self.file.read_at(&mut buf[done..], addr + done as u64) {
                Ok(0) | Err(_) => break,
                Ok(n) => done += n,
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
