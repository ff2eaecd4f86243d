//! What the experiments are, rather than where time went: `header`,
//! `overview`, `statistics`, and the lists of what can be selected
//! (`experiment_list`, `sample_list`, `thread_list`, `cpu_list`,
//! `object_list`).

use crate::groups::{placement, ExperimentGroups, Placement};
use crate::metrics::Value;
use crate::model::*;
use crate::report::{Context, Report};
use crate::table::{percent, seconds, Column, Table};
use commands::ListSelection;
use experiment::log::{Event, Sample};
use serde_json::{json, Value as Json};
use std::collections::{BTreeMap, HashSet};

fn value_json(value: Value) -> Json {
    json!({"seconds": value.ns as f64 / 1e9, "ns": value.ns, "events": value.events})
}

fn events_of<'a>(ctx: &Context<'a>) -> impl Iterator<Item = &'a EventEntry> {
    ctx.model.events.iter()
}

fn add(value: &mut Value, event: &EventEntry) {
    value.ns += u64::from(event.weight_ns);
    value.events += u64::from(event.count);
}

fn mark(selected: bool) -> &'static str {
    if selected {
        "*"
    } else {
        ""
    }
}

/// How an experiment's process ended, as its log says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// The process exited with this status.
    Exit(i32),
    /// A signal ended it (SIGKILL: the collector could write nothing more).
    Signal(i32),
    /// The collector closed the experiment (no process end recorded: a
    /// debugger's experiment).
    Closed,
    /// No end record: still being written, or the collector died with the
    /// process (killed with its launcher).
    CutShort,
}

impl Ending {
    pub fn of(expt: &ExperimentEntry) -> Ending {
        use experiment::log::TerminatedHow;
        let terminated = expt.log.iter().rev().find_map(|e| match &e.event {
            Event::Terminated { how, code } => Some((*how, *code)),
            _ => None,
        });
        match (terminated, expt.ended) {
            (Some((TerminatedHow::Exit, code)), _) => Ending::Exit(code),
            (Some((TerminatedHow::Signal, signal)), _) => Ending::Signal(signal),
            (None, true) => Ending::Closed,
            (None, false) => Ending::CutShort,
        }
    }

    /// Whether the process ran to its end (an exit, with any status).
    pub fn normal(self) -> bool {
        matches!(self, Ending::Exit(_) | Ending::Closed)
    }

    pub fn text(self) -> String {
        match self {
            Ending::Exit(code) => format!("exit {code}"),
            Ending::Signal(signal) => format!("killed by signal {signal}"),
            Ending::Closed => "closed by the collector".to_string(),
            Ending::CutShort => "no end record (killed, or still running)".to_string(),
        }
    }
}

