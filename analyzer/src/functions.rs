//! Per-function clock-profile metrics: exclusive and inclusive thread CPU
//! time (seed 002: exclusive = events whose leaf PC is in the function;
//! inclusive = events with the function anywhere on the stack, counted
//! once per event even under recursion).

use crate::symbols::Symbolizer;
use crate::Result;
use experiment::log::Event;
use experiment::Experiment;
use std::collections::{HashMap, HashSet};

/// Name used for PCs no function symbol covers.
pub const UNKNOWN: &str = "<Unknown>";

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FunctionTime {
    pub name: String,
    pub exclusive_ns: u64,
    pub inclusive_ns: u64,
    pub events: u64,
}

/// The clock profile of one experiment (not its descendants).
#[derive(Debug, Clone, Default)]
pub struct ClockProfile {
    pub total_ns: u64,
    pub events: u64,
    /// Events whose stack record is missing (lost with a partly written block).
    pub events_without_stack: u64,
    pub functions: Vec<FunctionTime>,
    /// Events whose stack reached `main` (or a function named like it).
    pub events_reaching_main: u64,
    pub truncated_stacks: u64,
    pub failed_stacks: u64,
}

impl ClockProfile {
    pub fn function(&self, name: &str) -> Option<&FunctionTime> {
        self.functions.iter().find(|f| f.name == name)
    }
}

/// A symbolizer for the objects `expt` recorded.
pub fn symbolizer_for(expt: &Experiment) -> Result<Symbolizer> {
    let log = expt.log()?;
    let objects: Vec<_> = log
        .iter()
        .filter_map(|e| match &e.event {
            Event::Object { path, base, lo, hi } => Some((path.clone(), *base, *lo, *hi)),
            _ => None,
        })
        .collect();
    Ok(Symbolizer::new(
        objects.iter().map(|(p, b, l, h)| (p.as_path(), *b, *l, *h)),
    ))
}

/// Per-function times of `expt`'s clock events.
pub fn clock_profile(expt: &Experiment) -> Result<ClockProfile> {
    let symbols = symbolizer_for(expt)?;
    let stacks = expt.stacks()?;
    let events = expt.clock_events()?;
    let mut profile = ClockProfile::default();
    let mut by_name: HashMap<String, FunctionTime> = HashMap::new();
    let mut names_of_stack: HashMap<u64, Vec<String>> = HashMap::new();
    for event in &events {
        let weight = u64::from(event.weight_ns);
        profile.total_ns += weight;
        profile.events += 1;
        let Some(stack) = stacks.get(&event.stack_id) else {
            profile.events_without_stack += 1;
            continue;
        };
        match stack.status {
            experiment::layout::StackStatus::Truncated => profile.truncated_stacks += 1,
            experiment::layout::StackStatus::Failed => profile.failed_stacks += 1,
            experiment::layout::StackStatus::Complete => {}
        }
        let names = names_of_stack.entry(event.stack_id).or_insert_with(|| {
            stack
                .pcs
                .iter()
                .enumerate()
                .map(|(i, pc)| {
                    // Return addresses point after the call: look up pc-1.
                    let pc = if i == 0 { *pc } else { pc.saturating_sub(1) };
                    symbols.function(pc).unwrap_or(UNKNOWN).to_string()
                })
                .collect()
        });
        if names.iter().any(|n| n == "main") {
            profile.events_reaching_main += 1;
        }
        let mut seen = HashSet::new();
        for (depth, name) in names.iter().enumerate() {
            let entry = by_name.entry(name.clone()).or_insert_with(|| FunctionTime {
                name: name.clone(),
                ..FunctionTime::default()
            });
            if depth == 0 {
                entry.exclusive_ns += weight;
                entry.events += 1;
            }
            if seen.insert(name.as_str()) {
                entry.inclusive_ns += weight;
            }
        }
    }
    profile.functions = by_name.into_values().collect();
    profile.functions.sort_by(|a, b| {
        b.exclusive_ns
            .cmp(&a.exclusive_ns)
            .then(a.name.cmp(&b.name))
    });
    Ok(profile)
}
