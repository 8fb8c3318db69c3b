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

use std::fmt;
use std::path::Path;

use crate::error::{Error, ErrorKind, Result, Rule};
use crate::formats::Format;
use crate::source::{Bytes, Source};
use crate::units::thousands;

pub use extent::Need;

/// Bytes read from each end of a remote file to diagnose it (a local file is mapped: its
/// sample is the map, and each check bounds what it looks at).
pub const SAMPLE_BYTES: u64 = 64 << 10;

/// What a file that does not open really is.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Diagnosis {
    /// A Git LFS pointer file: the repository was cloned without fetching the LFS objects.
    LfsPointer {
        /// The object's id as the pointer gives it (`sha256:` and 64 hex digits).
        oid: String,
        /// The object's size in bytes.
        size: u64,
    },
    /// An HTML page (a login or 404 page saved by a download).
    Html {
        /// The page's `<title>`, bounded and printable, when it has one.
        title: Option<String>,
    },
    /// A JSON document that is not a shard index (an error body saved by a download).
    Json {
        /// The text of its `error` or `message` key, bounded and printable.
        error: Option<String>,
    },
    /// Plain text.
    Text {
        /// Its first non-empty line, bounded and printable.
        first_line: String,
    },
    /// Zero bytes where the file's content should be: a sparse file or a failed download.
    Zeros {
        /// How many leading bytes are zero.
        zeros: u64,
        /// The file's length.
        len: u64,
    },
    /// A file of a format tensorfile reads, cut short.
    Truncated {
        /// The format (from the content, or from the extension when the content cannot tell).
        format: Option<Format>,
        /// Whether the format was taken from the file's extension.
        by_extension: bool,
        /// The bytes the file has.
        present: u64,
        /// What the file needs that is not there.
        need: Need,
    },
    /// A file whose content is of another format than its extension says.
    Mismatch {
        /// What the content is (`a GGUF file`, `a gzip archive`...).
        found: String,
        /// The extension, without the dot.
        extension: String,
        /// The format the extension names.
        claimed: Format,
    },
    /// A known kind of file that holds no tensors tensorfile reads (gzip, ELF, PNG...).
    Foreign {
        /// What it is (`a gzip archive`...).
        what: String,
    },
}

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
        let format = claimed.map(|(_, f)| f);
        return Some(Diagnosis::Truncated { format, by_extension: true, present: 0, need: Need::Empty });
    }
    let ours = extent::our_format(sample, claimed.as_ref().map(|c| c.1));
    if let Some((format, false)) = ours {
        // The content is of a format tensorfile reads: cut short, or not what its name says.
        if let Some(need) = extent::need(format, sample, failure) {
            return Some(Diagnosis::Truncated { format: Some(format), by_extension: false, present: sample.len, need });
        }
        return claimed.filter(|(_, c)| family(*c) != family(format)).map(|(extension, claimed)| Diagnosis::Mismatch {
            found: a_file_of(format),
            extension,
            claimed,
        });
    }
    if let Some(found) = sniff::structured(sample) {
        return Some(match (found, claimed) {
            (Diagnosis::Foreign { what }, Some((extension, claimed))) => {
                Diagnosis::Mismatch { found: what, extension, claimed }
            }
            (found, _) => found,
        });
    }
    // Only the extension can tell the format of a file whose format has no magic.
    if let Some((format, true)) = ours {
        if let Some(need) = extent::need(format, sample, failure) {
            return Some(Diagnosis::Truncated { format: Some(format), by_extension: true, present: sample.len, need });
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

/// `a GGUF file`, `an HDF5 file`.
fn a_file_of(f: Format) -> String {
    let title = f.unit().title();
    let file = if title.ends_with(" file") { "" } else { " file" };
    format!("{} {title}{file}", article(title))
}

/// A format as the object of "not ...": its name (`safetensors`, `GGUF`), or a noun phrase with
/// its article (`a NumPy array`, `an ONNX model`, `a torch.save file`).
fn named(f: Format) -> String {
    let title = f.unit().title();
    let noun = title.rsplit(' ').next().unwrap_or("");
    match noun {
        "array" | "archive" | "model" | "program" | "file" => format!("{} {title}", article(title)),
        _ => title.to_string(),
    }
}

fn article(word: &str) -> &'static str {
    match word.chars().next().map(|c| c.to_ascii_lowercase()) {
        Some('a' | 'e' | 'i' | 'o' | 'u') => "an",
        // Initialisms read letter by letter: "an HDF5", "an ONNX" (above), "an ExecuTorch".
        Some('h') if word.starts_with("HDF") => "an",
        _ => "a",
    }
}

impl fmt::Display for Diagnosis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Diagnosis::LfsPointer { oid, size } => {
                let short: String = oid.chars().take("sha256:".len() + 12).collect();
                write!(
                    f,
                    "a Git LFS pointer to an object of {} bytes, not the file (oid {short}…; `git lfs pull` fetches it)",
                    thousands(*size)
                )
            }
            Diagnosis::Html { title: Some(t) } => write!(f, "an HTML page, not a tensor file (title {t:?})"),
            Diagnosis::Html { title: None } => f.write_str("an HTML page, not a tensor file"),
            Diagnosis::Json { error: Some(e) } => write!(f, "a JSON document, not a tensor file (error {e:?})"),
            Diagnosis::Json { error: None } => f.write_str("a JSON document, not a tensor file"),
            Diagnosis::Text { first_line } => write!(f, "a text file, not a tensor file (first line {first_line:?})"),
            Diagnosis::Zeros { zeros, len } if zeros == len => {
                write!(f, "all {} bytes are zero: a sparse file or a failed download", thousands(*len))
            }
            Diagnosis::Zeros { zeros, len } => write!(
                f,
                "the first {} bytes of {} are zero: a sparse file or a failed download",
                thousands(*zeros),
                thousands(*len)
            ),
            Diagnosis::Truncated { format, by_extension, present, need } => {
                write!(f, "truncated: {} bytes present, {need}", thousands(*present))?;
                match (format, by_extension) {
                    (Some(format), false) => write!(f, " ({})", a_file_of(*format)),
                    (Some(format), true) => write!(f, " ({}, as its extension says)", a_file_of(*format)),
                    (None, _) => Ok(()),
                }
            }
            Diagnosis::Mismatch { found, extension, claimed } => {
                write!(f, "this is {found}, not {} as its .{extension} extension says", named(*claimed))
            }
            Diagnosis::Foreign { what } => write!(f, "{what}, not a tensor file"),
        }
    }
}

impl Diagnosis {
    /// A short kebab-case identifier of the kind of diagnosis, for JSON: `lfs-pointer`,
    /// `html`, `json`, `text`, `zeros`, `truncated`, `mismatch`, `foreign`.
    pub fn id(&self) -> &'static str {
        match self {
            Diagnosis::LfsPointer { .. } => "lfs-pointer",
            Diagnosis::Html { .. } => "html",
            Diagnosis::Json { .. } => "json",
            Diagnosis::Text { .. } => "text",
            Diagnosis::Zeros { .. } => "zeros",
            Diagnosis::Truncated { .. } => "truncated",
            Diagnosis::Mismatch { .. } => "mismatch",
            Diagnosis::Foreign { .. } => "foreign",
        }
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
