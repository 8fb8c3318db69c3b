//! Any bytes, format detected by content, then read as above.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    tensorfile::formats::exercise(data, None);
});
