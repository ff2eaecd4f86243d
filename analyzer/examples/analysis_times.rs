//! Times each command of an analysis session after the load, as the REPL
//! and `rdbx analyze -c A -c B ...` run them (whole `rdbx analyze` runs
//! are timed by bench/analyzer.sh and bench/heap_analysis.sh): opens the
//! experiments with `Analysis::open` (timed as `load`), then runs each
//! `-c` command in order through `Analysis::run_line_to`, its text written
//! as it is made to a sink that counts the bytes (`--json`: the command's
//! document made and serialized). Per command: wall seconds, CPU seconds
//! of the process (user + system, all threads), bytes of output and the
//! peak RSS while it ran (the model's included).
//!
//! `cargo run --release -p analyzer --example analysis_times -- [--json] -c CMD... EXPT...`

use analyzer::{Analysis, Outcome};
use std::path::PathBuf;
use std::time::Instant;

mod peak_rss;

fn main() {
    let mut json = false;
    let mut commands = Vec::new();
    let mut paths = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--json" => json = true,
            "-c" => commands.extend(args.next()),
            _ => paths.push(PathBuf::from(arg)),
        }
    }
    peak_rss::reset();
    let (start, cpu) = (Instant::now(), cpu_seconds());
    let mut analysis = match Analysis::open(&paths) {
        Ok(analysis) => analysis,
        Err(e) => {
            eprintln!("analysis_times: {e}");
            std::process::exit(1);
        }
    };
    if json {
        analysis.set_format(commands::OutputFormat::Json);
    }
    report("load", start, cpu, 0);
    for command in &commands {
        peak_rss::reset();
        let (start, cpu) = (Instant::now(), cpu_seconds());
        let mut sink = Counted(0);
        let bytes = match analysis.run_line_to(command, &mut sink) {
            Ok(Outcome::Json(document)) => {
                serde_json::to_string_pretty(&document).map_or(0, |text| text.len())
            }
            Ok(Outcome::Output(text)) => sink.0 + text.len(),
            Ok(Outcome::Quit) => break,
            Err(message) => {
                eprintln!("{command}: {message}");
                continue;
            }
        };
        report(command, start, cpu, bytes);
    }
}

/// A writer that keeps only the count of what it was given.
struct Counted(usize);

impl std::io::Write for Counted {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn report(name: &str, start: Instant, cpu: f64, bytes: usize) {
    println!(
        "{name:<24} {:>8.3} s wall {:>8.3} s CPU {bytes:>12} bytes  peak RSS {} MiB",
        start.elapsed().as_secs_f64(),
        cpu_seconds() - cpu,
        peak_rss::mib()
    );
}

/// User and system time of the process so far.
fn cpu_seconds() -> f64 {
    // SAFETY: getrusage fills the struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    seconds(usage.ru_utime) + seconds(usage.ru_stime)
}
