//! Any bytes run through the restricted pickle machine. Never a panic, a hang or an allocation the input cannot justify.
#![no_main]
// fuzz-smoke: seeds *.pt *.pt2
// fuzz-smoke: max-len 16384

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = tensorfile::internals::pickle::load(data);
});
