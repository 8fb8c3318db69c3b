//! Split GGUF models (`model-00001-of-00004.gguf`...): the parts llama.cpp's `llama-gguf-split`
//! made (`tests/fixtures/gguf-split`, from `scripts/fixtures`) open from any part as the whole
//! model; our split of the same inputs and our merge of the parts have exactly the bytes the
//! tool wrote (the record's sha256); parts that do not fit together are refused with the rule
//! they break, naming the file.

use crate::common;

use std::path::{Path, PathBuf};

use serde_json::Value;
use sha2::{Digest, Sha256};
use tensorfile::ConvertJob;
use tensorfile::model::{MetaValue, Number, TensorInfo};
use tensorfile::{DType, Format, OpenOptions, Rule, TensorFile, WriteOptions};

// --- helpers -------------------------------------------------------------------------------

fn fixture(name: &str) -> PathBuf {
    common::fixtures_dir().join("gguf-split").join(name)
}

fn record() -> Value {
    let path = fixture("splits.expected.json");
    let text = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}: run scripts/fixtures", path.display()));
    serde_json::from_slice(&text).unwrap_or_else(|e| panic!("{}: malformed: {e}", path.display()))
}

fn sha256(b: &[u8]) -> String {
    hex::encode(Sha256::digest(b))
}

/// The committed parts of `model.gguf` split by three tensors, in order.
fn committed_parts() -> Vec<PathBuf> {
    let record = record();
    let split = record["splits"].as_array().unwrap().iter().find(|s| s["output"] == "model").expect("the model run");
    split["parts"].as_array().unwrap().iter().map(|p| fixture(p["file"].as_str().unwrap())).collect()
}

/// Every tensor: (name, dtype, shape, sha256 of what reads).
fn tensors(file: &TensorFile) -> Vec<(String, DType, Vec<u64>, String)> {
    let entries = file.entries().iter().enumerate();
    entries
        .map(|(i, e)| {
            let data = file.read_verified(i).unwrap();
            let bytes: Vec<u8> = data.parts().iter().flat_map(|p| p.bytes().to_vec()).collect();
            (e.info().name().to_string(), e.info().dtype(), e.info().shape().to_vec(), sha256(&bytes))
        })
        .collect()
}

/// `shape` without its leading dimensions of 1 (at least one): as ggml writes it.
fn ggml_shape(shape: &[u64]) -> Vec<u64> {
    let kept: Vec<u64> = shape.iter().copied().skip_while(|&d| d == 1).collect();
    if kept.is_empty() { vec![1] } else { kept }
}

/// The arguments of a `llama-gguf-split --split` run as a job.
fn split_job(input: &Path, dest: &Path, args: &[Value]) -> ConvertJob {
    let mut job = ConvertJob::new([input], dest);
    let mut args = args.iter().map(|a| a.as_str().unwrap());
    while let Some(arg) = args.next() {
        match arg {
            "--split-max-tensors" => job.split_max_tensors = Some(args.next().unwrap().parse().unwrap()),
            "--split-max-size" => {
                let size = args.next().unwrap();
                let megabytes: u64 = size.strip_suffix('M').expect("sizes in M").parse().unwrap();
                job.max_shard_size = Some(megabytes * 1_000_000);
            }
            "--no-tensor-first-split" => job.no_tensor_first_split = true,
            other => panic!("no job option for {other}"),
        }
    }
    job
}

fn open_err(path: &Path) -> tensorfile::Error {
    TensorFile::open(path).err().unwrap_or_else(|| panic!("{} opened", path.display()))
}

fn assert_rule(err: &tensorfile::Error, rule: Rule, mentions: &[&str]) {
    assert_eq!(err.rule(), Some(rule), "{err}");
    for m in mentions {
        assert!(err.to_string().contains(m), "{m:?} not in: {err}");
    }
}

fn u16v(n: u16) -> MetaValue {
    MetaValue::Number(Number::U16(n))
}

fn i32v(n: i32) -> MetaValue {
    MetaValue::Number(Number::I32(n))
}

/// A GGUF file at `path` holding `names` (float32 tensors of 4 elements) and `metadata`.
fn part(path: &Path, names: &[&str], metadata: Vec<(&str, MetaValue)>) {
    let tensors: Vec<_> = names
        .iter()
        .enumerate()
        .map(|(i, n)| common::dense(TensorInfo::dense(*n, DType::Float32, vec![4]), i as u64))
        .collect();
    let metadata = metadata.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
    let options = WriteOptions { metadata, ..WriteOptions::default() };
    std::fs::write(path, common::write(Format::Gguf, &tensors, &options)).unwrap();
}

