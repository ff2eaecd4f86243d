//! Counter metrics: a hardware or software counter of counter overflow
//! profiling (the manual's "Hardware Counter Overflow Profiling Data") is a
//! metric named as the user named the counter when recording (`cycles`,
//! `page-faults`, `r01c2`). Which counters exist is known only once the
//! experiments are loaded, so any name that is no built-in metric's parses
//! as a counter, and the analyzer checks it against the experiments' counters
//! when the command runs.

use std::collections::BTreeMap;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Mutex;

/// A counter's metric. `Copy` (as every metric name is): the name is
/// interned, and a `Counter` is a pointer to it and the counter's place
/// among the loaded experiments' counters once the analyzer has resolved it.
#[derive(Clone, Copy)]
pub struct Counter {
    names: &'static Names,
    slot: u8,
}

/// What a counter is called.
#[derive(Debug)]
struct Names {
    /// As the user gave it.
    name: Box<str>,
    /// Its key in JSON output (see [`Counter::json_key`]).
    json_key: Box<str>,
    /// How a metric spec names it (see [`Counter::spelling`]).
    spelling: Box<str>,
}

/// Before a counter's name in a metric spec, names that counter whatever
/// its name (`e.counter_cpu`: the counter `cpu`, not Total CPU Time), as
/// the same prefix keeps its JSON key apart from the listings' own.
pub const COUNTER_PREFIX: &str = "counter_";

/// `Counter::slot` before the analyzer resolved the name.
const UNRESOLVED: u8 = u8::MAX;

/// Every counter name parsed so far, each allocated once for the life of
/// the process: a session names a handful.
static INTERNED: Mutex<BTreeMap<&'static str, &'static Names>> = Mutex::new(BTreeMap::new());

impl Counter {
    /// The metric of the counter called `name` (not resolved yet).
    pub fn named(name: &str) -> Counter {
        let mut interned = INTERNED.lock().unwrap_or_else(|e| e.into_inner());
        let names = match interned.get(name) {
            Some(names) => *names,
            None => {
                let names: &'static Names = Box::leak(Box::new(Names {
                    name: name.into(),
                    json_key: json_key_of(name).into(),
                    spelling: spelling_of(name).into(),
                }));
                interned.insert(&names.name, names);
                names
            }
        };
        Counter {
            names,
            slot: UNRESOLVED,
        }
    }

    pub fn name(self) -> &'static str {
        &self.names.name
    }

    /// The key naming the counter's metric in JSON: the name in lowercase,
    /// every character other than a letter or digit made `_`
    /// (`page-faults` → `page_faults`), prefixed `counter_` when that is a
    /// key of its own in the listings (`name`, `total_cpu`, `cpi`, ...).
    pub fn json_key(self) -> &'static str {
        &self.names.json_key
    }

    /// How a metric item names the counter: its name, or [`COUNTER_PREFIX`]
    /// and its name when the name alone would be read as something else:
    /// a built-in metric (`cpu`, `sync`), kinds of one (`async` after the
    /// flags is kinds `a` of `sync`), flags (`.x`), or a name that itself
    /// begins with the prefix.
    pub fn spelling(self) -> &'static str {
        &self.names.spelling
    }

    /// The counter's index among the loaded experiments' counters, once
    /// resolved ([`Counter::at`]).
    pub fn slot(self) -> Option<usize> {
        (self.slot != UNRESOLVED).then_some(usize::from(self.slot))
    }

    /// The same counter, resolved to index `slot` of the loaded
    /// experiments' counters (255 stands for unresolved).
    pub fn at(self, slot: u8) -> Counter {
        Counter { slot, ..self }
    }
}

/// Two counter metrics are the same when they name the same counter,
/// resolved or not.
impl PartialEq for Counter {
    fn eq(&self, other: &Counter) -> bool {
        std::ptr::eq(self.names, other.names)
    }
}

impl Eq for Counter {}

impl Hash for Counter {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.names.name.hash(state);
    }
}

impl fmt::Debug for Counter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.slot() {
            Some(slot) => write!(f, "Counter({:?} at {slot})", self.name()),
            None => write!(f, "Counter({:?})", self.name()),
        }
    }
}

