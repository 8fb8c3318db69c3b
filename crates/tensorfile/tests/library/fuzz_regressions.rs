//! Replays, on stable Rust, every input the fuzzers found (`fuzz/regressions/`) and every
//! committed fixture through the fuzz targets' body, as every format and detected.

use std::path::{Path, PathBuf};
use tensorfile::Format;

fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for e in entries {
        let p = e.unwrap_or_else(|e| panic!("{}: {e}", dir.display())).path();
        if p.is_dir() {
            files_under(&p, out);
        } else {
            out.push(p);
        }
    }
}

/// The inputs found by fuzzing, by the target that found them (the prefix of the file name
/// before its first `-`), and how many of each are committed: a folder that lost files fails.
const REGRESSIONS: [(&str, usize); 2] = [("pickle", 1), ("split_gguf", 1)];

/// Committed fixture files (records and notes included) by top folder of `tests/fixtures/`.
const FIXTURES: [(&str, usize); 5] =
    [("executorch", 34), ("pytorch", 52), ("safetensors", 14), ("sharded", 6), ("zt", 36)];

/// The files under `root/folder`, exactly the `committed` of them: a file lost fails.
fn committed(root: &Path, folder: &str, committed: usize) -> Vec<PathBuf> {
    let mut files = Vec::new();
    files_under(&root.join(folder), &mut files);
    assert_eq!(files.len(), committed, "{folder}: {} files, {committed} committed", files.len());
    files
}

fn inputs() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut regressions = committed(&root, "fuzz/regressions", 3);
    regressions.retain(|p| p.file_name().is_some_and(|n| n != "README"));
    for (target, committed) in REGRESSIONS {
        let prefix = format!("{target}-");
        let found = regressions
            .iter()
            .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with(&prefix)))
            .count();
        assert_eq!(found, committed, "fuzz/regressions: {found} inputs of {target}, {committed} committed");
    }
    let mut files = regressions;
    for (folder, count) in FIXTURES {
        files.extend(committed(&root.join("tests/fixtures"), folder, count));
    }
    // Seeds of targets whose input is no file format (XNNPACK payloads), and their README.
    files.extend(committed(&root, "fuzz/seeds", 491));
    files
}

#[test]
fn fuzz_findings_and_fixtures_never_panic() {
    for f in &inputs() {
        let data = std::fs::read(f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        for format in std::iter::once(None).chain(Format::ALL.iter().copied().map(Some)) {
            tensorfile::internals::exercise(&data, format);
        }
        // The zip and pickle targets.
        if let Ok(a) = tensorfile::internals::zip::Archive::open(tensorfile::source::Bytes::from_vec(data.clone())) {
            for e in a.entries() {
                let _ = a.read(e, true);
            }
        }
        let _ = tensorfile::internals::pickle::load(&data);
        // The xnnpack_payload target.
        tensorfile::formats::executorch::xnnpack::exercise(&data);
        // The split_gguf target.
        let _ = tensorfile::internals::exercise_split_gguf(&data);
        // The sentencepiece_read target.
        tensorfile::internals::exercise_sentencepiece(&data);
    }
}

#[test]
fn the_split_gguf_seeds_are_what_they_say() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
    let mut seeds: Vec<PathBuf> = committed(&root, "seeds", 491);
    seeds.retain(|p| p.extension().is_some_and(|e| e == "ggufsplit"));
    assert_eq!(seeds.len(), 6, "split_gguf seeds committed in fuzz/seeds");
    for seed in seeds {
        let data = std::fs::read(&seed).unwrap();
        let name = seed.file_name().unwrap().to_string_lossy().into_owned();
        // A valid set is accepted as one model, a broken one refused.
        let valid = ["split-model", "split-meta-first", "split-llama"].iter().any(|v| name.starts_with(v));
        assert_eq!(tensorfile::internals::exercise_split_gguf(&data), valid, "{name}");
    }
}
