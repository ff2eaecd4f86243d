//! The perf events this machine offers, by name: what `collector hwprofile
//! counter NAME INTERVAL` and `rdbx collect -h NAME,INTERVAL` resolve to the
//! perf_event_attr fields the collector opens ([`experiment::counters::CounterSpec`]).
//!
//! Names come from three places: the kernel's generic software events (every
//! Linux), its generic hardware and hardware-cache events (a CPU PMU), and
//! the named events each PMU lists under /sys/bus/event_source/devices, plus
//! raw events `rHEX`. gprofng's short names (`cycles`, `insts`, `dcm`...) are
//! aliases. A name is resolved here, before the program starts, so that a
//! typo or a hardware counter on a machine without a PMU is one clear line
//! and never a run without the data asked for.

mod builtin;
mod sysfs;

use experiment::counters::CounterSpec;
use std::path::Path;

pub use builtin::{PERF_TYPE_HARDWARE, PERF_TYPE_HW_CACHE, PERF_TYPE_RAW, PERF_TYPE_SOFTWARE};

/// Where the kernel lists its PMUs.
pub const SYSFS_DEVICES: &str = "/sys/bus/event_source/devices";

/// Largest overflow interval accepted: a counter that would practically
/// never overflow records nothing.
pub const MAX_INTERVAL: u64 = 1_000_000_000_000;

/// The overflow intervals `on`, `hi` and `lo` stand for, in events.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Intervals {
    pub on: u64,
    pub hi: u64,
    pub lo: u64,
}

impl Intervals {
    /// Cycles and instructions: gprofng's intervals (primes near powers of
    /// ten, so overflows do not beat with loops).
    pub const CYCLES: Intervals = Intervals {
        on: 10_000_003,
        hi: 1_000_003,
        lo: 100_000_003,
    };
    /// Frequent events (accesses, branches).
    pub const FREQUENT: Intervals = Intervals {
        on: 1_000_003,
        hi: 100_003,
        lo: 10_000_003,
    };
    /// Misses.
    pub const MISSES: Intervals = Intervals {
        on: 100_003,
        hi: 10_003,
        lo: 1_000_003,
    };
    /// Clocks, in ns: 10 ms, 1 ms, 100 ms as clock profiling.
    pub const CLOCK: Intervals = Intervals {
        on: 10_000_000,
        hi: 1_000_000,
        lo: 100_000_000,
    };
    /// Page faults: a program touching a gigabyte takes 260,000; one record
    /// per 100 costs it little, `hi` and 1 show every page.
    pub const FAULTS: Intervals = Intervals {
        on: 100,
        hi: 10,
        lo: 1_000,
    };
    /// Context switches.
    pub const SWITCHES: Intervals = Intervals {
        on: 100,
        hi: 10,
        lo: 1_000,
    };
    /// Rare events (major faults, migrations, alignment faults).
    pub const RARE: Intervals = Intervals {
        on: 1,
        hi: 1,
        lo: 10,
    };
}

/// Where an event comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    Software,
    Hardware,
    HardwareCache,
    /// A named event of this PMU (sysfs).
    Pmu(String),
    /// `rHEX`.
    Raw,
}

impl Source {
    /// Whether counting needs the CPU's PMU.
    fn needs_cpu_pmu(&self) -> bool {
        match self {
            Source::Software => false,
            Source::Hardware | Source::HardwareCache | Source::Raw => true,
            Source::Pmu(pmu) => sysfs::is_cpu_pmu(pmu),
        }
    }
}

/// One event the catalog knows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    pub name: String,
    pub aliases: Vec<String>,
    pub source: Source,
    /// perf_event_attr.type, config, config1, config2.
    pub kind: u32,
    pub config: u64,
    pub config1: u64,
    pub config2: u64,
    pub intervals: Intervals,
    /// The kernel gives each event's data address (PERF_SAMPLE_ADDR).
    pub data_address: bool,
    pub description: String,
}

/// Context switches at interval 1 feed themselves under a debugger: each
/// record's signal stops the thread (a ptrace stop is a switch) and the
/// next switch is due at once.
const CONTEXT_SWITCHES_MIN_INTERVAL: u64 = 2;

/// How often a counter overflows: er_print's words or a number of events.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Interval {
    On,
    Hi,
    Lo,
    Events(u64),
}

