//! Casting between floating dtypes against torch (`tests/fixtures/cast/`, made by
//! `scripts/fixturegen/cast_torch.py`): every source dtype into every target, bit for bit, on
//! values that hold NaNs, infinities, subnormals, ±0, overflow and ties; and `convert` with a
//! target dtype giving the bytes torch gives for a safetensors fixture's tensors.

mod common;

use std::collections::BTreeSet;
use std::path::PathBuf;

use serde_json::Value;
use sha2::{Digest, Sha256};
use tensorfile::DType;
use tensorfile::convert::{ConvertOptions, convert_to_writer};
use tensorfile::model::cast::{self, SOURCES, TARGETS};
use tensorfile::{Format, TensorFile};

fn dir() -> PathBuf {
    common::fixtures_dir().join("cast")
}

fn record() -> Value {
    let path = dir().join("cast.expected.json");
    let text = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}: run scripts/fixtures", path.display()));
    serde_json::from_slice(&text).unwrap_or_else(|e| panic!("{}: malformed record: {e}", path.display()))
}

fn dtype(v: &Value, key: &str) -> DType {
    let name = common::text(v, key, "cast.expected.json");
    DType::from_name(name).unwrap_or_else(|| panic!("cast.expected.json: unknown dtype {name:?}"))
}

/// The raw file a record row names, checked against its count and sha256.
fn raw(row: &Value, width: usize) -> Vec<u8> {
    let file = common::text(row, "file", "cast.expected.json");
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
    let pairs = common::array(&record, "pairs", "cast.expected.json");
    let mut seen = BTreeSet::new();
    let mut failures = Vec::new();
    for pair in pairs {
        let (from, to) = (dtype(pair, "from"), dtype(pair, "to"));
        seen.insert((from, to));
        let input_row = common::array(&record, "inputs", "cast.expected.json")
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
    let file = common::text(part, "file", "cast.expected.json");
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
