use half::bf16;
use serde_json::json;

use super::values::value_diff;
use super::*;
use crate::file::TensorFile;
use crate::formats::{Format, WriteOptions};
use crate::model::elements::{Special, float8, float8_e8m0};
use crate::model::{Layout, SparseData, SparseFormat, TensorData, TensorInfo};
use crate::source::Bytes;

fn file(format: Format, tensors: &[(TensorInfo, TensorData)]) -> TensorFile {
    let out = crate::formats::write_to_vec(format, tensors, &WriteOptions::default()).unwrap();
    crate::file::OpenOptions::new().open_bytes(Bytes::from_vec(out)).unwrap()
}

fn dense(name: &str, dtype: DType, shape: &[u64], bytes: Vec<u8>) -> (TensorInfo, TensorData) {
    (TensorInfo::dense(name, dtype, shape.to_vec()), TensorData::dense(Bytes::from_vec(bytes)))
}

fn f32s(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn sparse(name: &str, indices: Vec<u64>, values: &[f32]) -> (TensorInfo, TensorData) {
    let nnz = values.len() as u64;
    let layout = Layout::Sparse { format: SparseFormat::Coo, nnz };
    let info = TensorInfo::dense(name, DType::Float32, vec![3, 4]).with_layout(layout).unwrap();
    let data = SparseData::new(SparseFormat::Coo, nnz, vec![], indices, Bytes::from_vec(f32s(values))).unwrap();
    (info, TensorData::sparse(data))
}

#[test]
fn the_same_tensors_in_two_formats_are_the_same() {
    let tensors = [
        dense("w", DType::Float32, &[2, 2], f32s(&[1.0, 2.0, f32::NAN, -0.0])),
        dense("ids", DType::Int64, &[2], vec![1; 16]),
    ];
    let diff = compare(&file(Format::Zt, &tensors), &file(Format::Safetensors, &tensors));
    assert!(diff.is_same(), "{diff:?}");
    assert_eq!(diff.identical, 2);
    assert_eq!(diff.to_json()["same"], true);
}

#[test]
fn names_dtypes_and_shapes() {
    let a = file(
        Format::Zt,
        &[
            dense("gone", DType::UInt8, &[1], vec![0]),
            dense("retyped", DType::Int16, &[1], vec![0, 0]),
            dense("reshaped", DType::UInt8, &[2, 3], vec![0; 6]),
        ],
    );
    let b = file(
        Format::Zt,
        &[
            dense("reshaped", DType::UInt8, &[3, 2], vec![0; 6]),
            dense("retyped", DType::UInt16, &[1], vec![0, 0]),
            dense("new", DType::UInt8, &[1], vec![0]),
        ],
    );
    let diff = compare(&a, &b);
    assert_eq!(diff.only_in_a, ["gone"]);
    assert_eq!(diff.only_in_b, ["new"]);
    assert_eq!(diff.changed.len(), 2);
    assert_eq!(diff.changed[0].changes, [Change::DType { a: DType::Int16, b: DType::UInt16 }]);
    assert_eq!(diff.changed[1].changes, [Change::Shape { a: vec![2, 3], b: vec![3, 2] }]);
    assert_eq!(diff.changed[1].changes[0].to_string(), "shape [2, 3] -> [3, 2]");
    assert!(!diff.is_same());
    let j = diff.to_json();
    assert_eq!(j["changed"][0]["changes"][0], json!({ "what": "dtype", "a": "int16", "b": "uint16" }));
}

#[test]
fn float_values_report_count_and_largest_difference() {
    let a = f32s(&[1.0, 2.0, 3.0, f32::NAN, 5.0, 0.0]);
    let b = f32s(&[1.0, 2.5, 1.0, 4.0, 5.0, -0.0]);
    let d = value_diff(DType::Float32, &a, &b).unwrap();
    assert_eq!((d.compared, d.differing, d.first_index, d.nan_mismatches), (6, 4, 1, 1));
    assert_eq!(d.max_abs_diff, Some(2.0));
    assert_eq!(d.to_string(), "4 of 6 elements differ (first at element 1), max abs difference 2, 1 with NaN");
    assert_eq!(value_diff(DType::Float32, &a, &a.clone()), None, "the same NaN bits are equal");
    let longer = value_diff(DType::Float32, &f32s(&[1.0]), &f32s(&[1.0, 2.0])).unwrap();
    assert_eq!((longer.compared, longer.differing, longer.first_index), (2, 1, 1));
    let other_nan = f32s(&[f32::from_bits(0x7fc0_0001)]);
    assert_eq!(value_diff(DType::Float32, &f32s(&[f32::NAN]), &other_nan).unwrap().nan_mismatches, 1);
}

#[test]
fn infinite_differences_render_in_json() {
    let d = value_diff(DType::Float32, &f32s(&[f32::INFINITY]), &f32s(&[1.0])).unwrap();
    assert_eq!(d.max_abs_diff, Some(f64::INFINITY));
    assert_eq!(d.to_json()["max_abs_diff"], "inf");
}

#[test]
fn integers_complex_and_half_types() {
    let d = value_diff(DType::Int64, &i64::MIN.to_le_bytes(), &i64::MAX.to_le_bytes()).unwrap();
    assert_eq!(d.max_abs_diff, Some(u64::MAX as f64));
    let c = |re: f32, im: f32| f32s(&[re, im]);
    let d = value_diff(DType::Complex64, &c(1.0, 2.0), &c(1.5, -1.0)).unwrap();
    assert_eq!((d.compared, d.max_abs_diff), (1, Some(3.0)));
    let bf = |v: f32| bf16::from_f32(v).to_le_bytes().to_vec();
    assert_eq!(value_diff(DType::BFloat16, &bf(1.0), &bf(-2.0)).unwrap().max_abs_diff, Some(3.0));
    let d = value_diff(DType::Bool, &[0, 1], &[1, 1]).unwrap();
    assert_eq!((d.differing, d.max_abs_diff), (1, None));
    let d = value_diff(DType::Float4E2M1Fn, &[0x12, 0x34], &[0x12, 0x35]).unwrap();
    assert_eq!((d.unit, d.compared, d.differing), (Unit::Byte, 2, 1));
}

#[test]
fn float8_values() {
    assert_eq!(float8(0x7E, 4, 7, Special::Fn), 448.0);
    assert_eq!(float8(0x01, 4, 7, Special::Fn), 2f64.powi(-9));
    assert!(float8(0xFF, 4, 7, Special::Fn).is_nan());
    assert_eq!(float8(0x7B, 5, 15, Special::Ieee), 57344.0);
    assert_eq!(float8(0xFC, 5, 15, Special::Ieee), f64::NEG_INFINITY);
    assert!(float8(0x7D, 5, 15, Special::Ieee).is_nan());
    assert_eq!(float8(0x7F, 4, 8, Special::Fnuz), 240.0);
    assert_eq!(float8(0x7F, 5, 16, Special::Fnuz), 57344.0);
    assert!(float8(0x80, 5, 16, Special::Fnuz).is_nan());
    assert_eq!(float8(0xB8, 4, 7, Special::Fn), -1.0);
    assert_eq!(float8_e8m0(127), 1.0);
    assert_eq!(float8_e8m0(0), 2f64.powi(-127));
    assert!(float8_e8m0(0xFF).is_nan());
    let d = value_diff(DType::Float8E4M3Fn, &[0x38], &[0x40]).unwrap();
    assert_eq!(d.max_abs_diff, Some(1.0));
}

#[test]
fn sparse_components() {
    let a = file(Format::Zt, &[sparse("s", vec![0, 1, 2, 3], &[1.0, 2.0]), sparse("t", vec![0, 1], &[1.0])]);
    let b = file(Format::Zt, &[sparse("s", vec![0, 1, 2, 3], &[1.0, 2.5]), sparse("t", vec![0, 1, 2, 3], &[1.0, 1.0])]);
    let diff = compare(&a, &b);
    let Change::Sparse(s) = &diff.changed[0].changes[0] else { panic!("{diff:?}") };
    assert_eq!((s.nnz, s.indices_differ), (None, false));
    assert_eq!(s.values.as_ref().unwrap().max_abs_diff, Some(0.5));
    let Change::Sparse(t) = &diff.changed[1].changes[0] else { panic!("{diff:?}") };
    assert_eq!((t.nnz, t.indices_differ, t.values.is_none()), (Some((1, 2)), true, true));
    let dense_s = file(Format::Zt, &[dense("s", DType::Float32, &[3, 4], vec![0; 48])]);
    let diff = compare(&a, &dense_s);
    assert_eq!(diff.changed[0].changes, [Change::Layout { a: "sparse_coo".into(), b: "dense".into() }]);
}

#[test]
fn unreadable_entries_are_reported_not_compared() {
    let header = br#"{"odd":{"dtype":"Q9","shape":[2],"data_offsets":[0,2]},"w":{"dtype":"U8","shape":[2],"data_offsets":[2,4]}}"#;
    let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
    bytes.extend_from_slice(header);
    bytes.extend_from_slice(&[1, 2, 3, 4]);
    let a = crate::file::OpenOptions::new().open_bytes(Bytes::from_vec(bytes)).unwrap();
    assert_eq!(a.unreadable().len(), 1);
    let b =
        file(Format::Zt, &[dense("w", DType::UInt8, &[2], vec![3, 4]), dense("odd", DType::UInt8, &[2], vec![0; 2])]);
    let diff = compare(&a, &b);
    assert_eq!(diff.identical, 1);
    assert!(diff.only_in_a.is_empty() && diff.only_in_b.is_empty(), "{diff:?}");
    assert_eq!(diff.unreadable.len(), 1);
    assert_eq!((diff.unreadable[0].side, diff.unreadable[0].name.as_str()), (Side::A, "odd"));
    assert!(!diff.is_same());
    let alone = compare(&a, &file(Format::Zt, &[]));
    assert_eq!(alone.only_in_a, ["w", "odd"]);
}

fn pieces(bytes: &[u8], cuts: &[usize]) -> crate::model::Chunks<'static> {
    let mut out = Vec::new();
    let mut start = 0;
    for &c in cuts.iter().chain([&bytes.len()]) {
        out.push(Ok(Bytes::from_vec(bytes[start..c].to_vec())));
        start = c;
    }
    Box::new(out.into_iter())
}

