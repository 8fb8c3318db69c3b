//! What a file that does not open really is ([`Diagnosis`]), as plain data an [`Error`]
//! carries: the diagnosing itself (`crate::diagnose`) sits above the formats, which it asks;
//! what it finds is told here in words that need nothing but the format's names.
//!
//! [`Error`]: super::Error

use std::fmt;

use crate::units::thousands;

/// A format as a diagnosis names it: its short name and its title, as its unit gives them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FormatName {
    /// The short name (`safetensors`, `gguf`...).
    pub name: &'static str,
    /// What the format is, in a few words (`GGUF`, `NumPy array`...).
    pub title: &'static str,
}

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
        format: Option<FormatName>,
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
        claimed: FormatName,
    },
    /// A known kind of file that holds no tensors tensorfile reads (gzip, ELF, PNG...).
    Foreign {
        /// What it is (`a gzip archive`...).
        what: String,
    },
}

/// What a cut-short file needs that it does not have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Need {
    /// Its header places data up to this many bytes from the start.
    Data(u64),
    /// Its header itself ends this many bytes from the start.
    Header(u64),
    /// Its structure reaches at least this many bytes from the start.
    AtLeast(u64),
    /// It ends inside its magic, of this many bytes.
    Magic(u64),
    /// It ends inside its header, whose length only the missing bytes would tell.
    InHeader,
    /// The format keeps its index at the end of the file, and it is not there.
    IndexMissing,
    /// The file has no bytes at all.
    Empty,
    /// Its reader found its structure running past the end; how far is not known.
    Unknown,
}

impl fmt::Display for Need {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Need::Data(n) => write!(f, "its header says the data needs {}", thousands(*n)),
            Need::Header(n) => write!(f, "its header needs {}", thousands(*n)),
            Need::AtLeast(n) => write!(f, "its contents need at least {}", thousands(*n)),
            Need::Magic(n) => write!(f, "it ends inside the {n}-byte magic"),
            Need::InHeader => f.write_str("it ends inside its header"),
            Need::IndexMissing => f.write_str("its index, kept at the end of the file, is missing"),
            Need::Empty => f.write_str("the file is empty"),
            Need::Unknown => f.write_str("its contents run past the end"),
        }
    }
}

impl FormatName {
    /// `a GGUF file`, `an HDF5 file`.
    pub fn a_file(&self) -> String {
        a_file_of(*self)
    }
}

fn a_file_of(f: FormatName) -> String {
    let title = f.title;
    let file = if title.ends_with(" file") { "" } else { " file" };
    format!("{} {title}{file}", article(title))
}

/// A format as the object of "not ...": its name (`safetensors`, `GGUF`), or a noun phrase with
/// its article (`a NumPy array`, `an ONNX model`, `a torch.save file`).
fn named(f: FormatName) -> String {
    let title = f.title;
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