/// `experiment_list`: every experiment, numbered from 1, with where and
/// when it ran, how it ended and what it recorded.
pub fn experiment_list(ctx: &Context, groups: &ExperimentGroups, kept: &[bool]) -> Report {
    let mut per: BTreeMap<u16, Value> = BTreeMap::new();
    for e in events_of(ctx) {
        add(per.entry(e.experiment).or_default(), e);
    }
    let placements: Vec<Placement> = ctx.model.experiments.iter().map(placement).collect();
    let hosts = placements.iter().any(|p| p.host.is_some());
    let ranks = placements.iter().any(|p| p.rank.is_some());
    let grouped = groups.len() > 1 || groups.groups.iter().any(|g| g.is_file);
    let mut columns = vec![
        Column::number("ID", ""),
        Column::text("Sel"),
        Column::number("PID", ""),
    ];
    if hosts {
        columns.push(Column::text("Host"));
    }
    if ranks {
        columns.push(Column::number("Rank", ""));
    }
    if grouped {
        columns.push(Column::number("Group", ""));
    }
    columns.extend([
        Column::text("Started"),
        Column::number("Duration", ""),
        Column::text("End"),
        Column::number("Events", ""),
        Column::number("CPU sec.", ""),
        Column::text("Experiment"),
        Column::text("Command"),
    ]);
    let mut table = Table::new(columns);
    let mut rows = Vec::new();
    for (i, expt) in ctx.model.experiments.iter().enumerate() {
        let value = per.get(&(i as u16)).copied().unwrap_or_default();
        let selected = kept.get(i).copied().unwrap_or(true);
        let start = expt.start.as_ref();
        let pid = start.map_or(0, |s| s.pid);
        let place = &placements[i];
        let group = groups.group_of(i as u16);
        let started = start.map(|s| date(s.realtime_ns));
        let duration = expt.end_ns.saturating_sub(expt.start_ns);
        let ending = Ending::of(expt);
        let command = start.map_or(String::new(), |s| s.args.clone());
        let mut cells = vec![
            (i + 1).to_string(),
            if selected { "yes" } else { "no" }.to_string(),
            pid.to_string(),
        ];
        if hosts {
            cells.push(place.host.clone().unwrap_or_else(|| "-".into()));
        }
        if ranks {
            cells.push(place.rank.map_or("-".into(), |r| r.to_string()));
        }
        if grouped {
            cells.push((group + 1).to_string());
        }
        cells.extend([
            started.clone().unwrap_or_else(|| "-".into()),
            seconds(duration),
            ending.text(),
            value.events.to_string(),
            seconds(value.ns),
            expt.path.display().to_string(),
            command.clone(),
        ]);
        table.push(cells);
        rows.push(json!({
            "experiment": i + 1,
            "selected": selected,
            "pid": pid,
            "host": place.host,
            "rank": place.rank,
            "group": group + 1,
            "group_name": groups.groups.get(group).map(|g| g.name.clone()),
            "path": expt.path.display().to_string(),
            "founder": expt.founder.display().to_string(),
            "lineage": start.map(|s| s.lineage.clone()),
            "command": start.map(|s| s.args.clone()),
            "executable": start.map(|s| s.exe.display().to_string()),
            "started": started,
            "start_realtime_ns": start.map(|s| s.realtime_ns),
            "duration_seconds": duration as f64 / 1e9,
            "end": ending.text(),
            "ended_normally": ending.normal(),
            "cpu": value_json(value),
        }));
    }
    let groups_json: Vec<Json> = groups
        .groups
        .iter()
        .map(|g| {
            let numbers: Vec<u32> = g.experiments.iter().map(|&e| u32::from(e) + 1).collect();
            json!({"name": g.name, "group_file": g.is_file, "experiments": numbers})
        })
        .collect();
    let mut text = table.render();
    if grouped {
        for (g, group) in groups.groups.iter().enumerate() {
            text.push_str(&format!("Group {}: {}\n", g + 1, group.name));
        }
    }
    Report {
        text,
        json: json!({"report": "experiment_list", "experiments": rows, "groups": groups_json}),
    }
}

/// `sample_list`: each sample of each experiment, what caused it, and the
/// CPU time recorded in its interval.
pub fn sample_list(ctx: &Context, selected: &ListSelection) -> Report {
    let mut per: BTreeMap<(u16, u32), Value> = BTreeMap::new();
    for e in events_of(ctx) {
        add(per.entry((e.experiment, e.sample)).or_default(), e);
    }
    let mut table = Table::new(vec![
        Column::text("Sel"),
        Column::number("Exp", ""),
        Column::number("Sample", ""),
        Column::number("Time (s)", ""),
        Column::text("Cause"),
        Column::number("Events", ""),
        Column::number("CPU sec.", ""),
        Column::text("Label"),
    ]);
    let mut rows = Vec::new();
    for (i, expt) in ctx.model.experiments.iter().enumerate() {
        let last = expt.samples.last().map_or(0, |s| s.number);
        let mut entries: Vec<(u64, Option<&Sample>)> =
            expt.samples.iter().map(|s| (s.number, Some(s))).collect();
        // Events after the last sample: the interval still open.
        if per.contains_key(&(i as u16, last as u32 + 1)) {
            entries.push((last + 1, None));
        }
        for (number, sample) in entries {
            let value = per
                .get(&(i as u16, number as u32))
                .copied()
                .unwrap_or_default();
            let time = sample.map(|s| s.timestamp_ns.saturating_sub(ctx.model.origin_ns));
            let cause = sample.map_or("(open)", |s| s.cause.name());
            let label = sample.map_or("", |s| s.label.as_str());
            table.push(vec![
                mark(selected.contains(number)).to_string(),
                (i + 1).to_string(),
                number.to_string(),
                time.map_or("-".to_string(), seconds),
                cause.to_string(),
                value.events.to_string(),
                seconds(value.ns),
                label.to_string(),
            ]);
            rows.push(
                json!({"experiment": i + 1, "sample": number, "selected": selected.contains(number),
                             "time_seconds": time.map(|t| t as f64 / 1e9), "cause": cause,
                             "label": label, "cpu": value_json(value)}),
            );
        }
    }
    Report {
        text: table.render(),
        json: json!({"report": "sample_list", "samples": rows}),
    }
}

