//! Any bytes opened as zTensor 1.x: an error or a file whose every entry decodes to exactly
//! its declared size; never a panic, a hang or an allocation the input cannot justify.
#![no_main]
// fuzz-smoke: seeds *.zt
// fuzz-smoke: max-len 131072

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    tensorfile::internals::exercise(data, Some(tensorfile::Format::Zt1));
});
