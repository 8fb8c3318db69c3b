//! One error type for the whole library.
//!
//! Every failure that comes from a file's content is an [`ErrorKind::Invalid`] carrying the
//! [`Rule`] the file broke, so tests (and callers) can match on the exact rule rather than on
//! message text. Messages name the file (when known), the tensor (when one is involved) and
//! what is wrong.

mod diagnosis;

use std::fmt;
use std::path::{Path, PathBuf};

pub use diagnosis::{Diagnosis, FormatName, Need};

/// A rule of a file format that a file can break. Stable: tests assert on these.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Rule {
    /// The file ends before a structure it declares.
    Truncated,
    /// The leading magic bytes are not the format's.
    BadMagic,
    /// The format could not be recognised from the content.
    UnknownFormat,
    /// A header or index length is larger than the format or the file allows.
    HeaderTooLarge,
    /// CBOR that cannot be decoded (bad major type, bad length, trailing bytes...).
    BadCbor,
    /// Nesting deeper than the library's limit.
    TooDeep,
    /// JSON that cannot be decoded.
    BadJson,
    /// Text that is not UTF-8.
    BadUtf8,
    /// A required field is missing.
    MissingField,
    /// A field has the wrong type or an impossible value.
    BadField,
    /// A dtype name the format does not define.
    UnknownDType,
    /// An encoding name the format does not define.
    UnknownEncoding,
    /// A layout name the format does not define.
    UnknownLayout,
    /// A byte order other than little/big.
    UnknownByteOrder,
    /// A tensor's bytes start at an offset that breaks the format's alignment.
    Misaligned,
    /// An offset or offset+size lies outside the file or its data region.
    OutOfBounds,
    /// Two tensors' bytes overlap, or a tensor overlaps the index.
    Overlap,
    /// Two entries share a name.
    DuplicateName,
    /// The number of elements or bytes of a shape overflows 64 bits.
    ShapeOverflow,
    /// Stored size and the size implied by dtype and shape disagree.
    SizeMismatch,
    /// A stored checksum does not match the bytes.
    ChecksumMismatch,
    /// A checksum string that cannot be parsed.
    BadChecksum,
    /// Compressed data that does not decode.
    BadCompressedData,
    /// Compressed data decodes to more (or fewer) bytes than declared.
    DecompressedSizeMismatch,
    /// Tensors do not exactly tile the data region (holes or trailing bytes).
    NotTiled,
    /// File-level metadata of the wrong shape.
    BadMetadata,
    /// Sparse structure that is inconsistent (indices out of range, indptr not monotonic...).
    BadSparse,
    /// More entries than the library's limit.
    TooManyEntries,
    /// A pickle that is malformed (unknown opcode, stack underflow, bad memo reference...).
    BadPickle,
    /// A pickle that names a global (function or class) outside the allow-list: refused,
    /// never run.
    ForbiddenGlobal,
    /// An archive entry whose name leaves the archive: an absolute path, a drive letter, or a
    /// `..` component (what "zip slip" extraction exploits).
    UnsafePath,
    /// A tensor far larger than the bytes it comes from can justify: a strided view whose
    /// elements repeat (stride 0) describing more than its storage holds, past
    /// [`crate::limits::MAX_VIEW_EXPANSION`].
    ExpansionTooLarge,
    /// The files of a sharded checkpoint do not fit together: its index and its shards
    /// disagree (the index puts a tensor in a shard that does not hold it, or a shard holds a
    /// tensor the index does not list), or the shards are of different formats.
    ShardMismatch,
    /// A quantized layout that does not fit its tensor: blocks or groups that do not divide the
    /// shape, parameters the scheme does not allow, parts of the wrong size.
    BadQuantization,
    /// Stored elements outside the values their type allows: a bool byte other than 0 or 1.
    BadValue,
    /// Protobuf that does not decode (ONNX): a bad wire type or tag, a varint past 10 bytes, a
    /// length past the end of its message, a string that is not UTF-8.
    BadProtobuf,
    /// A file that the opened file names, and that its format keeps part of its data in, is
    /// not there (or cannot be opened): a zTensor 2 root's shard, an ONNX model's external
    /// data, a shard of a sharded checkpoint's index, an ExecuTorch program's `.ptd`. The
    /// message names the file looked for and how its name was derived. An error of this rule
    /// is of kind [`ErrorKind::Io`].
    MissingFile,
    /// Valid content that this library, or the target format, cannot represent: every error of
    /// kind [`ErrorKind::Unsupported`] has this rule, so that every refusal and every
    /// unreadable tensor names one.
    Unsupported,
}

