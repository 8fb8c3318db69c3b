//! Entries: one tensor or blob of a file, described without reference to its format.

use std::fmt;

use crate::checked;
use crate::error::Result;
use crate::model::{DType, MetaValue};

/// Whether an entry is a tensor or an opaque blob (bytes with a key and no tensor meaning).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Tensor,
    /// Opaque bytes; described as a 1-D `uint8` tensor of its length.
    Blob,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Tensor => "tensor",
            Kind::Blob => "blob",
        }
    }
}

/// Sparse storage schemes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SparseFormat {
    /// Coordinates: an `ndim x nnz` index matrix and `nnz` values.
    Coo,
    /// Compressed rows (2-D): `rows + 1` row pointers, `nnz` column indices, `nnz` values.
    Csr,
}

impl SparseFormat {
    pub fn name(self) -> &'static str {
        match self {
            SparseFormat::Coo => "coo",
            SparseFormat::Csr => "csr",
        }
    }
}

/// How the elements of a tensor are arranged where it is stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Layout {
    /// Contiguous, row-major.
    Dense,
    /// Dense, with bytes stored in this order of dimensions (outermost first).
    DimOrder(Vec<u8>),
    /// Dense view into a larger storage: strides and offset in elements.
    Strided { strides: Vec<u64>, storage_offset: u64 },
    /// Sparse, with this many stored values.
    Sparse { format: SparseFormat, nnz: u64 },
}

/// A layout without its parameters: what a format's [`crate::formats::Caps`] lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LayoutKind {
    /// Contiguous, row-major.
    Dense,
    /// Dense, stored in another order of dimensions.
    DimOrder,
    /// Dense view into a larger storage.
    Strided,
    /// Sparse coordinates.
    SparseCoo,
    /// Sparse compressed rows.
    SparseCsr,
}

impl LayoutKind {
    /// `dense`, `dim_order`, `strided`, `sparse_coo`, `sparse_csr`.
    pub fn name(self) -> &'static str {
        match self {
            LayoutKind::Dense => "dense",
            LayoutKind::DimOrder => "dim_order",
            LayoutKind::Strided => "strided",
            LayoutKind::SparseCoo => "sparse_coo",
            LayoutKind::SparseCsr => "sparse_csr",
        }
    }
}

impl Layout {
    /// The layout without its parameters.
    pub fn kind(&self) -> LayoutKind {
        match self {
            Layout::Dense => LayoutKind::Dense,
            Layout::DimOrder(_) => LayoutKind::DimOrder,
            Layout::Strided { .. } => LayoutKind::Strided,
            Layout::Sparse { format: SparseFormat::Coo, .. } => LayoutKind::SparseCoo,
            Layout::Sparse { format: SparseFormat::Csr, .. } => LayoutKind::SparseCsr,
        }
    }

    pub fn is_sparse(&self) -> bool {
        matches!(self, Layout::Sparse { .. })
    }

    /// A short description: `dense`, `dim_order[0,2,1]`, `strided`, `sparse_coo`, `sparse_csr`.
    pub fn describe(&self) -> String {
        match self {
            Layout::Dense => "dense".into(),
            Layout::DimOrder(order) => format!("dim_order{order:?}"),
            Layout::Strided { .. } => "strided".into(),
            Layout::Sparse { format, .. } => format!("sparse_{}", format.name()),
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

    pub fn numel(&self) -> Result<u64> {
        checked::numel(&self.shape)
    }

    /// Bytes of the decoded data: the dense elements, or for sparse tensors the values plus
    /// their `u64` index arrays (see [`crate::model::SparseData`]).
    pub fn nbytes(&self) -> Result<u64> {
        match &self.layout {
            Layout::Sparse { format, nnz } => {
                let values = self.dtype.nbytes(*nnz)?;
                let index_count = match format {
                    SparseFormat::Coo => checked::mul(self.shape.len() as u64, *nnz, "COO indices")?,
                    SparseFormat::Csr => {
                        let rows = self.shape.first().copied().unwrap_or(0);
                        checked::add(checked::add(rows, 1, "CSR indptr")?, *nnz, "CSR indices")?
                    }
                };
                checked::add(values, checked::mul(index_count, 8, "sparse indices")?, "sparse size")
            }
            _ => self.dtype.nbytes(self.numel()?),
        }
    }
}

/// Byte order of stored multi-byte elements.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ByteOrder {
    #[default]
    Little,
    Big,
}

impl ByteOrder {
    pub fn name(self) -> &'static str {
        match self {
            ByteOrder::Little => "little",
            ByteOrder::Big => "big",
        }
    }
}

/// How stored bytes are encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    Raw,
    Zstd,
    /// Deflate (zip entries written by Python's `zipfile`).
    Deflate,
}

impl Encoding {
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
pub enum Checksum {
    Crc32c(u32),
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
    pub fn new(kind: ChecksumKind) -> Self {
        use sha2::Digest;
        ChecksumHasher(match kind {
            ChecksumKind::None => HasherState::None,
            ChecksumKind::Crc32c => HasherState::Crc32c(0),
            ChecksumKind::Sha256 => HasherState::Sha256(Box::new(sha2::Sha256::new())),
        })
    }

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
pub enum ChecksumKind {
    None,
    #[default]
    Crc32c,
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
