//! A case of the corpus, the families of attacks, and the manifest that lists them.

use tensorfile::{Format, Rule};

/// What a family of cases attacks. Every case belongs to exactly one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Family {
    Valid,
    Truncation,
    PastEnd,
    Overflow,
    Overlap,
    Misaligned,
    DuplicateName,
    BadUtf8,
    DeepNesting,
    MalformedCbor,
    MalformedJson,
    MalformedFlatbuffer,
    FlatbufferBomb,
    OutOfRangeIndex,
    ZipBomb,
    ZstdBomb,
    MalformedZip,
    PathEscape,
    ForbiddenGlobal,
    MemoExplosion,
    MalformedPickle,
    Checksum,
    BadMagic,
    BadField,
    SizeMismatch,
    NotTiled,
    BadSparse,
    BadCompressedData,
    MalformedProtobuf,
    SplitParts,
}

impl Family {
    pub const ALL: [Family; 30] = [
        Family::Valid,
        Family::Truncation,
        Family::PastEnd,
        Family::Overflow,
        Family::Overlap,
        Family::Misaligned,
        Family::DuplicateName,
        Family::BadUtf8,
        Family::DeepNesting,
        Family::MalformedCbor,
        Family::MalformedJson,
        Family::MalformedFlatbuffer,
        Family::FlatbufferBomb,
        Family::OutOfRangeIndex,
        Family::ZipBomb,
        Family::ZstdBomb,
        Family::MalformedZip,
        Family::PathEscape,
        Family::ForbiddenGlobal,
        Family::MemoExplosion,
        Family::MalformedPickle,
        Family::Checksum,
        Family::BadMagic,
        Family::BadField,
        Family::SizeMismatch,
        Family::NotTiled,
        Family::BadSparse,
        Family::BadCompressedData,
        Family::MalformedProtobuf,
        Family::SplitParts,
    ];

    pub fn id(self) -> &'static str {
        match self {
            Family::Valid => "valid",
            Family::Truncation => "truncation",
            Family::PastEnd => "past-end",
            Family::Overflow => "overflow",
            Family::Overlap => "overlap",
            Family::Misaligned => "misaligned",
            Family::DuplicateName => "duplicate-name",
            Family::BadUtf8 => "bad-utf8",
            Family::DeepNesting => "deep-nesting",
            Family::MalformedCbor => "malformed-cbor",
            Family::MalformedJson => "malformed-json",
            Family::MalformedFlatbuffer => "malformed-flatbuffer",
            Family::FlatbufferBomb => "flatbuffer-bomb",
            Family::OutOfRangeIndex => "out-of-range-index",
            Family::ZipBomb => "zip-bomb",
            Family::ZstdBomb => "zstd-bomb",
            Family::MalformedZip => "malformed-zip",
            Family::PathEscape => "path-escape",
            Family::ForbiddenGlobal => "forbidden-global",
            Family::MemoExplosion => "memo-explosion",
            Family::MalformedPickle => "malformed-pickle",
            Family::Checksum => "checksum",
            Family::BadMagic => "bad-magic",
            Family::BadField => "bad-field",
            Family::SizeMismatch => "size-mismatch",
            Family::NotTiled => "not-tiled",
            Family::BadSparse => "bad-sparse",
            Family::BadCompressedData => "bad-compressed-data",
            Family::MalformedProtobuf => "malformed-protobuf",
            Family::SplitParts => "split-parts",
        }
    }

    pub fn description(self) -> &'static str {
        match self {
            Family::Valid => "files that must open, verify clean and read every entry",
            Family::Truncation => "a file cut inside (or just after) one of its header fields",
            Family::PastEnd => "a length or an offset that points past the end of the file or its region",
            Family::Overflow => "integer overflow: offset + size, element counts, shape products, byte sizes",
            Family::Overlap => "two blobs (or a blob and a header) sharing bytes",
            Family::Misaligned => "a blob or a flatbuffer object at an offset its format forbids",
            Family::DuplicateName => "two entries, keys or records with one name",
            Family::BadUtf8 => "a name or a header that is not UTF-8",
            Family::DeepNesting => "containers nested past the library's limit (CBOR, JSON, pickled containers)",
            Family::MalformedCbor => {
                "CBOR that does not decode: reserved encodings, stray breaks, trailing bytes, counts beyond the bytes"
            }
            Family::MalformedJson => "JSON headers and configs that do not parse, or of the wrong shape",
            Family::MalformedFlatbuffer => "flatbuffers whose root, vtables, offsets, strings or union tags are broken",
            Family::FlatbufferBomb => {
                "a small flatbuffer whose offsets share subtrees so that decoding it would expand without end"
            }
            Family::OutOfRangeIndex => {
                "an index into another table of the file (operator, value, segment, buffer...) out of range"
            }
            Family::ZipBomb => {
                "deflated zip entries claiming (or inflating to) far more than deflate can produce or they declare"
            }
            Family::ZstdBomb => "zstd blobs declaring far more than their frames can produce",
            Family::MalformedZip => {
                "broken zip structure: central directory, local headers, entries running into the directory"
            }
            Family::PathEscape => "zip entries whose names leave the archive (`../x`, absolute paths, drives)",
            Family::ForbiddenGlobal => {
                "pickles naming or calling a global outside the allow-list (`os.system`, `builtins.eval`...)"
            }
            Family::MemoExplosion => "pickles that grow the memo, the stack or the flattened object without bound",
            Family::MalformedPickle => "pickles with unknown opcodes, stack underflow, marks misused, missing STOP",
            Family::Checksum => "stored checksums (CRC-32, CRC-32C, SHA-256) that do not match, or cannot be parsed",
            Family::BadMagic => "a magic number or file identifier that is not the format's",
            Family::BadField => "fields missing, of the wrong type, or with values the format does not define",
            Family::SizeMismatch => "a stored size that disagrees with the size its dtype and shape imply",
            Family::NotTiled => "safetensors data with holes or trailing bytes",
            Family::BadSparse => {
                "sparse structure that is inconsistent (indices out of range, indptr decreasing, wrong rank)"
            }
            Family::BadCompressedData => "compressed data that does not decode",
            Family::MalformedProtobuf => "protobuf that does not decode: wire types, tags, lengths, varints",
            Family::SplitParts => {
                "the parts of a split GGUF model that do not fit together: missing, misnamed, numbered or \
                 counted otherwise, holding other tensors than they count"
            }
        }
    }
}

