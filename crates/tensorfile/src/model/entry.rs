//! Entries: one tensor or blob of a file, described without reference to its format.

use std::fmt;

use crate::checked;
use crate::error::{Error, Result, Rule};
use crate::limits::MAX_RANK;
use crate::model::{DType, Layout, MetaValue, PartSpec, SparseFormat};

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
///
/// Built by [`TensorInfo::new`], which checks that the description is one a tensor can have
/// (see there), or by [`TensorInfo::dense`] and [`TensorInfo::blob`] and the `with_*`
/// builders.
#[derive(Debug, Clone, PartialEq)]
pub struct TensorInfo {
    name: String,
    kind: Kind,
    dtype: DType,
    shape: Vec<u64>,
    layout: Layout,
    extra: Vec<(String, MetaValue)>,
}

impl TensorInfo {
    /// A tensor description, checked:
    ///
    /// - its rank is at most [`MAX_RANK`] (else [`Rule::BadField`]);
    /// - its element count fits 64 bits ([`Rule::ShapeOverflow`]);
    /// - a CSR layout has rank 2 ([`Rule::BadSparse`]);
    /// - a blob is a 1-D `uint8` tensor ([`Rule::BadField`]);
    /// - its byte size, [`TensorInfo::nbytes`], is computable (the error that gives:
    ///   [`Rule::ShapeOverflow`], [`Rule::OutOfBounds`], or [`Rule::SizeMismatch`] for
    ///   sub-byte elements that do not fill whole bytes).
    pub fn new(name: impl Into<String>, kind: Kind, dtype: DType, shape: Vec<u64>, layout: Layout) -> Result<Self> {
        TensorInfo::check(kind, dtype, &shape, &layout)?;
        Ok(TensorInfo { name: name.into(), kind, dtype, shape, layout, extra: Vec::new() })
    }

    /// What [`TensorInfo::new`] checks, on borrowed parts: the byte size of such a tensor.
    pub(crate) fn check(kind: Kind, dtype: DType, shape: &[u64], layout: &Layout) -> Result<u64> {
        if shape.len() > MAX_RANK {
            return Err(Error::invalid(Rule::BadField, format!("rank {} exceeds {MAX_RANK}", shape.len())));
        }
        checked::numel(shape)?;
        if let Layout::Sparse { format: SparseFormat::Csr, .. } = layout {
            if shape.len() != 2 {
                return Err(Error::invalid(Rule::BadSparse, format!("CSR tensor of rank {}, not 2", shape.len())));
            }
        }
        if layout.quant().is_some() && dtype != DType::Float32 {
            return Err(Error::invalid(
                Rule::BadQuantization,
                format!("a {} tensor dequantizes to float32, not {dtype}", layout.describe()),
            ));
        }
        if kind == Kind::Blob && (dtype != DType::UInt8 || shape.len() != 1) {
            return Err(Error::invalid(Rule::BadField, format!("a blob is 1-D uint8, not {dtype} of shape {shape:?}")));
        }
        nbytes(dtype, shape, layout)
    }

    /// A tensor already checked by [`TensorInfo::check`]: for readers that must keep their
    /// inputs when the check fails (to report the entry as unreadable).
    pub(crate) fn checked(name: impl Into<String>, kind: Kind, dtype: DType, shape: Vec<u64>, layout: Layout) -> Self {
        debug_assert!(TensorInfo::check(kind, dtype, &shape, &layout).is_ok());
        TensorInfo { name: name.into(), kind, dtype, shape, layout, extra: Vec::new() }
    }

    /// A dense tensor with no extra fields.
    pub fn dense(name: impl Into<String>, dtype: DType, shape: Vec<u64>) -> Self {
        TensorInfo { name: name.into(), kind: Kind::Tensor, dtype, shape, layout: Layout::Dense, extra: Vec::new() }
    }