impl Rule {
    /// A short kebab-case identifier, shown in messages and JSON.
    pub fn id(self) -> &'static str {
        match self {
            Rule::Truncated => "truncated",
            Rule::BadMagic => "bad-magic",
            Rule::UnknownFormat => "unknown-format",
            Rule::HeaderTooLarge => "header-too-large",
            Rule::BadCbor => "bad-cbor",
            Rule::TooDeep => "too-deep",
            Rule::BadJson => "bad-json",
            Rule::BadUtf8 => "bad-utf8",
            Rule::MissingField => "missing-field",
            Rule::BadField => "bad-field",
            Rule::UnknownDType => "unknown-dtype",
            Rule::UnknownEncoding => "unknown-encoding",
            Rule::UnknownLayout => "unknown-layout",
            Rule::UnknownByteOrder => "unknown-byte-order",
            Rule::Misaligned => "misaligned",
            Rule::OutOfBounds => "out-of-bounds",
            Rule::Overlap => "overlap",
            Rule::DuplicateName => "duplicate-name",
            Rule::ShapeOverflow => "shape-overflow",
            Rule::SizeMismatch => "size-mismatch",
            Rule::ChecksumMismatch => "checksum-mismatch",
            Rule::BadChecksum => "bad-checksum",
            Rule::BadCompressedData => "bad-compressed-data",
            Rule::DecompressedSizeMismatch => "decompressed-size-mismatch",
            Rule::NotTiled => "not-tiled",
            Rule::BadMetadata => "bad-metadata",
            Rule::BadSparse => "bad-sparse",
            Rule::TooManyEntries => "too-many-entries",
            Rule::BadPickle => "bad-pickle",
            Rule::ForbiddenGlobal => "forbidden-global",
            Rule::UnsafePath => "unsafe-path",
            Rule::ExpansionTooLarge => "expansion-too-large",
            Rule::ShardMismatch => "shard-mismatch",
            Rule::BadQuantization => "bad-quantization",
            Rule::BadValue => "bad-value",
            Rule::BadProtobuf => "bad-protobuf",
            Rule::MissingFile => "missing-file",
            Rule::Unsupported => "unsupported",
        }
    }

    /// The rule whose [`Rule::id`] is `id`.
    pub fn from_id(id: &str) -> Option<Rule> {
        Rule::ALL.into_iter().find(|r| r.id() == id)
    }

    /// Every rule, in declaration order.
    pub const ALL: [Rule; 38] = [
        Rule::Truncated,
        Rule::BadMagic,
        Rule::UnknownFormat,
        Rule::HeaderTooLarge,
        Rule::BadCbor,
        Rule::TooDeep,
        Rule::BadJson,
        Rule::BadUtf8,
        Rule::MissingField,
        Rule::BadField,
        Rule::UnknownDType,
        Rule::UnknownEncoding,
        Rule::UnknownLayout,
        Rule::UnknownByteOrder,
        Rule::Misaligned,
        Rule::OutOfBounds,
        Rule::Overlap,
        Rule::DuplicateName,
        Rule::ShapeOverflow,
        Rule::SizeMismatch,
        Rule::ChecksumMismatch,
        Rule::BadChecksum,
        Rule::BadCompressedData,
        Rule::DecompressedSizeMismatch,
        Rule::NotTiled,
        Rule::BadMetadata,
        Rule::BadSparse,
        Rule::TooManyEntries,
        Rule::BadPickle,
        Rule::ForbiddenGlobal,
        Rule::UnsafePath,
        Rule::ExpansionTooLarge,
        Rule::ShardMismatch,
        Rule::BadQuantization,
        Rule::BadValue,
        Rule::BadProtobuf,
        Rule::MissingFile,
        Rule::Unsupported,
    ];
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

