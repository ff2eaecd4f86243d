//! Metrics from a [`Model`]: exclusive, inclusive and attributed values
//! (seed 002) for functions, load objects, lines and PCs, and the call tree.
//!
//! Events are first summed per distinct stack (`Weights`), then each stack
//! is walked once with its total: the cost is the number of distinct
//! stacks, not of events.

use crate::model::*;
use std::collections::{HashMap, HashSet};
use std::hash::Hash;

/// One metric value: clock time and the number of events behind it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Value {
    pub ns: u64,
    pub events: u64,
}

impl Value {
    fn add(&mut self, other: Value) {
        self.ns += other.ns;
        self.events += other.events;
    }

    pub fn seconds(&self) -> f64 {
        self.ns as f64 / 1e9
    }
}

/// Exclusive and inclusive values of one item.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct ExclInclValue {
    pub exclusive: Value,
    pub inclusive: Value,
}

/// How stacks are shown: inlined functions as their own frames or not,
/// and which load objects are folded into one `<lib>` entry.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ViewSettings {
    pub inlines: bool,
    pub hidden_objects: HashSet<ObjectId>,
}

/// One frame as shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frame {
    pub function: FunctionId,
    pub line: Option<LineId>,
    pub pc: Option<PcId>,
}

impl Frame {
    fn special(function: FunctionId) -> Frame {
        Frame {
            function,
            line: None,
            pc: None,
        }
    }
}

/// Every distinct stack of a model as shown under some settings.
#[derive(Debug, Clone)]
pub struct View {
    /// Leaf first; indexed like `Model::stacks`.
    pub stacks: Vec<Vec<Frame>>,
    /// The frames of an event whose stack was lost.
    pub lost: Vec<Frame>,
}

impl View {
    pub fn new(model: &Model, settings: &ViewSettings) -> View {
        View {
            stacks: model
                .stacks
                .iter()
                .map(|s| frames_of(model, settings, s))
                .collect(),
            lost: vec![Frame::special(UNKNOWN)],
        }
    }

    pub fn frames(&self, stack: StackId) -> &[Frame] {
        match stack {
            NO_STACK => &self.lost,
            s => self
                .stacks
                .get(s as usize)
                .map_or(&self.lost, Vec::as_slice),
        }
    }
}

fn frames_of(model: &Model, settings: &ViewSettings, stack: &StackEntry) -> Vec<Frame> {
    let mut frames: Vec<Frame> = Vec::with_capacity(stack.pcs.len() + 1);
    for &pc_id in &stack.pcs {
        let pc = model.pc(pc_id);
        if let Some(object) = pc.object.filter(|o| settings.hidden_objects.contains(o)) {
            let hidden = model.object(object).hidden_function;
            // Consecutive frames of a hidden object are one call of it.
            if frames.last().is_some_and(|f| f.function == hidden) {
                continue;
            }
            frames.push(Frame {
                function: hidden,
                line: None,
                pc: Some(pc_id),
            });
            continue;
        }
        if settings.inlines {
            frames.extend(pc.inlined.iter().map(|step| Frame {
                function: step.function,
                line: step.line,
                pc: Some(pc_id),
            }));
        }
        frames.push(Frame {
            function: pc.function,
            line: pc.line,
            pc: Some(pc_id),
        });
    }
    if stack.status != experiment::layout::StackStatus::Complete {
        frames.push(Frame::special(TRUNCATED));
    }
    if frames.is_empty() {
        frames.push(Frame::special(UNKNOWN));
    }
    frames
}

/// Selected events summed per stack.
#[derive(Debug, Clone, Default)]
pub struct Weights {
    /// Indexed by stack id; the last slot is for events whose stack was
    /// lost (`NO_STACK`). A dense vector: summing ten million events is
    /// one indexed add each.
    sums: Vec<Value>,
    pub total: Value,
}

impl Weights {
    /// Sums the events `keep` accepts.
    pub fn new(model: &Model, keep: impl Fn(&EventEntry) -> bool) -> Weights {
        let lost_slot = model.stacks.len();
        let mut sums = vec![Value::default(); lost_slot + 1];
        let mut total = Value::default();
        for event in model.events.iter().filter(|e| keep(e)) {
            let value = Value {
                ns: u64::from(event.weight_ns),
                events: 1,
            };
            let slot = match event.stack {
                NO_STACK => lost_slot,
                stack => (stack as usize).min(lost_slot),
            };
            sums[slot].add(value);
            total.add(value);
        }
        Weights { sums, total }
    }

