//! Data objects (the views `data_objects`, `data_single`, `data_layout`):
//! synthetic counter events placed at the data objects of a real program
//! (tests/programs/dataspace.c), whose addresses the program itself
//! prints when it runs, so that where each event should go is known
//! without the DWARF reader under test: N events on an object give it N,
//! its aggregates and `<Total>` as many, scalars count in `<Scalars>`, and
//! what maps to nothing goes to `<Unknown>`'s elements.

mod common;

use analyzer::dataspace::{
    DataEvent, DataObjects, EventFrame, HeapBlock, HeapBlocks, LoadedObject, Resolver,
};
use analyzer::Analysis;
use common::{run, run_json, TempDir};
use debugger::symbols::ObjectFile;
use experiment::counters::{CounterEvent, CounterSpec, FLAG_DATA_ADDRESS, FLAG_IN_FRAME};
use experiment::heap::{HeapDelta, HeapEvent, HeapOp, MAX_HEAP_RECORD_SIZE};
use experiment::layout::{stack_id, BlockWriter, StackStatus, BLOCK_SIZE, KIND_HEAP, KIND_STACKS};
use experiment::text::write_manifest_into;
use object::{Object, ObjectSymbol};
use serde_json::{json, Value as Json};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The program built with `flags` and what one run of it printed.
struct Built {
    exe: PathBuf,
    /// Each printed line's values after its name: an address, and for the
    /// locals the frame's rbp and the return address into it.
    printed: HashMap<String, Vec<u64>>,
    /// Symbols (functions and variables): name -> (address, size).
    symbols: HashMap<String, (u64, u64)>,
    /// Run-time address minus link-time address.
    bias: u64,
}

impl Built {
    fn new(dir: &Path, name: &str, flags: &[&str]) -> Built {
        let exe = dir.join(name);
        let status = Command::new("gcc")
            .args(flags)
            .arg("-o")
            .arg(&exe)
            .arg(common::program("dataspace.c"))
            .status()
            .expect("gcc runs");
        assert!(status.success(), "gcc {flags:?} failed");
        let output = Command::new(&exe).output().expect("the program runs");
        assert!(output.status.success());
        let printed: HashMap<String, Vec<u64>> = String::from_utf8_lossy(&output.stdout)
            .lines()
            .filter_map(|line| {
                let mut words = line.split_whitespace();
                let name = words.next()?.to_string();
                let values = words
                    .filter_map(|w| u64::from_str_radix(w.strip_prefix("0x")?, 16).ok())
                    .collect();
                Some((name, values))
            })
            .collect();
        let data = std::fs::read(&exe).unwrap();
        let file = object::File::parse(&*data).unwrap();
        let symbols: HashMap<String, (u64, u64)> = file
            .symbols()
            .filter(|s| s.size() > 0)
            .map(|s| (s.name().unwrap().to_string(), (s.address(), s.size())))
            .collect();
        let bias = printed["main"][0] - symbols["main"].0;
        Built {
            exe,
            printed,
            symbols,
            bias,
        }
    }

    /// Where the program printed `name` to be.
    fn at(&self, name: &str) -> u64 {
        self.printed[name][0]
    }

    /// The run-time address of a symbol, plus `offset`.
    fn symbol(&self, name: &str, offset: u64) -> u64 {
        self.symbols[name].0 + self.bias + offset
    }

    /// The frame holding a local printed as `name`: the pc to look its
    /// function up at (in the call of `observe`) and its CFA.
    fn frame_of(&self, name: &str) -> EventFrame {
        let values = &self.printed[name];
        EventFrame {
            pc: Some(values[2] - 1),
            cfa: values[1] + 16,
        }
    }

    fn loaded(&self) -> LoadedObject {
        let (lo, hi) = common::load_span(&self.exe);
        let file = ObjectFile::open(&self.exe).ok();
        LoadedObject::new(&self.exe, self.bias, lo + self.bias, hi + self.bias, file)
    }
}

fn event(address: u64, counter: usize, count: u64) -> DataEvent {
    DataEvent {
        data_addr: Some(address),
        frame: None,
        time_ns: 150,
        counter,
        count,
    }
}

