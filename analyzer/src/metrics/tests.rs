use super::*;
use experiment::layout::StackStatus;

/// A model whose PC i is in function `functions[i]` (no objects, lines or
/// inlining), with one event of 1 ms per entry of `events` (a stack id).
fn model(
    functions: &[impl AsRef<str>],
    stacks: &[(Vec<PcId>, StackStatus)],
    events: &[StackId],
) -> Model {
    let mut model = Model {
        functions: special_functions(),
        ..Model::default()
    };
    for name in functions {
        let id = model.functions.len() as FunctionId;
        let name = name.as_ref().to_string();
        model
            .functions
            .push(FunctionEntry::named(name, None, FunctionKind::Normal, 0));
        model.pcs.push(PcEntry {
            object: None,
            address: 0x1000 + u64::from(id),
            offset: 0x1000 + u64::from(id),
            function: id,
            line: None,
            inlined: Vec::new(),
            plt: false,
        });
    }
    let mut table = StackTable::default();
    for (pcs, status) in stacks {
        table.push(pcs, *status);
    }
    model.stacks = Arc::new(table);
    model.events = events.iter().map(|&stack| one_ms_event(stack)).collect();
    model
}

/// A clock event of 1 ms on stack `stack`.
fn one_ms_event(stack: StackId) -> EventEntry {
    EventEntry {
        experiment: 0,
        cpu: 0,
        thread: 1,
        time_ns: 0,
        weight_ns: 1_000_000,
        stack,
        sample: 1,
        count: 1,
    }
}

/// Function names f0, f1, ... (`count` of them).
fn numbered(count: usize) -> Vec<String> {
    (0..count).map(|i| format!("f{i}")).collect()
}

/// A xorshift generator from `seed`: each call a number below its `n`.
fn below(seed: u64) -> impl FnMut(u64) -> u64 {
    let mut state = seed;
    move |n| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % n
    }
}

/// The function id of the n-th function given to `model` (its PC is n).
fn f(n: u32) -> FunctionId {
    TRUNCATED + 1 + n
}

fn ms(events: u64) -> Value {
    Value {
        ns: events * 1_000_000,
        events,
        ..Value::default()
    }
}

fn complete(pcs: Vec<PcId>) -> (Vec<PcId>, StackStatus) {
    (pcs, StackStatus::Complete)
}

/// main (pc 0) calls rec (pc 1) 199 times over: 200 frames.
fn deep_recursion() -> Model {
    let mut pcs = vec![1; 199];
    pcs.push(0);
    model(&["main", "rec"], &[complete(pcs)], &[0, 0, 0])
}

#[test]
fn recursion_counts_a_function_once_per_stack() {
    let m = deep_recursion();
    let view = View::new(&m, &ViewSettings::default());
    let weights = Weights::new(&m, |_| true);
    let metrics = function_metrics(&view, &weights);
    let rec = metrics[&f(1)];
    assert_eq!(rec.inclusive, ms(3));
    assert_eq!(rec.exclusive, ms(3));
    assert_eq!(metrics[&f(0)].inclusive, ms(3));
    assert_eq!(metrics[&f(0)].exclusive, Value::default());
    assert_eq!(metrics[&TOTAL].inclusive, ms(3));
}

#[test]
fn recursion_is_its_own_caller_at_the_innermost_call() {
    let m = deep_recursion();
    let view = View::new(&m, &ViewSettings::default());
    let weights = Weights::new(&m, |_| true);
    let all = all_callers_callees(&view, &weights);
    let rec = &all[&f(1)];
    assert_eq!(rec.value.inclusive, ms(3));
    assert_eq!(rec.value.exclusive, ms(3));
    assert_eq!(rec.callers, vec![(f(1), ms(3))]);
    assert!(rec.callees.is_empty());
    let main = &all[&f(0)];
    assert_eq!(main.callers, vec![(TOTAL, ms(3))]);
    assert_eq!(main.callees, vec![(f(1), ms(3))]);
    assert_eq!(all[&TOTAL].callees, vec![(f(0), ms(3))]);
    for (&center, cc) in &all {
        assert_eq!(*cc, callers_callees_by_search(&view, &weights, center));
    }
}

