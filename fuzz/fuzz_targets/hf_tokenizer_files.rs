//! Any bytes read as the tokenizer files of a Hugging Face model folder
//! (`tokenizer_config.json`, `special_tokens_map.json`, `added_tokens.json`, `tokenizer.json`,
//! `config.json`, `chat_template.jinja`, one after the other, cut at NUL bytes), written into
//! a folder of this process's own and read as the SentencePiece and BPE vocabularies are read
//! (without the tokenizers library): an error, or a vocabulary whose scores and token types
//! are as many as its tokens; never a panic or a hang.
#![no_main]
// fuzz-smoke: seeds *.hftokenizer
// fuzz-smoke: max-len 65536

use std::path::PathBuf;
use std::sync::OnceLock;

/// The folder the inputs are written into: one per process, made once.
fn folder() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("tensorfile-fuzz-hf-tokenizer-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a folder for the tokenizer files");
        dir
    })
}

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = tensorfile::internals::exercise_hf_tokenizer_files(data, folder());
});
