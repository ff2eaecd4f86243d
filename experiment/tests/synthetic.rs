//! Synthetic experiments written by hand the way libcollector.so writes them (manifest, log
//! lines with LineWriter, blocks with BlockWriter and by raw bytes), read back with the
//! reader, including the states a reader sees while the collector is writing or after it
//! was killed.

use experiment::archive::write_archive;
use experiment::layout::{
    BlockHeader, BlockWriter, ClockEvent, StackStatus, BLOCK_PAYLOAD, BLOCK_SIZE, CPU_UNKNOWN,
    HEADER_SIZE, KIND_PROFILE, KIND_STACKS,
};
use experiment::text::{write_manifest_into, LineWriter};
use experiment::{
    create_experiment_dir, layout, Error, Event, Experiment, SampleCause, TerminatedHow,
};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let dir =
            std::env::temp_dir().join(format!("rdbx-expt-{tag}-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn write_manifest(dir: &Path) {
    let mut buf = [0u8; 512];
    let n = write_manifest_into(
        &mut buf,
        "log,profile,stacks",
        "clock-profile",
        "libcollector test",
    )
    .unwrap();
    std::fs::write(dir.join("manifest"), &buf[..n]).unwrap();
}

fn append(dir: &Path, name: &str, bytes: &[u8]) {
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join(name))
        .unwrap()
        .write_all(bytes)
        .unwrap();
}

