//! The kernel's generic events (linux/perf_event.h): software events, which
//! every Linux has, and the generic hardware and hardware-cache events, which
//! need a CPU PMU.

use crate::{Event, Intervals, Source};

pub const PERF_TYPE_HARDWARE: u32 = 0;
pub const PERF_TYPE_SOFTWARE: u32 = 1;
pub const PERF_TYPE_HW_CACHE: u32 = 3;
pub const PERF_TYPE_RAW: u32 = 4;

/// A generic event: config, name, short names, description, intervals.
type Generic = (
    u64,
    &'static str,
    &'static [&'static str],
    &'static str,
    Intervals,
);

/// Hardware events.
const HARDWARE: &[Generic] = &[
    (
        0,
        "cpu-cycles",
        &["cycles"],
        "CPU cycles",
        Intervals::CYCLES,
    ),
    (
        1,
        "instructions",
        &["insts"],
        "instructions retired",
        Intervals::CYCLES,
    ),
    (
        2,
        "cache-references",
        &[],
        "last-level cache accesses",
        Intervals::FREQUENT,
    ),
    (
        3,
        "cache-misses",
        &[],
        "last-level cache misses",
        Intervals::MISSES,
    ),
    (
        4,
        "branch-instructions",
        &["branches"],
        "branch instructions retired",
        Intervals::FREQUENT,
    ),
    (
        5,
        "branch-misses",
        &[],
        "mispredicted branches",
        Intervals::MISSES,
    ),
    (6, "bus-cycles", &[], "bus cycles", Intervals::FREQUENT),
    (
        7,
        "stalled-cycles-frontend",
        &[],
        "cycles the front end stalled",
        Intervals::CYCLES,
    ),
    (
        8,
        "stalled-cycles-backend",
        &[],
        "cycles the back end stalled",
        Intervals::CYCLES,
    ),
    (
        9,
        "ref-cycles",
        &[],
        "reference cycles (not scaled by frequency)",
        Intervals::CYCLES,
    ),
];

/// Software events, and whether each has a data address.
const SOFTWARE: &[(Generic, bool)] = &[
    (
        (
            0,
            "cpu-clock",
            &[],
            "CPU clock, ns (per CPU timer)",
            Intervals::CLOCK,
        ),
        false,
    ),
    (
        (
            1,
            "task-clock",
            &[],
            "task clock, ns (the thread's CPU time)",
            Intervals::CLOCK,
        ),
        false,
    ),
    (
        (
            2,
            "page-faults",
            &["faults"],
            "page faults",
            Intervals::FAULTS,
        ),
        true,
    ),
    (
        (
            3,
            "context-switches",
            &["cs"],
            "context switches",
            Intervals::SWITCHES,
        ),
        false,
    ),
    (
        (
            4,
            "cpu-migrations",
            &["migrations"],
            "moves to another CPU",
            Intervals::RARE,
        ),
        false,
    ),
    (
        (
            5,
            "minor-faults",
            &[],
            "page faults served without I/O",
            Intervals::FAULTS,
        ),
        true,
    ),
    (
        (
            6,
            "major-faults",
            &[],
            "page faults that needed I/O",
            Intervals::RARE,
        ),
        true,
    ),
    (
        (
            7,
            "alignment-faults",
            &[],
            "alignment faults",
            Intervals::RARE,
        ),
        false,
    ),
    (
        (
            8,
            "emulation-faults",
            &[],
            "instructions the kernel emulated",
            Intervals::RARE,
        ),
        false,
    ),
];

/// Hardware cache ids, operations and results, as perf names them.
const CACHES: &[(u64, &str, &str)] = &[
    (0, "L1-dcache", "level 1 data cache"),
    (1, "L1-icache", "level 1 instruction cache"),
    (2, "LLC", "last-level cache"),
    (3, "dTLB", "data TLB"),
    (4, "iTLB", "instruction TLB"),
    (5, "branch", "branch prediction unit"),
    (6, "node", "local memory node"),
];
const OPERATIONS: &[(u64, &str, &str)] = &[
    (0, "load", "loads"),
    (1, "store", "stores"),
    (2, "prefetch", "prefetches"),
];

/// gprofng's short names for cache misses.
const CACHE_ALIASES: &[(&str, &str)] = &[
    ("L1-dcache-load-misses", "dcm"),
    ("L1-icache-load-misses", "icm"),
    ("LLC-load-misses", "ecm"),
    ("dTLB-load-misses", "dtlbm"),
    ("iTLB-load-misses", "itlbm"),
];

pub fn software() -> Vec<Event> {
    SOFTWARE
        .iter()
        .map(
            |&((config, name, aliases, description, intervals), data_address)| Event {
                name: name.to_string(),
                aliases: aliases.iter().map(|a| a.to_string()).collect(),
                source: Source::Software,
                kind: PERF_TYPE_SOFTWARE,
                config,
                config1: 0,
                config2: 0,
                intervals,
                data_address,
                description: description.to_string(),
            },
        )
        .collect()
}

pub fn hardware() -> Vec<Event> {
    let generic = HARDWARE
        .iter()
        .map(|&(config, name, aliases, description, intervals)| Event {
            name: name.to_string(),
            aliases: aliases.iter().map(|a| a.to_string()).collect(),
            source: Source::Hardware,
            kind: PERF_TYPE_HARDWARE,
            config,
            config1: 0,
            config2: 0,
            intervals,
            data_address: false,
            description: description.to_string(),
        });
    generic.chain(caches()).collect()
}

/// `L1-dcache-loads`, `L1-dcache-load-misses`, ...: cache | op << 8 |
/// result << 16, result 0 = access, 1 = miss.
fn caches() -> impl Iterator<Item = Event> {
    CACHES.iter().flat_map(|&(cache, cache_name, cache_text)| {
        OPERATIONS.iter().flat_map(move |&(op, op_name, op_text)| {
            [(0u64, "s", "accesses"), (1, "-misses", "misses")]
                .into_iter()
                .map(move |(result, suffix, result_text)| {
                    let name = if result == 0 {
                        format!("{cache_name}-{op_text}")
                    } else {
                        format!("{cache_name}-{op_name}{suffix}")
                    };
                    let aliases = CACHE_ALIASES
                        .iter()
                        .filter(|(full, _)| *full == name)
                        .map(|(_, short)| short.to_string())
                        .collect();
                    Event {
                        name,
                        aliases,
                        source: Source::HardwareCache,
                        kind: PERF_TYPE_HW_CACHE,
                        config: cache | op << 8 | result << 16,
                        config1: 0,
                        config2: 0,
                        intervals: if result == 0 {
                            Intervals::FREQUENT
                        } else {
                            Intervals::MISSES
                        },
                        data_address: false,
                        description: format!("{cache_text} {op_text}, {result_text}"),
                    }
                })
        })
    })
}