    /// An opaque blob of `len` bytes.
    pub fn blob(name: impl Into<String>, len: u64) -> Self {
        TensorInfo { kind: Kind::Blob, ..TensorInfo::dense(name, DType::UInt8, vec![len]) }
    }

    /// The same tensor in another layout, checked as [`TensorInfo::new`] checks.
    pub fn with_layout(self, layout: Layout) -> Result<Self> {
        TensorInfo::check(self.kind, self.dtype, &self.shape, &layout)?;
        Ok(TensorInfo { layout, ..self })
    }

    /// The same tensor in the dense layout, unchecked: what a reader hands over for a tensor
    /// stored in a layout that reads as dense, or a sparse one decoded.
    pub(crate) fn into_dense_layout(self) -> Self {
        TensorInfo { layout: Layout::Dense, ..self }
    }

    /// The same tensor with these extra fields (replacing any it had).
    pub fn with_extra(self, extra: Vec<(String, MetaValue)>) -> Self {
        TensorInfo { extra, ..self }
    }

    /// The same tensor under another name.
    pub fn with_name(self, name: impl Into<String>) -> Self {
        TensorInfo { name: name.into(), ..self }
    }

    /// The tensor's name (key) in its file.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether this is a tensor or a blob.
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// The logical element type.
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// The logical shape, outermost dimension first.
    pub fn shape(&self) -> &[u64] {
        &self.shape
    }

    /// How the elements are arranged where they are stored.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// Other per-tensor fields (custom keys of a `.zt` entry...), in file order.
    pub fn extra(&self) -> &[(String, MetaValue)] {
        &self.extra
    }

    /// The number of elements the shape holds.
    pub fn numel(&self) -> Result<u64> {
        checked::numel(&self.shape)
    }

    /// Bytes of the decoded data: the sum of its layout's parts (the dense elements, or for
    /// sparse tensors the values plus their `u64` index arrays).
    pub fn nbytes(&self) -> Result<u64> {
        nbytes(self.dtype, &self.shape, &self.layout)
    }

    /// The parts this tensor's data is made of, as its layout names them.
    pub fn parts(&self) -> Result<Vec<PartSpec>> {
        self.layout.parts(self.dtype, &self.shape)
    }
}

/// Bytes of decoded data of this dtype, shape and layout (see [`TensorInfo::nbytes`]).
fn nbytes(dtype: DType, shape: &[u64], layout: &Layout) -> Result<u64> {
    layout.parts(dtype, shape)?.iter().try_fold(0u64, |sum, p| checked::add(sum, p.nbytes()?, "tensor size"))
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

/// A checksum over an entry's bytes: the stored bytes (zTensor v0.1), or the decoded ones
/// (zTensor 2's digests).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Checksum {
    /// CRC-32C (Castagnoli).
    Crc32c(u32),
    /// SHA-256.
    Sha256([u8; 32]),
    /// XXH3, 64 bits.
    Xxh3(u64),
}

impl Checksum {
    /// Compute a checksum of this kind over `bytes`.
    pub fn compute(kind: ChecksumKind, bytes: &[u8]) -> Option<Checksum> {
        use sha2::Digest;
        match kind {
            ChecksumKind::None => None,
            ChecksumKind::Crc32c => Some(Checksum::Crc32c(crc32c::crc32c(bytes))),
            ChecksumKind::Sha256 => Some(Checksum::Sha256(sha2::Sha256::digest(bytes).into())),
            ChecksumKind::Xxh3 => Some(Checksum::Xxh3(twox_hash::XxHash3_64::oneshot(bytes))),
        }
    }

