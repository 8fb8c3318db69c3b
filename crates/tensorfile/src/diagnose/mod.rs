//! What a file that does not open really is.
//!
//! When opening fails, [`diagnose`] looks at a bounded sample of the file (its first and last
//! bytes, its length and its name) and names what the bytes are: a Git LFS pointer checked in
//! instead of the file, an HTML page or a JSON error body saved by a download, plain text, a
//! zero-filled file, a file cut short (the bytes present against the bytes its header says it
//! needs), or a file whose content is of another format than its extension says. The opening
//! error keeps its [`Rule`]; the [`Diagnosis`] rides along ([`Error::diagnosis`]) and leads its
//! message, so every shell shows the same words.

mod extent;
mod sniff;

use std::path::Path;

use crate::error::{Error, ErrorKind, Result, Rule};
use crate::formats::Format;
use crate::source::{Bytes, Source};

pub use crate::error::{Diagnosis, FormatName, Need};

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
    fn whole(&self) -> bool {
        self.head.len() as u64 == self.len
    }

    /// The extension of the file's name, lowercase, and the format it names.
    fn claimed(&self) -> Option<(String, Format)> {
        let name = self.name.as_deref()?;
        let (stem, ext) = name.rsplit_once('.')?;
        if stem.is_empty() {
            return None;
        }
        let ext = ext.to_ascii_lowercase();
        let format = Format::ALL.iter().copied().find(|f| f.unit().extensions().contains(&ext.as_str()))?;
        Some((ext, format))
    }
}

/// The last segment of a path or URL (`model.safetensors` of `https://host/a/model.safetensors`).
fn last_segment(p: &Path) -> Option<String> {
    let s = p.to_string_lossy();
    let s = s.split(['?', '#']).next().unwrap_or("");
    s.rsplit('/').next().filter(|n| !n.is_empty()).map(str::to_string)
}

/// What the sampled file is, given that opening it failed with `failure` (the rule it broke,
/// when known): `None` when nothing more can be said than the error does.
pub fn diagnose(sample: &Sample, failure: Option<Rule>) -> Option<Diagnosis> {
    let claimed = sample.claimed();
    if sample.is_empty() {
        let format = claimed.map(|(_, f)| f.as_name());
        return Some(Diagnosis::Truncated { format, by_extension: true, present: 0, need: Need::Empty });
    }
    let ours = extent::our_format(sample, claimed.as_ref().map(|c| c.1));
    if let Some((format, false)) = ours {
        // The content is of a format tensorfile reads: cut short, or not what its name says.
        if let Some(need) = extent::need(format, sample, failure) {
            return Some(Diagnosis::Truncated {
                format: Some(format.as_name()),
                by_extension: false,
                present: sample.len,
                need,
            });
        }
        return claimed.filter(|(_, c)| family(*c) != family(format)).map(|(extension, claimed)| Diagnosis::Mismatch {
            found: format.as_name().a_file(),
            extension,
            claimed: claimed.as_name(),
        });
    }
    if let Some(found) = sniff::structured(sample) {
        return Some(match (found, claimed) {
            (Diagnosis::Foreign { what }, Some((extension, claimed))) => {
                Diagnosis::Mismatch { found: what, extension, claimed: claimed.as_name() }
            }
            (found, _) => found,
        });
    }
    // Only the extension can tell the format of a file whose format has no magic.
    if let Some((format, true)) = ours {
        if let Some(need) = extent::need(format, sample, failure) {
            return Some(Diagnosis::Truncated {
                format: Some(format.as_name()),
                by_extension: true,
                present: sample.len,
                need,
            });
        }
    }
    sniff::text(sample)
}

/// Formats that share an extension and a family (`.zt` is any zTensor version; `.pt`/`.bin`
/// any zip or legacy checkpoint) are not a mismatch.
fn family(f: Format) -> &'static str {
    match f {
        Format::Zt | Format::Zt1 | Format::Zt2 => "zt",
        other => other.unit().extensions()[0],
    }
}

/// `e` (an error opening the file sampled from `src`) with what the file really is attached,
/// when that says more than the error: only content errors ([`ErrorKind::Invalid`]) are
/// diagnosed, and a failure to sample the file leaves `e` as it is.
pub(crate) fn explain(e: Error, src: &Source, name: Option<&Path>) -> Error {
    if !matches!(e.kind(), ErrorKind::Invalid { .. }) || e.diagnosis().is_some() {
        return e;
    }
    match Sample::of_source(src, name) {
        Ok(sample) => explain_sample(e, &sample),
        Err(_) => e,
    }
}

/// `e` with the diagnosis of `sample` attached, when there is one.
pub(crate) fn explain_sample(e: Error, sample: &Sample) -> Error {
    match diagnose(sample, e.rule()) {
        Some(d) => e.with_diagnosis(d),
        None => e,
    }
}

#[cfg(test)]
mod tests;
