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
    for sub in ["zt1", "zt2", "zt/python", "pytorch", "numpy", "keras"] {
        let Ok(listing) = std::fs::read_dir(dir.join(sub)) else { continue };
        for item in listing.flatten() {
            let p = item.path();
            let ext = p.extension().and_then(|e| e.to_str()).unwrap_or("");
            // The large `.pt2` programs (MobileNet, AOTInductor) are left out: each flip
            // rewrites the file.
            let small = item.metadata().is_ok_and(|m| m.len() < 1 << 20);
            if matches!(ext, "zt" | "pt" | "pt2" | "npz" | "keras") && small {
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
    eprintln!("data flips caught under Checksums: {caught} ({by_format:?})");
    assert!(caught >= 300, "flips caught: {caught} ({by_format:?})");
    assert!(by_format.len() >= 6, "formats covered: {by_format:?}");
}

/// Read in order (entries after the one read are then checked ahead on other threads), a
/// file with one tensor's bytes flipped fails at that tensor alone, naming it, and hands every
/// other tensor over as stored: a check made ahead neither hides the flip nor moves it.
#[test]
fn read_in_order_a_flip_fails_its_own_tensor_and_no_other() {
    let tmp = tempfile::tempdir().unwrap();
    let mut checked = 0;
    for fixture in checksummed_fixtures() {
        let Ok(file) = TensorFile::open(&fixture) else { continue };
        let n = file.entries().len();
        let original = std::fs::read(&fixture).unwrap();
        // The middle tensor with a checksum of its own and bytes to flip.
        let Some(j) = (n / 2..n).chain(1..n / 2).find(|&j| {
            let s = file.entries()[j].storage();
            s.checksum().is_some() && !s.is_empty() && file.read_verified(j).is_ok()
        }) else {
            continue;
        };
        let storage = file.entries()[j].storage();
        let at = storage.offset() + storage.len() / 2;
        let mut bytes = original.clone();
        bytes[at as usize] ^= 0x40;
        // Entries whose stored bytes hold the flipped one (zTensor 2 stores identical parts
        // once): they fail too.
        let holds = |i: usize| {
            let s = file.entries()[i].storage();
            s.checksum().is_some() && (s.offset()..s.offset() + s.len()).contains(&at)
        };
        let path = tmp.path().join(fixture.file_name().unwrap());
        std::fs::write(&path, &bytes).unwrap();
        let Ok(broken) = OpenOptions::new().verify(Verify::Checksums).open(&path) else { continue };
        let plain = open(&fixture, Verify::Off);
        let name = file.entries()[j].info().name().to_string();
        for i in 0..n {
            match broken.read_index(i) {
                Ok(got) if !holds(i) => {
                    let want = plain.read_index(i).unwrap();
                    assert_eq!(format!("{got:?}"), format!("{want:?}"), "{} entry {i}", fixture.display());
                }
                Ok(_) => panic!("{} {name:?}: flipped, read as sound in order", fixture.display()),
                Err(e) if holds(i) => {
                    let own = file.entries()[i].info().name();
                    assert!(e.to_string().contains(own) && (i != j || e.to_string().contains(&name)), "{e}")
                }
                Err(e) => {
                    // An entry that did not read verified in the sound file either.
                    assert!(file.read_verified(i).is_err(), "{} entry {i}: {e}", fixture.display())
                }
            }
        }
        checked += 1;
    }
    assert!(checked >= 8, "fixtures read in order with a flip: {checked}");
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

/// What a file read whole hands over: each readable entry's name with its dtype, shape,
/// layout and the sha256 of its decoded parts, and each unreadable entry's name (an entry that
/// turned unreadable is a changed set, not a sound one).
type Tensors = Vec<(String, String)>;

/// Open `path` under `verify`, read every entry and, beside that, check the expected digests
/// (with [`Verify::Full`]): the tensors, or the error's text.
fn load_all(path: &Path, verify: Verify) -> Result<Tensors, String> {
    let file = OpenOptions::new().verify(verify).open(path).map_err(|e| e.to_string())?;
    file.while_checking_digests(|| {
        let mut out = Tensors::new();
        for (i, entry) in file.entries().iter().enumerate() {
            let data = file.read_index(i)?;
            let mut h = Sha256::new();
            for p in data.parts() {
                h.update(p.name().as_bytes());
                h.update(&p.bytes()[..]);
            }
            let info = entry.info();
            let what = format!(
                "{} {:?} {} {}",
                info.dtype(),
                info.shape(),
                info.layout().describe(),
                hex::encode(h.finalize())
            );
            out.push((info.name().to_string(), what));
        }
        out.extend(file.unreadable().iter().map(|u| (u.name().to_string(), "unreadable".to_string())));
        Ok(out)
    })
    .map_err(|e| e.to_string())
}

/// What checks the bytes of a format's metadata (every byte that is not a tensor's data).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cover {
    /// Zip members' CRC-32s (`.pt`, `.pt2`, `.npz`, `.keras`): under [`Verify::Checksums`]
    /// every flip inside a member (`data.pkl`, an `.npy` member's header, `config.json`, the
    /// HDF5 structure of `model.weights.h5`) is refused; a flip in the archive's own records
    /// (local headers, central directory) is refused or changes nothing read (a time, an extra
    /// field's padding). No flip changes the tensors unseen.
    Zip,
    /// A checksum over the whole index, checked on every open (zTensor 2's manifest XXH3-64,
    /// the footer's fields checked against the file): no flip changes the tensors unseen;
    /// some (padding between blobs) change nothing read.
    Index,
    /// Some structures (HDF5 with version 2 structures, `libver="latest"`: the superblock,
    /// object headers, B-tree v2 nodes, chunk index blocks and fractal heap headers carry
    /// Jenkins checksums, checked on every open; a dataset whose header fails its checksum
    /// refuses a verified open rather than being left out): more flips are refused under
    /// [`Verify::Checksums`] than under [`Verify::Off`], yet some change the tensors unseen
    /// (links and attributes in a fractal heap's direct blocks, which h5py writes without
    /// checksums; a signature flipped, so that the header reads as another version; an
    /// address): only the digest sees those.
    Partly,
    /// None (safetensors, GGUF, ONNX, NumPy `.npy`, ExecuTorch `.pte`/`.ptd`, zTensor 0.1's
    /// index, HDF5's version 0 and 1 structures): under [`Verify::Checksums`] a flip may
    /// change names, dtypes, shapes or bytes unseen; only the file's digest sees it.
    None,
}

/// How one flip came out under one mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Outcome {
    /// The open, a read or the digest failed, naming the file.
    Refused,
    /// The same tensors as the original.
    Same,
    /// Other tensors, and no error: what must never happen where a checksum covers the bytes.
    Changed,
}

/// Up to `n` of `positions`, spread evenly over them (the first and the last included).
fn spread(positions: &[u64], n: usize) -> Vec<u64> {
    if positions.len() <= n {
        return positions.to_vec();
    }
    (0..n).map(|k| positions[k * (positions.len() - 1) / (n - 1)]).collect()
}

/// The bytes of `file` (`original`) that hold no tensor data: every byte outside the stored
/// ranges of its entries, and outside the data of an entry stored where its storage does not
/// say (HDF5's big-endian or compact datasets: found by their bytes, as read or byte-swapped,
/// wherever they are).
fn metadata_positions(file: &TensorFile, original: &[u8]) -> Vec<u64> {
    let mut data = Vec::new();
    for (i, e) in file.entries().iter().enumerate() {
        let s = e.storage();
        if !s.is_empty() {
            data.push((s.offset(), s.offset() + s.len()));
            continue;
        }
        let Ok(read) = file.read_index(i) else { continue };
        let Ok(bytes) = read.as_dense() else { continue };
        let size = e.info().dtype().size().unwrap_or(1).max(1) as usize;
        for width in [size, size / 2].into_iter().filter(|&w| w >= 1 && bytes.len() >= 4) {
            let swapped: Vec<u8> = bytes.chunks(width).flat_map(|c| c.iter().rev().copied()).collect();
            for want in [&bytes[..], &swapped[..]] {
                // Every place: two datasets may store the same bytes.
                for (at, _) in original.windows(want.len()).enumerate().filter(|(_, w)| *w == want) {
                    data.push((at as u64, (at + want.len()) as u64));
                }
            }
        }
    }
    (0..original.len() as u64).filter(|&at| !data.iter().any(|&(a, b)| a <= at && at < b)).collect()
}

#[test]
fn a_flipped_byte_of_any_formats_metadata_never_changes_the_tensors_unseen() {
    let fixtures = common::fixtures_dir();
    let cases: &[(&str, Cover)] = &[
        ("pytorch/dtypes.pt", Cover::Zip),
        ("pytorch/state_dict.pt", Cover::Zip),
        ("pytorch/dtypes.pt2", Cover::Zip),
        ("numpy/savez.npz", Cover::Zip),
        ("numpy/savez_compressed.npz", Cover::Zip),
        ("keras/sequential.keras", Cover::Zip),
        ("keras/deflated.keras", Cover::Zip),
        ("zt2/dtypes.zt", Cover::Index),
        ("hdf5/datasets/dtypes_latest.h5", Cover::Partly),
        ("zt1/checksums.zt", Cover::None),
        ("hdf5/datasets/dtypes_earliest.h5", Cover::None),
        ("safetensors/dtypes.safetensors", Cover::None),
        ("gguf/metadata.gguf", Cover::None),
        ("onnx/torch_mlp.onnx", Cover::None),
        ("numpy/le_float32.npy", Cover::None),
        ("executorch/constants.pte", Cover::None),
        ("executorch/external.ptd", Cover::None),
    ];
    let tmp = tempfile::tempdir().unwrap();
    let mut table = Vec::new();
    let mut failures = Vec::new();
    // Flips that change the tensors under Checksums where nothing covers the metadata: what
    // only the digest sees.
    let mut unseen_without_digest = 0;
    for &(fixture, cover) in cases {
        let src = fixtures.join(fixture);
        let original = std::fs::read(&src).unwrap();
        let path = tmp.path().join(src.file_name().unwrap());
        std::fs::write(&path, &original).unwrap();
        let sidecar = PathBuf::from(format!("{}.sha256", path.display()));
        let digest = hex::encode(Sha256::digest(&original));
        std::fs::write(&sidecar, format!("{digest}  {}\n", path.file_name().unwrap().to_string_lossy())).unwrap();
        let want = load_all(&path, Verify::Full).unwrap_or_else(|e| panic!("{fixture}: {e}"));
        let file = open(&path, Verify::Off);
        let meta = metadata_positions(&file, &original);
        // A zip archive's members, where their (CRC-covered) bytes are.
        let members: Vec<(u64, u64, String)> = if cover == Cover::Zip {
            let archive =
                tensorfile::internals::zip::Archive::open(tensorfile::source::Bytes::from_vec(original.clone()))
                    .unwrap();
            archive
                .entries()
                .iter()
                .map(|e| (e.data_offset, e.data_offset + e.compressed_size, e.name.clone()))
                .collect()
        } else {
            Vec::new()
        };
        let member_at = |at: u64| members.iter().find(|m| m.0 <= at && at < m.1).map(|m| m.2.as_str());
        // Half the flips inside zip members, half in the archive's own records; elsewhere
        // half in bytes that are not zero, half in the rest (mostly padding).
        let first_half = |at: u64| match cover {
            Cover::Zip => member_at(at).is_some(),
            _ => original[at as usize] != 0,
        };
        let (inside, outside): (Vec<u64>, Vec<u64>) = meta.iter().partition(|&&at| first_half(at));
        let mut flips: Vec<(u64, bool)> = spread(&inside, 32).into_iter().map(|at| (at, cover == Cover::Zip)).collect();
        flips.extend(spread(&outside, 64 - flips.len().min(32)).into_iter().map(|at| (at, false)));
        assert!(flips.len() >= 16, "{fixture}: {} metadata bytes", meta.len());
        let mut counts = std::collections::BTreeMap::<(&str, Outcome), usize>::new();
        let name = path.to_string_lossy().to_string();
        for (k, &(at, covered)) in flips.iter().enumerate() {
            let mut bytes = original.clone();
            bytes[at as usize] ^= 1 << (k % 8);
            std::fs::write(&path, &bytes).unwrap();
            // The outcome, and what changed (the entries read that the original lacks).
            let outcome = |verify: Verify| match load_all(&path, verify) {
                Err(e) => {
                    assert!(e.contains(&name), "{fixture}: byte {at} flipped under {verify:?}: {e}");
                    (Outcome::Refused, String::new())
                }
                Ok(got) if got == want => (Outcome::Same, String::new()),
                Ok(got) => {
                    let new: Vec<_> = got.iter().filter(|t| !want.contains(t)).collect();
                    (Outcome::Changed, format!("{new:?} ({} entries, {} before)", got.len(), want.len()))
                }
            };
            // Full: the digest covers every byte.
            if let (o @ (Outcome::Same | Outcome::Changed), what) = outcome(Verify::Full) {
                failures.push(format!("{fixture}: byte {at} flipped, {o:?} under Full {what}"));
            }
            let (checked, what) = outcome(Verify::Checksums);
            match cover {
                Cover::Zip if covered && checked != Outcome::Refused => failures.push(format!(
                    "{fixture}: byte {at} of zip member {:?} flipped, {checked:?} under Checksums: its CRC unchecked {what}",
                    member_at(at).unwrap_or_default()
                )),
                Cover::Zip | Cover::Index if checked == Outcome::Changed => failures
                    .push(format!("{fixture}: byte {at} flipped changes the tensors unseen under Checksums: {what}")),
                _ => {}
            }
            *counts.entry(("checksums", checked)).or_default() += 1;
            *counts.entry(("off", outcome(Verify::Off).0)).or_default() += 1;
        }
        std::fs::write(&path, &original).unwrap();
        let count = |mode: &'static str, o: Outcome| counts.get(&(mode, o)).copied().unwrap_or(0);
        let changed = count("checksums", Outcome::Changed);
        if cover == Cover::Partly && count("checksums", Outcome::Refused) <= count("off", Outcome::Refused) {
            failures.push(format!("{fixture}: its checksums refuse nothing more than no verification: {counts:?}"));
        }
        if matches!(cover, Cover::None | Cover::Partly) {
            unseen_without_digest += changed;
        }
        table.push(format!("{fixture} ({cover:?}): {} flips (full: all refused), {counts:?}", flips.len()));
        std::fs::remove_file(&sidecar).unwrap();
        std::fs::remove_file(&path).unwrap();
    }
    eprintln!("{}", table.join("\n"));
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(unseen_without_digest > 0, "no flip changed the tensors unseen under Checksums:\n{}", table.join("\n"));
}

/// HDF5's Fletcher-32 as its spec defines it (16-bit words, the first byte the high one, both
/// sums modulo 65535), written apart from the library's.
fn fletcher32(data: &[u8]) -> u32 {
    let (mut a, mut b) = (0u64, 0u64);
    for w in data.chunks(2) {
        let word = (u64::from(w[0]) << 8) | w.get(1).map_or(0, |&x| u64::from(x));
        a = (a + word) % 65535;
        b = (b + a) % 65535;
    }
    ((b << 16) | a) as u32
}

/// A chunk of the `fletcher32` dataset (float32 [12, 10] in chunks of [4, 5], no other
/// filter, as `scripts/fixturegen/hdf5_datasets.py` writes it in both chunk index forms) is
/// stored as its bytes and their Fletcher-32: a byte flipped in either is refused on read,
/// naming the file and the dataset, whatever the verification asked (HDF5's own reader checks
/// it always; `Verify::Off` too), and the dataset beside it stays readable.
#[test]
fn a_flipped_byte_in_an_hdf5_fletcher32_chunk_is_caught_naming_file_and_dataset() {
    let tmp = tempfile::tempdir().unwrap();
    let mut caught = 0;
    for fixture in ["hdf5/datasets/chunked_earliest.h5", "hdf5/datasets/chunked_latest.h5"] {
        let src = common::fixtures_dir().join(fixture);
        let original = std::fs::read(&src).unwrap();
        let file = open(&src, Verify::Off);
        let name = "fletcher32";
        let i = file.index_of(name).unwrap();
        assert_eq!(file.entries()[i].info().shape(), &[12, 10]);
        let data = file.read_index(i).unwrap().into_dense().unwrap();
        let path = tmp.path().join(src.file_name().unwrap());
        for (r0, c0) in [(0, 0), (0, 5), (4, 0), (4, 5), (8, 0), (8, 5)] {
            let mut chunk = Vec::new();
            for r in r0..r0 + 4 {
                chunk.extend_from_slice(&data[(r * 10 + c0) * 4..(r * 10 + c0 + 5) * 4]);
            }
            chunk.extend_from_slice(&fletcher32(&chunk).to_le_bytes());
            let places: Vec<usize> =
                original.windows(chunk.len()).enumerate().filter(|(_, w)| *w == &chunk[..]).map(|(at, _)| at).collect();
            assert_eq!(places.len(), 1, "{fixture}: chunk ({r0}, {c0}) with its checksum stored once");
            // The chunk's first, middle and last byte, and a byte of its checksum.
            for at in [0, 40, 79, 82].map(|k| places[0] + k) {
                let mut bytes = original.clone();
                bytes[at] ^= 0x10;
                std::fs::write(&path, &bytes).unwrap();
                for verify in [Verify::Off, Verify::Checksums] {
                    let broken = open(&path, verify);
                    let err = broken.read(name).expect_err(&format!("{fixture}: byte {at} flipped, read as sound"));
                    let text = err.to_string();
                    assert_eq!(err.rule(), Some(tensorfile::Rule::ChecksumMismatch), "{text}");
                    assert!(
                        text.contains(name) && text.contains("fletcher32") && text.contains(&*path.to_string_lossy()),
                        "{text}"
                    );
                    broken.read("plain").unwrap();
                }
                caught += 1;
            }
        }
    }
    assert_eq!(caught, 2 * 6 * 4);
}

/// Formats that store no checksum (safetensors, GGUF, ONNX, NumPy `.npy`, ExecuTorch's `.pte`
/// and `.ptd`): a byte flipped at the start, middle or end of a tensor's bytes is handed over
/// under `Verify::Off` and `Verify::Checksums` (nothing to check it against), and refused under
/// `Verify::Full` with a `.sha256` beside the file, naming the file, the digest file and both
/// digests.
#[test]
fn a_flipped_byte_of_a_format_without_checksums_is_caught_by_its_digest_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let mut caught = std::collections::BTreeMap::<String, usize>::new();
    for fixture in [
        "safetensors/dtypes.safetensors",
        "gguf/metadata.gguf",
        "onnx/torch_mlp.onnx",
        "numpy/le_float32.npy",
        "executorch/constants.pte",
        "executorch/external.ptd",
    ] {
        let src = common::fixtures_dir().join(fixture);
        let original = std::fs::read(&src).unwrap();
        let path = tmp.path().join(src.file_name().unwrap());
        let digest = hex::encode(Sha256::digest(&original));
        let sidecar = PathBuf::from(format!("{}.sha256", path.display()));
        std::fs::write(&sidecar, format!("{digest}  {}\n", path.file_name().unwrap().to_string_lossy())).unwrap();
        std::fs::write(&path, &original).unwrap();
        let want = load_all(&path, Verify::Full).unwrap_or_else(|e| panic!("{fixture}: {e}"));
        let file = open(&path, Verify::Off);
        for entry in file.entries() {
            let storage = entry.storage();
            if storage.is_empty() || storage.encoding() != Encoding::Raw {
                continue;
            }
            for at in [storage.offset(), storage.offset() + storage.len() / 2, storage.offset() + storage.len() - 1] {
                let mut bytes = original.clone();
                bytes[at as usize] ^= 0x01;
                std::fs::write(&path, &bytes).unwrap();
                for verify in [Verify::Off, Verify::Checksums] {
                    let got = load_all(&path, verify)
                        .unwrap_or_else(|e| panic!("{fixture}: byte {at} under {verify:?}: {e}"));
                    assert_ne!(got, want, "{fixture}: byte {at} of {:?} flipped, not handed over", entry.info().name());
                }
                let err = load_all(&path, Verify::Full)
                    .expect_err(&format!("{fixture}: byte {at} flipped, unseen under Full"));
                assert!(
                    err.contains(&digest)
                        && err.contains(&*sidecar.to_string_lossy())
                        && err.contains(&*path.to_string_lossy()),
                    "{err}"
                );
                *caught.entry(file.format().to_string()).or_default() += 1;
            }
        }
        std::fs::write(&path, &original).unwrap();
    }
    eprintln!("data flips caught by the digest alone: {caught:?}");
    assert_eq!(caught.len(), 6, "{caught:?}");
}
