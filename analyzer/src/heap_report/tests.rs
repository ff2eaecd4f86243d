use super::*;
use crate::model::{
    special_functions, ExperimentEntry, FunctionEntry, FunctionKind, HeapEntry, HeapReplay,
    PcEntry, PcId, StackId, StackTable,
};
use experiment::layout::StackStatus;
use std::sync::Arc;

/// Functions of the PCs 0, 1, 2...: PC i is at 0x1000 + i, in no object
/// (a caller shows as its function, a leaf as the address of its call).
const FUNCTIONS: [&str; 5] = ["main", "a", "b", "c", "outer"];

/// A model of `experiments` heap-tracing experiments with `stacks` (PCs
/// leaf first) and allocations (experiment, stack, bytes).
fn model(experiments: u16, stacks: &[&[PcId]], allocations: &[(u16, StackId, u64)]) -> Model {
    let mut model = Model {
        functions: special_functions(),
        ..Model::default()
    };
    for name in FUNCTIONS {
        let id = model.functions.len() as u32;
        model.functions.push(FunctionEntry::named(
            name.to_string(),
            None,
            FunctionKind::Normal,
            0,
        ));
        model.pcs.push(PcEntry {
            object: None,
            address: 0x1000 + model.pcs.len() as u64,
            offset: 0,
            function: id,
            line: None,
            inlined: Vec::new(),
            plt: false,
        });
    }
    let mut table = StackTable::default();
    for pcs in stacks {
        table.push(pcs, StackStatus::Complete);
    }
    model.stacks = Arc::new(table);
    for experiment in 0..experiments {
        model.experiments.push(experiment_entry());
        model.heap_replays.push(HeapReplay {
            experiment,
            ..HeapReplay::default()
        });
    }
    model.heap = allocations
        .iter()
        .map(|&(experiment, stack, bytes)| HeapEntry {
            experiment,
            leaked: true,
            thread: 1,
            time_ns: 0,
            bytes,
            stack,
            sample: 1,
        })
        .collect();
    model
}

fn experiment_entry() -> ExperimentEntry {
    ExperimentEntry {
        path: "t.er".into(),
        founder: "t.er".into(),
        start: None,
        start_ns: 0,
        end_ns: 0,
        samples: Vec::new(),
        threads: Vec::new(),
        log: Vec::new(),
        notes: None,
        ended: true,
        format_version: String::new(),
        counters: Vec::new(),
    }
}

fn allocs_text(model: &Model, limit: Option<usize>) -> String {
    let (text, _) = listing(model, HeapListing::Allocations, limit).expect("listing");
    text
}

/// Groups that tie come in the order of their first stacks, the lost
/// stacks' group after the stacks of its experiment.
#[test]
fn ties_follow_the_stacks_and_lost_ones_follow_their_experiment() {
    let stacks: [&[PcId]; 3] = [&[1, 0], &[2, 0], &[3, 2, 0]];
    let allocations = [(0, 1, 8), (0, 0, 8), (0, NO_STACK, 8), (1, 2, 8)];
    let model = model(2, &stacks, &allocations);
    let group = |n: usize, frames: &str| {
        format!("\nAllocation #{n}, Instances = 1, Bytes Allocated = 8\n{frames}")
    };
    let expected = [
        "Summary Results: Distinct Allocations = 4, Total Instances = 4, Total Bytes Allocated = 32\n".to_string(),
        group(1, "    0x1000\n    main\n"),
        group(2, "    0x1001\n    main\n"),
        group(3, "    <unknown stack>\n"),
        group(4, "    0x1002\n    b\n    main\n"),
    ];
    assert_eq!(allocs_text(&model, None), expected.concat());
    // The first ones of the same order, when fewer are listed.
    assert_eq!(allocs_text(&model, Some(2)), expected[..3].concat());
}

/// Stacks that differ only above `main` show alike: one group, however
/// far apart they are in the walk (which is cut in parts).
#[test]
fn stacks_shown_alike_are_one_group() {
    let mut stacks: Vec<&[PcId]> = Vec::new();
    for i in 0..10 {
        stacks.push(if i % 2 == 0 { &[1, 0, 4] } else { &[1, 0] });
    }
    stacks.push(&[2, 4]);
    let mut allocations: Vec<(u16, StackId, u64)> = (0..10).map(|s| (0, s, 3)).collect();
    allocations.push((0, 10, 100));
    let model = model(1, &stacks, &allocations);
    assert_eq!(
        allocs_text(&model, None),
        "Summary Results: Distinct Allocations = 2, Total Instances = 11, Total Bytes Allocated = 130\n\
         \nAllocation #1, Instances = 1, Bytes Allocated = 100\n    0x1001\n    outer\n\
         \nAllocation #2, Instances = 10, Bytes Allocated = 30\n    0x1000\n    main\n"
    );
    let (_, json) = listing(&model, HeapListing::Allocations, None).expect("listing");
    let frame = |function: &str| json!({"function": function, "file": null, "line": null});
    assert_eq!(json["allocations"], 11);
    assert_eq!(json["groups"][1]["allocations"], 10);
    assert_eq!(
        json["groups"][1]["stack"],
        json!([frame("0x1000"), frame("main")])
    );
}
