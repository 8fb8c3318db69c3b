//! `tensorfile convert`: round trips between formats, and dtypes a format cannot hold. Run on
//! small files made in a temporary folder.

use crate::common::*;
use tensorfile::{DType, WriteOptions};

#[test]
fn convert_round_trips_between_formats() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src.zt");
    write(&src, &sample_tensors(), &WriteOptions::default());
    let st = dir.path().join("mid.safetensors");
    let back = dir.path().join("back.zt");
    let big = dir.path().join("big.zt");

    let summary = ok(&[&"convert", &src, &st]);
    assert!(summary.contains("7 tensors"), "{summary}");
    ok(&[&"convert", &st, &back, &"--compress", &"zstd:5", &"--checksum", &"sha256"]);
    ok(&[&"convert", &back, &big, &"--big-endian"]);

    for path in [&st, &back, &big] {
        assert!(ok(&[&"verify", &path]).starts_with("OK "));
        let same = ok(&[&"diff", &src, &path]);
        assert!(same.contains("same: 7 tensors identical"), "{same}");
    }
    let rows = json_of(&ok(&[&"ls", &big, &"--json"]));
    assert_eq!(rows[0]["byte_order"], "big");
    let rows = json_of(&ok(&[&"ls", &back, &"--json"]));
    assert!(rows[0]["checksum"].as_str().unwrap().starts_with("sha256:"));

    let report = json_of(&ok(&[&"convert", &src, &st, &"--json"]));
    assert_eq!((report["format"].as_str(), report["tensors"].as_u64()), (Some("safetensors"), Some(7)));
    assert_eq!(report["skipped"], serde_json::json!([]));
}

#[test]
fn unsupported_dtypes_name_the_tensor_unless_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("c.safetensors");
    let c64 = dense("rotary", DType::Complex64, &[1], f32s(&[1.0, 2.0]));
    write(&src, &[c64, dense("w", DType::Float32, &[1], f32s(&[3.0]))], &WriteOptions::default());
    let out = dir.path().join("out.zt");

    let o = tensorfile(&[&"convert", &src, &out]);
    assert_eq!(code(&o), 1);
    let err = stderr(&o);
    assert!(err.contains("\"rotary\"") && err.contains("complex64") && err.contains("c.safetensors"), "{err}");
    assert!(!out.exists());

    let o = tensorfile(&[&"convert", &src, &out, &"--skip-unsupported"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stderr(&o).contains("warning: skipped \"rotary\""), "{}", stderr(&o));
    let rows = json_of(&ok(&[&"ls", &out, &"--json"]));
    assert_eq!(rows.as_array().unwrap().len(), 1);
    assert_eq!(rows[0]["name"], "w");
}

#[test]
fn zt_outputs_are_zt2_only_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src.safetensors");
    write(&src, &sample_tensors(), &WriteOptions::default());
    let (v01, v2) = (dir.path().join("v01.zt"), dir.path().join("v2.zt"));

    ok(&[&"convert", &src, &v01]);
    assert!(std::fs::read(&v01).unwrap().starts_with(b"ZTEN0001"));
    let report = json_of(&ok(&[&"convert", &src, &v2, &"--zt-version", &"2", &"--json"]));
    assert_eq!(report["format"], "zt2");
    assert!(std::fs::read(&v2).unwrap().starts_with(b"\x89ZT2\r\n\x1a\n"));
    ok(&[&"convert", &src, &v01, &"--zt-version", &"0.1"]);
    assert!(std::fs::read(&v01).unwrap().starts_with(b"ZTEN0001"));

    // zTensor 2 is written raw: compression asked for is named as having no effect.
    let o = tensorfile(&[&"convert", &src, &v2, &"--zt-version", &"2", &"--compress", &"zstd"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stderr(&o).contains("--compress has no effect"), "{}", stderr(&o));

    let unknown = tensorfile(&[&"convert", &src, &v2, &"--zt-version", &"3"]);
    assert!(stderr(&unknown).contains("unknown zTensor version \"3\""), "{}", stderr(&unknown));
    let not_zt = tensorfile(&[&"convert", &src, &dir.path().join("x.safetensors"), &"--zt-version", &"2"]);
    assert!(stderr(&not_zt).contains("not zTensor"), "{}", stderr(&not_zt));
    assert_eq!((code(&unknown), code(&not_zt)), (2, 2));
}

#[test]
fn help_names_the_extensions_of_every_writable_format_from_the_registry() {
    let mut writable: Vec<String> = Vec::new();
    for format in tensorfile::Format::ALL.iter().filter(|f| f.unit().can_write()) {
        writable.extend(format.unit().extensions().iter().map(|e| format!(".{e}")));
    }
    writable.sort();
    writable.dedup();
    assert!(writable.len() > 4, "{writable:?}");
    // The help as words (clap may wrap it to a terminal's width).
    let flat = |text: String| text.split_whitespace().collect::<Vec<_>>().join(" ");
    let sentence = "Convert a file to the format its output extension names (";
    let mut first_list = String::new();
    for flag in ["--help", "-h"] {
        let help = flat(ok(&[&"convert", &flag]));
        assert!(help.starts_with(sentence), "{flag}: {help}");
        let list = help[sentence.len()..].split_once(')').map_or("", |(list, _)| list).to_string();
        let mut listed: Vec<String> = list.split(", ").map(str::to_string).collect();
        listed.sort();
        assert_eq!(listed, writable, "{flag}: {help}");
        first_list = list;
    }
    let all = flat(ok(&[&"--help"]));
    assert!(all.contains(&format!("convert {sentence}{first_list})")), "{all}");
}
