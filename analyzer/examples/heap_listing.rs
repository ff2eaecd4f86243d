//! Times the heap-tracing listings apart from loading the experiment
//! (bench/heap_analysis.sh times whole `rdbx analyze` runs): loads EXPT
//! once, then runs each of `leaks`, `allocs` (text only, as `rdbx analyze`
//! without `--json` shows them) and `heap`, printing the time each took,
//! the size of its text, the RSS before it (the model) and its peak RSS
//! (the model and what the listing added; the peak is reset before each).
//!
//! `cargo run --release -p analyzer --example heap_listing -- [--limit N] EXPT...`

use analyzer::heap_report::{listing_as, statistics, HeapListing, ListingForm};
use std::path::PathBuf;
use std::time::Instant;

mod peak_rss;

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut limit = None;
    if args.first().map(String::as_str) == Some("--limit") && args.len() > 1 {
        limit = args[1].parse().ok();
        args.drain(..2);
    }
    let paths: Vec<PathBuf> = args.into_iter().map(PathBuf::from).collect();
    peak_rss::reset();
    let start = Instant::now();
    let model = match analyzer::load(&paths, true) {
        Ok(model) => model,
        Err(e) => {
            eprintln!("heap_listing: {e}");
            std::process::exit(1);
        }
    };
    report("load", start, 0);
    let runs: [(&str, HeapListing); 2] = [
        ("leaks", HeapListing::Leaks),
        ("allocs", HeapListing::Allocations),
    ];
    for (name, what) in runs {
        peak_rss::reset();
        let start = Instant::now();
        match listing_as(&model, what, limit, ListingForm::Text) {
            Ok((text, _)) => report(name, start, text.len()),
            Err(e) => eprintln!("{name}: {e}"),
        }
    }
    peak_rss::reset();
    let start = Instant::now();
    match statistics(&model) {
        Ok((text, _)) => report("heap", start, text.len()),
        Err(e) => eprintln!("heap: {e}"),
    }
}

fn report(name: &str, start: Instant, text_bytes: usize) {
    let elapsed = start.elapsed().as_secs_f64();
    println!(
        "{name:<8} {elapsed:>8.3} s {text_bytes:>12} bytes of text, peak RSS {} MiB",
        peak_rss::mib()
    );
}