#[test]
fn lockstep_pieces_cut_anywhere_give_the_whole_answer() {
    let a: Vec<f32> = (0..40).map(|k| k as f32 * 0.5 - 3.0).collect();
    let mut b = a.clone();
    b[13] += 0.25;
    b[31] = f32::NAN;
    let (ba, bb) = (f32s(&a), f32s(&b));
    let tol = metrics::Tolerance::default();
    let whole = super::stream::same_dtype(DType::Float32, pieces(&ba, &[]), pieces(&bb, &[]), Some(40), tol).unwrap();
    let cut =
        super::stream::same_dtype(DType::Float32, pieces(&ba, &[3, 9, 50]), pieces(&bb, &[64, 65, 66]), Some(40), tol)
            .unwrap();
    let values = cut.values.unwrap();
    assert_eq!((values.differing, values.first_index, values.nan_mismatches), (2, 13, 1));
    assert_eq!(Some(values), whole.values);
    let m = cut.metrics.unwrap();
    assert_eq!((m.compared, m.over_tolerance, m.nan_mismatches, m.max_abs_diff), (40, 2, 1, 0.25));
    assert_eq!(Some(m), whole.metrics);
    let short = super::stream::same_dtype(DType::Float32, pieces(&ba[..8], &[]), pieces(&bb, &[]), Some(40), tol);
    assert_eq!(short.err().map(|(side, _)| side), Some(Side::A));
}

