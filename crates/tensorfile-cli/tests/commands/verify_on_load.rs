//! `--verify` and `--expect-sha256` on `convert` and `show`, and the digests `verify --deep
//! --json` gives: a file unlike its sha256 (beside it, or given) is refused before anything
//! is written or shown, naming the file and both digests.

use crate::common::*;

/// A copy of a safetensors fixture with its sha256 beside it, then its last byte flipped.
fn flipped_with_sidecar(dir: &std::path::Path) -> (std::path::PathBuf, String) {
    let path = dir.join("model.safetensors");
    std::fs::copy(fixtures().join("safetensors/dtypes.safetensors"), &path).unwrap();
    let mut bytes = std::fs::read(&path).unwrap();
    let digest = sha256(&bytes);
    std::fs::write(dir.join("model.safetensors.sha256"), format!("{digest}  model.safetensors\n")).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(&path, &bytes).unwrap();
    (path, digest)
}

#[test]
fn a_file_unlike_its_sha256_is_not_converted_and_nothing_is_written() {
    let tmp = tempfile::tempdir().unwrap();
    let (path, digest) = flipped_with_sidecar(tmp.path());
    let out = tmp.path().join("out2.safetensors");
    let o = tensorfile(&[&"convert", &path, &out, &"--verify"]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert!(stderr(&o).contains(&digest) && stderr(&o).contains("model.safetensors"), "{}", stderr(&o));
    assert!(!out.exists());
    // Without --verify the digest beside it is not read.
    ok(&[&"convert", &path, &out]);
    // A digest given is the one that counts.
    let actual = sha256(&std::fs::read(&path).unwrap());
    std::fs::remove_file(&out).unwrap();
    ok(&[&"convert", &path, &out, &"--expect-sha256", &actual]);
    let o = tensorfile(&[&"convert", &path, &tmp.path().join("b.safetensors"), &"--expect-sha256", &digest]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let o = tensorfile(&[&"convert", &path, &tmp.path().join("c.safetensors"), &"--expect-sha256", &"abc"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
}

#[test]
fn show_verify_checks_the_file_before_showing_anything() {
    let tmp = tempfile::tempdir().unwrap();
    let (path, _) = flipped_with_sidecar(tmp.path());
    let name = json_of(&ok(&[&"ls", &path, &"--json"]))[0]["name"].as_str().unwrap().to_string();
    ok(&[&"show", &path, &name]);
    let o = tensorfile(&[&"show", &path, &name, &"--verify"]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert!(stdout(&o).is_empty(), "nothing shown: {}", stdout(&o));
}

#[test]
fn verify_deep_gives_the_files_and_tensors_digests() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("m.safetensors");
    std::fs::copy(fixtures().join("safetensors/dtypes.safetensors"), &path).unwrap();
    let digest = sha256(&std::fs::read(&path).unwrap());
    let report = json_of(&ok(&[&"verify", &path, &"--deep", &"--json"]));
    assert_eq!(report["files"][0]["sha256"], digest.as_str());
    assert!(report["files"][0]["expected_sha256"].is_null());
    let tensors = report["tensor_sha256"].as_object().unwrap();
    assert_eq!(tensors.len(), report["tensors"].as_u64().unwrap() as usize);
    // A tensor's digest is its bytes' (here, stored raw: the bytes in the file).
    let listed = json_of(&ok(&[&"ls", &path, &"--json"]));
    let first = &listed[0];
    let bytes = std::fs::read(&path).unwrap();
    let (at, n) = (first["offset"].as_u64().unwrap() as usize, first["nbytes"].as_u64().unwrap() as usize);
    assert_eq!(tensors[first["name"].as_str().unwrap()], sha256(&bytes[at..at + n]).as_str());
    // With a .sha256 beside it that differs, --deep fails naming both digests.
    std::fs::write(tmp.path().join("m.safetensors.sha256"), format!("{}\n", "0".repeat(64))).unwrap();
    let o = tensorfile(&[&"verify", &path, &"--deep"]);
    assert_eq!(code(&o), 1, "{}", stdout(&o));
    assert!(stdout(&o).contains(&digest), "{}", stdout(&o));
    let o = tensorfile(&[&"verify", &path, &"--deep"]);
    assert!(!stdout(&o).contains("OK"));
}

#[test]
fn extract_verify_writes_nothing_from_a_file_unlike_its_sha256() {
    let tmp = tempfile::tempdir().unwrap();
    let (path, digest) = flipped_with_sidecar(tmp.path());
    let out = tmp.path().join("out");
    let o = tensorfile(&[&"extract", &path, &"-o", &out, &"--verify"]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert!(stderr(&o).contains(&digest), "{}", stderr(&o));
    assert!(!out.exists() || std::fs::read_dir(&out).unwrap().next().is_none(), "nothing extracted");
    ok(&[&"extract", &path, &"-o", &out]);
}
