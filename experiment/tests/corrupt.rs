//! Bad input: valid synthetic experiments, corrupted at random (bits flipped,
//! bytes and header fields overwritten, files cut, grown, replaced by random bytes or
//! deleted), read through every public reading API. Nothing may panic or hang, and what
//! is returned must hold together (tests/common/checks.rs). The pure parsers also get
//! random bytes directly, the same checks the cargo-fuzz target (fuzz/) runs.
//!
//! Fixed seeds and bounded case counts: the same cases every run, a few seconds in debug.

mod common {
    pub mod checks;
}

use common::checks::{check_experiment_dir, check_pure};
use experiment::layout::{
    BlockWriter, ClockEvent, StackStatus, BLOCK_MAGIC, BLOCK_SIZE, KIND_PROFILE, KIND_STACKS,
};
use experiment::text::LineWriter;
use experiment::{Experiment, SampleCause};
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::{Config as ProptestConfig, RngSeed};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// The files of an experiment, by path relative to its directory.
const FILES: [&str; 6] = [
    "manifest",
    "log",
    "profile",
    "stacks",
    "notes",
    "archives/index",
];

struct TempDir(PathBuf);

impl TempDir {
    fn new() -> TempDir {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("rdbx-corrupt-{}-{n}.er", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("archives")).unwrap();
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Parameters of the valid experiment that gets corrupted.
#[derive(Clone, Debug)]
struct Base {
    block_size: usize,
    threads: u32,
    events_per_thread: usize,
    stack_depths: Vec<usize>,
}

fn base_strategy() -> impl Strategy<Value = Base> {
    (
        prop_oneof![Just(256usize), Just(4096), Just(BLOCK_SIZE)],
        1u32..4,
        0usize..60,
        prop::collection::vec(0usize..300, 1..6),
    )
        .prop_map(
            |(block_size, threads, events_per_thread, stack_depths)| Base {
                block_size,
                threads,
                events_per_thread,
                stack_depths,
            },
        )
}

fn line(f: impl FnOnce(&mut LineWriter<'_>)) -> Vec<u8> {
    let mut buf = [0u8; 4096];
    let mut w = LineWriter::new(&mut buf);
    f(&mut w);
    w.finish().expect("line fits").to_vec()
}

fn manifest(block_size: usize) -> Vec<u8> {
    format!(
        "format=rdbx-experiment\nversion=1\nblock_size={block_size}\nfiles=log,profile,stacks\n\
         kinds=clock-profile\ncreated_by=libcollector test\n"
    )
    .into_bytes()
}

fn log(threads: u32) -> Vec<u8> {
    let mut log = line(|w| {
        w.event(1_000, "start")
            .u64("pid", 4242)
            .u64("ppid", 1)
            .str("lineage", b"")
            .str("mode", b"collect")
            .str("exe", b"/tmp/my prog")
            .str_joined("args", [&b"my prog"[..], b"-v"], b' ')
            .u64("profile_ns", 10_000_000)
            .str("clock", b"posix-timer")
            .u64("depth", 256)
            .u64("sample_ns", 1_000_000_000)
            .u64("realtime_ns", 1_700_000_000_000_000_000);
    });
    log.extend(line(|w| {
        w.event(1_001, "object")
            .str("path", b"/lib/libc.so.6")
            .hex("base", 0x7f00_0000_0000)
            .hex("lo", 0x7f00_0000_0000)
            .hex("hi", 0x7f00_001f_ffff);
    }));
    for tid in 0..threads {
        log.extend(line(|w| {
            w.event(1_002, "thread-start")
                .u64("tid", 100 + u64::from(tid));
        }));
    }
    log.extend(line(|w| {
        w.event(1_003, "sample")
            .u64("number", 1)
            .str("cause", SampleCause::Manual.name().as_bytes())
            .str("label", b"a label")
            .u64("utime_ns", 1)
            .u64("stime_ns", 2)
            .u64("minflt", 3)
            .u64("majflt", 0)
            .u64("nvcsw", 4)
            .u64("nivcsw", 5)
            .u64("inblock", 0)
            .u64("oublock", 8)
            .u64("rss_kb", 1024);
    }));
    log.extend(line(|w| {
        w.event(1_004, "end");
    }));
    log
}

/// The stacks of `base`: stack i has depth `stack_depths[i]` (capped to what a block holds).
fn stacks(base: &Base) -> Vec<(StackStatus, Vec<u64>)> {
    let max_depth = (base.block_size - 32 - 16) / 8;
    base.stack_depths
        .iter()
        .enumerate()
        .map(|(i, &depth)| {
            let depth = depth.min(max_depth);
            let pcs = (0..depth as u64)
                .map(|d| 0x40_0000 + d * 16 + i as u64)
                .collect();
            let status = [
                StackStatus::Complete,
                StackStatus::Truncated,
                StackStatus::Failed,
            ][i % 3];
            (status, pcs)
        })
        .collect()
}

/// Appends records to a block file, claiming a new block whenever one is full.
struct BlockFile {
    bytes: Vec<u8>,
    block_size: usize,
    kind: u16,
    blocks: u32,
}

impl BlockFile {
    fn new(block_size: usize, kind: u16) -> BlockFile {
        BlockFile {
            bytes: Vec::new(),
            block_size,
            kind,
            blocks: 0,
        }
    }

    /// One block of `tid` holding as many of `records` as fit; the ones that did not.
    fn block<'r, T>(
        &mut self,
        tid: u32,
        records: &'r [T],
        push: impl Fn(&mut BlockWriter<'_>, &T) -> bool,
    ) -> &'r [T] {
        let mut block = vec![0u8; self.block_size];
        let mut w = BlockWriter::claim(&mut block, self.kind, tid, self.blocks, 1_000).unwrap();
        let mut n = 0;
        while n < records.len() && push(&mut w, &records[n]) {
            n += 1;
        }
        w.commit();
        self.bytes.extend_from_slice(&block);
        self.blocks += 1;
        &records[n..]
    }
}

fn profile(base: &Base, stacks: &[(StackStatus, Vec<u64>)]) -> Vec<u8> {
    let mut file = BlockFile::new(base.block_size, KIND_PROFILE);
    for tid in 0..base.threads {
        let events: Vec<ClockEvent> = (0..base.events_per_thread)
            .map(|i| {
                let (status, pcs) = &stacks[i % stacks.len()];
                ClockEvent {
                    timestamp_ns: 2_000 + i as u64,
                    stack_id: experiment::layout::stack_id(*status as u16, pcs),
                    weight_ns: 10_000_000,
                    cpu: (i % 4) as u16,
                    reserved: 0,
                }
            })
            .collect();
        let mut rest = &events[..];
        loop {
            rest = file.block(100 + tid, rest, |w, e| w.push_clock_event(e));
            if rest.is_empty() {
                break;
            }
        }
    }
    file.bytes
}

fn stacks_file(base: &Base, stacks: &[(StackStatus, Vec<u64>)]) -> Vec<u8> {
    let mut file = BlockFile::new(base.block_size, KIND_STACKS);
    let mut rest = stacks;
    while !rest.is_empty() {
        rest = file.block(100, rest, |w, (status, pcs)| w.push_stack(*status, pcs));
    }
    file.bytes
}

/// Writes the valid experiment of `base` into `dir`.
fn write_base(dir: &Path, base: &Base) {
    let stacks = stacks(base);
    let files: [(&str, Vec<u8>); 6] = [
        ("manifest", manifest(base.block_size)),
        ("log", log(base.threads)),
        ("profile", profile(base, &stacks)),
        ("stacks", stacks_file(base, &stacks)),
        ("notes", b"a comment".to_vec()),
        (
            "archives/index",
            b"path=/lib/libc.so.6 build_id=ab12 size=10 mtime_ns=20 copy=-\n\
              path=/gone build_id=- size=- mtime_ns=- copy=-\n"
                .to_vec(),
        ),
    ];
    for (name, bytes) in files {
        std::fs::write(dir.join(name), bytes).unwrap();
    }
}

/// One corruption of one file.
#[derive(Clone, Debug)]
enum Op {
    /// Flip one bit.
    Flip {
        at: Index,
        bit: u8,
    },
    /// Overwrite bytes at a position.
    Overwrite {
        at: Index,
        bytes: Vec<u8>,
    },
    /// Write a u32 at a 4-aligned position (headers: magic, committed, tid...).
    SetU32 {
        at: Index,
        value: u32,
    },
    /// Write a u16 at a 2-aligned position (kind, header_size, a stack record's depth).
    SetU16 {
        at: Index,
        value: u16,
    },
    /// Write a header field of one block (offsets as in BlockHeader).
    HeaderField {
        block: Index,
        offset: usize,
        value: u32,
    },
    /// Cut the file to a length at most its own.
    Truncate {
        len: Index,
    },
    /// Make the file longer (with zeros, a hole where the file system has them).
    Grow {
        by: u32,
    },
    /// Append bytes (e.g. a text line).
    Append(Vec<u8>),
    /// Replace the whole file.
    Replace(Vec<u8>),
    Delete,
}

/// Text lines worth appending to the text files: huge numbers, bad versions and block
/// sizes, many fields, bad escapes, non-UTF-8.
fn interesting_line() -> impl Strategy<Value = Vec<u8>> {
    let fixed: Vec<&'static [u8]> = vec![
        b"version=7\n",
        b"version=99999999999999999999999999\n",
        b"version=1.99999999999\n",
        b"version=0\n",
        b"block_size=0\n",
        b"block_size=1\n",
        b"block_size=64\n",
        b"block_size=18446744073709551616\n",
        b"block_size=4096\n",
        b"format=rdbx-experiment\n",
        b"no equals sign\n",
        b"99999999999999999999999 end\n",
        b"1 sample number=18446744073709551616 cause=manual\n",
        b"1 thread-start tid=4294967296\n",
        b"1 terminated how=exit code=99999999999\n",
        b"1 object path=%ZZ base=0x lo=0xffffffffffffffffff hi=-1\n",
        b"1 x a=%\n",
        b"1 = =\n",
        b"\xff\xfe 1 end \xc3\x28\n",
        b"path=%2 size=-1\n",
        b"path=/x size=99999999999999999999999\n",
    ];
    prop_oneof![
        prop::sample::select(fixed).prop_map(<[u8]>::to_vec),
        // Many fields on one line (the log parser must stay linear).
        (1usize..20_000).prop_map(|n| {
            let mut l = b"5 future".to_vec();
            for _ in 0..n {
                l.extend_from_slice(b" k=v");
            }
            l.push(b'\n');
            l
        }),
        // One very long line without spaces.
        (1usize..200_000).prop_map(|n| {
            let mut l = vec![b'x'; n];
            l.push(b'\n');
            l
        }),
        prop::collection::vec(any::<u8>(), 0..200),
    ]
}

fn op_strategy() -> impl Strategy<Value = Op> {
    let u32_value = prop_oneof![
        any::<u32>(),
        Just(0u32),
        Just(u32::MAX),
        Just(BLOCK_MAGIC),
        Just(65535),
        Just(65536),
        Just(24),
        Just(40),
    ];
    let u16_value = prop_oneof![
        any::<u16>(),
        Just(0u16),
        Just(u16::MAX),
        Just(2048),
        Just(2049),
        Just(1),
        Just(2),
        Just(3),
        Just(32),
        Just(40),
    ];
    prop_oneof![
        (any::<Index>(), 0u8..8).prop_map(|(at, bit)| Op::Flip { at, bit }),
        (any::<Index>(), prop::collection::vec(any::<u8>(), 1..64))
            .prop_map(|(at, bytes)| Op::Overwrite { at, bytes }),
        (any::<Index>(), u32_value.clone()).prop_map(|(at, value)| Op::SetU32 { at, value }),
        (any::<Index>(), u16_value).prop_map(|(at, value)| Op::SetU16 { at, value }),
        (
            any::<Index>(),
            prop::sample::select(vec![0usize, 4, 6, 8, 12, 16, 20, 24]),
            u32_value
        )
            .prop_map(|(block, offset, value)| Op::HeaderField {
                block,
                offset,
                value
            }),
        any::<Index>().prop_map(|len| Op::Truncate { len }),
        (0u32..300_000).prop_map(|by| Op::Grow { by }),
        interesting_line().prop_map(Op::Append),
        prop::collection::vec(any::<u8>(), 0..5000).prop_map(Op::Replace),
        Just(Op::Delete),
    ]
}

/// Applies `op` to `dir/name`; `block_size` places header fields.
fn apply(dir: &Path, name: &str, op: &Op, block_size: usize) {
    let path = dir.join(name);
    let mut bytes = std::fs::read(&path).unwrap_or_default();
    let len = bytes.len();
    let put = |bytes: &mut Vec<u8>, at: usize, new: &[u8]| {
        for (i, b) in new.iter().enumerate() {
            if let Some(slot) = bytes.get_mut(at + i) {
                *slot = *b;
            }
        }
    };
    match op {
        Op::Flip { at, bit } if len > 0 => bytes[at.index(len)] ^= 1 << bit,
        Op::Overwrite { at, bytes: new } if len > 0 => put(&mut bytes, at.index(len), new),
        Op::SetU32 { at, value } if len > 0 => {
            put(&mut bytes, at.index(len) & !3, &value.to_le_bytes())
        }
        Op::SetU16 { at, value } if len > 0 => {
            put(&mut bytes, at.index(len) & !1, &value.to_le_bytes())
        }
        Op::HeaderField {
            block,
            offset,
            value,
        } if len > 0 => {
            let at = block.index(len.div_ceil(block_size)) * block_size + offset;
            let field = value.to_le_bytes();
            // kind and header_size are u16 fields.
            let width = if *offset == 4 || *offset == 6 { 2 } else { 4 };
            put(&mut bytes, at, &field[..width]);
        }
        Op::Truncate { len: cut } => bytes.truncate(cut.index(len + 1)),
        Op::Grow { by } => bytes.resize(len + *by as usize, 0),
        Op::Append(more) => bytes.extend_from_slice(more),
        Op::Replace(new) => bytes = new.clone(),
        Op::Delete => {
            let _ = std::fs::remove_file(&path);
            return;
        }
        _ => {}
    }
    std::fs::write(&path, bytes).unwrap();
}

fn config(cases: u32, seed: u64) -> ProptestConfig {
    ProptestConfig {
        cases,
        rng_seed: RngSeed::Fixed(seed),
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// The uncorrupted base reads back whole, without warnings.
#[test]
fn clean_experiments_have_no_warnings() {
    let mut runner = proptest::test_runner::TestRunner::new(config(16, 1));
    runner
        .run(&base_strategy(), |base| {
            let tmp = TempDir::new();
            write_base(&tmp.0, &base);
            check_experiment_dir(&tmp.0);
            let expt = Experiment::open(&tmp.0).unwrap();
            prop_assert_eq!(expt.warnings(), vec![]);
            let events = expt.clock_events().unwrap();
            prop_assert_eq!(events.len(), base.threads as usize * base.events_per_thread);
            Ok(())
        })
        .unwrap();
}

proptest! {
    #![proptest_config(config(160, 0x0015_50e4))]

    /// Random corruptions of the files of a valid experiment.
    #[test]
    fn corrupted_experiments_read_without_panics(
        base in base_strategy(),
        ops in prop::collection::vec(
            (prop::sample::select(FILES.to_vec()), op_strategy()),
            1..6,
        ),
    ) {
        let tmp = TempDir::new();
        write_base(&tmp.0, &base);
        for (name, op) in &ops {
            apply(&tmp.0, name, op, base.block_size);
        }
        // A descendant with the same (corrupted) files, so the founder's totals and the
        // archive code read through it too.
        let child = tmp.0.join("_f1.er");
        std::fs::create_dir_all(&child).unwrap();
        for name in ["manifest", "log", "profile", "stacks"] {
            let _ = std::fs::copy(tmp.0.join(name), child.join(name));
        }
        check_experiment_dir(&tmp.0);
        check_experiment_dir(&child);
        for name in FILES {
            if let Ok(bytes) = std::fs::read(tmp.0.join(name)) {
                check_pure(&bytes);
            }
        }
    }

    /// Random bytes through every pure parser (what the fuzz target runs).
    #[test]
    fn pure_parsers_take_any_bytes(data in prop::collection::vec(any::<u8>(), 0..3000)) {
        check_pure(&data);
    }

    /// Random text made of the format's own tokens, so the parsers get past their first
    /// checks more often than with random bytes.
    #[test]
    fn pure_parsers_take_token_soup(
        tokens in prop::collection::vec(
            prop::sample::select(vec![
                "1", " ", "\n", "=", ";", "%", "%2", "%20", "0x", "ff", "18446744073709551616",
                "-1", "start", "sample", "object", "terminated", "path", "pid", "depth",
                "version", "block_size", "format", "rdbx-experiment", "expt", "mode",
                "collect", "size", "copy", "-", ".", "\u{fffd}", "é",
            ]),
            0..200,
        ),
    ) {
        check_pure(tokens.concat().as_bytes());
    }
}

/// Block files whose headers claim the impossible, one case each.
#[test]
fn hostile_block_headers() {
    let tmp = TempDir::new();
    let base = Base {
        block_size: 4096,
        threads: 1,
        events_per_thread: 10,
        stack_depths: vec![3, 2048],
    };
    write_base(&tmp.0, &base);
    let stacks_path = tmp.0.join("stacks");
    let original = std::fs::read(&stacks_path).unwrap();
    // The first record's depth claims 65535 pcs; committed claims more than the block.
    for (offset, value) in [(32 + 8, &u16::MAX.to_le_bytes()[..]), (12, &[0xff; 4][..])] {
        let mut bytes = original.clone();
        bytes[offset..offset + value.len()].copy_from_slice(value);
        std::fs::write(&stacks_path, &bytes).unwrap();
        check_experiment_dir(&tmp.0);
        let expt = Experiment::open(&tmp.0).unwrap();
        let (stacks, stats) = expt.stacks_with_stats().unwrap();
        assert!(stats.damaged >= 1, "{stats:?}");
        assert!(stacks.values().all(|s| s.pcs.len() <= 2048));
        assert!(expt
            .warnings()
            .iter()
            .any(|w| matches!(w, experiment::Warning::DamagedBlocks { .. })));
    }
}

/// A block file that claims a huge length (a sparse hole) is read in moments: the hole is
/// counted as unused blocks, not read.
#[test]
fn huge_sparse_block_file() {
    let tmp = TempDir::new();
    let base = Base {
        block_size: BLOCK_SIZE,
        threads: 1,
        events_per_thread: 5,
        stack_depths: vec![4],
    };
    write_base(&tmp.0, &base);
    let profile = tmp.0.join("profile");
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(&profile)
        .unwrap();
    let huge = 1u64 << 40;
    if file.set_len(huge).is_err() {
        return; // the file system cannot hold such a file
    }
    drop(file);
    if !reports_holes(&profile) {
        eprintln!("skipped: the temp file system does not report holes");
        return;
    }
    let start = std::time::Instant::now();
    let expt = Experiment::open(&tmp.0).unwrap();
    let (events, stats) = expt.clock_events_with_stats().unwrap();
    assert_eq!(events.len(), 5);
    assert_eq!(stats.blocks, huge / BLOCK_SIZE as u64);
    assert_eq!(stats.unused, stats.blocks - 1);
    assert!(expt.data_bytes() >= huge);
    assert!(start.elapsed().as_secs() < 10, "{:?}", start.elapsed());
}

/// True when the file system stores `path` sparsely (then it also reports its holes to
/// SEEK_DATA: ext4, xfs, btrfs, tmpfs do).
fn reports_holes(path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).is_ok_and(|m| m.blocks().saturating_mul(512) < m.len() / 2)
}