#[test]
fn deep_recursion_is_one_chain_in_the_call_tree() {
    let m = deep_recursion();
    let view = View::new(&m, &ViewSettings::default());
    let weights = Weights::new(&m, |_| true);
    let tree = call_tree(&view, &weights);
    let mut node = CallTree::ROOT;
    assert_eq!(tree.value(node).inclusive, ms(3));
    let mut depth = 0;
    while let Some(&child) = tree.children(node).first() {
        assert_eq!(tree.children(node).len(), 1);
        assert_eq!(tree.value(child).inclusive, ms(3));
        node = child;
        depth += 1;
    }
    assert_eq!(depth, 200);
    assert_eq!(tree.function(node), f(1));
    assert_eq!(tree.value(node).exclusive, ms(3));
    assert_eq!(tree.len(), 201);
}

/// Mutual recursion a -> b -> a -> ... with a truncated stack and a lost
/// one: the special frames count like any other.
#[test]
fn mutual_recursion_and_special_frames() {
    let mut ab: Vec<PcId> = (0..150).map(|i| 1 + i % 2).collect();
    ab.push(0);
    let truncated = (vec![2, 1, 2, 1], StackStatus::Truncated);
    let m = model(
        &["main", "a", "b"],
        &[complete(ab), truncated],
        &[0, 1, 1, NO_STACK],
    );
    let view = View::new(&m, &ViewSettings::default());
    let weights = Weights::new(&m, |_| true);
    let metrics = function_metrics(&view, &weights);
    assert_eq!(metrics[&f(1)].inclusive, ms(3));
    assert_eq!(metrics[&f(2)].inclusive, ms(3));
    assert_eq!(metrics[&f(1)].exclusive, ms(1));
    assert_eq!(metrics[&f(2)].exclusive, ms(2));
    assert_eq!(metrics[&TRUNCATED].inclusive, ms(2));
    assert_eq!(metrics[&UNKNOWN].exclusive, ms(1));
    assert_eq!(metrics[&TOTAL].inclusive, ms(4));
    let all = all_callers_callees(&view, &weights);
    // b's innermost call is from a, in both stacks.
    assert_eq!(all[&f(2)].callers, vec![(f(1), ms(3))]);
    assert_eq!(all[&TRUNCATED].callers, vec![(TOTAL, ms(2))]);
    for (&center, cc) in &all {
        assert_eq!(*cc, callers_callees_by_search(&view, &weights, center));
    }
}

/// Inclusive as a search of the frames seen so far computes it.
fn inclusive_by_search(view: &View, weights: &Weights) -> HashMap<FunctionId, Value> {
    let mut out: HashMap<FunctionId, Value> = HashMap::new();
    weights.for_each_stack(view, |frames, value| {
        let mut seen = Vec::new();
        for &frame in frames {
            let function = view.frame(frame).function;
            if !seen.contains(&function) {
                seen.push(function);
                out.entry(function).or_default().add(weights.value(value));
            }
        }
    });
    out
}

#[test]
fn inclusive_agrees_with_searching_the_stack_on_random_deep_stacks() {
    let mut next = below(0x2545_f491_4f6c_dd1d);
    let stacks: Vec<_> = (0..300)
        .map(|_| {
            let depth = 1 + next(200) as usize;
            // Few functions, deep stacks: most appear many times in each.
            complete((0..depth).map(|_| next(12) as PcId).collect())
        })
        .collect();
    let events: Vec<StackId> = (0..2000).map(|_| next(300) as StackId).collect();
    let m = model(&numbered(12), &stacks, &events);
    let view = View::new(&m, &ViewSettings::default());
    let weights = Weights::new(&m, |_| true);
    let expected = inclusive_by_search(&view, &weights);
    let metrics = function_metrics(&view, &weights);
    for (function, value) in &expected {
        assert_eq!(metrics[function].inclusive, *value);
    }
    assert_eq!(metrics.len(), expected.len() + 1, "and <Total>");
    let all = all_callers_callees(&view, &weights);
    for (function, value) in &expected {
        let cc = &all[function];
        assert_eq!(cc.value.inclusive, *value);
        let callers: u64 = cc.callers.iter().map(|(_, v)| v.ns).sum();
        let callees: u64 = cc.callees.iter().map(|(_, v)| v.ns).sum();
        assert_eq!(callers, value.ns);
        assert_eq!(callees + cc.value.exclusive.ns, value.ns);
    }
}

