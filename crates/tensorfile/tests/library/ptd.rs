//! `.ptd` named data: what we write is laid out as ExecuTorch lays it out and reads back
//! exactly; each broken rule is refused with its own error.

use crate::common;

use common::*;
use tensorfile::formats::Format;
use tensorfile::formats::executorch::ptd::{Header, PtdReader};
use tensorfile::model::{Layout, TensorInfo};
use tensorfile::source::Bytes;
use tensorfile::{DType, Rule, TensorFile};

fn et_dtypes() -> Vec<DType> {
    DType::ALL.into_iter().filter(|d| tensorfile::formats::executorch::scalar_type_of(*d).is_some()).collect()
}

fn sample() -> Vec<(TensorInfo, tensorfile::TensorData)> {
    let mut v: Vec<_> = et_dtypes()
        .into_iter()
        .enumerate()
        .map(|(i, d)| dense(TensorInfo::dense(format!("w.{d}"), d, vec![3, 2]), i as u64))
        .collect();
    v.push(dense(TensorInfo::blob("opaque", 37), 99));
    v.push(dense(TensorInfo::dense("scalar", DType::Float32, vec![]), 5));
    v.push(dense(TensorInfo::dense("empty", DType::Float32, vec![0, 4]), 0));
    // The same bytes as w.float32 under another name: stored once.
    let (info, data) = v.iter().find(|(i, _)| i.name() == "w.float32").unwrap().clone();
    v.push((info.with_name("tied"), data));
    v
}

#[test]
fn round_trip_dedup_and_layout() {
    let t = sample();
    let bytes = write(Format::Ptd, &t, &Default::default());
    let f = open(bytes.clone());
    assert_eq!(f.format(), Format::Ptd);
    assert!(f.verify().is_empty(), "{:?}", f.verify());
    for (info, data) in &t {
        let e = f.entry(info.name()).unwrap();
        assert_eq!(
            (e.info().kind(), e.info().dtype(), e.info().shape()),
            (info.kind(), info.dtype(), info.shape()),
            "{}",
            info.name()
        );
        assert_eq!(f.read(info.name()).unwrap().as_dense().unwrap(), data.as_dense().unwrap(), "{}", info.name());
    }
    // Laid out as ExecuTorch lays it out.
    let h = Header::parse(&bytes).unwrap();
    assert_eq!(h.flatbuffer_offset, 48);
    assert_eq!(h.segment_base_offset % 128, 0);
    assert_eq!(h.segment_base_offset, (48 + h.flatbuffer_size).next_multiple_of(128));
    let reader = f.reader_as::<PtdReader>().unwrap();
    let segments = reader.root().tables("segments").unwrap();
    for s in &segments {
        assert_eq!(s.uint("offset").unwrap() % 128, 0);
    }
    // Identical bytes share one segment: `tied` and `w.float32`, and the two empty tensors.
    assert!(segments.len() < t.len(), "{} segments for {} tensors", segments.len(), t.len());
    assert_eq!(f.entry("tied").unwrap().storage().offset(), f.entry("w.float32").unwrap().storage().offset());
    let last_end = segments.iter().map(|s| s.uint("offset").unwrap() + s.uint("size").unwrap()).max().unwrap();
    assert_eq!(h.segment_data_size, last_end);
    assert_eq!(bytes.len() as u64, h.segment_base_offset + h.segment_data_size);
}

#[test]
fn dim_ordered_tensors_are_stored_in_their_order_and_read_back_row_major() {
    let info = TensorInfo::dense("nhwc", DType::UInt8, vec![1, 2, 2, 3])
        .with_layout(Layout::DimOrder(vec![0, 2, 3, 1]))
        .unwrap();
    let row_major: Vec<u8> = (0..12).collect();
    let t = vec![(info, tensorfile::TensorData::dense(row_major.clone().into()))];
    let f = open(write(Format::Ptd, &t, &Default::default()));
    let e = f.entry("nhwc").unwrap();
    assert_eq!(*e.info().layout(), Layout::DimOrder(vec![0, 2, 3, 1]));
    assert_eq!(f.read("nhwc").unwrap().as_dense().unwrap().to_vec(), row_major);
}

