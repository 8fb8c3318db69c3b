//! Any bytes opened as safetensors: an error or a file whose every entry decodes to exactly
//! its declared size; never a panic.
#![no_main]
// fuzz-smoke: seeds *.safetensors
// fuzz-smoke: max-len 16384

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    tensorfile::internals::exercise(data, Some(tensorfile::Format::Safetensors));
});