    /// Which algorithm this checksum uses.
    pub fn kind(&self) -> ChecksumKind {
        match self {
            Checksum::Crc32c(_) => ChecksumKind::Crc32c,
            Checksum::Sha256(_) => ChecksumKind::Sha256,
            Checksum::Xxh3(_) => ChecksumKind::Xxh3,
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
    Xxh3(Box<twox_hash::XxHash3_64>),
}

impl ChecksumHasher {
    /// A hasher of `kind` with nothing given yet.
    pub fn new(kind: ChecksumKind) -> Self {
        use sha2::Digest;
        ChecksumHasher(match kind {
            ChecksumKind::None => HasherState::None,
            ChecksumKind::Crc32c => HasherState::Crc32c(0),
            ChecksumKind::Sha256 => HasherState::Sha256(Box::new(sha2::Sha256::new())),
            ChecksumKind::Xxh3 => HasherState::Xxh3(Box::default()),
        })
    }

    /// Add the next bytes, in order.
    pub fn update(&mut self, bytes: &[u8]) {
        use sha2::Digest;
        match &mut self.0 {
            HasherState::None => {}
            HasherState::Crc32c(c) => *c = crc32c::crc32c_append(*c, bytes),
            HasherState::Sha256(h) => h.update(bytes),
            HasherState::Xxh3(h) => std::hash::Hasher::write(&mut **h, bytes),
        }
    }

    /// The checksum of everything given, as [`Checksum::compute`] would give it whole.
    pub fn finish(self) -> Option<Checksum> {
        use sha2::Digest;
        match self.0 {
            HasherState::None => None,
            HasherState::Crc32c(c) => Some(Checksum::Crc32c(c)),
            HasherState::Sha256(h) => Some(Checksum::Sha256(h.finalize().into())),
            HasherState::Xxh3(h) => Some(Checksum::Xxh3(std::hash::Hasher::finish(&*h))),
        }
    }
}

impl fmt::Display for Checksum {
    /// The zTensor spelling: `crc32c:0x1234ABCD`, `sha256:<64 lowercase hex>`,
    /// `xxh3:<16 lowercase hex>`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Checksum::Crc32c(v) => write!(f, "crc32c:0x{v:08X}"),
            Checksum::Sha256(d) => write!(f, "sha256:{}", hex::encode(d)),
            Checksum::Xxh3(v) => write!(f, "xxh3:{v:016x}"),
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
    /// XXH3, 64 bits (zTensor 2's digests).
    Xxh3,
}

impl ChecksumKind {
    /// `none`, `crc32c`, `sha256`, `xxh3`.
    pub fn name(self) -> &'static str {
        match self {
            ChecksumKind::None => "none",
            ChecksumKind::Crc32c => "crc32c",
            ChecksumKind::Sha256 => "sha256",
            ChecksumKind::Xxh3 => "xxh3",
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
            "xxh3" => Ok(ChecksumKind::Xxh3),
            _ => Err(crate::Error::usage(format!("unknown checksum {s:?} (expected crc32c, sha256, xxh3 or none)"))),
        }
    }
}

/// Where and how an entry's bytes are stored in its file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Storage {
    offset: u64,
    len: u64,
    encoding: Encoding,
    byte_order: ByteOrder,
    checksum: Option<Checksum>,
}

impl Storage {
    /// `len` bytes at `offset`, stored raw, little-endian, without a checksum.
    pub fn new(offset: u64, len: u64) -> Self {
        Storage { offset, len, encoding: Encoding::Raw, byte_order: ByteOrder::Little, checksum: None }
    }

    /// The same bytes, encoded this way.
    pub fn with_encoding(self, encoding: Encoding) -> Self {
        Storage { encoding, ..self }
    }

    /// The same bytes, with multi-byte elements in this order.
    pub fn with_byte_order(self, byte_order: ByteOrder) -> Self {
        Storage { byte_order, ..self }
    }

    /// The same bytes, with this checksum (or none).
    pub fn with_checksum(self, checksum: Option<Checksum>) -> Self {
        Storage { checksum, ..self }
    }

    /// The same encoding and place, `len` stored bytes long.
    pub(crate) fn with_len(self, len: u64) -> Self {
        Storage { len, ..self }
    }

    /// Absolute offset of the stored bytes in the file.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Stored length (compressed length when encoded).
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether no bytes are stored.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// How the stored bytes are encoded.
    pub fn encoding(&self) -> Encoding {
        self.encoding
    }