fn on_stack(address: u64, frame: EventFrame) -> DataEvent {
    DataEvent {
        frame: Some(frame),
        ..event(address, 0, 1)
    }
}

/// `count` events, one each, on consecutive `step`-byte elements from `start`.
fn spread(start: u64, step: u64, count: u64) -> Vec<DataEvent> {
    (0..count).map(|k| event(start + k * step, 0, 1)).collect()
}

/// The events of the attribution test and the metric each row must get.
fn events_for(built: &Built) -> Vec<DataEvent> {
    let mut events = Vec::new();
    events.extend(spread(built.symbol("big_table", 0), 4, 7));
    events.extend(spread(built.at("rec.count"), 1, 3));
    events.push(event(built.at("rec.count") + 5, 0, 1)); // padding
    events.push(event(built.at("rec.scale") + 7, 0, 1));
    events.extend(spread(built.at("rec.grid[3][5]"), 4, 2));
    events.extend(spread(built.symbol("counter", 0), 2, 4));
    events.extend(spread(built.at("points[5].y"), 1, 2));
    let buffer = built.frame_of("buffer[100]");
    for k in 0..5 {
        events.push(on_stack(built.at("buffer[100]") + 8 * k, buffer));
        events.push(DataEvent {
            counter: 1,
            count: 1000,
            ..on_stack(built.at("buffer[100]") + 8 * k, buffer)
        });
    }
    let local = built.frame_of("local.y");
    events.push(on_stack(built.at("local.y"), local));
    events.push(on_stack(built.at("local.y") + 4, local));
    events.push(on_stack(built.at("i") + 3, built.frame_of("i")));
    // The return address's slot: no variable of `work` is there.
    events.push(on_stack(local.cfa - 8, local));
    events.push(event(built.at("literal"), 0, 1));
    events.push(DataEvent {
        data_addr: None,
        ..event(0, 0, 1)
    });
    events.push(event(0x10, 0, 1));
    // The heap block, in use at 150 but not at 250.
    events.extend(spread(built.at("grid[10]"), 4, 3));
    events.push(DataEvent {
        time_ns: 250,
        ..event(built.at("grid[10]"), 0, 1)
    });
    events
}

fn heap_of(built: &Built) -> HeapBlocks {
    HeapBlocks::new(vec![HeapBlock {
        address: built.at("grid[10]") - 40,
        size: 4096,
        allocated_ns: 100,
        freed_ns: Some(200),
        site: "make_grid < main".into(),
    }])
}

/// Every row of `data_objects` by (name, scope): its metrics.
fn rows(objects: &DataObjects) -> HashMap<(String, Option<String>), Vec<u64>> {
    objects
        .objects(0)
        .rows
        .into_iter()
        .map(|r| ((r.name, r.scope), r.metrics))
        .collect()
}