/// `thread_list`
pub fn thread_list(ctx: &Context, selected: &ListSelection) -> Report {
    let mut per: BTreeMap<(u16, u32), Value> = BTreeMap::new();
    for e in events_of(ctx) {
        add(per.entry((e.experiment, e.thread)).or_default(), e);
    }
    let mut table = Table::new(vec![
        Column::text("Sel"),
        Column::number("Exp", ""),
        Column::number("Thread", ""),
        Column::number("TID", ""),
        Column::number("Events", ""),
        Column::number("CPU sec.", ""),
        Column::number("%", ""),
        Column::text(""),
    ]);
    let total: u64 = per.values().map(|v| v.ns).sum();
    let mut rows = Vec::new();
    for (i, expt) in ctx.model.experiments.iter().enumerate() {
        for thread in &expt.threads {
            let value = per
                .get(&(i as u16, thread.number))
                .copied()
                .unwrap_or_default();
            let on = selected.contains(u64::from(thread.number)) && !thread.collector;
            table.push(vec![
                mark(on).to_string(),
                (i + 1).to_string(),
                thread.number.to_string(),
                thread.tid.to_string(),
                value.events.to_string(),
                seconds(value.ns),
                percent(value.ns, total),
                // Numbered by the debugger too, so listed: a gap otherwise.
                if thread.collector {
                    "(rdbx collector)"
                } else {
                    ""
                }
                .to_string(),
            ]);
            rows.push(
                json!({"experiment": i + 1, "thread": thread.number, "tid": thread.tid,
                             "selected": on, "collector": thread.collector,
                             "cpu": value_json(value)}),
            );
        }
    }
    Report {
        text: table.render(),
        json: json!({"report": "thread_list", "threads": rows}),
    }
}

/// `cpu_list`
pub fn cpu_list(ctx: &Context, selected: &ListSelection) -> Report {
    let mut per: BTreeMap<u16, Value> = BTreeMap::new();
    for e in events_of(ctx) {
        add(per.entry(e.cpu).or_default(), e);
    }
    let total: u64 = per.values().map(|v| v.ns).sum();
    let mut table = Table::new(vec![
        Column::text("Sel"),
        Column::number("CPU", ""),
        Column::number("Events", ""),
        Column::number("CPU sec.", ""),
        Column::number("%", ""),
    ]);
    let mut rows = Vec::new();
    for (&cpu, value) in &per {
        let on = selected.contains(u64::from(cpu));
        let name = match cpu {
            experiment::layout::CPU_UNKNOWN => "?".to_string(),
            n => n.to_string(),
        };
        table.push(vec![
            mark(on).to_string(),
            name,
            value.events.to_string(),
            seconds(value.ns),
            percent(value.ns, total),
        ]);
        rows.push(json!({"cpu": cpu, "selected": on, "cpu_time": value_json(*value)}));
    }
    Report {
        text: table.render(),
        json: json!({"report": "cpu_list", "cpus": rows}),
    }
}

