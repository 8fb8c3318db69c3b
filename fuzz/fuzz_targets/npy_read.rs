//! Any bytes opened as `.npy`: an error or a file whose every entry decodes to exactly its
//! declared size; never a panic, a hang or an allocation the input cannot justify.
#![no_main]
// fuzz-smoke: seeds *.npy
// fuzz-smoke: max-len 32768

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    tensorfile::internals::exercise(data, Some(tensorfile::Format::Npy));
});
