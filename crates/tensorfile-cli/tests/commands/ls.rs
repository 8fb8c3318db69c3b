//! `tensorfile ls`: every field, unreadable entries with the reason, the work done on many
//! entries, custom fields, and external tensors with and without their data file. Run on small
//! files made in a temporary folder and on committed fixtures.

use std::path::Path;

use crate::common::*;
use serde_json::Value as Json;
use tensorfile::io::Bytes;
use tensorfile::model::ChecksumKind;
use tensorfile::{Compression, DType, Format, WriteOptions};

#[test]
fn ls_json_has_every_field() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("l.zt");
    let tensors = sample_tensors();
    write(&path, &tensors, &WriteOptions::default());

    let rows = json_of(&ok(&[&"ls", &path, &"--json"]));
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), tensors.len());
    let w = &rows[0];
    assert_eq!(w["name"], "layers.0/weight");
    assert_eq!(w["dtype"], "float32");
    assert_eq!(w["shape"], serde_json::json!([2, 3]));
    assert_eq!(w["nbytes"], 24);
    assert_eq!(w["kind"], "tensor");
    assert_eq!(w["layout"], "dense");
    assert_eq!(w["encoding"], "raw");
    assert_eq!(w["offset"], 64);
    assert_eq!(w["stored_bytes"], 24);
    assert_eq!(w["byte_order"], "little");
    assert!(w["checksum"].as_str().unwrap().starts_with("crc32c:0x"), "{w}");
    assert!(w["extra"].is_object());
    assert_eq!(rows[5]["shape"], serde_json::json!([]));

    let compressed = dir.path().join("z.zt");
    let options =
        WriteOptions { compression: Compression::Zstd(3), checksum: ChecksumKind::None, ..Default::default() };
    write(&compressed, &sample_tensors(), &options);
    let rows = json_of(&ok(&[&"ls", &compressed, &"--json"]));
    assert_eq!(rows[0]["encoding"], "zstd");
    assert_eq!(rows[0]["checksum"], Json::Null);
}

#[test]
fn ls_lists_unreadable_entries_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("u.safetensors");
    let header = r#"{"odd":{"dtype":"Q9","shape":[2],"data_offsets":[0,2]},"w":{"dtype":"U8","shape":[2],"data_offsets":[2,4]}}"#;
    raw_safetensors(&path, header, &[1, 2, 3, 4]);

    let rows = json_of(&ok(&[&"ls", &path, &"--json"]));
    let odd = rows.as_array().unwrap().iter().find(|r| r["name"] == "odd").unwrap();
    assert_eq!(odd["kind"], "unreadable");
    assert_eq!(odd["rule"], "unknown-dtype");
    assert_eq!(odd["dtype"], "Q9");
    assert!(odd["error"].as_str().unwrap().contains("Q9"), "{odd}");

    let table = ok(&[&"ls", &path]);
    let lines: Vec<&str> = table.lines().collect();
    assert!(lines[0].starts_with("NAME") && lines[0].contains("CHECKSUM"), "{table}");
    assert!(lines.iter().any(|l| l.starts_with("odd") && l.contains("unreadable:")), "{table}");

    let o = tensorfile(&[&"verify", &path]);
    assert_eq!(code(&o), 1);
    assert!(stdout(&o).contains("\"odd\"") && stdout(&o).contains("unknown-dtype"), "{}", stdout(&o));
}

#[test]
fn ls_of_many_entries_reads_only_the_header() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("many.safetensors");
    // 50,000 entries of 64 bytes each: 3.2 MB of data, far more than a speculative read.
    let tensors: Vec<_> =
        (0..50_000).map(|i| dense(&format!("t.{i}"), DType::UInt8, &[64], vec![i as u8; 64])).collect();
    write(&path, &tensors, &WriteOptions::default());
    let table = ok(&[&"ls", &path]);
    assert_eq!(table.lines().count(), 50_001);

    // The work `ls` does is opening the file and listing its entries: counted on the bytes,
    // every range asked for counted (nothing kept), it reads the header once and no data.
    use tensorfile::io::{SPECULATIVE_READ, Source};
    let bytes = std::fs::read(&path).unwrap();
    let header = u64::from_le_bytes(bytes[..8].try_into().unwrap());
    let src = Source::counted_exact(Bytes::from_vec(bytes));
    let reader = Format::Safetensors.open(src.clone()).unwrap();
    let opened = src.bytes_fetched();
    assert!(opened <= 8 + header + SPECULATIVE_READ, "open fetched {opened} bytes, header {header}");
    assert_eq!(reader.entries().len(), 50_000);
    let _ = reader.summary();
    assert_eq!(src.bytes_fetched(), opened, "listing the entries read more");
}

#[test]
fn ls_shows_the_custom_fields_the_reference_wrote() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/zt/rust/custom_fields.zt");
    let rows = json_of(&ok(&[&"ls", &fixture, &"--json"]));
    let weight = rows.as_array().unwrap().iter().find(|r| r["name"] == "weight").unwrap();
    assert_eq!(weight["extra"]["bits"], 4);
    assert_eq!(weight["extra"]["quantization"]["scheme"], "affine");
    assert_eq!(weight["extra"]["raw_bytes"]["bytes"], "deadbeef");
    let table = ok(&[&"ls", &fixture]);
    assert!(table.lines().next().unwrap().ends_with("FIELDS"), "{table}");
    assert!(table.contains("scale=0.5") && table.contains(r#"note="after the checksum key""#), "{table}");
}

#[test]
fn external_tensors_need_their_data_file() {
    let pte = et_fixture("external.pte");
    let rows = json_of(&ok(&[&"ls", &pte, &"--json"]));
    assert!(rows.as_array().unwrap().iter().all(|r| r["kind"] == "unreadable"), "{rows}");
    let rows = json_of(&ok(&[&"ls", &pte, &"--data", &et_fixture("external.ptd"), &"--json"]));
    assert!(rows.as_array().unwrap().iter().all(|r| r["source"] == "external" && r["kind"] == "tensor"), "{rows}");
    let o = tensorfile(&[&"verify", &pte]);
    assert_eq!(code(&o), 1);
    assert!(stdout(&o).contains("--data") || stderr(&o).contains("--data"), "says how to fix it");
}

#[test]
fn an_onnx_model_named_without_its_folder_finds_its_external_data() {
    // `tensorfile ls model.onnx` run in the model's folder: the external data is beside it.
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_tensorfile"))
        .args(["ls", "model.onnx", "--json"])
        .current_dir(fixtures().join("onnx/external"))
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let listed = json_of(&stdout(&o));
    assert!(listed.as_array().is_some_and(|a| !a.is_empty()), "{listed}");
}
