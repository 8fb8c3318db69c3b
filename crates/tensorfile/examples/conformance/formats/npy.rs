//! `.npy`: a magic, a version, a header length, a Python-literal header dict, then the data.
//! Built here field by field, plus fixtures made by numpy.

use tensorfile::{Format, Rule};

use super::Fixtures;
use crate::case::{Family as F, Folder};

/// An `.npy` file of format `version` with header `dict` (padded to 64 bytes as numpy pads it)
/// and `data`.
pub fn npy(version: u8, dict: &str, data: &[u8]) -> Vec<u8> {
    let prefix = if version == 1 { 10 } else { 12 };
    let mut text = dict.as_bytes().to_vec();
    text.resize((prefix + text.len() + 1).next_multiple_of(64) - prefix - 1, b' ');
    text.push(b'\n');
    raw(version, &text, text.len() as u32, data)
}

/// An `.npy` file whose header length field says `declared`, whatever `header` holds.
fn raw(version: u8, header: &[u8], declared: u32, data: &[u8]) -> Vec<u8> {
    let mut f = b"\x93NUMPY".to_vec();
    f.extend_from_slice(&[version, 0]);
    if version == 1 {
        f.extend_from_slice(&(declared as u16).to_le_bytes());
    } else {
        f.extend_from_slice(&declared.to_le_bytes());
    }
    f.extend_from_slice(header);
    f.extend_from_slice(data);
    f
}

/// A header dict of `descr`, `fortran_order` and `shape` (given as Python text).
pub fn dict(descr: &str, fortran: bool, shape: &str) -> String {
    let fortran = if fortran { "True" } else { "False" };
    format!("{{'descr': '{descr}', 'fortran_order': {fortran}, 'shape': {shape}, }}")
}

