//! Verifying an opened file ([`TensorFile::verify_with`]): how thoroughly ([`Depth`]) and
//! what was found ([`Verification`]).

use std::path::PathBuf;

use sha2::{Digest, Sha256};

use super::TensorFile;
use super::digest::{ExpectedDigest, hex_sha256};
use crate::error::{Error, Result};

impl TensorFile {
    /// Check everything: every checksum matches, every entry decodes, nothing is
    /// unreadable, every load-time rule holds ([`Depth::Deep`]). Returns every problem found
    /// (empty when the file is sound).
    pub fn verify(&self) -> Vec<Error> {
        self.verify_with(Depth::Deep).problems
    }

    /// Check the file as thoroughly as `depth` says.
    pub fn verify_with(&self, depth: Depth) -> Verification {
        let mut problems: Vec<Error> =
            self.unreadable().iter().map(|u| self.context(u.error().clone().for_tensor(u.name()))).collect();
        let (bad_sums, checksums) = self.reader.verify_checksums();
        problems.extend(bad_sums.into_iter().map(|e| self.context(e)));
        problems.extend(self.reader.check().into_iter().map(|e| self.context(e)));
        let mut decoded_bytes = 0;
        let mut tensor_sha256 = Vec::new();
        if depth == Depth::Deep && self.remote {
            // Fetched ahead, each entry whole (a remote read fetches an entry whole anyway).
            let all: Vec<usize> = (0..self.entries().len()).collect();
            let entries = self.entries();
            let read = self.read_each(&all, false, &mut |i, data| {
                match data {
                    Ok(data) => {
                        decoded_bytes += data.len();
                        let mut hasher = Sha256::new();
                        data.parts().iter().for_each(|p| hasher.update(&p.bytes()[..]));
                        tensor_sha256.push((entries[i].info().name().to_string(), hasher.finalize().into()));
                    }
                    Err(e) => problems.push(e),
                }
                Ok(())
            });
            problems.extend(read.err());
        } else if depth == Depth::Deep {
            for (i, entry) in self.entries().iter().enumerate() {
                // Checksums were checked above: decode only (and hash what is decoded).
                let mut hasher = Sha256::new();
                let decoded = if !entry.info().layout().reads_dense() {
                    self.read_index(i).map(|d| {
                        d.parts().iter().for_each(|p| hasher.update(&p.bytes()[..]));
                        d.len()
                    })
                } else {
                    self.read_chunks(i, false).and_then(|pieces| {
                        pieces
                            .map(|p| {
                                p.map(|p| {
                                    hasher.update(&p[..]);
                                    p.len() as u64
                                })
                            })
                            .sum::<Result<u64>>()
                    })
                };
                match decoded {
                    Ok(n) => {
                        decoded_bytes += n;
                        tensor_sha256.push((entry.info().name().to_string(), hasher.finalize().into()));
                    }
                    Err(e) => problems.push(e),
                }
            }
        }
        let mut files = Vec::new();
        if depth == Depth::Deep && !self.remote {
            for path in self.local_files() {
                let expected = match super::digest::expected_digest(&path) {
                    Ok(expected) => expected,
                    Err(e) => {
                        problems.push(e);
                        None
                    }
                };
                let sha256 = match &expected {
                    Some(want) => super::digest::check_file_digest(&path, want).map_err(|e| (e, path.clone())),
                    None => super::digest::file_sha256(&path).map_err(|e| (e, path.clone())),
                };
                match sha256 {
                    Ok(sha256) => files.push(FileDigest { path, sha256, expected }),
                    Err((e, _)) => problems.push(e),
                }
            }
        }
        let (tensors, blobs) = self.kind_counts();
        Verification {
            problems,
            checksums,
            decoded_bytes,
            depth,
            tensors,
            blobs,
            unreadable: self.unreadable().len(),
            nonfinite: None,
            files,
            tensor_sha256,
        }
    }
}

/// A file's sha256 as [`Depth::Deep`] computes it, and the digest it was expected to have
/// where one is known (a `.sha256` file beside it, the Hugging Face cache blob it is).
#[derive(Debug, Clone)]
pub struct FileDigest {
    /// The file.
    pub path: PathBuf,
    /// Its sha256.
    pub sha256: [u8; 32],
    /// The digest found for it (the same, or the file is a problem).
    pub expected: Option<ExpectedDigest>,
}

