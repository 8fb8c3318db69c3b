//! Verify on load: a file opened with `OpenOptions::verify` has every checksum it stores
//! checked on the bytes of each tensor read, and with `Verify::Full` the sha256 it is expected
//! to have (given, in a `.sha256` file beside it, or the name of the Hugging Face cache blob it
//! is) checked beside the load. One byte flipped at the start, middle or end of a tensor's
//! bytes is caught, naming the file and the tensor; the same read without verification does
//! not see it (so that the check, not a decoding error, is what is tested).

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use tensorfile::model::Encoding;
use tensorfile::{OpenOptions, TensorFile, Verify};

use crate::common;

fn open(path: &Path, verify: Verify) -> TensorFile {
    OpenOptions::new().verify(verify).open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The fixtures whose entries carry checksums of their own, or sit in zip members with CRCs.
fn checksummed_fixtures() -> Vec<PathBuf> {
    let dir = common::fixtures_dir();
    let mut out = Vec::new();
    for sub in ["zt1", "zt2", "zt/python", "pytorch", "numpy"] {
        let Ok(listing) = std::fs::read_dir(dir.join(sub)) else { continue };
        for item in listing.flatten() {
            let p = item.path();
            let ext = p.extension().and_then(|e| e.to_str()).unwrap_or("");
            if matches!(ext, "zt" | "pt" | "npz") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

#[test]
fn a_flipped_byte_in_any_checksummed_tensor_is_caught_naming_file_and_tensor() {
    let tmp = tempfile::tempdir().unwrap();
    let mut caught = 0;
    let mut by_format = std::collections::BTreeMap::<String, usize>::new();
    for fixture in checksummed_fixtures() {
        let Ok(file) = TensorFile::open(&fixture) else { continue };
        let original = std::fs::read(&fixture).unwrap();
        // A zip archive's members carry CRCs (a legacy `torch.save` file is no archive).
        let zip = original.starts_with(b"PK\x03\x04");
        for (i, entry) in file.entries().iter().enumerate() {
            let storage = entry.storage();
            let checked = storage.checksum().is_some() || (zip && storage.encoding() == Encoding::Raw);
            // Every tensor read whole verifies as it is (the fixtures are sound).
            if !checked || storage.is_empty() || file.read_verified(i).is_err() {
                continue;
            }
            let name = entry.info().name().to_string();
            for at in [storage.offset(), storage.offset() + storage.len() / 2, storage.offset() + storage.len() - 1] {
                let mut bytes = original.clone();
                bytes[at as usize] ^= 0x01;
                let path = tmp.path().join(fixture.file_name().unwrap());
                std::fs::write(&path, &bytes).unwrap();
                let Ok(broken) = OpenOptions::new().verify(Verify::Checksums).open(&path) else { continue };
                let Some(j) = broken.entries().iter().position(|e| e.info().name() == name) else { continue };
                let err = match broken.read_index(j) {
                    Ok(_) => panic!("{} {name:?}: byte {at} flipped, read as sound", fixture.display()),
                    Err(e) => e,
                };
                let text = err.to_string();
                assert!(text.contains(&name) && text.contains(&*path.to_string_lossy()), "{text}");
                if storage.encoding() == Encoding::Raw {
                    // Unverified, the same read hands the flipped bytes over.
                    assert!(open(&path, Verify::Off).read_index(j).is_ok(), "{} {name:?}", fixture.display());
                }
                caught += 1;
                *by_format.entry(file.format().to_string()).or_default() += 1;
            }
        }
    }
    assert!(caught >= 300, "flips caught: {caught} ({by_format:?})");
    assert!(by_format.len() >= 4, "formats covered: {by_format:?}");
}

#[test]
fn a_file_unlike_its_sha256_is_refused_beside_the_load_and_a_sound_one_passes() {
    let tmp = tempfile::tempdir().unwrap();
    let src = common::fixtures_dir().join("safetensors/dtypes.safetensors");
    let path = tmp.path().join("model.safetensors");
    std::fs::copy(&src, &path).unwrap();
    let digest = hex::encode(Sha256::digest(std::fs::read(&path).unwrap()));
    std::fs::write(tmp.path().join("model.safetensors.sha256"), format!("{digest}  model.safetensors\n")).unwrap();
    let load = |file: &TensorFile| -> tensorfile::Result<()> {
        (0..file.entries().len()).try_for_each(|i| file.read_index(i).map(|_| ()))
    };
    let sound = open(&path, Verify::Full);
    assert_eq!(sound.expected_digests().len(), 1);
    sound.while_checking_digests(|| load(&sound)).unwrap();
    assert_eq!(hex::encode(sound.check_digests().unwrap()[0].1), digest);
    // The last byte of the last tensor (safetensors stores no checksum): only the digest sees it.
    let mut bytes = std::fs::read(&path).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(&path, &bytes).unwrap();
    let broken = open(&path, Verify::Full);
    let err = broken.while_checking_digests(|| load(&broken)).unwrap_err();
    let text = err.to_string();
    assert!(text.contains(&digest) && text.contains("model.safetensors.sha256"), "{text}");
    assert_eq!(err.rule(), Some(tensorfile::Rule::ChecksumMismatch));
    // Without Full, nothing is compared.
    let off = open(&path, Verify::Checksums);
    assert!(off.expected_digests().is_empty());
    off.while_checking_digests(|| load(&off)).unwrap();
    // A digest given: the one checked, whatever is beside the file.
    let mut given = OpenOptions::new();
    given.expect_sha256(&hex::encode(Sha256::digest(&bytes))).unwrap();
    let file = given.open(&path).unwrap();
    file.while_checking_digests(|| load(&file)).unwrap();
}
