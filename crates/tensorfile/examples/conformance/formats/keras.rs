//! Keras 3 `.keras`: the files Keras made (`tests/fixtures/keras/`), the same members built
//! here (stored, deflated), and one broken file per rule: the weights member missing, not
//! HDF5, cut short, its sizes or CRC lying, deflate that claims too much or does not decode;
//! `config.json` and `metadata.json` malformed (the weights stay readable: refused at
//! verify); member names that collide or leave the archive. Zip structure itself is attacked
//! in `pt.rs`.

use tensorfile::internals::zip::Archive;
use tensorfile::source::Bytes;
use tensorfile::{Format, Rule};

use super::Fixtures;
use crate::build::zip::{Entry, build};
use crate::case::{Family as F, Folder};

/// The members of a fixture made by Keras: (name, bytes), in its order.
fn members(fx: &Fixtures, path: &str) -> Result<Vec<(String, Vec<u8>)>, String> {
    let archive = Archive::open(Bytes::from_vec(fx.read(path)?)).map_err(|e| format!("{path}: {e}"))?;
    archive
        .entries()
        .iter()
        .map(|e| Ok((e.name.clone(), archive.read(e, true).map_err(|err| format!("{path}: {err}"))?.to_vec())))
        .collect()
}

/// A `.keras` of `members`, each stored except those `deflate` names.
fn keras(members: &[(String, Vec<u8>)], deflate: &[&str]) -> Vec<u8> {
    let entries: Vec<Entry> = members
        .iter()
        .map(|(n, d)| if deflate.contains(&n.as_str()) { Entry::deflated(n, d) } else { Entry::stored(n, d) })
        .collect();
    build(&entries).bytes
}

/// `members` with `name`'s bytes replaced by `data` (or `name` dropped, for `None`).
fn with(members: &[(String, Vec<u8>)], name: &str, data: Option<&[u8]>) -> Vec<(String, Vec<u8>)> {
    members
        .iter()
        .filter_map(|(n, d)| match (n == name, data) {
            (false, _) => Some((n.clone(), d.clone())),
            (true, Some(new)) => Some((n.clone(), new.to_vec())),
            (true, None) => None,
        })
        .collect()
}

pub fn cases(fx: &Fixtures) -> Result<Folder, String> {
    let mut f = Folder::new("keras", Format::Keras, "keras");
    for (stem, path, what) in [
        ("keras-sequential", "keras/sequential.keras", "model.save of a compiled, trained Sequential model (Keras)"),
        ("keras-functional", "keras/functional.keras", "model.save of a functional model of two inputs (Keras)"),
        ("keras-deflated", "keras/deflated.keras", "a Keras file re-packed with every member deflated"),
    ] {
        f.valid(stem, F::Valid, what, fx.read(path)?);
    }
    let m = members(fx, "keras/functional.keras")?;
    f.valid("rebuilt-stored", F::Valid, "Keras's members in an archive built here, stored", keras(&m, &[]));
    f.valid("weights-deflated", F::Valid, "only model.weights.h5 deflated", keras(&m, &["model.weights.h5"]));
    weights(&mut f, &m);
    texts(&mut f, &m);
    Ok(f)
}

