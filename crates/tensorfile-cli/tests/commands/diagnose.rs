//! What a file that does not open really is, as every command says it: the library's words
//! on stderr, after the file's name, and exit status 1.

use std::path::PathBuf;

use crate::common::*;

fn diagnose_fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/diagnose").join(name)
}

#[test]
fn every_command_names_an_lfs_pointer() {
    let pointer = diagnose_fixture("lfs_pointer.safetensors");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.zt");
    let commands: [Vec<Arg<'_>>; 5] = [
        vec![&"ls", &pointer],
        vec![&"ls", &"--json", &pointer],
        vec![&"info", &pointer],
        vec![&"verify", &pointer],
        vec![&"convert", &pointer, &out],
    ];
    for args in &commands {
        let o = tensorfile(args);
        assert_eq!(code(&o), 1, "{}", stderr(&o));
        let err = stderr(&o);
        assert!(err.starts_with("tensorfile: ") && err.contains("lfs_pointer.safetensors: "), "{err}");
        assert!(
            err.contains(
                "a Git LFS pointer to an object of 1,682 bytes, not the file (oid sha256:d0dbdd97d531…; `git lfs pull` \
                 fetches it) [unknown-format]"
            ),
            "{err}"
        );
    }
    assert!(!out.exists());
}

#[test]
fn ls_names_a_truncated_file() {
    let whole = std::fs::read(diagnose_fixture("../safetensors/dtypes.safetensors")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cut = dir.path().join("model.safetensors");
    std::fs::write(&cut, &whole[..841]).unwrap();
    let o = tensorfile(&[&"ls", &cut]);
    assert_eq!(code(&o), 1);
    assert!(
        stderr(&o).contains(
            "model.safetensors: truncated: 841 bytes present, its header needs 1,072 (a safetensors file); header of \
             1064 bytes, but only 833 follow [truncated]"
        ),
        "{}",
        stderr(&o)
    );
}