/// What went wrong.
#[derive(Debug)]
#[non_exhaustive]
pub enum ErrorKind {
    /// Reading or writing failed at the operating-system level.
    Io(std::io::Error),
    /// The file breaks a rule of its format.
    Invalid {
        /// The rule broken.
        rule: Rule,
        /// What is wrong, in words naming neither the file nor the tensor.
        detail: String,
    },
    /// The content is valid but this library (or the target format) cannot represent it.
    Unsupported(String),
    /// No tensor of that name.
    NotFound(String),
    /// The caller asked for something impossible (bad option, mismatched data...).
    Usage(String),
    /// A remote object could not be fetched (network, server or credentials), after retries.
    Remote(String),
}

/// Something the caller can do about an error. The library names it; each shell words it in
/// its own terms (a flag for the command line, a keyword argument for Python), so library
/// messages never name either.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Hint {
    /// Leave out the tensors that cannot be read or that the output format cannot hold.
    SkipUnsupported,
    /// Give the `.ptd` file that holds an ExecuTorch program's external tensors.
    ProgramData,
    /// Ignore tensors of the weights file that the file being updated lacks.
    SkipUnknown,
    /// Convert the file instead: `update` rewrites files whose tensors are part of more.
    UseConvert,
    /// Leave out this option of the conversion: it does not apply to what was asked.
    Drop(JobOption),
}

/// An option of a conversion that can be refused where it does not apply (a quantization
/// option on a path that cannot honour it...), for the shells to name as their flag or
/// keyword argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum JobOption {
    /// The importance matrix entries included by name.
    IncludeWeights,
    /// The importance matrix entries excluded by name.
    ExcludeWeights,
    /// The output tensor's type.
    OutputTensorType,
    /// The token embeddings' type.
    TokenEmbeddingType,
    /// Leaving the output tensor as it is.
    LeaveOutputTensor,
    /// Key/values set in the output.
    OverrideKv,
    /// One output per split of the input.
    KeepSplit,
    /// Layers left out.
    PruneLayers,
    /// The dtype floating tensors are cast to.
    DType,
    /// Shards of at most a size.
    MaxShardSize,
    /// Parts of a split model of at most a number of tensors.
    SplitMaxTensors,
    /// A first part of a split model with no tensor.
    NoTensorFirstSplit,
    /// Tensors renamed.
    Rename,
    /// A quantization.
    Quantize,
}

impl JobOption {
    /// A short kebab-case identifier (`output-tensor-type`...).
    pub fn id(self) -> &'static str {
        match self {
            JobOption::IncludeWeights => "include-weights",
            JobOption::ExcludeWeights => "exclude-weights",
            JobOption::OutputTensorType => "output-tensor-type",
            JobOption::TokenEmbeddingType => "token-embedding-type",
            JobOption::LeaveOutputTensor => "leave-output-tensor",
            JobOption::OverrideKv => "override-kv",
            JobOption::KeepSplit => "keep-split",
            JobOption::PruneLayers => "prune-layers",
            JobOption::DType => "dtype",
            JobOption::MaxShardSize => "max-shard-size",
            JobOption::SplitMaxTensors => "split-max-tensors",
            JobOption::NoTensorFirstSplit => "no-tensor-first-split",
            JobOption::Rename => "rename",
            JobOption::Quantize => "quantize",
        }
    }
}

