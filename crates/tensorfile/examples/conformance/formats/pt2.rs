//! PyTorch archives (`.pt2`): a hand-built torch ≥ 2.9 layout (a weights config and a record
//! per storage), the 2.8 layout (a nested `torch.save` file), and fixtures made by torch.

use tensorfile::{Format, Rule};

use super::Fixtures;
use super::pt::{floats, torch_save};
use crate::build::pickle::one_float_tensor;
use crate::build::zip::{Entry, build};
use crate::case::{Family as F, Folder};

const CONFIG: &str = "archive/data/weights/model_weights_config.json";

fn as_ints(v: &[u64]) -> String {
    let items: Vec<String> = v.iter().map(|d| format!("{{\"as_int\": {d}}}")).collect();
    format!("[{}]", items.join(", "))
}

/// A weights config of one parameter `w` over record `path`.
fn config(path: &str, dtype: u32, sizes: &[u64], strides: &[u64], offset: u64) -> String {
    format!(
        r#"{{"config": {{"w": {{"path_name": "{path}", "is_param": true, "use_pickle": false, "tensor_meta": {{"dtype": {dtype}, "sizes": {}, "strides": {}, "storage_offset": {{"as_int": {offset}}}, "requires_grad": false, "device": {{"type": "cpu"}}, "layout": 7}}}}}}}}"#,
        as_ints(sizes),
        as_ints(strides)
    )
}

/// An archive of model `model`: archive_format, a model definition, `config` and the
/// record `weight_0` (six float32 values).
fn archive(config_text: &str) -> Vec<Entry> {
    vec![
        Entry::stored("archive/archive_format", b"pt2"),
        Entry::stored("archive/archive_version", b"0"),
        Entry::stored("archive/byteorder", b"little"),
        Entry::stored("archive/models/model.json", b"{}"),
        Entry::stored(CONFIG, config_text.as_bytes()),
        Entry::stored("archive/data/weights/weight_0", &floats(6)),
    ]
}

fn good() -> Vec<Entry> {
    archive(&config("weight_0", 7, &[2, 3], &[3, 1], 0))
}

fn bytes(entries: &[Entry]) -> Vec<u8> {
    build(entries).bytes
}

/// The torch 2.8 layout: the weights in a nested torch.save file `data/weights/model.pt`.
fn nested(pkl: &[u8]) -> Vec<u8> {
    let inner = build(&torch_save(pkl, &[("0", &floats(6))])).bytes;
    bytes(&[
        Entry::stored("archive/archive_format", b"pt2"),
        Entry::stored("archive/byteorder", b"little"),
        Entry::stored("archive/models/model.json", b"{}"),
        Entry::stored("archive/data/weights/model.pt", &inner),
    ])
}