pub fn cases(fx: &Fixtures) -> Result<Folder, String> {
    let mut f = Folder::new("npy", Format::Npy, "npy");
    let f32s: Vec<u8> = (0..6).flat_map(|i| (i as f32).to_le_bytes()).collect();
    f.valid("float32", F::Valid, "a float32 (2, 3) array", npy(1, &dict("<f4", false, "(2, 3)"), &f32s));
    f.valid("big-endian-fortran", F::Valid, "a big-endian int16 (3, 2) array in Fortran order", {
        let data: Vec<u8> = (0..6i16).flat_map(|i| i.to_be_bytes()).collect();
        npy(1, &dict(">i2", true, "(3, 2)"), &data)
    });
    f.valid("version-3-scalar", F::Valid, "format 3.0 (UTF-8 header), a 0-d complex128", {
        npy(3, "{\"shape\":(),\"descr\":\"<c16\",\"fortran_order\":False}", &[0; 16])
    });
    f.valid("empty", F::Valid, "a (0, 4) float64 array: no data", npy(2, &dict("<f8", false, "(0, 4)"), &[]));
    for (stem, path) in [("numpy-fortran", "numpy/fortran_f8.npy"), ("numpy-v2", "numpy/v2.npy")] {
        f.valid(stem, F::Valid, &format!("{path} (fixture made by numpy)"), fx.read(path)?);
    }

    let ok = npy(1, &dict("<f4", false, "(2, 3)"), &f32s);
    f.open("bad-magic", F::BadMagic, Rule::BadMagic, "\\x93NUMPX instead of \\x93NUMPY", {
        let mut b = ok.clone();
        b[5] = b'X';
        b
    });
    f.open("version-4", F::BadMagic, Rule::BadMagic, "format version 4.0", {
        let mut b = ok.clone();
        b[6] = 4;
        b
    });
    f.open("version-1-1", F::BadMagic, Rule::BadMagic, "format version 1.1", {
        let mut b = ok.clone();
        b[7] = 1;
        b
    });
    f.open("cut-in-length", F::Truncation, Rule::Truncated, "a file cut inside the header length", ok[..9].to_vec());
    f.open("header-past-end", F::PastEnd, Rule::Truncated, "a header length 100 bytes past the end", {
        let mut b = ok.clone();
        b[8..10].copy_from_slice(&((ok.len() + 100) as u16).to_le_bytes());
        b
    });
    f.open(
        "header-over-limit",
        F::PastEnd,
        Rule::HeaderTooLarge,
        "a version 2 header of 10,001 bytes (numpy's limit is 10,000)",
        raw(2, &[b' '; 10_001], 10_001, &[]),
    );
    f.open("data-short", F::Truncation, Rule::Truncated, "shape (2, 3) of float32 with 20 data bytes", {
        npy(1, &dict("<f4", false, "(2, 3)"), &f32s[..20])
    });
    f.open("shape-overflow", F::Overflow, Rule::ShapeOverflow, "a shape of 2^32 x 2^32 elements", {
        npy(1, &dict("<f4", false, "(4294967296, 4294967296)"), &[])
    });
    f.open("shape-bytes-overflow", F::Overflow, Rule::ShapeOverflow, "2^62 complex128 elements", {
        npy(1, &dict("<c16", false, "(4611686018427387904,)"), &[])
    });
    let bf = Rule::BadField;
    for (stem, text, what) in [
        ("dict-unclosed", "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), ", "a dict that is not closed"),
        ("dict-a-call", "__import__('os').system('x')", "a function call instead of a dict"),
        ("dict-not-a-dict", "['descr', '<f4']", "a list instead of a dict"),
        (
            "dict-extra-key",
            "{'descr': '<f4', 'fortran_order': False, 'shape': (6,), 'x': 1}",
            "a key numpy does not allow",
        ),
        ("dict-key-twice", "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (6,)}", "descr twice"),
        ("shape-a-list", "{'descr': '<f4', 'fortran_order': False, 'shape': [6]}", "a shape that is a list"),
        ("shape-negative", "{'descr': '<f4', 'fortran_order': False, 'shape': (-6,)}", "a negative dimension"),
        ("fortran-an-int", "{'descr': '<f4', 'fortran_order': 0, 'shape': (6,)}", "fortran_order 0"),
        ("descr-an-int", "{'descr': 4, 'fortran_order': False, 'shape': (6,)}", "a descr that is a number"),
        ("bad-escape", "{'descr': '<f\\x34', 'fortran_order': False, 'shape': (6,)}", "a \\x escape in a string"),
    ] {
        f.open(stem, F::BadField, bf, &format!("header: {what}"), npy(1, text, &f32s));
    }
    f.open(
        "missing-shape",
        F::BadField,
        Rule::MissingField,
        "a header without shape",
        npy(1, "{'descr': '<f4', 'fortran_order': False}", &f32s),
    );
    let deep = format!("{{'descr': '<f4', 'fortran_order': False, 'shape': {}6{}}}", "(".repeat(100), ")".repeat(100));
    f.open("deep-tuples", F::DeepNesting, Rule::TooDeep, "a shape nested in 100 tuples", npy(1, &deep, &f32s));
    f.open("version-3-bad-utf8", F::BadUtf8, Rule::BadUtf8, "a format 3.0 header with the byte ff", {
        npy(3, "{'descr': '<f4\u{00ff}', 'fortran_order': False, 'shape': (6,)}", &f32s)
            .into_iter()
            .map(|b| if b == 0xc3 { 0xff } else { b })
            .collect()
    });
    let ud = Rule::UnknownDType;
    for (stem, descr, what) in [
        ("object-dtype", "|O", "an object array (pickled Python objects: never unpickled)"),
        ("unicode-dtype", "<U3", "an array of strings"),
        ("long-double", "<f16", "an extended-precision float"),
        ("datetime", "<M8[ns]", "datetimes"),
        ("unknown-descr", "<q9", "a descr numpy does not define"),
    ] {
        f.verify(
            stem,
            F::BadField,
            ud,
            &format!("descr {descr}: {what}"),
            npy(1, &dict(descr, false, "(3,)"), &[0; 48]),
        );
    }
    f.verify("structured", F::BadField, ud, "a structured descr (a list of fields)", {
        npy(1, "{'descr': [('a', '<i4'), ('b', '<f8')], 'fortran_order': False, 'shape': (2,)}", &[0; 24])
    });
    Ok(f)
}