    /// Every stack with selected events, and their sum.
    pub fn per_stack(&self) -> impl Iterator<Item = (StackId, Value)> + '_ {
        let lost_slot = self.sums.len().saturating_sub(1);
        self.sums
            .iter()
            .enumerate()
            .filter(|(_, v)| v.events > 0)
            .map(move |(i, &v)| match i == lost_slot {
                true => (NO_STACK, v),
                false => (i as StackId, v),
            })
    }

    fn stacks<'v>(&'v self, view: &'v View) -> impl Iterator<Item = (&'v [Frame], Value)> + 'v {
        self.per_stack()
            .map(move |(stack, value)| (view.frames(stack), value))
    }
}

/// Exclusive (leaf frame) and inclusive (anywhere, once per stack) values
/// per key; `key` maps a frame to what is measured (None: not counted).
pub fn exclusive_inclusive<K: Hash + Eq + Copy>(
    view: &View,
    weights: &Weights,
    key: impl Fn(&Frame) -> Option<K>,
) -> HashMap<K, ExclInclValue> {
    let mut out: HashMap<K, ExclInclValue> = HashMap::new();
    let mut seen: Vec<K> = Vec::new();
    for (frames, value) in weights.stacks(view) {
        if let Some(leaf) = frames.first().and_then(&key) {
            out.entry(leaf).or_default().exclusive.add(value);
        }
        seen.clear();
        for k in frames.iter().filter_map(&key) {
            if !seen.contains(&k) {
                seen.push(k);
                out.entry(k).or_default().inclusive.add(value);
            }
        }
    }
    out
}

/// Per function (`<Total>` included).
pub fn function_metrics(view: &View, weights: &Weights) -> HashMap<FunctionId, ExclInclValue> {
    let mut out = exclusive_inclusive(view, weights, |f| Some(f.function));
    out.insert(
        TOTAL,
        ExclInclValue {
            exclusive: weights.total,
            inclusive: weights.total,
        },
    );
    out
}

/// What an object metric is keyed by: a load object, or no object
/// (`<Unknown>` PCs and `<Truncated-stack>`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ObjectKey {
    Object(ObjectId),
    Unknown,
}

pub fn object_metrics(
    model: &Model,
    view: &View,
    weights: &Weights,
) -> HashMap<ObjectKey, ExclInclValue> {
    exclusive_inclusive(view, weights, |f| {
        Some(match f.pc.and_then(|pc| model.pc(pc).object) {
            Some(o) => ObjectKey::Object(o),
            None => ObjectKey::Unknown,
        })
    })
}

/// A source line, or the instructions of a function without line numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LineKey {
    Line(LineId),
    NoLine(FunctionId),
}

pub fn line_metrics(view: &View, weights: &Weights) -> HashMap<LineKey, ExclInclValue> {
    exclusive_inclusive(view, weights, |f| {
        Some(match f.line {
            Some(line) => LineKey::Line(line),
            None => LineKey::NoLine(f.function),
        })
    })
}

/// Per PC; frames without a PC (special functions) are not counted.
pub fn pc_metrics(view: &View, weights: &Weights) -> HashMap<PcId, ExclInclValue> {
    exclusive_inclusive(view, weights, |f| f.pc)
}

/// The callers-callees picture of one function (seed 002).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallersCallees {
    pub center: FunctionId,
    pub value: ExclInclValue,
    /// Attributed to each caller (`<Total>` for the outermost frame);
    /// sums to the centre's inclusive value.
    pub callers: Vec<(FunctionId, Value)>,
    /// Attributed to each callee; with the exclusive value, sums to the
    /// centre's inclusive value.
    pub callees: Vec<(FunctionId, Value)>,
}

/// Callers and callees of `center`, taken at its innermost occurrence in
/// each stack, so recursion counts every event once (seed 002: the
/// recursive function is its own caller for the deeper calls).
pub fn callers_callees(view: &View, weights: &Weights, center: FunctionId) -> CallersCallees {
    let mut acc = Attribution::default();
    for (frames, value) in weights.stacks(view) {
        if center == TOTAL {
            acc.add_total(frames, value);
        } else if let Some(i) = frames.iter().position(|f| f.function == center) {
            acc.add_occurrence(frames, i, value);
        }
    }
    acc.finish(center)
}

