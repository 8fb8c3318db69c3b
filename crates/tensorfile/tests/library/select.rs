//! Selecting, renaming and merging while converting: `--include`/`--exclude` globs and
//! `--rename` regexes on the committed sharded checkpoint (huggingface_hub's, opened by its
//! index) into one file and into shards; inputs of different formats merged into one file; the
//! collisions (a name in two inputs, two names renamed to one) refused naming both; an
//! unreadable entry left out by a filter no obstacle. Every written tensor is compared byte
//! for byte with the source's.

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use tensorfile::convert::{ConvertOptions, Selection, convert_file};
use tensorfile::model::{MetaValue, TensorData};
use tensorfile::shards::convert_to_shards;
use tensorfile::{DType, ErrorKind, Format, Rule, TensorFile, TensorInfo, WriteOptions};

fn fixtures() -> PathBuf {
    common::fixtures_dir()
}

fn mobilenet() -> PathBuf {
    fixtures().join("sharded/mobilenet/model.safetensors.index.json")
}

/// Every entry of `file`: name -> (dtype, shape, bytes).
fn contents(file: &TensorFile) -> BTreeMap<String, (DType, Vec<u64>, Vec<u8>)> {
    let entries = file.entries().iter().enumerate();
    entries
        .map(|(i, e)| {
            let bytes = file.read_verified(i).unwrap().as_dense().expect("dense").to_vec();
            (e.info().name().to_string(), (e.info().dtype(), e.info().shape().to_vec(), bytes))
        })
        .collect()
}

fn select(include: &[&str], exclude: &[&str], rename: &[(&str, &str)]) -> ConvertOptions {
    ConvertOptions { select: Selection::new(include, exclude, rename).unwrap(), ..ConvertOptions::default() }
}

fn write(path: &Path, tensors: &[(TensorInfo, TensorData)], options: &WriteOptions) {
    let format = Format::from_path(path).unwrap();
    std::fs::write(path, common::write(format, tensors, options)).unwrap();
}

fn f32_tensor(name: &str, shape: &[u64], seed: u64) -> (TensorInfo, TensorData) {
    common::dense(TensorInfo::dense(name, DType::Float32, shape.to_vec()), seed)
}

/// The names `features.*.conv.0.*` keeps and `*num_batches_tracked` does not, and the name
/// each takes under the renames of [`RENAMES`], worked out by hand.
fn expected_selection(names: impl Iterator<Item = String>) -> BTreeMap<String, String> {
    names
        .filter(|n| n.starts_with("features.") && n["features.".len()..].contains(".conv.0."))
        .filter(|n| !n.ends_with("num_batches_tracked"))
        .map(|n| {
            let (block, tail) = n["features.".len()..].split_once('.').unwrap();
            let renamed = format!("blocks.{block}.{}", tail.replacen("conv.0", "c0", 1));
            (n, renamed)
        })
        .collect()
}

const RENAMES: [(&str, &str); 2] = [(r"^features\.(\d+)\.", "blocks.${1}."), (r"conv\.0", "c0")];

#[test]
fn filters_and_renames_apply_to_a_sharded_checkpoint_into_one_file_and_into_shards() {
    let src = TensorFile::open(mobilenet()).unwrap();
    assert!(src.is_set());
    let source = contents(&src);
    let expected = expected_selection(source.keys().cloned());
    assert!(expected.len() > 20 && expected.len() < source.len() / 2, "{}", expected.len());
    let options = select(&["features.*.conv.0.*"], &["*num_batches_tracked"], &RENAMES);

    let dir = tempfile::tempdir().unwrap();
    let one = dir.path().join("one.zt");
    let report = convert_file(&src, &one, &options, &mut |_| {}).unwrap();
    assert_eq!(report.tensors, expected.len());
    assert_eq!(report.filtered_out, source.len() - expected.len());
    let renamed: BTreeMap<String, String> = report.renamed.iter().cloned().collect();
    assert_eq!(renamed, expected, "every kept tensor renamed, as worked out by hand");

    let sharded = dir.path().join("shards/model.safetensors");
    std::fs::create_dir(dir.path().join("shards")).unwrap();
    let report = convert_to_shards(&src, &sharded, 40_000, &options, &mut |_| {}).unwrap();
    assert!(report.files.len() > 2, "{:?}", report.files);
    assert_eq!(report.conversion.renamed.len(), expected.len());
    let index = report.index.unwrap();
    let weight_map: serde_json::Value = serde_json::from_slice(&std::fs::read(&index).unwrap()).unwrap();
    let mut listed: Vec<&str> = weight_map["weight_map"].as_object().unwrap().keys().map(String::as_str).collect();
    listed.sort_unstable();
    let mut wanted: Vec<&str> = expected.values().map(String::as_str).collect();
    wanted.sort_unstable();
    assert_eq!(listed, wanted, "the index lists the new names");

    for written in [TensorFile::open(&one).unwrap(), TensorFile::open(&index).unwrap()] {
        let got = contents(&written);
        assert_eq!(got.len(), expected.len());
        for (old, new) in &expected {
            assert_eq!(got.get(new), source.get(old), "{new} holds {old}'s dtype, shape and bytes");
        }
    }
}