pub fn cases(fx: &Fixtures) -> Result<Folder, String> {
    let mut f = Folder::new("pt2", Format::Pt2, "pt2");
    f.valid(
        "weights-config",
        F::Valid,
        "a parameter described by a weights config over a storage record (torch >= 2.9 layout)",
        bytes(&good()),
    );
    let view = archive(&config("weight_0", 7, &[3, 2], &[1, 3], 0));
    f.valid("transposed-view", F::Valid, "a transposed view of its storage record", bytes(&view));
    f.valid(
        "nested-torch-save",
        F::Valid,
        "weights in a nested torch.save file (torch 2.8 layout)",
        nested(&one_float_tensor(&[2, 3])),
    );
    for (stem, path, what) in [
        ("torch-transposed", "pytorch/transposed.pt2", "transposed and permuted parameters (fixture made by torch)"),
        (
            "zipfile-deflated",
            "pytorch/zip/deflated.pt2",
            "views.pt2 re-zipped by Python's zipfile with deflate (fixture)",
        ),
    ] {
        f.valid(stem, F::Valid, what, fx.read(path)?);
    }

    let js = |text: &str| {
        let mut v = good();
        v[4] = Entry::stored(CONFIG, text.as_bytes());
        bytes(&v)
    };
    f.open(
        "config-bad-json",
        F::MalformedJson,
        Rule::BadJson,
        "a weights config that is not JSON",
        js("{\"config\": "),
    );
    f.open(
        "config-not-an-object",
        F::MalformedJson,
        Rule::BadField,
        "a weights config without a \"config\" object",
        js("[1, 2]"),
    );
    let deep = format!("{{\"config\": {{}}, \"x\": {}1{}}}", "[".repeat(300), "]".repeat(300));
    f.open("config-deep-json", F::DeepNesting, Rule::TooDeep, "a weights config with 300 nested arrays", js(&deep));
    let mut v = good();
    v[4] = Entry::stored(CONFIG, b"{\"config\": {\"\xff\": 1}}");
    f.open("config-bad-utf8", F::BadUtf8, Rule::BadUtf8, "a weights config that is not UTF-8", bytes(&v));
    let mut v = good();
    v.retain(|e| !e.name.starts_with(b"archive/models/") && e.name != b"archive/archive_format".to_vec());
    f.open("no-models", F::BadField, Rule::MissingField, "an archive with weights but no model", bytes(&v));
    let mut v = good();
    v.push(Entry::stored("archive/../../evil", b"x"));
    f.open("entry-parent-dir", F::PathEscape, Rule::UnsafePath, "an entry named archive/../../evil", bytes(&v));
    let mut v = good();
    v.push(Entry::stored("/tmp/evil", b"x"));
    f.open("entry-absolute", F::PathEscape, Rule::UnsafePath, "an entry with an absolute path", bytes(&v));
    let mut v = good();
    v.push(Entry::stored("archive/data/weights/weight_0", b"x"));
    f.open(
        "duplicate-entries",
        F::DuplicateName,
        Rule::DuplicateName,
        "two records named data/weights/weight_0",
        bytes(&v),
    );
    let whole = bytes(&good());
    f.open(
        "truncated-directory",
        F::Truncation,
        Rule::BadMagic,
        "the archive cut inside its central directory",
        whole[..whole.len() - 30].to_vec(),
    );
    let mut inner = crate::build::pickle::P::proto(2).global("os", "system").text("id").op(0x85).op(b'R').stop();
    f.open(
        "nested-forbidden-global",
        F::ForbiddenGlobal,
        Rule::ForbiddenGlobal,
        "a nested torch.save file whose pickle calls os.system",
        nested(&inner),
    );
    inner = b"\x80\x02]q\x00(h\x00h\x00h\x00h\x00e.".to_vec();
    f.open(
        "nested-self-containing-list",
        F::MemoExplosion,
        Rule::TooDeep,
        "a nested torch.save file whose pickle holds a list containing itself",
        nested(&inner),
    );

    let c = |text: String| bytes(&archive(&text));
    f.verify(
        "path-name-climbs-out",
        F::PathEscape,
        Rule::MissingField,
        "path_name ../../etc/passwd: looked up inside the archive only, and absent",
        c(config("../../etc/passwd", 7, &[2, 3], &[3, 1], 0)),
    );
    f.verify(
        "record-missing",
        F::BadField,
        Rule::MissingField,
        "path_name weight_9, no such record",
        c(config("weight_9", 7, &[2, 3], &[3, 1], 0)),
    );
    f.verify(
        "view-past-record",
        F::PastEnd,
        Rule::OutOfBounds,
        "a [2, 4] view of a 6-element record",
        c(config("weight_0", 7, &[2, 4], &[4, 1], 0)),
    );
    f.verify(
        "storage-offset-overflows",
        F::Overflow,
        Rule::ShapeOverflow,
        "storage_offset 2^64-1",
        c(config("weight_0", 7, &[1], &[1], u64::MAX)),
    );
    f.verify(
        "view-expands-past-limit",
        F::Overflow,
        Rule::ExpansionTooLarge,
        "a stride-0 view repeating one float 2^40 times",
        c(config("weight_0", 7, &[1 << 40], &[0], 0)),
    );
    f.verify(
        "unknown-dtype",
        F::BadField,
        Rule::UnknownDType,
        "export dtype 99",
        c(config("weight_0", 99, &[2, 3], &[3, 1], 0)),
    );
    f.verify(
        "sizes-and-strides-differ",
        F::BadField,
        Rule::BadField,
        "2 sizes and 1 stride",
        c(config("weight_0", 7, &[2, 3], &[1], 0)),
    );
    f.verify(
        "record-not-whole-elements",
        F::SizeMismatch,
        Rule::SizeMismatch,
        "a float64 tensor over a record of 25 bytes",
        {
            let mut v = archive(&config("weight_0", 8, &[3], &[1], 0));
            v[5] = Entry::stored("archive/data/weights/weight_0", &[0u8; 25]);
            bytes(&v)
        },
    );
    let mut v = good();
    v[5].crc ^= 1;
    f.verify(
        "record-crc-mismatch",
        F::Checksum,
        Rule::ChecksumMismatch,
        "a weight record whose CRC-32 does not match",
        bytes(&v),
    );
    let mut v = good();
    let mut e = Entry::deflated("archive/data/weights/weight_0", &vec![0u8; 1 << 20]);
    e.size = 0xffff_fff0;
    v[5] = e;
    f.verify(
        "deflate-bomb-record",
        F::ZipBomb,
        Rule::DecompressedSizeMismatch,
        "a weight record of 7 KiB of deflate claiming 4 GiB",
        bytes(&v),
    );
    Ok(f)
}
