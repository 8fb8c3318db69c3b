//! `tensorfile extract`: .npy and raw files, selected names, names kept inside the folder, sparse
//! components, reported paths, tensors that cannot be extracted beside ones that can, and an
//! ExecuTorch program's delegate payloads. Run on small files
//! made in a temporary folder and on committed fixtures.

use std::path::PathBuf;

use crate::common::*;
use tensorfile::io::Bytes;
use tensorfile::model::{ByteOrder, Checksum, ChecksumKind, Kind, Layout, SparseData, SparseFormat};
use tensorfile::{DType, TensorData, TensorInfo, WriteOptions};

#[test]
fn extract_writes_npy_files_and_raw_bfloat16() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("x.zt");
    let tensors = sample_tensors();
    write(&src, &tensors, &WriteOptions { byte_order: ByteOrder::Big, ..WriteOptions::default() });
    let out = dir.path().join("new/sub");
    ok(&[&"extract", &src, &"-o", &out]);

    let expected =
        ["empty.npy", "half.npy", "ids.npy", "layers.0%2Fweight.npy", "mask.npy", "norm.bfloat16.bin", "scale.npy"];
    assert_eq!(names_in(&out), expected);
    let (header, data) = read_npy(&out.join("layers.0%2Fweight.npy"));
    assert_eq!(header, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }");
    assert_eq!(data, tensors[0].1.as_dense().unwrap().to_vec(), "little-endian whatever the file's byte order");
    assert!(read_npy(&out.join("ids.npy")).0.contains("'descr': '<i8', 'fortran_order': False, 'shape': (2,)"));
    assert!(read_npy(&out.join("mask.npy")).0.contains("'|b1'"));
    assert!(read_npy(&out.join("scale.npy")).0.contains("'shape': ()"));
    assert!(read_npy(&out.join("empty.npy")).0.contains("'shape': (0, 3)"));
    assert_eq!(std::fs::read(out.join("norm.bfloat16.bin")).unwrap(), bf16s(&[1.0, 0.5, -4.0]));
}

#[test]
fn extract_selected_names_and_refuses_unknown_ones() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("x.safetensors");
    write(&src, &sample_tensors(), &WriteOptions::default());
    let out = dir.path().join("out");

    let o = tensorfile(&[&"extract", &src, &"ids", &"nope", &"-o", &out]);
    assert_eq!(code(&o), 1);
    assert!(stderr(&o).contains("\"nope\""), "{}", stderr(&o));
    assert!(!out.exists(), "nothing is written when a name is unknown");

    let j = json_of(&ok(&[&"extract", &src, &"ids", &"-o", &out, &"--json"]));
    assert_eq!(j["extracted"][0]["name"], "ids");
    assert_eq!(names_in(&out), ["ids.npy"]);
}

#[test]
fn extracted_names_stay_inside_the_folder() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("evil.zt");
    let names = ["../escape", "/abs", "a/../../b", ".hidden", "..", ".", "back\\slash", "per%cent", ""];
    let tensors: Vec<_> = names.iter().map(|n| dense(n, DType::UInt8, &[1], vec![1])).collect();
    write(&src, &tensors, &WriteOptions::default());
    let out = dir.path().join("out");
    ok(&[&"extract", &src, &"-o", &out]);

    assert_eq!(names_in(dir.path()), ["evil.zt", "out"], "nothing written beside the folder");
    let written = names_in(&out);
    assert_eq!(written.len(), names.len());
    assert!(written.iter().all(|n| !n.starts_with('.') && n.ends_with(".npy")), "{written:?}");
    for expected in [
        "%2E.%2Fescape.npy",
        "%2Fabs.npy",
        "a%2F..%2F..%2Fb.npy",
        "%2Ehidden.npy",
        "%2E..npy",
        "%2E.npy",
        "back%5Cslash.npy",
        "per%25cent.npy",
        "%.npy",
    ] {
        assert!(written.contains(&expected.to_string()), "{expected} not in {written:?}");
    }
}

