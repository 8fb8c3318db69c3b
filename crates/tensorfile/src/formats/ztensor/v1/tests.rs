//! zTensor 1.x files built here: every component form reads, every placement rule refuses
//! with its `Rule`.

use super::MAGIC;
use crate::TensorFile;
use crate::error::Rule;
use crate::formats::Format;
use crate::formats::ztensor::v2::tests::build::{V, encode, m, t, uints};
use crate::model::{Checksum, ChecksumKind, DType, Layout, MetaValue, SparseFormat};
use crate::source::Bytes;

/// A file: the magic, `data` from offset 64, the manifest `doc` as CBOR, its length, the magic.
fn file(data: &[u8], doc: &V) -> Vec<u8> {
    let mut b = MAGIC.to_vec();
    b.resize(64, 0);
    b.extend_from_slice(data);
    let cbor = encode(doc);
    b.extend_from_slice(&cbor);
    b.extend_from_slice(&(cbor.len() as u64).to_le_bytes());
    b.extend_from_slice(MAGIC);
    b
}

fn component(dtype: &str, offset: u64, length: u64, more: Vec<(&str, V)>) -> V {
    let mut fields = vec![("dtype", t(dtype)), ("offset", V::U(offset)), ("length", V::U(length))];
    fields.extend(more);
    m(fields)
}

fn object(shape: &[u64], format: &str, components: Vec<(&str, V)>) -> V {
    m(vec![("shape", uints(shape)), ("format", t(format)), ("components", m(components))])
}

fn manifest(objects: Vec<(&str, V)>) -> V {
    m(vec![("version", t("1.2.0")), ("objects", m(objects))])
}

fn open(bytes: Vec<u8>) -> TensorFile {
    crate::file::OpenOptions::new().open_bytes(Bytes::from_vec(bytes)).unwrap()
}

fn refused(bytes: Vec<u8>) -> Option<Rule> {
    crate::file::OpenOptions::new().open_bytes(Bytes::from_vec(bytes)).err().and_then(|e| e.rule())
}

#[test]
fn dense_components_raw_zstd_and_with_digests_read() {
    let raw: Vec<u8> = (0..24).collect();
    let packed = zstd::bulk::compress(&raw, 3).unwrap();
    let mut data = raw.clone();
    data.resize(64, 0);
    data.extend_from_slice(&packed);
    data.resize(128, 0);
    data.extend_from_slice(&[1, 0, 1]);
    let crc = Checksum::compute(ChecksumKind::Crc32c, &packed).unwrap().to_string();
    let sha = Checksum::compute(ChecksumKind::Sha256, &raw).unwrap().to_string();
    let zfields = vec![("encoding", t("zstd")), ("uncompressed_length", V::U(24)), ("digest", t(&crc))];
    let doc = m(vec![
        ("version", t("1.2.0")),
        ("attributes", m(vec![("source", t("test")), ("n", V::U(3))])),
        (
            "objects",
            m(vec![
                ("a", object(&[2, 3], "dense", vec![("data", component("f32", 64, 24, vec![("digest", t(&sha))]))])),
                ("z", object(&[12], "dense", vec![("data", component("i16", 128, packed.len() as u64, zfields))])),
                ("b", object(&[3], "dense", vec![("data", component("bool", 192, 3, vec![]))])),
            ]),
        ),
    ]);
    let bytes = file(&data, &doc);
    assert_eq!(Format::detect(&bytes).unwrap(), Format::Zt1);
    let file = open(bytes);
    assert_eq!(file.format(), Format::Zt1);
    assert_eq!(file.summary().version, "1.2.0");
    let meta = file.summary().metadata;
    assert!(meta.contains(&("source".to_string(), MetaValue::Text("test".into()))), "{meta:?}");
    for name in ["a", "z"] {
        let i = file.index_of(name).unwrap();
        assert_eq!(file.read_verified(i).unwrap().as_dense().unwrap().as_ref(), raw.as_slice(), "{name}");
    }
    assert_eq!(file.entry("b").unwrap().info().dtype(), DType::Bool);
    let v = file.verify_with(crate::Depth::Deep);
    assert!(v.ok(), "{:?}", v.problems);
    assert_eq!(v.checksums, 2, "digests over the stored bytes: zstd's compressed ones");
}

