//! The sha256 the Hugging Face hub's client leaves with a file it downloaded: the name of
//! the cache blob (`.../blobs/<sha256>`, which a snapshot's `model.safetensors` links to), or,
//! for a download into a folder of the user's (`--local-dir`), the record it writes at
//! `<folder>/.cache/huggingface/download/<path>.metadata`: the commit, the ETag (the file's
//! sha256 for an LFS file, a git blob id for a small one) and the time it was written, one a
//! line. As the client does, a record older than the file (the file changed since) is not
//! used.

use std::path::{Path, PathBuf};

use super::git_objects::read_small;

/// The most folders walked up from a file to find the folder it was downloaded into.
const MAX_DEPTH: usize = 64;

/// The digest in the name of the cache blob the file is, or links to.
pub fn blob_digest(path: &Path) -> Option<([u8; 32], PathBuf)> {
    let real = std::fs::canonicalize(path).ok()?;
    let in_blobs = real.parent().and_then(Path::file_name).is_some_and(|n| n == "blobs");
    let mut sha256 = [0u8; 32];
    hex::decode_to_slice(real.file_name()?.to_str()?, &mut sha256).ok()?;
    in_blobs.then_some((sha256, real))
}

/// The sha256 the client recorded when it downloaded the file into a folder, and the record.
pub fn local_dir_digest(path: &Path) -> Option<([u8; 32], PathBuf)> {
    let abs = std::path::absolute(path).ok()?;
    let modified = std::fs::metadata(&abs).ok()?.modified().ok()?.duration_since(std::time::UNIX_EPOCH).ok()?;
    let mut dir = abs.parent()?;
    for _ in 0..MAX_DEPTH {
        let records = dir.join(".cache").join("huggingface").join("download");
        if records.is_dir() {
            let rel = abs.strip_prefix(dir).ok()?;
            let mut record = records.join(rel).into_os_string();
            record.push(".metadata");
            let record = PathBuf::from(record);
            let text = read_small(&record, 4096)?;
            let text = std::str::from_utf8(&text).ok()?;
            let mut lines = text.lines();
            let (_commit, etag, written) = (lines.next()?, lines.next()?.trim(), lines.next()?.trim());
            let written: f64 = written.parse().ok()?;
            // The client's own rule: the record holds while the file is no newer than it
            // (within a second).
            if written.is_nan() || modified.as_secs_f64() - 1.0 > written {
                return None;
            }
            let mut sha256 = [0u8; 32];
            hex::decode_to_slice(etag, &mut sha256).ok()?;
            return Some((sha256, record));
        }
        dir = dir.parent()?;
    }
    None
}
