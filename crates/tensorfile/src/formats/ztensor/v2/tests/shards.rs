//! Parts in shard files beside the root (spec §7), found by the positional convention and
//! checked against the root's shard table.

use super::build::{File, V, m, object, part, t, uints};
use crate::error::Rule;
use crate::model::MetaValue;
use crate::source::Bytes;
use crate::{Depth, TensorFile};

/// A root `model.zt` in `dir` with `here` in itself and `there` in shard `00001`, whose table
/// entry says `size` and `digest` (`None`: the shard's own).
fn root(dir: &std::path::Path, shard: &[u8], size: Option<u64>, digest: Option<String>) -> std::path::PathBuf {
    let mut f = File::default();
    let here = f.blob(&[1, 2, 3, 4]);
    let own = format!("xxh3:{:016x}", xxhash_rust::xxh3::xxh3_64(shard));
    let table = m(vec![(
        "00001",
        m(vec![("size", V::U(size.unwrap_or(shard.len() as u64))), ("digest", t(&digest.unwrap_or(own)))]),
    )]);
    let dense = |blob: V, more: Vec<(&str, V)>| object(&[4], "dense", vec![("data", part("u8", blob, more))], None);
    let objects =
        m(vec![("here", dense(here, vec![])), ("there", dense(uints(&[4096, 4]), vec![("shard", t("00001"))]))]);
    let path = dir.join("model.zt");
    std::fs::write(&path, f.finish(&m(vec![("objects", objects), ("shards", table)]))).unwrap();
    path
}

fn data_shard(bytes: &[u8]) -> Vec<u8> {
    let mut f = File::default();
    f.blob(bytes);
    f.finish_data_shard()
}

#[test]
fn parts_are_read_from_the_shard_beside_the_root() {
    let dir = tempfile::tempdir().unwrap();
    let shard = data_shard(&[9, 8, 7, 6]);
    std::fs::write(dir.path().join("model-00001.zt"), &shard).unwrap();
    let file = TensorFile::open(root(dir.path(), &shard, None, None)).unwrap();
    assert!(file.unreadable().is_empty(), "{:?}", file.unreadable());
    assert_eq!(file.read("here").unwrap().as_dense().unwrap().as_ref(), &[1, 2, 3, 4]);
    assert_eq!(file.read("there").unwrap().as_dense().unwrap().as_ref(), &[9, 8, 7, 6]);
    let v = file.verify_with(Depth::Deep);
    assert!(v.ok(), "{:?}", v.problems);
    assert_eq!(v.checksums, 1, "the shard's whole-file digest");
    assert!(file.summary().details.contains(&("shards".to_string(), MetaValue::Int(1))));
    // The shard opened alone is a data shard: no entries.
    let alone = TensorFile::open(dir.path().join("model-00001.zt")).unwrap();
    assert!(alone.entries().is_empty());
}

#[test]
fn a_shard_may_be_any_zt2_file() {
    let dir = tempfile::tempdir().unwrap();
    let shard = super::build::dense_file(&[("own", "u8", None, &[4], &[5, 5, 5, 5])]);
    std::fs::write(dir.path().join("model-00001.zt"), &shard).unwrap();
    let file = TensorFile::open(root(dir.path(), &shard, None, None)).unwrap();
    assert_eq!(file.read("there").unwrap().as_dense().unwrap().as_ref(), &[5, 5, 5, 5]);
}

#[test]
fn a_shard_that_is_not_the_one_named_makes_its_tensors_unreadable() {
    let shard = data_shard(&[9, 8, 7, 6]);
    let unreadable = |size: Option<u64>, write: Option<&[u8]>| {
        let dir = tempfile::tempdir().unwrap();
        if let Some(bytes) = write {
            std::fs::write(dir.path().join("model-00001.zt"), bytes).unwrap();
        }
        let file = TensorFile::open(root(dir.path(), &shard, size, None)).unwrap();
        assert!(file.entry("here").is_some());
        let [u] = file.unreadable() else { panic!("{:?}", file.unreadable()) };
        assert_eq!(u.name(), "there");
        u.error().rule()
    };
    assert_eq!(unreadable(Some(1 << 20), Some(&shard)), Some(Rule::ShardMismatch), "another size");
    assert_eq!(unreadable(None, None), Some(Rule::MissingFile), "missing");
    let mut version = shard.clone();
    let n = version.len();
    version[n - 16] = 9;
    assert_eq!(unreadable(None, Some(&version)), Some(Rule::BadField), "another footer version");
    let mut magic = shard.clone();
    magic[0] = 0;
    assert_eq!(unreadable(None, Some(&magic)), Some(Rule::BadMagic));
}

#[test]
fn a_missing_shard_names_the_file_looked_for_and_how_the_name_was_found() {
    let dir = tempfile::tempdir().unwrap();
    let shard = data_shard(&[9, 8, 7, 6]);
    let path = root(dir.path(), &shard, None, None);
    let file = TensorFile::open(&path).unwrap();
    assert_eq!(file.read("here").unwrap().as_dense().unwrap().as_ref(), &[1, 2, 3, 4], "the rest is read");
    let [u] = file.unreadable() else { panic!("{:?}", file.unreadable()) };
    let e = u.error();
    assert_eq!(e.rule(), Some(Rule::MissingFile));
    assert!(matches!(e.kind(), crate::ErrorKind::Io(io) if io.kind() == std::io::ErrorKind::NotFound), "{e:?}");
    let message = e.message();
    let looked_for = dir.path().join("model-00001.zt");
    assert!(message.contains(&looked_for.display().to_string()), "{message}");
    assert!(message.contains("shard \"00001\" of the root's shard table"), "{message}");
    assert!(message.contains("in the root's folder"), "{message}");
    assert!(message.ends_with("[missing-file]"), "{message}");
}

#[test]
fn a_shard_whose_digest_differs_fails_verification() {
    let dir = tempfile::tempdir().unwrap();
    let shard = data_shard(&[9, 8, 7, 6]);
    std::fs::write(dir.path().join("model-00001.zt"), &shard).unwrap();
    let path = root(dir.path(), &shard, None, Some("xxh3:0000000000000000".into()));
    let file = TensorFile::open(&path).unwrap();
    assert!(file.read("there").is_ok(), "the identity is checked when verifying");
    let v = file.verify_with(Depth::Checksums);
    let [p] = v.problems.as_slice() else { panic!("{:?}", v.problems) };
    assert_eq!(p.rule(), Some(Rule::ChecksumMismatch));
    assert_eq!(p.path(), Some(dir.path().join("model-00001.zt").as_path()));
}

#[test]
fn a_root_in_memory_has_no_folder_for_its_shards() {
    let dir = tempfile::tempdir().unwrap();
    let shard = data_shard(&[9, 8, 7, 6]);
    let path = root(dir.path(), &shard, None, None);
    std::fs::write(dir.path().join("model-00001.zt"), &shard).unwrap();
    let file = crate::file::OpenOptions::new().open_bytes(Bytes::from_vec(std::fs::read(path).unwrap())).unwrap();
    assert_eq!(file.unreadable()[0].name(), "there");
    assert!(matches!(file.unreadable()[0].error().kind(), crate::ErrorKind::Unsupported(_)));
}
