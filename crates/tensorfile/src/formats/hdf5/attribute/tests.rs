//! Attribute values from hand-made messages: numbers, strings, and hostile shapes.

use super::value::decode;
use crate::error::Rule;
use crate::formats::hdf5::io::H5Io;
use crate::model::{MetaValue, Number, TypedArray};
use crate::source::{Bytes, Source};

fn io() -> H5Io {
    H5Io::new(Source::local(Bytes::from_vec(vec![0; 64])), 8, 8, 0).unwrap()
}

/// A version 1 dataspace of `dims`.
fn space(dims: &[u64]) -> Vec<u8> {
    let mut s = vec![1, dims.len() as u8, 0, 0, 0, 0, 0, 0];
    for d in dims {
        s.extend_from_slice(&d.to_le_bytes());
    }
    s
}

/// A datatype message of `class` with bit field `bits` and `size`.
fn dtype(class: u8, bits: u8, size: u32) -> Vec<u8> {
    let mut t = vec![0x10 | class, bits, 0, 0];
    t.extend_from_slice(&size.to_le_bytes());
    t.extend_from_slice(&[0; 12]);
    t
}

#[test]
fn numbers_scalars_and_matrices() {
    let v = decode(&io(), &dtype(0, 0x08, 2), &space(&[]), &(-5i16).to_le_bytes()).unwrap();
    assert_eq!(v, MetaValue::Number(Number::I16(-5)));
    let data: Vec<u8> = [1u32, 2, 3, 4, 5, 6].iter().flat_map(|x| x.to_be_bytes()).collect();
    let v = decode(&io(), &dtype(0, 0x01, 4), &space(&[2, 3]), &data).unwrap();
    let rows = TypedArray::Array(vec![TypedArray::U32(vec![1, 2, 3]), TypedArray::U32(vec![4, 5, 6])]);
    assert_eq!(v, MetaValue::TypedArray(rows));
}

#[test]
fn fixed_strings_lose_their_padding() {
    let v = decode(&io(), &dtype(3, 0, 4), &space(&[2]), b"ab\0\0cd  ").unwrap();
    assert_eq!(v, MetaValue::TypedArray(TypedArray::Text(vec!["ab".into(), "cd".into()])));
}

#[test]
fn short_data_zero_sized_strings_and_empty_shapes() {
    let err = decode(&io(), &dtype(1, 0x20, 8), &space(&[4]), &[0; 16]).unwrap_err();
    assert_eq!(err.rule(), Some(Rule::SizeMismatch));
    let err = decode(&io(), &dtype(3, 0, 0), &space(&[1 << 40]), &[]).unwrap_err();
    assert_eq!(err.rule(), Some(Rule::BadField));
    // 2^40 rows of nothing: an empty array, not 2^40 allocations.
    let v = decode(&io(), &dtype(0, 0, 1), &space(&[1 << 40, 0]), &[]).unwrap();
    assert_eq!(v, MetaValue::TypedArray(TypedArray::U8(vec![])));
}

#[test]
fn other_classes_are_described() {
    let v = decode(&io(), &dtype(6, 0, 8), &space(&[3]), &[0; 24]).unwrap();
    assert_eq!(v, MetaValue::Text("<hdf5 compound attribute of shape [3]>".into()));
}
