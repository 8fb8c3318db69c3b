//! `compare`'s metrics against numpy's (`tests/fixtures/diff/`, made by
//! `scripts/fixturegen/diff_records.py`): float32 against a perturbed copy, torch's bfloat16
//! against its float32 source, gguf-py's Q8_0 and Q4_K against float16 sources, each under
//! several tolerances. The float metrics agree within 1e-9 relative, the counts exactly.

use serde_json::Value as Json;
use tensorfile::TensorFile;
use tensorfile::compare::{Change, Metrics, Tolerance, compare_with};

use crate::common;

fn records() -> Json {
    let path = common::fixtures_dir().join("diff/records.json");
    let text = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}: run scripts/fixtures", path.display()));
    serde_json::from_slice(&text).unwrap()
}

fn float(v: &Json) -> f64 {
    match v {
        Json::String(s) if s == "inf" => f64::INFINITY,
        v => v.as_f64().unwrap_or_else(|| panic!("not a number: {v}")),
    }
}

fn check(what: &str, got: &Metrics, want: &Json) {
    for (field, value) in [
        ("max_abs_diff", got.max_abs_diff),
        ("max_rel_diff", got.max_rel_diff),
        ("cosine", got.cosine),
        ("nmse", got.nmse),
    ] {
        let w = float(&want[field]);
        let close = if w.is_finite() { (value - w).abs() <= 1e-9 * w.abs().max(f64::MIN_POSITIVE) } else { value == w };
        assert!(close, "{what}: {field} {value} against numpy's {w}");
    }
    assert_eq!(got.compared, want["compared"].as_u64().unwrap(), "{what}: compared");
    assert_eq!(got.over_tolerance, want["over_tolerance"].as_u64().unwrap(), "{what}: over_tolerance");
    assert_eq!(got.nan_mismatches, want["nan_mismatches"].as_u64().unwrap(), "{what}: nan_mismatches");
}

#[test]
fn metrics_agree_with_numpy() {
    let dir = common::fixtures_dir().join("diff");
    let records = records();
    let pairs = records["pairs"].as_array().unwrap();
    assert_eq!(pairs.len(), 3);
    let mut measured = 0;
    for pair in pairs {
        let a = TensorFile::open(dir.join(pair["a"].as_str().unwrap())).unwrap();
        let b = TensorFile::open(dir.join(pair["b"].as_str().unwrap())).unwrap();
        for run in pair["runs"].as_array().unwrap() {
            let tol = Tolerance { atol: run["atol"].as_f64().unwrap(), rtol: run["rtol"].as_f64().unwrap() };
            let diff = compare_with(&a, &b, tol);
            assert!(diff.unreadable.is_empty() && diff.only_in_a.is_empty(), "{diff:?}");
            let tensors = run["tensors"].as_object().unwrap();
            assert_eq!(diff.changed.len(), tensors.len(), "{}: {diff:?}", pair["a"]);
            assert_eq!(diff.identical, pair["identical"].as_array().unwrap().len());
            for t in &diff.changed {
                let what = format!("{} {} (atol {}, rtol {})", pair["a"], t.name, tol.atol, tol.rtol);
                let m = t.metrics.as_ref().unwrap_or_else(|| panic!("{what}: no metrics"));
                check(&what, m, &tensors[&t.name]);
                measured += 1;
            }
            let over = tensors.values().any(|t| t["over_tolerance"].as_u64() != Some(0));
            assert_eq!(diff.is_close(), !over, "{}", pair["a"]);
        }
    }
    assert_eq!(measured, 3 * (4 + 2 + 2));
}

#[test]
fn a_dtype_change_is_reported_with_the_metrics() {
    let dir = common::fixtures_dir().join("diff");
    let a = TensorFile::open(dir.join("bf16.a.safetensors")).unwrap();
    let b = TensorFile::open(dir.join("bf16.b.safetensors")).unwrap();
    let diff = compare_with(&a, &b, Tolerance::default());
    let big = diff.changed.iter().find(|t| t.name == "big").unwrap();
    assert_eq!(big.changes.len(), 1);
    assert!(matches!(big.changes[0], Change::DType { .. }), "{:?}", big.changes);
    let q = TensorFile::open(dir.join("quant.a.gguf")).unwrap();
    let s = TensorFile::open(dir.join("quant.b.safetensors")).unwrap();
    let diff = compare_with(&q, &s, Tolerance::default());
    let q4 = diff.changed.iter().find(|t| t.name == "q4_k").unwrap();
    let text: Vec<String> = q4.changes.iter().map(|c| c.to_string()).collect();
    assert!(text.iter().any(|c| c.starts_with("layout ")), "{text:?}");
}
