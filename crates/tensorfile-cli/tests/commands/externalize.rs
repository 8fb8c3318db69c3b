//! `tensorfile externalize` (and `update` of a program with the weights it had): external programs
//! with their `.ptd`, several programs sharing one. Run on small files made in a temporary folder
//! and on committed fixtures.

use crate::common::*;
use tensorfile::{DType, WriteOptions};

#[test]
fn externalize_update_and_convert_to_ptd_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n);
    let src = et_fixture("constants.pte");
    ok(&[&"externalize", &src, &"-o", &p("ext.pte"), &"--data", &p("ext.ptd")]);
    // The external program with its data reads the same tensors as the original.
    ok(&[&"convert", &src, &p("a.safetensors")]);
    ok(&[&"convert", &p("ext.pte"), &"--data", &p("ext.ptd"), &p("b.safetensors")]);
    ok(&[&"diff", &p("a.safetensors"), &p("b.safetensors")]);
    // Update with the same weights gives back the very same file.
    ok(&[&"update", &src, &"--weights", &p("a.safetensors"), &"-o", &p("same.pte")]);
    assert_eq!(std::fs::read(p("same.pte")).unwrap(), std::fs::read(&src).unwrap());
    // A safetensors file converted to .ptd reads the same.
    ok(&[&"convert", &p("a.safetensors"), &p("c.ptd")]);
    ok(&[&"diff", &p("a.safetensors"), &p("c.ptd")]);
    // Wrong shapes and unknown names are refused, naming the tensor.
    let bad = p("bad.safetensors");
    write(&bad, &[dense("constant.1", DType::Float32, &[1], f32s(&[1.0]))], &WriteOptions::default());
    let o = tensorfile(&[&"update", &src, &"--weights", &bad, &"-o", &p("x.pte")]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("constant.1"), "{}", stderr(&o));
    assert!(!p("x.pte").exists());
}

#[test]
fn externalize_several_programs_into_one_shared_ptd() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let a = et_fixture("constants.pte");
    let b = dir.path().join("copy.pte");
    std::fs::copy(&a, &b).unwrap();
    let j = json_of(&ok(&[&"externalize", &a, &b, &"-o", &out, &"--data", &dir.path().join("shared.ptd"), &"--json"]));
    assert_eq!(j["programs"].as_array().unwrap().len(), 2);
    let shared = dir.path().join("shared.ptd");
    let rows = json_of(&ok(&[&"ls", &shared, &"--json"]));
    let n = rows.as_array().unwrap().len();
    assert!(rows.as_array().unwrap().iter().all(|r| r["name"].as_str().unwrap().contains("/constant.")));
    // Identical tensors are stored once: the two copies share every segment.
    let dump = json_of(&ok(&[&"dump", &shared]));
    assert_eq!(dump["segments"].as_array().unwrap().len() * 2, n);
    for prog in ["constants.pte", "copy.pte"] {
        ok(&[&"verify", &out.join(prog), &"--data", &shared]);
    }
}
