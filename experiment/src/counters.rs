//! Counter overflow events (the `counters` block file, kind 7) and the
//! counters an experiment profiles on.
//!
//! The Collector's hardware-counter overflow profiling ("Hardware Counter
//! Overflow Profiling Data" in "What Data the Collector Collects"): each
//! counter counts per thread and, every `interval` events, the thread is
//! interrupted and its call stack recorded with the count since its previous
//! record for that counter. Software events (page faults, context switches)
//! go the same way. Where the event has a data address (page faults here,
//! precise memory events on hardware), the record holds it, and when that
//! address is on the thread's own stack, which frame holds it: the analyzer
//! attributes the event to a data object from those ("Data Objects").
//!
//! Records are fixed-size, little-endian:
//!
//! ```text
//! offset size field
//! 0      8    time_ns     CLOCK_MONOTONIC when the thread was interrupted
//! 8      8    stack_id    the stack record where it was, leaf first
//! 16     8    count       events since the thread's previous record for this counter
//! 24     8    data_addr   the event's data address; 0 = none (flag DATA_ADDRESS)
//! 32     8    frame_cfa   CFA of the stack frame holding data_addr (flag IN_FRAME)
//! 40     2    counter     index of the counter in the experiment's list
//! 42     2    frame       that frame's index in the stack, leaf = 0 (flag IN_FRAME)
//! 44     2    flags       DATA_ADDRESS | SCALED | IN_FRAME
//! 46     2    reserved    0
//! ```
//!
//! Encoding and decoding allocate nothing and never panic: the encoder runs
//! inside the collector's signal handler. [`CounterSpec`] (the config's
//! `counter` keys) allocates and is parsed at start only.

/// Most counters one experiment profiles on at once.
pub const MAX_COUNTERS: usize = 8;

/// Size of one record.
pub const COUNTER_RECORD_SIZE: usize = 48;

/// `data_addr` holds the event's data address.
pub const FLAG_DATA_ADDRESS: u16 = 1;
/// The counter was multiplexed: `count` is the raw count scaled by time
/// enabled / time running over the span it covers.
pub const FLAG_SCALED: u16 = 2;
/// `data_addr` is on the thread's stack, in the frame `frame` whose CFA is
/// `frame_cfa` (the frame's variables sit at fixed offsets from it).
pub const FLAG_IN_FRAME: u16 = 4;

/// One overflow (or several merged: `count` covers them all).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct CounterEvent {
    /// CLOCK_MONOTONIC ns when the thread was interrupted.
    pub time_ns: u64,
    pub stack_id: u64,
    /// Events counted since the thread's previous record for this counter.
    pub count: u64,
    /// The data address, when `flags` has [`FLAG_DATA_ADDRESS`].
    pub data_addr: u64,
    /// The CFA of frame `frame`, when `flags` has [`FLAG_IN_FRAME`].
    pub frame_cfa: u64,
    /// Index into the experiment's counters (the order of the `counter`
    /// config keys and of the log's `counter` lines).
    pub counter: u16,
    pub frame: u16,
    pub flags: u16,
}

impl CounterEvent {
    /// The data address, if the event has one.
    pub fn address(&self) -> Option<u64> {
        (self.flags & FLAG_DATA_ADDRESS != 0).then_some(self.data_addr)
    }

    /// The stack frame holding the data address and that frame's CFA.
    pub fn stack_frame(&self) -> Option<(u16, u64)> {
        (self.flags & FLAG_IN_FRAME != 0).then_some((self.frame, self.frame_cfa))
    }

    /// Whether the count was scaled for multiplexing.
    pub fn scaled(&self) -> bool {
        self.flags & FLAG_SCALED != 0
    }

    /// The record's bytes.
    pub fn encode(&self) -> [u8; COUNTER_RECORD_SIZE] {
        let mut out = [0u8; COUNTER_RECORD_SIZE];
        out[0..8].copy_from_slice(&self.time_ns.to_le_bytes());
        out[8..16].copy_from_slice(&self.stack_id.to_le_bytes());
        out[16..24].copy_from_slice(&self.count.to_le_bytes());
        out[24..32].copy_from_slice(&self.data_addr.to_le_bytes());
        out[32..40].copy_from_slice(&self.frame_cfa.to_le_bytes());
        out[40..42].copy_from_slice(&self.counter.to_le_bytes());
        out[42..44].copy_from_slice(&self.frame.to_le_bytes());
        out[44..46].copy_from_slice(&self.flags.to_le_bytes());
        out
    }

    /// The event of a record; None for a short slice.
    pub fn decode(bytes: &[u8]) -> Option<CounterEvent> {
        let record = bytes.get(..COUNTER_RECORD_SIZE)?;
        let word = |at: usize| -> Option<u64> {
            Some(u64::from_le_bytes(record.get(at..at + 8)?.try_into().ok()?))
        };
        let half = |at: usize| -> Option<u16> {
            Some(u16::from_le_bytes(record.get(at..at + 2)?.try_into().ok()?))
        };
        Some(CounterEvent {
            time_ns: word(0)?,
            stack_id: word(8)?,
            count: word(16)?,
            data_addr: word(24)?,
            frame_cfa: word(32)?,
            counter: half(40)?,
            frame: half(42)?,
            flags: half(44)?,
        })
    }
}

