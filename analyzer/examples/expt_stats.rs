//! One line of figures for benchmarks: clock events, recorded CPU, record
//! bytes and disk bytes (allocated blocks) of an experiment and its
//! descendants. `cargo run -p analyzer --example expt_stats -- test.1.er`

use std::os::unix::fs::MetadataExt;

fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: expt_stats EXPERIMENT.er");
        std::process::exit(2);
    };
    let founder = match experiment::Experiment::open(&path) {
        Ok(e) => e,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    let mut dirs = vec![founder.path().to_path_buf()];
    dirs.extend(founder.descendants());
    let (mut events, mut weight, mut record_bytes, mut disk_bytes) = (0u64, 0u64, 0u64, 0u64);
    for dir in dirs {
        let Ok(expt) = experiment::Experiment::open(&dir) else {
            continue;
        };
        let Ok(summary) = expt.summary() else {
            continue;
        };
        events += summary.clock_events;
        weight += summary.clock_weight_ns;
        record_bytes += summary.profile_blocks.record_bytes + summary.stacks_blocks.record_bytes;
        for file in ["profile", "stacks"] {
            if let Ok(meta) = std::fs::metadata(dir.join(file)) {
                disk_bytes += meta.blocks() * 512;
            }
        }
    }
    println!(
        "events={events} cpu_s={:.3} record_bytes={record_bytes} disk_bytes={disk_bytes}",
        weight as f64 / 1e9
    );
}