/// Split keys of part `no` of `count` of a model of `total` tensors.
fn keys(no: u16, count: u16, total: i32) -> Vec<(&'static str, MetaValue)> {
    vec![("split.no", u16v(no)), ("split.tensors.count", i32v(total)), ("split.count", u16v(count))]
}

// --- the parts llama-gguf-split made -------------------------------------------------------

#[test]
fn any_part_opens_as_the_whole_model() {
    let model = TensorFile::open(fixture("model.gguf")).unwrap();
    let expected: Vec<_> = tensors(&model)
        .into_iter()
        .map(|(name, dtype, shape, digest)| (name, dtype, ggml_shape(&shape), digest))
        .collect();
    let parts = committed_parts();
    assert_eq!(parts.len(), 4, "11 tensors, 3 a part");
    let first = TensorFile::open(&parts[0]).unwrap();
    for part in &parts {
        let file = TensorFile::open(part).unwrap();
        assert!(file.is_set(), "{}", part.display());
        assert_eq!(file.format(), Format::Gguf);
        assert_eq!(file.path(), Some(part.as_path()));
        assert_eq!(tensors(&file), expected, "{}", part.display());
        assert!(file.verify().is_empty(), "{}: {:?}", part.display(), file.verify());
        // The metadata is the first part's: the model's keys, then the split keys.
        assert_eq!(file.summary().metadata, first.summary().metadata, "{}", part.display());
        for (i, e) in file.entries().iter().enumerate() {
            let k = i / 3;
            assert_eq!(file.shard_of(i), Some(parts[k].as_path()), "{}", e.info().name());
        }
    }
    let metadata = first.summary().metadata;
    let keys: Vec<&str> = metadata.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(&keys[keys.len() - 3..], ["split.no", "split.tensors.count", "split.count"]);
    assert_eq!(metadata[..keys.len() - 3], model.summary().metadata[..], "the model's keys first, as they were");
    assert_eq!(metadata[keys.len() - 1].1, u16v(4));
    assert_eq!(metadata[keys.len() - 2].1, i32v(11));
}

#[test]
fn each_part_reads_as_gguf_py_read_it() {
    // A part opened alone (a list of one file) is that file: what gguf-py recorded of it.
    for part in committed_parts() {
        let text = std::fs::read(part.with_extension("gguf.expected.json")).unwrap();
        let record: Value = serde_json::from_slice(&text).unwrap();
        let file = OpenOptions::new().open_set(&[&part]).unwrap();
        let recorded = record["tensors"].as_array().unwrap();
        assert_eq!(file.entries().len(), recorded.len(), "{}", part.display());
        for (i, t) in recorded.iter().enumerate() {
            let e = &file.entries()[i];
            assert_eq!(e.info().name(), t["name"].as_str().unwrap());
            let shape: Vec<u64> = t["shape"].as_array().unwrap().iter().map(|d| d.as_u64().unwrap()).collect();
            assert_eq!(e.info().shape(), shape, "{}", t["name"]);
            let data = file.read_verified(i).unwrap();
            let bytes: Vec<u8> = data.parts().iter().flat_map(|p| p.bytes().to_vec()).collect();
            assert_eq!(sha256(&bytes), t["sha256"].as_str().unwrap(), "{}", t["name"]);
        }
        let keys: Vec<&str> =
            record["metadata"].as_array().unwrap().iter().map(|kv| kv["key"].as_str().unwrap()).collect();
        let ours: Vec<String> = file.summary().metadata.into_iter().map(|(k, _)| k).collect();
        assert_eq!(ours, keys, "{}", part.display());
    }
}

