//! Any bytes opened as `.ptd`: an error or a file whose every entry decodes to exactly its
//! declared size, and whose load-time checks all run; never a panic or a runaway decode.
#![no_main]
// fuzz-smoke: seeds *.ptd
// fuzz-smoke: max-len 16384

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    tensorfile::internals::exercise(data, Some(tensorfile::Format::Ptd));
});
