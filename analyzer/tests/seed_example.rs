//! Seed 002's worked example, built as a synthetic experiment through the
//! experiment crate and checked to the unit: main 2/32, A 0/10, B 5/20,
//! C 5/25 (callers A 10, B 15; callees E 10, F 10), E 10/10, F 5/10, G 5/5.

mod common;

use analyzer::metrics::{
    all_callers_callees, callers_callees, function_metrics, View, ViewSettings, Weights,
};
use analyzer::model::TOTAL;
use analyzer::report::{self, Context, ReportSettings};
use common::{compile, text_range, Event, Synthetic, TempDir};
use experiment::layout::StackStatus;
use std::collections::HashMap;

/// One unit of the seed's figure: 10 ms.
const UNIT_NS: u32 = 10_000_000;

fn seed_experiment(tmp: &TempDir) -> std::path::PathBuf {
    let (exe, symbols) = compile("seed", &tmp.0, &["-O0", "-g"]);
    let at = |name: &str, offset: u64| symbols[name].0 + offset;
    // Leaf first; the leaf PC is inside, callers are return addresses.
    let stack = |names: &[&str]| -> Vec<u64> {
        names
            .iter()
            .enumerate()
            .map(|(i, n)| if i == 0 { at(n, 4) } else { at(n, 8) })
            .collect()
    };
    let paths: [(&[&str], u32); 10] = [
        (&["main"], 2),
        (&["C", "A", "main"], 2),
        (&["E", "C", "A", "main"], 4),
        (&["F", "C", "A", "main"], 2),
        (&["G", "F", "C", "A", "main"], 2),
        (&["B", "main"], 5),
        (&["C", "B", "main"], 3),
        (&["E", "C", "B", "main"], 6),
        (&["F", "C", "B", "main"], 3),
        (&["G", "F", "C", "B", "main"], 3),
    ];
    let mut expt = Synthetic::new(&tmp.0, "seed.1.er", &exe, 500);
    let (lo, hi) = text_range(&symbols);
    expt.object(1_000_000_001, &exe, 0, lo, hi);
    let mut ts = 1_000_000_100;
    for (names, units) in paths {
        for _ in 0..units {
            ts += 1_000;
            expt.event(Event {
                timestamp_ns: ts,
                tid: 500,
                cpu: 0,
                weight_ns: UNIT_NS,
                status: StackStatus::Complete,
                pcs: stack(names),
            });
        }
    }
    expt.write()
}

fn units(ns: u64) -> u64 {
    assert_eq!(ns % u64::from(UNIT_NS), 0, "{ns} ns is not whole units");
    ns / u64::from(UNIT_NS)
}

#[test]
fn functions_and_csingle_match_the_seed_to_the_unit() {
    let tmp = TempDir::new("seed");
    let dir = seed_experiment(&tmp);
    let model = analyzer::load(&[dir], true).expect("loads");
    assert!(model.warnings.is_empty(), "{:?}", model.warnings);
    let view = View::new(&model, &ViewSettings::default());
    let weights = Weights::new(&model, |_| true);
    let metrics = function_metrics(&view, &weights);
    let by_name: HashMap<String, (u64, u64)> = metrics
        .iter()
        .map(|(&id, v)| {
            (
                model.function(id).name.clone(),
                (units(v.exclusive.ns), units(v.inclusive.ns)),
            )
        })
        .collect();
    let expected = [
        ("<Total>", (32, 32)),
        ("main", (2, 32)),
        ("A", (0, 10)),
        ("B", (5, 20)),
        ("C", (5, 25)),
        ("E", (10, 10)),
        ("F", (5, 10)),
        ("G", (5, 5)),
    ];
    for (name, value) in expected {
        assert_eq!(by_name.get(name), Some(&value), "{name}: {by_name:?}");
    }
    assert_eq!(by_name.len(), expected.len(), "{by_name:?}");

    let c = model.functions_named("C")[0];
    let cc = callers_callees(&view, &weights, c);
    let named = |list: &[(u32, analyzer::metrics::Value)]| -> Vec<(String, u64)> {
        list.iter()
            .map(|(id, v)| (model.function(*id).name.clone(), units(v.ns)))
            .collect()
    };
    assert_eq!(named(&cc.callers), [("B".into(), 15), ("A".into(), 10)]);
    assert_eq!(named(&cc.callees), [("E".into(), 10), ("F".into(), 10)]);
    assert_eq!(units(cc.value.exclusive.ns), 5);
    assert_eq!(units(cc.value.inclusive.ns), 25);
    // main's callees plus its exclusive time sum to its inclusive time.
    let main = model.functions_named("main")[0];
    let mm = callers_callees(&view, &weights, main);
    assert_eq!(named(&mm.callers), [("<Total>".into(), 32)]);
    assert_eq!(named(&mm.callees), [("B".into(), 20), ("A".into(), 10)]);
    // The one-pass computation for every function (`callers-callees`)
    // agrees with the one-centre computation (`csingle`) everywhere.
    let all = all_callers_callees(&view, &weights);
    assert_eq!(all.len(), expected.len());
    for (&center, picture) in &all {
        assert_eq!(picture, &callers_callees(&view, &weights, center));
    }

    // The same figures in the text the user reads.
    let settings = ReportSettings::default();
    let ctx = Context {
        model: &model,
        view: &view,
        weights: &weights,
        settings: &settings,
    };
    // Compared with runs of spaces squeezed: alignment is the table's job.
    let squeeze = |text: &str| -> Vec<String> {
        text.lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
            .collect()
    };
    let text = squeeze(&report::functions(&ctx).text);
    for line in [
        "0.320 100.00 0.320 100.00 <Total>",
        "0.100 31.25 0.100 31.25 E",
        "0.050 15.63 0.250 78.13 C",
        "0.000 0.00 0.100 31.25 A",
    ] {
        assert!(
            text.iter().any(|l| l == line),
            "missing {line:?} in\n{text:#?}"
        );
    }
    let text = squeeze(&report::callers_callees_of(&ctx, c).text);
    let expected_block = [
        "0.150 46.88 B",
        "0.100 31.25 A",
        "0.050 15.63 *C",
        "0.100 31.25 E",
        "0.100 31.25 F",
    ];
    let start = text.iter().position(|l| l == expected_block[0]);
    let block = start.map(|s| &text[s..(s + 5).min(text.len())]);
    assert_eq!(
        block,
        Some(&expected_block.map(String::from)[..]),
        "{text:#?}"
    );
    let _ = TOTAL;
}
