use super::memory::{read_u64_checked, Mapping, MapsParser};
use super::prepare::{cfa_from_expression, rows_from_spans};
use super::table::{CfaRule, ModuleTable, RaRule, RbpRule, Row, Rule};

const RSP8: Rule = Rule {
    cfa: CfaRule::RspOffset(8),
    rbp: RbpRule::Unchanged,
    ra: RaRule::AtCfa(-8),
};
const RSP16: Rule = Rule {
    cfa: CfaRule::RspOffset(16),
    rbp: RbpRule::AtCfa(-16),
    ra: RaRule::AtCfa(-8),
};

#[test]
fn plt_expression_is_recognized() {
    // What ld writes for .plt: breg7 8; breg16 0; lit15; and; lit11; ge; lit3; shl; plus
    let bytes = [0x77, 8, 0x80, 0, 0x3f, 0x1a, 0x3b, 0x2a, 0x33, 0x24, 0x22];
    assert_eq!(
        cfa_from_expression(&bytes),
        CfaRule::Plt {
            rsp_offset: 8,
            mask: 15,
            threshold: 11
        }
    );
    // One byte more or less is not the pattern.
    assert_eq!(cfa_from_expression(&bytes[..10]), CfaRule::Unknown);
    let mut longer = bytes.to_vec();
    longer.push(0x22);
    assert_eq!(cfa_from_expression(&longer), CfaRule::Unknown);
}

#[test]
fn drap_expression_is_recognized() {
    // gcc's realigned frames: breg6 -8; deref
    assert_eq!(
        cfa_from_expression(&[0x76, 0x78, 0x06]),
        CfaRule::DerefRbpOffset(-8)
    );
    // glibc's __restore_rt: breg7 160; deref (not followed: the ucontext gives those registers)
    assert_eq!(
        cfa_from_expression(&[0x77, 0xa0, 0x01, 0x06]),
        CfaRule::Unknown
    );
    assert_eq!(cfa_from_expression(&[]), CfaRule::Unknown);
}

#[test]
fn spans_become_sorted_rows_with_gaps() {
    let rows = rows_from_spans(vec![
        (0x2000, 0x2010, RSP8),
        (0x1000, 0x1004, RSP8),
        (0x1004, 0x1010, RSP16),
        (0x1010, 0x1020, RSP16), // merges with the previous row
        (0x3000, 0x3000, RSP16), // empty: dropped
    ]);
    let expected = [
        Row {
            start: 0x1000,
            rule: RSP8,
        },
        Row {
            start: 0x1004,
            rule: RSP16,
        },
        Row {
            start: 0x1020,
            rule: Rule::NO_INFO,
        },
        Row {
            start: 0x2000,
            rule: RSP8,
        },
        Row {
            start: 0x2010,
            rule: Rule::NO_INFO,
        },
    ];
    assert_eq!(rows, expected);
    let rows: &'static [Row] = Box::leak(rows.into_boxed_slice());
    let module = ModuleTable {
        lo: 0x1000,
        hi: 0x2010,
        rows,
    };
    assert_eq!(module.rule_for(0xfff), None);
    assert_eq!(module.rule_for(0x1000), Some(RSP8));
    assert_eq!(module.rule_for(0x1003), Some(RSP8));
    assert_eq!(module.rule_for(0x1004), Some(RSP16));
    assert_eq!(module.rule_for(0x1500), Some(Rule::NO_INFO));
    assert_eq!(module.rule_for(0x200f), Some(RSP8));
    assert_eq!(module.rule_for(0x2010), None);
}

#[test]
fn overlapping_fdes_never_extend_a_rule_past_its_fde() {
    let rows = rows_from_spans(vec![(0x1000, 0x1100, RSP8), (0x1010, 0x1020, RSP16)]);
    let expected = [
        Row {
            start: 0x1000,
            rule: RSP8,
        },
        Row {
            start: 0x1010,
            rule: RSP16,
        },
        Row {
            start: 0x1020,
            rule: Rule::NO_INFO,
        },
    ];
    assert_eq!(rows, expected);
}

const MAPS: &str = "\
55d0c0a00000-55d0c0a21000 r--p 00000000 08:01 123 /usr/bin/a very long name\n\
7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0                          [stack]\n\
7ffd00021000-7ffd00022000 ---p 00000000 00:00 0\n\
7ffd00030000-7ffd00031000 r-xp 00000000 00:00 0                          [vdso]";

fn find(address: u64, chunk: usize) -> Option<Mapping> {
    let mut parser = MapsParser::new(address);
    for piece in MAPS.as_bytes().chunks(chunk) {
        if let Some(mapping) = parser.feed(piece) {
            return Some(mapping);
        }
    }
    parser.finish()
}

#[test]
fn maps_parser_finds_the_readable_mapping_in_any_chunking() {
    for chunk in [1, 3, 7, 64, 4096] {
        let stack = Mapping {
            lo: 0x7ffd_0000_0000,
            hi: 0x7ffd_0002_1000,
        };
        assert_eq!(find(0x7ffd_0000_0008, chunk), Some(stack));
        assert_eq!(find(0x7ffd_0002_0fff, chunk), Some(stack));
        // The guard page is not readable; addresses outside every mapping find nothing.
        assert_eq!(find(0x7ffd_0002_1000, chunk), None);
        assert_eq!(find(0x1000, chunk), None);
        // The last line has no newline.
        let vdso = Mapping {
            lo: 0x7ffd_0003_0000,
            hi: 0x7ffd_0003_1000,
        };
        assert_eq!(find(0x7ffd_0003_0010, chunk), Some(vdso));
    }
}

#[test]
fn checked_reads_never_fault() {
    let value: u64 = 0x1122_3344_5566_7788;
    assert_eq!(read_u64_checked(&value as *const u64 as u64), Some(value));
    assert_eq!(read_u64_checked(0), None);
    assert_eq!(read_u64_checked(8), None);
    assert_eq!(read_u64_checked(u64::MAX - 3), None);
}
