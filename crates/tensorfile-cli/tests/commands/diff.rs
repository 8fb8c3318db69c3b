//! `tensorfile diff`: changed values with the largest difference. Run on small files made in a
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
