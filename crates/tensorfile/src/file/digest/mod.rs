//! Whole-file digests to check a file against, for the formats that carry no checksum of
//! their own (safetensors, GGUF, ONNX, NumPy, ExecuTorch): given by the user, written beside
//! the file (`model.safetensors.sha256`, as `sha256sum` writes it), or the sha256 the
//! Hugging Face hub lists for the file, as the tools that fetched it left it: the name of the
//! hub cache's blob (`.../blobs/<sha256>`), the record of a download into a folder
//! (`.cache/huggingface/download/<file>.metadata`), or the Git LFS pointer a clone of the
//! repository holds for it (`lfs`).

pub(crate) mod git_objects;
mod hub;
pub(crate) mod lfs;

use std::io::Read;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::error::{Error, Result, Rule};
use crate::limits::MAX_DIGEST_FILE;

/// A sha256 a file is expected to have, and where that expectation comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpectedDigest {
    /// The digest.
    pub sha256: [u8; 32],
    /// Where it was found.
    pub from: DigestFrom,
}

/// Where an [`ExpectedDigest`] comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DigestFrom {
    /// Given by the user (`--expect-sha256`, `expect_sha256=`).
    Given,
    /// A `.sha256` file beside the file.
    Sidecar(PathBuf),
    /// The file is a blob of the Hugging Face hub's cache, named by its digest.
    HubBlob(PathBuf),
    /// The record the Hugging Face hub's client wrote when it downloaded the file into a
    /// folder (`hf download --local-dir`): this record file.
    HubDownload(PathBuf),
    /// The Git LFS pointer that the repository holding the file records for it.
    GitLfs {
        /// The repository's work tree.
        work_tree: PathBuf,
        /// The file's path in the repository.
        path_in_repo: String,
    },
}

impl std::fmt::Display for DigestFrom {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DigestFrom::Given => f.write_str("the sha256 given"),
            DigestFrom::Sidecar(p) => write!(f, "the sha256 in {}", p.display()),
            DigestFrom::HubBlob(p) => write!(f, "the sha256 naming the Hugging Face cache blob {}", p.display()),
            DigestFrom::HubDownload(p) => {
                write!(f, "the sha256 the Hugging Face download recorded in {}", p.display())
            }
            DigestFrom::GitLfs { work_tree, path_in_repo } => {
                write!(f, "the Git LFS pointer of {path_in_repo} in the repository {}", work_tree.display())
            }
        }
    }
}

/// A sha256 written as 64 hexadecimal digits (either case).
pub fn parse_sha256(text: &str) -> Result<[u8; 32]> {
    let text = text.trim();
    let mut out = [0u8; 32];
    hex::decode_to_slice(text, &mut out)
        .map_err(|_| Error::usage(format!("{text:?} is not a sha256 (64 hexadecimal digits)")))?;
    Ok(out)
}

/// A digest as 64 lower-case hexadecimal digits.
pub fn hex_sha256(digest: &[u8; 32]) -> String {
    hex::encode(digest)
}

/// The digest `path` is expected to have, where one is found: a `.sha256` file beside it
/// (its first word), else the name of the Hugging Face cache blob it is (or links to), else
/// the record of the Hugging Face download that wrote it into a folder, else the Git LFS
/// pointer of the repository it is checked out in. A `.sha256` file that holds no digest is
/// an error naming it; the other records, written by tools, are used only when whole and
/// current (see `lfs`).
pub fn expected_digest(path: &Path) -> Result<Option<ExpectedDigest>> {
    let mut sidecar = path.as_os_str().to_owned();
    sidecar.push(".sha256");
    let sidecar = PathBuf::from(sidecar);
    if sidecar.is_file() {
        let mut text = String::new();
        let read = std::fs::File::open(&sidecar).and_then(|f| f.take(MAX_DIGEST_FILE).read_to_string(&mut text));
        read.map_err(|e| Error::from(e).in_file(&sidecar))?;
        let word = text.split_whitespace().next().unwrap_or("");
        let sha256 = parse_sha256(word).map_err(|_| {
            Error::invalid(Rule::BadChecksum, "a .sha256 file starts with the 64 hexadecimal digits of a sha256")
                .in_file(&sidecar)
        })?;
        return Ok(Some(ExpectedDigest { sha256, from: DigestFrom::Sidecar(sidecar) }));
    }
    if let Some((sha256, blob)) = hub::blob_digest(path) {
        return Ok(Some(ExpectedDigest { sha256, from: DigestFrom::HubBlob(blob) }));
    }
    if let Some((sha256, record)) = hub::local_dir_digest(path) {
        return Ok(Some(ExpectedDigest { sha256, from: DigestFrom::HubDownload(record) }));
    }
    Ok(lfs::lfs_record(path).map(|r| ExpectedDigest {
        sha256: r.pointer.sha256,
        from: DigestFrom::GitLfs { work_tree: r.work_tree, path_in_repo: r.path_in_repo },
    }))
}