/// The keys the listings' JSON uses for their own fields and for the
/// built-in metrics: a counter whose key would be one of them is
/// prefixed `counter_`.
pub const RESERVED_JSON_KEYS: &[&str] = &[
    // Rows, totals and values.
    "name",
    "exclusive",
    "inclusive",
    "attributed",
    "seconds",
    "ns",
    "percent",
    "events",
    "function_id",
    "function",
    "object",
    "address",
    "size",
    "mangled",
    "path",
    "file",
    "line",
    "offset",
    "source",
    "aliases",
    "children",
    "callers",
    "callees",
    "text",
    "hot",
    "kind",
    "lines",
    "functions",
    "no_line",
    "report",
    "sort",
    "total",
    "rows",
    "notes",
    "counters",
    // Built-in metrics.
    "total_cpu",
    "allocations",
    "bytes_allocated",
    "leaks",
    "bytes_leaked",
    "sync_wait_time",
    "sync_wait_count",
    "io_time",
    "read_bytes",
    "write_bytes",
    "read_count",
    "write_count",
    "other_io_count",
    "read_time",
    "write_time",
    "other_io_time",
    "io_error_time",
    "io_error_count",
    "off_cpu_time",
    "wall_time",
    "mpi_time",
    "mpi_sends",
    "mpi_bytes_sent",
    "mpi_receives",
    "mpi_bytes_received",
    "mpi_other_calls",
    "cpi",
    "ipc",
];

fn spelling_of(name: &str) -> String {
    let plain = format!("e.{name}");
    let reads_back = crate::analysis::counter_named_by(&plain) == Some(name);
    match reads_back && !name.starts_with(COUNTER_PREFIX) {
        true => name.to_string(),
        false => format!("{COUNTER_PREFIX}{name}"),
    }
}

fn json_key_of(name: &str) -> String {
    let key: String = name
        .chars()
        .map(|c| match c.is_ascii_alphanumeric() {
            true => c.to_ascii_lowercase(),
            false => '_',
        })
        .collect();
    match RESERVED_JSON_KEYS.contains(&key.as_str()) {
        true => format!("counter_{key}"),
        false => key,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_interned_and_slots_do_not_change_identity() {
        let a = Counter::named("page-faults");
        let b = Counter::named("page-faults");
        assert_eq!(a, b);
        assert!(std::ptr::eq(a.name(), b.name()));
        assert_eq!(a.slot(), None);
        let resolved = a.at(3);
        assert_eq!(resolved.slot(), Some(3));
        assert_eq!(resolved, a);
        assert_ne!(a, Counter::named("cycles"));
    }

    #[test]
    fn json_keys_are_lowercase_words_apart_from_the_listings_own() {
        assert_eq!(Counter::named("page-faults").json_key(), "page_faults");
        assert_eq!(
            Counter::named("L1-dcache-Loads").json_key(),
            "l1_dcache_loads"
        );
        assert_eq!(
            Counter::named("cpu/event=0x3c/").json_key(),
            "cpu_event_0x3c_"
        );
        assert_eq!(Counter::named("Name").json_key(), "counter_name");
        assert_eq!(Counter::named("total-cpu").json_key(), "counter_total_cpu");
        assert_eq!(Counter::named("cpi").json_key(), "counter_cpi");
    }

    /// A counter named like a built-in metric, like kinds of one, or
    /// like the prefix, is spelled with the prefix; others as named.
    #[test]
    fn spellings_read_back_as_the_counter() {
        for (name, spelling) in [
            ("cycles", "cycles"),
            ("page-faults", "page-faults"),
            ("insts", "insts"),
            ("cpu/event=0x3c/", "cpu/event=0x3c/"),
            ("cpu", "counter_cpu"),
            ("totalcpu", "counter_totalcpu"),
            ("sync", "counter_sync"),
            ("async", "counter_async"),
            ("name", "counter_name"),
            ("ioerrorcnt", "counter_ioerrorcnt"),
            ("read_time", "counter_read_time"),
            (".x", "counter_.x"),
            ("counter_x", "counter_counter_x"),
        ] {
            assert_eq!(Counter::named(name).spelling(), spelling, "{name}");
        }
    }
}