#[test]
fn sparse_formats_read_and_others_are_unreadable() {
    let u64s = |v: &[u64]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let mut data = u64s(&[0, 2, 3]);
    data.resize(64, 0);
    data.extend_from_slice(&u64s(&[0, 2, 1]));
    data.resize(128, 0);
    data.extend_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
    let csr = object(
        &[2, 3],
        "sparse_csr",
        vec![
            ("indptr", component("u64", 64, 24, vec![])),
            ("indices", component("u64", 128, 24, vec![])),
            ("values", component("f32", 192, 12, vec![])),
        ],
    );
    let quant = object(&[12], "quantized_group", vec![("data", component("u8", 192, 12, vec![]))]);
    let file = open(file(&data, &manifest(vec![("csr", csr), ("q", quant)])));
    let e = file.entry("csr").unwrap();
    assert_eq!(*e.info().layout(), Layout::Sparse { format: SparseFormat::Csr, nnz: 3 });
    assert_eq!(file.read("csr").unwrap().to_sparse().unwrap().indices(), [0, 2, 1]);
    assert_eq!(file.unreadable()[0].error().rule(), Some(Rule::UnknownLayout));
}

#[test]
fn placement_and_structure_rules() {
    let dense = |dtype: &str, shape: &[u64], offset: u64, length: u64| {
        file(
            &[0; 128],
            &manifest(vec![("t", object(shape, "dense", vec![("data", component(dtype, offset, length, vec![]))]))]),
        )
    };
    assert_eq!(refused(dense("u8", &[8], 64, 8)), None);
    assert_eq!(refused(dense("u8", &[8], 65, 8)), Some(Rule::Misaligned));
    assert_eq!(refused(dense("u8", &[8], 0, 8)), Some(Rule::Misaligned), "over the magic");
    assert_eq!(refused(dense("u8", &[8], 192, 8)), Some(Rule::OutOfBounds), "into the manifest");
    assert_eq!(refused(dense("u8", &[8], u64::MAX - 63, 128)), Some(Rule::OutOfBounds));
    assert_eq!(refused(dense("f32", &[3], 64, 8)), Some(Rule::SizeMismatch));
    assert_eq!(refused(dense("f8", &[8], 64, 8)), Some(Rule::UnknownDType));
    let two = file(
        &[0; 128],
        &manifest(vec![
            ("a", object(&[16], "dense", vec![("data", component("u8", 64, 16, vec![]))])),
            ("b", object(&[8], "dense", vec![("data", component("u8", 64, 8, vec![]))])),
        ]),
    );
    assert_eq!(refused(two), Some(Rule::Overlap));
    let zstd = vec![("encoding", t("zstd"))];
    let no_length =
        file(&[0; 64], &manifest(vec![("t", object(&[8], "dense", vec![("data", component("u8", 64, 8, zstd))]))]));
    assert_eq!(refused(no_length), Some(Rule::MissingField));
    assert_eq!(refused(file(&[], &m(vec![("version", t("1.2.0"))]))), Some(Rule::MissingField));
    let good = dense("u8", &[8], 64, 8);
    let n = good.len();
    let mut tail = good.clone();
    tail[n - 1] = b'1';
    assert_eq!(refused(tail), Some(Rule::BadMagic));
    let mut length = good.clone();
    length[n - 16..n - 8].copy_from_slice(&u64::MAX.to_le_bytes());
    assert_eq!(refused(length), Some(Rule::HeaderTooLarge));
    assert_eq!(refused(good[..20].to_vec()), Some(Rule::Truncated));
}