fn check_attribution(flags: &[&str], tag: &str) {
    let dir = TempDir::new(tag);
    let built = Built::new(&dir.0, "dataspace", flags);
    let resolver = Resolver::new(vec![built.loaded()], heap_of(&built));
    let mut objects = DataObjects::new(vec!["page-faults".into(), "cycles".into()]);
    let events = events_for(&built);
    objects.add(&resolver, events.iter().copied());
    let rows = rows(&objects);
    let exe = Some("dataspace".to_string());
    let work = Some("work".to_string());
    let get = |name: &str, scope: &Option<String>| -> Vec<u64> {
        rows.get(&(name.to_string(), scope.clone()))
            .cloned()
            .unwrap_or_else(|| panic!("{flags:?}: no row {name} ({scope:?}) in {rows:#?}"))
    };
    let want: &[(&str, &Option<String>, [u64; 2])] = &[
        ("{array:int[1000] big_table}", &exe, [7, 0]),
        ("{structure:record rec}", &exe, [7, 0]),
        ("{structure:record rec}.{int count}", &exe, [3, 0]),
        ("{structure:record rec}.(Anon)", &exe, [1, 0]),
        ("{structure:record rec}.{double scale}", &exe, [1, 0]),
        (
            "{structure:record rec}.{array:int[64][64] grid}",
            &exe,
            [2, 0],
        ),
        ("{long_int counter}", &exe, [4, 0]),
        ("{array:structure:point[16] points}", &exe, [2, 0]),
        (
            "{array:structure:point[16] points}.{double y}",
            &exe,
            [2, 0],
        ),
        ("{array:double[512] buffer}", &work, [5, 5000]),
        ("{structure:point local}", &work, [2, 0]),
        ("{structure:point local}.{double y}", &work, [2, 0]),
        ("{int i}", &work, [1, 0]),
        ("<Scalars>", &None, [5, 0]),
        ("<Unknown>", &None, [5, 0]),
        ("<Unknown>.(Undetermined stack data)", &None, [1, 0]),
        ("<Unknown>.(Undetermined static data)", &None, [1, 0]),
        ("<Unknown>.(No data address)", &None, [1, 0]),
        ("<Unknown>.(Unidentified)", &None, [2, 0]),
        ("<Heap>", &None, [3, 0]),
        (
            "<Heap>.(block of 4096 bytes from make_grid < main)",
            &None,
            [3, 0],
        ),
    ];
    for (name, scope, metrics) in want {
        assert_eq!(get(name, scope), metrics, "{flags:?}: {name}");
    }
    let total: u64 = events
        .iter()
        .filter(|e| e.counter == 0)
        .map(|e| e.count)
        .sum();
    assert_eq!(get("<Total>", &None), [total, 5000], "{flags:?}");
    // Nothing else was made up: every row is one of those, or <Total>.
    assert_eq!(rows.len(), want.len() + 1, "{flags:?}: {rows:#?}");

    let table = objects.objects(0);
    assert_eq!(table.rows[0].name, "<Total>");
    let by_cycles = objects.objects(1);
    assert_eq!(by_cycles.rows[1].name, "{array:double[512] buffer}");
    assert_eq!(table.json()["rows"][0]["metrics"][0], total);
    check_layouts(&objects, flags);
    check_single(&objects, flags);
}

fn check_layouts(objects: &DataObjects, flags: &[&str]) {
    let layout = objects.layout(0);
    let record = layout
        .types
        .iter()
        .find(|t| t.name == "{structure:record -}")
        .expect("struct record is laid out");
    let members: Vec<(String, u64, Option<u64>, u64)> = record
        .members
        .iter()
        .map(|m| (m.name.clone(), m.offset, m.size, m.metrics[0]))
        .collect();
    let want = [
        ("{int count}".to_string(), 0, Some(4), 3),
        ("(Anon)".to_string(), 4, Some(4), 1),
        ("{double scale}".to_string(), 8, Some(8), 1),
        ("{array:int[64][64] grid}".to_string(), 16, Some(16384), 2),
    ];
    assert_eq!(members, want, "{flags:?}");
    assert_eq!(record.metrics[0], 7);
    assert_eq!(record.size, Some(16400));
    // struct point: the global array's elements and the local together.
    let point = layout
        .types
        .iter()
        .find(|t| t.name == "{structure:point -}")
        .expect("struct point is laid out");
    let metrics: Vec<u64> = point.members.iter().map(|m| m.metrics[0]).collect();
    assert_eq!(metrics, [0, 4], "{flags:?}");
    let text = layout.text();
    assert!(text.contains("{structure:record -}"), "{text}");
    assert!(
        text.contains("+16  16384      {array:int[64][64] grid}"),
        "{text}"
    );
}

fn check_single(objects: &DataObjects, flags: &[&str]) {
    let single = objects.single("rec").unwrap();
    assert_eq!(single.objects.len(), 1);
    let rec = &single.objects[0];
    assert_eq!(rec.object.name, "{structure:record rec}");
    assert_eq!(rec.object.size, Some(16400));
    let members: Vec<(&str, u64)> = rec
        .members
        .iter()
        .map(|m| (m.name.as_str(), m.metrics[0]))
        .collect();
    assert_eq!(
        members,
        [
            ("{structure:record rec}.(Anon)", 1),
            ("{structure:record rec}.{array:int[64][64] grid}", 2),
            ("{structure:record rec}.{double scale}", 1),
            ("{structure:record rec}.{int count}", 3),
        ],
        "{flags:?}"
    );
    let buffer = objects.single("{array:double[512] buffer}").unwrap();
    assert_eq!(buffer.objects[0].object.scope.as_deref(), Some("work"));
    assert!(objects.single("nosuch").is_err());
    assert!(single
        .text()
        .contains("{structure:record rec} in dataspace, 16400 bytes"));
}

