//! `syncobjects`: Sync Wait Time and Count per synchronization object (the
//! lock, condition variable, semaphore or barrier waited on; the thread
//! waited for by a join), named by the symbol that holds it when one does.

use crate::model::*;
use crate::report::{Context, Keep, Report};
use crate::table::{seconds, Column, Table};
use rustc_hash::FxHashMap;
use serde_json::{json, Value as Json};

/// One object's waits.
#[derive(Default, Clone, Copy)]
struct Waits {
    ns: u64,
    count: u64,
}

/// `syncobjects`: the objects waited on, most wait time first.
pub fn objects(ctx: &Context, keep: Keep) -> Report {
    let model = ctx.model;
    if model.sync.is_empty() {
        return Report {
            text: "no sync-wait tracing data (collect with -s on, or collector synctrace on)\n"
                .to_string(),
            json: json!({"report": "syncobjects", "objects": [], "message": "no sync-wait tracing data"}),
        };
    }
    // An object is its name when a symbol names it (the same lock in
    // several experiments), else its address.
    let mut sums: FxHashMap<(Option<&str>, u64, &'static str), Waits> = FxHashMap::default();
    let mut total = Waits::default();
    for entry in model.sync.iter().filter(|e| keep(&e.as_event())) {
        let name = model
            .sync_names
            .get(&(entry.experiment, entry.object))
            .map(String::as_str);
        let key = match name {
            Some(name) => (Some(name), 0, entry.op.name()),
            None => (None, entry.object, entry.op.name()),
        };
        let sum = sums.entry(key).or_default();
        sum.ns += entry.wait_ns;
        sum.count += 1;
        total.ns += entry.wait_ns;
        total.count += 1;
    }
    let mut list: Vec<_> = sums.into_iter().collect();
    list.sort_by_key(|&(key, w)| (std::cmp::Reverse((w.ns, w.count)), key));
    let limit = ctx.settings.limit.unwrap_or(usize::MAX);
    let mut table = Table::new(vec![
        Column::number("Sync Wait", "Time sec."),
        Column::number("Sync Wait", "Count"),
        Column::text("Kind"),
        Column::text("Object"),
    ]);
    table.push(vec![
        seconds(total.ns),
        total.count.to_string(),
        String::new(),
        TOTAL_NAME.to_string(),
    ]);
    let mut rows = Vec::new();
    for ((name, address, kind), w) in list.into_iter().take(limit) {
        let shown = match name {
            Some(name) => name.to_string(),
            None => format!("0x{address:x}"),
        };
        table.push(vec![
            seconds(w.ns),
            w.count.to_string(),
            kind.to_string(),
            shown.clone(),
        ]);
        rows.push(json!({
            "object": shown,
            "name": name,
            "address": (name.is_none()).then_some(address),
            "kind": kind,
            "sync_wait_time": w.ns as f64 / 1e9,
            "sync_wait_count": w.count,
        }));
    }
    Report {
        text: table.render(),
        json: json!({
            "report": "syncobjects",
            "total": {"sync_wait_time": total.ns as f64 / 1e9, "sync_wait_count": total.count},
            "objects": Json::Array(rows),
        }),
    }
}
