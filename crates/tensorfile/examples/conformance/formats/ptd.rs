//! ExecuTorch named data (`.ptd`): a real file (a fixture made by ExecuTorch) with one thing
//! broken, a flatbuffer laid out by hand whose offsets share a subtree, and files of
//! ExecuTorch 0.6's layout (tensors inside segments) built from its schema.

use tensorfile::formats::executorch::ptd::{Header, PtdReader};
use tensorfile::formats::executorch::{flat_tensor_0_6_schema, flat_tensor_schema};
use tensorfile::internals::flatbuf::{self, Table, Value};
use tensorfile::source::Bytes;
use tensorfile::{Format, Rule, TensorFile};

use super::Fixtures;
use crate::build::flatbuf::ptd_shared_subtrees;
use crate::build::{find, put_u32, put_u64};
use crate::case::{Family as F, Folder};

fn open(bytes: &[u8]) -> Result<TensorFile, String> {
    tensorfile::OpenOptions::new()
        .format(Format::Ptd)
        .open_bytes(Bytes::from_vec(bytes.to_vec()))
        .map_err(|e| e.to_string())
}

/// `base` with its flatbuffer edited by `edit` and re-encoded, its segments kept.
fn edited(base: &[u8], edit: impl FnOnce(&mut Table)) -> Result<Vec<u8>, String> {
    let file = open(base)?;
    let reader = file.reader_as::<PtdReader>().ok_or("not a .ptd")?;
    let h = reader.header();
    let mut root = reader.root().clone();
    edit(&mut root);
    let mut fb = flatbuf::encode(flat_tensor_schema(), &root, 48).map_err(|e| e.to_string())?;
    let hdr = Header {
        flatbuffer_size: fb.len() as u64 - 48,
        segment_base_offset: (fb.len() as u64).next_multiple_of(128),
        ..h
    };
    fb[8..56].copy_from_slice(&hdr.to_bytes());
    fb.resize(hdr.segment_base_offset as usize, 0);
    fb.extend_from_slice(&base[h.segment_base_offset as usize..]);
    Ok(fb)
}

/// A tensor of ExecuTorch 0.6's `.ptd`: name, scalar type, sizes, offset in segment 0.
type Tensor0_6<'a> = (&'a str, i64, &'a [i64], u64);

/// A `.ptd` as ExecuTorch 0.6 wrote it (`FlatTensorSerializer`): the FH01 header in the
/// flatbuffer's gap, `FlatTensor { version: 0, tensor_alignment: 16, tensors, segments: [one],
/// named_data: [] }`, the flatbuffer padded to 16 and the segment data at a multiple of 128
/// (the default segment alignment).
pub fn ptd_0_6(tensors: &[Tensor0_6], segment: &[u8]) -> Result<Vec<u8>, String> {
    let schema = flat_tensor_0_6_schema();
    let table = |name: &str, fields: Vec<(&str, Value)>| {
        let mut t = flatbuf::new_table(schema, name);
        for (field, value) in fields {
            t.set(field, Some(value));
        }
        Value::Table(t)
    };
    let metadata = tensors
        .iter()
        .map(|&(name, scalar_type, sizes, offset)| {
            table(
                "TensorMetadata",
                vec![
                    ("fully_qualified_name", Value::Str(name.into())),
                    ("scalar_type", Value::Int(scalar_type)),
                    ("sizes", Value::Vector(sizes.iter().map(|&d| Value::Int(d)).collect())),
                    ("dim_order", Value::Bytes((0..sizes.len() as u8).collect::<Vec<u8>>().into())),
                    ("segment_index", Value::UInt(0)),
                    ("offset", Value::UInt(offset)),
                ],
            )
        })
        .collect();
    let segments =
        vec![table("DataSegment", vec![("offset", Value::UInt(0)), ("size", Value::UInt(segment.len() as u64))])];
    let Value::Table(root) = table(
        "FlatTensor",
        vec![
            ("version", Value::UInt(0)),
            ("tensor_alignment", Value::UInt(16)),
            ("tensors", Value::Vector(metadata)),
            ("segments", Value::Vector(segments)),
            ("named_data", Value::Vector(Vec::new())),
        ],
    ) else {
        unreachable!("a table")
    };
    let mut fb = flatbuf::encode(schema, &root, 48).map_err(|e| e.to_string())?;
    let hdr = Header {
        flatbuffer_offset: 48,
        flatbuffer_size: fb.len() as u64 - 48,
        segment_base_offset: (fb.len() as u64).next_multiple_of(16).next_multiple_of(128),
        segment_data_size: segment.len() as u64,
    };
    fb[8..56].copy_from_slice(&hdr.to_bytes());
    fb.resize(hdr.segment_base_offset as usize, 0);
    fb.extend_from_slice(segment);
    Ok(fb)
}

