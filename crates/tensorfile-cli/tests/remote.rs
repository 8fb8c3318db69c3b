//! The CLI reads URLs: `ls` and `convert` of files served by nginx on loopback (skipped
//! without nginx unless `TENSORFILE_REQUIRE_SERVERS=1`).

mod common;
// The test servers' helper calls libc (`atexit`, `kill`) and sets the environment before the
// tests start threads: test-only `unsafe`, each use with its SAFETY comment.
#[allow(unsafe_code)]
#[path = "../../tensorfile/tests/servers/mod.rs"]
mod servers;

use std::path::Path;

use common::{code, json_of, ok, stderr, tensorfile};
use servers::Nginx;
use tensorfile::TensorFile;

fn fixture(rel: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures").join(rel)
}

#[test]
fn ls_and_convert_take_urls() {
    let root = tempfile::tempdir().unwrap();
    let local = root.path().join("state_dict.pt");
    std::fs::copy(fixture("pytorch/state_dict.pt"), &local).unwrap();
    let Some(nginx) = Nginx::start(root.path()) else { return };
    let url = nginx.url("state_dict.pt");

    // `ls --json` of the URL lists what `ls --json` of the local file lists.
    let before = nginx.traffic();
    let remote_rows = json_of(&ok(&[&"ls", &"--json", &url]));
    let listed = nginx.traffic() - before;
    assert_eq!(remote_rows, json_of(&ok(&[&"ls", &"--json", &local])));
    assert!(!remote_rows.as_array().unwrap().is_empty());
    assert!(listed.requests > 0, "nginx served nothing: {listed}");
    eprintln!("ls --json {url}: {listed}");

    // `convert` of the URL writes the local file's tensors.
    let out_dir = tempfile::tempdir().unwrap();
    let out = out_dir.path().join("out.safetensors");
    ok(&[&"convert", &url, &out]);
    let (converted, original) = (TensorFile::open(&out).unwrap(), TensorFile::open(&local).unwrap());
    assert_eq!(converted.entries().len(), original.entries().len());
    for (i, e) in original.entries().iter().enumerate() {
        let j = converted.index_of(e.info().name()).unwrap_or_else(|| panic!("{} converted", e.info().name()));
        let (a, b) = (converted.read_index(j).unwrap(), original.read_index(i).unwrap());
        assert_eq!(**a.as_dense().unwrap(), **b.as_dense().unwrap(), "{}", e.info().name());
    }

    // A missing object: an error that names the URL.
    let missing = nginx.url("missing.pt");
    let o = tensorfile(&[&"ls", &missing]);
    assert_ne!(code(&o), 0);
    assert!(stderr(&o).contains(&missing), "{}", stderr(&o));
}