/// When a file must be refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Opening the file fails with the rule.
    Open,
    /// The file opens, and the first problem `verify()` reports (an unreadable entry, an
    /// entry that fails to read, or a load-time rule) is the rule.
    Verify,
}

impl Stage {
    pub fn id(self) -> &'static str {
        match self {
            Stage::Open => "open",
            Stage::Verify => "verify",
        }
    }
}

/// What reads a case: a format's reader, or a parser of a file that is no tensor format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subject {
    /// The file is opened as this format.
    Format(Format),
    /// The file is read as an importance matrix (`tensorfile::llama::Imatrix`):
    /// at `open`, read; at `verify`, its weights made.
    Imatrix,
}

impl Subject {
    /// The name the manifest gives it.
    pub fn name(self) -> &'static str {
        match self {
            Subject::Format(f) => f.name(),
            Subject::Imatrix => "imatrix",
        }
    }
}

/// One file of the corpus and what must happen to it.
pub struct Case {
    /// The folder under `valid/` or `invalid/` (a format name, or `pickle`).
    pub folder: &'static str,
    /// The file name in that folder.
    pub name: String,
    pub subject: Subject,
    /// `None` for a valid file.
    pub expect: Option<(Rule, Stage)>,
    pub family: Family,
    pub description: String,
    pub bytes: Vec<u8>,
    /// For a case opened by its path (a part of a split model): the other files beside it
    /// (name, bytes), written into the same folder; `None` for a case opened from its bytes.
    pub beside: Option<Vec<(String, Vec<u8>)>>,
}

impl Case {
    /// The path relative to the corpus root: `invalid/zt/index-length-past-end.zt`.
    pub fn path(&self) -> String {
        let kind = if self.expect.is_some() { "invalid" } else { "valid" };
        format!("{kind}/{}/{}", self.folder, self.name)
    }

    /// The paths of the files beside it, relative to the corpus root.
    pub fn beside_paths(&self) -> Vec<String> {
        let folder = self.path();
        let folder = &folder[..folder.rfind('/').unwrap_or(0)];
        self.beside.iter().flatten().map(|(name, _)| format!("{folder}/{name}")).collect()
    }
}