impl Hint {
    /// A short kebab-case identifier, shown in JSON (`skip-unsupported`, `program-data`...).
    pub fn id(self) -> &'static str {
        match self {
            Hint::SkipUnsupported => "skip-unsupported",
            Hint::ProgramData => "program-data",
            Hint::SkipUnknown => "skip-unknown",
            Hint::UseConvert => "use-convert",
            Hint::Drop(_) => "drop-option",
        }
    }

    /// What the hint suggests, in words that name no flag or argument.
    pub fn describe(self) -> &'static str {
        match self {
            Hint::SkipUnsupported => "leave out the tensors that cannot be converted",
            Hint::ProgramData => "give the .ptd file that holds the program's external tensors",
            Hint::SkipUnknown => "ignore tensors the file being updated lacks",
            Hint::UseConvert => "convert the file instead",
            Hint::Drop(_) => "leave that option out",
        }
    }
}

/// The library's error: a kind, plus the file and tensor it concerns when known, and what the
/// caller can do about it.
#[derive(Debug)]
pub struct Error {
    kind: ErrorKind,
    path: Option<PathBuf>,
    tensor: Option<String>,
    hint: Option<Hint>,
    /// The rule of an I/O error that a file's content led to: a file it names that is not
    /// there ([`Rule::MissingFile`]). Invalid content carries its rule in its kind.
    io_rule: Option<Rule>,
    /// What the file really is, when it did not open ([`Diagnosis`]).
    diagnosis: Option<Box<Diagnosis>>,
}