/// `object_list`
pub fn object_list(ctx: &Context, hidden: &HashSet<ObjectId>) -> Report {
    let mut table = Table::new(vec![
        Column::text("Shown"),
        Column::text("Name"),
        Column::text("Path"),
        Column::text("Symbols from"),
    ]);
    let mut rows = Vec::new();
    for (i, object) in ctx.model.objects.iter().enumerate() {
        let shown = !hidden.contains(&(i as ObjectId));
        let from = object
            .symbols_from
            .as_ref()
            .map_or("(not read)".to_string(), |p| p.display().to_string());
        table.push(vec![
            if shown { "yes" } else { "hidden" }.to_string(),
            object.name(),
            object.path.display().to_string(),
            from.clone(),
        ]);
        rows.push(json!({"name": object.name(), "path": object.path.display().to_string(),
                         "shown": shown, "symbols_from": object.symbols_from.as_ref().map(|p| p.display().to_string())}));
    }
    Report {
        text: table.render(),
        json: json!({"report": "object_list", "objects": rows}),
    }
}

/// `overview`: what was recorded and how much of it is selected.
pub fn overview(ctx: &Context) -> Report {
    let mut all = Value::default();
    for e in events_of(ctx) {
        add(&mut all, e);
    }
    let selected = ctx.total();
    let duration = ctx.model.duration_ns();
    let threads: usize = ctx
        .model
        .experiments
        .iter()
        .map(|e| e.threads.iter().filter(|t| !t.collector).count())
        .sum();
    let samples: usize = ctx.model.experiments.iter().map(|e| e.samples.len()).sum();
    let profiling: Vec<String> = ctx
        .model
        .experiments
        .iter()
        .filter_map(|e| e.start.as_ref())
        .map(|s| match s.profile_ns {
            0 => "off".to_string(),
            ns => format!(
                "every {:.3} ms of thread CPU time ({})",
                ns as f64 / 1e6,
                s.clock
            ),
        })
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    let mut text = String::new();
    text.push_str(&format!(
        "Experiments:        {}\n",
        ctx.model.experiments.len()
    ));
    for e in &ctx.model.experiments {
        text.push_str(&format!("  {}\n", e.path.display()));
    }
    text.push_str(&format!("Duration:           {} s\n", seconds(duration)));
    text.push_str(&format!(
        "Threads:            {threads}\nSamples:            {samples}\n"
    ));
    text.push_str(&format!(
        "Clock profiling:    {}\n",
        if profiling.is_empty() {
            "not recorded".to_string()
        } else {
            profiling.join("; ")
        }
    ));
    let counters = counter_overview(ctx);
    if !counters.is_empty() {
        let shown: Vec<String> = counters.iter().map(|c| c.text.clone()).collect();
        text.push_str(&format!("Counters:           {}\n", shown.join("; ")));
    }
    let mut metrics = vec![("Total CPU Time".to_string(), "totalcpu".to_string())];
    metrics.extend(counter_metrics(ctx.model));
    let available: Vec<String> = metrics
        .iter()
        .map(|(title, name)| match title == name {
            true => name.clone(),
            false => format!("{title} ({name})"),
        })
        .collect();
    text.push_str(&format!("Metrics available:  {}\n", available.join(", ")));
    text.push_str(&format!(
        "Total CPU Time:     {} s in {} events; selected {} s ({}%) in {} events\n",
        seconds(all.ns),
        all.events,
        seconds(selected.ns),
        percent(selected.ns, all.ns),
        selected.events
    ));
    if ctx.model.events_merged {
        text.push_str(&format!(
            "Clock events:       merged into {} entries of one experiment, thread, CPU, sample \
             and stack (a filter on time reads each event again)\n",
            ctx.model.events.len()
        ));
    }
    for counter in &counters {
        text.push_str(&format!(
            "{:<20}{} events; selected {} ({}%)\n",
            format!("{}:", counter.name),
            counter.all,
            counter.selected,
            percent(counter.selected, counter.all)
        ));
    }
    let json = json!({
        "report": "overview",
        "experiments": ctx.model.experiments.iter().map(|e| e.path.display().to_string()).collect::<Vec<_>>(),
        "duration_seconds": duration as f64 / 1e9,
        "threads": threads,
        "samples": samples,
        "clock_profiling": profiling,
        "metrics": metrics.iter().map(|(_, name)| name).collect::<Vec<_>>(),
        "counters": counters.iter().map(|c| c.json.clone()).collect::<Vec<_>>(),
        "total": value_json(all),
        "selected": value_json(selected),
        "clock_entries": ctx.model.events.len(),
        "clock_events_merged": ctx.model.events_merged,
    });
    Report { text, json }
}

