//! MPI tracing events (the `mpi` block file, kind 8): what the collector
//! records for each call of the MPI library it traces through the profiling
//! interface (the manual's "MPI Tracing": MPI Time, MPI Sends, MPI Bytes
//! Sent, MPI Receives, MPI Bytes Received, Other MPI Calls): the function,
//! when it began and how long it took, the messages and bytes it sent and
//! received, the peer ranks (numbered in MPI_COMM_WORLD), the tag, the
//! communicator and the call stack.
//!
//! Records are fixed-size, little-endian:
//!
//! ```text
//! offset size field
//! 0      1    op              MpiOp code
//! 1      1    flags           bit 0: the call failed (did not return MPI_SUCCESS)
//!                             bit 1: a completion (see below)
//! 2      2    (zero)
//! 4      4    dest            world rank the data went to; a rooted collective's root;
//!                             -1 none, -2 MPI_PROC_NULL, -3 not known
//! 8      4    source          world rank the data came from (the same special values)
//! 12     4    tag             the message's tag (a receive: the tag matched); -1 none
//! 16     8    start_ns        CLOCK_MONOTONIC when the call began
//! 24     8    time_ns         how long the call took (0 for a completion)
//! 32     8    bytes_sent      bytes the call sent
//! 40     8    bytes_received  bytes the call received
//! 48     8    stack_id        the stack record of the call
//! 56     4    sends           messages sent (the manual's accounting for collectives)
//! 60     4    receives        messages received
//! 64     4    comm            the communicator's Fortran handle (MPI_Comm_c2f: 0 is
//!                             MPI_COMM_WORLD in Open MPI); -1 none
//! 68     4    (zero)
//! ```
//!
//! A nonblocking receive (MPI_Irecv) counts its message when it is posted;
//! its bytes and its source are known when it completes, in a call of the
//! MPI_Wait and MPI_Test families: that call's record is followed by one
//! completion record per receive it completed, with the same op, start and
//! stack, no time, and the bytes, source and tag of that receive.
//!
//! Encoding and decoding allocate nothing and never panic: the encoder runs
//! inside the collector's wrappers.

/// Which of the manual's classes of MPI functions a call is in: it decides
/// what the call counts toward (MPI Sends, MPI Receives, both, or Other MPI
/// Calls).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MpiClass {
    Send,
    Receive,
    SendReceive,
    Other,
}

macro_rules! mpi_ops {
    ($( $variant:ident = $code:literal, $name:literal, $class:ident, $p2p:literal; )*) => {
        /// A traced MPI function.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum MpiOp {
            $( $variant, )*
        }

        impl MpiOp {
            pub const ALL: &'static [MpiOp] = &[$( MpiOp::$variant, )*];

            pub fn code(self) -> u8 {
                match self {
                    $( MpiOp::$variant => $code, )*
                }
            }

            /// The function's name (`MPI_Send`).
            pub fn name(self) -> &'static str {
                match self {
                    $( MpiOp::$variant => $name, )*
                }
            }

            pub fn class(self) -> MpiClass {
                match self {
                    $( MpiOp::$variant => MpiClass::$class, )*
                }
            }

            /// Whether the call moves a message between two ranks (the
            /// message matrix is made of these).
            pub fn is_point_to_point(self) -> bool {
                match self {
                    $( MpiOp::$variant => $p2p, )*
                }
            }
        }
    };
}

