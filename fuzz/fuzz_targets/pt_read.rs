//! Any bytes opened as a `torch.save` file. Never a panic, a hang or an allocation the input cannot justify.
#![no_main]
// fuzz-smoke: seeds *.pt
// fuzz-smoke: max-len 131072

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    tensorfile::internals::exercise(data, Some(tensorfile::Format::Pt));
});