#[test]
fn extract_writes_sparse_components() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("s.zt");
    let sparse = |name: &str, format, indptr: Vec<u64>, indices: Vec<u64>, values: &[f32]| {
        let nnz = values.len() as u64;
        let info =
            TensorInfo::new(name, Kind::Tensor, DType::Float32, vec![3, 4], Layout::Sparse { format, nnz }).unwrap();
        let data = SparseData::new(format, nnz, indptr, indices, Bytes::from_vec(f32s(values))).unwrap();
        (info, TensorData::sparse(data))
    };
    let tensors = [
        sparse("coo", SparseFormat::Coo, vec![], vec![0, 2, 1, 3], &[1.0, 2.0]),
        sparse("csr", SparseFormat::Csr, vec![0, 1, 1, 3], vec![1, 0, 3], &[1.5, -2.0, 4.0]),
    ];
    write(&src, &tensors, &WriteOptions::default());
    let out = dir.path().join("out");
    ok(&[&"extract", &src, &"-o", &out]);

    assert_eq!(
        names_in(&out),
        ["coo.indices.npy", "coo.values.npy", "csr.indices.npy", "csr.indptr.npy", "csr.values.npy"]
    );
    let (header, data) = read_npy(&out.join("coo.indices.npy"));
    assert!(header.contains("'<u8'") && header.contains("(2, 2)"), "{header}");
    assert_eq!(data, [0u64, 2, 1, 3].iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>());
    assert!(read_npy(&out.join("csr.indptr.npy")).0.contains("(4,)"));
    let (header, data) = read_npy(&out.join("csr.values.npy"));
    assert!(header.contains("'<f4'") && header.contains("(3,)"), "{header}");
    assert_eq!(data, f32s(&[1.5, -2.0, 4.0]));

    // --dense: each decoded, one array of the tensor's shape.
    let dense_out = dir.path().join("dense");
    ok(&[&"extract", &src, &"-o", &dense_out, &"--dense"]);
    assert_eq!(names_in(&dense_out), ["coo.npy", "csr.npy"]);
    let (header, data) = read_npy(&dense_out.join("csr.npy"));
    assert!(header.contains("'<f4'") && header.contains("(3, 4)"), "{header}");
    #[rustfmt::skip]
    let csr = f32s(&[0.0, 1.5, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -2.0, 0.0, 0.0, 4.0]);
    assert_eq!(data, csr);
    // COO indices [[0, 2], [1, 3]]: 1.0 at (0, 1), 2.0 at (2, 3).
    let mut coo = vec![0.0f32; 12];
    coo[1] = 1.0;
    coo[2 * 4 + 3] = 2.0;
    assert_eq!(read_npy(&dense_out.join("coo.npy")).1, f32s(&coo));

    // convert into a format without sparse layouts: written dense, and said so.
    let st = dir.path().join("s.safetensors");
    let o = tensorfile(&[&"convert", &src, &st, &"--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(json_of(&stdout(&o))["decoded"], serde_json::json!(["coo", "csr"]));
    assert!(stderr(&o).contains("decoded to dense"), "{}", stderr(&o));
    let rows = json_of(&ok(&[&"ls", &st, &"--json"]));
    let csr_row = rows.as_array().unwrap().iter().find(|r| r["name"] == "csr").unwrap();
    assert_eq!((csr_row["layout"].as_str(), csr_row["shape"].clone()), (Some("dense"), serde_json::json!([3, 4])));
}

#[test]
fn output_paths_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let src: PathBuf = dir.path().join("one.zt");
    write(&src, &[dense("a/b", DType::UInt8, &[1], vec![1])], &WriteOptions::default());
    let out = dir.path().join("o");
    let text = ok(&[&"extract", &src, &"-o", &out]);
    assert_eq!(text.trim_end(), format!("a/b -> {}", out.join("a%2Fb.npy").display()));
}

#[test]
fn extract_refuses_two_entries_sharing_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("clash.zt");
    let nnz = 1;
    let format = SparseFormat::Coo;
    let info = TensorInfo::dense("w", DType::Float32, vec![2]).with_layout(Layout::Sparse { format, nnz }).unwrap();
    let data = SparseData::new(format, nnz, vec![], vec![1], Bytes::from_vec(f32s(&[1.0]))).unwrap();
    let sparse = (info, TensorData::sparse(data));
    write(&src, &[sparse, dense("w.values", DType::Float32, &[1], f32s(&[2.0]))], &WriteOptions::default());
    let out = dir.path().join("out");

    let o = tensorfile(&[&"extract", &src, &"-o", &out]);
    assert_eq!(code(&o), 1);
    assert!(stderr(&o).contains("\"w\" and \"w.values\"") && stderr(&o).contains("w.values.npy"), "{}", stderr(&o));
    assert!(!out.exists());
}

