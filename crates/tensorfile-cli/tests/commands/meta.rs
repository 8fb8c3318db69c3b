//! `tensorfile meta`: keys set and deleted in gguf-py's and safetensors' files
//! (`tests/fixtures/`), the report in words and as JSON, tensors copied byte for byte,
//! errors that name the key.

use crate::common::*;
use tensorfile::TensorFile;

/// Every tensor's stored bytes, by name.
fn tensor_bytes(path: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    let file = TensorFile::open(path).unwrap();
    let bytes = std::fs::read(path).unwrap();
    file.entries()
        .iter()
        .map(|e| {
            let (at, n) = (e.storage().offset() as usize, e.storage().len() as usize);
            (e.info().name().to_string(), bytes[at..at + n].to_vec())
        })
        .collect()
}

#[test]
fn meta_sets_and_deletes_gguf_keys_and_reports_old_and_new() {
    let dir = tempfile::tempdir().unwrap();
    let input = fixtures().join("gguf/metadata.gguf");
    let out = dir.path().join("out.gguf");
    let template = dir.path().join("chat.jinja");
    std::fs::write(&template, "{{ messages }}").unwrap();
    let text = ok(&[
        &"meta",
        &input,
        &"-o",
        &out,
        &"--set",
        &"scalar.u32=5",
        &"--set",
        &"new.ids:[u16]=[1,2]",
        &"--set",
        &format!("tokenizer.chat_template=@{}", template.display()),
        &"--delete",
        &"scalar.false",
    ]);
    assert!(text.contains("set scalar.u32: 4000000000 (u32) -> 5 (u32)"), "{text}");
    assert!(text.contains("set new.ids: (none) -> [1,2] ([u16])"), "{text}");
    assert!(text.contains("deleted scalar.false: was false (bool)"), "{text}");
    assert!(text.contains("4 keys"), "{text}");
    assert_eq!(tensor_bytes(&out), tensor_bytes(&input));
    let info = json_of(&ok(&[&"info", &out, &"--json"]));
    let rendered = info.to_string();
    assert!(rendered.contains("{{ messages }}") && !rendered.contains("scalar.false"), "{rendered}");

    let back = dir.path().join("back.gguf");
    let report = json_of(&ok(&[&"meta", &out, &"-o", &back, &"--set", &"scalar.false=false", &"--json"]));
    assert_eq!(report["changes"][0]["key"], "scalar.false");
    assert_eq!(report["changes"][0]["action"], "set");
    assert_eq!(report["changes"][0]["old"], serde_json::Value::Null);
    assert_eq!(report["changes"][0]["new"]["type"], "bool");
    assert_eq!(report["output"], back.display().to_string());
}

#[test]
fn meta_edits_in_place_and_refuses_with_the_key_named() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("m.safetensors");
    std::fs::copy(fixtures().join("safetensors/metadata.safetensors"), &file).unwrap();
    ok(&[&"meta", &file, &"-o", &file, &"--set", &"license=mit"]);
    let info = json_of(&ok(&[&"info", &file, &"--json"]));
    assert!(info.to_string().contains("\"mit\""), "{info}");

    let o = tensorfile(&[&"meta", &file, &"-o", &file, &"--set", &"n:u8=1"]);
    assert_ne!(code(&o), 0);
    assert!(stderr(&o).contains("--set n: this format keeps text values only"), "{}", stderr(&o));
    let o = tensorfile(&[&"meta", &file, &"-o", &file, &"--delete", &"absent"]);
    assert_ne!(code(&o), 0);
    assert!(stderr(&o).contains("--delete absent"), "{}", stderr(&o));
}
