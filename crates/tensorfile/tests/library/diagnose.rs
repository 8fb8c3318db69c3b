//! What a file that does not open really is: each case opened through `TensorFile::open`
//! (the path every shell takes), checked for its exact words, its rule kept.

use std::path::Path;

use tensorfile::diagnose::{Diagnosis, Need, Sample, diagnose};
use tensorfile::formats::Format;
use tensorfile::source::Bytes;
use tensorfile::{Error, Rule, TensorFile};

use crate::common::fixtures_dir;

/// The error opening `bytes` saved as `name`.
fn open_as(name: &str, bytes: &[u8]) -> Error {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    std::fs::write(&path, bytes).unwrap();
    match TensorFile::open(&path) {
        Ok(_) => panic!("{name} ({} bytes) opened", bytes.len()),
        Err(e) => e,
    }
}

fn fixture(rel: &str) -> Vec<u8> {
    std::fs::read(fixtures_dir().join(rel)).unwrap()
}

/// The message without the temporary folder.
fn message(e: &Error) -> String {
    e.message()
}

#[test]
fn lfs_pointer_as_git_lfs_writes_it() {
    let dir = fixtures_dir().join("diagnose");
    let record: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("lfs_pointer.safetensors.record.json")).unwrap()).unwrap();
    let size = record["size"].as_u64().unwrap();
    let sha = record["sha256"].as_str().unwrap();
    // The record is of a real file: its size is that file's.
    assert_eq!(fixture(record["pointer_of"].as_str().unwrap()).len() as u64, size);

    let e = TensorFile::open(dir.join("lfs_pointer.safetensors")).err().unwrap();
    assert_eq!(e.rule(), Some(Rule::UnknownFormat));
    assert_eq!(e.diagnosis(), Some(&Diagnosis::LfsPointer { oid: format!("sha256:{sha}"), size }));
    assert_eq!(
        message(&e),
        format!(
            "a Git LFS pointer to an object of 1,682 bytes, not the file (oid sha256:{}…; `git lfs pull` fetches it) \
             [unknown-format]",
            &sha[..12]
        )
    );
    assert!(e.to_string().contains("lfs_pointer.safetensors: a Git LFS pointer"), "{e}");
}

#[test]
fn lfs_pointer_with_extension_keys_and_bad_ones() {
    let oid = "4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393";
    let pointer = format!(
        "version https://git-lfs.github.com/spec/v1\next-0-foo sha256:{oid}\noid sha256:{oid}\nsize 12345678901\n"
    );
    let e = open_as("model.safetensors", pointer.as_bytes());
    assert!(message(&e).starts_with("a Git LFS pointer to an object of 12,345,678,901 bytes, not the file"), "{e}");
    // An oid that is not 64 hex digits: no pointer, only text.
    let bad = pointer.replace(oid, "xyz");
    let e = open_as("model.safetensors", bad.as_bytes());
    assert_eq!(
        e.diagnosis(),
        Some(&Diagnosis::Text { first_line: "version https://git-lfs.github.com/spec/v1".into() })
    );
}

#[test]
fn html_pages_saved_as_the_file() {
    let e = TensorFile::open(fixtures_dir().join("diagnose/not_found.safetensors")).err().unwrap();
    assert_eq!(e.rule(), Some(Rule::UnknownFormat));
    assert_eq!(message(&e), "an HTML page, not a tensor file (title \"404 – Model Hub\") [unknown-format]");
    let e = TensorFile::open(fixtures_dir().join("diagnose/login.gguf")).err().unwrap();
    assert_eq!(message(&e), "an HTML page, not a tensor file (title \"Sign in · Model Hub\") [unknown-format]");
    // No title; and a title bounded and printable.
    let e = open_as("x.safetensors", b"<html><body>gone</body></html>");
    assert_eq!(message(&e), "an HTML page, not a tensor file [unknown-format]");
    let long = format!("<!DOCTYPE html><title>{}\u{7}</title>", "a".repeat(500));
    let e = open_as("x.safetensors", long.as_bytes());
    assert_eq!(e.diagnosis(), None, "a bell is no text");
    let long = format!("<!DOCTYPE html><title>{}</title>", "a &amp; b ".repeat(50));
    let Some(Diagnosis::Html { title: Some(t) }) = open_as("x.pt", long.as_bytes()).diagnosis().cloned() else {
        panic!()
    };
    assert_eq!(t.chars().count(), 101);
    assert!(t.starts_with("a & b a & b") && t.ends_with('…'), "{t}");
}