#[test]
fn events_go_to_their_data_objects_at_o0() {
    check_attribution(&["-g", "-O0", "-no-pie", "-fno-inline"], "dataspace-o0");
}

/// Optimized and position-independent: the load bias applies, and the
/// locals whose address is taken stay in the frame at DWARF's offsets.
#[test]
fn events_go_to_their_data_objects_at_o2() {
    check_attribution(&["-g", "-O2", "-fPIE", "-pie"], "dataspace-o2");
}

const TID: u32 = 4242;

/// One `heap` block of `events`, encoded as the collector encodes them.
fn heap_block(events: &[HeapEvent]) -> Vec<u8> {
    let mut block = vec![0u8; BLOCK_SIZE];
    let first = events[0].timestamp_ns;
    let mut writer = BlockWriter::claim(&mut block, KIND_HEAP, TID, 0, first).unwrap();
    let mut delta = HeapDelta::block_start(first);
    let mut record = [0u8; MAX_HEAP_RECORD_SIZE];
    for event in events {
        let len = delta.encode(event, &mut record);
        assert!(writer.push_bytes(&record[..len]));
    }
    writer.commit();
    block
}

/// Adds a `heap` file of `events` to experiment `dir`, their stack
/// `pcs` to its `stacks` file, and heap tracing to its manifest.
fn add_heap_tracing(dir: &Path, pcs: &[u64], events: &[HeapEvent]) {
    let stacks_path = dir.join("stacks");
    let mut stacks = std::fs::read(&stacks_path).unwrap();
    let index = (stacks.len() / BLOCK_SIZE) as u32;
    let mut block = vec![0u8; BLOCK_SIZE];
    let mut writer = BlockWriter::claim(&mut block, KIND_STACKS, TID, index, 0).unwrap();
    assert!(writer.push_stack(StackStatus::Complete, pcs));
    writer.commit();
    stacks.extend_from_slice(&block);
    std::fs::write(&stacks_path, stacks).unwrap();
    std::fs::write(dir.join("heap"), heap_block(events)).unwrap();
    let mut manifest = [0u8; 512];
    let len = write_manifest_into(
        &mut manifest,
        "log,profile,stacks,heap",
        "clock-profile,heap-trace",
        "analyzer test",
    )
    .unwrap();
    std::fs::write(dir.join("manifest"), &manifest[..len]).unwrap();
}