#[test]
fn bfloat16_against_float32_by_value() {
    let a: Vec<f32> = vec![1.0, -2.5, 3.140625, 0.0];
    let b: Vec<f32> = vec![1.0, -2.5, 3.15, 1e-4];
    let ba: Vec<u8> = a.iter().flat_map(|&v| bf16::from_f32(v).to_le_bytes()).collect();
    let tol = metrics::Tolerance { atol: 1e-3, rtol: 0.0 };
    let m = super::stream::across(
        (DType::BFloat16, pieces(&ba, &[1, 5])),
        (DType::Float32, pieces(&f32s(&b), &[7])),
        4,
        tol,
    )
    .unwrap();
    let d = f64::from(3.15f32) - 3.140625;
    assert_eq!((m.compared, m.over_tolerance), (4, 1));
    assert_eq!(m.max_abs_diff, d);
    assert_eq!(m.max_rel_diff, 1.0, "0 against 1e-4");
    let t = file(Format::Zt, &[dense("w", DType::BFloat16, &[4], ba)]);
    let u = file(Format::Safetensors, &[dense("w", DType::Float32, &[4], f32s(&b))]);
    let diff = compare_with(&t, &u, tol);
    assert_eq!(diff.changed[0].changes, [Change::DType { a: DType::BFloat16, b: DType::Float32 }]);
    assert_eq!(diff.changed[0].metrics.as_ref(), Some(&m));
    assert!(!diff.is_close());
    assert!(compare_with(&t, &u, metrics::Tolerance { atol: 1e-2, rtol: 0.0 }).is_close());
}