#[test]
fn extract_delegates_writes_their_payloads() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("d");
    ok(&[&"extract", &et_fixture("xnnpack.pte"), &"--delegates", &"-o", &out]);
    let files = names_in(&out);
    assert_eq!(files, ["forward.delegate0.XnnpackBackend.bin", "forward.delegate1.XnnpackBackend.bin"]);
}

/// Every delegate payload `extract --delegates` writes is, byte for byte, the one ExecuTorch's
/// `deserialize_pte_binary` restores (the records' sha256), in every fixture that has some.
#[test]
fn extracted_delegate_payloads_are_the_ones_executorch_reads() {
    let mut programs = 0;
    for entry in std::fs::read_dir(et_fixture("")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let Some(program) = name.strip_suffix(".expected.json").filter(|p| p.ends_with(".pte")) else { continue };
        let record = json_of(&std::fs::read_to_string(&path).unwrap());
        let delegates = record["delegates"].as_array().unwrap();
        if delegates.is_empty() {
            continue;
        }
        programs += 1;
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("d");
        ok(&[&"extract", &et_fixture(program), &"--delegates", &"-o", &out]);
        let file_of = |d: &serde_json::Value| {
            format!("{}.delegate{}.{}.bin", d["method"].as_str().unwrap(), d["index"], d["id"].as_str().unwrap())
        };
        let mut expected: Vec<String> = delegates.iter().map(file_of).collect();
        expected.sort();
        assert_eq!(names_in(&out), expected, "{program}");
        for d in delegates {
            let file = file_of(d);
            let bytes = std::fs::read(out.join(&file)).unwrap();
            assert_eq!(bytes.len() as u64, d["nbytes"].as_u64().unwrap(), "{program}: size of {file}");
            assert_eq!(sha256(&bytes), d["sha256"].as_str().unwrap(), "{program}: bytes of {file}");
        }
    }
    // xnnpack, xnnpack_external, mobilenet_v2_xnnpack and the four xnnpack_* quantizations.
    assert!(programs >= 7, "only {programs} programs with delegates");
}

fn sha256(bytes: &[u8]) -> String {
    match Checksum::compute(ChecksumKind::Sha256, bytes) {
        Some(Checksum::Sha256(d)) => d.iter().map(|b| format!("{b:02x}")).collect(),
        other => panic!("no sha256: {other:?}"),
    }
}

/// One tensor that cannot be read (a sparse index past its shape, found when it is decoded to
/// dense) and one that cannot be written (a folder where its file goes) are reported; every
/// other tensor is still written, and the exit status is 1.
#[test]
fn tensors_that_cannot_be_extracted_leave_the_others_written() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("s.zt");
    let (format, nnz) = (SparseFormat::Coo, 2);
    let info =
        TensorInfo::new("bad", Kind::Tensor, DType::Float32, vec![3, 4], Layout::Sparse { format, nnz }).unwrap();
    let indices = vec![0, 2, 1, 3];
    let data = SparseData::new(format, nnz, vec![], indices, Bytes::from_vec(f32s(&[1.0, 2.0]))).unwrap();
    let tensors = [
        dense("a", DType::Float32, &[1], f32s(&[1.0])),
        (info, TensorData::sparse(data)),
        dense("blocked", DType::Float32, &[1], f32s(&[3.0])),
        dense("z", DType::Float32, &[1], f32s(&[2.0])),
    ];
    write(&src, &tensors, &WriteOptions::default());
    // The last column index, 3, becomes 99.
    let mut bytes = std::fs::read(&src).unwrap();
    let stored: Vec<u8> = [0u64, 2, 1, 3].iter().flat_map(|v| v.to_le_bytes()).collect();
    let at = bytes.windows(stored.len()).position(|w| w == stored).expect("the indices are stored plainly");
    bytes[at + 24..at + 32].copy_from_slice(&99u64.to_le_bytes());
    std::fs::write(&src, bytes).unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir_all(out.join("blocked.npy")).unwrap();
    std::fs::write(out.join("blocked.npy").join("kept"), b"").unwrap();

    let o = tensorfile(&[&"extract", &src, &"-o", &out, &"--dense", &"--json"]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("tensor \"bad\"") && err.contains("tensor \"blocked\""), "{err}");
    assert!(err.contains("blocked.npy"), "the file that could not be written is named: {err}");
    assert_eq!(names_in(&out), ["a.npy", "blocked.npy", "z.npy"]);
    assert_eq!(read_npy(&out.join("z.npy")).1, f32s(&[2.0]));
    let j = json_of(&stdout(&o));
    let names = |key: &str| -> Vec<String> {
        j[key].as_array().unwrap().iter().map(|e| e["name"].as_str().unwrap().to_string()).collect()
    };
    assert_eq!(names("extracted"), ["a", "z"]);
    assert_eq!(names("failed"), ["bad", "blocked"]);
}

