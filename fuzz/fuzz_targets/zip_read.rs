//! Any bytes opened as a zip archive, every entry read (stored or inflated, CRC checked). Never a panic, a hang or an allocation the input cannot justify.
#![no_main]
// fuzz-smoke: seeds *.pt *.pt2
// fuzz-smoke: max-len 131072

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Ok(a) = tensorfile::internals::zip::Archive::open(tensorfile::source::Bytes::from_vec(data.to_vec())) {
        for e in a.entries() {
            let _ = a.read(e, true);
        }
    }
});