#[test]
fn json_error_bodies() {
    // A JSON object opens as the index of a sharded checkpoint first: its rule stays.
    let e = TensorFile::open(fixtures_dir().join("diagnose/repo_not_found.safetensors")).err().unwrap();
    assert_eq!(
        message(&e),
        "a JSON document, not a tensor file (error \"Repository not found\"); no \"weight_map\": not the index of a \
         sharded checkpoint [missing-field]"
    );
    let e = open_as("m.gguf", br#"{"error": {"code": 403, "message": "Access to model x is restricted."}}"#);
    assert_eq!(e.diagnosis(), Some(&Diagnosis::Json { error: Some("Access to model x is restricted.".into()) }));
    let e = open_as("m.bin", br#"{"message":"Not Found","documentation_url":"https://docs.example/rest"}"#);
    assert_eq!(e.diagnosis(), Some(&Diagnosis::Json { error: Some("Not Found".into()) }));
    let e = open_as("m.bin", br#"[1, 2, 3]"#);
    assert_eq!(message(&e), "a JSON document, not a tensor file [unknown-format]");
}

#[test]
fn plain_text() {
    let e = open_as("weights.safetensors", b"\n\n  Service Unavailable  \nretry later\n");
    assert_eq!(message(&e), "a text file, not a tensor file (first line \"Service Unavailable\") [unknown-format]");
}

#[test]
fn zero_filled_files() {
    let e = open_as("model.safetensors", &[0u8; 4096]);
    assert_eq!(e.rule(), Some(Rule::UnknownFormat));
    assert_eq!(message(&e), "all 4,096 bytes are zero: a sparse file or a failed download [unknown-format]");
    // Zeros, then the data: the zeroed prefix ran past the magic.
    let mut bytes = vec![0u8; 70_000];
    bytes.push(1);
    bytes.extend(&fixture("gguf/blocks.gguf")[100..]);
    let e = open_as("model.gguf", &bytes);
    assert_eq!(
        message(&e),
        format!(
            "the first 70,000 bytes of {} are zero: a sparse file or a failed download [unknown-format]",
            tensorfile::units::thousands(bytes.len() as u64)
        )
    );
    // A GGUF whose data was zeroed opens (zeros are numbers): only a zeroed start is a problem.
    let mut gguf = fixture("gguf/blocks.gguf");
    let n = gguf.len();
    gguf[n - 100..].fill(0);
    assert!(tensorfile::OpenOptions::new().open_bytes(Bytes::from_vec(gguf)).is_ok());
}

#[test]
fn another_format_than_the_extension_says() {
    // A GGUF named .safetensors opens by its content.
    let gguf = fixture("gguf/blocks.gguf");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("model.safetensors"), &gguf).unwrap();
    assert_eq!(TensorFile::open(dir.path().join("model.safetensors")).unwrap().format(), Format::Gguf);
    // That does not open: its content is named, and what its name claims.
    let mut broken = gguf.clone();
    broken[4..8].copy_from_slice(&99u32.to_le_bytes());
    let e = open_as("model.safetensors", &broken);
    assert_eq!(e.rule(), Some(Rule::BadField), "{e}");
    assert!(
        message(&e).starts_with("this is a GGUF file, not safetensors as its .safetensors extension says; "),
        "{e}"
    );
    // Formats tensorfile does not read.
    let cases: &[(&str, &[u8], &str)] = &[
        (
            "model.safetensors",
            b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03",
            "this is a gzip archive, not safetensors as its .safetensors extension says",
        ),
        (
            "model.gguf",
            b"\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00",
            "this is an ELF executable or library, not GGUF as its .gguf extension says",
        ),
        (
            "weights.npy",
            b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
            "this is a PNG image, not a NumPy array as its .npy extension says",
        ),
        ("x", b"\xff\xd8\xff\xe0\x00\x10JFIF\x00", "a JPEG image, not a tensor file"),
        (
            "model.pt",
            b"\x80\x04\x95\x10\x00\x00\x00\x00\x00\x00\x00}\x94.",
            "this is a plain Python pickle, not a torch.save file as its .pt extension says",
        ),
    ];
    for (name, bytes, words) in cases {
        let e = open_as(name, bytes);
        assert_eq!(e.rule(), Some(Rule::UnknownFormat), "{name}");
        assert_eq!(message(&e), format!("{words} [unknown-format]"), "{name}");
    }
    // A tar archive.
    let mut tar = vec![0u8; 1024];
    tar[..9].copy_from_slice(b"model.bin");
    tar[257..263].copy_from_slice(b"ustar\0");
    let e = open_as("model.bin.tar", &tar);
    assert_eq!(message(&e), "a tar archive, not a tensor file [unknown-format]");
}

/// A zip archive of files of no tensor format is named as one.
#[test]
fn zip_of_no_tensor_format() {
    let mut zip = Vec::new();
    let name = b"readme.txt";
    let body = b"hello";
    let crc = 0x3610a686u32; // CRC-32 of "hello"
    let mut local = b"PK\x03\x04\x14\x00\x00\x00\x00\x00\x00\x00\x00\x00".to_vec();
    local.extend(crc.to_le_bytes());
    local.extend((body.len() as u32).to_le_bytes());
    local.extend((body.len() as u32).to_le_bytes());
    local.extend((name.len() as u16).to_le_bytes());
    local.extend(0u16.to_le_bytes());
    local.extend(name);
    local.extend(body);
    let central_at = local.len() as u32;
    let mut central = b"PK\x01\x02\x14\x00\x14\x00\x00\x00\x00\x00\x00\x00\x00\x00".to_vec();
    central.extend(crc.to_le_bytes());
    central.extend((body.len() as u32).to_le_bytes());
    central.extend((body.len() as u32).to_le_bytes());
    central.extend((name.len() as u16).to_le_bytes());
    central.extend([0u8; 12]);
    central.extend(0u32.to_le_bytes());
    central.extend(name);
    let mut end = b"PK\x05\x06\x00\x00\x00\x00\x01\x00\x01\x00".to_vec();
    end.extend((central.len() as u32).to_le_bytes());
    end.extend(central_at.to_le_bytes());
    end.extend(0u16.to_le_bytes());
    zip.extend(local);
    zip.extend(central);
    zip.extend(end);
    let e = open_as("model.bin", &zip);
    assert!(
        message(&e).starts_with(
            "this is a zip archive of no tensor format (first entry \"readme.txt\"), not a torch.save file as its .bin \
             extension says; "
        ),
        "{e}"
    );
}

/// One fixture of every format we read, and its name.
const EVERY_FORMAT: &[(&str, Format)] = &[
    ("safetensors/dtypes.safetensors", Format::Safetensors),
    ("zt/python/dtypes.zt", Format::Zt),
    ("zt2/dtypes.zt", Format::Zt2),
    ("zt1/dtypes.zt", Format::Zt1),
    ("gguf/blocks.gguf", Format::Gguf),
    ("gguf/big_endian.gguf", Format::Gguf),
    ("executorch/constants.pte", Format::Pte),
    ("executorch/external.ptd", Format::Ptd),
    ("pytorch/plain.pt2", Format::Pt2),
    ("pytorch/checkpoint.pt", Format::Pt),
    ("pytorch/legacy_format.pt", Format::Pt),
    ("numpy/be_float32.npy", Format::Npy),
    ("numpy/savez.npz", Format::Npz),
    ("onnx/torch_mlp.onnx", Format::Onnx),
    ("hdf5/files/keras3.weights.h5", Format::Hdf5),
    ("hdf5/files/groups_latest.h5", Format::Hdf5),
];

/// Every format cut inside its magic, inside its header, inside its data and one byte short,
/// and emptied: each says it is truncated, with the bytes present, and keeps its rule.
#[test]
fn every_format_truncated_at_several_points() {
    for &(rel, format) in EVERY_FORMAT {
        let whole = fixture(rel);
        let name = Path::new(rel).file_name().unwrap().to_str().unwrap();
        let n = whole.len();
        for cut in [0, 3, 20, n / 2, n - 1] {
            if cut == n - 1 && tensorfile::OpenOptions::new().open_bytes(Bytes::from_vec(whole[..cut].to_vec())).is_ok()
            {
                // The last byte is padding after the data (GGUF's alignment): nothing is missing.
                continue;
            }
            let e = open_as(name, &whole[..cut]);
            let what = format!("{rel} cut at {cut} of {n}: {e}");
            let Some(Diagnosis::Truncated { format: got, present, need, .. }) = e.diagnosis().cloned() else {
                panic!("{what}");
            };
            assert_eq!(present, cut as u64, "{what}");
            let text = message(&e);
            let present = tensorfile::units::thousands(cut as u64);
            // (After the tensor whose bytes run past the end, when a tensor's did.)
            assert!(text.contains(&format!("truncated: {present} bytes present, ")), "{what}");
            assert!(e.rule().is_some(), "{what}");
            // The format named is the file's, or (cut before its content tells) its extension's.
            let family = |f: Format| if matches!(f, Format::Zt | Format::Zt1 | Format::Zt2) { Format::Zt } else { f };
            let got = got.map(|g| Format::from_name(g.name).expect("a diagnosis names a registered format"));
            assert_eq!(got.map(family), Some(family(format)), "{what}");
            if cut == 0 {
                assert_eq!(need, Need::Empty, "{what}");
            }
            // What the header says the data needs, where the format's header says it.
            if let Need::Data(needs) | Need::Header(needs) | Need::AtLeast(needs) = need {
                assert!(needs > cut as u64, "{what}");
                assert!(text.contains(&tensorfile::units::thousands(needs)), "{what}");
            }
        }
    }
}

/// Where the header states the file's extent, the number is the real file's length.
#[test]
fn truncated_data_needs_the_whole_file() {
    for rel in [
        "safetensors/dtypes.safetensors",
        "executorch/constants.pte",
        "executorch/external.ptd",
        "numpy/be_float32.npy",
        "hdf5/files/keras3.weights.h5",
        "hdf5/files/userblock.h5",
    ] {
        let whole = fixture(rel);
        let name = Path::new(rel).file_name().unwrap().to_str().unwrap();
        let e = open_as(name, &whole[..whole.len() - 1]);
        let Some(Diagnosis::Truncated { need: Need::Data(needs), .. }) = e.diagnosis() else { panic!("{rel}: {e}") };
        assert_eq!(*needs, whole.len() as u64, "{rel}");
    }
    let e = open_as("dtypes.safetensors", &fixture("safetensors/dtypes.safetensors")[..841]);
    assert_eq!(e.rule(), Some(Rule::Truncated));
    assert_eq!(
        message(&e),
        "truncated: 841 bytes present, its header needs 1,072 (a safetensors file); header of 1064 bytes, but only 833 \
         follow [truncated]"
    );
    let e = open_as("blocks.gguf", &fixture("gguf/blocks.gguf")[..4928]);
    assert_eq!(e.rule(), Some(Rule::OutOfBounds));
    assert!(
        message(&e).contains("truncated: 4,928 bytes present, its header says the data needs 9,832 (a GGUF file); "),
        "{e}"
    );
}

/// Sampled from a source, remote-like (only head and tail), the same words; and hostile
/// headers (lengths past any file) measure without panicking.
#[test]
fn samples_and_hostile_headers() {
    let whole = fixture("safetensors/dtypes.safetensors");
    let sample = Sample::of_bytes(&Bytes::from_vec(whole[..900].to_vec()), Some(Path::new("a.safetensors")));
    assert!(matches!(diagnose(&sample, Some(Rule::Truncated)), Some(Diagnosis::Truncated { .. })));
    let mut hostile = [0xffu8; 64];
    hostile[..4].copy_from_slice(b"GGUF");
    hostile[4..8].copy_from_slice(&3u32.to_le_bytes());
    for cut in 0..hostile.len() {
        let s = Sample::of_bytes(&Bytes::from_vec(hostile[..cut].to_vec()), Some(Path::new("h.gguf")));
        let _ = diagnose(&s, Some(Rule::Truncated));
    }
    for magic in
        [&b"PK\x03\x04"[..], b"\x93NUMPY\x01\x00", b"\x89HDF\r\n\x1a\n\x00", b"ZTEN0001", b"\x00\x00\x00\x00ET12eh00"]
    {
        let mut bytes = magic.to_vec();
        bytes.extend([0xffu8; 60]);
        let s = Sample::of_bytes(&Bytes::from_vec(bytes), Some(Path::new("h.pte")));
        let _ = diagnose(&s, Some(Rule::OutOfBounds));
    }
}