/// The weights member: missing, not HDF5, cut short, lying sizes and CRC, bad deflate.
fn weights(f: &mut Folder, m: &[(String, Vec<u8>)]) {
    let h5 = &m.iter().find(|(n, _)| n == "model.weights.h5").expect("a weights member").1;
    f.open(
        "no-weights",
        F::BadField,
        Rule::MissingField,
        "config.json and metadata.json without model.weights.h5",
        keras(&with(m, "model.weights.h5", None), &[]),
    );
    f.open(
        "weights-not-hdf5",
        F::BadMagic,
        Rule::BadMagic,
        "a model.weights.h5 member that is not HDF5",
        keras(&with(m, "model.weights.h5", Some(b"not an HDF5 file, only text")), &[]),
    );
    f.open(
        "weights-cut-short",
        F::Truncation,
        Rule::Truncated,
        "model.weights.h5 cut to half: its superblock's end of file past the member's end",
        keras(&with(m, "model.weights.h5", Some(&h5[..h5.len() / 2])), &[]),
    );
    f.open(
        "weights-superblock-only",
        F::PastEnd,
        Rule::OutOfBounds,
        "model.weights.h5 cut after its superblock, the end-of-file address patched to fit: the root past the end",
        {
            // Superblock 0 of 8-byte offsets: the end-of-file address at byte 40.
            let mut cut = h5[..96].to_vec();
            cut[40..48].copy_from_slice(&96u64.to_le_bytes());
            keras(&with(m, "model.weights.h5", Some(&cut)), &[])
        },
    );
    let built = |patch: &dyn Fn(&mut Vec<Entry>)| {
        let mut entries: Vec<Entry> = m.iter().map(|(n, d)| Entry::stored(n, d)).collect();
        patch(&mut entries);
        build(&entries).bytes
    };
    let weights_index = m.iter().position(|(n, _)| n == "model.weights.h5").expect("a weights member");
    f.open(
        "weights-two-sizes",
        F::SizeMismatch,
        Rule::SizeMismatch,
        "a stored model.weights.h5 declaring 16 more bytes than it stores",
        built(&|e| e[weights_index].size += 16),
    );
    f.verify(
        "weights-crc",
        F::Checksum,
        Rule::ChecksumMismatch,
        "a stored model.weights.h5 whose CRC-32 does not match",
        built(&|e| e[weights_index].crc ^= 1),
    );
    f.open(
        "weights-deflate-bomb",
        F::ZipBomb,
        Rule::DecompressedSizeMismatch,
        "a deflated model.weights.h5 claiming 4 GiB - 2 bytes from a few kilobytes",
        {
            let mut entries: Vec<Entry> = m.iter().map(|(n, d)| Entry::stored(n, d)).collect();
            entries[weights_index] = Entry::deflated("model.weights.h5", h5);
            entries[weights_index].size = u32::MAX - 1;
            build(&entries).bytes
        },
    );
    f.open(
        "weights-bad-deflate",
        F::BadCompressedData,
        Rule::BadCompressedData,
        "a deflated model.weights.h5 of garbage",
        {
            let mut entries: Vec<Entry> = m.iter().map(|(n, d)| Entry::stored(n, d)).collect();
            entries[weights_index] = Entry::deflated("model.weights.h5", h5);
            let len = entries[weights_index].data.len();
            entries[weights_index].data = vec![0xff; len];
            build(&entries).bytes
        },
    );
    f.open(
        "duplicate-weights",
        F::DuplicateName,
        Rule::DuplicateName,
        "two members named model.weights.h5",
        keras(&[m.to_vec(), vec![("model.weights.h5".into(), h5.clone())]].concat(), &[]),
    );
    f.open(
        "member-leaves-archive",
        F::PathEscape,
        Rule::UnsafePath,
        "a member named ../assets/x beside Keras's",
        keras(&[m.to_vec(), vec![("../assets/x".into(), b"x".to_vec())]].concat(), &[]),
    );
}

/// `config.json` and `metadata.json` broken one way each: the file opens, its weights read,
/// and verify reports the rule.
fn texts(f: &mut Folder, m: &[(String, Vec<u8>)]) {
    let deep = format!("{{\"class_name\": \"M\", \"config\": {}{}}}", "[".repeat(200), "]".repeat(200));
    for (stem, family, rule, member, data, what) in [
        (
            "config-bad-json",
            F::MalformedJson,
            Rule::BadJson,
            "config.json",
            &b"{\"class_name\": \"Functional\", "[..],
            "config.json cut inside an object",
        ),
        (
            "config-not-object",
            F::MalformedJson,
            Rule::BadJson,
            "config.json",
            b"[\"Functional\"]",
            "config.json a list, not an object",
        ),
        (
            "config-no-class-name",
            F::BadField,
            Rule::MissingField,
            "config.json",
            b"{\"config\": {\"layers\": []}}",
            "config.json without class_name",
        ),
        (
            "config-layers-not-list",
            F::BadField,
            Rule::BadField,
            "config.json",
            b"{\"class_name\": \"M\", \"config\": {\"layers\": 3}}",
            "config.json whose layers are a number",
        ),
        (
            "config-bad-utf8",
            F::BadUtf8,
            Rule::BadUtf8,
            "config.json",
            b"{\"class_name\": \"\xff\"}",
            "config.json with the byte 0xff",
        ),
        (
            "config-too-deep",
            F::DeepNesting,
            Rule::BadJson,
            "config.json",
            deep.as_bytes(),
            "config.json nesting lists 200 deep (past the JSON parser's limit of 128)",
        ),
        (
            "metadata-not-object",
            F::MalformedJson,
            Rule::BadJson,
            "metadata.json",
            b"\"3.15.1\"",
            "metadata.json a string, not an object",
        ),
    ] {
        f.verify(stem, family, rule, what, keras(&with(m, member, Some(data)), &[]));
    }
    f.verify(
        "no-config",
        F::BadField,
        Rule::MissingField,
        "metadata.json and model.weights.h5 without config.json",
        keras(&with(m, "config.json", None), &[]),
    );
}