#[test]
fn hidden_objects_fold_consecutive_frames() {
    let mut m = model(&["main", "lib1", "lib2"], &[complete(vec![1, 2, 0])], &[0]);
    m.objects.push(ObjectEntry {
        path: "/lib/libx.so".into(),
        symbols_from: None,
        hidden_function: f(1),
    });
    m.pcs[1].object = Some(0);
    m.pcs[2].object = Some(0);
    let settings = ViewSettings {
        hidden_objects: [0].into_iter().collect(),
        ..ViewSettings::default()
    };
    let view = View::new(&m, &settings);
    let mut frames = Vec::new();
    view.stack_frames(0, &mut frames);
    let functions: Vec<FunctionId> = frames.iter().map(|&id| view.frame(id).function).collect();
    assert_eq!(functions, vec![f(1), f(0)]);
    assert_eq!(view.frame(frames[0]).pc, Some(1));
}

/// With more functions than a dense matrix of pairs holds, the pairs are
/// hashed: the one-pass pictures still agree with the one-centre ones.
#[test]
fn callers_callees_of_many_functions_are_hashed_pairs() {
    // Chains through all of them, and a recursion.
    let stacks: Vec<_> = (0..1100u32)
        .map(|i| complete(vec![i, (i + 7) % 1100, (i * 13) % 1100, 0]))
        .collect();
    let events: Vec<StackId> = (0..1100).chain(0..300).collect();
    let m = model(&numbered(1100), &stacks, &events);
    let view = View::new(&m, &ViewSettings::default());
    let weights = Weights::new(&m, |_| true);
    assert!(CallPairs::new(view.function_bound(), weights.layout().width()).is_sparse());
    let all = all_callers_callees(&view, &weights);
    assert_eq!(all.len(), 1101, "every function and <Total>");
    for (&center, cc) in &all {
        assert_eq!(*cc, callers_callees_by_search(&view, &weights, center));
    }
    assert_eq!(all[&f(0)].value.inclusive, ms(1400));
}

/// Hashed pairs summed on two threads are the same pictures.
#[test]
fn hashed_pairs_of_a_walk_in_parts() {
    let count = SPLIT_WALK_FROM as u32 + 1100;
    let stacks: Vec<_> = (0..count)
        .map(|i| complete(vec![i % 1100, (i * 7 + 3) % 1100, (i * 13) % 1100, 0]))
        .collect();
    let events: Vec<StackId> = (0..count).collect();
    let m = model(&numbered(1100), &stacks, &events);
    let view = View::new(&m, &ViewSettings::default());
    let weights = Weights::new(&m, |_| true);
    let all = all_callers_callees(&view, &weights);
    for (&center, cc) in all
        .iter()
        .filter(|(&center, _)| center % 37 == 0 || center == f(0))
    {
        assert_eq!(
            *cc,
            callers_callees_by_search(&view, &weights, center),
            "{center}"
        );
    }
    assert_eq!(all[&f(0)].value.inclusive, ms(u64::from(count)));
}

/// Stacks in one tree the way the loader stores them: each shares its
/// outer frames with the stack added before it.
fn shared_table(stacks: &[(Vec<PcId>, StackStatus)]) -> StackTable {
    let mut table = StackTable::default();
    let mut previous: Vec<(PcId, u32)> = Vec::new();
    for (pcs, status) in stacks {
        let most = pcs.len().min(previous.len()).saturating_sub(1);
        let shared = pcs
            .iter()
            .rev()
            .zip(&previous)
            .take(most)
            .take_while(|(pc, (before, _))| *pc == before)
            .count();
        previous.truncate(shared);
        let mut position = previous.last().map_or(ROOT_POSITION, |&(_, at)| at);
        for &pc in pcs[..pcs.len() - shared].iter().rev() {
            position = table.push_frame(position, TRANSLATED | pc);
            previous.push((pc, position));
        }
        table.push_stack(position, *status);
    }
    table
}

