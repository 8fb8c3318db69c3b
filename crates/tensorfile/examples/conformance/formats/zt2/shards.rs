//! zTensor 2 shard tables refused at open (spec §7.1): names that could leave the folder or
//! break the character set, entries without their identity, references to shards the table
//! lacks, blobs past a shard's data or overlapping in it (checked from the root alone).

use super::{File, m, manifest, object, part, uints};
use crate::build::cbor::{C, t};
use crate::case::{Family as F, Folder};
use tensorfile::Rule;

/// A root whose one object lives in shard `name`, whose table says `size` and `digest`.
fn root_with_shard(name: &str, size: u64, digest: &str, blob: [u64; 2]) -> Vec<u8> {
    let table = super::map(vec![(t(name), m(vec![("size", C::U(size)), ("digest", t(digest))]))]);
    let d = object(&[blob[1]], "dense", vec![("data", part("u8", uints(&blob), vec![("shard", t(name))]))], None);
    File::new().finish(&m(vec![("objects", m(vec![("t", d)])), ("shards", table)]))
}

pub(super) fn cases(f: &mut Folder) {
    let digest = "xxh3:00112233445566aa";
    for (stem, name, rule, family, what) in [
        ("shard-name-traversal", "../etc/passwd", Rule::UnsafePath, F::PathEscape, "a shard named ../etc/passwd"),
        ("shard-name-separator", "sub/dir", Rule::UnsafePath, F::PathEscape, "a shard name with a slash"),
        ("shard-name-leading-dot", ".hidden", Rule::UnsafePath, F::PathEscape, "a shard name starting with a dot"),
        ("shard-name-empty", "", Rule::BadField, F::BadField, "a shard named by the empty string"),
        ("shard-name-space", "a b", Rule::BadField, F::BadField, "a shard name with a space"),
    ] {
        f.open(stem, family, rule, what, root_with_shard(name, 1 << 20, digest, [4096, 8]));
    }
    f.open(
        "shard-too-small",
        F::BadField,
        Rule::BadField,
        "a shard of 47 bytes",
        root_with_shard("base", 47, digest, [4096, 0]),
    );
    f.open(
        "shard-blob-past-end",
        F::PastEnd,
        Rule::OutOfBounds,
        "a blob past the data of its shard (from the table's size alone)",
        root_with_shard("base", 4096 + 47, digest, [4096, 8]),
    );
    let no_table =
        object(&[8], "dense", vec![("data", part("u8", uints(&[4096, 8]), vec![("shard", t("base"))]))], None);
    f.open(
        "shard-not-in-table",
        F::BadField,
        Rule::ShardMismatch,
        "a part naming a shard the manifest has no table for",
        File::new().finish(&manifest(vec![("t", no_table)])),
    );
    let key_not_text = super::map(vec![(C::U(1), m(vec![("size", C::U(1 << 20)), ("digest", t(digest))]))]);
    f.open(
        "shard-key-not-text",
        F::BadField,
        Rule::BadField,
        "a shard table keyed by 1",
        File::new().finish(&m(vec![("objects", m(vec![])), ("shards", key_not_text)])),
    );
    let no_digest = m(vec![("base", m(vec![("size", C::U(1 << 20))]))]);
    f.open(
        "shard-without-digest",
        F::BadField,
        Rule::MissingField,
        "a shard table entry without its digest",
        File::new().finish(&m(vec![("objects", m(vec![])), ("shards", no_digest)])),
    );
    let d = |blob: [u64; 2]| {
        object(&[blob[1]], "dense", vec![("data", part("u8", uints(&blob), vec![("shard", t("base"))]))], None)
    };
    let table = m(vec![("base", m(vec![("size", C::U(1 << 20)), ("digest", t(digest))]))]);
    f.open(
        "shard-blob-overlap",
        F::Overlap,
        Rule::Overlap,
        "two blobs of one shard partly overlapping (checked from the root alone)",
        File::new()
            .finish(&m(vec![("objects", m(vec![("a", d([4096, 8192])), ("b", d([8192, 8]))])), ("shards", table)])),
    );
}