#[test]
fn a_safetensors_checkpoint_and_a_pt_file_merge_into_one_zt_and_into_shards() {
    let pt = fixtures().join("pytorch/checkpoint.pt");
    let set = TensorFile::open(mobilenet()).unwrap();
    let torch = TensorFile::open(&pt).unwrap();
    let merged = tensorfile::OpenOptions::new().open_merged(&[mobilenet(), pt.clone()]).unwrap();
    assert_eq!(merged.entries().len(), set.entries().len() + torch.entries().len());
    assert!(merged.is_set());
    // In input order, each entry read from its own file.
    let names: Vec<&str> = merged.entries().iter().map(|e| e.info().name()).collect();
    let first: Vec<&str> = set.entries().iter().map(|e| e.info().name()).collect();
    assert_eq!(names[..first.len()], first[..]);
    let k = first.len();
    assert_eq!(merged.shard_of(0).unwrap().file_name(), set.shard_of(0).unwrap().file_name());
    assert_eq!(merged.shard_of(k), Some(pt.as_path()));
    let details = merged.summary().details;
    let Some((_, MetaValue::Array(inputs))) = details.iter().find(|(key, _)| key == "merged") else {
        panic!("{details:?}")
    };
    assert_eq!(inputs.len(), 2);
    assert!(matches!(&inputs[1], MetaValue::Text(t) if t.contains("checkpoint.pt") && t.contains("pt")), "{inputs:?}");

    let mut source = contents(&set);
    source.extend(contents(&torch));
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("merged.zt");
    let report = convert_file(&merged, &out, &ConvertOptions::default(), &mut |_| {}).unwrap();
    assert_eq!(report.tensors, source.len());
    assert_eq!(contents(&TensorFile::open(&out).unwrap()), source);

    // Merged input into shards, with a filter across both inputs.
    let options = select(&["features.18.*", "model.*"], &[], &[]);
    let dest = dir.path().join("model.safetensors");
    let report = convert_to_shards(&merged, &dest, 500_000, &options, &mut |_| {}).unwrap();
    let written = contents(&TensorFile::open(report.index.unwrap()).unwrap());
    let kept: BTreeMap<_, _> =
        source.into_iter().filter(|(n, _)| n.starts_with("features.18.") || n.starts_with("model.")).collect();
    assert!(kept.keys().any(|n| n.starts_with("model.")) && kept.keys().any(|n| n.starts_with("features.")));
    assert_eq!(written, kept);
}

#[test]
fn file_metadata_merges_with_the_first_inputs_value_winning() {
    let dir = tempfile::tempdir().unwrap();
    let meta = |pairs: &[(&str, &str)]| WriteOptions {
        metadata: pairs.iter().map(|(k, v)| (k.to_string(), MetaValue::Text(v.to_string()))).collect(),
        ..WriteOptions::default()
    };
    let (a, b) = (dir.path().join("a.safetensors"), dir.path().join("b.safetensors"));
    write(&a, &[f32_tensor("x", &[3], 1)], &meta(&[("format", "pt"), ("from", "a")]));
    write(&b, &[f32_tensor("y", &[2], 2)], &meta(&[("from", "b"), ("only_b", "1")]));
    let merged = tensorfile::OpenOptions::new().open_merged(&[&a, &b]).unwrap();
    let out = dir.path().join("out.safetensors");
    convert_file(&merged, &out, &ConvertOptions::default(), &mut |_| {}).unwrap();
    let text = |v: &str| MetaValue::Text(v.to_string());
    let got = TensorFile::open(&out).unwrap().summary().metadata;
    assert_eq!(got, vec![("format".into(), text("pt")), ("from".into(), text("a")), ("only_b".into(), text("1"))]);
}

