// Rust file I/O known by construction, for tests/io.rs. Usage: io_rust DIR.
// In DIR:
// - write_plain: std::fs::File::create and one write_all of 5000 bytes to
//   `plain`;
// - write_buffered: a BufWriter (8 KiB) over a File takes 1000 write_alls
//   of 10 bytes for `buffered`: 10000 bytes in two write()s (8190 when the
//   next 10 no longer fit, the rest at the flush);
// - read_back: `plain` read with read_to_end (5000 bytes, then 0 at the
//   end), `buffered` with read_exact of 10000 bytes.
// std's File is open64, read, write and close on the descriptor. On stdout
// (println!, a write of the line): "read 5000 10000" and "done".
use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};

#[inline(never)]
fn write_plain(path: &Path) -> std::io::Result<()> {
    let mut file = File::create(path)?;
    file.write_all(&[b'p'; 5000])
}

#[inline(never)]
fn write_buffered(path: &Path) -> std::io::Result<()> {
    let mut out = BufWriter::new(File::create(path)?);
    for _ in 0..1000 {
        out.write_all(&[b'b'; 10])?;
    }
    out.flush()
}

#[inline(never)]
fn read_back(plain: &Path, buffered: &Path) -> std::io::Result<(usize, usize)> {
    let mut whole = Vec::new();
    File::open(plain)?.read_to_end(&mut whole)?;
    let mut exact = vec![0u8; 10000];
    File::open(buffered)?.read_exact(&mut exact)?;
    let right = whole.iter().all(|&b| b == b'p') && exact.iter().all(|&b| b == b'b');
    Ok((if right { whole.len() } else { 0 }, exact.len()))
}

fn main() -> std::io::Result<()> {
    let dir = PathBuf::from(std::env::args().nth(1).expect("usage: io_rust DIR"));
    let (plain, buffered) = (dir.join("plain"), dir.join("buffered"));
    write_plain(&plain)?;
    write_buffered(&buffered)?;
    let (whole, exact) = read_back(&plain, &buffered)?;
    println!("read {whole} {exact}");
    println!("done");
    Ok(())
}
