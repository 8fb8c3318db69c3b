//! Replays, on stable Rust, every input the fuzzers found (`fuzz/regressions/`) and every
//! committed fixture through the fuzz targets' body, as every format and detected.

use std::path::{Path, PathBuf};
use tensorfile::Format;

fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else { return };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            files_under(&p, out);
        } else {
            out.push(p);
        }
    }
}

#[test]
fn fuzz_findings_and_fixtures_never_panic() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files = Vec::new();
    files_under(&root.join("fuzz/regressions"), &mut files);
    files_under(&root.join("tests/fixtures"), &mut files);
    for f in &files {
        let data = std::fs::read(f).unwrap();
        for format in std::iter::once(None).chain(Format::ALL.iter().copied().map(Some)) {
            tensorfile::formats::exercise(&data, format);
        }
        // The zip and pickle targets.
        if let Ok(a) = tensorfile::internals::zip::Archive::open(tensorfile::source::Bytes::from_vec(data.clone())) {
            for e in a.entries() {
                let _ = a.read(e, true);
            }
        }
        let _ = tensorfile::internals::pickle::load(&data);
    }
}