/// [`callers_callees`] of every function on some selected stack (and
/// `<Total>`), in one pass over the stacks.
pub fn all_callers_callees(view: &View, weights: &Weights) -> HashMap<FunctionId, CallersCallees> {
    let mut all: HashMap<FunctionId, Attribution> = HashMap::new();
    let mut seen: Vec<FunctionId> = Vec::new();
    for (frames, value) in weights.stacks(view) {
        all.entry(TOTAL).or_default().add_total(frames, value);
        seen.clear();
        // Leaf first: the first occurrence of a function is its innermost.
        for (i, frame) in frames.iter().enumerate() {
            if !seen.contains(&frame.function) {
                seen.push(frame.function);
                all.entry(frame.function)
                    .or_default()
                    .add_occurrence(frames, i, value);
            }
        }
    }
    all.into_iter()
        .map(|(center, acc)| (center, acc.finish(center)))
        .collect()
}

/// Sums of one centre's callers-callees picture.
#[derive(Default)]
struct Attribution {
    value: ExclInclValue,
    callers: HashMap<FunctionId, Value>,
    callees: HashMap<FunctionId, Value>,
}

impl Attribution {
    /// `<Total>` calls every stack's root.
    fn add_total(&mut self, frames: &[Frame], value: Value) {
        self.value.inclusive.add(value);
        if let Some(root) = frames.last() {
            self.callees.entry(root.function).or_default().add(value);
        }
    }

    /// The centre is `frames[i]` (its innermost occurrence).
    fn add_occurrence(&mut self, frames: &[Frame], i: usize, value: Value) {
        self.value.inclusive.add(value);
        let caller = frames.get(i + 1).map_or(TOTAL, |f| f.function);
        self.callers.entry(caller).or_default().add(value);
        match i.checked_sub(1).map(|j| frames[j].function) {
            Some(callee) => self.callees.entry(callee).or_default().add(value),
            None => self.value.exclusive.add(value),
        }
    }

    fn finish(self, center: FunctionId) -> CallersCallees {
        CallersCallees {
            center,
            value: self.value,
            callers: sorted_by_value(self.callers),
            callees: sorted_by_value(self.callees),
        }
    }
}

fn sorted_by_value(map: HashMap<FunctionId, Value>) -> Vec<(FunctionId, Value)> {
    let mut list: Vec<_> = map.into_iter().collect();
    list.sort_by(|a, b| b.1.ns.cmp(&a.1.ns).then(a.0.cmp(&b.0)));
    list
}

/// A node of the calling-context tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallTreeNode {
    pub function: FunctionId,
    pub value: ExclInclValue,
    /// Sorted by inclusive value, largest first.
    pub children: Vec<CallTreeNode>,
}

/// The whole calling-context tree under `<Total>`.
pub fn call_tree(view: &View, weights: &Weights) -> CallTreeNode {
    let mut root = CallTreeNode {
        function: TOTAL,
        value: ExclInclValue::default(),
        children: Vec::new(),
    };
    for (frames, value) in weights.stacks(view) {
        root.value.inclusive.add(value);
        let mut node = &mut root;
        for frame in frames.iter().rev() {
            let index = match node
                .children
                .iter()
                .position(|c| c.function == frame.function)
            {
                Some(i) => i,
                None => {
                    node.children.push(CallTreeNode {
                        function: frame.function,
                        value: ExclInclValue::default(),
                        children: Vec::new(),
                    });
                    node.children.len() - 1
                }
            };
            node = &mut node.children[index];
            node.value.inclusive.add(value);
        }
        node.value.exclusive.add(value);
    }
    sort_tree(&mut root);
    root
}

fn sort_tree(node: &mut CallTreeNode) {
    node.children.sort_by(|a, b| {
        b.value
            .inclusive
            .ns
            .cmp(&a.value.inclusive.ns)
            .then(a.function.cmp(&b.function))
    });
    node.children.iter_mut().for_each(sort_tree);
}

#[cfg(test)]
mod tests;
