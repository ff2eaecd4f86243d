//! The kernel's named events: /sys/bus/event_source/devices/PMU/events/NAME
//! holds terms (`event=0x3c,umask=0x01`), and PMU/format/TERM says which
//! bits of config, config1 or config2 each term fills (`config:0-7`).

use crate::{Event, Intervals, Source};
use std::path::Path;

/// A PMU the kernel lists: its name and perf type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pmu {
    pub name: String,
    pub kind: u32,
}

/// Names of the CPU's own PMU on x86 (hybrid parts have two) and Arm.
pub fn is_cpu_pmu(name: &str) -> bool {
    name == "cpu"
        || name.starts_with("cpu_")
        || name.starts_with("armv8_")
        || name == "armv7_cortex"
}

/// The PMUs under `devices` (sorted by name) and their named events.
pub fn read(devices: &Path) -> (Vec<Pmu>, Vec<Event>) {
    let mut pmus = Vec::new();
    let mut events = Vec::new();
    let Ok(entries) = std::fs::read_dir(devices) else {
        return (pmus, events);
    };
    let mut dirs: Vec<_> = entries.filter_map(|e| e.ok()).map(|e| e.path()).collect();
    dirs.sort();
    for dir in dirs {
        let Some(name) = dir.file_name().and_then(|n| n.to_str()).map(str::to_string) else {
            continue;
        };
        let Some(kind) = read_trimmed(&dir.join("type")).and_then(|t| t.parse().ok()) else {
            continue;
        };
        events.extend(pmu_events(&dir, &name, kind));
        pmus.push(Pmu { name, kind });
    }
    (pmus, events)
}

fn read_trimmed(path: &Path) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|t| t.trim().to_string())
}

/// The events of one PMU, named `PMU/EVENT/` (perf's syntax); those of the
/// CPU's PMU also by their bare name. Events whose terms need a value
/// from the user (`ldlat=?`) or use a term the format does not define are
/// left out.
fn pmu_events(dir: &Path, pmu: &str, kind: u32) -> Vec<Event> {
    let Ok(entries) = std::fs::read_dir(dir.join("events")) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str().map(str::to_string))
        // NAME.scale, NAME.unit, NAME.snapshot describe NAME.
        .filter(|n| !n.contains('.'))
        .collect();
    names.sort();
    names
        .into_iter()
        .filter_map(|event| {
            let terms = read_trimmed(&dir.join("events").join(&event))?;
            let configs =
                encode_terms(&terms, |term| read_trimmed(&dir.join("format").join(term)))?;
            let qualified = format!("{pmu}/{event}/");
            let (name, aliases) = if is_cpu_pmu(pmu) {
                (event.clone(), vec![qualified])
            } else {
                (qualified, Vec::new())
            };
            Some(Event {
                name,
                aliases,
                source: Source::Pmu(pmu.to_string()),
                kind,
                config: configs[0],
                config1: configs[1],
                config2: configs[2],
                intervals: Intervals::FREQUENT,
                data_address: is_cpu_pmu(pmu) && is_memory_event(&event),
                description: format!("{pmu} event {terms}"),
            })
        })
        .collect()
}

/// The CPU's memory events (Intel's `mem-loads`, `mem-stores`): with
/// precise sampling each record carries the address loaded or stored,
/// which the data-object views attribute. (`mem-loads-aux` is a helper
/// event of the group perf makes, with no address of its own.)
fn is_memory_event(name: &str) -> bool {
    matches!(name, "mem-loads" | "mem-stores")
}

/// config, config1 and config2 for terms such as `event=0x3c,umask=0x1,inv`
/// (a term without a value is 1); `format` gives a term's bit layout.
pub fn encode_terms(terms: &str, format: impl Fn(&str) -> Option<String>) -> Option<[u64; 3]> {
    let mut configs = [0u64; 3];
    for term in terms.split(',').map(str::trim).filter(|t| !t.is_empty()) {
        let (name, value) = match term.split_once('=') {
            Some((name, value)) => (name.trim(), parse_number(value.trim())?),
            None => (term, 1),
        };
        let layout = format(name)?;
        place(&mut configs, &layout, value)?;
    }
    Some(configs)
}

fn parse_number(text: &str) -> Option<u64> {
    match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    }
}

