//! `tensorfile convert IN... OUT --include/--exclude/--rename`: tensors picked and renamed on
//! the committed sharded checkpoint, inputs of different formats merged, the collisions and
//! bad patterns refused with the right exit code, and the `--json` report. Written tensors
//! are compared byte for byte with the source's (read with the library).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::common::*;
use tensorfile::{DType, TensorFile, WriteOptions};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures")
}

fn index() -> PathBuf {
    fixtures().join("sharded/mobilenet/model.safetensors.index.json")
}

/// Every entry of the file at `path`: name -> (dtype, shape, bytes).
fn contents(path: &Path) -> BTreeMap<String, (DType, Vec<u64>, Vec<u8>)> {
    let file = TensorFile::open(path).unwrap();
    let entries = file.entries().iter().enumerate();
    entries
        .map(|(i, e)| {
            let bytes = file.read_verified(i).unwrap().as_dense().unwrap().to_vec();
            (e.info().name().to_string(), (e.info().dtype(), e.info().shape().to_vec(), bytes))
        })
        .collect()
}

#[test]
fn filters_and_renames_on_a_sharded_checkpoint_with_a_json_report() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("model.safetensors");
    let report = json_of(&ok(&[
        &"convert",
        &index(),
        &out,
        &"--include",
        &"features.1?.*",
        &"--include",
        &"classifier.*",
        &"--exclude",
        &"*.running_*",
        &"--exclude",
        &"*num_batches_tracked",
        &"--rename",
        &r"^features\.(\d+)=block$1",
        &"--rename",
        &r"^classifier\.1\.=head.",
        &"--max-shard-size",
        &"200KB",
        &"--json",
    ]));
    let source = contents(&index());
    // Worked out by hand: features.10 to features.18 and the classifier, less the running
    // statistics and counters.
    let kept: Vec<&String> = source
        .keys()
        .filter(|n| {
            let block = n.strip_prefix("features.").and_then(|r| r.split_once('.')).map(|(b, _)| b);
            block.is_some_and(|b| b.len() == 2 && b.starts_with('1')) || n.starts_with("classifier.")
        })
        .filter(|n| !n.contains(".running_") && !n.ends_with("num_batches_tracked"))
        .collect();
    let new_name = |n: &str| match n.strip_prefix("features.") {
        Some(rest) => format!("block{rest}"),
        None => n.replacen("classifier.1.", "head.", 1),
    };
    assert_eq!(report["tensors"].as_u64(), Some(kept.len() as u64));
    assert_eq!(report["filtered_out"].as_u64(), Some((source.len() - kept.len()) as u64));
    assert_eq!(report["input"], index().display().to_string());
    assert_eq!(report["inputs"], serde_json::json!([index().display().to_string()]));
    let renamed = report["renamed"].as_array().unwrap();
    assert_eq!(renamed.len(), kept.len(), "every kept name changes");
    for r in renamed {
        let from = r["from"].as_str().unwrap();
        assert_eq!(r["to"].as_str().unwrap(), new_name(from), "{r}");
    }
    assert!(report["files"].as_array().unwrap().len() > 1, "{report}");
    let index = PathBuf::from(report["index"].as_str().unwrap());
    let written = contents(&index);
    assert_eq!(written.len(), kept.len());
    for old in kept {
        assert_eq!(written.get(&new_name(old)), source.get(old), "{old}");
    }

    let text = ok(&[
        &"convert",
        &fixtures().join("sharded/mobilenet"),
        &dir.path().join("c.zt"),
        &"--include",
        &"classifier.*",
        &"--rename",
        &"^c=C",
    ]);
    assert!(
        text.contains("2 tensors") && text.contains("2 renamed") && text.contains("left out by the filters"),
        "{text}"
    );
    assert_eq!(
        contents(&dir.path().join("c.zt")).keys().collect::<Vec<_>>(),
        ["Classifier.1.bias", "Classifier.1.weight"]
    );
}

