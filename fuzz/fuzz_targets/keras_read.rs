//! Any bytes opened as a Keras `.keras` file: an error or a file whose every weight decodes to
//! exactly its declared size; never a panic, a hang or an allocation the input cannot justify.
#![no_main]
// fuzz-smoke: seeds *.keras
// fuzz-smoke: max-len 65536

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    tensorfile::internals::exercise(data, Some(tensorfile::Format::Keras));
});