/// How thoroughly [`TensorFile::verify_with`] checks a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Depth {
    /// The structure (every rule checked when the file is opened, and the rules a consumer
    /// checks at load) and every stored checksum against the bytes it covers; compressed
    /// tensors are not decoded.
    Checksums,
    /// Also decode every entry (in pieces: memory stays bounded), so that every tensor is
    /// known to be readable with exactly its declared size.
    Deep,
}

/// What [`TensorFile::verify_with`] found.
#[derive(Debug)]
pub struct Verification {
    /// Every problem, each naming the file (and the tensor or record when one is involved).
    pub problems: Vec<Error>,
    /// Stored checksums checked (zTensor checksums, zip CRC-32s).
    pub checksums: usize,
    /// Bytes of tensor data decoded ([`Depth::Deep`]).
    pub decoded_bytes: u64,
    /// How thoroughly the file was checked.
    pub depth: Depth,
    /// Readable entries that are tensors.
    pub tensors: usize,
    /// Readable entries that are blobs (untyped bytes).
    pub blobs: usize,
    /// Entries declared but unreadable (each also a problem).
    pub unreadable: usize,
    /// With `Verification::check_finite` (of [`crate::stats`]), the tensors holding NaNs or infinities (each a
    /// failure); `None` when not checked.
    pub nonfinite: Option<Vec<NonFinite>>,
    /// [`Depth::Deep`], a local file: the sha256 of each file (every shard of a set).
    pub files: Vec<FileDigest>,
    /// [`Depth::Deep`]: the sha256 of each tensor's bytes as decoded (its parts in order), to
    /// record and compare across files and formats.
    pub tensor_sha256: Vec<(String, [u8; 32])>,
}

impl Verification {
    /// Whether nothing is wrong.
    pub fn ok(&self) -> bool {
        self.problems.is_empty() && self.nonfinite.as_ref().is_none_or(Vec::is_empty)
    }

    /// What `tensorfile verify --json` prints (and Python's `File.verify()` returns); `path`
    /// is the file as the user named it. Each problem has its `tensor`, `rule` (id, or null),
    /// `message` (without the file) and `error` (the whole message); after
    /// `check_finite`, `nonfinite` lists the tensors holding NaNs or
    /// infinities.
    pub fn to_json(&self, path: &str) -> serde_json::Value {
        let problems: Vec<_> = self
            .problems
            .iter()
            .map(|p| {
                serde_json::json!({
                    "tensor": p.tensor(),
                    "rule": p.rule().map(|r| r.id()),
                    "message": p.message(),
                    "error": p.to_string(),
                })
            })
            .collect();
        let mut value = serde_json::json!({
            "file": path,
            "ok": self.ok(),
            "tensors": self.tensors,
            "blobs": self.blobs,
            "unreadable": self.unreadable,
            "deep": self.depth == Depth::Deep,
            "checksums": self.checksums,
            "decoded_bytes": self.decoded_bytes,
            "problems": problems,
        });
        if let (Some(list), Some(fields)) = (&self.nonfinite, value.as_object_mut()) {
            fields.insert("nonfinite".into(), list.iter().map(NonFinite::to_json).collect());
        }
        if self.depth == Depth::Deep {
            let files: Vec<_> = self
                .files
                .iter()
                .map(|f| {
                    serde_json::json!({
                        "path": f.path.display().to_string(),
                        "sha256": hex_sha256(&f.sha256),
                        "expected_sha256": f.expected.as_ref().map(|e| hex_sha256(&e.sha256)),
                        "expected_from": f.expected.as_ref().map(|e| e.from.to_string()),
                    })
                })
                .collect();
            let tensors: serde_json::Map<String, serde_json::Value> =
                self.tensor_sha256.iter().map(|(n, d)| (n.clone(), hex_sha256(d).into())).collect();
            value["files"] = files.into();
            value["tensor_sha256"] = tensors.into();
        }
        value
    }
}

/// A tensor holding NaNs or infinities.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NonFinite {
    /// The tensor's name.
    pub name: String,
    /// Its NaN values.
    pub nan: u64,
    /// Its `+inf` values.
    pub posinf: u64,
    /// Its `-inf` values.
    pub neginf: u64,
}

impl NonFinite {
    /// `{"tensor", "nan", "posinf", "neginf"}`.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({ "tensor": self.name, "nan": self.nan, "posinf": self.posinf, "neginf": self.neginf })
    }
}