/// Complex tensors are stored under ExecuTorch's `ScalarType` numbers (`ComplexFloat` is 9) and
/// read back with their bytes.
#[test]
fn complex_tensors_round_trip_with_their_scalar_types() {
    let t: Vec<_> = [(DType::Complex32, 8), (DType::Complex64, 9), (DType::Complex128, 10)]
        .into_iter()
        .enumerate()
        .map(|(i, (d, _))| dense(TensorInfo::dense(format!("c.{d}"), d, vec![2, 3]), i as u64 + 1))
        .collect();
    let f = open(write(Format::Ptd, &t, &Default::default()));
    assert!(f.verify().is_empty(), "{:?}", f.verify());
    let reader = f.reader_as::<PtdReader>().unwrap();
    let named = reader.root().tables("named_data").unwrap();
    for ((info, data), number) in t.iter().zip([8, 9, 10]) {
        let e = f.entry(info.name()).unwrap();
        assert_eq!((e.info().dtype(), e.info().shape()), (info.dtype(), info.shape()), "{}", info.name());
        assert_eq!(f.read(info.name()).unwrap().as_dense().unwrap(), data.as_dense().unwrap(), "{}", info.name());
        let entry = named.iter().find(|n| n.str("key").unwrap() == Some(info.name())).unwrap();
        let layout = entry.table("tensor_layout").unwrap().unwrap();
        assert_eq!(layout.int("scalar_type").unwrap(), number, "{}", info.name());
    }
}

#[test]
fn what_ptd_cannot_hold() {
    let fp4 = TensorInfo::dense("f", DType::Float8E8M0Fnu, vec![2]);
    assert!(Format::Ptd.check_supported(&fp4).is_err(), "no ScalarType");
    let wide = TensorInfo::dense("w", DType::UInt8, vec![1 << 31]);
    assert!(Format::Ptd.check_supported(&wide).is_err(), "sizes are 32-bit");
    let deep = TensorInfo::dense("d", DType::UInt8, vec![1; 17]);
    assert!(Format::Ptd.check_supported(&deep).is_err(), "rank above 16");
}

fn valid() -> Vec<u8> {
    write(Format::Ptd, &sample(), &Default::default())
}

fn rule(bytes: Vec<u8>) -> Rule {
    match tensorfile::OpenOptions::new().format(Format::Ptd).open_bytes(Bytes::from_vec(bytes)) {
        Ok(_) => panic!("hostile .ptd accepted"),
        Err(e) => e.rule().unwrap_or_else(|| panic!("no rule: {e}")),
    }
}

fn set_u64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

#[test]
fn hostile_headers() {
    let good = valid();
    for len in 0..good.len() {
        let _ = tensorfile::OpenOptions::new().format(Format::Ptd).open_bytes(Bytes::from_vec(good[..len].to_vec()));
    }
    assert_eq!(rule(good[..40].to_vec()), Rule::Truncated);
    let mut b = good.clone();
    b[8..12].copy_from_slice(b"FH02");
    assert_eq!(rule(b), Rule::BadMagic);
    let mut b = good.clone();
    b[12..16].copy_from_slice(&16u32.to_le_bytes());
    assert_eq!(rule(b), Rule::BadField, "header length below 40");
    let mut b = good.clone();
    set_u64(&mut b, 24, u64::MAX - 10);
    assert_eq!(rule(b), Rule::OutOfBounds, "flatbuffer size overflowing");
    let mut b = good.clone();
    set_u64(&mut b, 24, good.len() as u64);
    assert_eq!(rule(b), Rule::OutOfBounds, "flatbuffer region past the file");
    let mut b = good.clone();
    set_u64(&mut b, 40, good.len() as u64);
    assert_eq!(rule(b), Rule::OutOfBounds, "segment data past the file");
    let mut b = good.clone();
    set_u64(&mut b, 32, 64);
    assert_eq!(rule(b), Rule::Overlap, "segment data over the flatbuffer");
}

