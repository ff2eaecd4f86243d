//! er_print's heap-tracing listings: `leaks` (blocks never freed, grouped
//! by allocation stack, largest first), `allocs` (allocations grouped the
//! same way) and `heap` (totals, the peak in use and when, sizes), from
//! the heap data the loader put in the model (the manual's "Heap Tracing
//! Data": Allocations, Bytes Allocated, Leaks, Bytes Leaked): its
//! allocations with their leak flags and stacks, and what its replay of
//! the frees found. No file is read again.
//!
//! A leak is a block not freed when the program ended; in an experiment
//! still being written (at a stop of a live program), a block not freed
//! yet. Groups are by the call stack as shown (function and line of each
//! frame), so the same path in several processes is one group.

mod shown;
#[cfg(test)]
mod tests;

use crate::model::{HeapEntry, HeapReplay, Model, PathWalk, StackId, StackTable, NO_STACK};
use crate::parallel::on_two_threads;
use serde_json::{json, Value as Json};
use shown::{
    FrameMemo, Growing, Key, Keys, ModelFrames, Nodes, ShownFrame, ShownLine, ShownWalk, Tree,
};
use std::fmt::Write;
use std::sync::Arc;

/// Which grouping a listing shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeapListing {
    Leaks,
    Allocations,
}

/// Which forms of a listing to make: the JSON of a million groups with
/// their stacks is tens of gigabytes of `Json` values, worth making only
/// when it is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListingForm {
    /// The text; the JSON is `Json::Null`.
    Text,
    /// The JSON; the text is empty.
    Json,
    Both,
}

/// Counts and bytes of what a listing counts.
#[derive(Debug, Clone, Copy, Default)]
struct Sums {
    count: u64,
    bytes: u64,
}

impl Sums {
    fn add(&mut self, bytes: u64) {
        self.count += 1;
        self.bytes += bytes;
    }

    /// Adds what `other` counts.
    fn add_sums(&mut self, other: Sums) {
        self.count += other.count;
        self.bytes += other.bytes;
    }
}

/// The replays of the experiments that traced the heap.
fn heap_replays(model: &Model) -> Result<&[HeapReplay], String> {
    if model.heap_replays.is_empty() {
        return Err("no heap-tracing data (collect with -H on, or collector heaptrace on)".into());
    }
    Ok(&model.heap_replays)
}

/// What a listing counts, summed by model stack, and by experiment for the
/// allocations whose stack record was lost.
struct StackSums {
    by_stack: Vec<Sums>,
    /// Per model stack counted: its experiment.
    experiment: Vec<u16>,
    lost: Vec<Sums>,
}

impl StackSums {
    /// The sums of the model's heap entries, each half summed on a thread
    /// of its own.
    fn of(model: &Model, what: HeapListing) -> StackSums {
        let (earlier, later) = model.heap.split_at(model.heap.len() / 2);
        let (mut sums, later) = on_two_threads(
            || StackSums::of_entries(model, earlier, what),
            || StackSums::of_entries(model, later, what),
        );
        sums.add_later(&later);
        sums
    }

    fn of_entries(model: &Model, entries: &[HeapEntry], what: HeapListing) -> StackSums {
        let mut sums = StackSums {
            by_stack: vec![Sums::default(); model.stacks.len()],
            experiment: vec![0; model.stacks.len()],
            lost: vec![Sums::default(); model.experiments.len()],
        };
        let counted = |e: &HeapEntry| what == HeapListing::Allocations || e.leaked;
        for (i, entry) in entries.iter().enumerate() {
            // A later allocation's stack is fetched while one is added.
            if let Some(ahead) = entries.get(i + crate::metrics::PREFETCH_AHEAD) {
                sums.by_stack
                    .get(ahead.stack as usize)
                    .map(crate::memory::prefetch_one);
            }
            if !counted(entry) {
                continue;
            }
            let slot = match entry.stack {
                NO_STACK => sums.lost.get_mut(usize::from(entry.experiment)),
                stack => {
                    if let Some(experiment) = sums.experiment.get_mut(stack as usize) {
                        *experiment = entry.experiment;
                    }
                    sums.by_stack.get_mut(stack as usize)
                }
            };
            if let Some(slot) = slot {
                slot.add(entry.bytes);
            }
        }
        sums
    }

