//! Prints what an experiment holds: summary, samples, top functions.
//! `cargo run -p analyzer --example expt_dump -- test.1.er`

fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: expt_dump EXPERIMENT.er");
        std::process::exit(2);
    };
    let mut dirs = vec![std::path::PathBuf::from(&path)];
    if let Ok(founder) = experiment::Experiment::open(&path) {
        dirs.extend(founder.descendants());
    }
    for dir in dirs {
        let expt = match experiment::Experiment::open(&dir) {
            Ok(e) => e,
            Err(e) => {
                eprintln!("{e}");
                continue;
            }
        };
        println!("== {}", dir.display());
        match expt.summary() {
            Ok(s) => println!("{s:?}"),
            Err(e) => println!("summary: {e}"),
        }
        for sample in expt.samples().unwrap_or_default() {
            println!("sample {:?}", sample);
        }
        for event in expt.log().unwrap_or_default() {
            if let experiment::log::Event::Warning(m) | experiment::log::Event::Error(m) =
                &event.event
            {
                println!("log: {m}");
            }
        }
        match analyzer::clock_profile(&expt) {
            Ok(p) => {
                println!(
                    "total {:.3}s events {} reaching main {} truncated {} failed {} without stack {}",
                    p.total_ns as f64 / 1e9,
                    p.events,
                    p.events_reaching_main,
                    p.truncated_stacks,
                    p.failed_stacks,
                    p.events_without_stack
                );
                for f in p.functions.iter().take(15) {
                    println!(
                        "  {:>8.3} {:>8.3} {}",
                        f.exclusive_ns as f64 / 1e9,
                        f.inclusive_ns as f64 / 1e9,
                        f.name
                    );
                }
            }
            Err(e) => println!("profile: {e}"),
        }
    }
}