/// The frames a walk over shared paths makes are each stack's own, with
/// inlined functions, hidden objects folded, truncated and empty stacks.
#[test]
fn walked_frames_are_each_stacks_frames() {
    walks_of_wandering_stacks_agree_with_each_stack(400);
}

/// Walks of enough stacks to be split over two threads sum as one walk,
/// the lost stack counted once.
#[test]
fn walks_in_parts_agree_with_each_stack() {
    walks_of_wandering_stacks_agree_with_each_stack(SPLIT_WALK_FROM + 999);
}

/// [`walked_frames_are_each_stacks_frames`] with `count` stacks, and
/// events whose stack was lost.
fn walks_of_wandering_stacks_agree_with_each_stack(count: usize) {
    let mut next = below(0x9e37_79b9_7f4a_7c15);
    // One wandering path: each stack returns from some calls of the one
    // before and makes new ones.
    let mut path: Vec<PcId> = Vec::new();
    let mut stacks = Vec::new();
    for _ in 0..count {
        let back = (next(4) as usize).min(path.len());
        path.truncate(path.len() - back);
        for _ in 0..next(4) {
            path.push(next(16) as PcId);
        }
        let status = match next(6) {
            0 => StackStatus::Truncated,
            1 => StackStatus::Failed,
            _ => StackStatus::Complete,
        };
        let leaf_first: Vec<PcId> = path.iter().rev().copied().collect();
        stacks.push((leaf_first, status));
    }
    let mut m = model(&numbered(16), &[], &[]);
    m.stacks = Arc::new(shared_table(&stacks));
    let mut hidden_function = m.functions[0].clone();
    hidden_function.name = "<libx.so>".into();
    m.functions.push(hidden_function);
    m.objects.push(ObjectEntry {
        path: "/lib/libx.so".into(),
        symbols_from: None,
        hidden_function: f(16),
    });
    for pc in [3, 4, 5, 6] {
        m.pcs[pc].object = Some(0);
    }
    for pc in [2, 5, 9] {
        m.pcs[pc].inlined = vec![
            InlineStep {
                function: f(13),
                line: None,
            },
            InlineStep {
                function: f(14),
                line: None,
            },
        ];
    }
    m.events = (0..stacks.len() as StackId).map(one_ms_event).collect();
    m.events.push(one_ms_event(NO_STACK));
    for (inlines, hidden) in [(false, false), (true, false), (false, true), (true, true)] {
        let settings = ViewSettings {
            inlines,
            hidden_objects: if hidden {
                [0].into_iter().collect()
            } else {
                HashSet::new()
            },
        };
        let view = View::new(&m, &settings);
        let mut seen = 0;
        let mut buffer = Vec::new();
        view.for_each_stack(|id, frames| {
            assert_eq!(frames, view.frames_of(id, &mut buffer), "stack {id}");
            seen += 1;
        });
        assert_eq!(seen, stacks.len());
        let weights = Weights::new(&m, |_| true);
        let mut walked = 0;
        weights.for_each_stack(&view, |_, value| walked += weights.value(value).events);
        assert_eq!(walked, m.events.len() as u64);
        sums_agree_with_each_stacks_frames(&view, &weights);
    }
}

/// A stack deeper than the walk first has room for is whole, and so is
/// the shallow one walked after it.
#[test]
fn walked_frames_of_a_stack_deeper_than_the_first_room() {
    let mut deep = vec![1; 599];
    deep.push(0);
    let m = model(
        &["main", "rec"],
        &[complete(deep), complete(vec![1, 0])],
        &[0, 1],
    );
    let view = View::new(&m, &ViewSettings::default());
    let mut buffer = Vec::new();
    let mut depths = Vec::new();
    view.for_each_stack(|id, frames| {
        assert_eq!(frames, view.frames_of(id, &mut buffer), "stack {id}");
        depths.push(frames.len());
    });
    assert_eq!(depths, [600, 2]);
}