#[test]
fn our_split_has_the_bytes_llama_gguf_split_wrote() {
    let dir = tempfile::tempdir().unwrap();
    for split in record()["splits"].as_array().unwrap() {
        let prefix = split["output"].as_str().unwrap();
        let input = fixture(split["input"].as_str().unwrap());
        let out = dir.path().join(prefix);
        std::fs::create_dir(&out).unwrap();
        let job = split_job(&input, &out.join(format!("{prefix}.gguf")), split["args"].as_array().unwrap());
        let done = job.run(&mut |_| {}).unwrap();
        let sharded = done.sharded.as_ref().expect("parts");
        assert_eq!(sharded.index, None, "{prefix}: no index");
        let parts = split["parts"].as_array().unwrap();
        assert_eq!(sharded.files.len(), parts.len(), "{prefix}: parts");
        for (path, want) in sharded.files.iter().zip(parts) {
            let name = path.file_name().unwrap().to_str().unwrap();
            assert_eq!(name, want["file"].as_str().unwrap(), "{prefix}");
            let bytes = std::fs::read(path).unwrap();
            assert_eq!(bytes.len() as u64, want["size"].as_u64().unwrap(), "{prefix}: size of {name}");
            assert_eq!(sha256(&bytes), want["sha256"].as_str().unwrap(), "{prefix}: bytes of {name}");
        }
        // What we wrote opens as the model it was split from.
        let whole = TensorFile::open(sharded.files.last().unwrap()).unwrap();
        let model = TensorFile::open(&input).unwrap();
        assert_eq!(whole.entries().len(), model.entries().len(), "{prefix}");
    }
}

#[test]
fn our_merge_has_the_bytes_llama_gguf_split_wrote() {
    let dir = tempfile::tempdir().unwrap();
    let record = record();
    // The committed parts, and the parts of every other run as we write them (byte for byte
    // the tool's, as the test above checks), merged into one file each.
    for (split, merge) in record["splits"].as_array().unwrap().iter().zip(record["merges"].as_array().unwrap()) {
        let prefix = split["output"].as_str().unwrap();
        let first = if prefix == "model" {
            committed_parts()[0].clone()
        } else {
            let job = split_job(
                &fixture(split["input"].as_str().unwrap()),
                &dir.path().join(format!("{prefix}.gguf")),
                split["args"].as_array().unwrap(),
            );
            job.run(&mut |_| {}).unwrap().sharded.unwrap().files[0].clone()
        };
        assert_eq!(first.file_name().unwrap().to_str(), merge["input"].as_str(), "{prefix}");
        let merged = dir.path().join(format!("{prefix}.merged.gguf"));
        ConvertJob::new([&first], &merged).run(&mut |_| {}).unwrap();
        let bytes = std::fs::read(&merged).unwrap();
        assert_eq!(sha256(&bytes), merge["sha256"].as_str().unwrap(), "{prefix}: merged");
        // The merged file is no split: it opens alone, split.count 0 and last.
        let file = TensorFile::open(&merged).unwrap();
        assert!(!file.is_set(), "{prefix}");
        assert_eq!(file.summary().metadata.last(), Some(&("split.count".to_string(), u16v(0))));
    }
}

// --- parts that do not fit together --------------------------------------------------------

/// The committed parts copied into a fresh folder.
fn copied_parts(dir: &Path) -> Vec<PathBuf> {
    committed_parts()
        .iter()
        .map(|p| {
            let to = dir.join(p.file_name().unwrap());
            std::fs::copy(p, &to).unwrap();
            to
        })
        .collect()
}

#[test]
fn a_missing_part_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let parts = copied_parts(dir.path());
    std::fs::remove_file(&parts[2]).unwrap();
    for opened in [&parts[0], &parts[3]] {
        let err = open_err(opened);
        assert_rule(&err, Rule::MissingFile, &["model-00003-of-00004.gguf", "part 3 of 4"]);
    }
}

#[test]
fn of_several_missing_parts_the_first_is_named_every_time() {
    // The parts open side by side; the error must not depend on which failed first in time.
    let dir = tempfile::tempdir().unwrap();
    let parts = copied_parts(dir.path());
    std::fs::remove_file(&parts[1]).unwrap();
    std::fs::remove_file(&parts[2]).unwrap();
    for _ in 0..20 {
        let err = open_err(&parts[3]);
        assert_rule(&err, Rule::MissingFile, &["model-00002-of-00004.gguf", "part 2 of 4"]);
    }
}

#[test]
fn a_part_named_otherwise_cannot_find_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let renamed = dir.path().join("renamed.gguf");
    std::fs::copy(&committed_parts()[1], &renamed).unwrap();
    assert_rule(&open_err(&renamed), Rule::ShardMismatch, &["renamed.gguf", "NAME-00002-of-00004.gguf"]);
    // As one file of a list it opens alone.
    assert_eq!(OpenOptions::new().open_set(&[&renamed]).unwrap().entries().len(), 3);
}