/// Shorthand for results of this library.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// An error of `kind` that names no file, tensor or hint yet; [`Error::in_file`],
    /// [`Error::for_tensor`] and [`Error::with_hint`] add them.
    pub fn new(kind: ErrorKind) -> Self {
        Error { kind, path: None, tensor: None, hint: None, io_rule: None, diagnosis: None }
    }

    /// Attach what the caller can do about this error.
    pub fn with_hint(mut self, hint: Hint) -> Self {
        self.hint = Some(hint);
        self
    }

    /// What the caller can do about this error, for the shell to word.
    pub fn hint(&self) -> Option<Hint> {
        self.hint
    }

    /// Attach what the file really is (an LFS pointer, an HTML page, cut short...): it leads
    /// the message; the rule stays.
    pub fn with_diagnosis(mut self, diagnosis: Diagnosis) -> Self {
        self.diagnosis = Some(Box::new(diagnosis));
        self
    }

    /// What the file really is, when opening it failed and its bytes say more than the rule.
    pub fn diagnosis(&self) -> Option<&Diagnosis> {
        self.diagnosis.as_deref()
    }

    /// A broken format rule.
    pub fn invalid(rule: Rule, detail: impl Into<String>) -> Self {
        Error::new(ErrorKind::Invalid { rule, detail: detail.into() })
    }

    /// Valid content that this library, or the target format, cannot represent; `what` says
    /// what, in words.
    pub fn unsupported(what: impl Into<String>) -> Self {
        Error::new(ErrorKind::Unsupported(what.into()))
    }

    /// This error, from opening `path`, a file that another file names (`how` says how its
    /// name was derived: "shard \"00001\" of the root's shard table, in the root's folder"):
    /// an I/O error becomes one of [`Rule::MissingFile`] whose detail names the file and how,
    /// so that an unreadable tensor's message (which leaves out the file) still says which,
    /// and it concerns the file that names it (which the caller attaches); another error gets
    /// `path` attached.
    pub fn named_by(self, path: &Path, how: impl fmt::Display) -> Self {
        let ErrorKind::Io(e) = &self.kind else { return self.in_file(path) };
        let text = format!("{} ({how}): {e}", path.display());
        let mut error = Error::new(ErrorKind::Io(std::io::Error::new(e.kind(), text)));
        error.io_rule = Some(Rule::MissingFile);
        error
    }

    /// This error seen inside `context` (a record, a key, a part): its detail starts with
    /// `context: `; invalid content keeps its rule, and an error of any other kind becomes
    /// invalid content of `otherwise`.
    pub fn within(self, context: impl fmt::Display, otherwise: Rule) -> Self {
        let rule = match self.kind {
            ErrorKind::Invalid { rule, .. } => rule,
            _ => otherwise,
        };
        Error::invalid(rule, format!("{context}: {}", self.detail()))
    }

    /// A request the caller should not have made (a bad option, mismatched data); `what` says
    /// what was wrong with it.
    pub fn usage(what: impl Into<String>) -> Self {
        Error::new(ErrorKind::Usage(what.into()))
    }

    /// No tensor named `name`.
    pub fn not_found(name: impl Into<String>) -> Self {
        Error::new(ErrorKind::NotFound(name.into()))
    }

    /// Attach the file this error concerns (kept if one is already set).
    pub fn in_file(mut self, path: impl AsRef<Path>) -> Self {
        if self.path.is_none() {
            self.path = Some(path.as_ref().to_path_buf());
        }
        self
    }

    /// Attach the tensor this error concerns (kept if one is already set).
    pub fn for_tensor(mut self, name: impl Into<String>) -> Self {
        if self.tensor.is_none() {
            self.tensor = Some(name.into());
        }
        self
    }

    /// What went wrong, to match on; [`Error::detail`] puts it in words.
    pub fn kind(&self) -> &ErrorKind {
        &self.kind
    }

    /// The rule this error is of: the broken rule of invalid content, [`Rule::Unsupported`]
    /// for content the library cannot represent, [`Rule::MissingFile`] for a file another
    /// names that is not there; `None` for other failures (an I/O error on the file itself, a
    /// bad request, a tensor not found, a remote failure).
    pub fn rule(&self) -> Option<Rule> {
        match self.kind {
            ErrorKind::Invalid { rule, .. } => Some(rule),
            ErrorKind::Unsupported(_) => Some(Rule::Unsupported),
            _ => self.io_rule,
        }
    }

    /// The file this error concerns (a path or a URL, as opened), when one is attached.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// The tensor (or record) this error concerns, when one is attached.
    pub fn tensor(&self) -> Option<&str> {
        self.tensor.as_deref()
    }

    /// What is wrong, without the file, the tensor or the rule: `unknown dtype "Q9"`.
    pub fn detail(&self) -> String {
        match &self.kind {
            ErrorKind::Io(e) => e.to_string(),
            ErrorKind::Invalid { detail, .. } => detail.clone(),
            ErrorKind::Unsupported(w) | ErrorKind::Usage(w) | ErrorKind::Remote(w) => w.clone(),
            ErrorKind::NotFound(n) => format!("no tensor named {n:?}"),
        }
    }

    /// The message without the file prefix.
    pub fn message(&self) -> String {
        let mut out = String::new();
        if let Some(t) = &self.tensor {
            out.push_str(&format!("tensor {t:?}: "));
        }
        match &self.kind {
            ErrorKind::Io(e) => match self.io_rule {
                Some(rule) => out.push_str(&format!("{e} [{rule}]")),
                None => out.push_str(&e.to_string()),
            },
            // What the file really is leads; "not a format tensorfile recognises" adds nothing.
            ErrorKind::Invalid { rule, detail } => match &self.diagnosis {
                Some(d) if *rule == Rule::UnknownFormat => out.push_str(&format!("{d} [{rule}]")),
                Some(d) => out.push_str(&format!("{d}; {detail} [{rule}]")),
                None => out.push_str(&format!("{detail} [{rule}]")),
            },
            ErrorKind::Unsupported(w) => out.push_str(&format!("unsupported: {w}")),
            ErrorKind::NotFound(n) => out.push_str(&format!("no tensor named {n:?}")),
            ErrorKind::Usage(w) | ErrorKind::Remote(w) => out.push_str(w),
        }
        out
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(p) = &self.path {
            write!(f, "{}: ", p.display())?;
        }
        f.write_str(&self.message())
    }
}