    /// The order of bytes within stored multi-byte elements.
    pub fn byte_order(&self) -> ByteOrder {
        self.byte_order
    }

    /// The checksum the file gives for the stored bytes, if any.
    pub fn checksum(&self) -> Option<Checksum> {
        self.checksum
    }
}

/// One readable entry of a file.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    info: TensorInfo,
    nbytes: u64,
    storage: Storage,
}

impl Entry {
    /// The entry `info` describes, stored as `storage`; its [`Entry::nbytes`] are
    /// `info.nbytes()`, and an error when those cannot be computed.
    pub fn new(info: TensorInfo, storage: Storage) -> Result<Self> {
        let nbytes = info.nbytes()?;
        Ok(Entry { info, nbytes, storage })
    }

    /// Move the stored bytes' offset `by` bytes further into the file (an entry of a file
    /// nested in another, counted from the outer file's start). Both lie within the outer
    /// file, so the sum is at most its length.
    pub(crate) fn shift_offset(&mut self, by: u64) {
        self.storage.offset = self.storage.offset.saturating_add(by);
    }

    /// An entry whose `nbytes` its reader computed already ([`TensorInfo::check`]).
    pub(crate) fn checked(info: TensorInfo, nbytes: u64, storage: Storage) -> Self {
        debug_assert_eq!(info.nbytes().ok(), Some(nbytes));
        Entry { info, nbytes, storage }
    }

    /// The same entry under another name.
    pub(crate) fn with_name(self, name: impl Into<String>) -> Self {
        Entry { info: self.info.with_name(name), ..self }
    }

    /// The same entry with these extra fields.
    pub(crate) fn with_extra(self, extra: Vec<(String, MetaValue)>) -> Self {
        Entry { info: self.info.with_extra(extra), ..self }
    }

    /// What the entry holds.
    pub fn info(&self) -> &TensorInfo {
        &self.info
    }

    /// Bytes that reading this entry yields (see [`TensorInfo::nbytes`]).
    pub fn nbytes(&self) -> u64 {
        self.nbytes
    }

    /// Where and how its bytes are stored.
    pub fn storage(&self) -> &Storage {
        &self.storage
    }
}

/// An entry the file declares but that cannot be read (unknown dtype, encoding...), reported
/// for that entry without refusing the rest of the file.
#[derive(Debug)]
pub struct Unreadable {
    name: String,
    dtype: String,
    shape: Vec<u64>,
    error: crate::Error,
}

impl Unreadable {
    /// An unreadable entry: its name, its dtype and shape as the file gives them (empty when
    /// unknown), and why it cannot be read.
    pub(crate) fn new(name: String, dtype: String, shape: Vec<u64>, error: crate::Error) -> Self {
        Unreadable { name, dtype, shape, error }
    }

    /// The entry's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The dtype as the file spells it (empty when unknown).
    pub fn dtype(&self) -> &str {
        &self.dtype
    }

    /// The shape as the file gives it (empty when unknown).
    pub fn shape(&self) -> &[u64] {
        &self.shape
    }

