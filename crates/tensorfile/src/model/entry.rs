//! Entries: one tensor or blob of a file, described without reference to its format.

use std::fmt;

use crate::checked;
use crate::error::Result;
use crate::model::{DType, Layout, MetaValue, PartSpec};

/// Whether an entry is a tensor or an opaque blob (bytes with a key and no tensor meaning).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Kind {
    /// A tensor: elements of a dtype in a shape.
    Tensor,
    /// Opaque bytes; described as a 1-D `uint8` tensor of its length.
    Blob,
}

impl Kind {
    /// `tensor` or `blob`.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Tensor => "tensor",
            Kind::Blob => "blob",
        }
    }
}

/// What a reader knows about a tensor, and what a writer needs to store it.
#[derive(Debug, Clone, PartialEq)]
pub struct TensorInfo {
    pub name: String,
    pub kind: Kind,
    pub dtype: DType,
    pub shape: Vec<u64>,
    pub layout: Layout,
    /// Other per-tensor fields (custom keys of a `.zt` entry...), in file order.
    pub extra: Vec<(String, MetaValue)>,
}

impl TensorInfo {
    /// A dense tensor with no extra fields.
    pub fn dense(name: impl Into<String>, dtype: DType, shape: Vec<u64>) -> Self {
        TensorInfo { name: name.into(), kind: Kind::Tensor, dtype, shape, layout: Layout::Dense, extra: Vec::new() }
    }

    /// An opaque blob of `len` bytes.
    pub fn blob(name: impl Into<String>, len: u64) -> Self {
        TensorInfo { kind: Kind::Blob, ..TensorInfo::dense(name, DType::UInt8, vec![len]) }
    }

    /// The number of elements: the product of the shape (1 for a scalar), checked for overflow.
    pub fn numel(&self) -> Result<u64> {
        checked::numel(&self.shape)
    }

    /// Bytes of the decoded data: the sum of its layout's parts (the dense elements, or for
    /// sparse tensors the values plus their `u64` index arrays).
    pub fn nbytes(&self) -> Result<u64> {
        self.layout
            .parts(self.dtype, &self.shape)?
            .iter()
            .try_fold(0u64, |sum, p| checked::add(sum, p.nbytes()?, "tensor size"))
    }

    /// The parts this tensor's data is made of, as its layout names them.
    pub fn parts(&self) -> Result<Vec<PartSpec>> {
        self.layout.parts(self.dtype, &self.shape)
    }
}

/// Byte order of stored multi-byte elements.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ByteOrder {
    #[default]
    /// Least significant byte first (every format's default).
    Little,
    /// Most significant byte first.
    Big,
}

impl ByteOrder {
    /// `little` or `big`.
    pub fn name(self) -> &'static str {
        match self {
            ByteOrder::Little => "little",
            ByteOrder::Big => "big",
        }
    }
}

/// How stored bytes are encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Encoding {
    /// Stored as they are.
    Raw,
    /// Compressed with zstd (one or more frames).
    Zstd,
    /// Deflate (zip entries written by Python's `zipfile`).
    Deflate,
}

impl Encoding {
    /// `raw`, `zstd` or `deflate`.
    pub fn name(self) -> &'static str {
        match self {
            Encoding::Raw => "raw",
            Encoding::Zstd => "zstd",
            Encoding::Deflate => "deflate",
        }
    }
}

/// A checksum over the stored bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Checksum {
    /// CRC-32C (Castagnoli) of the stored bytes.
    Crc32c(u32),
    /// SHA-256 of the stored bytes.
    Sha256([u8; 32]),
}

impl Checksum {
    /// Compute a checksum of this kind over `bytes`.
    pub fn compute(kind: ChecksumKind, bytes: &[u8]) -> Option<Checksum> {
        use sha2::Digest;
        match kind {
            ChecksumKind::None => None,
            ChecksumKind::Crc32c => Some(Checksum::Crc32c(crc32c::crc32c(bytes))),
            ChecksumKind::Sha256 => Some(Checksum::Sha256(sha2::Sha256::digest(bytes).into())),
        }
    }

    /// Which algorithm this checksum uses.
    pub fn kind(&self) -> ChecksumKind {
        match self {
            Checksum::Crc32c(_) => ChecksumKind::Crc32c,
            Checksum::Sha256(_) => ChecksumKind::Sha256,
        }
    }

