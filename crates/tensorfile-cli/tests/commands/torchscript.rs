//! TorchScript archives (`torch.jit.save`, fixtures in `tests/fixtures/pytorch/torchscript/`,
//! copied as `.jit` files: the format is told from content): `ls` lists the state dict, `info`
//! says what the file is and lists its code, `show` prints a tensor, `extract` writes each
//! tensor with the bytes `torch.jit.load` gives, and a broken archive is refused naming the
//! file and the rule.

use crate::common::*;
use serde_json::Value as Json;

fn fixture(name: &str) -> std::path::PathBuf {
    fixtures().join("pytorch/torchscript").join(name)
}

/// The fixture `name` (`nested`...) copied into `dir` as `<name>.jit`.
fn jit(dir: &tempfile::TempDir, name: &str) -> std::path::PathBuf {
    let path = dir.path().join(format!("{name}.jit"));
    std::fs::copy(fixture(&format!("{name}.pt")), &path).unwrap();
    path
}

fn record(name: &str) -> Json {
    json_of(&std::fs::read_to_string(fixture(&format!("{name}.pt.expected.json"))).unwrap())
}

#[test]
fn ls_and_info_show_the_state_dict_and_the_code() {
    let dir = tempfile::tempdir().unwrap();
    let nested = jit(&dir, "nested");
    let rows = json_of(&ok(&[&"ls", &nested, &"--json"]));
    let names: Vec<&str> = rows.as_array().unwrap().iter().map(|r| r["name"].as_str().unwrap()).collect();
    let expected = record("nested");
    let recorded: Vec<&str> =
        expected["tensors"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, recorded);

    let info = json_of(&ok(&[&"info", &nested, &"--json"]));
    assert_eq!(info["format"], "pt");
    assert_eq!(info["details"]["kind"], "TorchScript archive (torch.jit.save)");
    assert_eq!(info["details"]["code"], expected["code"]);
    assert_eq!(info["details"]["tensors not in the state dict"], expected["other_tensors"]);
    let text = ok(&[&"info", &nested]);
    assert!(text.contains("TorchScript archive"), "{text}");
}

#[test]
fn show_prints_a_tensor() {
    let dir = tempfile::tempdir().unwrap();
    let nested = jit(&dir, "nested");
    assert_eq!(ok(&[&"show", &nested, &"bn.running_mean"]).trim(), "[ 0.5  -0.25]");
    assert_eq!(ok(&[&"show", &nested, &"bn.num_batches_tracked"]).trim(), "9");
}

#[test]
fn extract_writes_the_bytes_torch_gives() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    ok(&[&"extract", &jit(&dir, "containers"), &"-o", &out]);
    for t in record("containers")["tensors"].as_array().unwrap() {
        let name = t["name"].as_str().unwrap();
        let (_, data) = read_npy(&out.join(format!("{name}.npy")));
        assert_eq!(sha256(&data), t["sha256"].as_str().unwrap(), "{name}");
    }
}

#[test]
fn a_broken_archive_is_refused_naming_the_file_and_the_rule() {
    // The code file of batch norm renamed (in the local header and the central directory):
    // no code defines the class of `bn`.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("broken.jit");
    let mut bytes = std::fs::read(fixture("nested.pt")).unwrap();
    let (from, to) = (b"modules/batchnorm.py", b"modules/batchnorX.py");
    let mut renamed = 0;
    for i in 0..bytes.len().saturating_sub(from.len()) {
        if &bytes[i..i + from.len()] == from {
            bytes[i..i + to.len()].copy_from_slice(to);
            renamed += 1;
        }
    }
    assert_eq!(renamed, 2, "a local header and a central directory entry");
    std::fs::write(&path, &bytes).unwrap();
    let o = tensorfile(&[&"ls", &path]);
    assert_eq!(code(&o), 1);
    let err = stderr(&o);
    assert!(err.contains("broken.jit") && err.contains("batchnorm.py defines it [missing-field]"), "{err}");
}
