//! What converting a BPE vocabulary needs of Hugging Face's `tokenizers` library: the token
//! ids of a text (the converter identifies a pre-tokenizer by hashing the ids of a fixed text)
//! and a round trip of added tokens. The library is Rust; the core library does not depend on
//! it: the shells hand a [`Tokenizers`] (crate `tensorfile-tokenizers`) to the job.

use std::path::Path;

use crate::error::Result;

/// Hugging Face's tokenizers library, loading a `tokenizer.json`.
pub trait Tokenizers: Send + Sync + std::fmt::Debug {
    /// The tokenizer `tokenizer.json` describes, ready to encode.
    fn load(&self, tokenizer_json: &Path) -> Result<Box<dyn Tokenizer>>;
}

/// One loaded tokenizer.
pub trait Tokenizer {
    /// The ids of `text`; with `add_special_tokens`, the special tokens its post-processor
    /// adds (as transformers' `encode` adds them by default).
    fn encode(&self, text: &str, add_special_tokens: bool) -> Result<Vec<u32>>;
    /// The text of `ids`, special tokens kept (transformers' `decode` by default).
    fn decode(&self, ids: &[u32]) -> Result<String>;
}