mpi_ops! {
    Init = 1, "MPI_Init", Other, false;
    InitThread = 2, "MPI_Init_thread", Other, false;
    Finalize = 3, "MPI_Finalize", Other, false;
    Send = 10, "MPI_Send", Send, true;
    Bsend = 11, "MPI_Bsend", Send, true;
    Ssend = 12, "MPI_Ssend", Send, true;
    Rsend = 13, "MPI_Rsend", Send, true;
    Isend = 14, "MPI_Isend", Send, true;
    Ibsend = 15, "MPI_Ibsend", Send, true;
    Issend = 16, "MPI_Issend", Send, true;
    Irsend = 17, "MPI_Irsend", Send, true;
    Recv = 20, "MPI_Recv", Receive, true;
    Irecv = 21, "MPI_Irecv", Receive, true;
    Sendrecv = 22, "MPI_Sendrecv", SendReceive, true;
    SendrecvReplace = 23, "MPI_Sendrecv_replace", SendReceive, true;
    Probe = 24, "MPI_Probe", Other, false;
    Iprobe = 25, "MPI_Iprobe", Other, false;
    Wait = 30, "MPI_Wait", Other, true;
    Waitall = 31, "MPI_Waitall", Other, true;
    Waitany = 32, "MPI_Waitany", Other, true;
    Waitsome = 33, "MPI_Waitsome", Other, true;
    Test = 34, "MPI_Test", Other, true;
    Testall = 35, "MPI_Testall", Other, true;
    Testany = 36, "MPI_Testany", Other, true;
    Testsome = 37, "MPI_Testsome", Other, true;
    RequestFree = 38, "MPI_Request_free", Other, false;
    Barrier = 40, "MPI_Barrier", Other, false;
    Bcast = 41, "MPI_Bcast", SendReceive, false;
    Reduce = 42, "MPI_Reduce", SendReceive, false;
    Allreduce = 43, "MPI_Allreduce", SendReceive, false;
    Gather = 44, "MPI_Gather", SendReceive, false;
    Gatherv = 45, "MPI_Gatherv", SendReceive, false;
    Scatter = 46, "MPI_Scatter", SendReceive, false;
    Scatterv = 47, "MPI_Scatterv", SendReceive, false;
    Allgather = 48, "MPI_Allgather", SendReceive, false;
    Allgatherv = 49, "MPI_Allgatherv", SendReceive, false;
    Alltoall = 50, "MPI_Alltoall", SendReceive, false;
    Alltoallv = 51, "MPI_Alltoallv", SendReceive, false;
    ReduceScatter = 52, "MPI_Reduce_scatter", SendReceive, false;
    ReduceScatterBlock = 53, "MPI_Reduce_scatter_block", SendReceive, false;
    Scan = 54, "MPI_Scan", SendReceive, false;
    Exscan = 55, "MPI_Exscan", SendReceive, false;
    WinFence = 60, "MPI_Win_fence", Other, false;
    WinLock = 61, "MPI_Win_lock", Other, false;
}

impl MpiOp {
    pub fn from_code(code: u8) -> Option<MpiOp> {
        MpiOp::ALL.iter().copied().find(|op| op.code() == code)
    }
}

/// `dest` or `source` of a call that has none.
pub const NO_RANK: i32 = -1;
/// The peer was MPI_PROC_NULL: no message.
pub const PROC_NULL_RANK: i32 = -2;
/// The peer could not be numbered in MPI_COMM_WORLD.
pub const UNKNOWN_RANK: i32 = -3;
/// `tag` of a call without one.
pub const NO_TAG: i32 = -1;
/// `comm` of a call without a communicator.
pub const NO_COMM: i32 = -1;

/// Bit of `flags`: the call failed.
pub const FLAG_FAILED: u8 = 1;
/// Bit of `flags`: a completion record (a receive completed by the call before it).
pub const FLAG_COMPLETION: u8 = 2;
/// Size of one record.
pub const MPI_RECORD_SIZE: usize = 72;

/// One traced call (or one completion).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MpiEvent {
    pub op: MpiOp,
    pub failed: bool,
    pub completion: bool,
    pub dest: i32,
    pub source: i32,
    pub tag: i32,
    /// CLOCK_MONOTONIC ns when the call began.
    pub start_ns: u64,
    /// Wall time of the call.
    pub time_ns: u64,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    pub stack_id: u64,
    pub sends: u32,
    pub receives: u32,
    pub comm: i32,
}

impl MpiEvent {
    /// A call of `op` that moved nothing yet.
    pub const fn call(op: MpiOp) -> MpiEvent {
        MpiEvent {
            op,
            failed: false,
            completion: false,
            dest: NO_RANK,
            source: NO_RANK,
            tag: NO_TAG,
            start_ns: 0,
            time_ns: 0,
            bytes_sent: 0,
            bytes_received: 0,
            stack_id: 0,
            sends: 0,
            receives: 0,
            comm: NO_COMM,
        }
    }

    pub fn encode(&self) -> [u8; MPI_RECORD_SIZE] {
        let mut out = [0u8; MPI_RECORD_SIZE];
        out[0] = self.op.code();
        out[1] =
            (u8::from(self.failed) * FLAG_FAILED) | (u8::from(self.completion) * FLAG_COMPLETION);
        out[4..8].copy_from_slice(&self.dest.to_le_bytes());
        out[8..12].copy_from_slice(&self.source.to_le_bytes());
        out[12..16].copy_from_slice(&self.tag.to_le_bytes());
        out[16..24].copy_from_slice(&self.start_ns.to_le_bytes());
        out[24..32].copy_from_slice(&self.time_ns.to_le_bytes());
        out[32..40].copy_from_slice(&self.bytes_sent.to_le_bytes());
        out[40..48].copy_from_slice(&self.bytes_received.to_le_bytes());
        out[48..56].copy_from_slice(&self.stack_id.to_le_bytes());
        out[56..60].copy_from_slice(&self.sends.to_le_bytes());
        out[60..64].copy_from_slice(&self.receives.to_le_bytes());
        out[64..68].copy_from_slice(&self.comm.to_le_bytes());
        out
    }