/// Why a counter cannot be profiled on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    #[error("unknown counter \"{name}\"{}; `collector hwprofile list` or `rdbx collect -h list` lists this machine's counters", closest.as_ref().map(|c| format!(" (did you mean \"{c}\"?)")).unwrap_or_default())]
    Unknown {
        name: String,
        closest: Option<String>,
    },
    #[error("counter \"{name}\" needs a hardware PMU and this machine has none (no CPU PMU in {SYSFS_DEVICES}); software counters such as page-faults work here")]
    NoPmu { name: String },
    #[error("counter \"{name}\": interval 0 (events between records) must be at least 1")]
    ZeroInterval { name: String },
    #[error("counter \"{name}\": interval {interval} is absurd (at most {MAX_INTERVAL} events between records)")]
    AbsurdInterval { name: String, interval: u64 },
    #[error("counter \"{name}\": interval 1 is refused (under a debugger each record's signal is itself a context switch); 2 or more")]
    SwitchInterval { name: String },
    #[error("counter \"{name}\" is given twice")]
    Twice { name: String },
    #[error("at most {max} counters at once, {given} given")]
    TooMany { given: usize, max: usize },
}

/// The events of a machine.
#[derive(Clone, Debug)]
pub struct Catalog {
    events: Vec<Event>,
    pmus: Vec<sysfs::Pmu>,
}

impl Catalog {
    /// This machine's events.
    pub fn probe() -> Catalog {
        Catalog::from_sysfs(Path::new(SYSFS_DEVICES))
    }

    /// The events of a machine whose PMUs are listed under `devices` (for
    /// tests, a copy of another machine's tree).
    pub fn from_sysfs(devices: &Path) -> Catalog {
        let (pmus, named) = sysfs::read(devices);
        let mut events = builtin::software();
        events.extend(builtin::hardware());
        for event in named {
            // The generic names win: `cpu/cycles/` is an alias of cpu-cycles
            // on many machines, listed also under its own name.
            if events.iter().all(|e| !e.answers_to(&event.name)) {
                events.push(event);
            }
        }
        Catalog { events, pmus }
    }

    pub fn events(&self) -> &[Event] {
        &self.events
    }

    /// Whether this machine has a CPU PMU (hardware counters).
    pub fn has_cpu_pmu(&self) -> bool {
        self.pmus.iter().any(|p| sysfs::is_cpu_pmu(&p.name))
    }

    /// The event a name or alias stands for, or a raw event `rHEX`.
    pub fn find(&self, name: &str) -> Option<Event> {
        if let Some(event) = self.events.iter().find(|e| e.answers_to(name)) {
            return Some(event.clone());
        }
        if let Some(event) = self
            .events
            .iter()
            .find(|e| e.names().any(|n| n.eq_ignore_ascii_case(name)))
        {
            return Some(event.clone());
        }
        raw(name)
    }

    /// The closest known name to a misspelt one.
    pub fn closest(&self, name: &str) -> Option<String> {
        let lower = name.to_ascii_lowercase();
        self.events
            .iter()
            .filter(|e| !e.source.needs_cpu_pmu() || self.has_cpu_pmu())
            .flat_map(Event::names)
            .map(|n| (strsim::jaro_winkler(&lower, &n.to_ascii_lowercase()), n))
            .filter(|(score, _)| *score >= 0.8)
            .max_by(|a, b| a.0.total_cmp(&b.0))
            .map(|(_, n)| n.to_string())
    }

    /// What the collector opens for `name` at `interval`.
    pub fn resolve(&self, name: &str, interval: Interval) -> Result<CounterSpec, Error> {
        let event = self.find(name).ok_or_else(|| Error::Unknown {
            name: name.to_string(),
            closest: self.closest(name),
        })?;
        if event.source.needs_cpu_pmu() && !self.has_cpu_pmu() {
            return Err(Error::NoPmu {
                name: name.to_string(),
            });
        }
        let interval = match interval {
            Interval::On => event.intervals.on,
            Interval::Hi => event.intervals.hi,
            Interval::Lo => event.intervals.lo,
            Interval::Events(0) => {
                return Err(Error::ZeroInterval {
                    name: name.to_string(),
                })
            }
            Interval::Events(n) if n > MAX_INTERVAL => {
                return Err(Error::AbsurdInterval {
                    name: name.to_string(),
                    interval: n,
                })
            }
            Interval::Events(n) => n,
        };
        let switches = event.kind == PERF_TYPE_SOFTWARE && event.config == 3;
        if switches && interval < CONTEXT_SWITCHES_MIN_INTERVAL {
            return Err(Error::SwitchInterval {
                name: name.to_string(),
            });
        }
        Ok(CounterSpec {
            name: name.to_string(),
            kind: event.kind,
            config: event.config,
            config1: event.config1,
            config2: event.config2,
            interval,
            data_address: event.data_address,
        })
    }

