//! Any bytes read as an importance matrix (llama.cpp's GGUF or legacy layout), then made into
//! llama-quantize's weights: an error, or entries whose weights are exactly as many as their
//! sums; never a panic, a hang or an allocation the input cannot justify.
#![no_main]
// fuzz-smoke: seeds *.dat *.gguf
// fuzz-smoke: max-len 65536

use tensorfile::llama::Imatrix;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Ok(m) = Imatrix::from_bytes(data) else { return };
    let Ok(weights) = m.weights() else { return };
    assert_eq!(weights.len(), m.entries().len());
    for (name, e) in m.entries() {
        assert_eq!(weights[name].len(), e.sums.len(), "weights of another size than the sums");
    }
});
