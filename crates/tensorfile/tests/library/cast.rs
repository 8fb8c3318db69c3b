//! Casting between floating dtypes against torch (`tests/fixtures/cast/`, made by
//! `scripts/fixturegen/cast_torch.py`): every source dtype into every target, bit for bit, on
//! values that hold NaNs, infinities, subnormals, ±0, overflow and ties; and `convert` with a
//! target dtype giving the bytes torch gives for a safetensors fixture's tensors.

use crate::common;

use std::collections::BTreeSet;
use std::path::PathBuf;

use serde_json::Value;
use sha2::{Digest, Sha256};
use tensorfile::convert::{ConvertOptions, ConvertReport, convert_to_writer};
use tensorfile::formats::{Compression, WriteOptions};
use tensorfile::model::cast::{self, SOURCES, TARGETS};
use tensorfile::model::{ByteOrder, ChecksumKind, Kind, Layout, SparseData, SparseFormat, TensorData, TensorInfo};
use tensorfile::source::Bytes;
use tensorfile::{DType, ErrorKind, Format, Hint, TensorFile};

fn dir() -> PathBuf {
    common::fixtures_dir().join("cast")
}

fn record() -> Value {
    let path = dir().join("record.json");
    let text = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}: run scripts/fixtures", path.display()));
    serde_json::from_slice(&text).unwrap_or_else(|e| panic!("{}: malformed record: {e}", path.display()))
}

fn dtype(v: &Value, key: &str) -> DType {
    let name = common::text(v, key, "record.json");
    DType::from_name(name).unwrap_or_else(|| panic!("record.json: unknown dtype {name:?}"))
}