/// One counter in `overview`: its intervals, and its events recorded and
/// selected.
struct CounterOverview {
    name: String,
    all: u64,
    selected: u64,
    text: String,
    json: Json,
}

fn counter_overview(ctx: &Context) -> Vec<CounterOverview> {
    let model = ctx.model;
    let mut all = vec![0u64; model.counters.len()];
    for entry in &model.counter_events {
        all[usize::from(entry.counter)] += entry.count;
    }
    let selected = ctx.total();
    model
        .counters
        .iter()
        .enumerate()
        .map(|(slot, counter)| {
            let intervals: std::collections::BTreeSet<u64> = model
                .experiments
                .iter()
                .flat_map(|e| &e.counters)
                .filter(|c| c.slot == u8::try_from(slot).ok())
                .map(|c| c.spec.interval)
                .collect();
            let listed: Vec<String> = intervals.iter().map(u64::to_string).collect();
            let scaled = match counter.scaled {
                true => " (scaled for multiplexing)",
                false => "",
            };
            CounterOverview {
                name: counter.name().to_string(),
                all: all[slot],
                selected: selected.counters.get(slot).copied().unwrap_or(0),
                text: format!(
                    "{} every {} events{scaled}",
                    counter.name(),
                    listed.join(" or ")
                ),
                json: json!({
                    "name": counter.name(),
                    "intervals": intervals,
                    "scaled": counter.scaled,
                    "events": all[slot],
                    "selected_events": selected.counters.get(slot).copied().unwrap_or(0),
                }),
            }
        })
        .collect()
}

/// The counters' metrics (title, name), with CPI and IPC when they can be
/// computed.
fn counter_metrics(model: &Model) -> Vec<(String, String)> {
    let mut metrics: Vec<(String, String)> = model
        .counters
        .iter()
        .map(|c| (c.name().to_string(), c.name().to_string()))
        .collect();
    if model.has_cycles_and_instructions() {
        for metric in [commands::MetricName::Cpi, commands::MetricName::Ipc] {
            metrics.push((metric.title().to_string(), metric.name().to_string()));
        }
    }
    metrics
}

/// Process figures of a sample's interval: its values minus the previous
/// sample's (the first sample covers the process up to it).
fn interval(samples: &[Sample], index: usize) -> [u64; 8] {
    let figures = |s: &Sample| {
        [
            s.utime_ns, s.stime_ns, s.minflt, s.majflt, s.nvcsw, s.nivcsw, s.inblock, s.oublock,
        ]
    };
    let now = figures(&samples[index]);
    match index.checked_sub(1).map(|i| figures(&samples[i])) {
        Some(before) => std::array::from_fn(|i| now[i].saturating_sub(before[i])),
        None => now,
    }
}

/// `statistics`: process-wide figures from the samples, over the selected
/// sample intervals.
pub fn statistics(ctx: &Context, selected: &ListSelection, experiments: &[bool]) -> Report {
    let mut sums = [0u64; 8];
    let mut max_rss = 0u64;
    let kept = |i: usize| experiments.get(i).copied().unwrap_or(true);
    let chosen = ctx.model.experiments.iter().enumerate();
    for (_, expt) in chosen.filter(|&(i, _)| kept(i)) {
        for (i, sample) in expt.samples.iter().enumerate() {
            if !selected.contains(sample.number) {
                continue;
            }
            let figures = interval(&expt.samples, i);
            for (sum, v) in sums.iter_mut().zip(figures) {
                *sum += v;
            }
            max_rss = max_rss.max(sample.rss_kb);
        }
    }
    let recorded = ctx.total();
    let labels = [
        "User CPU time (s)",
        "System CPU time (s)",
        "Minor page faults",
        "Major page faults",
        "Voluntary context switches",
        "Involuntary context switches",
        "Input blocks",
        "Output blocks",
    ];
    let mut text = String::from("Process statistics of the selected samples\n");
    for (i, (label, value)) in labels.iter().zip(sums).enumerate() {
        let shown = if i < 2 {
            seconds(value)
        } else {
            value.to_string()
        };
        text.push_str(&format!("  {label:<30} {shown:>14}\n"));
    }
    text.push_str(&format!("  {:<30} {:>14}\n", "Maximum RSS (KB)", max_rss));
    text.push_str(&format!(
        "  {:<30} {:>14}\n",
        "Recorded CPU time (s)",
        seconds(recorded.ns)
    ));
    let json = json!({
        "report": "statistics",
        "user_cpu_seconds": sums[0] as f64 / 1e9,
        "system_cpu_seconds": sums[1] as f64 / 1e9,
        "minor_faults": sums[2],
        "major_faults": sums[3],
        "voluntary_context_switches": sums[4],
        "involuntary_context_switches": sums[5],
        "input_blocks": sums[6],
        "output_blocks": sums[7],
        "max_rss_kb": max_rss,
        "recorded_cpu": value_json(recorded),
    });
    Report { text, json }
}