#[test]
fn a_part_that_says_another_number_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let parts = copied_parts(dir.path());
    // Part 2's bytes under part 3's name: split.no 1 where 2 is expected.
    std::fs::copy(&parts[1], &parts[2]).unwrap();
    let err = open_err(&parts[0]);
    assert_rule(&err, Rule::ShardMismatch, &["model-00003-of-00004.gguf", "says it is part 2 of 4"]);
}

#[test]
fn parts_that_disagree_on_the_count_or_the_tensors_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Part 2 says it is part 2 of 3.
    part(&d.join("m-00001-of-00002.gguf"), &["a"], keys(0, 2, 2));
    part(&d.join("m-00002-of-00002.gguf"), &["b"], keys(1, 3, 2));
    assert_rule(&open_err(&d.join("m-00001-of-00002.gguf")), Rule::ShardMismatch, &["m-00002-of-00002.gguf", "of 3"]);
    // The first part counts 3 tensors; the parts hold 2.
    part(&d.join("t-00001-of-00002.gguf"), &["a"], keys(0, 2, 3));
    part(&d.join("t-00002-of-00002.gguf"), &["b"], keys(1, 2, 3));
    assert_rule(
        &open_err(&d.join("t-00002-of-00002.gguf")),
        Rule::ShardMismatch,
        &["t-00001-of-00002.gguf", "3 tensors"],
    );
    // The first part has no tensor count.
    part(&d.join("n-00001-of-00002.gguf"), &["a"], vec![("split.no", u16v(0)), ("split.count", u16v(2))]);
    part(&d.join("n-00002-of-00002.gguf"), &["b"], keys(1, 2, 2));
    assert_rule(&open_err(&d.join("n-00002-of-00002.gguf")), Rule::MissingField, &["n-00001-of-00002.gguf"]);
    // A name in two parts.
    part(&d.join("u-00001-of-00002.gguf"), &["a", "x"], keys(0, 2, 4));
    part(&d.join("u-00002-of-00002.gguf"), &["x", "b"], keys(1, 2, 4));
    let err = open_err(&d.join("u-00001-of-00002.gguf"));
    assert_rule(&err, Rule::DuplicateName, &["u-00001-of-00002.gguf", "u-00002-of-00002.gguf", "\"x\""]);
    // Split keys of other types than llama.cpp reads.
    part(&d.join("w-00001-of-00002.gguf"), &["a"], vec![("split.count", MetaValue::Number(Number::U32(2)))]);
    assert_rule(&open_err(&d.join("w-00001-of-00002.gguf")), Rule::BadMetadata, &["split.count", "u16"]);
    // A part that is not GGUF.
    part(&d.join("s-00001-of-00002.gguf"), &["a"], keys(0, 2, 2));
    let st = common::write(
        Format::Safetensors,
        &[common::dense(TensorInfo::dense("b", DType::Float32, vec![4]), 1)],
        &WriteOptions::default(),
    );
    std::fs::write(d.join("s-00002-of-00002.gguf"), st).unwrap();
    assert_rule(
        &open_err(&d.join("s-00001-of-00002.gguf")),
        Rule::ShardMismatch,
        &["s-00002-of-00002.gguf", "not GGUF"],
    );
    // A count below 2 is a whole model, whatever the name (a merged file keeps split.count 0).
    part(&d.join("one-00001-of-00001.gguf"), &["a"], keys(0, 1, 7));
    assert_eq!(TensorFile::open(d.join("one-00001-of-00001.gguf")).unwrap().entries().len(), 1);
}

// --- writing -------------------------------------------------------------------------------

/// A small model as a GGUF file: float32 tensors, one of shape (1, 8), a scalar.
fn model(dir: &Path) -> PathBuf {
    let path = dir.join("src.gguf");
    let shapes: [(&str, Vec<u64>); 6] =
        [("a", vec![16, 8]), ("b", vec![1, 8]), ("c", vec![]), ("d", vec![40]), ("e", vec![3, 1]), ("f", vec![5])];
    let tensors: Vec<_> = shapes
        .into_iter()
        .enumerate()
        .map(|(i, (n, shape))| common::dense(TensorInfo::dense(n, DType::Float32, shape), i as u64))
        .collect();
    let metadata = vec![("general.name".to_string(), MetaValue::Text("m".into()))];
    std::fs::write(&path, common::write(Format::Gguf, &tensors, &WriteOptions { metadata, ..Default::default() }))
        .unwrap();
    path
}

