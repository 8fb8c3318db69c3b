//! `tensorfile diff`: changed values with the largest difference, the metrics, and --atol/--rtol
//! deciding the exit status against numpy's records (`tests/fixtures/diff/`). Run on small files made in a
//! temporary folder.

use crate::common::*;
use tensorfile::{DType, WriteOptions};

#[test]
fn diff_reports_changed_values_with_the_largest_difference() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.zt"), dir.path().join("b.safetensors"));
    let keep = dense("keep", DType::Int32, &[1], vec![1, 0, 0, 0]);
    write(
        &a,
        &[
            dense("w", DType::Float32, &[4], f32s(&[1.0, 2.0, 3.0, 4.0])),
            keep.clone(),
            dense("old", DType::UInt8, &[1], vec![0]),
        ],
        &WriteOptions::default(),
    );
    write(
        &b,
        &[
            dense("w", DType::Float32, &[4], f32s(&[1.0, 2.25, 3.0, 3.5])),
            keep,
            dense("new", DType::UInt8, &[1], vec![0]),
        ],
        &WriteOptions::default(),
    );

    let o = tensorfile(&[&"diff", &a, &b]);
    assert_eq!(code(&o), 1);
    let text = stdout(&o);
    assert!(text.contains("w: 2 of 4 elements differ (first at element 1), max abs difference 0.5"), "{text}");
    assert!(text.contains("only in") && text.contains(": old") && text.contains(": new"), "{text}");

    let j = json_of(&stdout(&tensorfile(&[&"diff", &a, &b, &"--json"])));
    assert_eq!(j["same"], false);
    assert_eq!(j["identical"], 1);
    assert_eq!(j["only_in_a"], serde_json::json!(["old"]));
    assert_eq!(j["only_in_b"], serde_json::json!(["new"]));
    let change = &j["changed"][0]["changes"][0];
    assert_eq!((change["what"].as_str(), change["differing"].as_u64()), (Some("values"), Some(2)));
    assert_eq!(change["max_abs_diff"], 0.5);
}

fn diff_fixture(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/diff").join(name)
}

/// The tensors numpy found over tolerance, by name, in `tests/fixtures/diff/records.json`.
fn numpy_over(a: &str, atol: f64, rtol: f64) -> Vec<(String, u64)> {
    let records = json_of(&std::fs::read_to_string(diff_fixture("records.json")).unwrap());
    let pair = records["pairs"].as_array().unwrap().iter().find(|p| p["a"] == a).unwrap();
    let run = pair["runs"].as_array().unwrap().iter().find(|r| r["atol"] == atol && r["rtol"] == rtol).unwrap();
    run["tensors"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v["over_tolerance"].as_u64().unwrap()))
        .collect()
}

#[test]
fn tolerances_decide_the_exit_status() {
    for (a, b) in [("bf16.a.safetensors", "bf16.b.safetensors"), ("quant.a.gguf", "quant.b.safetensors")] {
        let (fa, fb) = (diff_fixture(a), diff_fixture(b));
        // Without tolerances, any difference fails: these pairs differ in dtype or layout.
        assert_eq!(code(&tensorfile(&[&"diff", &fa, &fb])), 1, "{a}");
        for (atol, rtol) in [(1e-3, 1e-3), (0.05, 0.01)] {
            let over = numpy_over(a, atol, rtol);
            let (atol_s, rtol_s) = (atol.to_string(), rtol.to_string());
            let o = tensorfile(&[&"diff", &fa, &fb, &"--atol", &atol_s, &"--rtol", &rtol_s]);
            let fails = over.iter().any(|(_, n)| *n > 0);
            assert_eq!(code(&o), i32::from(fails), "{a} atol {atol} rtol {rtol}: {}", stdout(&o));
            let text = stdout(&o);
            for (name, n) in &over {
                assert!(text.contains(&format!("{name}: max abs ")), "{text}");
                assert!(
                    text.lines().any(|l| l.starts_with(&format!("{name}: ")) && l.contains(&format!(" over tol {n}/"))),
                    "{text}"
                );
            }
            let j =
                json_of(&stdout(&tensorfile(&[&"diff", &fa, &fb, &"--atol", &atol_s, &"--rtol", &rtol_s, &"--json"])));
            assert_eq!(j["close"], !fails);
            assert_eq!(j["tolerance"], serde_json::json!({ "atol": atol, "rtol": rtol }));
            for t in j["changed"].as_array().unwrap() {
                let m = &t["metrics"];
                let want = over.iter().find(|(n, _)| t["name"] == n.as_str()).unwrap().1;
                assert_eq!(m["over_tolerance"].as_u64(), Some(want), "{t}");
                for field in ["max_abs_diff", "max_rel_diff", "cosine", "nmse", "compared"] {
                    assert!(m[field].is_number(), "{field} in {t}");
                }
            }
        }
    }
    // Within tolerance, a dtype change alone passes, and says so.
    let o = tensorfile(&[
        &"diff",
        &diff_fixture("bf16.a.safetensors"),
        &diff_fixture("bf16.b.safetensors"),
        &"--atol",
        &"0.05",
        &"--rtol",
        &"0.01",
    ]);
    assert!(stdout(&o).contains("big: dtype bfloat16 -> float32"), "{}", stdout(&o));
    assert!(stdout(&o).contains("close: 0 identical, 2 changed within atol 0.05 rtol 0.01"), "{}", stdout(&o));
}

