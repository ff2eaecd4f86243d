use super::descriptor::{Layout, MemberLayout};
use super::views::{padding_rows, variable_name};
use super::*;
use experiment::counters::{FLAG_DATA_ADDRESS, FLAG_IN_FRAME};

#[test]
fn counter_records_name_their_frames_pc() {
    let stack = [0x401000, 0x402005, 0x403009];
    let record = CounterEvent {
        time_ns: 77,
        stack_id: 5,
        count: 1000,
        data_addr: 0x7ffd_0000_0100,
        frame_cfa: 0x7ffd_0000_0200,
        counter: 2,
        frame: 1,
        flags: FLAG_DATA_ADDRESS | FLAG_IN_FRAME,
    };
    let event = DataEvent::from_counter(&record, Some(&stack));
    assert_eq!(event.data_addr, Some(0x7ffd_0000_0100));
    assert_eq!((event.time_ns, event.counter, event.count), (77, 2, 1000));
    // A caller's pc is its return address: looked up inside the call.
    let frame = event.frame.unwrap();
    assert_eq!((frame.pc, frame.cfa), (Some(0x402004), 0x7ffd_0000_0200));
    let leaf = CounterEvent { frame: 0, ..record };
    let frame = DataEvent::from_counter(&leaf, Some(&stack)).frame.unwrap();
    assert_eq!(frame.pc, Some(0x401000));
    // The stack record is lost: the frame is known, its function not.
    let frame = DataEvent::from_counter(&record, None).frame.unwrap();
    assert_eq!(frame.pc, None);
    let plain = CounterEvent { flags: 0, ..record };
    let event = DataEvent::from_counter(&plain, Some(&stack));
    assert_eq!((event.data_addr, event.frame), (None, None));
}

fn block(
    address: u64,
    size: u64,
    allocated_ns: u64,
    freed_ns: Option<u64>,
    site: &str,
) -> HeapBlock {
    HeapBlock {
        address,
        size,
        allocated_ns,
        freed_ns,
        site: site.into(),
    }
}

#[test]
fn a_reused_address_belongs_to_the_block_of_the_time() {
    let blocks = HeapBlocks::new(vec![
        block(0x1000, 64, 10, Some(20), "first"),
        block(0x1000, 32, 30, Some(40), "second"),
        block(0x0800, 0x1000, 50, None, "big"),
        block(0x2000, 16, 15, None, "other"),
    ]);
    let queries = [
        (0x1010, 15),
        (0x1030, 35), // past the second block's end
        (0x1010, 35),
        (0x1010, 25),
        (0x1010, 60), // inside the big block that came later
        (0x2008, 5),
        (0x2008, 1000),
        (0x2010, 1000),
    ];
    let found: Vec<Option<&str>> = blocks
        .holding(&queries)
        .into_iter()
        .map(|b| b.map(|b| blocks.block(b).site.as_str()))
        .collect();
    assert_eq!(
        found,
        [
            Some("first"),
            None,
            Some("second"),
            None,
            Some("big"),
            None,
            Some("other"),
            None
        ]
    );
}

#[test]
fn bare_names_of_variables() {
    assert_eq!(variable_name("{int count}"), Some("count"));
    assert_eq!(variable_name("{array:int[64][64] grid}"), Some("grid"));
    assert_eq!(variable_name("{structure:record rec}.{int count}"), None);
    assert_eq!(variable_name("<Total>"), None);
}

#[test]
fn padding_is_every_byte_no_member_covers() {
    let member = |offset, size| MemberLayout {
        descriptor: format!("{{int m{offset}}}").into(),
        offset,
        size: Some(size),
        bitfield: false,
    };
    let layout = Layout {
        name: "structure:s".into(),
        size: Some(32),
        members: vec![member(0, 1), member(4, 4), member(8, 8), member(20, 2)],
    };
    let holes: Vec<(u64, Option<u64>)> = padding_rows(&layout, 1)
        .iter()
        .map(|r| (r.offset, r.size))
        .collect();
    assert_eq!(holes, [(1, Some(3)), (16, Some(4)), (22, Some(10))]);
    // A union's members overlap: no padding between them.
    let union = Layout {
        name: "union:u".into(),
        size: Some(8),
        members: vec![member(0, 8), member(0, 4)],
    };
    assert!(padding_rows(&union, 1).is_empty());
}