/// The raw file a record row names, checked against its count and sha256.
fn raw(row: &Value, width: usize) -> Vec<u8> {
    let file = common::text(row, "file", "record.json");
    let bytes = std::fs::read(dir().join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
    assert_eq!(hex::encode(Sha256::digest(&bytes)), common::text(row, "sha256", file), "{file}: sha256");
    assert_eq!(Some(bytes.len() as u64 / width as u64), row["count"].as_u64(), "{file}: count");
    bytes
}

fn width(d: DType) -> usize {
    d.size().unwrap() as usize
}

fn bits(b: &[u8]) -> String {
    let mut le = b.to_vec();
    le.reverse();
    format!("0x{}", hex::encode(le))
}

#[test]
fn every_pair_casts_as_torch_does() {
    let record = record();
    let pairs = common::array(&record, "pairs", "record.json");
    let mut seen = BTreeSet::new();
    let mut failures = Vec::new();
    for pair in pairs {
        let (from, to) = (dtype(pair, "from"), dtype(pair, "to"));
        seen.insert((from, to));
        let input_row = common::array(&record, "inputs", "record.json")
            .iter()
            .find(|r| dtype(r, "dtype") == from)
            .unwrap_or_else(|| panic!("no input for {from}"));
        let input = raw(input_row, width(from));
        let expected = raw(pair, width(to));
        let got = cast::cast(&input, from, to).unwrap();
        assert_eq!(got.len(), expected.len(), "{from} -> {to}: length");
        let (wi, wo) = (width(from), width(to));
        let wrong: Vec<usize> =
            (0..input.len() / wi).filter(|&k| got[k * wo..(k + 1) * wo] != expected[k * wo..(k + 1) * wo]).collect();
        if let Some(&k) = wrong.first() {
            failures.push(format!(
                "{from} -> {to}: {} of {} elements differ; the first, input {}: torch {}, got {}",
                wrong.len(),
                input.len() / wi,
                bits(&input[k * wi..(k + 1) * wi]),
                bits(&expected[k * wo..(k + 1) * wo]),
                bits(&got[k * wo..(k + 1) * wo]),
            ));
        }
    }
    // Every source this library casts from that the recording torch has, into every target.
    let want: BTreeSet<_> = SOURCES.iter().flat_map(|&f| TARGETS.iter().map(move |&t| (f, t))).collect();
    assert_eq!(seen, want, "the record's pairs are not every source into every target");
    assert!(failures.is_empty(), "casts differing from torch:\n{}", failures.join("\n"));
}

#[test]
fn converting_a_safetensors_fixture_gives_torchs_bytes() {
    let record = record();
    let part = &record["safetensors"];
    let file = common::text(part, "file", "record.json");
    let src = TensorFile::open(common::fixtures_dir().join(file)).unwrap();
    let by_target = part["converted"].as_object().expect("converted");
    assert_eq!(by_target.len(), TARGETS.len());
    for (target, rows) in by_target {
        let to = DType::from_name(target).unwrap();
        let options = ConvertOptions { dtype: Some(to), ..ConvertOptions::default() };
        let mut out = std::io::Cursor::new(Vec::new());
        let report = convert_to_writer(&src, &mut out, Format::Safetensors, &options, &mut |_| {}).unwrap();
        let converted = common::open(out.into_inner());
        let rows = rows.as_array().unwrap();
        assert_eq!(converted.entries().len(), rows.len(), "{target}");
        let mut cast_names = Vec::new();
        for row in rows {
            let name = common::text(row, "name", file);
            let entry = converted.entry(name).unwrap_or_else(|| panic!("{target}: {name} missing"));
            let was = src.entry(name).unwrap().info().dtype();
            assert_eq!(entry.info().dtype(), dtype(row, "dtype"), "{target}: {name}");
            let data = converted.read(name).unwrap();
            let got = hex::encode(Sha256::digest(data.as_dense().unwrap()));
            assert_eq!(got, common::text(row, "sha256", file), "{target}: {name} bytes");
            if was != to && cast::can_cast_from(was) {
                cast_names.push(name.to_string());
            }
        }
        cast_names.sort();
        let mut reported = report.cast.clone();
        reported.sort();
        assert_eq!(reported, cast_names, "{target}: the tensors reported cast");
    }
}

/// `src` converted into `format` in memory with `dtype`, and what the conversion reports.
fn convert(
    src: &TensorFile,
    format: Format,
    dtype: DType,
    skip: bool,
) -> tensorfile::Result<(ConvertReport, TensorFile)> {
    let options = ConvertOptions { dtype: Some(dtype), skip_unsupported: skip, ..ConvertOptions::default() };
    let mut out = std::io::Cursor::new(Vec::new());
    let report = convert_to_writer(src, &mut out, format, &options, &mut |_| {})?;
    Ok((report, common::open(out.into_inner())))
}

#[test]
fn a_compressed_tensor_is_cast_in_pieces_as_whole() {
    // Over two zstd frames of 4 MiB: decoded, and cast, a piece at a time.
    let large = common::dense(TensorInfo::dense("large", DType::Float32, vec![2 * 1024 + 3, 1024]), 1);
    let ints = common::dense(TensorInfo::dense("ints", DType::Int16, vec![5]), 2);
    let want_large = cast::cast(large.1.as_dense().unwrap(), DType::Float32, DType::Float16).unwrap();
    let want_ints = ints.1.as_dense().unwrap().to_vec();
    let opts = common::options(Compression::Zstd(1), ChecksumKind::Crc32c, ByteOrder::Little);
    let src = common::open(common::write(Format::Zt, &[large, ints], &opts));
    assert!(src.read_chunks(0, true).unwrap().count() > 1, "the tensor comes in several pieces");
    for format in [Format::Safetensors, Format::Zt, Format::Pt] {
        let (report, out) = convert(&src, format, DType::Float16, false).unwrap();
        assert_eq!(report.cast, ["large"], "{format:?}");
        assert_eq!(report.bytes, want_large.len() as u64 + 10, "{format:?}: bytes in the target dtype");
        assert_eq!(out.entry("large").unwrap().info().dtype(), DType::Float16);
        assert!(**out.read("large").unwrap().as_dense().unwrap() == *want_large, "{format:?}");
        assert_eq!(out.entry("ints").unwrap().info().dtype(), DType::Int16, "integers are kept");
        assert_eq!(**out.read("ints").unwrap().as_dense().unwrap(), *want_ints, "{format:?}");
    }
}

#[test]
fn sparse_values_are_cast_kept_sparse_or_decoded() {
    let values: Vec<u8> = [1.0f64, -3.5, f64::MAX].iter().flat_map(|v| v.to_le_bytes()).collect();
    let layout = Layout::Sparse { format: SparseFormat::Coo, nnz: 3 };
    let info = TensorInfo::new("coo", Kind::Tensor, DType::Float64, vec![2, 3], layout.clone()).unwrap();
    let data = SparseData::new(SparseFormat::Coo, 3, vec![], vec![0, 1, 1, 2, 0, 1], Bytes::from_vec(values)).unwrap();
    let data = TensorData::sparse(data);
    let dense = data.to_dense(DType::Float64, &[2, 3]).unwrap();
    let src = common::open(common::write(Format::Zt, &[(info, data)], &WriteOptions::default()));
    // .zt holds sparse tensors: the values are cast, the indices kept.
    let (report, out) = convert(&src, Format::Zt, DType::BFloat16, false).unwrap();
    assert!(report.decoded.is_empty());
    assert_eq!(out.entries()[0].info().layout(), &layout);
    let sparse = out.read("coo").unwrap().to_sparse().unwrap();
    assert_eq!(sparse.indices(), &[0, 1, 1, 2, 0, 1]);
    assert_eq!(&sparse.values()[..], &[0x80, 0x3F, 0x60, 0xC0, 0x80, 0x7F]);
    // safetensors does not: decoded to dense, then cast.
    let (report, out) = convert(&src, Format::Safetensors, DType::BFloat16, false).unwrap();
    assert_eq!(
        (report.decoded.as_slice(), report.cast.as_slice()),
        (&["coo".to_string()][..], &["coo".to_string()][..])
    );
    let want = cast::cast(&dense, DType::Float64, DType::BFloat16).unwrap();
    assert_eq!(**out.read("coo").unwrap().as_dense().unwrap(), *want);
}

#[test]
fn a_target_that_cannot_hold_the_dtype_is_an_error_or_skipped() {
    let tensors = [
        common::dense(TensorInfo::dense("w", DType::Float32, vec![4]), 1),
        common::dense(TensorInfo::dense("steps", DType::Int64, vec![2]), 2),
    ];
    let src = common::open(common::write(Format::Safetensors, &tensors, &WriteOptions::default()));
    // zTensor 0.1 has no float8.
    let err = convert(&src, Format::Zt, DType::Float8E4M3Fn, false).err().expect("no float8 in .zt");
    assert!(matches!(err.kind(), ErrorKind::Unsupported(_)), "{err}");
    assert_eq!((err.tensor(), err.hint()), (Some("w"), Some(Hint::SkipUnsupported)));
    let (report, out) = convert(&src, Format::Zt, DType::Float8E4M3Fn, true).unwrap();
    assert_eq!((report.skipped.len(), report.skipped[0].name.as_str(), report.cast.len()), (1, "w", 0));
    assert_eq!(out.entries().len(), 1);
    // A dtype that is no cast target is refused before anything is read.
    let err = convert(&src, Format::Safetensors, DType::Float64, false).err().expect("float64 is no target");
    assert!(matches!(err.kind(), ErrorKind::Usage(_)), "{err}");
    assert!(err.to_string().contains("float8_e5m2"), "{err}");
}

#[test]
fn shards_are_sized_in_the_target_dtype() {
    let tensors: Vec<_> =
        (0..4).map(|k| common::dense(TensorInfo::dense(format!("t{k}"), DType::Float32, vec![250]), k)).collect();
    let src = common::open(common::write(Format::Safetensors, &tensors, &WriteOptions::default()));
    let dir = tempfile::tempdir().unwrap();
    let options = ConvertOptions { dtype: Some(DType::BFloat16), ..ConvertOptions::default() };
    let dest = dir.path().join("model.safetensors");
    // 500 bytes each in bfloat16: two to a shard of at most 1000.
    let report = tensorfile::shards::convert_to_shards(&src, &dest, 1000, &options, &mut |_| {}).unwrap();
    assert_eq!((report.files.len(), report.conversion.bytes, report.conversion.cast.len()), (2, 2000, 4));
    let index: Value = serde_json::from_slice(&std::fs::read(report.index.unwrap()).unwrap()).unwrap();
    assert_eq!(index["metadata"]["total_size"], 2000);
}