/// Decodes every record of one block's committed bytes. Returns false when
/// the bytes are not whole records.
pub fn decode_block(records: &[u8], each: impl FnMut(CounterEvent)) -> bool {
    crate::layout::decode_fixed_records(records, COUNTER_RECORD_SIZE, CounterEvent::decode, each)
}

/// One counter to profile on: what perf_event_open is asked for, resolved
/// from the user's name by the launcher or the debugger, so the collector
/// opens exactly what was checked.
///
/// In the config it is one `counter` key (repeated, one per counter, in
/// order): `TYPE:CONFIG:CONFIG1:CONFIG2:INTERVAL:ADDRESS:NAME`, numbers in
/// decimal, ADDRESS `1` to ask for the data address, NAME last so that it
/// may hold any character (the whole value is percent-encoded as every
/// config value is).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CounterSpec {
    /// The name the user gave (`page-faults`, `cycles`, `r01c2`).
    pub name: String,
    /// perf_event_attr.type.
    pub kind: u32,
    pub config: u64,
    pub config1: u64,
    pub config2: u64,
    /// Overflow interval: events between records (sample_period), >= 1.
    pub interval: u64,
    /// Ask for each event's data address (PERF_SAMPLE_ADDR).
    pub data_address: bool,
}

impl CounterSpec {
    /// Parses a `counter` config value (decoded); None when malformed.
    pub fn parse(text: &str) -> Option<CounterSpec> {
        let mut fields = text.splitn(7, ':');
        let mut number = || fields.next()?.parse::<u64>().ok();
        let kind = u32::try_from(number()?).ok()?;
        let config = number()?;
        let config1 = number()?;
        let config2 = number()?;
        let interval = number().filter(|&n| n >= 1)?;
        let data_address = match number()? {
            0 => false,
            1 => true,
            _ => return None,
        };
        let name = fields.next().filter(|n| !n.is_empty())?.to_string();
        Some(CounterSpec {
            name,
            kind,
            config,
            config1,
            config2,
            interval,
            data_address,
        })
    }

    /// The numeric fields of the config value, before the name:
    /// `TYPE:CONFIG:CONFIG1:CONFIG2:INTERVAL:ADDRESS`.
    pub fn numbers(&self) -> [u64; 6] {
        [
            u64::from(self.kind),
            self.config,
            self.config1,
            self.config2,
            self.interval,
            u64::from(self.data_address),
        ]
    }
}

impl std::fmt::Display for CounterSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for n in self.numbers() {
            write!(f, "{n}:")?;
        }
        f.write_str(&self.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip() {
        let event = CounterEvent {
            time_ns: 123_456_789,
            stack_id: u64::MAX - 3,
            count: 4096,
            data_addr: 0x7fff_1234_5678,
            frame_cfa: 0x7fff_1234_9000,
            counter: 7,
            frame: 2,
            flags: FLAG_DATA_ADDRESS | FLAG_IN_FRAME,
        };
        assert_eq!(CounterEvent::decode(&event.encode()), Some(event));
        assert_eq!(event.address(), Some(0x7fff_1234_5678));
        assert_eq!(event.stack_frame(), Some((2, 0x7fff_1234_9000)));
        assert!(!event.scaled());
        assert_eq!(CounterEvent::decode(&event.encode()[..47]), None);
        let mut two = event.encode().to_vec();
        two.extend_from_slice(&event.encode());
        let mut seen = 0;
        assert!(decode_block(&two, |_| seen += 1));
        assert_eq!(seen, 2);
        assert!(!decode_block(&two[..50], |_| {}));
    }

    #[test]
    fn an_event_without_flags_has_no_address_or_frame() {
        let event = CounterEvent {
            data_addr: 0x1000,
            frame: 1,
            ..CounterEvent::default()
        };
        assert_eq!(event.address(), None);
        assert_eq!(event.stack_frame(), None);
    }

    #[test]
    fn specs_round_trip_with_any_name() {
        let spec = CounterSpec {
            name: "cpu/event=0x3c,umask=0/:x".into(),
            kind: 4,
            config: 0x3c,
            config1: 0,
            config2: 9,
            interval: 1_000_003,
            data_address: true,
        };
        let text = spec.to_string();
        assert_eq!(text, "4:60:0:9:1000003:1:cpu/event=0x3c,umask=0/:x");
        assert_eq!(CounterSpec::parse(&text), Some(spec));
    }

    #[test]
    fn malformed_specs_are_refused() {
        for bad in [
            "",
            "1:2:0:0:1000:1",
            "1:2:0:0:1000:1:",
            "1:2:0:0:0:1:page-faults",
            "1:2:0:0:10:2:page-faults",
            "x:2:0:0:10:1:page-faults",
            "4294967296:2:0:0:10:1:page-faults",
        ] {
            assert_eq!(CounterSpec::parse(bad), None, "{bad:?}");
        }
    }
}
