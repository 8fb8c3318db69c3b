//! Any bytes, format detected by content, then read as above.
#![no_main]
// fuzz-smoke: seeds *
// fuzz-smoke: max-len 65536

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    tensorfile::internals::exercise(data, None);
});
