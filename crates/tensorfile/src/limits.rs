//! Every limit the library enforces, in one place.
//!
//! Beyond these, every allocation is bounded by what the input file justifies: lengths read
//! from a file are checked against the bytes that remain before anything is reserved, and a
//! decoded tensor is never larger than its declared shape, which must itself fit the file or,
//! for compressed data, the bound the compressed data proves (zstd: 128 KiB per block
//! present, whatever a frame header claims; deflate: [`MAX_DEFLATE_RATIO`] times the
//! compressed bytes). The largest single allocation is therefore the largest tensor a file
//! can justify, or a view's expansion up to [`MAX_VIEW_EXPANSION`]. Work is bounded too: a
//! flatbuffer's decoding visits at most twice its bytes in values (shared subtrees cannot
//! multiply it), and a pickle runs at most one opcode per input byte.
//!
//! Each limit is reported with its own rule (`header-too-large`, `too-deep`,
//! `too-many-entries`, `expansion-too-large`, ...): see [`crate::Rule`].

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

/// Most entries in one zip archive (`.pt2`, `torch.save` files).
pub const MAX_ZIP_ENTRIES: u64 = 1_000_000;

/// Deflate cannot compress better than about 1032:1: a zip entry claiming a larger ratio
/// lies, and is refused before it is inflated.
pub const MAX_DEFLATE_RATIO: u64 = 1100;

/// Most memo entries a pickle may create; a real one needs far fewer (each costs input bytes).
pub const MAX_PICKLE_MEMO: usize = 1 << 20;

/// Most items on a pickle machine's stack.
pub const MAX_PICKLE_STACK: usize = 1 << 22;

/// Most non-tensor values of a `torch.save` file kept as metadata (a checkpoint's step
/// counters, hyper-parameters...).
pub const MAX_PICKLE_METADATA: usize = 10_000;

/// Largest index of a sharded checkpoint (`model.safetensors.index.json`): the JSON of a
/// `weight_map` naming every tensor; the same bound as a safetensors header.
pub const MAX_SHARD_INDEX: u64 = 100_000_000;

/// Most files in one sharded checkpoint, and most files a folder opened as one may hold: five
/// digits, as in `model-00001-of-99999.safetensors`.
pub const MAX_SHARDS: usize = 99_999;

/// How many times its stored bytes a tensor may grow when decoded to dense (a sparse tensor's
/// zeros cost nothing to store), above a floor of [`MAX_VIEW_EXPANSION`]: a small file cannot
/// make a conversion allocate terabytes.
pub const MAX_DENSE_EXPANSION: u64 = 1024;

/// The longest text a metadata value read from a file (`meta --set KEY=@PATH`) may have: a
/// chat template is a few KiB.
pub const MAX_VALUE_FILE_BYTES: u64 = 64 << 20;