#[test]
fn inputs_of_two_formats_merge_into_one_output() {
    let dir = tempfile::tempdir().unwrap();
    let extra = dir.path().join("extra.safetensors");
    write(&extra, &sample_tensors(), &WriteOptions::default());
    let pt = fixtures().join("pytorch/checkpoint.pt");
    let out = dir.path().join("merged.zt");
    let text = ok(&[&"convert", &extra, &pt, &out]);
    assert!(text.contains("from 2 files merged"), "{text}");
    let mut source = contents(&extra);
    source.extend(contents(&pt));
    assert_eq!(contents(&out), source);

    // Options may stand between the paths.
    let report = json_of(&ok(&[&"convert", &extra, &"--exclude", &"optimizer.*", &pt, &out, &"--json"]));
    let inputs = [extra.display().to_string(), pt.display().to_string()];
    assert_eq!(report["inputs"], serde_json::json!(inputs));
    assert!(report.get("input").is_none(), "{report}");
    let kept: BTreeMap<_, _> = source.into_iter().filter(|(n, _)| !n.starts_with("optimizer.")).collect();
    assert_eq!(report["tensors"].as_u64(), Some(kept.len() as u64));
    assert_eq!(contents(&out), kept);
}

#[test]
fn collisions_bad_patterns_and_empty_selections_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.safetensors"), dir.path().join("b.zt"));
    let w = |v: f32| dense("shared", DType::Float32, &[1], f32s(&[v]));
    write(&a, &[w(1.0), dense("x", DType::Float32, &[1], f32s(&[2.0]))], &WriteOptions::default());
    write(&b, &[w(3.0)], &WriteOptions::default());
    let out = dir.path().join("out.safetensors");

    let o = tensorfile(&[&"convert", &a, &b, &out]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    for m in ["a.safetensors", "b.zt", "\"shared\"", "[duplicate-name]"] {
        assert!(stderr(&o).contains(m), "{m} not in {}", stderr(&o));
    }
    let o = tensorfile(&[&"convert", &a, &out, &"--rename", &".*=same"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    for m in ["\"shared\"", "\"x\"", "\"same\""] {
        assert!(stderr(&o).contains(m), "{m} not in {}", stderr(&o));
    }
    for (args, says) in [
        (vec!["--include", "nothing"], "keep none"),
        (vec!["--include", "[x"], "bad glob \"[x\""),
        (vec!["--rename", "(=x"], "bad rename regex \"(\""),
        (vec!["--rename", "no-equals"], "REGEX=REPLACEMENT"),
        (vec!["--data", "x.ptd"], "--data goes with a single input"),
    ] {
        let mut all: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![&"convert", &a];
        if args[0] == "--data" {
            all.push(&b);
        }
        all.push(&out);
        all.extend(args.iter().map(|s| s as &dyn AsRef<std::ffi::OsStr>));
        let o = tensorfile(&all);
        assert_eq!(code(&o), 2, "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(says), "{args:?}: {}", stderr(&o));
    }
    let o = tensorfile(&[&"convert", &a]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("then the file to write"), "{}", stderr(&o));
    assert!(!out.exists());
}

#[test]
fn an_unreadable_entry_left_out_by_a_filter_is_no_obstacle() {
    let dir = tempfile::tempdir().unwrap();
    let npz = fixtures().join("numpy/object.npz");
    let out = dir.path().join("out.safetensors");
    assert_eq!(code(&tensorfile(&[&"convert", &npz, &out])), 1);
    let report = json_of(&ok(&[&"convert", &npz, &out, &"--exclude", &"objects", &"--json"]));
    assert_eq!((report["tensors"].as_u64(), report["filtered_out"].as_u64()), (Some(2), Some(1)));
    assert_eq!(report["skipped"], serde_json::json!([]));
    assert_eq!(contents(&out), contents(&npz));
}