    /// The event of one record; None when the bytes are no record (short, an
    /// unknown op or flag, nonzero reserved bytes).
    pub fn decode(bytes: &[u8]) -> Option<MpiEvent> {
        let record = bytes.get(..MPI_RECORD_SIZE)?;
        let u64_at = |at: usize| -> Option<u64> {
            Some(u64::from_le_bytes(record.get(at..at + 8)?.try_into().ok()?))
        };
        let i32_at = |at: usize| -> Option<i32> {
            Some(i32::from_le_bytes(record.get(at..at + 4)?.try_into().ok()?))
        };
        let u32_at = |at: usize| -> Option<u32> {
            Some(u32::from_le_bytes(record.get(at..at + 4)?.try_into().ok()?))
        };
        let flags = record[1];
        if flags & !(FLAG_FAILED | FLAG_COMPLETION) != 0
            || record[2..4] != [0, 0]
            || record[68..72] != [0; 4]
        {
            return None;
        }
        Some(MpiEvent {
            op: MpiOp::from_code(record[0])?,
            failed: flags & FLAG_FAILED != 0,
            completion: flags & FLAG_COMPLETION != 0,
            dest: i32_at(4)?,
            source: i32_at(8)?,
            tag: i32_at(12)?,
            start_ns: u64_at(16)?,
            time_ns: u64_at(24)?,
            bytes_sent: u64_at(32)?,
            bytes_received: u64_at(40)?,
            stack_id: u64_at(48)?,
            sends: u32_at(56)?,
            receives: u32_at(60)?,
            comm: i32_at(64)?,
        })
    }
}

/// Decodes every record of one block's committed bytes. Returns false when
/// the bytes are not whole records or hold something that is no record.
pub fn decode_block(records: &[u8], each: impl FnMut(MpiEvent)) -> bool {
    crate::layout::decode_fixed_records(records, MPI_RECORD_SIZE, MpiEvent::decode, each)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(op: MpiOp) -> MpiEvent {
        MpiEvent {
            failed: op == MpiOp::Recv,
            completion: op == MpiOp::Waitall,
            dest: 3,
            source: PROC_NULL_RANK,
            tag: 77,
            start_ns: 123_456_789,
            time_ns: 42_000,
            bytes_sent: 1 << 40,
            bytes_received: 4096,
            stack_id: u64::MAX - 3,
            sends: 4,
            receives: 1,
            comm: 0,
            ..MpiEvent::call(op)
        }
    }

    #[test]
    fn records_round_trip() {
        for &op in MpiOp::ALL {
            let e = event(op);
            assert_eq!(MpiEvent::decode(&e.encode()), Some(e));
            assert_eq!(MpiOp::from_code(op.code()), Some(op));
        }
    }

    #[test]
    fn codes_and_names_are_unique() {
        for (i, a) in MpiOp::ALL.iter().enumerate() {
            for b in &MpiOp::ALL[i + 1..] {
                assert_ne!(a.code(), b.code());
                assert_ne!(a.name(), b.name());
            }
        }
    }

    #[test]
    fn the_manuals_classes() {
        assert_eq!(MpiOp::Isend.class(), MpiClass::Send);
        assert_eq!(MpiOp::Irecv.class(), MpiClass::Receive);
        assert_eq!(MpiOp::Allreduce.class(), MpiClass::SendReceive);
        assert_eq!(MpiOp::Sendrecv.class(), MpiClass::SendReceive);
        assert_eq!(MpiOp::Waitall.class(), MpiClass::Other);
        assert_eq!(MpiOp::Barrier.class(), MpiClass::Other);
    }

    #[test]
    fn damaged_records_are_refused() {
        let good = event(MpiOp::Send).encode();
        assert!(MpiEvent::decode(&good[..MPI_RECORD_SIZE - 1]).is_none());
        let mut bad = good;
        bad[0] = 0;
        assert!(MpiEvent::decode(&bad).is_none());
        bad = good;
        bad[1] = 4;
        assert!(MpiEvent::decode(&bad).is_none());
        bad = good;
        bad[70] = 1;
        assert!(MpiEvent::decode(&bad).is_none());
        let mut two = good.to_vec();
        two.extend_from_slice(&good);
        let mut seen = 0;
        assert!(decode_block(&two, |_| seen += 1));
        assert_eq!(seen, 2);
        assert!(!decode_block(&two[..MPI_RECORD_SIZE + 10], |_| {}));
    }
}