/// What `header` says of the experiments together: which did not end normally,
/// and whether they ran different programs.
fn group_notes(model: &Model) -> Vec<String> {
    let mut notes = Vec::new();
    // The host tells experiments apart only when there are several.
    let hosts: std::collections::BTreeSet<Option<&str>> =
        model.experiments.iter().map(|e| e.host()).collect();
    for (i, expt) in model.experiments.iter().enumerate() {
        let ending = Ending::of(expt);
        if ending.normal() {
            continue;
        }
        let place = placement(expt);
        let mut which = expt.path.display().to_string();
        if let Some(rank) = place.rank {
            which.push_str(&format!(", rank {rank}"));
        }
        if let (Some(host), true) = (&place.host, hosts.len() > 1) {
            which.push_str(&format!(", host {host}"));
        }
        notes.push(format!(
            "experiment {} ({which}) did not end normally: {}",
            i + 1,
            ending.text()
        ));
    }
    // The founders' programs (a descendant may exec another by design).
    let mut programs: BTreeMap<String, Vec<u16>> = BTreeMap::new();
    for (i, expt) in model.experiments.iter().enumerate() {
        if let (Some(start), true) = (&expt.start, expt.path == expt.founder) {
            let exe = start.exe.display().to_string();
            programs.entry(exe).or_default().push(i as u16);
        }
    }
    if programs.len() > 1 {
        let listed: Vec<String> = programs
            .iter()
            .map(|(exe, experiments)| {
                let numbers: Vec<String> =
                    experiments.iter().map(|e| (e + 1).to_string()).collect();
                format!("{exe} (experiment {})", numbers.join(", "))
            })
            .collect();
        notes.push(format!(
            "the experiments ran different programs: {}",
            listed.join("; ")
        ));
    }
    notes
}