/// An experiment's resolver reads its load objects from the log and its
/// heap blocks, named by their allocation stacks without the collector's
/// frames, from heap tracing: a block holds its addresses from its
/// allocation until its free, or until a realloc moves it.
#[test]
fn an_experiments_objects_and_heap_blocks() {
    let dir = TempDir::new("dataspace-heap");
    let built = Built::new(
        &dir.0,
        "dataspace",
        &["-g", "-O0", "-no-pie", "-fno-inline"],
    );
    assert_eq!(built.bias, 0);
    let mut synthetic = common::Synthetic::new(&dir.0, "t.er", &built.exe, TID);
    let (lo, hi) = common::load_span(&built.exe);
    let collector: u64 = 0x7f00_0000_0000;
    synthetic.object(1_000_000_001, &built.exe, 0, lo, hi);
    let collector_path = Path::new("/nonexistent/libcollector.so");
    synthetic.object(
        1_000_000_002,
        collector_path,
        collector,
        collector,
        collector + 0x10_0000,
    );
    synthetic.thread(1_000_000_003, TID);
    synthetic.event(common::tick(
        1_000_000_010,
        TID,
        vec![built.symbol("main", 4)],
    ));
    let expt_dir = synthetic.write();
    let pcs = [
        collector + 0x1234,
        built.symbol("make_grid", 12),
        built.symbol("main", 12),
    ];
    let stack = stack_id(StackStatus::Complete.code(), &pcs);
    let (first, moved) = (0x5000_0000u64, 0x6000_0000u64);
    let heap_event = |op, order, timestamp_ns, address, size, old_address| HeapEvent {
        op,
        order,
        timestamp_ns,
        address,
        size,
        old_address,
        stack_id: if op == HeapOp::Free { 0 } else { stack },
    };
    add_heap_tracing(
        &expt_dir,
        &pcs,
        &[
            heap_event(HeapOp::Malloc, 1, 2_000, first, 4096, 0),
            heap_event(HeapOp::Realloc, 2, 3_000, moved, 8192, first),
            heap_event(HeapOp::Free, 3, 4_000, moved, 0, 0),
        ],
    );
    let expt = experiment::Experiment::open(&expt_dir).unwrap();
    let resolver = Resolver::for_experiment(&expt, &[], &expt_dir.join("archives")).unwrap();
    let name_at = |address: u64, time_ns: u64| {
        resolver
            .resolve(&DataEvent {
                time_ns,
                ..event(address, 0, 1)
            })
            .name()
    };
    let small = "<Heap>.(block of 4096 bytes from make_grid < main)";
    let large = "<Heap>.(block of 8192 bytes from make_grid < main)";
    assert_eq!(name_at(first + 4095, 2_500), small);
    assert_eq!(name_at(first + 4096, 2_500), "<Unknown>.(Unidentified)");
    assert_eq!(name_at(first + 8, 1_500), "<Unknown>.(Unidentified)");
    assert_eq!(name_at(first + 8, 3_500), "<Unknown>.(Unidentified)");
    assert_eq!(name_at(moved + 8000, 3_500), large);
    assert_eq!(name_at(moved + 8, 4_500), "<Unknown>.(Unidentified)");
    // The executable's variables, from its `object` line.
    assert_eq!(
        name_at(built.at("rec.grid[3][5]"), 0),
        "{structure:record rec}.{array:int[64][64] grid}"
    );
    // Many events at once: one pass over the heap's history.
    let events: Vec<DataEvent> = [(first, 2_500), (moved, 3_500), (first, 3_500)]
        .iter()
        .map(|&(address, time_ns)| DataEvent {
            time_ns,
            ..event(address, 0, 1)
        })
        .collect();
    let names: Vec<String> = resolver
        .resolve_all(&events)
        .iter()
        .map(|a| a.name())
        .collect();
    assert_eq!(names, [small, large, "<Unknown>.(Unidentified)"]);
}

/// The descriptors the manual spells: `{int i}`, derived types with `+`,
/// aggregates by their kind and tag (or typedef), bitfields with their
/// width; a static local by its own name.
#[test]
fn descriptors_follow_the_manual() {
    let dir = TempDir::new("dataspace-names");
    let built = Built::new(
        &dir.0,
        "dataspace",
        &["-g", "-O0", "-no-pie", "-fno-inline"],
    );
    let resolver = Resolver::new(vec![built.loaded()], HeapBlocks::default());
    let calls = built
        .symbols
        .keys()
        .find(|name| name.starts_with("calls."))
        .expect("gcc names a static local calls.N")
        .clone();
    let cases = [
        ("limit", 0, "{const+int limit}", true),
        ("head", 7, "{pointer+structure:node head}", true),
        ("pair", 4, "{structure:pair_t pair}.{int b}", false),
        ("total_bytes", 0, "{size_t total_bytes}", true),
        ("val", 1, "{union:value val}.{int i}", false),
        ("val", 6, "{union:value val}.{double d}", false),
        ("shade", 0, "{enumeration:color shade}", true),
        ("fl", 0, "{structure:flags fl}.{unsigned_int a:3}", false),
        (calls.as_str(), 2, "{int calls}", true),
    ];
    for (symbol, offset, want, scalar) in cases {
        let found = resolver.resolve(&event(built.symbol(symbol, offset), 0, 1));
        assert_eq!(found.name(), want, "{symbol}+{offset}");
        assert_eq!(found.scalar, scalar, "{symbol}");
        assert_eq!(found.scope.as_deref(), Some("dataspace"));
    }
}

