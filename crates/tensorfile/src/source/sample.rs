//! A bounded sample of a file: its first and last bytes, its length and its name. What
//! `diagnose` looks at when a file does not open, and what each format's unit measures its
//! expected length from (below the formats, so that the units can take it).

use std::path::Path;

use super::{Bytes, Source};
use crate::error::Result;

/// Bytes read from each end of a remote file to diagnose it (a local file is mapped: its
/// sample is the map, and each check bounds what it looks at).
pub const SAMPLE_BYTES: u64 = 64 << 10;

/// A bounded sample of a file to diagnose: its first bytes, its last bytes, its length and its
/// name.
#[derive(Debug, Clone)]
pub struct Sample {
    head: Bytes,
    tail: Bytes,
    len: u64,
    name: Option<String>,
}

impl Sample {
    /// A sample of `bytes` (the whole file, already in memory or mapped), named `name`.
    pub fn of_bytes(bytes: &Bytes, name: Option<&Path>) -> Sample {
        let name = name.and_then(|p| p.file_name()).map(|n| n.to_string_lossy().into_owned());
        Sample { head: bytes.clone(), tail: bytes.clone(), len: bytes.len() as u64, name }
    }

    /// A sample of `src`: a local file whole (it is mapped), a remote one by two range reads
    /// of at most [`SAMPLE_BYTES`].
    pub fn of_source(src: &Source, name: Option<&Path>) -> Result<Sample> {
        if let Some(bytes) = src.as_local() {
            return Ok(Sample::of_bytes(bytes, name.or(src.location())));
        }
        let head = src.head(SAMPLE_BYTES)?;
        let (_, tail) = src.tail(SAMPLE_BYTES)?;
        let name = name.or(src.location()).and_then(last_segment);
        Ok(Sample { head, tail, len: src.len(), name })
    }

    /// The first bytes (the whole file when it is local or small).
    pub fn head(&self) -> &[u8] {
        &self.head
    }

    /// The last bytes (the whole file when it is local or small).
    pub fn tail(&self) -> &[u8] {
        &self.tail
    }

    /// The file's length in bytes.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the file is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether the head holds the whole file.
    pub(crate) fn whole(&self) -> bool {
        self.head.len() as u64 == self.len
    }

    /// The file's name (the last segment of its path or URL), when known.
    pub(crate) fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }
}

/// The last segment of a path or URL (`model.safetensors` of `https://host/a/model.safetensors`).
pub(crate) fn last_segment(p: &Path) -> Option<String> {
    let s = p.to_string_lossy();
    let s = s.split(['?', '#']).next().unwrap_or("");
    s.rsplit('/').next().filter(|n| !n.is_empty()).map(str::to_string)
}