/// `header`: how each experiment was recorded, and what went wrong.
pub fn header(ctx: &Context) -> Report {
    let mut text = String::new();
    let mut list = Vec::new();
    let notes = group_notes(ctx.model);
    for note in &notes {
        text.push_str(&format!("Note: {note}\n"));
    }
    if !notes.is_empty() {
        text.push('\n');
    }
    for expt in &ctx.model.experiments {
        text.push_str(&format!("Experiment: {}\n", expt.path.display()));
        text.push_str(&format!("  Format version:   {}\n", expt.format_version));
        let mut notes = Vec::new();
        for event in &expt.log {
            match &event.event {
                Event::Warning(m) => notes.push(format!("warning: {m}")),
                Event::Error(m) => notes.push(format!("error: {m}")),
                _ => {}
            }
        }
        if let Some(s) = &expt.start {
            let lineage = if s.lineage.is_empty() {
                "founder".to_string()
            } else {
                s.lineage.clone()
            };
            text.push_str(&format!("  Target:           {}\n", s.args));
            text.push_str(&format!("  Executable:       {}\n", s.exe.display()));
            text.push_str(&format!(
                "  Process:          pid {} (parent {}), {lineage}\n",
                s.pid, s.ppid
            ));
            text.push_str(&format!("  Started:          {}\n", date(s.realtime_ns)));
            if let Some(host) = &s.host {
                text.push_str(&format!("  Host:             {host}\n"));
            }
            text.push_str(&format!("  Collected by:     {}\n", s.mode.name()));
            let profiling = match s.profile_ns {
                0 => "off".to_string(),
                ns => format!(
                    "{:.3} ms ({}), stack depth limit {}",
                    ns as f64 / 1e6,
                    s.clock,
                    s.depth
                ),
            };
            text.push_str(&format!("  Clock profiling:  {profiling}\n"));
            let period = match s.sample_ns {
                0 => "manual".to_string(),
                ns => format!("every {:.3} s", ns as f64 / 1e9),
            };
            text.push_str(&format!("  Samples:          {period}\n"));
        }
        if let Some((rank, size)) = experiment::log::mpi_place(&expt.log) {
            text.push_str(&format!("  MPI rank:         {rank} of {size}\n"));
        }
        if !expt.counters.is_empty() {
            let counters: Vec<String> = expt.counters.iter().map(counter_text).collect();
            text.push_str(&format!("  Counters:         {}\n", counters.join(", ")));
        }
        let ending = Ending::of(expt);
        let end = match ending {
            Ending::Exit(_) => format!("process ended ({})", ending.text()),
            Ending::Signal(_) => format!("process {} (ended early)", ending.text()),
            Ending::Closed => ending.text(),
            Ending::CutShort => "no end record: killed, or still running".to_string(),
        };
        text.push_str(&format!("  End:              {end}\n"));
        if let Some(n) = &expt.notes {
            text.push_str(&format!("  Notes:            {}\n", n.trim_end()));
        }
        for note in &notes {
            text.push_str(&format!("  {note}\n"));
        }
        text.push('\n');
        list.push(json!({
            "path": expt.path.display().to_string(),
            "format_version": expt.format_version,
            "target": expt.start.as_ref().map(|s| s.args.clone()),
            "pid": expt.start.as_ref().map(|s| s.pid),
            "lineage": expt.start.as_ref().map(|s| s.lineage.clone()),
            "profile_ns": expt.start.as_ref().map(|s| s.profile_ns),
            "clock": expt.start.as_ref().map(|s| s.clock.clone()),
            "host": expt.host(),
            "mpi_rank": expt.mpi_rank(),
            "end": end,
            "ended_normally": ending.normal(),
            "notes": expt.notes,
            "messages": notes,
            "counters": expt.counters.iter().map(counter_json).collect::<Vec<_>>(),
        }));
    }
    for warning in &ctx.model.warnings {
        text.push_str(&format!("analyzer warning: {warning}\n"));
    }
    Report {
        text,
        json: json!({"report": "header", "notes": notes, "experiments": list,
                     "warnings": ctx.model.warnings}),
    }
}

/// A counter in `header`: its name and interval, and what else was asked.
fn counter_text(counter: &ExperimentCounter) -> String {
    let spec = &counter.spec;
    let mut text = format!("{} every {} events", spec.name, spec.interval);
    if spec.data_address {
        text.push_str(", with data addresses");
    }
    if counter.scaled {
        text.push_str(", scaled for multiplexing");
    }
    if counter.slot.is_none() {
        text.push_str(", not shown (too many counters)");
    }
    text
}

fn counter_json(counter: &ExperimentCounter) -> Json {
    let spec = &counter.spec;
    json!({
        "index": counter.index,
        "name": spec.name,
        "type": spec.kind,
        "config": spec.config,
        "config1": spec.config1,
        "config2": spec.config2,
        "interval": spec.interval,
        "data_address": spec.data_address,
        "scaled": counter.scaled,
    })
}

/// A CLOCK_REALTIME time as `YYYY-MM-DD HH:MM:SS UTC`.
fn date(realtime_ns: u64) -> String {
    let secs = realtime_ns / 1_000_000_000;
    let days = secs / 86_400;
    let rem = secs % 86_400;
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02} UTC",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn dates_are_civil_utc() {
        assert_eq!(super::date(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(
            super::date(1_700_000_000_000_000_000),
            "2023-11-14 22:13:20 UTC"
        );
    }
}