/// Exclusive and inclusive values by function, line and PC, every
/// callers-callees picture and the call tree, as made along the walk, are
/// what each stack's whole frames give.
fn sums_agree_with_each_stacks_frames(view: &View, weights: &Weights) {
    type Keyed = fn(&Frame) -> Option<u64>;
    let keys: [Keyed; 3] = [
        |f| Some(u64::from(f.function)),
        |f| Some(f.line.map_or(1 << 40 | u64::from(f.function), u64::from)),
        |f| f.pc.map(u64::from),
    ];
    for key in keys {
        let mut expected: HashMap<u64, ExclInclValue> = HashMap::new();
        weights.for_each_stack(view, |frames, packed| {
            let value = weights.value(packed);
            let shown: Vec<Option<u64>> = frames.iter().map(|&f| key(&view.frame(f))).collect();
            if let Some(Some(leaf)) = shown.first() {
                expected.entry(*leaf).or_default().exclusive.add(value);
            }
            let mut seen = Vec::new();
            for k in shown.into_iter().flatten() {
                if !seen.contains(&k) {
                    seen.push(k);
                    expected.entry(k).or_default().inclusive.add(value);
                }
            }
        });
        assert_eq!(exclusive_inclusive(view, weights, key), expected);
    }
    let all = all_callers_callees(view, weights);
    for (&center, picture) in &all {
        assert_eq!(
            *picture,
            callers_callees_by_search(view, weights, center),
            "{center}"
        );
    }
    // Each stack's path of functions from <Total>, with its value.
    let mut paths: HashMap<Vec<FunctionId>, Value> = HashMap::new();
    weights.for_each_stack(view, |frames, packed| {
        let path = frames
            .iter()
            .rev()
            .map(|&f| view.frame(f).function)
            .collect();
        paths.entry(path).or_default().add(weights.value(packed));
    });
    let tree = call_tree(view, weights);
    let mut from_tree: HashMap<Vec<FunctionId>, Value> = HashMap::new();
    let mut work = vec![(CallTree::ROOT, Vec::new())];
    while let Some((node, path)) = work.pop() {
        let value = tree.value(node);
        assert!(!value.inclusive.is_empty(), "a node with nothing below it");
        if !value.exclusive.is_empty() {
            from_tree.insert(path.clone(), value.exclusive);
        }
        let mut inclusive = value.exclusive;
        for &child in tree.children(node) {
            inclusive.add(tree.value(child).inclusive);
            let mut below = path.clone();
            below.push(tree.function(child));
            work.push((child, below));
        }
        assert_eq!(inclusive, value.inclusive);
        // Listed largest first by the key asked for, ties by function.
        let mut listed = vec![7];
        tree.children_by(node, |v| v.events, &mut listed);
        let key = |&c: &NodeId| (u64::MAX - tree.value(c).inclusive.events, tree.function(c));
        assert!(listed.windows(2).all(|w| key(&w[0]) < key(&w[1])));
        listed.sort_unstable();
        assert_eq!(listed, tree.children(node));
    }
    assert_eq!(from_tree, paths);
}

/// Allocations' words go straight to their places in the per-stack sums:
/// they sum to what `Value::of_allocation` makes of them, lost stacks and
/// a selection included.
#[test]
fn allocations_sum_as_their_values() {
    let mut m = model(
        &["main", "f"],
        &[complete(vec![0]), complete(vec![1, 0])],
        &[],
    );
    let allocation = |stack, bytes, leaked, time_ns| HeapEntry {
        experiment: 0,
        leaked,
        thread: 1,
        time_ns,
        bytes,
        stack,
        sample: 1,
    };
    m.heap = vec![
        allocation(0, 10, false, 1),
        allocation(1, 300, true, 2),
        allocation(1, 7, false, 3),
        allocation(NO_STACK, 50, true, 4),
        allocation(0, 1000, true, 5),
    ];
    let keep = |e: &EventEntry| e.time_ns != 3;
    let weights = Weights::new(&m, keep);
    for (slot, stack) in [(0, 0), (1, 1), (2, NO_STACK)] {
        let mut expected = Value::default();
        for entry in m
            .heap
            .iter()
            .filter(|e| e.stack == stack && keep(&e.as_event()))
        {
            expected.add(Value::of_allocation(entry));
        }
        assert_eq!(
            weights.value(weights.sums.get(slot)),
            expected,
            "stack {stack}"
        );
    }
    assert_eq!(weights.total.bytes_leaked, 1350);
    assert_eq!(weights.total.allocations, 4);
}

