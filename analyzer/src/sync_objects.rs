//! `syncobjects`: Sync Wait Time and Count per synchronization object (the
//! lock, condition variable, semaphore or barrier waited on; the thread
//! waited for by a join), named by the symbol that holds it when one does,
//! a joined thread by its number.

use crate::model::*;
use crate::report::{Context, Keep, Report};
use crate::table::{seconds, Column, Table};
use experiment::sync::SyncOp;
use rustc_hash::FxHashMap;
use serde_json::{json, Value as Json};

/// One object's waits.
#[derive(Default, Clone, Copy)]
struct Waits {
    ns: u64,
    count: u64,
}

/// What a wait waited on: a symbol's object (the same lock in several
/// experiments), a thread of an experiment, or an address.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Object<'a> {
    Named(&'a str),
    /// (experiment, thread number, its `pthread_t`).
    Thread(u16, u32, u64),
    Address(u64),
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
    let joined = JoinedThreads::of(model);
    let mut sums: FxHashMap<(Object, &'static str), Waits> = FxHashMap::default();
    let mut total = Waits::default();
    for entry in model.sync.iter().filter(|e| keep(&e.as_event())) {
        let name = model
            .sync_names
            .get(&(entry.experiment, entry.object))
            .map(String::as_str);
        let object = match (name, joined.thread_of(entry)) {
            (Some(name), _) => Object::Named(name),
            (None, Some(number)) => Object::Thread(entry.experiment, number, entry.object),
            (None, None) => Object::Address(entry.object),
        };
        let sum = sums.entry((object, entry.op.name())).or_default();
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
    let several = model.experiments.len() > 1;
    let mut rows = Vec::new();
    for ((object, kind), w) in list.into_iter().take(limit) {
        let shown = shown(object, several);
        table.push(vec![
            seconds(w.ns),
            w.count.to_string(),
            kind.to_string(),
            shown.clone(),
        ]);
        let mut row = json!({
            "object": shown,
            "name": null,
            "address": null,
            "kind": kind,
            "sync_wait_time": w.ns as f64 / 1e9,
            "sync_wait_count": w.count,
        });
        match object {
            Object::Named(name) => row["name"] = json!(name),
            Object::Address(address) => row["address"] = json!(address),
            Object::Thread(experiment, number, pthread) => {
                row["address"] = json!(pthread);
                row["thread"] = json!(number);
                row["experiment"] = json!(usize::from(experiment) + 1);
            }
        }
        rows.push(row);
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

/// How the Object column names an object: a joined thread as the
/// debugger's `t@N` (and its experiment, when there are several).
fn shown(object: Object, several_experiments: bool) -> String {
    match object {
        Object::Named(name) => name.to_string(),
        Object::Address(address) => format!("0x{address:x}"),
        Object::Thread(experiment, number, _) if several_experiments => {
            format!("t@{number} (experiment {})", usize::from(experiment) + 1)
        }
        Object::Thread(_, number, _) => format!("t@{number}"),
    }
}

/// The threads whose `pthread_t` their experiment's log gives: per
/// (experiment, `pthread_t`), (when the thread started, its number) in
/// order of start.
struct JoinedThreads {
    by_pthread: FxHashMap<(u16, u64), Vec<(u64, u32)>>,
}

impl JoinedThreads {
    fn of(model: &Model) -> JoinedThreads {
        let mut by_pthread: FxHashMap<(u16, u64), Vec<(u64, u32)>> = FxHashMap::default();
        for (index, experiment) in model.experiments.iter().enumerate() {
            for thread in &experiment.threads {
                if let Some((pthread, started_ns)) = thread.pthread {
                    let key = (index as u16, pthread);
                    by_pthread
                        .entry(key)
                        .or_default()
                        .push((started_ns, thread.number));
                }
            }
        }
        for starts in by_pthread.values_mut() {
            starts.sort_unstable();
        }
        JoinedThreads { by_pthread }
    }

    /// The number of the thread a join waited for: of the threads with the
    /// `pthread_t` it names, the last to start before the join returned
    /// (a `pthread_t` is reused only once its thread has been joined, and
    /// the thread may start after the join began).
    fn thread_of(&self, entry: &SyncEntry) -> Option<u32> {
        if entry.op != SyncOp::Join {
            return None;
        }
        let starts = self.by_pthread.get(&(entry.experiment, entry.object))?;
        let returned_ns = entry.time_ns.saturating_add(entry.wait_ns);
        let before = starts.partition_point(|&(started_ns, _)| started_ns <= returned_ns);
        before.checked_sub(1).map(|i| starts[i].1)
    }
}
