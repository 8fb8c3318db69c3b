//! Any bytes decoded as the payload of ExecuTorch's XNNPACK delegate: an error or a graph
//! whose every id, index and size was checked; never a panic or a runaway decode.
#![no_main]
// fuzz-smoke: seeds *.xnnpack
// fuzz-smoke: max-len 65536

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    tensorfile::formats::executorch::xnnpack::exercise(data);
});