/// Two float32 tensors of ExecuTorch 0.6's layout in one segment, the second at the tensor
/// alignment (16): `w` `[2, 3]` at 0, `b` `[3]` at 32; `b_offset` and `b_sizes` change `b`.
pub fn ptd_0_6_sample(b_offset: u64, b_sizes: &[i64]) -> Result<Vec<u8>, String> {
    let mut segment: Vec<u8> = (0..6).flat_map(|i| (i as f32 + 0.5).to_le_bytes()).collect();
    segment.resize(32, 0);
    segment.extend((0..3).flat_map(|i| (-(i as f32) - 1.0).to_le_bytes()));
    ptd_0_6(&[("w", 6, &[2, 3], 0), ("b", 6, b_sizes, b_offset)], &segment)
}

fn first<'a>(root: &'a mut Table, field: &str) -> Option<&'a mut Table> {
    match root.vector_mut(field)?.first_mut() {
        Some(Value::Table(t)) => Some(t),
        _ => None,
    }
}

fn layout(root: &mut Table) -> Option<&mut Table> {
    first(root, "named_data")?.table_mut("tensor_layout")
}

pub fn cases(fx: &Fixtures) -> Result<Folder, String> {
    let mut f = Folder::new("ptd", Format::Ptd, "ptd");
    let base = fx.read("executorch/external.ptd")?;
    f.valid("external", F::Valid, "external constants of a program (fixture made by ExecuTorch)", base.clone());
    f.valid(
        "xnnpack-external",
        F::Valid,
        "XNNPACK named data (fixture made by ExecuTorch)",
        fx.read("executorch/xnnpack_external.ptd")?,
    );
    f.valid("re-encoded", F::Valid, "the external fixture decoded and re-encoded unchanged", edited(&base, |_| {})?);
    f.valid(
        "executorch-0.6",
        F::Valid,
        "ExecuTorch 0.6's layout: tensors at offsets inside one segment (built from its schema)",
        ptd_0_6_sample(32, &[3])?,
    );
    f.verify(
        "executorch-0.6-offset-past-segment",
        F::PastEnd,
        Rule::OutOfBounds,
        "ExecuTorch 0.6's layout: tensor b at offset 4096 of a 44-byte segment",
        ptd_0_6_sample(4096, &[3])?,
    );
    f.verify(
        "executorch-0.6-tensor-past-segment",
        F::SizeMismatch,
        Rule::SizeMismatch,
        "ExecuTorch 0.6's layout: tensor b of sizes [4] at offset 32 of a 44-byte segment",
        ptd_0_6_sample(32, &[4])?,
    );

    let len = base.len() as u64;
    let tr = Rule::Truncated;
    f.open("truncated-in-identifier", F::Truncation, tr, "6 bytes: cut inside FT01", base[..6].to_vec());
    f.open("truncated-in-header", F::Truncation, tr, "40 bytes: cut inside the FH01 header", base[..40].to_vec());
    f.open(
        "truncated-segment-data",
        F::Truncation,
        Rule::OutOfBounds,
        "the last byte of the segment data cut",
        base[..base.len() - 1].to_vec(),
    );
    let mut b = base.clone();
    b[8..12].copy_from_slice(b"FH02");
    f.open("bad-header-magic", F::BadMagic, Rule::BadMagic, "header magic FH02", b);
    let mut b = base.clone();
    put_u32(&mut b, 12, 16);
    f.open("header-length-short", F::BadField, Rule::BadField, "a header of 16 bytes (at least 40)", b);
    let oob = Rule::OutOfBounds;
    let mut b = base.clone();
    put_u64(&mut b, 24, u64::MAX - 10);
    f.open("flatbuffer-size-overflows", F::Overflow, oob, "flatbuffer size 2^64-11: offset + size overflows", b);
    let mut b = base.clone();
    put_u64(&mut b, 24, len);
    f.open("flatbuffer-past-end", F::PastEnd, oob, "a flatbuffer region past the file", b);
    let mut b = base.clone();
    put_u64(&mut b, 16, 16);
    f.open("flatbuffer-offset-inside-header", F::PastEnd, oob, "flatbuffer offset 16, inside the 40-byte header", b);
    let mut b = base.clone();
    put_u64(&mut b, 40, len);
    f.open("segment-data-past-end", F::PastEnd, oob, "segment data as long as the whole file", b);
    let mut b = base.clone();
    put_u64(&mut b, 32, u64::MAX);
    f.open("segment-base-overflows", F::Overflow, oob, "segment base 2^64-1", b);
    let mut b = base.clone();
    put_u64(&mut b, 32, 64);
    f.open(
        "segments-over-flatbuffer",
        F::Overlap,
        Rule::Overlap,
        "segment data starting at 64, inside the flatbuffer",
        b,
    );

    let mf = F::MalformedFlatbuffer;
    let mut b = base.clone();
    put_u32(&mut b, 0, base.len() as u32 + 8);
    f.open("root-offset-past-end", mf, oob, "root table offset past the end", b);
    let mut b = base.clone();
    put_u32(&mut b, 0, 58);
    f.open("root-misaligned", F::Misaligned, Rule::Misaligned, "root table at offset 58", b);
    let key = {
        let file = open(&base)?;
        let root = file.reader_as::<PtdReader>().ok_or("not a .ptd")?.root();
        root.tables("named_data").map_err(|e| e.to_string())?[0].req_str("key").map_err(|e| e.to_string())?.to_string()
    };
    let mut needle = (key.len() as u32).to_le_bytes().to_vec();
    needle.extend_from_slice(key.as_bytes());
    needle.push(0);
    let at = find(&base, &needle).ok_or("the first key is not in the fixture")?;
    let mut b = base.clone();
    b[at + 4] = 0xff;
    f.open("key-bad-utf8", F::BadUtf8, Rule::BadUtf8, "a key with the byte 0xff", b);
    let mut b = base.clone();
    put_u32(&mut b, at, 0x7fff_fff0);
    f.open("key-length-past-end", F::PastEnd, oob, "a key of 2^31-16 bytes", b);
    f.open(
        "shared-subtrees",
        F::FlatbufferBomb,
        Rule::TooManyEntries,
        "256 offsets to one entry of 256 sizes: 2 KiB that decode to 65536 values",
        ptd_shared_subtrees(256, 256),
    );

    f.open(
        "version-2",
        F::BadField,
        Rule::BadField,
        "FlatTensor version 2",
        edited(&base, |r| r.set("version", Some(Value::UInt(2))))?,
    );
    let far = edited(&base, |r| {
        if let Some(s) = first(r, "segments") {
            s.set("offset", Some(Value::UInt(1 << 40)));
        }
    })?;
    f.open("segment-past-segment-data", F::PastEnd, oob, "segment 0 at offset 2^40", far);
    let wrap = edited(&base, |r| {
        if let Some(s) = first(r, "segments") {
            s.set("offset", Some(Value::UInt(u64::MAX - 2)));
            s.set("size", Some(Value::UInt(16)));
        }
    })?;
    f.open("segment-offset-overflows", F::Overflow, oob, "segment 0 at 2^64-3 of 16 bytes", wrap);
    let dup = edited(&base, |r| {
        let first = r.vector("named_data").expect("named_data")[0].clone();
        r.vector_mut("named_data").expect("named_data").push(first);
    })?;
    f.open("duplicate-keys", F::DuplicateName, Rule::DuplicateName, "the first key twice", dup);
    let nokey = edited(&base, |r| {
        if let Some(nd) = first(r, "named_data") {
            nd.set("key", None);
        }
    })?;
    f.open("missing-key", F::BadField, Rule::MissingField, "a named data entry without a key", nokey);

    let v = |edit: &dyn Fn(&mut Table)| edited(&base, edit);
    f.verify(
        "segment-index",
        F::OutOfRangeIndex,
        oob,
        "named data in segment 999",
        v(&|r| {
            if let Some(nd) = first(r, "named_data") {
                nd.set("segment_index", Some(Value::UInt(999)));
            }
        })?,
    );
    f.verify(
        "layout-larger-than-segment",
        F::SizeMismatch,
        Rule::SizeMismatch,
        "sizes [2^20, 2] in a small segment",
        v(&|r| {
            if let Some(l) = layout(r) {
                l.set("sizes", Some(Value::Vector(vec![Value::Int(1 << 20), Value::Int(2)])));
                l.set("dim_order", Some(Value::Bytes(vec![0, 1].into())));
            }
        })?,
    );
    f.verify(
        "dim-order-not-a-permutation",
        F::BadField,
        Rule::BadField,
        "dim_order [1, 1]",
        v(&|r| {
            if let Some(l) = layout(r) {
                l.set("dim_order", Some(Value::Bytes(vec![1, 1].into())));
            }
        })?,
    );
    f.verify(
        "shape-product-overflows",
        F::Overflow,
        Rule::ShapeOverflow,
        "sizes [2^31-1] x 3",
        v(&|r| {
            if let Some(l) = layout(r) {
                l.set("sizes", Some(Value::Vector(vec![Value::Int(i64::from(i32::MAX)); 3])));
                l.set("dim_order", Some(Value::Bytes(vec![0, 1, 2].into())));
            }
        })?,
    );
    f.verify(
        "unknown-scalar-type",
        F::BadField,
        Rule::UnknownDType,
        "scalar type 99",
        v(&|r| {
            if let Some(l) = layout(r) {
                l.set("scalar_type", Some(Value::Int(99)));
            }
        })?,
    );
    Ok(f)
}
