//! Broken and hostile ONNX models, built here field by field: each is refused with the exact
//! rule it breaks (or the one tensor it concerns is unreadable with it), never a panic.

use std::path::Path;

use tensorfile::source::Bytes;
use tensorfile::{Format, Rule, TensorFile};

/// A protobuf encoder of just what these tests need.
pub mod pb {
    pub fn varint(mut v: u64) -> Vec<u8> {
        let mut out = Vec::new();
        loop {
            let byte = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                out.push(byte);
                return out;
            }
            out.push(byte | 0x80);
        }
    }

    pub fn int(field: u64, v: u64) -> Vec<u8> {
        [varint(field << 3), varint(v)].concat()
    }

    pub fn bytes(field: u64, b: &[u8]) -> Vec<u8> {
        [varint((field << 3) | 2), varint(b.len() as u64), b.to_vec()].concat()
    }

    /// A `TensorProto`: dims, data type, name, then `rest` (its data fields).
    pub fn tensor(name: &str, data_type: u64, dims: &[i64], rest: &[u8]) -> Vec<u8> {
        let mut t: Vec<u8> = dims.iter().flat_map(|&d| int(1, d as u64)).collect();
        t.extend(int(2, data_type));
        t.extend(bytes(8, name.as_bytes()));
        t.extend_from_slice(rest);
        t
    }

    /// A float32 tensor of `dims` with `raw` as its raw_data.
    pub fn raw_f32(name: &str, dims: &[i64], raw: &[u8]) -> Vec<u8> {
        tensor(name, 1, dims, &bytes(9, raw))
    }

    /// A float32 tensor stored in external data.
    pub fn external(name: &str, dims: &[i64], location: &str, offset: Option<u64>, length: Option<u64>) -> Vec<u8> {
        let entry = |k: &str, v: &str| bytes(13, &[bytes(1, k.as_bytes()), bytes(2, v.as_bytes())].concat());
        let mut rest = entry("location", location);
        if let Some(o) = offset {
            rest.extend(entry("offset", &o.to_string()));
        }
        if let Some(l) = length {
            rest.extend(entry("length", &l.to_string()));
        }
        rest.extend(int(14, 1));
        tensor(name, 1, dims, &rest)
    }

    /// A graph of `nodes` and `initializers` (already encoded messages).
    pub fn graph(nodes: &[Vec<u8>], initializers: &[Vec<u8>]) -> Vec<u8> {
        let mut g: Vec<u8> = nodes.iter().flat_map(|n| bytes(1, n)).collect();
        g.extend(bytes(2, b"g"));
        initializers.iter().for_each(|t| g.extend(bytes(5, t)));
        g
    }

    /// A model: IR version 10, producer, `graph`, opset 21.
    pub fn model(graph: &[u8]) -> Vec<u8> {
        let mut m = int(1, 10);
        m.extend(bytes(2, b"tests"));
        m.extend(bytes(7, graph));
        m.extend(bytes(8, &int(2, 21)));
        m
    }
}

fn open(bytes: Vec<u8>) -> tensorfile::Result<TensorFile> {
    tensorfile::OpenOptions::new().format(Format::Onnx).open_bytes(Bytes::from_vec(bytes))
}

fn rule(bytes: Vec<u8>) -> Option<Rule> {
    open(bytes).err().and_then(|e| e.rule())
}

fn floats(n: usize) -> Vec<u8> {
    (0..n).flat_map(|i| (i as f32).to_le_bytes()).collect()
}

#[test]
fn a_valid_model_is_recognised_and_reads() {
    let m = pb::model(&pb::graph(&[], &[pb::raw_f32("w", &[2, 2], &floats(4))]));
    let file = tensorfile::OpenOptions::new().open_bytes(Bytes::from_vec(m)).unwrap();
    assert_eq!(file.format(), Format::Onnx);
    assert_eq!(&file.read("w").unwrap().as_dense().unwrap()[..], &floats(4)[..]);
}

#[test]
fn broken_protobuf_is_refused() {
    let good = pb::model(&pb::graph(&[], &[pb::raw_f32("w", &[2], &floats(2))]));
    // A length past the end: the file cut short.
    assert_eq!(rule(good[..good.len() - 3].to_vec()), Some(Rule::BadProtobuf));
    // Wire type 7 does not exist.
    let mut bad_wire = good.clone();
    bad_wire.extend([(9 << 3) | 7, 0]);
    assert_eq!(rule(bad_wire), Some(Rule::BadProtobuf));
    // A varint of 11 bytes.
    let mut long = pb::int(1, 10);
    long.extend([0x28]);
    long.extend([0xff; 10]);
    long.push(0x01);
    assert_eq!(rule(long), Some(Rule::BadProtobuf));
    // A name that is not UTF-8.
    let t = [pb::int(2, 1), pb::bytes(8, &[0xff, 0xfe])].concat();
    assert_eq!(rule(pb::model(&pb::graph(&[], &[t]))), Some(Rule::BadProtobuf));
}