#[test]
fn hostile_tables() {
    use tensorfile::formats::executorch::flat_tensor_schema;
    use tensorfile::internals::flatbuf::{self, Value};
    let good = valid();
    let h = Header::parse(&good).unwrap();
    // Re-encode an edited table in place of the original (same header, same segments).
    let rebuilt = |edit: &dyn Fn(&mut tensorfile::internals::flatbuf::Table)| -> Vec<u8> {
        let f = tensorfile::OpenOptions::new().format(Format::Ptd).open_bytes(Bytes::from_vec(good.clone())).unwrap();
        let mut root = f.reader_as::<PtdReader>().unwrap().root().clone();
        edit(&mut root);
        let mut fb = flatbuf::encode(flat_tensor_schema(), &root, 48).unwrap();
        let hdr = Header {
            flatbuffer_size: fb.len() as u64 - 48,
            segment_base_offset: (fb.len() as u64).next_multiple_of(128),
            ..h
        };
        fb[8..56].copy_from_slice(&hdr.to_bytes());
        fb.resize(hdr.segment_base_offset as usize, 0);
        fb.extend_from_slice(&good[h.segment_base_offset as usize..]);
        fb
    };
    assert_eq!(rule(rebuilt(&|r| r.set("version", Some(Value::UInt(2))))), Rule::BadField);
    let far = |r: &mut tensorfile::internals::flatbuf::Table| {
        if let Some(Value::Table(s)) = r.vector_mut("segments").unwrap().first_mut() {
            s.set("offset", Some(Value::UInt(1 << 40)));
        }
    };
    assert_eq!(rule(rebuilt(&far)), Rule::OutOfBounds);
    let dup = |r: &mut tensorfile::internals::flatbuf::Table| {
        let first = r.vector("named_data").unwrap()[0].clone();
        r.vector_mut("named_data").unwrap().push(first);
    };
    assert_eq!(rule(rebuilt(&dup)), Rule::DuplicateName);
    // Entry-level problems leave the other entries readable.
    let bad_segment = |r: &mut tensorfile::internals::flatbuf::Table| {
        if let Some(Value::Table(nd)) = r.vector_mut("named_data").unwrap().first_mut() {
            nd.set("segment_index", Some(Value::UInt(999)));
        }
    };
    let f = open(rebuilt(&bad_segment));
    assert_eq!(f.unreadable()[0].error().rule(), Some(Rule::OutOfBounds));
    assert_eq!(f.entries().len(), sample().len() - 1);
    let too_big = |r: &mut tensorfile::internals::flatbuf::Table| {
        if let Some(Value::Table(nd)) = r.vector_mut("named_data").unwrap().first_mut() {
            if let Some(l) = nd.table_mut("tensor_layout") {
                l.set("sizes", Some(Value::Vector(vec![Value::Int(1 << 20), Value::Int(2)])));
            }
        }
    };
    assert_eq!(open(rebuilt(&too_big)).unreadable()[0].error().rule(), Some(Rule::SizeMismatch));
    let bad_order = |r: &mut tensorfile::internals::flatbuf::Table| {
        if let Some(Value::Table(nd)) = r.vector_mut("named_data").unwrap().first_mut() {
            if let Some(l) = nd.table_mut("tensor_layout") {
                l.set("dim_order", Some(Value::Bytes(vec![1, 1].into())));
            }
        }
    };
    assert_eq!(open(rebuilt(&bad_order)).unreadable()[0].error().rule(), Some(Rule::BadField));
}

/// A `.ptd` of ExecuTorch 0.6's layout (`FlatTensor { version, tensor_alignment, tensors,
/// segments, named_data }`, each tensor at an offset inside its segment): the conformance
/// corpus builds it from that schema. Its tensors read with their values; decoded with today's
/// schema, whose field 1 is the segment list, its tensor alignment would be an offset past the
/// end, which is how such files used to be refused.
#[test]
fn executorch_0_6_named_data_is_read() {
    let path = common::fixtures_dir().join("../conformance/valid/ptd/executorch-0.6.ptd");
    let file = TensorFile::open(&path).unwrap();
    assert!(file.unreadable().is_empty(), "{:?}", file.unreadable());
    let floats = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let w = file.entry("w").unwrap();
    assert_eq!((w.info().dtype(), w.info().shape()), (DType::Float32, &[2u64, 3][..]));
    assert_eq!(&file.read("w").unwrap().as_dense().unwrap()[..], &floats(&[0.5, 1.5, 2.5, 3.5, 4.5, 5.5])[..]);
    assert_eq!(&file.read("b").unwrap().as_dense().unwrap()[..], &floats(&[-1.0, -2.0, -3.0])[..]);
    let details = file.summary().details;
    assert!(
        details.iter().any(|(k, v)| k == "tensor_alignment" && *v == tensorfile::MetaValue::Int(16)),
        "{details:?}"
    );
    let bytes = std::fs::read(&path).unwrap();
    let h = Header::parse(&bytes).unwrap();
    let fb = Bytes::from_vec(bytes[..(h.flatbuffer_offset + h.flatbuffer_size) as usize].to_vec());
    let today = tensorfile::internals::flatbuf::decode(tensorfile::formats::executorch::flat_tensor_schema(), &fb);
    assert_eq!(today.err().and_then(|e| e.rule()), Some(Rule::OutOfBounds), "the 0.6 layout under today's schema");
}
