//! Any bytes read as a Hugging Face `config.json`: the architecture it names, the
//! hyperparameters the converter sees and their GGUF key/values; an error, or key/values each
//! made once; never a panic or a hang.
#![no_main]
// fuzz-smoke: seeds config.json
// fuzz-smoke: max-len 16384

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = tensorfile::internals::exercise_hf_config(data);
});