/// Appends one log line built with `f` the way the collector does.
fn log_line(dir: &Path, f: impl FnOnce(&mut LineWriter<'_>)) {
    let mut buf = [0u8; 4096];
    let mut w = LineWriter::new(&mut buf);
    f(&mut w);
    append(dir, "log", w.finish().expect("line fits"));
}

fn object_line(dir: &Path, ts: u64, path: &[u8]) {
    log_line(dir, |w| {
        w.event(ts, "object")
            .str("path", path)
            .hex("base", 0x5555_0000_0000)
            .hex("lo", 0x5555_0000_0000)
            .hex("hi", 0x5555_0000_ffff);
    });
}

fn clock_event(ts: u64, stack_id: u64) -> ClockEvent {
    ClockEvent {
        timestamp_ns: ts,
        stack_id,
        weight_ns: 10_000_000,
        cpu: 3,
        reserved: 0,
    }
}

/// The start of a founder log, the way the collector writes it.
fn start_lines(dir: &Path) {
    log_line(dir, |w| {
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
    log_line(dir, |w| {
        w.event(1_001, "thread-start").u64("tid", 4242);
    });
    log_line(dir, |w| {
        w.event(1_002, "sample")
            .u64("number", 1)
            .str("cause", SampleCause::Start.name().as_bytes())
            .str("label", b"first one")
            .u64("utime_ns", 1)
            .u64("stime_ns", 2)
            .u64("minflt", 3)
            .u64("majflt", 0)
            .u64("nvcsw", 4)
            .u64("nivcsw", 5)
            .u64("inblock", 0)
            .u64("oublock", 8)
            .u64("rss_kb", 1024);
    });
}

/// profile: block 0 complete (tid 100, 3 committed + 1 written but uncommitted), block 1
/// never claimed (zeros, as fallocate leaves it), block 2 with a `committed` too large,
/// block 3 (tid 101) cut by the end of the file in the middle of its second record.
fn write_profile(dir: &Path) {
    let mut file = Vec::new();

    let mut block = vec![0u8; BLOCK_SIZE];
    let mut w = BlockWriter::claim(&mut block, KIND_PROFILE, 100, 0, 5_000).unwrap();
    for i in 0..3 {
        assert!(w.push_clock_event(&clock_event(5_000 + i, 0xaaaa + i)));
    }
    w.commit();
    assert!(w.push_clock_event(&clock_event(9_999, 0xdead)));
    file.extend_from_slice(&block);

    file.extend_from_slice(&vec![0u8; BLOCK_SIZE]);

    let mut damaged = vec![0u8; BLOCK_SIZE];
    let header = BlockHeader {
        committed: (BLOCK_PAYLOAD + 24) as u32,
        ..BlockHeader::new(KIND_PROFILE, 102, 2, 6_000)
    };
    assert!(header.write_to(&mut damaged));
    // One real event, then bytes that were never written.
    assert!(clock_event(6_000, 0xcccc).write_to(&mut damaged[HEADER_SIZE..]));
    file.extend_from_slice(&damaged);

    let mut cut = vec![0u8; BLOCK_SIZE];
    let mut w = BlockWriter::claim(&mut cut, KIND_PROFILE, 101, 3, 7_000).unwrap();
    for i in 0..3 {
        assert!(w.push_clock_event(&ClockEvent {
            cpu: CPU_UNKNOWN,
            ..clock_event(7_000 + i, 0xbbbb)
        }));
    }
    w.commit();
    file.extend_from_slice(&cut[..HEADER_SIZE + 24 + 12]);

    std::fs::write(dir.join("profile"), file).unwrap();
}

/// stacks: block 0 with three records, one a duplicate id; block 1 whose `committed` ends
/// in the middle of a record (damaged); block 2 cut by the end of the file inside its
/// second record.
fn write_stacks(dir: &Path) -> (Vec<u64>, Vec<u64>) {
    let leaf = vec![0x401000u64, 0x401100, 0x401200];
    let deep: Vec<u64> = (0..256).map(|i| 0x400000 + i * 16).collect();
    let mut file = Vec::new();

    let mut block = vec![0u8; BLOCK_SIZE];
    let mut w = BlockWriter::claim(&mut block, KIND_STACKS, 100, 0, 5_000).unwrap();
    assert!(w.push_stack(StackStatus::Complete, &leaf));
    assert!(w.push_stack(StackStatus::Truncated, &deep));
    assert!(w.push_stack(StackStatus::Complete, &leaf));
    w.commit();
    file.extend_from_slice(&block);

    let mut bad = vec![0u8; BLOCK_SIZE];
    let mut w = BlockWriter::claim(&mut bad, KIND_STACKS, 100, 1, 6_000).unwrap();
    assert!(w.push_stack(StackStatus::Failed, &[0x500000]));
    assert!(w.push_stack(StackStatus::Complete, &[0x600000, 0x600010]));
    w.commit();
    // Make `committed` end 8 bytes into the second record.
    let committed = (16 + 8) + 8;
    bad[12..16].copy_from_slice(&(committed as u32).to_le_bytes());
    file.extend_from_slice(&bad);

    let mut cut = vec![0u8; BLOCK_SIZE];
    let mut w = BlockWriter::claim(&mut cut, KIND_STACKS, 101, 2, 7_000).unwrap();
    assert!(w.push_stack(StackStatus::Complete, &[0x700000]));
    assert!(w.push_stack(StackStatus::Complete, &[0x700000, 0x700010, 0x700020]));
    w.commit();
    file.extend_from_slice(&cut[..HEADER_SIZE + 24 + 20]);

    std::fs::write(dir.join("stacks"), file).unwrap();
    (leaf, deep)
}

#[test]
fn synthetic_experiment_reads_back() {
    let tmp = TempDir::new("synthetic");
    let dir = tmp.0.join("test.1.er");
    create_experiment_dir(&dir).unwrap();
    write_manifest(&dir);
    experiment::write_notes(&dir, "my comment").unwrap();
    start_lines(&dir);
    object_line(&dir, 1_003, b"/lib/x86_64-linux-gnu/libc.so.6");
    object_line(&dir, 1_004, b"[vdso]");
    log_line(&dir, |w| {
        w.event(1_005, "end");
    });
    // A torn last line: the writer died in the middle of it.
    append(&dir, "log", b"1006 sample number=2 cau");
    write_profile(&dir);
    let (leaf, deep) = write_stacks(&dir);

    let expt = Experiment::open(&dir).unwrap();
    assert_eq!(expt.manifest().block_size, BLOCK_SIZE);
    assert_eq!(expt.manifest().kinds, ["clock-profile"]);
    assert_eq!(expt.notes().as_deref(), Some("my comment"));
    assert!(!expt.is_descendant());

    let log = expt.log().unwrap();
    assert_eq!(log.len(), 6, "{log:#?}");
    let Event::Start(start) = &log[0].event else {
        panic!("{:?}", log[0]);
    };
    assert_eq!(start.pid, 4242);
    assert_eq!(start.exe, PathBuf::from("/tmp/my prog"));
    assert_eq!(start.args, "my prog -v");
    let samples = expt.samples().unwrap();
    assert_eq!(samples.len(), 1);
    assert_eq!(samples[0].label, "first one");
    assert_eq!(samples[0].rss_kb, 1024);
    assert_eq!(log[5].event, Event::End);

    let (events, stats) = expt.clock_events_with_stats().unwrap();
    // 3 from block 0, 1 from the clamped block 2, 1 whole record from the cut block 3.
    assert_eq!(events.len(), 5, "{events:#?}");
    assert_eq!(events[0].tid, 100);
    assert_eq!(events[0].stack_id, 0xaaaa);
    assert_eq!(events[2].timestamp_ns, 5_002);
    assert_eq!((events[3].tid, events[3].stack_id), (102, 0xcccc));
    assert_eq!(events[4].tid, 101);
    assert_eq!(events[4].cpu, CPU_UNKNOWN);
    assert_eq!(stats.blocks, 4);
    assert_eq!(stats.used, 3);
    assert_eq!(stats.unused, 1);
    assert_eq!(stats.damaged, 1);
    assert_eq!(stats.cut, 1);
    assert!(!events.iter().any(|e| e.stack_id == 0xdead));

    let (stacks, stats) = expt.stacks_with_stats().unwrap();
    let leaf_id = layout::stack_id(0, &leaf);
    let deep_id = layout::stack_id(1, &deep);
    assert_eq!(stacks[&leaf_id].pcs, leaf);
    assert_eq!(stacks[&deep_id].status, StackStatus::Truncated);
    assert_eq!(stacks[&deep_id].pcs.len(), 256);
    assert_eq!(
        stacks[&layout::stack_id(2, &[0x500000])].status,
        StackStatus::Failed
    );
    assert!(stacks.contains_key(&layout::stack_id(0, &[0x700000])));
    assert_eq!(stacks.len(), 4);
    assert_eq!(stats.records, 5);
    assert_eq!(stats.damaged, 1);
    assert_eq!(stats.cut, 1);

    let summary = expt.summary().unwrap();
    assert_eq!(summary.samples, 1);
    assert_eq!(summary.threads, 1);
    assert_eq!(summary.objects, 2);
    assert_eq!(summary.clock_events, 5);
    assert!(summary.ended);
    assert_eq!(summary.terminated, None);
    assert!(summary.data_bytes > 3 * BLOCK_SIZE as u64);

    experiment::append_terminated(&dir, TerminatedHow::Exit, 3).unwrap();
    let summary = expt.summary().unwrap();
    assert_eq!(summary.terminated, Some((TerminatedHow::Exit, 3)));
    // The torn line became a line of its own, reported, not hiding the rest.
    assert_eq!(summary.malformed_log_lines, 1);
}

#[test]
fn empty_and_growing_files() {
    let tmp = TempDir::new("growing");
    let dir = tmp.0.join("g.er");
    create_experiment_dir(&dir).unwrap();
    write_manifest(&dir);
    let expt = Experiment::open(&dir).unwrap();
    // Nothing written yet: no log, no data files.
    assert!(expt.log().unwrap().is_empty());
    assert!(expt.clock_events().unwrap().is_empty());
    assert!(expt.stacks().unwrap().is_empty());
    assert!(expt.descendants().is_empty());
    // A file that ends inside the first header (the block is being claimed).
    std::fs::write(
        dir.join("profile"),
        &BlockHeader::new(KIND_PROFILE, 1, 0, 0).to_bytes()[..10],
    )
    .unwrap();
    let (events, stats) = expt.clock_events_with_stats().unwrap();
    assert!(events.is_empty());
    assert_eq!((stats.blocks, stats.cut, stats.damaged), (1, 1, 0));
    // A block of the wrong kind in the profile file.
    let mut block = vec![0u8; BLOCK_SIZE];
    BlockWriter::claim(&mut block, KIND_STACKS, 1, 0, 0).unwrap();
    std::fs::write(dir.join("profile"), &block).unwrap();
    let (_, stats) = expt.clock_events_with_stats().unwrap();
    assert_eq!(stats.damaged, 1);
}

#[test]
fn open_errors() {
    let tmp = TempDir::new("open");
    let err = Experiment::open(&tmp.0).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("not an rdbx experiment: {} (no manifest)", tmp.0.display())
    );
    let missing = tmp.0.join("missing.er");
    assert!(Experiment::open(&missing)
        .unwrap_err()
        .to_string()
        .contains("no such directory"));
    std::fs::write(
        tmp.0.join("manifest"),
        "format=rdbx-experiment\nversion=7\nblock_size=65536\n",
    )
    .unwrap();
    let err = Experiment::open(&tmp.0).unwrap_err();
    assert!(matches!(
        err,
        Error::NewerVersion {
            supported: 1,
            line: 2,
            ref found,
            ..
        } if found == "7"
    ));
    assert_eq!(
        err.to_string(),
        format!(
            "{}: manifest line 2: \"version=7\": experiment format version 7 is newer than \
             this rdbx reads (version 1); read it with a newer rdbx",
            tmp.0.display()
        )
    );
    std::fs::write(tmp.0.join("manifest"), "hello\n").unwrap();
    assert!(matches!(
        Experiment::open(&tmp.0),
        Err(Error::BadManifest { .. } | Error::NotAnExperiment { .. })
    ));
}

#[test]
fn descendants_are_listed_in_order() {
    let tmp = TempDir::new("desc");
    let founder = tmp.0.join("test.3.er");
    create_experiment_dir(&founder).unwrap();
    write_manifest(&founder);
    for name in ["_f10.er", "_f2.er", "_f1.er", "_f1_x1.er", "_c1.er"] {
        let d = founder.join(name);
        std::fs::create_dir(&d).unwrap();
        write_manifest(&d);
        log_line(&d, |w| {
            w.event(1, "descendant")
                .str("parent_expt", b".")
                .str("kind", b"fork");
        });
    }
    std::fs::write(founder.join("_x9.er"), "not a directory").unwrap();
    std::fs::create_dir(founder.join("archives")).unwrap();
    let expt = Experiment::open(&founder).unwrap();
    let names: Vec<String> = expt
        .descendants()
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names,
        ["_c1.er", "_f1.er", "_f1_x1.er", "_f2.er", "_f10.er"]
    );
    let child = Experiment::open(founder.join("_f2.er")).unwrap();
    assert!(child.is_descendant());
    assert!(matches!(
        child.log().unwrap()[0].event,
        Event::Descendant { .. }
    ));
    assert!(expt.total_data_bytes() > expt.data_bytes());
}

/// Compiles a tiny C program with gcc; `build_id` is passed to the linker's --build-id.
fn compile(dir: &Path, name: &str, build_id: &str) -> PathBuf {
    let src = dir.join(format!("{name}.c"));
    std::fs::write(&src, "int main(void) { return 0; }\n").unwrap();
    let out = dir.join(name);
    let status = Command::new("gcc")
        .arg(&src)
        .arg("-o")
        .arg(&out)
        .arg(format!("-Wl,--build-id={build_id}"))
        .status()
        .expect("gcc must be installed");
    assert!(status.success());
    out
}

#[test]
fn archive_with_and_without_copy() {
    let tmp = TempDir::new("archive");
    let prog = compile(&tmp.0, "prog one", "0x0123456789abcdef0123");
    let anon = compile(&tmp.0, "anon", "none");
    let founder = tmp.0.join("a.er");
    create_experiment_dir(&founder).unwrap();
    write_manifest(&founder);
    object_line(&founder, 1, prog.as_os_str().as_encoded_bytes());
    object_line(&founder, 2, b"[vdso]");
    object_line(&founder, 3, b"/no/such/lib.so");
    object_line(&founder, 4, prog.as_os_str().as_encoded_bytes());
    // /bin/true only appears in a descendant.
    let child = founder.join("_f1.er");
    std::fs::create_dir(&child).unwrap();
    write_manifest(&child);
    object_line(&child, 5, b"/bin/true");
    object_line(&child, 6, anon.as_os_str().as_encoded_bytes());

    let summary = write_archive(&founder, false).unwrap();
    assert_eq!(summary.objects, 4, "{summary:?}");
    assert_eq!(summary.missing, [PathBuf::from("/no/such/lib.so")]);
    assert_eq!(summary.copied, 0);
    let expt = Experiment::open(&founder).unwrap();
    assert!(expt.has_archive());
    let index = expt.archive_index().unwrap();
    let find = |p: &Path| index.iter().find(|o| o.path == p).unwrap().clone();
    let entry = find(&prog);
    assert_eq!(entry.build_id.as_deref(), Some("0123456789abcdef0123"));
    assert_eq!(entry.size, Some(std::fs::metadata(&prog).unwrap().len()));
    assert!(entry.mtime_ns.unwrap() > 1_600_000_000_000_000_000);
    assert_eq!(entry.copy, None);
    let gone = find(Path::new("/no/such/lib.so"));
    assert!(gone.is_missing());
    assert_eq!(gone.build_id, None);
    let bin_true = find(Path::new("/bin/true"));
    assert!(bin_true.size.is_some());
    assert_eq!(find(&anon).build_id, None);
    let text = std::fs::read_to_string(founder.join("archives/index")).unwrap();
    assert!(text.contains("path=/no/such/lib.so build_id=- size=- mtime_ns=- copy=-\n"));
    assert!(text.contains("prog%20one"));
    assert!(!founder.join("archives/index.tmp").exists());

    let summary = write_archive(&founder, true).unwrap();
    assert_eq!(summary.copied, 3, "{summary:?}");
    let index = Experiment::open(&founder).unwrap().archive_index().unwrap();
    let find = |p: &Path| index.iter().find(|o| o.path == p).unwrap().clone();
    let copy = find(&prog).copy.unwrap();
    assert_eq!(copy, PathBuf::from("files/0123456789abcdef0123-prog one"));
    let archived = founder.join("archives").join(&copy);
    assert_eq!(
        std::fs::read(&archived).unwrap(),
        std::fs::read(&prog).unwrap()
    );
    let anon_entry = find(&anon);
    let anon_copy = anon_entry.copy.unwrap();
    assert_eq!(
        anon_copy,
        PathBuf::from(format!(
            "files/{}-{}-anon",
            anon_entry.size.unwrap(),
            anon_entry.mtime_ns.unwrap()
        ))
    );
    assert_eq!(find(Path::new("/no/such/lib.so")).copy, None);
    // Archiving again does not copy again.
    assert_eq!(write_archive(&founder, true).unwrap().copied, 0);
}