/// Puts `value`'s bits where `layout` says: `config:0-7`, `config1:0-63`,
/// `config:0-7,32-35` (the low bits of the value go to the first range).
fn place(configs: &mut [u64; 3], layout: &str, mut value: u64) -> Option<()> {
    let (field, ranges) = layout.split_once(':')?;
    let index = match field.trim() {
        "config" => 0,
        "config1" => 1,
        "config2" => 2,
        _ => return None,
    };
    for range in ranges.split(',') {
        let (lo, hi) = match range.trim().split_once('-') {
            Some((lo, hi)) => (lo.parse::<u32>().ok()?, hi.parse::<u32>().ok()?),
            None => {
                let bit = range.trim().parse::<u32>().ok()?;
                (bit, bit)
            }
        };
        if lo > hi || hi > 63 {
            return None;
        }
        let width = hi - lo + 1;
        let mask = if width == 64 {
            u64::MAX
        } else {
            (1u64 << width) - 1
        };
        configs[index] |= (value & mask) << lo;
        value = if width == 64 { 0 } else { value >> width };
    }
    // Bits left over do not fit the term's field.
    (value == 0).then_some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn format(term: &str) -> Option<String> {
        Some(
            match term {
                "event" => "config:0-7,32-35",
                "umask" => "config:8-15",
                "inv" => "config:23",
                "ldlat" => "config1:0-15",
                _ => return None,
            }
            .to_string(),
        )
    }

    #[test]
    fn terms_fill_their_bits() {
        assert_eq!(
            encode_terms("event=0x3c,umask=0x01", format),
            Some([0x013c, 0, 0])
        );
        assert_eq!(
            encode_terms("event=0x1d0,inv", format),
            Some([(1 << 32) | 0xd0 | (1 << 23), 0, 0])
        );
        assert_eq!(
            encode_terms("event=0xcd,ldlat=3", format),
            Some([0xcd, 3, 0])
        );
    }

    #[test]
    fn terms_that_cannot_be_encoded_are_refused() {
        assert_eq!(
            encode_terms("event=0x3c,cmask=1", format),
            None,
            "no such term"
        );
        assert_eq!(
            encode_terms("ldlat=?", format),
            None,
            "a value the user must give"
        );
        assert_eq!(encode_terms("umask=0x100", format), None, "too wide");
    }

    #[test]
    fn named_events_are_read_from_a_sysfs_tree() {
        let root = std::env::temp_dir().join(format!("perfevents-sysfs-{}", std::process::id()));
        let cpu = root.join("cpu");
        std::fs::create_dir_all(cpu.join("events")).unwrap();
        std::fs::create_dir_all(cpu.join("format")).unwrap();
        std::fs::write(cpu.join("type"), "4\n").unwrap();
        std::fs::write(cpu.join("format/event"), "config:0-7\n").unwrap();
        std::fs::write(cpu.join("format/umask"), "config:8-15\n").unwrap();
        std::fs::write(
            cpu.join("events/mem-loads"),
            "event=0xcd,umask=0x1,ldlat=?\n",
        )
        .unwrap();
        std::fs::write(
            cpu.join("events/topdown-total-slots"),
            "event=0x00,umask=0x4\n",
        )
        .unwrap();
        std::fs::write(cpu.join("events/topdown-total-slots.scale"), "4\n").unwrap();
        let msr = root.join("msr");
        std::fs::create_dir_all(msr.join("events")).unwrap();
        std::fs::create_dir_all(msr.join("format")).unwrap();
        std::fs::write(msr.join("type"), "9\n").unwrap();
        std::fs::write(msr.join("format/event"), "config:0-63\n").unwrap();
        std::fs::write(msr.join("events/tsc"), "event=0x00\n").unwrap();
        let (pmus, events) = read(&root);
        let _ = std::fs::remove_dir_all(&root);
        assert_eq!(
            pmus,
            [
                Pmu {
                    name: "cpu".into(),
                    kind: 4
                },
                Pmu {
                    name: "msr".into(),
                    kind: 9
                }
            ]
        );
        let names: Vec<_> = events.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["topdown-total-slots", "msr/tsc/"]);
        assert_eq!(events[0].config, 0x400);
        assert_eq!(events[0].aliases, ["cpu/topdown-total-slots/"]);
        assert_eq!((events[1].kind, events[1].config), (9, 0));
    }
}