    /// The group of the stacks whose records were lost, if any, with its
    /// place in the walk.
    fn lost_group(&self, rank: u64) -> Option<Group> {
        let mut sums = Sums::default();
        for &lost in &self.lost {
            sums.add_sums(lost);
        }
        (sums.count > 0).then_some(Group {
            key: Key::default(),
            sums,
            rank,
            stack: NO_STACK,
        })
    }

    /// Adds the sums of the entries after those summed: a stack's
    /// experiment is that of its last entry.
    fn add_later(&mut self, later: &StackSums) {
        let stacks = self.by_stack.iter_mut().zip(&mut self.experiment);
        let later_stacks = later.by_stack.iter().zip(&later.experiment);
        for ((sums, experiment), (later, &later_experiment)) in stacks.zip(later_stacks) {
            if later.count > 0 {
                sums.add_sums(*later);
                *experiment = later_experiment;
            }
        }
        for (sums, &later) in self.lost.iter_mut().zip(&later.lost) {
            sums.add_sums(later);
        }
    }
}

/// `leaks` or `allocs`: (text, JSON).
pub fn listing(
    model: &Model,
    what: HeapListing,
    limit: Option<usize>,
) -> Result<(String, Json), String> {
    listing_as(model, what, limit, ListingForm::Both)
}

/// `leaks` or `allocs` in the forms asked for: (text, JSON).
pub fn listing_as(
    model: &Model,
    what: HeapListing,
    limit: Option<usize>,
    form: ListingForm,
) -> Result<(String, Json), String> {
    let grouped = Grouped::of(model, what, limit)?;
    let mut text = String::new();
    if form != ListingForm::Json {
        // Sized first: the text of a million groups is gigabytes, better
        // not copied as it grows.
        text.reserve(grouped.text_len());
        grouped
            .write_text(&mut |piece| {
                text.push_str(piece);
                Ok(())
            })
            .map_err(|e| e.to_string())?;
    }
    let doc = match form {
        ListingForm::Text => Json::Null,
        ListingForm::Json | ListingForm::Both => grouped.json(),
    };
    Ok((text, doc))
}

/// A listing's text written as it is made (`rdbx analyze`): the whole
/// `leaks` or `allocs` of a million stacks is gigabytes of text.
pub fn listing_stream(
    model: &Model,
    what: HeapListing,
    limit: Option<usize>,
) -> Result<crate::report::TextStream, String> {
    let grouped = Grouped::of(model, what, limit)?;
    Ok(Box::new(move |out| {
        grouped.write_text(&mut |piece| out.write_all(piece.as_bytes()))
    }))
}

/// Leaks or allocations grouped by their stack as shown, largest first.
struct Grouped {
    what: HeapListing,
    /// The listed groups (`limit`), in order, and the totals of all.
    picked: Picked,
    /// The listed groups' frames: per group, its node in a tree of the
    /// frames of their first stacks, and the frames' lines.
    nodes: Vec<u32>,
    tree: Tree,
    frames: FrameMemo,
}

/// Stacks shown alike: what they count, and the first of them.
#[derive(Debug, Clone, Copy, Default)]
struct Group {
    key: Key,
    sums: Sums,
    /// Twice the place of its first stack in the walk, plus one (the lost
    /// stacks' group goes right before a stack): ties are broken by it.
    rank: u64,
    /// That first stack; `NO_STACK` for the lost stacks' group.
    stack: StackId,
}

impl Grouped {
    fn of(model: &Model, what: HeapListing, limit: Option<usize>) -> Result<Grouped, String> {
        heap_replays(model)?;
        let sums = StackSums::of(model, what);
        let mut walked = walk_stacks(model, &sums);
        let lost = sums.lost_group(walked.lost_rank);
        // A part of the keys on each thread: the groups of both halves of
        // the walk added up, and the first ones picked.
        let limit = limit.unwrap_or(usize::MAX);
        let [[near_0, near_1], [far_0, far_1]] = walked.groups;
        let (picked, picked_1) = on_two_threads(
            || Picked::of(near_0.union(far_0, lost), limit),
            || Picked::of(near_1.union(far_1, None), limit),
        );
        let picked = picked.and(picked_1, limit);
        let (tree, nodes) = listed_frames(&model.stacks, &picked.first, &mut walked.frames);
        Ok(Grouped {
            what,
            picked,
            nodes,
            tree,
            frames: walked.frames,
        })
    }

