//! Every limit the library enforces, in one place.
//!
//! Beyond these, every allocation is bounded by what the input file justifies: lengths read
//! from a file are checked against the bytes that remain before anything is reserved, and a
//! decoded tensor is never larger than its declared shape (which must itself fit the file, or
//! for compressed data, the bound the compressed frames themselves prove).

/// Deepest nesting of CBOR or JSON structures accepted in an index or header.
pub const MAX_NESTING: usize = 64;

/// Largest zTensor index (CBOR bytes at the end of a `.zt` file).
pub const MAX_ZT_INDEX: u64 = 1 << 30;

/// Largest safetensors JSON header; the same limit the safetensors library applies.
pub const MAX_SAFETENSORS_HEADER: u64 = 100_000_000;

/// Most entries in one file.
pub const MAX_ENTRIES: usize = 10_000_000;

/// Most dimensions of one tensor.
pub const MAX_RANK: usize = 64;

/// Most bytes a strided view whose elements repeat (stride 0) may expand its storage into:
/// reading such a view materializes every repeat, which a few bytes could otherwise make
/// terabytes. Views that do not repeat elements are never larger than their storage.
pub const MAX_VIEW_EXPANSION: u64 = 1 << 30;
