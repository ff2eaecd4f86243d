//! Synchronization-wait events (the `sync` block file, kind 4): what the
//! collector records for a call of the pthread wait family (mutex, condition
//! variable, rwlock, semaphore, join, barrier) that waited at least the
//! threshold, as the manual's "Synchronization Wait Tracing Data" describes
//! it (Sync Wait Time, Sync Wait Count).
//!
//! Records are fixed-size, little-endian:
//!
//! ```text
//! offset size field
//! 0      1    op          SyncOp code
//! 1      7    (zero)
//! 8      8    start_ns    CLOCK_MONOTONIC when the call began
//! 16     8    wait_ns     how long the call took
//! 24     8    object      the mutex, condition variable, rwlock, semaphore or barrier
//!                         (pthread_join: the thread waited for)
//! 32     8    stack_id    the stack record of the call
//! ```
//!
//! Encoding and decoding allocate nothing and never panic: the encoder runs
//! inside the collector's wrappers.

/// What a wait was in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SyncOp {
    /// pthread_mutex_lock, pthread_mutex_timedlock (and clocklock).
    MutexLock,
    /// pthread_cond_wait, pthread_cond_timedwait (and clockwait).
    CondWait,
    /// pthread_rwlock_rdlock and its timed forms.
    RwlockRead,
    /// pthread_rwlock_wrlock and its timed forms.
    RwlockWrite,
    /// sem_wait, sem_timedwait (and clockwait).
    SemWait,
    /// pthread_join (and the timed and try forms that wait).
    Join,
    /// pthread_barrier_wait.
    Barrier,
}

impl SyncOp {
    pub const ALL: [SyncOp; 7] = [
        SyncOp::MutexLock,
        SyncOp::CondWait,
        SyncOp::RwlockRead,
        SyncOp::RwlockWrite,
        SyncOp::SemWait,
        SyncOp::Join,
        SyncOp::Barrier,
    ];

    pub fn code(self) -> u8 {
        match self {
            SyncOp::MutexLock => 1,
            SyncOp::CondWait => 2,
            SyncOp::RwlockRead => 3,
            SyncOp::RwlockWrite => 4,
            SyncOp::SemWait => 5,
            SyncOp::Join => 6,
            SyncOp::Barrier => 7,
        }
    }

    pub fn from_code(code: u8) -> Option<SyncOp> {
        SyncOp::ALL.into_iter().find(|op| op.code() == code)
    }

    /// The function family, as the manual and er_print name it.
    pub fn name(self) -> &'static str {
        match self {
            SyncOp::MutexLock => "mutex_lock",
            SyncOp::CondWait => "cond_wait",
            SyncOp::RwlockRead => "rwlock_rdlock",
            SyncOp::RwlockWrite => "rwlock_wrlock",
            SyncOp::SemWait => "sem_wait",
            SyncOp::Join => "join",
            SyncOp::Barrier => "barrier_wait",
        }
    }
}

/// One recorded wait.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SyncEvent {
    pub op: SyncOp,
    /// CLOCK_MONOTONIC ns when the call began.
    pub start_ns: u64,
    /// Wall time of the call.
    pub wait_ns: u64,
    /// The synchronization object's address (the joined thread for a join).
    pub object: u64,
    pub stack_id: u64,
}

/// Size of one record.
pub const SYNC_RECORD_SIZE: usize = 40;

impl SyncEvent {
    /// The record's bytes.
    pub fn encode(&self) -> [u8; SYNC_RECORD_SIZE] {
        let mut out = [0u8; SYNC_RECORD_SIZE];
        out[0] = self.op.code();
        out[8..16].copy_from_slice(&self.start_ns.to_le_bytes());
        out[16..24].copy_from_slice(&self.wait_ns.to_le_bytes());
        out[24..32].copy_from_slice(&self.object.to_le_bytes());
        out[32..40].copy_from_slice(&self.stack_id.to_le_bytes());
        out
    }

    /// The event of a record; None when the bytes are no record (a short
    /// slice, an unknown op: damaged data).
    pub fn decode(bytes: &[u8]) -> Option<SyncEvent> {
        let record = bytes.get(..SYNC_RECORD_SIZE)?;
        let word = |at: usize| -> Option<u64> {
            Some(u64::from_le_bytes(record.get(at..at + 8)?.try_into().ok()?))
        };
        Some(SyncEvent {
            op: SyncOp::from_code(record[0])?,
            start_ns: word(8)?,
            wait_ns: word(16)?,
            object: word(24)?,
            stack_id: word(32)?,
        })
    }
}

/// Decodes every record of one block's committed bytes. Returns false when
/// the bytes are not whole records or hold something that is no record.
pub fn decode_block(records: &[u8], each: impl FnMut(SyncEvent)) -> bool {
    crate::layout::decode_fixed_records(records, SYNC_RECORD_SIZE, SyncEvent::decode, each)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip() {
        for op in SyncOp::ALL {
            let event = SyncEvent {
                op,
                start_ns: 123_456_789,
                wait_ns: 42_000,
                object: 0x7fff_1234_5678,
                stack_id: u64::MAX - 3,
            };
            let bytes = event.encode();
            assert_eq!(SyncEvent::decode(&bytes), Some(event));
        }
    }

    #[test]
    fn damaged_records_are_refused() {
        let event = SyncEvent {
            op: SyncOp::Join,
            start_ns: 1,
            wait_ns: 2,
            object: 3,
            stack_id: 4,
        };
        let mut bytes = event.encode();
        assert_eq!(SyncEvent::decode(&bytes[..39]), None);
        bytes[0] = 0;
        assert_eq!(SyncEvent::decode(&bytes), None);
        assert!(!decode_block(&bytes, |_| {}));
        let mut two = event.encode().to_vec();
        two.extend_from_slice(&event.encode());
        let mut seen = 0;
        assert!(decode_block(&two, |_| seen += 1));
        assert_eq!(seen, 2);
        assert!(!decode_block(&two[..50], |_| {}));
    }
}