    /// (noun, count key, bytes key, bytes title).
    fn words(&self) -> (&'static str, &'static str, &'static str, &'static str) {
        match self.what {
            HeapListing::Leaks => ("Leak", "leaks", "bytes_leaked", "Bytes Leaked"),
            HeapListing::Allocations => (
                "Allocation",
                "allocations",
                "bytes_allocated",
                "Bytes Allocated",
            ),
        }
    }

    fn listed(&self) -> &[Group] {
        &self.picked.first
    }

    /// The lines of the frames the `n`th listed group shows, leaf first.
    fn lines(&self, n: usize) -> impl Iterator<Item = &ShownLine> + '_ {
        self.tree.lines(&self.frames, self.nodes[n])
    }

    /// About how long the text is.
    fn text_len(&self) -> usize {
        let frames: usize = (0..self.nodes.len())
            .flat_map(|n| self.lines(n))
            .map(|line| line.text.len())
            .sum();
        frames + 100 * (self.nodes.len() + 1)
    }

    /// The text, a group at a time, each piece given to `emit`.
    fn write_text(&self, emit: &mut dyn FnMut(&str) -> std::io::Result<()>) -> std::io::Result<()> {
        let (noun, _, _, title) = self.words();
        let mut piece = format!(
            "Summary Results: Distinct {noun}s = {}, Total Instances = {}, Total {title} = {}\n",
            self.picked.groups, self.picked.sums.count, self.picked.sums.bytes
        );
        for (n, group) in self.listed().iter().enumerate() {
            let _ = writeln!(
                piece,
                "\n{noun} #{}, Instances = {}, {title} = {}",
                n + 1,
                group.sums.count,
                group.sums.bytes
            );
            for line in self.lines(n) {
                piece.push_str(&line.text);
            }
            if piece.len() >= 64 * 1024 {
                emit(&piece)?;
                piece.clear();
            }
        }
        emit(&piece)
    }

    fn json(&self) -> Json {
        let (_, count_key, bytes_key, _) = self.words();
        let list: Vec<Json> = (self.listed().iter().enumerate())
            .map(|(n, group)| {
                let stack: Vec<Json> = self.lines(n).map(|line| frame_json(&line.frame)).collect();
                json!({
                    count_key: group.sums.count,
                    bytes_key: group.sums.bytes,
                    "stack": stack,
                })
            })
            .collect();
        json!({
            "report": if self.what == HeapListing::Leaks { "leaks" } else { "allocs" },
            count_key: self.picked.sums.count,
            bytes_key: self.picked.sums.bytes,
            "groups": list,
        })
    }
}

/// The first groups of some, in order, and the totals of them all.
struct Picked {
    first: Vec<Group>,
    /// How many groups there are, and what they count.
    groups: usize,
    sums: Sums,
}

impl Picked {
    /// The first `limit` of `groups`.
    fn of(mut groups: Vec<Group>, limit: usize) -> Picked {
        let mut sums = Sums::default();
        for group in &groups {
            sums.add_sums(group.sums);
        }
        let count = groups.len();
        // Only the first ones need sorting (a hundred of a million).
        let listed = limit.min(count);
        if listed < count {
            if listed > 0 {
                groups.select_nth_unstable_by(listed - 1, largest_first);
            }
            groups.truncate(listed);
            groups.shrink_to_fit();
        }
        groups.sort_unstable_by(largest_first);
        Picked {
            first: groups,
            groups: count,
            sums,
        }
    }

    /// The first `limit` of both's groups.
    fn and(self, other: Picked, limit: usize) -> Picked {
        let mut sums = self.sums;
        sums.add_sums(other.sums);
        let listed = limit.min(self.first.len() + other.first.len());
        let mut first = Vec::with_capacity(listed);
        let mut mine = self.first.into_iter().peekable();
        let mut theirs = other.first.into_iter().peekable();
        while first.len() < listed {
            let next = match (mine.peek(), theirs.peek()) {
                (Some(a), Some(b)) if largest_first(b, a).is_lt() => theirs.next(),
                (Some(_), _) => mine.next(),
                (None, _) => theirs.next(),
            };
            first.extend(next);
        }
        Picked {
            first,
            groups: self.groups + other.groups,
            sums,
        }
    }
}