#[test]
fn a_model_without_a_graph_or_version_is_refused() {
    assert_eq!(rule(pb::int(1, 10)), Some(Rule::MissingField));
    assert_eq!(rule(pb::bytes(7, &pb::graph(&[], &[]))), Some(Rule::MissingField));
}

#[test]
fn graphs_nested_too_deep_are_refused() {
    // A node whose attribute holds a graph, 60 times over.
    let mut g = pb::graph(&[], &[]);
    for _ in 0..60 {
        let attr = [pb::bytes(1, b"body"), pb::bytes(6, &g), pb::int(20, 5)].concat();
        let node = [pb::bytes(4, b"If"), pb::bytes(5, &attr)].concat();
        g = pb::graph(&[node], &[]);
    }
    assert_eq!(rule(pb::model(&g)), Some(Rule::TooDeep));
}

#[test]
fn two_main_initializers_of_one_name_are_refused() {
    let t = pb::raw_f32("w", &[1], &floats(1));
    assert_eq!(rule(pb::model(&pb::graph(&[], &[t.clone(), t]))), Some(Rule::DuplicateName));
}

#[test]
fn a_tensor_whose_data_does_not_fit_its_shape_is_unreadable() {
    let cases = [
        (pb::raw_f32("short", &[3], &floats(2)), Rule::SizeMismatch),
        (pb::tensor("typed", 1, &[3], &pb::bytes(4, &floats(2))), Rule::SizeMismatch),
        (pb::raw_f32("negative", &[-1], &[]), Rule::BadField),
        (pb::tensor("unknown", 99, &[1], &pb::bytes(9, &[0])), Rule::UnknownDType),
        // int4 (22): four elements in one byte of raw_data; three, padded to two bytes.
        (pb::tensor("int4_short", 22, &[4], &pb::bytes(9, &[0x21])), Rule::SizeMismatch),
        (pb::tensor("int4_padded", 22, &[3], &pb::bytes(9, &[0x21, 0x03])), Rule::SizeMismatch),
        (pb::tensor("segmented", 1, &[1], &pb::bytes(3, &pb::int(1, 0))), Rule::UnknownLayout),
    ];
    let (tensors, rules): (Vec<_>, Vec<_>) = cases.into_iter().unzip();
    let mut all = tensors;
    all.push(pb::raw_f32("fine", &[1], &floats(1)));
    let file = open(pb::model(&pb::graph(&[], &all))).unwrap();
    assert_eq!(file.entries().len(), 1);
    let got: Vec<Option<Rule>> = file.unreadable().iter().map(|u| u.error().rule()).collect();
    assert_eq!(got, rules.into_iter().map(Some).collect::<Vec<_>>());
}

#[test]
fn a_sparse_index_past_the_shape_fails_its_read() {
    let values = pb::raw_f32("s", &[1], &floats(1));
    let indices = pb::tensor("i", 7, &[1], &pb::bytes(9, &20i64.to_le_bytes()));
    let sparse = [pb::bytes(1, &values), pb::bytes(2, &indices), pb::int(3, 2), pb::int(3, 3)].concat();
    let mut g = pb::graph(&[], &[]);
    g.extend(pb::bytes(15, &sparse));
    let file = open(pb::model(&g)).unwrap();
    assert_eq!(file.read("s").unwrap_err().rule(), Some(Rule::BadSparse));
}

/// A model in `dir` whose one tensor is external data as given.
fn external_model(dir: &Path, location: &str, offset: Option<u64>, length: Option<u64>) -> std::path::PathBuf {
    let m = pb::model(&pb::graph(&[], &[pb::external("w", &[4], location, offset, length)]));
    let path = dir.join("model.onnx");
    std::fs::write(&path, m).unwrap();
    path
}

