//! safetensors: a u64 header length, a JSON header, data that the tensors tile exactly.

use tensorfile::{Format, Rule};

use super::Fixtures;
use crate::case::{Family as F, Folder};

/// A file of `header` (bytes, not necessarily UTF-8) and `data_len` data bytes.
fn file(header: &[u8], data: &[u8]) -> Vec<u8> {
    let mut f = (header.len() as u64).to_le_bytes().to_vec();
    f.extend_from_slice(header);
    f.extend_from_slice(data);
    f
}

fn text(header: &str, data_len: usize) -> Vec<u8> {
    file(header.as_bytes(), &vec![0x3c; data_len])
}

fn tensor(name: &str, dtype: &str, shape: &str, begin: u64, end: u64) -> String {
    format!(r#""{name}":{{"dtype":"{dtype}","shape":{shape},"data_offsets":[{begin},{end}]}}"#)
}

pub fn cases(fx: &Fixtures) -> Result<Folder, String> {
    let mut f = Folder::new("safetensors", Format::Safetensors, "safetensors");
    let t = tensor("t", "F32", "[2]", 0, 8);

    let h = format!(
        r#"{{"__metadata__":{{"format":"pt"}},{},{}}}"#,
        tensor("a", "F64", "[2]", 0, 16),
        tensor("b", "U8", "[3]", 16, 19)
    );
    f.valid("two-tensors", F::Valid, "a float64 and a uint8 tensor with metadata", text(&h, 19));
    f.valid("no-tensors", F::Valid, "the header {} and no data", text("{}", 0));
    let h = format!("{{{},{}}}", tensor("s", "F32", "[]", 0, 4), tensor("e", "F32", "[0,3]", 4, 4));
    f.valid("scalar-and-empty", F::Valid, "a 0-d tensor, and a zero-size one at the end", text(&h, 4));
    let h = format!("{{{}}}         ", tensor("t", "BF16", "[2]", 0, 4));
    f.valid(
        "header-padding",
        F::Valid,
        "a header padded with trailing spaces, as the safetensors library pads it",
        text(&h, 4),
    );
    for (stem, path, what) in [
        ("library-dtypes", "safetensors/dtypes.safetensors", "every dtype (fixture made by pip safetensors)"),
        ("library-metadata", "safetensors/metadata.safetensors", "metadata (fixture made by pip safetensors)"),
        (
            "library-zero-size",
            "safetensors/zero_size.safetensors",
            "zero-size tensors (fixture made by pip safetensors)",
        ),
    ] {
        f.valid(stem, F::Valid, what, fx.read(path)?);
    }

    let tr = Rule::Truncated;
    f.open("truncated-in-length", F::Truncation, tr, "3 bytes: cut inside the header length", vec![1, 2, 3]);
    let mut short = 50u64.to_le_bytes().to_vec();
    short.extend_from_slice(b"{}");
    f.open("truncated-header", F::Truncation, tr, "a header length of 50 followed by 2 bytes", short);
    let whole = text(&format!("{{{t}}}"), 8);
    f.open(
        "truncated-in-data",
        F::Truncation,
        Rule::OutOfBounds,
        "a file cut inside its data",
        whole[..whole.len() - 3].to_vec(),
    );
    f.open("header-length-past-end", F::PastEnd, tr, "a header length one byte more than the file holds", {
        let mut b = text("{}", 0);
        b[0] = 3;
        b
    });
    f.open(
        "header-length-huge",
        F::PastEnd,
        Rule::HeaderTooLarge,
        "a header length of 2^64-1",
        u64::MAX.to_le_bytes().to_vec(),
    );
    f.open(
        "header-length-over-limit",
        F::PastEnd,
        Rule::HeaderTooLarge,
        "a header length of 100,000,001 (the limit is 100,000,000)",
        100_000_001u64.to_le_bytes().to_vec(),
    );

    let utf = Rule::BadUtf8;
    f.open("bad-utf8-header", F::BadUtf8, utf, "a header with the bytes ff fe", file(b"{\"\xff\xfe\":1}", &[]));
    let mut name = b"{\"w\xc0\x80\":".to_vec();
    name.extend_from_slice(br#"{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}"#);
    f.open("overlong-utf8-name", F::BadUtf8, utf, "a tensor name with an overlong NUL (c0 80)", file(&name, &[0]));

    let js = Rule::BadJson;
    f.open("json-not-an-object", F::MalformedJson, js, "the header [1,2]", text("[1,2]", 0));
    f.open("json-cut-short", F::MalformedJson, js, "the header {\"t\": ", text("{\"t\": ", 0));
    f.open("json-trailing-garbage", F::MalformedJson, js, "an object followed by x", text("{} x", 0));
    f.open(
        "json-lone-surrogate",
        F::MalformedJson,
        js,
        "a name escaped as a lone surrogate \\ud800",
        text(r#"{"\ud800":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}"#, 1),
    );
    let deep = format!("{}{}", "{\"a\":".repeat(200), "1}".repeat(200));
    f.open("deep-objects", F::DeepNesting, Rule::TooDeep, "200 nested objects", text(&deep, 0));
    let deep = format!(r#"{{"__metadata__":{{"k":{}1{}}}}}"#, "[".repeat(300), "]".repeat(300));
    f.open("deep-arrays", F::DeepNesting, Rule::TooDeep, "300 nested arrays inside the metadata", text(&deep, 0));

    f.open(
        "duplicate-names",
        F::DuplicateName,
        Rule::DuplicateName,
        "two tensors named t",
        text(&format!("{{{t},{t}}}"), 8),
    );
    let bm = Rule::BadMetadata;
    f.open("metadata-not-strings", F::BadField, bm, "__metadata__ {\"k\": 1}", text(r#"{"__metadata__":{"k":1}}"#, 0));
    f.open("metadata-not-an-object", F::BadField, bm, "__metadata__ []", text(r#"{"__metadata__":[]}"#, 0));
    let mf = Rule::MissingField;
    f.open(
        "missing-data-offsets",
        F::BadField,
        mf,
        "a tensor without data_offsets",
        text(r#"{"t":{"dtype":"F32","shape":[2]}}"#, 8),
    );
    f.open(
        "missing-dtype",
        F::BadField,
        mf,
        "a tensor without dtype",
        text(r#"{"t":{"shape":[2],"data_offsets":[0,8]}}"#, 8),
    );
    let bf = Rule::BadField;
    let neg = tensor("t", "F32", "[-2]", 0, 8);
    f.open("negative-dimension", F::BadField, bf, "shape [-2]", text(&format!("{{{neg}}}"), 8));
    f.open("entry-not-an-object", F::BadField, bf, "a tensor that is a number", text(r#"{"t":5}"#, 0));
    f.open(
        "rank-over-limit",
        F::BadField,
        bf,
        "65 dimensions",
        text(&format!("{{{}}}", tensor("t", "U8", &format!("[{}]", vec!["1"; 65].join(",")), 0, 1)), 1),
    );

    let oob = Rule::OutOfBounds;
    f.open("data-offsets-past-end", F::PastEnd, oob, "[0, 8] with 4 data bytes", text(&format!("{{{t}}}"), 4));
    let huge = tensor("t", "F32", "[2]", 0, u64::MAX);
    f.open("data-offsets-huge", F::Overflow, oob, "data_offsets [0, 2^64-1]", text(&format!("{{{huge}}}"), 8));
    let rev = tensor("t", "F32", "[2]", 8, 0);
    f.open("data-offsets-reversed", F::BadField, bf, "data_offsets [8, 0]", text(&format!("{{{rev}}}"), 8));
    let ov = format!("{{{},{}}}", tensor("a", "F32", "[2]", 0, 8), tensor("b", "F32", "[1]", 4, 8));
    f.open("overlapping", F::Overlap, Rule::Overlap, "a at 0..8, b at 4..8", text(&ov, 8));
    let nt = Rule::NotTiled;
    f.open(
        "hole",
        F::NotTiled,
        nt,
        "data_offsets [4, 12]: bytes 0..4 belong to no tensor",
        text(&format!("{{{}}}", tensor("t", "F32", "[2]", 4, 12)), 12),
    );
    f.open("trailing-bytes", F::NotTiled, nt, "one data byte after the last tensor", text(&format!("{{{t}}}"), 9));

    let one = |h: String, n: usize| text(&format!("{{{h}}}"), n);
    f.verify("unknown-dtype", F::BadField, Rule::UnknownDType, "dtype Q7", one(tensor("t", "Q7", "[2]", 0, 2), 2));
    f.verify(
        "size-mismatch",
        F::SizeMismatch,
        Rule::SizeMismatch,
        "F32 [3] over 8 bytes",
        one(tensor("t", "F32", "[3]", 0, 8), 8),
    );
    f.verify(
        "shape-product-overflows",
        F::Overflow,
        Rule::ShapeOverflow,
        "U8 [2^32, 2^32]",
        one(tensor("t", "U8", "[4294967296,4294967296]", 0, 1), 1),
    );
    f.verify(
        "byte-size-overflows",
        F::Overflow,
        Rule::ShapeOverflow,
        "F64 [2^62]: 2^65 bytes",
        one(tensor("t", "F64", "[4611686018427387904]", 0, 8), 8),
    );
    Ok(f)
}