/// Without DWARF the symbol table still names the variables (untyped, so
/// neither scalars nor aggregates), and no stack variable is known.
#[test]
fn without_debug_information_symbols_name_the_data() {
    let dir = TempDir::new("dataspace-nodebug");
    let built = Built::new(
        &dir.0,
        "dataspace",
        &["-g", "-O0", "-no-pie", "-fno-inline"],
    );
    let status = Command::new("objcopy")
        .arg("--strip-debug")
        .arg(&built.exe)
        .status()
        .expect("objcopy runs");
    assert!(status.success());
    let resolver = Resolver::new(vec![built.loaded()], HeapBlocks::default());
    let found = resolver.resolve(&event(built.symbol("rec", 20), 0, 1));
    assert_eq!(found.name(), "{untyped rec}");
    assert_eq!(found.path[0].size, Some(16400));
    assert!(!found.scalar);
    let local = built.frame_of("local.y");
    let found = resolver.resolve(&on_stack(built.at("local.y"), local));
    assert_eq!(found.name(), "<Unknown>.(Undetermined stack data)");
}

fn counter_spec(name: &str, kind: u32, config: u64, data_address: bool) -> CounterSpec {
    CounterSpec {
        name: name.into(),
        kind,
        config,
        config1: 0,
        config2: 0,
        interval: 1,
        data_address,
    }
}

/// A record of counter `counter` at `address` (None: without one), at
/// `ms` past the start.
fn record_at(ms: u64, counter: u16, count: u64, address: Option<u64>) -> CounterEvent {
    CounterEvent {
        time_ns: 1_000_000_000 + ms * 1_000_000,
        count,
        data_addr: address.unwrap_or(0),
        counter,
        flags: if address.is_some() {
            FLAG_DATA_ADDRESS
        } else {
            0
        },
        ..CounterEvent::default()
    }
}

