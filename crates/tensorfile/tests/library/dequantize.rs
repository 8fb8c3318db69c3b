//! ggml block types dequantized bit for bit as gguf-py does: the blocks and gguf-py's floats
//! of every type it dequantizes are committed under `tests/fixtures/gguf/quants/` (made by
//! `scripts/fixturegen/gguf_quants.py`, special scales included), and every quantized type
//! either matches them or refuses clearly. Q2_0, Q1_0 and Q8_K, which gguf-py does not
//! dequantize, match ggml's own dequantization recorded in `tests/fixtures/ggml-quant/`.

use serde_json::Value;
use sha2::{Digest, Sha256};
use tensorfile::model::quant::{self, BLOCKS, GgmlType, Quant};
use tensorfile::source::Bytes;
use tensorfile::{DType, TensorData};

use crate::common;

struct Case {
    t: GgmlType,
    shape: Vec<u64>,
    blocks: Vec<u8>,
    f32: Vec<u8>,
}

fn cases() -> Vec<Case> {
    let dir = common::fixtures_dir().join("gguf/quants");
    let text = std::fs::read(dir.join("quants.expected.json")).expect("quants.expected.json: run scripts/fixtures");
    let record: Value = serde_json::from_slice(&text).expect("malformed quants.expected.json");
    let types = record["types"].as_array().expect("`types` in quants.expected.json");
    let mut out = Vec::new();
    for r in types {
        let name = r["type"].as_str().expect("a type name");
        let t = GgmlType::from_name(name).unwrap_or_else(|| panic!("{name}: a type this library does not know"));
        let shape = r["shape"].as_array().unwrap().iter().map(|d| d.as_u64().unwrap()).collect();
        let read = |ext: &str, key: &str| {
            let bytes =
                std::fs::read(dir.join(format!("{name}.{ext}"))).unwrap_or_else(|e| panic!("{name}.{ext}: {e}"));
            assert_eq!(hex::encode(Sha256::digest(&bytes)), r[key].as_str().unwrap(), "{name}.{ext}: digest");
            bytes
        };
        out.push(Case { t, shape, blocks: read("blocks", "blocks_sha256"), f32: read("f32", "f32_sha256") });
    }
    assert_eq!(out.len(), 23, "types recorded in gguf/quants/quants.expected.json (run scripts/fixtures)");
    out.push(ggml_q2_0());
    out.extend(ggml_more());
    out
}

