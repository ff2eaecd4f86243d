//! Exports of the current selection for other tools: folded stacks
//! (`collapsed`, one `root;...;leaf VALUE` line per distinct stack, the
//! format of Brendan Gregg's flamegraph.pl and inferno) and a flame graph
//! SVG drawn by the inferno crate. The value is the sort metric's (or the
//! first shown metric's): microseconds of CPU time, or a heap metric's
//! count or bytes, a counter's events, so there is a flame graph for each
//! metric (but a ratio, CPI or IPC: a flame graph adds up its stacks).

use crate::compare::Comparison;
use crate::metrics::{Value, Weights};
use crate::report::{Context, MetricName};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

/// Folded lines with their values, merged by name path.
fn folded(ctx: &Context) -> Result<BTreeMap<String, u64>, String> {
    folded_with(ctx, ctx.weights)
}

/// [`folded`] of the events `weights` sums.
fn folded_with(ctx: &Context, weights: &Weights) -> Result<BTreeMap<String, u64>, String> {
    let metric = ctx.sort_metric();
    if metric.is_ratio() {
        return Err(format!(
            "{metric} is a ratio and the stacks of a flame graph add up: sort by a counter \
             (e.cycles) to draw one"
        ));
    }
    let mut lines: BTreeMap<String, u64> = BTreeMap::new();
    weights.for_each_stack(ctx.view, |frames, value| {
        let names: Vec<String> = frames
            .iter()
            .rev()
            // `;` separates frames in the format; C++ names never need it.
            .map(|&f| {
                ctx.function_name(ctx.view.frame(f).function)
                    .replace(';', ":")
            })
            .collect();
        *lines.entry(names.join(";")).or_default() += exported(metric, weights.value(value));
    });
    lines.retain(|_, v| *v > 0);
    Ok(lines)
}

/// A stack's number for `metric`: whole microseconds for CPU time.
fn exported(metric: MetricName, value: Value) -> u64 {
    match metric {
        m if m.is_time() => value.get(m) / 1_000,
        m => value.get(m),
    }
}

/// What the numbers of the export count.
fn unit(metric: MetricName) -> &'static str {
    match metric {
        m if m.is_time() => "us",
        MetricName::SyncWaitCount => "waits",
        MetricName::BytesAllocated
        | MetricName::BytesLeaked
        | MetricName::ReadBytes
        | MetricName::WriteBytes
        | MetricName::MpiBytesSent
        | MetricName::MpiBytesReceived => "bytes",
        MetricName::MpiSends | MetricName::MpiReceives => "messages",
        MetricName::MpiOtherCalls => "calls",
        MetricName::Leaks => "leaks",
        MetricName::ReadCount
        | MetricName::WriteCount
        | MetricName::OtherIoCount
        | MetricName::IoErrorCount => "calls",
        MetricName::Counter(counter) => counter.name(),
        _ => "allocations",
    }
}

fn create(path: &Path) -> Result<std::io::BufWriter<std::fs::File>, String> {
    std::fs::File::create(path)
        .map(std::io::BufWriter::new)
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// Writes folded stacks to `path`; the number of lines written.
pub fn collapsed(ctx: &Context, path: &Path) -> Result<usize, String> {
    let lines = folded(ctx)?;
    let mut out = create(path)?;
    for (stack, value) in &lines {
        writeln!(out, "{stack} {value}").map_err(|e| format!("{}: {e}", path.display()))?;
    }
    out.flush()
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(lines.len())
}

/// Writes a flame graph SVG of the selection to `path`; the number of
/// distinct stacks drawn.
pub fn flamegraph(ctx: &Context, path: &Path) -> Result<usize, String> {
    let lines: Vec<String> = folded(ctx)?
        .into_iter()
        .map(|(stack, value)| format!("{stack} {value}"))
        .collect();
    if lines.is_empty() {
        return Err("no events selected: nothing to draw".to_string());
    }
    let metric = ctx.sort_metric();
    let title = match ctx.model.experiments.first() {
        Some(e) => format!("rdbx: {} ({})", e.path.display(), metric.title()),
        None => format!("rdbx ({})", metric.title()),
    };
    let mut options = inferno::flamegraph::Options::default();
    options.title = title;
    options.count_name = unit(metric).to_string();
    let out = create(path)?;
    inferno::flamegraph::from_lines(&mut options, lines.iter().map(String::as_str), out)
        .map_err(|e| format!("cannot draw {}: {e}", path.display()))?;
    Ok(lines.len())
}

/// The baseline's and the second group's folded stacks side by side,
/// each stack's values before and after (0 in the one that lacks it).
fn folded_difference(
    ctx: &Context,
    cmp: &Comparison,
) -> Result<BTreeMap<String, (u64, u64)>, String> {
    let [before, after, ..] = cmp.weights else {
        return Err("a difference needs two experiment groups".to_string());
    };
    let mut both: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for (stack, value) in folded_with(ctx, before)? {
        both.entry(stack).or_default().0 = value;
    }
    for (stack, value) in folded_with(ctx, after)? {
        both.entry(stack).or_default().1 = value;
    }
    Ok(both)
}

/// `stack BEFORE AFTER`: the differential format of flamegraph.pl and
/// inferno.
fn difference_lines(both: &BTreeMap<String, (u64, u64)>) -> Vec<String> {
    both.iter()
        .map(|(stack, (before, after))| format!("{stack} {before} {after}"))
        .collect()
}

/// Writes the compare-mode collapsed stacks (`stack BEFORE AFTER`: the
/// baseline's value, then the second group's) to `path`; the number of
/// lines written.
pub fn difference_collapsed(ctx: &Context, cmp: &Comparison, path: &Path) -> Result<usize, String> {
    let lines = difference_lines(&folded_difference(ctx, cmp)?);
    let mut out = create(path)?;
    for line in &lines {
        writeln!(out, "{line}").map_err(|e| format!("{}: {e}", path.display()))?;
    }
    out.flush()
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(lines.len())
}

/// Writes a differential flame graph to `path`: frames as wide as the
/// second group's values, red where a stack grew from the baseline's,
/// blue where it shrank (brighter for a larger change); the number of
/// distinct stacks drawn. A stack only the baseline has is not drawn (it
/// has no width); its loss shows as blue in its callers.
pub fn difference_flamegraph(
    ctx: &Context,
    cmp: &Comparison,
    path: &Path,
) -> Result<usize, String> {
    let both = folded_difference(ctx, cmp)?;
    let name = |g: usize| cmp.groups.get(g).map_or(String::new(), |g| g.name.clone());
    // The frames are as wide as the second group's values.
    if both.values().all(|&(_, after)| after == 0) {
        return Err(format!(
            "no events of {} selected: nothing to draw",
            name(1)
        ));
    }
    let lines = difference_lines(&both);
    let metric = ctx.sort_metric();
    let mut options = inferno::flamegraph::Options::default();
    options.title = format!(
        "rdbx: {} against {} ({}): red grew, blue shrank",
        name(1),
        name(0),
        metric.title()
    );
    options.count_name = unit(metric).to_string();
    let out = create(path)?;
    inferno::flamegraph::from_lines(&mut options, lines.iter().map(String::as_str), out)
        .map_err(|e| format!("cannot draw {}: {e}", path.display()))?;
    Ok(lines.len())
}