#[test]
fn external_data_outside_the_model_folder_is_refused() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("model");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(root.path().join("secret.bin"), floats(4)).unwrap();
    for location in ["../secret.bin", "/etc/passwd", "sub/../../secret.bin"] {
        let path = external_model(&dir, location, None, None);
        let err = TensorFile::open(&path).err().unwrap_or_else(|| panic!("{location} read"));
        assert_eq!(err.rule(), Some(Rule::UnsafePath), "{location}");
    }
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(root.path().join("secret.bin"), dir.join("link.bin")).unwrap();
        let path = external_model(&dir, "link.bin", None, None);
        assert_eq!(TensorFile::open(&path).err().unwrap().rule(), Some(Rule::UnsafePath));
        // A symlink that stays inside the folder is followed.
        std::fs::write(dir.join("real.bin"), floats(4)).unwrap();
        std::os::unix::fs::symlink(dir.join("real.bin"), dir.join("inside.bin")).unwrap();
        let path = external_model(&dir, "inside.bin", None, None);
        assert_eq!(&TensorFile::open(&path).unwrap().read("w").unwrap().as_dense().unwrap()[..], &floats(4)[..]);
    }
}

#[test]
fn external_ranges_are_checked_against_the_data_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("w.bin"), [vec![0u8; 8], floats(4)].concat()).unwrap();
    let ok = external_model(dir.path(), "w.bin", Some(8), Some(16));
    assert_eq!(&TensorFile::open(&ok).unwrap().read("w").unwrap().as_dense().unwrap()[..], &floats(4)[..]);
    // No length: the rest of the file.
    let rest = external_model(dir.path(), "w.bin", Some(8), None);
    assert_eq!(TensorFile::open(&rest).unwrap().entries().len(), 1);
    // A range past the data file's end (a file cut short): that tensor unreadable, naming the
    // rule; the model's other tensors still read.
    for (offset, len) in [(16, 16), (u64::MAX, 16)] {
        let inline = pb::raw_f32("inline", &[4], &floats(4));
        let external = pb::external("w", &[4], "w.bin", Some(offset), Some(len));
        let path = dir.path().join("past.onnx");
        std::fs::write(&path, pb::model(&pb::graph(&[], &[external, inline]))).unwrap();
        let file = TensorFile::open(&path).unwrap();
        assert_eq!(file.unreadable().len(), 1, "{offset}");
        assert_eq!(file.unreadable()[0].name(), "w");
        assert_eq!(file.unreadable()[0].error().rule(), Some(Rule::OutOfBounds), "{offset}");
        assert_eq!(&file.read("inline").unwrap().as_dense().unwrap()[..], &floats(4)[..]);
    }
    let wrong = external_model(dir.path(), "w.bin", Some(0), Some(12));
    let file = TensorFile::open(&wrong).unwrap();
    assert_eq!(file.unreadable()[0].error().rule(), Some(Rule::SizeMismatch));
}

#[test]
fn a_missing_external_data_file_makes_only_its_tensors_unreadable() {
    let dir = tempfile::tempdir().unwrap();
    let inline = pb::raw_f32("inline", &[4], &floats(4));
    let m = pb::model(&pb::graph(&[], &[pb::external("w", &[4], "nothing.bin", None, None), inline]));
    let path = dir.path().join("model.onnx");
    std::fs::write(&path, m).unwrap();
    let file = TensorFile::open(&path).unwrap();
    assert_eq!(&file.read("inline").unwrap().as_dense().unwrap()[..], &floats(4)[..], "the rest is read");
    let [u] = file.unreadable() else { panic!("{:?}", file.unreadable()) };
    assert_eq!((u.name(), u.error().rule()), ("w", Some(Rule::MissingFile)));
    let message = u.error().message();
    let looked_for = dir.path().join("nothing.bin").display().to_string();
    assert!(message.contains(&looked_for), "{message}");
    assert!(
        message.contains("the external data location \"nothing.bin\" of the tensor, in the model's folder"),
        "{message}"
    );
}

#[test]
fn every_cut_and_many_changed_bytes_of_real_models_are_errors_not_panics() {
    let dir = crate::common::fixtures_dir().join("onnx");
    for name in ["storage.onnx", "subgraphs.onnx", "torch_mlp.onnx", "external/model.onnx"] {
        let model = std::fs::read(dir.join(name)).unwrap();
        for cut in 0..model.len() {
            tensorfile::internals::exercise(&model[..cut], Some(Format::Onnx));
        }
        // Each byte set to a few values that break varints, tags and lengths.
        for at in 0..model.len() {
            for v in [0x00, 0x7f, 0x80, 0xff] {
                let mut m = model.clone();
                m[at] = v;
                tensorfile::internals::exercise(&m, Some(Format::Onnx));
            }
        }
    }
}