#[test]
fn a_name_in_two_inputs_is_refused_naming_both_files() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("first.safetensors"), dir.path().join("second.zt"));
    write(&a, &[f32_tensor("shared.w", &[2], 1), f32_tensor("a", &[2], 2)], &WriteOptions::default());
    write(&b, &[f32_tensor("b", &[2], 3), f32_tensor("shared.w", &[2], 4)], &WriteOptions::default());
    let err = tensorfile::OpenOptions::new().open_merged(&[&a, &b]).err().expect("merged");
    assert_eq!(err.rule(), Some(Rule::DuplicateName), "{err}");
    for m in ["first.safetensors", "second.zt", "\"shared.w\""] {
        assert!(err.to_string().contains(m), "{m} not in: {err}");
    }
    // One input opens as itself; none is a usage error.
    assert!(!tensorfile::OpenOptions::new().open_merged(&[&a]).unwrap().is_set());
    assert!(matches!(
        tensorfile::OpenOptions::new().open_merged::<&Path>(&[]).err().unwrap().kind(),
        ErrorKind::Usage(_)
    ));
}

#[test]
fn two_names_renamed_to_one_are_refused_naming_both_and_the_new_one() {
    let src = TensorFile::open(mobilenet()).unwrap();
    let options = select(&["classifier.*"], &[], &[(r"\.(weight|bias)$", ".param")]);
    let dir = tempfile::tempdir().unwrap();
    let err = convert_file(&src, &dir.path().join("x.zt"), &options, &mut |_| {}).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::Usage(_)), "{err}");
    for m in ["\"classifier.1.weight\"", "\"classifier.1.bias\"", "\"classifier.1.param\""] {
        assert!(err.to_string().contains(m), "{m} not in: {err}");
    }
    assert!(!dir.path().join("x.zt").exists());
    // A rename onto a name kept as it is collides too.
    let options = select(&["classifier.*"], &[], &[(r"bias$", "weight")]);
    let err = convert_file(&src, &dir.path().join("x.zt"), &options, &mut |_| {}).unwrap_err();
    assert!(err.to_string().contains("\"classifier.1.weight\""), "{err}");
}

#[test]
fn a_filter_that_keeps_nothing_and_bad_patterns_are_usage_errors() {
    let src = TensorFile::open(mobilenet()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x.zt");
    let err = convert_file(&src, &out, &select(&["nothing.*"], &[], &[]), &mut |_| {}).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::Usage(_)) && err.to_string().contains("keep none"), "{err}");
    let err = convert_file(&src, &out, &select(&[], &["*"], &[]), &mut |_| {}).unwrap_err();
    assert!(err.to_string().contains("keep none"), "{err}");
    assert!(!out.exists());
    for (include, rename) in [("w[0-", "a"), ("*", "(unclosed")] {
        let err = Selection::new(&[include], &[], &[(rename, "x")]).unwrap_err();
        assert!(matches!(err.kind(), ErrorKind::Usage(_)), "{err}");
        let named = if include == "*" { rename } else { include };
        assert!(err.to_string().contains(named), "{named} not in: {err}");
    }
}

#[test]
fn an_unreadable_entry_left_out_by_a_filter_does_not_fail_the_conversion() {
    // object.npz: two arrays numpy reads, and an object array it refuses without pickle.
    let src = TensorFile::open(fixtures().join("numpy/object.npz")).unwrap();
    assert_eq!(src.unreadable().iter().map(|u| u.name()).collect::<Vec<_>>(), ["objects"]);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x.safetensors");
    let err = convert_file(&src, &out, &ConvertOptions::default(), &mut |_| {}).unwrap_err();
    assert!(err.to_string().contains("objects"), "{err}");
    let source = contents(&src);
    for options in [select(&[], &["obj*"], &[]), select(&["weights", "bias"], &[], &[])] {
        let report = convert_file(&src, &out, &options, &mut |_| {}).unwrap();
        assert_eq!((report.tensors, report.filtered_out, report.skipped.len()), (2, 1, 0));
        assert_eq!(contents(&TensorFile::open(&out).unwrap()), source);
    }
}

#[test]
fn blobs_are_renamed_and_filtered_like_tensors() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("data.ptd");
    let blob = common::dense(TensorInfo::blob("opaque.blob", 37), 7);
    write(&src, &[blob, f32_tensor("w", &[4], 1)], &WriteOptions::default());
    let file = TensorFile::open(&src).unwrap();
    let source = contents(&file);
    let out = dir.path().join("out.ptd");
    let report = convert_file(&file, &out, &select(&[], &[], &[(r"^opaque\.", "kept.")]), &mut |_| {}).unwrap();
    assert_eq!(report.renamed, [("opaque.blob".to_string(), "kept.blob".to_string())]);
    let got = contents(&TensorFile::open(&out).unwrap());
    assert_eq!(got.get("kept.blob"), source.get("opaque.blob"));
    assert_eq!(got.get("w"), source.get("w"));
    let written = TensorFile::open(&out).unwrap();
    assert_eq!(written.entry("kept.blob").unwrap().info().kind(), tensorfile::model::Kind::Blob);
}
