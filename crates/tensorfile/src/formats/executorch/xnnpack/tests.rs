//! Unit tests of the payload header and the schema; fixtures are tested in
//! `tests/library/xnnpack.rs`, hostile payloads in the conformance suite.

use super::*;
use crate::error::Rule;

#[test]
fn the_schema_parses_with_aliased_variants() {
    let s = graph_schema();
    assert_eq!(s.tables[s.root].name, "XNNGraph");
    assert_eq!(&s.file_identifier, b"XN01");
    let nodes = s.unions.iter().find(|u| u.name == "XNodeUnion").unwrap();
    assert_eq!(nodes.variants.len(), 47);
    assert_eq!(nodes.variants[0].0, "XNNAdd");
    assert_eq!(s.tables[nodes.variants[0].1].name, "_XNNNode2x1");
    assert_eq!(nodes.variants[46].0, "XNNCos");
    assert_eq!(&graph_schema_xn00().file_identifier, b"XN00");
}

fn header(fields: (u16, u32, u32, u32, u64), len: usize) -> Vec<u8> {
    let mut b = vec![0u8; len.max(30)];
    b[4..8].copy_from_slice(MAGIC_FOR_TESTS);
    b[8..10].copy_from_slice(&fields.0.to_le_bytes());
    b[10..14].copy_from_slice(&fields.1.to_le_bytes());
    b[14..18].copy_from_slice(&fields.2.to_le_bytes());
    b[18..22].copy_from_slice(&fields.3.to_le_bytes());
    b[22..30].copy_from_slice(&fields.4.to_le_bytes());
    b.truncate(len);
    b
}

const MAGIC_FOR_TESTS: &[u8; 4] = b"XH00";

#[test]
fn header_ranges_are_checked() {
    let ok = header((30, 32, 16, 48, 16), 64);
    let h = PayloadHeader::parse(&ok).unwrap().unwrap();
    assert_eq!(
        (h.flatbuffer_offset, h.flatbuffer_size, h.constant_data_offset, h.constant_data_size),
        (32, 16, 48, 16)
    );
    let rule = |b: Vec<u8>| PayloadHeader::parse(&b).unwrap_err().rule();
    assert_eq!(rule(header((30, 32, 16, 48, 16), 20)), Some(Rule::Truncated));
    assert_eq!(rule(header((29, 32, 16, 48, 16), 64)), Some(Rule::BadField));
    assert_eq!(rule(header((30, 32, 4, 48, 16), 64)), Some(Rule::BadField));
    assert_eq!(rule(header((30, 60, 16, 48, 16), 64)), Some(Rule::OutOfBounds));
    assert_eq!(rule(header((30, u32::MAX, 16, 48, 16), 64)), Some(Rule::OutOfBounds));
    assert_eq!(rule(header((30, 32, 16, 48, u64::MAX), 64)), Some(Rule::OutOfBounds));
    assert_eq!(rule(header((30, 32, 16, 40, 16), 64)), Some(Rule::Overlap));
    // No magic: a bare flatbuffer, no header.
    assert_eq!(PayloadHeader::parse(b"\0\0\0\0XN01").unwrap(), None);
}

#[test]
fn datatypes_map_to_ours_where_one_exists() {
    use crate::model::DType;
    assert_eq!(Datatype::from_number(1).unwrap().dtype(), Some(DType::Float32));
    assert_eq!(Datatype::from_number(6).unwrap().name, "qcint8");
    let qb4 = Datatype::from_number(10).unwrap();
    assert_eq!(qb4.dtype_for(&[8, 64]), Some(DType::UInt4));
    assert_eq!(qb4.nbytes(&[8, 64]).unwrap(), Some(256));
    // Odd rows are padded to a whole byte: no dtype of ours, 3 bytes a row.
    assert_eq!(qb4.dtype_for(&[2, 5]), None);
    assert_eq!(qb4.nbytes(&[2, 5]).unwrap(), Some(6));
    // A scalar is a row of one value: one byte with a padding nibble, so no dtype of ours
    // (found by the xnnpack_payload fuzzer).
    assert_eq!(qb4.dtype_for(&[]), None);
    assert_eq!(qb4.nbytes(&[]).unwrap(), Some(1));
    assert_eq!(Datatype::from_number(11).unwrap().dtype(), None);
    assert_eq!(Datatype::from_number(0).unwrap_err().rule(), Some(Rule::UnknownDType));
    assert_eq!(Datatype::from_number(15).unwrap_err().rule(), Some(Rule::UnknownDType));
    assert!(Datatype::from_number(1).unwrap().nbytes(&[u64::MAX, 2]).is_err());
}
