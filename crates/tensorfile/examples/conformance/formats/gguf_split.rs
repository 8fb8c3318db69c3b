//! Split GGUF models (`NAME-00001-of-00003.gguf`..., llama.cpp's `llama-gguf-split`): each case
//! is a part opened by its path, the other parts of its model beside it in the folder. Valid:
//! a model opened from its first and from a middle part, one whose first part holds metadata
//! alone. Refused at open: a part missing, a part named otherwise than its `split.no` says, a
//! part numbered or counted otherwise, tensors other than `split.tensors.count` says, a name in
//! two parts, split keys of the wrong type or missing, a part that is not GGUF.

use tensorfile::{Format, Rule};

use crate::case::{Family as F, Folder};

/// Value types.
const U16: u32 = 2;
const U32: u32 = 4;
const I32: u32 = 5;
const STRING: u32 = 8;

/// A GGUF string: `u64` length, bytes.
fn s(b: &str) -> Vec<u8> {
    [(b.len() as u64).to_le_bytes().to_vec(), b.as_bytes().to_vec()].concat()
}

/// A key/value of type `vtype` whose value bytes are `payload`.
fn kv(key: &str, vtype: u32, payload: &[u8]) -> Vec<u8> {
    [s(key), vtype.to_le_bytes().to_vec(), payload.to_vec()].concat()
}

/// A version 3 little-endian GGUF file of `kvs` and F32 tensors of 4 elements named `names`,
/// laid out as llama-gguf-split lays them out (data padded to 32).
fn gguf(kvs: &[Vec<u8>], names: &[&str]) -> Vec<u8> {
    let mut b = b"GGUF".to_vec();
    b.extend(3u32.to_le_bytes());
    b.extend((names.len() as u64).to_le_bytes());
    b.extend((kvs.len() as u64).to_le_bytes());
    kvs.iter().for_each(|k| b.extend(k));
    for (i, name) in names.iter().enumerate() {
        b.extend(s(name));
        b.extend(1u32.to_le_bytes());
        b.extend(4u64.to_le_bytes());
        b.extend(0u32.to_le_bytes());
        b.extend((32 * i as u64).to_le_bytes());
    }
    b.resize(b.len().next_multiple_of(32), 0);
    for i in 0..names.len() {
        let values: Vec<u8> = (0..4).flat_map(|k| (i as f32 + k as f32 / 4.0).to_le_bytes()).collect();
        b.extend(values);
        b.resize(b.len().next_multiple_of(32), 0);
    }
    b
}

/// The split keys of part `no` of `count` of a model of `total` tensors, in llama-gguf-split's
/// order.
fn keys(no: u16, count: u16, total: i32) -> Vec<Vec<u8>> {
    vec![
        kv("split.no", U16, &no.to_le_bytes()),
        kv("split.tensors.count", I32, &total.to_le_bytes()),
        kv("split.count", U16, &count.to_le_bytes()),
    ]
}

/// The first part's key/values: the model's, then the split keys.
fn first_keys(count: u16, total: i32) -> Vec<Vec<u8>> {
    [vec![kv("general.architecture", STRING, &s("llama"))], keys(0, count, total)].concat()
}

/// A model `name` of parts holding `tensors` each: every part's file name and bytes.
fn model(name: &str, tensors: &[&[&str]]) -> Vec<(String, Vec<u8>)> {
    let count = tensors.len() as u16;
    let total = tensors.iter().map(|t| t.len()).sum::<usize>() as i32;
    tensors
        .iter()
        .enumerate()
        .map(|(no, names)| {
            let kvs = if no == 0 { first_keys(count, total) } else { keys(no as u16, count, total) };
            (format!("{name}-{:05}-of-{count:05}.gguf", no + 1), gguf(&kvs, names))
        })
        .collect()
}

/// The case opened from part `opened` (from 0) of `parts`, the others beside it.
fn case(f: &mut Folder, parts: Vec<(String, Vec<u8>)>, opened: usize, expect: Option<Rule>, family: F, desc: &str) {
    let mut beside = parts;
    let (name, bytes) = beside.remove(opened);
    let stem = name.strip_suffix(".gguf").unwrap_or(&name).to_string();
    f.by_path(&stem, family, expect, desc, bytes, beside);
}