    /// Resolves a list of counters: each at most once, at most
    /// [`experiment::counters::MAX_COUNTERS`].
    pub fn resolve_all(&self, wanted: &[(String, Interval)]) -> Result<Vec<CounterSpec>, Error> {
        let max = experiment::counters::MAX_COUNTERS;
        if wanted.len() > max {
            return Err(Error::TooMany {
                given: wanted.len(),
                max,
            });
        }
        let mut specs: Vec<CounterSpec> = Vec::new();
        for (name, interval) in wanted {
            let spec = self.resolve(name, *interval)?;
            let same = |s: &CounterSpec| {
                (s.kind, s.config, s.config1, s.config2)
                    == (spec.kind, spec.config, spec.config1, spec.config2)
            };
            if specs.iter().any(same) {
                return Err(Error::Twice { name: name.clone() });
            }
            specs.push(spec);
        }
        Ok(specs)
    }

    /// The counters `hwprofile on` profiles when none were chosen: cycles
    /// and instructions where there is a hardware PMU, page faults where
    /// there is not.
    pub fn defaults(&self) -> Vec<(String, Interval)> {
        let names: &[&str] = if self.has_cpu_pmu() {
            &["cycles", "insts"]
        } else {
            &["page-faults"]
        };
        names
            .iter()
            .map(|n| (n.to_string(), Interval::On))
            .collect()
    }

    /// The text of `collector hwprofile list`.
    pub fn listing(&self) -> String {
        let mut out = String::new();
        let pmu = self.has_cpu_pmu();
        if !pmu {
            out.push_str(&format!(
                "This machine has no hardware PMU (no CPU PMU in {SYSFS_DEVICES}): \
                 only software counters can be profiled here.\n"
            ));
        }
        let section = |out: &mut String, title: &str, events: Vec<&Event>| {
            if events.is_empty() {
                return;
            }
            out.push_str(&format!("\n{title}\n"));
            out.push_str(&format!(
                "  {:<28} {:<14} {:<34} {:<7} {}\n",
                "name", "aliases", "interval on/hi/lo (events)", "address", "description"
            ));
            for e in events {
                let i = e.intervals;
                out.push_str(&format!(
                    "  {:<28} {:<14} {:<34} {:<7} {}\n",
                    e.name,
                    e.aliases.join(","),
                    format!("{}/{}/{}", i.on, i.hi, i.lo),
                    if e.data_address { "yes" } else { "no" },
                    e.description
                ));
            }
        };
        let of = |wanted: fn(&Source) -> bool| -> Vec<&Event> {
            self.events.iter().filter(|e| wanted(&e.source)).collect()
        };
        section(
            &mut out,
            "Software counters:",
            of(|s| *s == Source::Software),
        );
        let hardware_title = if pmu {
            "Hardware counters:"
        } else {
            "Hardware counters (need a hardware PMU; not available on this machine):"
        };
        section(
            &mut out,
            hardware_title,
            of(|s| matches!(s, Source::Hardware | Source::HardwareCache)),
        );
        section(
            &mut out,
            "Named events of the kernel's PMUs:",
            of(|s| matches!(s, Source::Pmu(_))),
        );
        if pmu {
            out.push_str("\nRaw events: rHEX (the PMU's event code, e.g. r01c2).\n");
        }
        out.push_str(
            "\nAn interval is on, hi, lo or a number of events between records \
             (collector hwprofile counter NAME INTERVAL; rdbx collect -h NAME,INTERVAL).\n",
        );
        out
    }
}

impl Event {
    fn names(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.name.as_str()).chain(self.aliases.iter().map(String::as_str))
    }

    fn answers_to(&self, name: &str) -> bool {
        self.names().any(|n| n == name)
    }
}

/// `rHEX`: a raw event of the CPU's PMU.
fn raw(name: &str) -> Option<Event> {
    let hex = name.strip_prefix('r')?;
    if hex.is_empty() || hex.len() > 16 {
        return None;
    }
    let config = u64::from_str_radix(hex, 16).ok()?;
    Some(Event {
        name: name.to_string(),
        aliases: Vec::new(),
        source: Source::Raw,
        kind: PERF_TYPE_RAW,
        config,
        config1: 0,
        config2: 0,
        intervals: Intervals::FREQUENT,
        data_address: false,
        description: format!("raw event {config:#x}"),
    })
}

#[cfg(test)]
mod tests;