/// Largest first; equal ones in the order of their stacks in the files.
fn largest_first(a: &Group, b: &Group) -> std::cmp::Ordering {
    b.sums
        .bytes
        .cmp(&a.sums.bytes)
        .then(b.sums.count.cmp(&a.sums.count))
        .then(a.rank.cmp(&b.rank))
}

/// The frames of the groups `listed`: their first stacks walked again,
/// in walk order (so that each path's frames are made once), into a tree;
/// per group, its node.
fn listed_frames(stacks: &StackTable, listed: &[Group], memo: &mut FrameMemo) -> (Tree, Vec<u32>) {
    let unknown_stack = memo.record(ShownFrame {
        function: "<unknown stack>".into(),
        ..ShownFrame::default()
    });
    let mut in_walk_order: Vec<usize> = (0..listed.len()).collect();
    in_walk_order.sort_unstable_by_key(|&n| listed[n].rank);
    let mut walk = PathWalk::new(stacks);
    let mut frames = &*memo;
    let mut shown = ShownWalk::new(Growing {
        tree: Tree::default(),
        memo,
    });
    let mut nodes = vec![0; listed.len()];
    for (i, &n) in in_walk_order.iter().enumerate() {
        if let Some(&ahead) = in_walk_order.get(i + crate::metrics::PREFETCH_AHEAD) {
            stacks.prefetch(listed[ahead].stack);
        }
        nodes[n] = match walk.step(listed[n].stack) {
            Some(step) => shown.stack(&mut frames, step.kept, step.added),
            // The lost stacks' group (its stack is `NO_STACK`).
            None => shown.nodes.child(0, unknown_stack),
        };
    }
    (shown.nodes.tree, nodes)
}

/// Groups by key, in two tables by the top bit of the key's second half
/// (a key is a hash): a part of the keys each.
type KeyParts = [GroupTable; 2];

fn key_part(key: Key) -> usize {
    (key[1] >> 63) as usize
}

/// The groups of the stacks walked (or of part of them), the frames met,
/// and where the lost stacks' group goes (`u64::MAX`: after the others).
struct Walked<G> {
    groups: G,
    frames: FrameMemo,
    lost_rank: u64,
}

/// Groups every model stack `sums` counts something for by its key,
/// walking the stacks in the order of their records in the `stacks`
/// files (see `PathWalk`), experiment by experiment; the lost stacks'
/// group is placed before the first stack of an experiment after the
/// first that lost some (an experiment's lost stacks come after its
/// others). The walk is cut in two at the middle of the stacks'
/// positions, the halves walked on two threads (keys and frame codes do
/// not depend on the order frames are met in): the groups of each half.
fn walk_stacks(model: &Model, sums: &StackSums) -> Walked<[KeyParts; 2]> {
    let trampoline = shown::trampolines(model);
    let lost_after = sums.lost.iter().position(|l| l.count > 0);
    let middle = model.stacks.positions() / 2;
    let walk = |positions: std::ops::Range<u32>, first: usize| {
        let order = model.stacks.ids_in_walk_order_within(positions);
        let frames = ModelFrames::new(model, Arc::clone(&trampoline));
        walk_part(model, sums, &order, first, frames, lost_after)
    };
    // The second half's places in the walk come after any of the first's.
    let (mut near, far) = on_two_threads(
        || walk(0..middle, 0),
        || walk(middle..u32::MAX, model.stacks.len()),
    );
    near.frames.absorb(far.frames);
    Walked {
        groups: [near.groups, far.groups],
        frames: near.frames,
        lost_rank: near.lost_rank.min(far.lost_rank),
    }
}