/// The blocks ggml's `dequantize_row_q1_0` and `dequantize_row_q8_K` were given, and what they
/// made (`more_dequantized` of ggml-quant's record).
fn ggml_more() -> Vec<Case> {
    let dir = common::fixtures_dir().join("ggml-quant");
    let text = std::fs::read(dir.join("quant.expected.json")).expect("ggml-quant/quant.expected.json");
    let record: Value = serde_json::from_slice(&text).expect("malformed quant.expected.json");
    let more = record["more_dequantized"].as_array().expect("`more_dequantized`");
    let read = |name: &str, digest: &Value| {
        let bytes = std::fs::read(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(hex::encode(Sha256::digest(&bytes)), digest.as_str().unwrap(), "{name}: digest");
        bytes
    };
    let cases: Vec<Case> = more
        .iter()
        .map(|r| {
            let t = GgmlType::from_name(r["type"].as_str().unwrap()).expect("a ggml type");
            let blocks = read(r["blocks"].as_str().unwrap(), &r["blocks_sha256"]);
            let f32 = read(r["file"].as_str().unwrap(), &r["sha256"]);
            let rows = blocks.len() as u64 / t.block_bytes();
            Case { t, shape: vec![rows, t.block_elements()], blocks, f32 }
        })
        .collect();
    let types: Vec<&str> = cases.iter().map(|c| c.t.name()).collect();
    assert_eq!(types, ["Q1_0", "Q1_0", "Q8_K"], "ggml's dequantizations in ggml-quant's record");
    cases
}

/// Q2_0's blocks quantized by ggml and ggml's `dequantize_row_q2_0` of them.
fn ggml_q2_0() -> Case {
    let dir = common::fixtures_dir().join("ggml-quant");
    let text = std::fs::read(dir.join("quant.expected.json")).expect("ggml-quant/quant.expected.json");
    let record: Value = serde_json::from_slice(&text).expect("malformed quant.expected.json");
    let types = record["types"].as_array().expect("`types`");
    let q2_0 = types.iter().find(|t| t["type"] == "Q2_0").expect("Q2_0 in ggml-quant");
    let read = |r: &Value| {
        let name = r["file"].as_str().unwrap();
        let bytes = std::fs::read(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(hex::encode(Sha256::digest(&bytes)), r["sha256"].as_str().unwrap(), "{name}: digest");
        bytes
    };
    let (blocks, f32) = (read(q2_0), read(&record["dequantized"]));
    Case { t: GgmlType::Q2_0, shape: vec![blocks.len() as u64 / 18, 64], blocks, f32 }
}

fn dequantize(t: GgmlType, shape: &[u64], blocks: Vec<u8>) -> tensorfile::Result<Bytes> {
    TensorData::quantized(Quant::Ggml(t), vec![(BLOCKS, Bytes::from_vec(blocks))]).to_dense(DType::Float32, shape)
}

/// Byte equality, failing with the first element that differs and both bit patterns.
fn assert_same_f32(what: &str, got: &[u8], want: &[u8]) {
    assert_eq!(got.len(), want.len(), "{what}: output length");
    let words = |b: &[u8]| b.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect::<Vec<_>>();
    let (got, want) = (words(got), words(want));
    if let Some(i) = (0..got.len()).find(|&i| got[i] != want[i]) {
        let differing = (0..got.len()).filter(|&i| got[i] != want[i]).count();
        panic!(
            "{what}: element {i} is {:#010x} ({}), gguf-py gives {:#010x} ({}); {differing} of {} elements differ",
            got[i],
            f32::from_bits(got[i]),
            want[i],
            f32::from_bits(want[i]),
            got.len()
        );
    }
}

#[test]
fn every_recorded_type_dequantizes_as_gguf_py_does() {
    for case in cases() {
        let got = dequantize(case.t, &case.shape, case.blocks.clone())
            .unwrap_or_else(|e| panic!("{}: {}", case.t.name(), e.message()));
        assert_same_f32(case.t.name(), &got, &case.f32);
    }
}

#[test]
fn every_quantized_type_is_recorded_or_refused() {
    let recorded: Vec<GgmlType> = cases().iter().map(|c| c.t).collect();
    for &t in GgmlType::ALL.iter().filter(|t| t.is_quantized()) {
        let can = quant::can_dequantize(&Quant::Ggml(t));
        if recorded.contains(&t) {
            assert!(can, "{}: recorded but not dequantized", t.name());
            continue;
        }
        assert!(!can, "{}: dequantized but gguf-py's output for it is not recorded", t.name());
        let shape = [t.block_elements()];
        let err = dequantize(t, &shape, vec![0; t.block_bytes() as usize]).unwrap_err();
        let message = err.message();
        assert!(message.contains(t.name()) && message.contains("no reference dequantization"), "{message}");
    }
}

#[test]
fn a_tensor_split_over_threads_gives_the_reference_bytes() {
    // The recorded blocks repeated past the size that is decoded on several threads (1 MiB of
    // output), in one tensor: each copy must decode to gguf-py's floats.
    for case in cases() {
        let copies = (3 << 20) / case.f32.len() + 1;
        let blocks = case.blocks.repeat(copies);
        let mut shape = case.shape.clone();
        shape[0] *= copies as u64;
        let got = dequantize(case.t, &shape, blocks).unwrap();
        assert_same_f32(&format!("{} x{copies}", case.t.name()), &got, &case.f32.repeat(copies));
    }
}

#[test]
fn blocks_of_the_wrong_size_are_refused() {
    let t = GgmlType::Q4_K;
    let err = dequantize(t, &[256], vec![0; 143]).unwrap_err();
    assert_eq!(err.rule(), Some(tensorfile::Rule::BadQuantization), "{}", err.message());
    let err = dequantize(t, &[100], vec![0; 144]).unwrap_err();
    assert_eq!(err.rule(), Some(tensorfile::Rule::BadQuantization), "{}", err.message());
}