/// Enough clock events and allocations to be summed on two threads sum as
/// one pass does, lost stacks included.
#[test]
fn every_event_summed_in_halves() {
    let mut m = model(
        &["main", "f", "g"],
        &[
            complete(vec![0]),
            complete(vec![1, 0]),
            complete(vec![2, 1, 0]),
        ],
        &[],
    );
    let mut next = below(0x5851_f42d_4c95_7f2d);
    let mut stack = || match next(4) {
        3 => NO_STACK,
        s => s as StackId,
    };
    let half = SPLIT_SUMS_FROM / 2 + 1;
    m.events = (0..half).map(|_| one_ms_event(stack())).collect();
    m.heap = (0..half as u64)
        .map(|i| HeapEntry {
            experiment: 0,
            leaked: i % 3 == 0,
            thread: 1,
            time_ns: i,
            bytes: i % 1000,
            stack: stack(),
            sample: 1,
        })
        .collect();
    let (all, one_pass) = (Weights::all(&m), Weights::new(&m, |_| true));
    for slot in 0..=m.stacks.len() {
        assert_eq!(all.sums.get(slot), one_pass.sums.get(slot), "slot {slot}");
    }
    assert_eq!(all.total, one_pass.total);
    assert_eq!(all.total.events, half as u64);
    assert_eq!(all.total.allocations, half as u64);
}

/// Callers and callees of `center` from each stack's whole list of
/// functions (the oracle [`callers_callees`]'s walk is checked against).
fn callers_callees_by_search(view: &View, weights: &Weights, center: FunctionId) -> CallersCallees {
    let mut acc = Attribution::default();
    let mut functions = Vec::new();
    weights.for_each_stack(view, |frames, packed| {
        let value = weights.value(packed);
        functions.clear();
        functions.extend(frames.iter().map(|&f| view.frame(f).function));
        if center == TOTAL {
            acc.add_total(&functions, value);
        } else if let Some(i) = functions.iter().position(|&f| f == center) {
            acc.add_occurrence(&functions, i, value);
        }
    });
    acc.finish(center)
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
    fn add_total(&mut self, functions: &[FunctionId], value: Value) {
        self.value.inclusive.add(value);
        if let Some(&root) = functions.last() {
            self.callees.entry(root).or_default().add(value);
        }
    }

    /// The centre is `functions[i]` (its innermost occurrence).
    fn add_occurrence(&mut self, functions: &[FunctionId], i: usize, value: Value) {
        self.value.inclusive.add(value);
        let caller = functions.get(i + 1).copied().unwrap_or(TOTAL);
        self.callers.entry(caller).or_default().add(value);
        match i.checked_sub(1).map(|j| functions[j]) {
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

/// The PCs the stacks hold are found from the table's cells: those of
/// every stack, whatever its depth or run, and no other.
#[test]
fn pcs_in_stacks_are_the_stacks_frames() {
    let m = model(
        &numbered(6),
        &[
            complete(vec![1, 0]),
            complete(vec![3, 1, 0]),
            complete(vec![4]),
            complete(vec![3, 4]),
        ],
        &[0],
    );
    let held = m.stacks.pcs_in_stacks(m.pcs.len());
    let expected: Vec<bool> = (0..m.pcs.len())
        .map(|pc| [0, 1, 3, 4].contains(&pc))
        .collect();
    assert_eq!(held, expected);
}
