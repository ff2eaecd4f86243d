//! Per-function clock-profile metrics: exclusive and inclusive thread CPU
//! time (the manual's "How Metrics Are Assigned to Program Structure":
//! exclusive = events whose leaf PC is in the function; inclusive = events with the function anywhere on the stack, counted
//! once per event even under recursion).

use crate::metrics::{function_metrics, View, ViewSettings, Weights};
use crate::model::{NO_STACK, TOTAL};
use crate::Result;
use experiment::layout::StackStatus;
use experiment::Experiment;

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

/// Per-function times of `expt`'s clock events (not its descendants), from
/// the same model and metrics as the analysis language.
pub fn clock_profile(expt: &Experiment) -> Result<ClockProfile> {
    let model = crate::load(&[expt.path().to_path_buf()], false)?;
    let view = View::new(&model, &ViewSettings::default());
    let weights = Weights::all(&model);
    let mut profile = ClockProfile {
        total_ns: weights.total.ns,
        events: weights.total.events,
        ..ClockProfile::default()
    };
    // Once per distinct stack, not per event.
    let mut reaches_main: Vec<bool> = vec![false; model.stacks.len()];
    view.for_each_stack(|id, frames| {
        reaches_main[id as usize] = frames
            .iter()
            .any(|&f| model.function(view.frame(f).function).name == "main");
    });
    for event in &model.events {
        let count = u64::from(event.count);
        if event.stack == NO_STACK {
            profile.events_without_stack += count;
            continue;
        }
        let Some(stack) = model.stacks.get(event.stack) else {
            continue;
        };
        match stack.status {
            StackStatus::Truncated => profile.truncated_stacks += count,
            StackStatus::Failed => profile.failed_stacks += count,
            StackStatus::Complete => {}
        }
        profile.events_reaching_main += count * u64::from(reaches_main[event.stack as usize]);
    }
    profile.functions = function_metrics(&view, &weights)
        .into_iter()
        .filter(|(id, _)| *id != TOTAL)
        .map(|(id, value)| FunctionTime {
            name: model.function(id).name.clone(),
            exclusive_ns: value.exclusive.ns,
            inclusive_ns: value.inclusive.ns,
            events: value.exclusive.events,
        })
        .collect();
    profile.functions.sort_by(|a, b| {
        b.exclusive_ns
            .cmp(&a.exclusive_ns)
            .then(a.name.cmp(&b.name))
    });
    Ok(profile)
}