/// Walks `order`, the stacks from place `first` of the walk on.
fn walk_part(
    model: &Model,
    sums: &StackSums,
    order: &[StackId],
    first: usize,
    mut frames: ModelFrames,
    lost_after: Option<usize>,
) -> Walked<KeyParts> {
    let mut walk = PathWalk::new(&model.stacks);
    let mut shown = ShownWalk::new(Keys);
    let mut groups = [(); 2].map(|_| GroupTable::with_capacity(order.len() / 2));
    let mut adding = Adding::default();
    let mut lost_rank = u64::MAX;
    for (i, &id) in order.iter().enumerate() {
        // Walk order is not id order: a later stack's entry and sums are
        // fetched while this one is walked.
        if let Some(&ahead) = order.get(i + crate::metrics::PREFETCH_AHEAD) {
            model.stacks.prefetch(ahead);
            sums.by_stack
                .get(ahead as usize)
                .map(crate::memory::prefetch_one);
            sums.experiment
                .get(ahead as usize)
                .map(crate::memory::prefetch_one);
        }
        let stack_sums = sums.by_stack[id as usize];
        if stack_sums.count == 0 {
            continue;
        }
        let rank = 2 * (first + i) as u64 + 1;
        let experiment = usize::from(sums.experiment[id as usize]);
        if lost_rank == u64::MAX && lost_after.is_some_and(|lost| experiment > lost) {
            lost_rank = rank - 1;
        }
        let Some(step) = walk.step(id) else {
            continue;
        };
        let key = shown.stack(&mut frames, step.kept, step.added);
        let group = Group {
            key,
            sums: stack_sums,
            rank,
            stack: id,
        };
        adding.add(&mut groups, group);
    }
    adding.finish(&mut groups);
    Walked {
        groups,
        frames: frames.into_memo(),
        lost_rank,
    }
}

/// Groups by key: open addressing with linear probing on the key's top
/// bits (a key is a hash already), a group in its slot (one cache miss).
struct GroupTable {
    /// A slot whose count is 0 is empty.
    slots: Vec<Group>,
    len: usize,
    /// 64 minus the table's size in bits.
    shift: u32,
}

impl GroupTable {
    /// A table for up to about `groups` groups without growing.
    fn with_capacity(groups: usize) -> GroupTable {
        let size = (groups * 3 / 2 + 1).next_power_of_two().max(64);
        GroupTable {
            slots: vec![Group::default(); size],
            len: 0,
            shift: 64 - size.trailing_zeros(),
        }
    }

    fn home(&self, key: Key) -> usize {
        (key[0] >> self.shift) as usize
    }

    /// Starts fetching the slot where `key` would be, and the line after
    /// it: a slot may straddle two, and a probe may go on.
    fn prefetch(&self, key: Key) {
        let home = self.home(key);
        if let Some(slots) = self.slots.get(home..home + 2) {
            crate::memory::prefetch_one(&slots[0]);
            crate::memory::prefetch_one(&slots[1].sums);
        }
    }

    /// The slot holding `key`, or the empty one where it would go (the
    /// table is at most two thirds full).
    fn find(&self, key: Key) -> usize {
        let mask = self.slots.len() - 1;
        let mut index = self.home(key);
        while self.slots[index].sums.count != 0 && self.slots[index].key != key {
            index = (index + 1) & mask;
        }
        index
    }

    /// Adds `group`'s stacks to its key's group.
    fn add(&mut self, group: Group) {
        if (self.len + 1) * 3 > self.slots.len() * 2 {
            self.grow();
        }
        let index = self.find(group.key);
        let slot = &mut self.slots[index];
        match slot.sums.count {
            0 => {
                *slot = group;
                self.len += 1;
            }
            _ => merge(slot, &group),
        }
    }

    fn grow(&mut self) {
        let bigger = GroupTable::with_capacity(self.slots.len());
        for group in std::mem::replace(self, bigger).groups() {
            self.add(group);
        }
    }

    /// The groups of this table, of `other` and `more`, those of one key
    /// added up (looked up here, not added: this table does not grow).
    fn union(mut self, other: GroupTable, more: Option<Group>) -> Vec<Group> {
        let mut only_other: Vec<Group> = more.into_iter().collect();
        for (i, group) in other.slots.iter().enumerate() {
            if let Some(ahead) = other.slots.get(i + crate::metrics::PREFETCH_AHEAD) {
                self.prefetch(ahead.key);
            }
            if group.sums.count == 0 {
                continue;
            }
            let index = self.find(group.key);
            let slot = &mut self.slots[index];
            match slot.sums.count {
                0 => only_other.push(*group),
                _ => merge(slot, group),
            }
        }
        let mut groups = Vec::with_capacity(self.len + only_other.len());
        groups.extend(self.groups());
        groups.append(&mut only_other);
        groups
    }

    fn groups(self) -> impl Iterator<Item = Group> {
        self.slots.into_iter().filter(|g| g.sums.count != 0)
    }
}

/// Adds `group`'s stacks to `into` (of the same key).
fn merge(into: &mut Group, group: &Group) {
    into.sums.add_sums(group.sums);
    if group.rank < into.rank {
        into.rank = group.rank;
        into.stack = group.stack;
    }
}

