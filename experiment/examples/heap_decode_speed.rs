//! Times reading an experiment's heap events: decoded in file order
//! (`for_each_heap_event`) and merged across threads in order number
//! (`heap_events_in_order`, what the analyzer's heap replay reads), three
//! times each. The merge's cost is the difference.
//!
//! usage: cargo run --release -p experiment --example heap_decode_speed -- EXPT.er

fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: heap_decode_speed EXPT.er");
        std::process::exit(2);
    };
    let expt = match experiment::Experiment::open(&path) {
        Ok(expt) => expt,
        Err(err) => {
            eprintln!("heap_decode_speed: {err}");
            std::process::exit(1);
        }
    };
    for _ in 0..3 {
        let start = std::time::Instant::now();
        let mut in_file_order = 0u64;
        let read = expt.for_each_heap_event(|_| in_file_order += 1);
        let file_order = start.elapsed();
        let start = std::time::Instant::now();
        let merged = expt.heap_events_in_order(|| 0u64, |n, _| *n += 1);
        let merge = start.elapsed();
        match (read, merged) {
            (Ok(_), Ok((in_order, _))) => println!(
                "{in_file_order} events in file order: {file_order:.2?}; \
                 {in_order} in order: {merge:.2?}"
            ),
            (Err(err), _) | (_, Err(err)) => {
                eprintln!("heap_decode_speed: {err}");
                std::process::exit(1);
            }
        }
    }
}