#[test]
fn tolerances_do_not_excuse_names_shapes_or_bad_values() {
    let dir = tempfile::tempdir().unwrap();
    let [a, b, c, d] = ["a.safetensors", "b.safetensors", "c.safetensors", "d.zt"].map(|n| dir.path().join(n));
    write(&a, &[dense("w", DType::Float32, &[2, 2], f32s(&[1.0, 2.0, 3.0, 4.0]))], &WriteOptions::default());
    write(&b, &[dense("w", DType::Float32, &[4], f32s(&[1.0, 2.0, 3.0, 4.0]))], &WriteOptions::default());
    write(&c, &[dense("v", DType::Float32, &[2, 2], f32s(&[1.0, 2.0, 3.0, 4.0]))], &WriteOptions::default());
    write(&d, &[dense("w", DType::Float32, &[2, 2], f32s(&[1.0, 2.0, 3.0, f32::NAN]))], &WriteOptions::default());
    let wide = ["--atol", "1000", "--rtol", "1"];
    let run = |x: &std::path::PathBuf, y: &std::path::PathBuf| {
        let mut args: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![&"diff", x, y];
        args.extend(wide.iter().map(|s| s as &dyn AsRef<std::ffi::OsStr>));
        tensorfile(&args)
    };
    assert_eq!(code(&run(&a, &b)), 1, "shapes differ");
    assert_eq!(code(&run(&a, &c)), 1, "names differ");
    let o = run(&a, &d);
    assert_eq!(code(&o), 1, "a NaN facing a number is never close: {}", stdout(&o));
    assert!(stdout(&o).contains("w: max abs 0 max rel 0 cos 1 nmse 0 over tol 1/4 (1 against NaN)"), "{}", stdout(&o));
    assert_eq!(code(&run(&a, &a)), 0);
    for bad in ["--atol=-1", "--rtol=nan", "--atol=x"] {
        let o = tensorfile(&[&"diff", &a, &a, &bad]);
        assert_eq!(code(&o), 2, "a usage error");
        assert!(stderr(&o).contains("is not a finite number of at least 0"), "{}", stderr(&o));
    }
}

#[test]
fn a_sharded_checkpoint_against_a_single_file() {
    let sharded = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/sharded/mobilenet/model.safetensors.index.json");
    let file = tensorfile::TensorFile::open(&sharded).unwrap();
    let mut tensors = Vec::new();
    let mut changed = None;
    for (i, entry) in file.entries().iter().enumerate() {
        let info = entry.info().clone();
        let mut bytes = file.read_index(i).unwrap().as_dense().unwrap().to_vec();
        if changed.is_none() && info.dtype() == DType::Float32 && bytes.len() >= 4 * 1000 {
            // Every seventh value 1e-4 larger (relative): over rtol 1e-6 unless it is 0.
            let mut over = 0;
            for k in (0..bytes.len() / 4).step_by(7) {
                let v = f32::from_le_bytes(bytes[4 * k..4 * k + 4].try_into().unwrap());
                let w = v * (1.0 + 1e-4);
                over += u64::from(w != v);
                bytes[4 * k..4 * k + 4].copy_from_slice(&w.to_le_bytes());
            }
            changed = Some((info.name().to_string(), over));
        }
        tensors.push((info, tensorfile::TensorData::dense(tensorfile::io::Bytes::from_vec(bytes))));
    }
    let (name, over) = changed.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let single = dir.path().join("single.safetensors");
    write(&single, &tensors, &WriteOptions::default());
    assert_eq!(code(&tensorfile(&[&"diff", &sharded, &single])), 1);
    assert_eq!(code(&tensorfile(&[&"diff", &sharded, &single, &"--rtol", &"1e-3"])), 0);
    let o = tensorfile(&[&"diff", &sharded, &single, &"--rtol", &"1e-6", &"--atol", &"0", &"--json"]);
    assert_eq!(code(&o), 1);
    let j = json_of(&stdout(&o));
    assert_eq!(j["identical"], 313);
    assert_eq!(j["changed"][0]["name"], name.as_str());
    assert_eq!(j["changed"][0]["metrics"]["over_tolerance"], over);
    let max_rel = j["changed"][0]["metrics"]["max_rel_diff"].as_f64().unwrap();
    assert!(max_rel > 0.9e-4 && max_rel < 1.1e-4, "{max_rel}");
    assert_eq!(code(&tensorfile(&[&"diff", &single, &single])), 0);
}
