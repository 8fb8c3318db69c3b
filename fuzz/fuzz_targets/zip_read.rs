//! Any bytes opened as a zip archive, every entry read (stored or inflated, CRC checked). Never a panic, a hang or an allocation the input cannot justify.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Ok(a) = tensorfile::zip::Archive::open(data.to_vec().into()) {
        for e in a.entries() {
            let _ = a.read(e, true);
        }
    }
});
