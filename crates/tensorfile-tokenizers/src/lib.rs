//! Hugging Face's `tokenizers` library behind tensorfile's [`Tokenizers`] interface: the
//! conversion of a BPE vocabulary (`tokenizer.json` alone) into GGUF needs the token ids of a
//! fixed text (llama.cpp's converter names the pre-tokenizer by their hash) and a round trip
//! of added tokens, as Python's `transformers` computes them through this same library. The
//! core library does not depend on it; a shell hands [`HF_TOKENIZERS`] to the job.

use std::path::Path;

use tensorfile::llama::{Tokenizer, Tokenizers};
use tensorfile::{Error, Result, Rule};

/// Hugging Face's tokenizers library.
#[derive(Debug, Clone, Copy, Default)]
pub struct HfTokenizers;

/// The library, for `CheckpointOptions::tokenizers` / `ConvertJob::tokenizers`.
pub static HF_TOKENIZERS: HfTokenizers = HfTokenizers;

/// One `tokenizer.json`, loaded.
struct HfTokenizer {
    inner: tokenizers::Tokenizer,
    /// The file, named in errors.
    path: std::path::PathBuf,
}

impl Tokenizers for HfTokenizers {
    fn load(&self, tokenizer_json: &Path) -> Result<Box<dyn Tokenizer>> {
        let bytes = std::fs::read(tokenizer_json).map_err(|e| Error::from(e).in_file(tokenizer_json))?;
        let inner = tokenizers::Tokenizer::from_bytes(&bytes).map_err(|e| {
            Error::invalid(Rule::BadJson, format!("the tokenizers library cannot load it: {e}")).in_file(tokenizer_json)
        })?;
        Ok(Box::new(HfTokenizer { inner, path: tokenizer_json.to_path_buf() }))
    }
}

impl Tokenizer for HfTokenizer {
    fn encode(&self, text: &str, add_special_tokens: bool) -> Result<Vec<u32>> {
        let encoding = self.inner.encode(text, add_special_tokens).map_err(|e| {
            Error::invalid(Rule::BadField, format!("the tokenizers library cannot encode a text: {e}"))
                .in_file(&self.path)
        })?;
        Ok(encoding.get_ids().to_vec())
    }

    fn decode(&self, ids: &[u32]) -> Result<String> {
        self.inner.decode(ids, false).map_err(|e| {
            Error::invalid(Rule::BadField, format!("the tokenizers library cannot decode ids: {e}")).in_file(&self.path)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The committed GPT-2 tokenizer encodes as Python's tokenizers 0.22.2 / transformers
    /// 4.57.6 do (`AutoTokenizer.from_pretrained(dir).encode(TEXT)`).
    #[test]
    fn gpt2_ids_match_python() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/hf-gguf/Llama-GPT2Tok-BPE-bf16-tied/tokenizer.json");
        let tok = HF_TOKENIZERS.load(&path).unwrap();
        let ids = tok.encode(TEXT, true).unwrap();
        assert_eq!(ids, EXPECTED);
        assert_eq!(tok.decode(&ids).unwrap(), TEXT);
    }

    /// A short text: ASCII, a contraction, accents, CJK, an emoji, the special token and a
    /// double space.
    const TEXT: &str =
        "Hello world! It's 2024 \u{2014} na\u{ef}ve caf\u{e9}, \u{65e5}\u{672c}\u{8a9e} \u{1f999}<|endoftext|>  x";

    /// What Python gives.
    const EXPECTED: &[u32] = &[
        15496, 995, 0, 632, 338, 48609, 851, 41492, 40304, 11, 10545, 245, 98, 17312, 105, 45739, 252, 12520, 99, 247,
        50256, 220, 2124,
    ];

    #[test]
    fn missing_file_is_named() {
        let err = HF_TOKENIZERS.load(Path::new("/nonexistent/tokenizer.json")).err().unwrap();
        assert!(format!("{err}").contains("/nonexistent/tokenizer.json"), "{err}");
    }
}