#[test]
fn a_split_of_our_own_reads_back_and_merges_back() {
    let dir = tempfile::tempdir().unwrap();
    let src = model(dir.path());
    let out = dir.path().join("out").join("m.gguf");
    std::fs::create_dir(out.parent().unwrap()).unwrap();
    let mut job = ConvertJob::new([&src], &out);
    job.split_max_tensors = Some(2);
    job.no_tensor_first_split = true;
    let files = job.run(&mut |_| {}).unwrap().sharded.unwrap().files;
    let names: Vec<_> = files.iter().map(|f| f.file_name().unwrap().to_str().unwrap().to_string()).collect();
    assert_eq!(
        names,
        ["m-00001-of-00004.gguf", "m-00002-of-00004.gguf", "m-00003-of-00004.gguf", "m-00004-of-00004.gguf"]
    );
    let first = TensorFile::open(&files[0]).unwrap();
    let alone = OpenOptions::new().open_set(&[&files[0]]).unwrap();
    assert!(alone.entries().is_empty(), "the first part holds the metadata alone");
    let source = TensorFile::open(&src).unwrap();
    let digests = |f: &TensorFile| tensors(f).into_iter().map(|(n, _, s, d)| (n, s, d)).collect::<Vec<_>>();
    let want: Vec<_> = digests(&source).into_iter().map(|(n, s, d)| (n, ggml_shape(&s), d)).collect();
    assert_eq!(digests(&first), want);
    // Listing every part reads the model once.
    let listed = tensorfile::OpenOptions::new().open_merged(&files).unwrap();
    assert_eq!(digests(&listed), want);
    let dotted = files[1].parent().unwrap().join(".").join(files[1].file_name().unwrap());
    assert_eq!(digests(&tensorfile::OpenOptions::new().open_merged(&[files[3].clone(), dotted]).unwrap()), want);
    // Merged, then split again the same way: the same parts.
    let merged = dir.path().join("merged.gguf");
    ConvertJob::new([&files[2]], &merged).run(&mut |_| {}).unwrap();
    let again = dir.path().join("again").join("m.gguf");
    std::fs::create_dir(again.parent().unwrap()).unwrap();
    let mut job = ConvertJob::new([&merged], &again);
    job.split_max_tensors = Some(2);
    job.no_tensor_first_split = true;
    let files_again = job.run(&mut |_| {}).unwrap().sharded.unwrap().files;
    for (a, b) in files.iter().zip(&files_again) {
        assert_eq!(std::fs::read(a).unwrap(), std::fs::read(b).unwrap(), "{}", b.display());
    }
    // A split of another count replaces the parts of the earlier one.
    let mut job = ConvertJob::new([&src], &out);
    job.max_shard_size = Some(1 << 30);
    let done = job.run(&mut |_| {}).unwrap();
    let sharded = done.sharded.unwrap();
    assert_eq!(sharded.files, [out.with_file_name("m-00001-of-00001.gguf")]);
    assert_eq!(sharded.removed.len(), 4);
    // One part of one: split.count 1 is a whole model.
    assert!(!TensorFile::open(&sharded.files[0]).unwrap().is_set());
}

#[test]
fn split_options_that_do_not_fit_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let src = model(dir.path());
    let run = |out: &str, f: &dyn Fn(&mut ConvertJob)| {
        let mut job = ConvertJob::new([&src], dir.path().join(out));
        f(&mut job);
        job.run(&mut |_| {}).err().map(|e| e.to_string())
    };
    let err = run("x.safetensors", &|j| j.split_max_tensors = Some(2)).unwrap();
    assert!(err.contains("split GGUF"), "{err}");
    let err = run("x.gguf", &|j| {
        j.split_max_tensors = Some(2);
        j.max_shard_size = Some(100);
    })
    .unwrap();
    assert!(err.contains("not both"), "{err}");
    assert!(run("x.gguf", &|j| j.no_tensor_first_split = true).unwrap().contains("give a size"));
    assert!(run("x.gguf", &|j| j.split_max_tensors = Some(0)).unwrap().contains("at least one tensor"));
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "nothing written");
}

#[test]
fn a_split_model_converts_to_other_formats() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("model.safetensors");
    let done = ConvertJob::new([&committed_parts()[1]], &out).run(&mut |_| {}).unwrap();
    // safetensors keeps text metadata only: the split keys are among those left out.
    assert!(done.report.dropped_metadata.iter().any(|k| k == "split.count"));
    // Every tensor of every part; block types dequantized.
    assert_eq!(TensorFile::open(&out).unwrap().entries().len(), 11);
}
