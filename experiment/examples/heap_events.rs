//! Prints an experiment's heap events in order, one per line: order,
//! thread, operation, address, size, old address (realloc), stack depth
//! and the stack's first pcs. A debugging aid for the format.
//!
//! usage: cargo run -p experiment --example heap_events -- EXPT.er

fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: heap_events EXPT.er");
        std::process::exit(2);
    };
    let result = (|| -> experiment::Result<()> {
        let expt = experiment::Experiment::open(&path)?;
        let stacks = expt.stacks()?;
        for record in expt.heap_events()? {
            let e = record.event;
            let stack = stacks.get(&e.stack_id);
            let pcs: Vec<String> = stack
                .map(|s| s.pcs.iter().take(4).map(|pc| format!("{pc:#x}")).collect())
                .unwrap_or_default();
            println!(
                "{} t{} {} {:#x} {} {:#x} depth={} {}",
                e.order,
                record.tid,
                e.op.name(),
                e.address,
                e.size,
                e.old_address,
                stack.map_or(0, |s| s.pcs.len()),
                pcs.join(" ")
            );
        }
        Ok(())
    })();
    if let Err(err) = result {
        eprintln!("heap_events: {err}");
        std::process::exit(1);
    }
}