/// The sha256 of the file at `path`, read in pieces.
pub fn file_sha256(path: &Path) -> Result<[u8; 32]> {
    let mut file = std::fs::File::open(path).map_err(|e| Error::from(e).in_file(path))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 4 << 20];
    loop {
        match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => hasher.update(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(Error::from(e).in_file(path)),
        }
    }
    Ok(hasher.finalize().into())
}

/// Check the file at `path` against `expected`: an error naming the file, both digests and
/// where the expected one came from when they differ. Returns the digest.
pub fn check_file_digest(path: &Path, expected: &ExpectedDigest) -> Result<[u8; 32]> {
    let actual = file_sha256(path)?;
    if actual != expected.sha256 {
        return Err(Error::invalid(
            Rule::ChecksumMismatch,
            format!(
                "the file's sha256 is {}, not {} ({}): it is not the file it should be (changed, cut short or \
                 corrupted)",
                hex_sha256(&actual),
                hex_sha256(&expected.sha256),
                expected.from
            ),
        )
        .in_file(path));
    }
    Ok(actual)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ABC: &str = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";

    #[test]
    fn digests_are_read_and_written_as_hex() {
        let d = parse_sha256(ABC).unwrap();
        assert_eq!(hex_sha256(&d), ABC);
        assert_eq!(parse_sha256(&ABC.to_uppercase()).unwrap(), d);
        for bad in ["", "abc", &ABC[1..], &format!("{}g", &ABC[1..])] {
            assert!(parse_sha256(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_sidecar_a_hub_blob_or_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("m.safetensors");
        std::fs::write(&file, b"abc").unwrap();
        assert_eq!(expected_digest(&file).unwrap(), None);
        std::fs::write(tmp.path().join("m.safetensors.sha256"), format!("{ABC}  m.safetensors\n")).unwrap();
        let found = expected_digest(&file).unwrap().unwrap();
        assert_eq!(hex_sha256(&found.sha256), ABC);
        assert!(matches!(found.from, DigestFrom::Sidecar(_)));
        assert_eq!(check_file_digest(&file, &found).unwrap(), found.sha256);
        std::fs::write(tmp.path().join("m.safetensors.sha256"), "not a digest\n").unwrap();
        let err = expected_digest(&file).unwrap_err();
        assert_eq!(err.rule(), Some(Rule::BadChecksum));
        // The hub's cache: snapshots/<rev>/m.safetensors -> ../../blobs/<sha256>.
        let blobs = tmp.path().join("blobs");
        std::fs::create_dir(&blobs).unwrap();
        let blob = blobs.join(ABC);
        std::fs::write(&blob, b"abd").unwrap();
        let found = expected_digest(&blob).unwrap().unwrap();
        assert!(matches!(found.from, DigestFrom::HubBlob(_)));
        let err = check_file_digest(&blob, &found).unwrap_err();
        assert_eq!(err.rule(), Some(Rule::ChecksumMismatch));
        assert!(err.to_string().contains(ABC) && err.to_string().contains("Hugging Face"), "{err}");
    }
}
