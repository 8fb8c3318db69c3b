//! Statistics against numpy's, computed in float64 on the same tensors (records made by
//! `scripts/fixturegen/stats_records.py`): tensors of every dtype, GGUF's quantized ones
//! dequantized by gguf-py, and values that trouble summaries (NaNs, infinities, a mean of 1e8
//! with a standard deviation of 1, tensors cut into several pieces).

use serde_json::Value;
use tensorfile::TensorFile;
use tensorfile::stats::{self, StatsOptions, TensorStats};

use crate::common::fixtures_dir;

fn records() -> Value {
    let path = fixtures_dir().join("stats").join("records.json");
    let text = std::fs::read(&path).expect("tests/fixtures/stats/records.json: run scripts/fixtures");
    serde_json::from_slice(&text).expect("malformed records.json")
}

/// Our record of the tensor numpy's record names: by name, or the only one (a `.npy`).
fn ours<'a>(got: &'a [TensorStats], name: &str) -> &'a TensorStats {
    if name.is_empty() && got.len() == 1 {
        return &got[0];
    }
    got.iter().find(|t| t.name == name).unwrap_or_else(|| panic!("{name:?} not summarised"))
}

fn float(v: &Value) -> Option<f64> {
    v.as_f64()
}

/// Within 1e-9 relative, or within float64 rounding of the values' magnitude (a mean near 0
/// of values far from it).
fn close(got: f64, want: f64, scale: f64) -> bool {
    (got - want).abs() <= 1e-9 * want.abs() + 1e-15 * scale
}

fn check(file: &str, got: &TensorStats, want: &Value, bins: usize) {
    let what = format!("{file}: {:?}", got.name);
    assert_eq!(got.numel, want["numel"].as_u64().unwrap(), "{what}: numel");
    let summary = match (&got.summary, want["summarised"].as_bool().unwrap()) {
        (Ok(s), true) => s,
        (Err(_), false) => return,
        (s, _) => panic!("{what}: summarised {:?}, numpy's record {}", s.as_ref().err(), want["summarised"]),
    };
    let m = &summary.moments;
    for (key, value) in [("zeros", m.zeros), ("nan", m.nan), ("posinf", m.posinf), ("neginf", m.neginf)] {
        assert_eq!(value, want[key].as_u64().unwrap(), "{what}: {key}");
    }
    for (key, value) in [("min", summary.min()), ("max", summary.max()), ("absmax", summary.absmax())] {
        assert_eq!(value, float(&want[key]), "{what}: {key}");
    }
    let scale = summary.absmax().unwrap_or(0.0);
    for (key, value) in [("mean", summary.mean()), ("std", summary.std())] {
        match (value, float(&want[key])) {
            (Some(g), Some(w)) => assert!(close(g, w, scale), "{what}: {key} {g:e}, numpy {w:e}"),
            (g, w) => assert_eq!(g, w, "{what}: {key}"),
        }
    }
    match (&summary.hist, want["hist"].as_object()) {
        (Some(h), Some(w)) => {
            let edges: Vec<f64> = w["edges"].as_array().unwrap().iter().map(|e| e.as_f64().unwrap()).collect();
            let counts: Vec<u64> = w["counts"].as_array().unwrap().iter().map(|c| c.as_u64().unwrap()).collect();
            assert_eq!(h.edges, edges, "{what}: histogram edges");
            assert_eq!(h.counts, counts, "{what}: histogram counts");
            assert_eq!(h.counts.len(), bins);
        }
        (None, None) => {}
        (h, w) => panic!("{what}: histogram {h:?}, numpy's {w:?}"),
    }
}

#[test]
fn every_dtype_agrees_with_numpy_in_float64() {
    let records = records();
    let bins = records["hist_bins"].as_u64().unwrap() as usize;
    let mut checked = 0;
    for f in records["files"].as_array().unwrap() {
        let name = f["file"].as_str().unwrap();
        let file = TensorFile::open(fixtures_dir().join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        let got = stats::summarise(&file, &StatsOptions { names: vec![], hist: Some(bins) }, &|_| {})
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        for want in f["tensors"].as_array().unwrap() {
            let tensor = want["name"].as_str().unwrap();
            // Entries tensorfile does not hold (ONNX's padded sub-byte tensors) have no values.
            if file.unreadable().iter().any(|u| u.name() == tensor) {
                continue;
            }
            check(name, ours(&got, tensor), want, bins);
            checked += 1;
        }
    }
    assert!(checked > 100, "{checked} tensors checked");
}

#[test]
fn values_are_counted_as_they_arrive_and_named_tensors_only() {
    let file = TensorFile::open(fixtures_dir().join("stats/special.safetensors")).unwrap();
    let done = std::sync::atomic::AtomicU64::new(0);
    let names = vec!["large_bf16".to_string(), "mean_1e8_std_1".to_string()];
    let got = stats::summarise(&file, &StatsOptions { names: names.clone(), hist: None }, &|n| {
        done.fetch_add(n, std::sync::atomic::Ordering::Relaxed);
    })
    .unwrap();
    assert_eq!(got.iter().map(|t| t.name.clone()).collect::<Vec<_>>(), names);
    assert_eq!(done.into_inner(), 620_000);
    let too_many = StatsOptions { names: vec![], hist: Some(stats::MAX_BINS + 1) };
    assert!(stats::summarise(&file, &too_many, &|_| {}).unwrap_err().to_string().contains("histogram bins"));
    let err = stats::summarise(&file, &StatsOptions { names: vec!["nope".into()], hist: None }, &|_| {}).unwrap_err();
    assert!(err.to_string().contains("\"nope\""), "{err}");
}

#[test]
fn nonfinite_tensors_are_named_with_their_counts() {
    let file = TensorFile::open(fixtures_dir().join("stats/special.safetensors")).unwrap();
    let (found, errors) = stats::nonfinite(&file);
    assert!(errors.is_empty(), "{errors:?}");
    let seen: Vec<(&str, u64, u64, u64)> = found.iter().map(|t| (t.name.as_str(), t.nan, t.posinf, t.neginf)).collect();
    let records = records();
    let want: Vec<(&str, u64, u64, u64)> = records["files"][0]["tensors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["name"].as_str().unwrap(),
                t["nan"].as_u64().unwrap(),
                t["posinf"].as_u64().unwrap(),
                t["neginf"].as_u64().unwrap(),
            )
        })
        .filter(|t| t.1 + t.2 + t.3 > 0)
        .collect();
    let mut sorted = want.clone();
    sorted.sort_by_key(|t| file.index_of(t.0));
    assert_eq!(seen, sorted);
    assert!(seen.len() >= 4);
}
