//! Exports of the current selection for other tools: folded stacks
//! (`collapsed`, one `root;...;leaf microseconds` line per distinct stack,
//! the format of Brendan Gregg's flamegraph.pl and inferno) and a flame graph
//! SVG drawn by the inferno crate.

use crate::report::Context;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

/// Folded lines with their microseconds, merged by name path.
fn folded(ctx: &Context) -> BTreeMap<String, u64> {
    let mut lines: BTreeMap<String, u64> = BTreeMap::new();
    ctx.weights.for_each_stack(ctx.view, |frames, value| {
        let names: Vec<String> = frames
            .iter()
            .rev()
            // `;` separates frames in the format; C++ names never need it.
            .map(|&f| {
                ctx.function_name(ctx.view.frame(f).function)
                    .replace(';', ":")
            })
            .collect();
        *lines.entry(names.join(";")).or_default() += value.ns / 1_000;
    });
    lines.retain(|_, us| *us > 0);
    lines
}

fn create(path: &Path) -> Result<std::io::BufWriter<std::fs::File>, String> {
    std::fs::File::create(path)
        .map(std::io::BufWriter::new)
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// Writes folded stacks to `path`; the number of lines written.
pub fn collapsed(ctx: &Context, path: &Path) -> Result<usize, String> {
    let lines = folded(ctx);
    let mut out = create(path)?;
    for (stack, us) in &lines {
        writeln!(out, "{stack} {us}").map_err(|e| format!("{}: {e}", path.display()))?;
    }
    out.flush()
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(lines.len())
}

/// Writes a flame graph SVG of the selection to `path`; the number of
/// distinct stacks drawn.
pub fn flamegraph(ctx: &Context, path: &Path) -> Result<usize, String> {
    let lines: Vec<String> = folded(ctx)
        .into_iter()
        .map(|(stack, us)| format!("{stack} {us}"))
        .collect();
    if lines.is_empty() {
        return Err("no events selected: nothing to draw".to_string());
    }
    let title = match ctx.model.experiments.first() {
        Some(e) => format!("rdbx: {}", e.path.display()),
        None => "rdbx".to_string(),
    };
    let mut options = inferno::flamegraph::Options::default();
    options.title = title;
    options.count_name = "us".to_string();
    let out = create(path)?;
    inferno::flamegraph::from_lines(&mut options, lines.iter().map(String::as_str), out)
        .map_err(|e| format!("cannot draw {}: {e}", path.display()))?;
    Ok(lines.len())
}
