//! Sparse tensors in `.zt`: our spec form (docs/zt-sparse.md) written and read in every
//! encoding and byte order, and the reference's `sparsecoo`/`sparsecsr` records read.

use crate::common;

use common::*;
use std::io::Cursor;
use tensorfile::formats::Compression;
use tensorfile::model::{ByteOrder, ChecksumKind, Kind, Layout, SparseData, SparseFormat, TensorData, TensorInfo};
use tensorfile::source::Bytes;
use tensorfile::{DType, Format, Rule};

fn sparse(
    name: &str,
    dtype: DType,
    shape: Vec<u64>,
    format: SparseFormat,
    indptr: Vec<u64>,
    indices: Vec<u64>,
    values: Vec<u8>,
) -> (TensorInfo, TensorData) {
    let nnz = values.len() as u64 / dtype.size().unwrap();
    let info = TensorInfo::new(name, Kind::Tensor, dtype, shape, Layout::Sparse { format, nnz }).unwrap();
    let data = SparseData::new(format, nnz, indptr, indices, Bytes::from_vec(values)).unwrap();
    (info, TensorData::sparse(data))
}

fn f32s(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn examples() -> Vec<(TensorInfo, TensorData)> {
    vec![
        // 3x4 COO, 3 values: indices are 2 x 3 (row indices, then column indices).
        sparse(
            "coo",
            DType::Float32,
            vec![3, 4],
            SparseFormat::Coo,
            vec![],
            vec![0, 1, 2, 3, 0, 1],
            f32s(&[1.0, 2.0, 3.0]),
        ),
        // 3-D COO of bytes.
        sparse("coo3", DType::UInt8, vec![2, 2, 2], SparseFormat::Coo, vec![], vec![0, 1, 1, 0, 0, 1], vec![5, 6]),
        // 3x4 CSR: row 0 has col 1, row 2 has cols 0 and 3.
        sparse(
            "csr",
            DType::Float32,
            vec![3, 4],
            SparseFormat::Csr,
            vec![0, 1, 1, 3],
            vec![1, 0, 3],
            f32s(&[1.5, -2.0, 4.0]),
        ),
        sparse("csr_empty", DType::Int16, vec![2, 5], SparseFormat::Csr, vec![0, 0, 0], vec![], vec![]),
        dense(TensorInfo::dense("dense_neighbour", DType::Int32, vec![5]), 3),
    ]
}

#[test]
fn spec_form_round_trips_in_every_encoding_and_order() {
    let tensors = examples();
    for compression in [Compression::None, Compression::Zstd(3)] {
        for order in [ByteOrder::Little, ByteOrder::Big] {
            let file = open(write(Format::Zt, &tensors, &options(compression, ChecksumKind::Crc32c, order)));
            assert!(file.verify().is_empty(), "{:?}", file.verify());
            for (info, data) in &tensors {
                let e = file.entry(info.name()).unwrap();
                assert_eq!(e.info().layout(), info.layout());
                let got = file.read(info.name()).unwrap();
                assert_eq!(got.layout(), data.layout(), "layout changed for {}", info.name());
                match (got.to_sparse(), data.to_sparse()) {
                    (Ok(a), Ok(b)) => assert_eq!(a, b, "{} {compression:?} {order:?}", info.name()),
                    _ => assert_eq!(got.as_dense().unwrap(), data.as_dense().unwrap()),
                }
            }
        }
    }
}

#[test]
fn invalid_sparse_data_is_refused_by_the_writer_and_the_reader() {
    let bad = sparse(
        "bad",
        DType::Float32,
        vec![3, 4],
        SparseFormat::Coo,
        vec![],
        vec![0, 1, 9, 3, 0, 1],
        f32s(&[1.0, 2.0, 3.0]),
    );
    let err = try_write(Format::Zt, &[bad], &Default::default()).unwrap_err();
    assert_eq!(err.rule(), Some(Rule::BadSparse));
    // Patch a valid file's row pointer so that rows go backwards.
    let good = sparse("csr", DType::UInt8, vec![2, 2], SparseFormat::Csr, vec![0, 2, 2], vec![0, 1], vec![1, 2]);
    let mut bytes = write(Format::Zt, &[good], &Default::default());
    bytes[64 + 8] = 3; // indptr[1] = 3 > nnz
    let f = open(bytes);
    assert_eq!(f.read("csr").unwrap_err().rule(), Some(Rule::BadSparse));
}

#[test]
fn sparse_cannot_go_to_safetensors() {
    let err = Format::Safetensors.check_supported(&examples()[0].0).unwrap_err();
    assert!(err.message().contains("sparse"), "{err}");
}

/// The reference writes sparse layouts only when the blob happens to be as long as the dense
/// tensor would be (its writer checks that); these shapes make that true.
#[test]
fn reference_sparse_records_are_read() {
    use ztensor::{ChecksumAlgorithm, DataEndianness, Encoding, Layout as L, ZTensorWriter};
    let u64s = |v: &[u64]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    // CSR 1x4 uint64 with one value 77 at column 2: indptr [0,1], indices [2], values [77].
    let csr = u64s(&[0, 1, 2, 77]);
    // COO 3x3 uint64 with 3 records (row, col, value).
    let coo = u64s(&[0, 2, 10, 1, 0, 11, 2, 1, 12]);
    let mut buf = Cursor::new(Vec::new());
    let mut w = ZTensorWriter::new(&mut buf).unwrap();
    for (name, shape, layout, data) in [("csr", vec![1, 4], L::SparseCsr, csr), ("coo", vec![3, 3], L::SparseCoo, coo)]
    {
        w.add_tensor(
            name,
            shape,
            ztensor::DType::Uint64,
            layout,
            Encoding::Raw,
            data,
            Some(DataEndianness::Little),
            ChecksumAlgorithm::Crc32c,
            None,
        )
        .unwrap();
    }
    w.finalize().unwrap();
    let f = open(buf.into_inner());
    assert!(f.verify().is_empty(), "{:?}", f.verify());
    let csr = f.read("csr").unwrap().to_sparse().unwrap();
    assert_eq!((csr.indptr(), csr.indices(), csr.nnz()), (&[0u64, 1][..], &[2u64][..], 1));
    assert_eq!(&**csr.values(), &77u64.to_le_bytes());
    let coo = f.read("coo").unwrap().to_sparse().unwrap();
    assert_eq!(coo.indices(), vec![0, 1, 2, 2, 0, 1]);
    assert_eq!(&**coo.values(), &u64s(&[10, 11, 12])[..]);
}