impl Clone for ErrorKind {
    fn clone(&self) -> Self {
        match self {
            // io::Error is not Clone: keep its kind and text.
            ErrorKind::Io(e) => ErrorKind::Io(std::io::Error::new(e.kind(), e.to_string())),
            ErrorKind::Invalid { rule, detail } => ErrorKind::Invalid { rule: *rule, detail: detail.clone() },
            ErrorKind::Unsupported(w) => ErrorKind::Unsupported(w.clone()),
            ErrorKind::NotFound(n) => ErrorKind::NotFound(n.clone()),
            ErrorKind::Usage(w) => ErrorKind::Usage(w.clone()),
            ErrorKind::Remote(w) => ErrorKind::Remote(w.clone()),
        }
    }
}

impl Clone for Error {
    fn clone(&self) -> Self {
        Error {
            kind: self.kind.clone(),
            path: self.path.clone(),
            tensor: self.tensor.clone(),
            hint: self.hint,
            io_rule: self.io_rule,
            diagnosis: self.diagnosis.clone(),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.kind {
            ErrorKind::Io(e) => Some(e),
            _ => None,
        }
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::new(ErrorKind::Io(e))
    }
}

#[cfg(test)]
mod tests {
    use super::Rule;

    /// A number for every variant, its place in `Rule::ALL`: a rule added to the enum does not
    /// compile until it is numbered here (and then belongs at that place in `Rule::ALL`).
    fn position(r: Rule) -> usize {
        match r {
            Rule::Truncated => 0,
            Rule::BadMagic => 1,
            Rule::UnknownFormat => 2,
            Rule::HeaderTooLarge => 3,
            Rule::BadCbor => 4,
            Rule::TooDeep => 5,
            Rule::BadJson => 6,
            Rule::BadUtf8 => 7,
            Rule::MissingField => 8,
            Rule::BadField => 9,
            Rule::UnknownDType => 10,
            Rule::UnknownEncoding => 11,
            Rule::UnknownLayout => 12,
            Rule::UnknownByteOrder => 13,
            Rule::Misaligned => 14,
            Rule::OutOfBounds => 15,
            Rule::Overlap => 16,
            Rule::DuplicateName => 17,
            Rule::ShapeOverflow => 18,
            Rule::SizeMismatch => 19,
            Rule::ChecksumMismatch => 20,
            Rule::BadChecksum => 21,
            Rule::BadCompressedData => 22,
            Rule::DecompressedSizeMismatch => 23,
            Rule::NotTiled => 24,
            Rule::BadMetadata => 25,
            Rule::BadSparse => 26,
            Rule::TooManyEntries => 27,
            Rule::BadPickle => 28,
            Rule::ForbiddenGlobal => 29,
            Rule::UnsafePath => 30,
            Rule::ExpansionTooLarge => 31,
            Rule::ShardMismatch => 32,
            Rule::BadQuantization => 33,
            Rule::BadValue => 34,
            Rule::BadProtobuf => 35,
            Rule::MissingFile => 36,
            Rule::Unsupported => 37,
        }
    }

    #[test]
    fn every_rule_round_trips_through_its_id() {
        for (i, r) in Rule::ALL.into_iter().enumerate() {
            assert_eq!(position(r), i, "{r:?} out of place in Rule::ALL");
            assert_eq!(Rule::from_id(r.id()), Some(r));
            assert_eq!(r.to_string(), r.id());
        }
        let mut ids: Vec<&str> = Rule::ALL.iter().map(|r| r.id()).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), Rule::ALL.len(), "two rules share an id");
        assert_eq!(Rule::from_id("no-such-rule"), None);
        assert_eq!(Rule::from_id("Truncated"), None, "ids are kebab-case");
    }
}
