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
const REGRESSIONS: [(&str, usize); 5] =
    [("gguf_read", 1), ("hf_config", 1), ("pickle", 1), ("split_gguf", 1), ("xnnpack_payload", 1)];

/// Files of `fuzz/seeds/` (its README included).
const SEEDS: usize = 540;

/// Committed fixture files (records and notes included) by top folder of `tests/fixtures/`.
const FIXTURES: [(&str, usize); 5] =
    [("executorch", 34), ("pytorch", 64), ("safetensors", 14), ("sharded", 6), ("zt", 36)];

/// The files under `root/folder`, exactly the `committed` of them: a file lost fails.
fn committed(root: &Path, folder: &str, committed: usize) -> Vec<PathBuf> {
    let mut files = Vec::new();
    files_under(&root.join(folder), &mut files);
    assert_eq!(files.len(), committed, "{folder}: {} files, {committed} committed", files.len());
    files
}

fn inputs() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut regressions = committed(&root, "fuzz/regressions", 6);
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
    files.extend(committed(&root, "fuzz/seeds", SEEDS));
    files
}

#[test]
fn fuzz_findings_and_fixtures_never_panic() {
    // The folder the hf_tokenizer_files target writes its inputs into.
    let folder = tempfile::tempdir().unwrap();
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
        // The hf_config and hf_tokenizer_files targets.
        let _ = tensorfile::internals::exercise_hf_config(&data);
        let _ = tensorfile::internals::exercise_hf_tokenizer_files(&data, folder.path());
        // The git_lfs_records target.
        tensorfile::internals::exercise_git_records(&data);
    }
}

/// Every `config.json` of the converter fixtures (the hf_config target's seeds) names an
/// architecture whose key/values the target makes.
#[test]
fn the_hf_config_seeds_read() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures");
    let mut files = Vec::new();
    files_under(&root, &mut files);
    files.retain(|p| p.file_name().is_some_and(|n| n == "config.json") && p.to_string_lossy().contains("hf-gguf"));
    assert!(files.len() >= 20, "{} config.json files of tests/fixtures/hf-gguf*", files.len());
    for f in files {
        let data = std::fs::read(&f).unwrap();
        assert!(tensorfile::internals::exercise_hf_config(&data), "{}: no key/values made", f.display());
    }
}

/// The hf_tokenizer_files seeds (`fuzz/seeds/*.hftokenizer`) each read as a vocabulary; the
/// ones that are a fixture folder's files as they are hold exactly those files.
#[test]
fn the_hf_tokenizer_seeds_are_what_they_say() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut seeds: Vec<PathBuf> = committed(&root.join("fuzz"), "seeds", SEEDS);
    seeds.retain(|p| p.extension().is_some_and(|e| e == "hftokenizer"));
    assert_eq!(seeds.len(), 7, "hf_tokenizer_files seeds committed in fuzz/seeds");
    let folder = tempfile::tempdir().unwrap();
    for seed in &seeds {
        let data = std::fs::read(seed).unwrap();
        let name = seed.file_name().unwrap().to_string_lossy().into_owned();
        assert!(tensorfile::internals::exercise_hf_tokenizer_files(&data, folder.path()), "{name}: no vocabulary read");
    }
    for (seed, fixture) in [
        ("tinyllama", "TinyLlama-SPM-bf16"),
        ("gemma3", "Gemma3-SPM-bf16"),
        ("granite", "Granite-SPM-bf16"),
        ("phi3", "Phi3-SPM-bf16"),
    ] {
        let data = std::fs::read(root.join(format!("fuzz/seeds/hf-tokenizer-spm-{seed}.hftokenizer"))).unwrap();
        let dir = root.join("tests/fixtures/hf-gguf").join(fixture);
        let parts: Vec<Vec<u8>> = tensorfile::internals::HF_TOKENIZER_FILES
            .iter()
            .map(|f| std::fs::read(dir.join(f)).unwrap_or_default())
            .collect();
        assert!(data == parts.join(&0u8), "hf-tokenizer-spm-{seed}.hftokenizer: not the files of {fixture}");
    }
}

#[test]
fn the_split_gguf_seeds_are_what_they_say() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
    let mut seeds: Vec<PathBuf> = committed(&root, "seeds", SEEDS);
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
