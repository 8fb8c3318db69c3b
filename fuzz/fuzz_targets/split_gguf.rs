//! Any bytes cut before each `GGUF` magic into the parts of a split GGUF model
//! (`fuzz-00001-of-0000N.gguf`...) and opened as one: an error, or a model holding as many
//! tensors as its first part's `split.tensors.count` says, whose every entry decodes to
//! exactly its declared size; never a panic, a hang or an allocation the input cannot justify.
#![no_main]
// fuzz-smoke: seeds *.gguf *.ggufsplit
// fuzz-smoke: max-len 32768

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = tensorfile::internals::exercise_split_gguf(data);
});