/// The analysis language's views over an experiment's counter records:
/// the counters that recorded data addresses are the columns (one
/// without is left out), sorted by the sort metric when it is one of
/// them; a frame is the recorded stack's (the collector's frame the
/// model's stack leaves out still counts); the thread selection and the
/// limit apply; the note says heap tracing was off.
#[test]
fn the_views_in_the_analysis_language() {
    let dir = TempDir::new("dataspace-session");
    let built = Built::new(
        &dir.0,
        "dataspace",
        &["-g", "-O0", "-no-pie", "-fno-inline"],
    );
    let mut synthetic = common::Synthetic::new(&dir.0, "t.er", &built.exe, TID);
    let (lo, hi) = common::load_span(&built.exe);
    let collector: u64 = 0x7f00_0000_0000;
    synthetic.object(1_000_000_001, &built.exe, 0, lo, hi);
    synthetic.object(
        1_000_000_002,
        Path::new("/nonexistent/libcollector.so"),
        collector,
        collector,
        collector + 0x10_0000,
    );
    synthetic.thread(1_000_000_003, TID + 1);
    synthetic.counter(1_000_000_004, 0, &counter_spec("page-faults", 1, 2, true));
    synthetic.counter(1_000_000_005, 1, &counter_spec("insts", 0, 1, false));
    synthetic.counter(1_000_000_006, 2, &counter_spec("mem-loads", 4, 0x1cd, true));
    let main = vec![built.symbol("main", 8)];
    for k in 0..3 {
        let event = record_at(10 + k, 0, 1, Some(built.at("rec.count")));
        synthetic.counter_event(TID, event, main.clone());
    }
    let counter = Some(built.symbol("counter", 0));
    synthetic.counter_event(TID + 1, record_at(20, 0, 2, counter), main.clone());
    synthetic.counter_event(TID, record_at(21, 0, 1, Some(0x10)), main.clone());
    synthetic.counter_event(TID, record_at(22, 1, 700, None), main.clone());
    // In `work`'s frame, recorded as the third frame: the collector's
    // (a signal handler's, say) sits between it and the leaf.
    let buffer = built.printed["buffer[100]"].clone();
    let recorded = vec![
        built.symbol("observe", 4),
        collector + 0x1234,
        buffer[2],
        built.symbol("main", 8),
    ];
    let in_work = CounterEvent {
        frame: 2,
        frame_cfa: buffer[1] + 16,
        flags: FLAG_DATA_ADDRESS | FLAG_IN_FRAME,
        ..record_at(30, 2, 5000, Some(buffer[0]))
    };
    synthetic.counter_event(TID, in_work, recorded);
    let expt_dir = synthetic.write();

    let mut analysis = Analysis::open(&[expt_dir]).expect("open");
    let doc = run_json(&mut analysis, "data_objects");
    assert_eq!(doc["counters"], json!(["page-faults", "mem-loads"]));
    assert_eq!(doc["sort"], "page-faults");
    let metrics = |doc: &Json, name: &str| -> Json {
        let rows = doc["rows"].as_array().expect("rows");
        let row = rows.iter().find(|r| r["name"] == name);
        row.map_or(Json::Null, |r| r["metrics"].clone())
    };
    assert_eq!(metrics(&doc, "<Total>"), json!([6, 5000]));
    assert_eq!(
        metrics(&doc, "{structure:record rec}.{int count}"),
        json!([3, 0])
    );
    assert_eq!(metrics(&doc, "{long_int counter}"), json!([2, 0]));
    assert_eq!(metrics(&doc, "<Unknown>.(Unidentified)"), json!([1, 0]));
    let buffer_row = "{array:double[512] buffer}";
    assert_eq!(metrics(&doc, buffer_row), json!([0, 5000]));
    let scope = doc["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == buffer_row)
        .map(|r| r["scope"].clone());
    assert_eq!(scope, Some(json!("work")));
    assert!(
        doc["note"]
            .as_str()
            .unwrap_or("")
            .contains("heap tracing was off"),
        "{doc}"
    );
    let text = run(&mut analysis, "data_objects");
    assert!(text.starts_with("Data Objects sorted by metric: page-faults"));
    assert!(text.contains("Note: heap tracing was off"), "{text}");

    run(&mut analysis, "sort e.mem-loads");
    let doc = run_json(&mut analysis, "data_objects");
    assert_eq!(doc["sort"], "mem-loads");
    assert_eq!(doc["rows"][1]["name"], buffer_row);
    // A sort metric that is no such counter: the first.
    run(&mut analysis, "sort e.insts");
    assert_eq!(
        run_json(&mut analysis, "data_layout")["sort"],
        "page-faults"
    );

    run(&mut analysis, "thread_select 2");
    let doc = run_json(&mut analysis, "data_objects");
    assert_eq!(metrics(&doc, "<Total>"), json!([2, 0]));
    assert_eq!(metrics(&doc, "{long_int counter}"), json!([2, 0]));
    assert_eq!(metrics(&doc, buffer_row), Json::Null);
    assert!(doc.get("note").is_none(), "nothing unidentified: {doc}");
    run(&mut analysis, "thread_select all");

    run(&mut analysis, "limit 2");
    assert_eq!(
        run_json(&mut analysis, "data_objects")["rows"]
            .as_array()
            .unwrap()
            .len(),
        3
    );
    run(&mut analysis, "limit 0");

    let single = run_json(&mut analysis, "data_single rec");
    assert_eq!(
        single["objects"][0]["object"]["name"],
        "{structure:record rec}"
    );
    assert_eq!(single["total"], json!([6, 5000]));
    let layout = run_json(&mut analysis, "data_layout");
    let types = layout["types"].as_array().unwrap();
    assert!(
        types.iter().any(|t| t["name"] == "{structure:record -}"),
        "{layout}"
    );
    let missing = analysis.run_line("data_single nosuch").unwrap_err();
    assert!(missing.contains("no data object \"nosuch\""), "{missing}");
    assert_eq!(missing.lines().count(), 1);
}
