//! Times opening an object and finding a function, as `stop in NAME`
//! would: `cargo run --release -p debugger --example find_function -- PROG [NAME | FILE:LINE]`.

use std::path::PathBuf;
use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(path) = args.next().map(PathBuf::from) else {
        eprintln!("usage: find_function PROG [NAME]");
        std::process::exit(2);
    };
    let name = args.next().unwrap_or_else(|| "main".to_string());
    let start = Instant::now();
    let object = match debugger::symbols::ObjectFile::open(&path) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    let opened = start.elapsed();
    if let Some((file, line)) = name.rsplit_once(':').filter(|(f, _)| !f.ends_with(':')) {
        let line: u32 = line.parse().unwrap_or(1);
        match object.lines_for(file, line) {
            Ok(m) => println!("{}:{} -> {:x?}", m.file.display(), m.line, m.addresses),
            Err(e) => println!("{e}"),
        }
        println!("open + lines_for {:?}", start.elapsed());
        return;
    }
    let found = object.find_functions(&name);
    let total = start.elapsed();
    for f in &found {
        let at = f
            .location
            .as_ref()
            .map(|l| format!("file {}, line {}", l.file.display(), l.line))
            .unwrap_or_default();
        println!("{} at 0x{:x}: {at}", f.name, f.breakpoint_address);
    }
    println!("open {opened:?}, open + find {total:?}");
}