pub fn cases() -> Folder {
    let mut f = Folder::new("gguf-split", Format::Gguf, "gguf");
    let three: &[&[&str]] = &[&["a", "b"], &["c"], &["d", "e"]];
    case(&mut f, model("model", three), 0, None, F::Valid, "three parts opened from the first: five tensors");
    case(&mut f, model("middle", three), 1, None, F::Valid, "three parts opened from the second");
    let no_first: &[&[&str]] = &[&[], &["a", "b"], &["c"]];
    case(
        &mut f,
        model("meta-first", no_first),
        2,
        None,
        F::Valid,
        "a first part of metadata alone (--no-tensor-first-split)",
    );

    let mut missing = model("missing", three);
    missing.remove(2);
    case(&mut f, missing, 0, Some(Rule::MissingFile), F::SplitParts, "the third of three parts is not there");
    let mut renamed = model("renamed", &[&["a"], &["b"]]);
    renamed[0].0 = "renamed.gguf".into();
    case(
        &mut f,
        renamed,
        0,
        Some(Rule::ShardMismatch),
        F::SplitParts,
        "part 1 of 2 named renamed.gguf: the others cannot be found",
    );
    let mut renumbered = model("renumbered", three);
    renumbered[2].1 = gguf(&keys(1, 3, 5), &["d", "e"]);
    case(&mut f, renumbered, 0, Some(Rule::ShardMismatch), F::SplitParts, "the third part says split.no 1");
    let mut recounted = model("recounted", three);
    recounted[1].1 = gguf(&keys(1, 4, 5), &["c"]);
    case(
        &mut f,
        recounted,
        0,
        Some(Rule::ShardMismatch),
        F::SplitParts,
        "the second part says split.count 4 of 3 parts",
    );
    let mut miscounted = model("tensors", three);
    miscounted[0].1 = gguf(&first_keys(3, 6), &["a", "b"]);
    case(
        &mut f,
        miscounted,
        1,
        Some(Rule::ShardMismatch),
        F::SplitParts,
        "split.tensors.count 6, five tensors in the parts",
    );
    let duplicate: &[&[&str]] = &[&["a", "b"], &["b"]];
    case(&mut f, model("duplicate", duplicate), 0, Some(Rule::DuplicateName), F::DuplicateName, "b in two parts");
    let mut uncounted = model("uncounted", &[&["a"], &["b"]]);
    uncounted[0].1 =
        gguf(&[kv("split.no", U16, &0u16.to_le_bytes()), kv("split.count", U16, &2u16.to_le_bytes())], &["a"]);
    case(&mut f, uncounted, 1, Some(Rule::MissingField), F::SplitParts, "the first part has no split.tensors.count");
    let mut not_gguf = model("not-gguf", &[&["a"], &["b"]]);
    not_gguf[1].1 = b"{\"b\": 1}".to_vec();
    case(&mut f, not_gguf, 0, Some(Rule::UnknownFormat), F::SplitParts, "the second part is JSON, not GGUF");
    let wide = gguf(&[kv("split.count", U32, &2u32.to_le_bytes())], &["a"]);
    case(
        &mut f,
        vec![("wide-00001-of-00002.gguf".into(), wide)],
        0,
        Some(Rule::BadMetadata),
        F::BadField,
        "split.count a u32, not the u16 llama.cpp reads",
    );
    let unnumbered = gguf(&[kv("split.count", U16, &2u16.to_le_bytes())], &["a"]);
    case(
        &mut f,
        vec![("unnumbered-00001-of-00002.gguf".into(), unnumbered)],
        0,
        Some(Rule::MissingField),
        F::BadField,
        "split.count 2 and no split.no",
    );
    let beyond = gguf(&keys(2, 2, 1), &["a"]);
    case(
        &mut f,
        vec![("beyond-00003-of-00002.gguf".into(), beyond)],
        0,
        Some(Rule::ShardMismatch),
        F::SplitParts,
        "split.no 2 of split.count 2",
    );
    f
}
