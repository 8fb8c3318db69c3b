//! Any bytes opened as an ONNX model: an error or a model whose every tensor decodes to
//! exactly its declared size; never a panic, a hang or an allocation the input cannot justify.
#![no_main]
// fuzz-smoke: seeds *.onnx
// fuzz-smoke: max-len 32768

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    tensorfile::internals::exercise(data, Some(tensorfile::Format::Onnx));
});