/// Tensor names longer than a file name may be (tf2onnx writes initializer names past 300
/// bytes): each file name cut to 200 bytes with a hash of the name, every tensor written, and
/// `shortened-names.json` mapping each shortened file to its tensor.
#[test]
fn names_too_long_for_a_file_name_are_shortened_and_listed() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("long.safetensors");
    let stem = "StatefulPartitionedCall/model/".repeat(12);
    let (kernel, bias) = (format!("{stem}dense/kernel"), format!("{stem}dense/bias"));
    let half = format!("{stem}norm/scale");
    let tensors = [
        dense(&kernel, DType::Float32, &[2], f32s(&[1.0, 2.0])),
        dense(&bias, DType::Float32, &[1], f32s(&[3.0])),
        dense(&half, DType::BFloat16, &[3], bf16s(&[1.0, 0.5, -4.0])),
        dense("w", DType::Float32, &[1], f32s(&[4.0])),
    ];
    write(&src, &tensors, &WriteOptions::default());
    let out = dir.path().join("out");
    let j = json_of(&ok(&[&"extract", &src, &"-o", &out, &"--json"]));

    let files = names_in(&out);
    assert_eq!(files.len(), 5, "{files:?}");
    assert!(files.iter().all(|f| f.len() <= 200), "{files:?}");
    assert!(files.contains(&"w.npy".to_string()), "short names are kept: {files:?}");
    let map = json_of(&std::fs::read_to_string(out.join("shortened-names.json")).unwrap());
    assert_eq!(j["shortened_names"].as_str().unwrap(), out.join("shortened-names.json").display().to_string());
    let map = map.as_object().unwrap();
    assert_eq!(map.len(), 3, "{map:?}");
    for (name, bytes) in [(&kernel, f32s(&[1.0, 2.0])), (&bias, f32s(&[3.0])), (&half, bf16s(&[1.0, 0.5, -4.0]))] {
        let (file, _) = map.iter().find(|(_, v)| v.as_str() == Some(name.as_str())).expect("listed");
        assert!(file.starts_with("StatefulPartitionedCall%2Fmodel%2F") && file.contains('~'), "{file}");
        let data =
            if file.ends_with(".npy") { read_npy(&out.join(file)).1 } else { std::fs::read(out.join(file)).unwrap() };
        assert_eq!(data, bytes, "{file}");
    }
    let extracted = j["extracted"].as_array().unwrap();
    assert_eq!(extracted.len(), 4);

    // A second extract into the same folder adds to the list instead of replacing it.
    let other = dir.path().join("other.safetensors");
    let more = format!("{stem}more");
    write(&other, &[dense(&more, DType::Float32, &[1], f32s(&[5.0]))], &WriteOptions::default());
    let text = ok(&[&"extract", &other, &"-o", &out]);
    assert!(text.contains("shortened-names.json"), "{text}");
    let map = json_of(&std::fs::read_to_string(out.join("shortened-names.json")).unwrap());
    assert_eq!(map.as_object().unwrap().len(), 4);
}