#[test]
fn equal_sub_slices_of_a_changed_tensor_count_as_pairs() {
    // Three sub-slices of 2^14 numbers: the first and last equal, the middle one not.
    let a: Vec<f32> = (0..40_000).map(|k| (k % 97) as f32 - 48.5).collect();
    let mut b = a.clone();
    b[20_000] = 1e3;
    let tol = metrics::Tolerance::default();
    let got =
        super::stream::same_dtype(DType::Float32, pieces(&f32s(&a), &[]), pieces(&f32s(&b), &[]), Some(40_000), tol)
            .unwrap();
    let mut want = metrics::Sums::default();
    let wide = |v: &[f32]| v.iter().map(|&x| f64::from(x)).collect::<Vec<_>>();
    want.add(&wide(&a), &wide(&b), tol);
    assert_eq!(got.metrics, Some(want.finish()));
    assert_eq!(got.values.map(|v| (v.differing, v.first_index)), Some((1, 20_000)));
}

#[test]
fn a_tensor_failing_to_decode_is_unreadable_not_identical() {
    let values: Vec<f32> = (0..4096).map(|k| (k % 7) as f32).collect();
    let tensors = [dense("w", DType::Float32, &[4096], f32s(&values))];
    let options = WriteOptions { compression: crate::formats::Compression::Zstd(3), ..WriteOptions::default() };
    let mut bytes = crate::formats::write_to_vec(Format::Zt, &tensors, &options).unwrap();
    let frame = bytes.windows(4).position(|w| w == [0x28, 0xB5, 0x2F, 0xFD]).unwrap();
    for b in &mut bytes[frame + 4..frame + 12] {
        *b ^= 0xFF;
    }
    let broken = crate::file::OpenOptions::new().open_bytes(Bytes::from_vec(bytes)).unwrap();
    let good = file(Format::Safetensors, &tensors);
    let diff = compare(&broken, &good);
    assert_eq!(diff.identical, 0, "{diff:?}");
    assert_eq!(diff.unreadable.len(), 1, "{diff:?}");
    assert_eq!((diff.unreadable[0].side, diff.unreadable[0].name.as_str()), (Side::A, "w"));
    assert!(!diff.is_same() && !diff.is_close());
}