/// Groups on their way into tables: each slot is fetched a few groups
/// before it is added to.
#[derive(Default)]
struct Adding {
    waiting: [Group; 16],
    len: usize,
}

impl Adding {
    fn add(&mut self, tables: &mut KeyParts, group: Group) {
        tables[key_part(group.key)].prefetch(group.key);
        let at = self.len % self.waiting.len();
        if self.len >= self.waiting.len() {
            let waiting = self.waiting[at];
            tables[key_part(waiting.key)].add(waiting);
        }
        self.waiting[at] = group;
        self.len += 1;
    }

    fn finish(self, tables: &mut KeyParts) {
        let waiting = self.len.min(self.waiting.len());
        for &group in &self.waiting[..waiting] {
            tables[key_part(group.key)].add(group);
        }
    }
}

/// `heap`: totals, the peak in use and when, and sizes by power of two.
pub fn statistics(model: &Model) -> Result<(String, Json), String> {
    let mut totals = Totals::default();
    let mut histogram: Vec<u64> = vec![0; 65];
    for entry in &model.heap {
        totals.allocations += 1;
        totals.bytes_allocated += entry.bytes;
        if entry.leaked {
            totals.leaks += 1;
            totals.bytes_leaked += entry.bytes;
        }
        histogram[(64 - entry.bytes.leading_zeros()) as usize] += 1;
    }
    for replay in heap_replays(model)? {
        totals.frees += replay.frees;
        totals.unknown_frees += replay.unknown_frees;
        if replay.peak_bytes > totals.peak_bytes {
            totals.peak_bytes = replay.peak_bytes;
            let start_ns = model.experiments[usize::from(replay.experiment)].start_ns;
            totals.peak_seconds = replay.peak_at_ns.saturating_sub(start_ns) as f64 / 1e9;
        }
    }
    let mut text = String::new();
    let _ = writeln!(text, "Heap statistics");
    let _ = writeln!(text, "  Allocations:           {}", totals.allocations);
    let _ = writeln!(text, "  Bytes Allocated:       {}", totals.bytes_allocated);
    let _ = writeln!(text, "  Frees:                 {}", totals.frees);
    let _ = writeln!(
        text,
        "  Frees of blocks not traced: {}",
        totals.unknown_frees
    );
    let _ = writeln!(text, "  Leaks:                 {}", totals.leaks);
    let _ = writeln!(text, "  Bytes Leaked:          {}", totals.bytes_leaked);
    let _ = writeln!(
        text,
        "  Peak Bytes in Use:     {} (at {:.3} s)",
        totals.peak_bytes, totals.peak_seconds
    );
    let _ = writeln!(text, "\n  Size (bytes)            Allocations");
    let mut sizes = Vec::new();
    for (bucket, &count) in histogram.iter().enumerate().filter(|(_, c)| **c > 0) {
        let (from, to) = bucket_range(bucket);
        let _ = writeln!(text, "  {:>9} - {:<11} {count}", from, to);
        sizes.push(json!({"size_from": from, "size_to": to, "allocations": count}));
    }
    let doc = json!({
        "report": "heap",
        "allocations": totals.allocations,
        "bytes_allocated": totals.bytes_allocated,
        "frees": totals.frees,
        "frees_not_traced": totals.unknown_frees,
        "leaks": totals.leaks,
        "bytes_leaked": totals.bytes_leaked,
        "peak_bytes_in_use": totals.peak_bytes,
        "peak_seconds": totals.peak_seconds,
        "sizes": sizes,
    });
    Ok((text, doc))
}

#[derive(Default)]
struct Totals {
    allocations: u64,
    bytes_allocated: u64,
    frees: u64,
    unknown_frees: u64,
    leaks: u64,
    bytes_leaked: u64,
    peak_bytes: u64,
    peak_seconds: f64,
}

/// Sizes of bucket `b`: 0 for 0, else 2^(b-1) ..= 2^b - 1.
fn bucket_range(bucket: usize) -> (u64, u64) {
    match bucket {
        0 => (0, 0),
        64 => (1 << 63, u64::MAX),
        b => (1 << (b - 1), (1 << b) - 1),
    }
}

fn frame_json(frame: &ShownFrame) -> Json {
    json!({
        "function": frame.function,
        "file": frame.file,
        "line": frame.line,
    })
}
