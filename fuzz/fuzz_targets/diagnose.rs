//! Any bytes diagnosed as a file that did not open, under the name of every format's extension
//! and with every rule a reader could have refused it with: a diagnosis whose words can be
//! written, or none; never a panic.
#![no_main]
// fuzz-smoke: seeds *.safetensors *.gguf *.npy *.pte *.ptd *.onnx *.zt *.h5 *.pt
// fuzz-smoke: max-len 16384

use std::path::Path;

use tensorfile::Rule;
use tensorfile::diagnose::{Sample, diagnose};
use tensorfile::source::Bytes;

const NAMES: &[&str] =
    &["m.safetensors", "m.gguf", "m.npy", "m.npz", "m.pte", "m.ptd", "m.onnx", "m.zt", "m.h5", "m.pt", "m.pt2", "m"];

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let bytes = Bytes::from_vec(data.to_vec());
    for name in NAMES {
        let sample = Sample::of_bytes(&bytes, Some(Path::new(name)));
        for rule in [None, Some(Rule::Truncated), Some(Rule::OutOfBounds), Some(Rule::UnknownFormat)] {
            if let Some(d) = diagnose(&sample, rule) {
                let _ = d.to_string();
            }
        }
    }
});
