//! The object model: every tensor is a layout and named parts; every layout decodes to dense,
//! so conversion into a format that cannot hold a layout writes the tensor decoded, and
//! consumers that know no layout get dense bytes.

use crate::common;

use common::*;
use tensorfile::convert::{ConvertOptions, convert_to_writer};
use tensorfile::model::{DType, Kind, Layout, SparseData, SparseFormat, TensorData, TensorInfo};
use tensorfile::source::Bytes;
use tensorfile::{Format, Rule};

fn f32s(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn sparse(
    name: &str,
    shape: Vec<u64>,
    format: SparseFormat,
    indptr: Vec<u64>,
    indices: Vec<u64>,
    values: &[f32],
) -> (TensorInfo, TensorData) {
    let nnz = values.len() as u64;
    let info = TensorInfo::new(name, Kind::Tensor, DType::Float32, shape, Layout::Sparse { format, nnz }).unwrap();
    let data = SparseData::new(format, nnz, indptr, indices, Bytes::from_vec(f32s(values))).unwrap();
    (info, TensorData::sparse(data))
}

/// A 3x4 COO tensor and a 3x4 CSR tensor holding the same values, and what they are dense.
fn same_matrix_both_ways() -> (Vec<(TensorInfo, TensorData)>, Vec<u8>) {
    let coo = sparse("coo", vec![3, 4], SparseFormat::Coo, vec![], vec![0, 2, 2, 1, 0, 3], &[1.5, -2.0, 4.0]);
    let csr = sparse("csr", vec![3, 4], SparseFormat::Csr, vec![0, 1, 1, 3], vec![1, 0, 3], &[1.5, -2.0, 4.0]);
    #[rustfmt::skip]
    let dense = f32s(&[
        0.0, 1.5, 0.0, 0.0,
        0.0, 0.0, 0.0, 0.0,
        -2.0, 0.0, 0.0, 4.0,
    ]);
    (vec![coo, csr], dense)
}

#[test]
fn each_layout_names_its_parts_with_their_dtypes_and_shapes() {
    let (tensors, _) = same_matrix_both_ways();
    let describe = |info: &TensorInfo| -> Vec<(String, DType, Vec<u64>)> {
        info.parts().unwrap().iter().map(|p| (p.name().to_string(), p.dtype(), p.shape().to_vec())).collect()
    };
    assert_eq!(
        describe(&tensors[0].0),
        [("indices".into(), DType::UInt64, vec![2, 3]), ("values".into(), DType::Float32, vec![3])]
    );
    assert_eq!(
        describe(&tensors[1].0),
        [
            ("indptr".into(), DType::UInt64, vec![4]),
            ("indices".into(), DType::UInt64, vec![3]),
            ("values".into(), DType::Float32, vec![3])
        ]
    );
    let dense = TensorInfo::dense("d", DType::BFloat16, vec![2, 5]);
    assert_eq!(describe(&dense), [("data".into(), DType::BFloat16, vec![2, 5])]);
    // The data read has exactly the parts the layout names, with their sizes.
    for (info, data) in &tensors {
        let names: Vec<_> = data.parts().iter().map(|p| p.name()).collect();
        let specs = info.parts().unwrap();
        assert_eq!(names, specs.iter().map(|p| p.name()).collect::<Vec<_>>());
        for (part, spec) in data.parts().iter().zip(&specs) {
            assert_eq!(part.bytes().len() as u64, spec.nbytes().unwrap(), "{} {}", info.name(), spec.name());
        }
        assert_eq!(data.len(), info.nbytes().unwrap());
    }
}

#[test]
fn sparse_layouts_decode_to_the_dense_tensor() {
    let (tensors, dense) = same_matrix_both_ways();
    for (info, data) in &tensors {
        assert_eq!(&data.to_dense(info.dtype(), info.shape()).unwrap()[..], &dense[..], "{}", info.name());
    }
    // Dense data decodes to itself, without a copy.
    let d = TensorData::dense(Bytes::from_vec(dense.clone()));
    let again = d.to_dense(DType::Float32, &[3, 4]).unwrap();
    assert_eq!(again.as_ptr(), d.as_dense().unwrap().as_ptr());
}

#[test]
fn repeated_coordinates_and_out_of_range_indices_are_refused_not_guessed() {
    // Two values at (0, 1): torch would sum them; we refuse rather than pick one.
    let (info, data) = sparse("c", vec![2, 2], SparseFormat::Coo, vec![], vec![0, 0, 1, 1], &[1.0, 2.0]);
    let err = data.to_dense(info.dtype(), info.shape()).unwrap_err();
    assert!(err.message().contains("repeated coordinates"), "{err}");
    let (info, data) = sparse("c", vec![2, 2], SparseFormat::Coo, vec![], vec![0, 5], &[1.0]);
    assert_eq!(data.to_dense(info.dtype(), info.shape()).unwrap_err().rule(), Some(Rule::BadSparse));
}

#[test]
fn values_too_short_for_their_count_are_an_error_not_a_panic() {
    // Two coordinates, one value's bytes: nothing to place at the second.
    let data = SparseData::new(SparseFormat::Coo, 2, vec![], vec![0, 1], Bytes::from_vec(f32s(&[1.0]))).unwrap();
    let err = TensorData::sparse(data).to_dense(DType::Float32, &[2]).unwrap_err();
    assert_eq!(err.rule(), Some(Rule::BadSparse), "{err}");
}

#[test]
fn decoding_cannot_make_a_few_stored_bytes_into_terabytes() {
    // One value in a 2^20 x 2^20 float32 matrix: 4 TiB dense, from a few bytes.
    let (info, data) = sparse("huge", vec![1 << 20, 1 << 20], SparseFormat::Coo, vec![], vec![7, 9], &[1.0]);
    assert_eq!(data.to_dense(info.dtype(), info.shape()).unwrap_err().rule(), Some(Rule::ExpansionTooLarge));
}

#[test]
fn converting_into_a_format_without_the_layout_writes_the_tensor_dense() {
    let (tensors, dense) = same_matrix_both_ways();
    let zt = open(write(Format::Zt, &tensors, &Default::default()));
    for format in [Format::Safetensors, Format::Pt, Format::Ptd] {
        let mut out = std::io::Cursor::new(Vec::new());
        let report = convert_to_writer(&zt, &mut out, format, &ConvertOptions::default(), &mut |_| {}).unwrap();
        assert_eq!(report.decoded, ["coo", "csr"], "{format}");
        assert!(report.skipped.is_empty(), "{format}");
        let back = tensorfile::OpenOptions::new().open_bytes(Bytes::from_vec(out.into_inner())).unwrap();
        for name in ["coo", "csr"] {
            let e = back.entry(name).unwrap();
            assert_eq!(
                (e.info().layout().clone(), e.info().shape().to_vec()),
                (Layout::Dense, vec![3, 4]),
                "{format} {name}"
            );
            assert_eq!(&back.read(name).unwrap().as_dense().unwrap()[..], &dense[..], "{format} {name}");
        }
    }
    // A format that holds the layout keeps it.
    let mut out = std::io::Cursor::new(Vec::new());
    let report = convert_to_writer(&zt, &mut out, Format::Zt, &ConvertOptions::default(), &mut |_| {}).unwrap();
    assert!(report.decoded.is_empty());
    let back = tensorfile::OpenOptions::new().open_bytes(Bytes::from_vec(out.into_inner())).unwrap();
    assert!(back.entry("csr").unwrap().info().layout().is_sparse());
}

#[test]
fn a_tensor_that_cannot_be_decoded_stops_the_conversion_and_names_the_tensor() {
    // Repeated coordinates are valid in a .zt (torch makes such uncoalesced tensors), but have
    // no one dense form we would stand behind.
    let (info, data) = sparse("dup", vec![2, 2], SparseFormat::Coo, vec![], vec![0, 0, 1, 1], &[1.0, 2.0]);
    let zt = open(write(Format::Zt, &[(info, data)], &Default::default()));
    let mut out = std::io::Cursor::new(Vec::new());
    let err =
        convert_to_writer(&zt, &mut out, Format::Safetensors, &ConvertOptions::default(), &mut |_| {}).unwrap_err();
    assert_eq!(err.tensor(), Some("dup"), "{err}");
    assert!(err.message().contains("repeated coordinates"), "{err}");
}