    /// Whether `bytes` match this checksum.
    pub fn matches(&self, bytes: &[u8]) -> bool {
        Checksum::compute(self.kind(), bytes).as_ref() == Some(self)
    }
}

/// A checksum computed over bytes that arrive in pieces.
pub struct ChecksumHasher(HasherState);

enum HasherState {
    None,
    Crc32c(u32),
    Sha256(Box<sha2::Sha256>),
}

impl ChecksumHasher {
    /// A hasher of `kind` with nothing given yet.
    pub fn new(kind: ChecksumKind) -> Self {
        use sha2::Digest;
        ChecksumHasher(match kind {
            ChecksumKind::None => HasherState::None,
            ChecksumKind::Crc32c => HasherState::Crc32c(0),
            ChecksumKind::Sha256 => HasherState::Sha256(Box::new(sha2::Sha256::new())),
        })
    }

    /// Add the next bytes, in order.
    pub fn update(&mut self, bytes: &[u8]) {
        use sha2::Digest;
        match &mut self.0 {
            HasherState::None => {}
            HasherState::Crc32c(c) => *c = crc32c::crc32c_append(*c, bytes),
            HasherState::Sha256(h) => h.update(bytes),
        }
    }

    /// The checksum of everything given, as [`Checksum::compute`] would give it whole.
    pub fn finish(self) -> Option<Checksum> {
        use sha2::Digest;
        match self.0 {
            HasherState::None => None,
            HasherState::Crc32c(c) => Some(Checksum::Crc32c(c)),
            HasherState::Sha256(h) => Some(Checksum::Sha256(h.finalize().into())),
        }
    }
}

impl fmt::Display for Checksum {
    /// The zTensor spelling: `crc32c:0x1234ABCD`, `sha256:<64 lowercase hex>`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Checksum::Crc32c(v) => write!(f, "crc32c:0x{v:08X}"),
            Checksum::Sha256(d) => write!(f, "sha256:{}", hex::encode(d)),
        }
    }
}

/// Which checksum a writer computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ChecksumKind {
    /// No checksum.
    None,
    #[default]
    /// CRC-32C (Castagnoli), the default.
    Crc32c,
    /// SHA-256.
    Sha256,
}

impl ChecksumKind {
    /// `none`, `crc32c`, `sha256`.
    pub fn name(self) -> &'static str {
        match self {
            ChecksumKind::None => "none",
            ChecksumKind::Crc32c => "crc32c",
            ChecksumKind::Sha256 => "sha256",
        }
    }
}

impl std::str::FromStr for ChecksumKind {
    type Err = crate::Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "none" => Ok(ChecksumKind::None),
            "crc32c" => Ok(ChecksumKind::Crc32c),
            "sha256" => Ok(ChecksumKind::Sha256),
            _ => Err(crate::Error::usage(format!("unknown checksum {s:?} (expected crc32c, sha256 or none)"))),
        }
    }
}

/// Where and how an entry's bytes are stored in its file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Storage {
    /// Absolute offset of the stored bytes in the file.
    pub offset: u64,
    /// Stored length (compressed length when encoded).
    pub len: u64,
    pub encoding: Encoding,
    pub byte_order: ByteOrder,
    pub checksum: Option<Checksum>,
}

/// One readable entry of a file.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub info: TensorInfo,
    /// Bytes that reading this entry yields (see [`TensorInfo::nbytes`]).
    pub nbytes: u64,
    pub storage: Storage,
}

/// An entry the file declares but that cannot be read (unknown dtype, encoding...), reported
/// for that entry without refusing the rest of the file.
#[derive(Debug)]
pub struct Unreadable {
    pub name: String,
    /// The dtype as the file spells it.
    pub dtype: String,
    pub shape: Vec<u64>,
    pub error: crate::Error,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksums_of_pieces_equal_checksums_of_the_whole() {
        let data: Vec<u8> = (0..10_000u32).map(|i| (i * 7 % 251) as u8).collect();
        for kind in [ChecksumKind::None, ChecksumKind::Crc32c, ChecksumKind::Sha256] {
            for cuts in [vec![], vec![0], vec![1, 2, 3], vec![4096, 9999], vec![10_000]] {
                let mut h = ChecksumHasher::new(kind);
                let mut start = 0;
                for &cut in &cuts {
                    h.update(&data[start..cut]);
                    start = cut;
                }
                h.update(&data[start..]);
                assert_eq!(h.finish(), Checksum::compute(kind, &data), "{kind:?} cut at {cuts:?}");
            }
        }
    }
}