/// The cases of one folder, each named `<stem>.<ext>`.
pub struct Folder {
    pub name: &'static str,
    pub subject: Subject,
    pub ext: &'static str,
    pub cases: Vec<Case>,
}

impl Folder {
    pub fn new(name: &'static str, format: Format, ext: &'static str) -> Folder {
        Folder { name, subject: Subject::Format(format), ext, cases: Vec::new() }
    }

    /// A folder of importance matrices, whose cases name their own extension (`.dat` or
    /// `.gguf`) in their stem.
    pub fn imatrix(name: &'static str) -> Folder {
        Folder { name, subject: Subject::Imatrix, ext: "", cases: Vec::new() }
    }

    fn push(&mut self, stem: &str, family: Family, expect: Option<(Rule, Stage)>, desc: &str, bytes: Vec<u8>) {
        self.cases.push(Case {
            folder: self.name,
            name: if self.ext.is_empty() { stem.to_string() } else { format!("{stem}.{}", self.ext) },
            subject: self.subject,
            expect,
            family,
            description: desc.to_string(),
            bytes,
            beside: None,
        });
    }

    /// A file opened by its path, with `beside` (file names and bytes) in the same folder:
    /// valid when `expect` is `None`, else refused at open with the rule.
    pub fn by_path(
        &mut self,
        stem: &str,
        family: Family,
        expect: Option<Rule>,
        desc: &str,
        bytes: Vec<u8>,
        beside: Vec<(String, Vec<u8>)>,
    ) {
        self.push(stem, family, expect.map(|r| (r, Stage::Open)), desc, bytes);
        if let Some(case) = self.cases.last_mut() {
            case.beside = Some(beside);
        }
    }

    /// A file that must open, verify clean and read every entry.
    pub fn valid(&mut self, stem: &str, family: Family, desc: &str, bytes: Vec<u8>) {
        self.push(stem, family, None, desc, bytes);
    }

    /// A file whose opening must fail with `rule`.
    pub fn open(&mut self, stem: &str, family: Family, rule: Rule, desc: &str, bytes: Vec<u8>) {
        self.push(stem, family, Some((rule, Stage::Open)), desc, bytes);
    }

    /// A file that opens, whose first `verify()` problem must be `rule`.
    pub fn verify(&mut self, stem: &str, family: Family, rule: Rule, desc: &str, bytes: Vec<u8>) {
        self.push(stem, family, Some((rule, Stage::Verify)), desc, bytes);
    }
}

fn quoted(s: &str) -> String {
    serde_json::Value::String(s.to_string()).to_string()
}

/// `MANIFEST.json`: the families, then one case per line, sorted by path. Written by hand so
/// the text does not depend on a JSON library's map ordering.
pub fn manifest(cases: &[&Case]) -> String {
    let mut out = String::from("{\n");
    out.push_str("  \"generator\": \"cargo run -p tensorfile --example conformance (do not edit: regenerate)\",\n");
    out.push_str("  \"families\": [\n");
    let families: Vec<String> = Family::ALL
        .iter()
        .map(|f| format!("    {{\"id\": {}, \"description\": {}}}", quoted(f.id()), quoted(f.description())))
        .collect();
    out.push_str(&families.join(",\n"));
    out.push_str("\n  ],\n  \"cases\": [\n");
    let lines: Vec<String> = cases
        .iter()
        .map(|c| {
            let (expect, stage) = match c.expect {
                Some((rule, stage)) => (rule.id(), stage.id()),
                None => ("valid", "verify"),
            };
            let beside = match &c.beside {
                None => String::new(),
                Some(_) => {
                    let paths: Vec<String> = c.beside_paths().iter().map(|p| quoted(p)).collect();
                    format!(", \"open\": \"path\", \"beside\": [{}]", paths.join(", "))
                }
            };
            format!(
                "    {{\"file\": {}, \"format\": {}, \"family\": {}, \"expect\": {}, \"stage\": {}, \"description\": {}{beside}}}",
                quoted(&c.path()),
                quoted(c.subject.name()),
                quoted(c.family.id()),
                quoted(expect),
                quoted(stage),
                quoted(&c.description)
            )
        })
        .collect();
    out.push_str(&lines.join(",\n"));
    out.push_str("\n  ]\n}\n");
    out
}