    /// Why the entry cannot be read.
    pub fn error(&self) -> &crate::Error {
        &self.error
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// XXH3 digests (zTensor 2's) agree with a second implementation (xxhash-rust, the
    /// tests' own) at every length where XXH3 changes path (0, 1-3, 4-8, 9-16, 17-128,
    /// 129-240, stripes, blocks of 1 KiB, several blocks) and with the bytes given in
    /// pieces of every awkward size.
    #[test]
    fn xxh3_digests_agree_with_a_second_implementation_whole_and_in_pieces() {
        let data: Vec<u8> = (0..300_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
        let lengths = [0, 1, 3, 4, 8, 9, 16, 17, 128, 129, 240, 241, 1024, 1025, 16_384, 65_537, 300_000];
        for &n in &lengths {
            let want = xxhash_rust::xxh3::xxh3_64(&data[..n]);
            assert_eq!(Checksum::compute(ChecksumKind::Xxh3, &data[..n]), Some(Checksum::Xxh3(want)), "{n}");
            for piece in [1, 63, 64, 255, 4096, 70_000] {
                let mut h = ChecksumHasher::new(ChecksumKind::Xxh3);
                data[..n].chunks(piece).for_each(|c| h.update(c));
                assert_eq!(h.finish(), Some(Checksum::Xxh3(want)), "{n} in pieces of {piece}");
            }
        }
    }

    #[test]
    fn tensor_infos_are_checked_as_they_are_built() {
        let rule = |r: Result<TensorInfo>| r.unwrap_err().rule();
        let info = TensorInfo::new("w", Kind::Tensor, DType::Float32, vec![2, 3], Layout::Dense).unwrap();
        assert_eq!(
            (info.name(), info.dtype(), info.shape(), info.nbytes().unwrap()),
            ("w", DType::Float32, &[2, 3][..], 24)
        );
        let deep = vec![1; MAX_RANK + 1];
        assert_eq!(rule(TensorInfo::new("w", Kind::Tensor, DType::Float32, deep, Layout::Dense)), Some(Rule::BadField));
        let huge = vec![u64::MAX, 2];
        assert_eq!(
            rule(TensorInfo::new("w", Kind::Tensor, DType::UInt8, huge, Layout::Dense)),
            Some(Rule::ShapeOverflow)
        );
        let wide = vec![u64::MAX / 2];
        assert_eq!(
            rule(TensorInfo::new("w", Kind::Tensor, DType::Float32, wide, Layout::Dense)),
            Some(Rule::ShapeOverflow)
        );
        let csr = Layout::Sparse { format: SparseFormat::Csr, nnz: 1 };
        assert_eq!(
            rule(TensorInfo::new("w", Kind::Tensor, DType::Float32, vec![4], csr.clone())),
            Some(Rule::BadSparse)
        );
        assert_eq!(
            rule(TensorInfo::dense("w", DType::Float32, vec![4]).with_layout(csr.clone())),
            Some(Rule::BadSparse)
        );
        assert!(TensorInfo::dense("w", DType::Float32, vec![2, 2]).with_layout(csr).is_ok());
        assert_eq!(
            rule(TensorInfo::new("b", Kind::Blob, DType::Float32, vec![4], Layout::Dense)),
            Some(Rule::BadField)
        );
        assert_eq!(
            rule(TensorInfo::new("b", Kind::Blob, DType::UInt8, vec![2, 2], Layout::Dense)),
            Some(Rule::BadField)
        );
        assert_eq!(
            TensorInfo::new("b", Kind::Blob, DType::UInt8, vec![4], Layout::Dense).unwrap(),
            TensorInfo::blob("b", 4)
        );
    }

    #[test]
    fn entries_take_their_size_from_their_info() {
        let storage = Storage::new(8, 6).with_encoding(Encoding::Zstd).with_checksum(Some(Checksum::Crc32c(1)));
        let e = Entry::new(TensorInfo::dense("w", DType::Float64, vec![3]), storage.clone()).unwrap();
        assert_eq!((e.nbytes(), e.storage(), e.info().name()), (24, &storage, "w"));
        assert_eq!((storage.offset(), storage.len(), storage.byte_order()), (8, 6, ByteOrder::Little));
        let odd = TensorInfo::dense("w", DType::Float4E2M1Fn, vec![3]);
        assert_eq!(Entry::new(odd, storage).unwrap_err().rule(), Some(Rule::SizeMismatch));
    }

    #[test]
    fn checksums_of_pieces_equal_checksums_of_the_whole() {
        let data: Vec<u8> = (0..10_000u32).map(|i| (i * 7 % 251) as u8).collect();
        for kind in [ChecksumKind::None, ChecksumKind::Crc32c, ChecksumKind::Sha256, ChecksumKind::Xxh3] {
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
