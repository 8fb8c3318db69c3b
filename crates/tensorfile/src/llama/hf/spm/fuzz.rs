//! The Hugging Face folder's readers as the fuzz targets drive them (feature `internals`):
//! `config.json` into an architecture, its hyperparameters and their key/values, and the
//! tokenizer files into the vocabulary's key/values, without the tokenizers library.
//!
//! Kept under `spm` because it is the one part of the `hf` module the crate sees; it reaches
//! its siblings (`arch`, `params`, `bpe`) from here.

use std::path::Path;

use serde_json::Value;

use super::super::{arch, bpe, params};
use crate::model::{MetaValue, TypedArray};

/// The files of a folder a tokenizer input holds, in order: its parts are cut at NUL bytes
/// (which JSON text never holds), an empty part meaning no such file.
pub(crate) const TOKENIZER_FILES: [&str; 6] = [
    "tokenizer_config.json",
    "special_tokens_map.json",
    "added_tokens.json",
    "tokenizer.json",
    "config.json",
    "chat_template.jinja",
];

/// The largest `vocab_size` taken from a fuzzed `config.json` (larger ones are taken as this):
/// a vocabulary of that many `[PADi]` tokens is made for every input otherwise.
const MAX_FUZZ_VOCAB: u64 = 1 << 16;

/// `data` as a `config.json`: its architecture, the hyperparameters the converter sees and
/// their key/values, for each file type. Errors are fine; panics are bugs. Every key/value
/// made is named once. Whether key/values were made.
pub(crate) fn config(data: &[u8]) -> bool {
    let Ok(config) = serde_json::from_slice::<Value>(data) else { return false };
    if !config.is_object() {
        return false;
    }
    let Ok(arch) = arch::architecture_of(&config) else { return false };
    let hparams = arch.hparams(&config);
    let block_count = ["n_layers", "num_hidden_layers", "n_layer", "num_layers"]
        .iter()
        .find_map(|k| hparams.get(*k).and_then(Value::as_u64))
        .and_then(|n| u32::try_from(n).ok())
        .unwrap_or(0);
    let mut made = false;
    for file_type in [0, 1, 7, 32] {
        if let Ok(kvs) = params::Params::new(arch, &hparams).text_model(block_count, file_type) {
            for (i, (key, _)) in kvs.iter().enumerate() {
                assert!(!kvs[..i].iter().any(|(k, _)| k == key), "{key} made twice");
            }
            made = true;
        }
    }
    made
}

/// The folder `dir` made of `data` ([`TOKENIZER_FILES`] cut at NUL bytes, an empty
/// `tokenizer.model`), its vocabulary read as the SentencePiece path reads it and as the BPE
/// path does without the tokenizers library. Errors are fine; panics are bugs. A vocabulary
/// read has as many scores and token types as tokens. Whether a vocabulary was read.
pub(crate) fn tokenizer_files(data: &[u8], dir: &Path) -> bool {
    let mut parts = data.split(|&b| b == 0);
    for name in TOKENIZER_FILES {
        let path = dir.join(name);
        match parts.next().filter(|p| !p.is_empty()) {
            Some(part) => {
                if std::fs::write(&path, part).is_err() {
                    return false;
                }
            }
            None => {
                let _ = std::fs::remove_file(&path);
            }
        }
    }
    if std::fs::write(dir.join("tokenizer.model"), b"").is_err() {
        return false;
    }
    // The hyperparameters as the config gives them, a vocabulary size past the bound cut to it.
    let mut hparams = std::fs::read(dir.join("config.json"))
        .ok()
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        .filter(Value::is_object)
        .unwrap_or_else(|| Value::Object(Default::default()));
    if let Some(v) = hparams.get_mut("vocab_size")
        && v.as_u64().is_some_and(|n| n > MAX_FUZZ_VOCAB)
    {
        *v = Value::from(MAX_FUZZ_VOCAB);
    }
    let mut read = false;
    for llama in [true, false] {
        if let Ok(kvs) = super::sentencepiece_vocab_kvs(dir, &hparams, llama) {
            same_lengths(&kvs, &["tokenizer.ggml.tokens", "tokenizer.ggml.scores", "tokenizer.ggml.token_type"]);
            read = true;
        }
        if let Ok(kvs) = bpe::vocab_kvs_without_tokenizers(dir, &hparams, llama) {
            same_lengths(&kvs, &["tokenizer.ggml.tokens", "tokenizer.ggml.token_type"]);
            read = true;
        }
    }
    read
}

/// The arrays `keys` of `kvs` are all there or none, of one length.
fn same_lengths(kvs: &[(String, MetaValue)], keys: &[&str]) {
    let lengths: Vec<Option<usize>> = keys
        .iter()
        .map(|key| {
            kvs.iter().find(|(k, _)| k == key).map(|(_, v)| match v {
                MetaValue::TypedArray(TypedArray::Text(a)) => a.len(),
                MetaValue::TypedArray(TypedArray::F32(a)) => a.len(),
                MetaValue::TypedArray(TypedArray::I32(a)) => a.len(),
                other => panic!("{key} is not an array: {other:?}"),
            })
        })
        .collect();
    assert!(lengths.windows(2).all(|w| w[0] == w[1]), "{keys:?} of lengths {lengths:?}");
}
