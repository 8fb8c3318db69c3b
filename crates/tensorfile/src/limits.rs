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

/// Most bytes of a `.sha256` file read for the digest it starts with (`sha256sum` writes one
/// line per file; a list of a few thousand files fits).
pub const MAX_DIGEST_FILE: u64 = 1 << 20;

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

/// Largest configuration file of a Hugging Face model folder read whole: `config.json`,
/// `generation_config.json`, `chat_template.json` and `chat_template.jinja` (and the
/// `additional_chat_templates/*.jinja`), and a `--metadata` override file. Real ones are a few
/// KiB; the longest chat templates are under 100 KiB.
pub const MAX_HF_CONFIG_BYTES: u64 = 16 << 20;

/// Largest tokenizer file of a Hugging Face model folder read whole: `tokenizer.json`,
/// `tokenizer_config.json`, `special_tokens_map.json`, `added_tokens.json`, `tokenizer.model`
/// and `merges.txt`. Llama 3's `tokenizer.json` is 9 MB, the largest multilingual ones
/// (Gemma 3's 262k tokens) about 35 MB, and a `tokenizer_config.json` listing every added
/// token a few MB: this leaves more than three times the largest known.
pub const MAX_HF_TOKENIZER_BYTES: u64 = 128 << 20;

/// Largest model card (`README.md` of a Hugging Face model folder) read for its front matter;
/// real ones are tens of KiB.
pub const MAX_HF_README_BYTES: u64 = 64 << 20;

/// Most chat templates a Hugging Face model folder's `additional_chat_templates/` may hold
/// (real ones hold a handful); all of a folder's templates together are at most
/// [`MAX_HF_CONFIG_BYTES`].
pub const MAX_HF_CHAT_TEMPLATES: usize = 1024;
