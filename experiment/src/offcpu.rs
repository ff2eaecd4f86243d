//! Off-CPU events (the `offcpu` block file, kind 6): each time a thread was
//! switched out of its CPU, where it was (the call stack at the switch) and
//! how long it stayed off before it ran again. With the clock profile's CPU
//! time this makes a wall-clock profile: Off-CPU Time, and Wall Time = Total
//! CPU Time + Off-CPU Time.
//!
//! Records are fixed-size, little-endian:
//!
//! ```text
//! offset size field
//! 0      8    end_ns      CLOCK_MONOTONIC when the thread ran again
//! 8      8    off_ns      how long it was off the CPU
//! 16     8    stack_id    the stack record where it was switched out
//! ```
//!
//! Encoding and decoding allocate nothing and never panic: the encoder runs
//! inside the collector's signal handler.

/// One switch out and back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OffCpuEvent {
    /// CLOCK_MONOTONIC ns when the thread ran again.
    pub end_ns: u64,
    /// Time off the CPU.
    pub off_ns: u64,
    pub stack_id: u64,
}

/// Size of one record.
pub const OFFCPU_RECORD_SIZE: usize = 24;

impl OffCpuEvent {
    /// The record's bytes.
    pub fn encode(&self) -> [u8; OFFCPU_RECORD_SIZE] {
        let mut out = [0u8; OFFCPU_RECORD_SIZE];
        out[0..8].copy_from_slice(&self.end_ns.to_le_bytes());
        out[8..16].copy_from_slice(&self.off_ns.to_le_bytes());
        out[16..24].copy_from_slice(&self.stack_id.to_le_bytes());
        out
    }

    /// The event of a record; None for a short slice.
    pub fn decode(bytes: &[u8]) -> Option<OffCpuEvent> {
        let record = bytes.get(..OFFCPU_RECORD_SIZE)?;
        let word = |at: usize| -> Option<u64> {
            Some(u64::from_le_bytes(record.get(at..at + 8)?.try_into().ok()?))
        };
        Some(OffCpuEvent {
            end_ns: word(0)?,
            off_ns: word(8)?,
            stack_id: word(16)?,
        })
    }
}

/// Decodes every record of one block's committed bytes. Returns false when
/// the bytes are not whole records.
pub fn decode_block(records: &[u8], each: impl FnMut(OffCpuEvent)) -> bool {
    crate::layout::decode_fixed_records(records, OFFCPU_RECORD_SIZE, OffCpuEvent::decode, each)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip() {
        let event = OffCpuEvent {
            end_ns: 123_456_789,
            off_ns: 42_000,
            stack_id: u64::MAX - 3,
        };
        assert_eq!(OffCpuEvent::decode(&event.encode()), Some(event));
        assert_eq!(OffCpuEvent::decode(&event.encode()[..23]), None);
        let mut two = event.encode().to_vec();
        two.extend_from_slice(&event.encode());
        let mut seen = 0;
        assert!(decode_block(&two, |_| seen += 1));
        assert_eq!(seen, 2);
        assert!(!decode_block(&two[..30], |_| {}));
    }
}
