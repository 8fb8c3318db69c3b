//! Any bytes opened as HDF5: an error or a file whose every dataset decodes to exactly its
//! declared size; never a panic, a hang or an allocation the input cannot justify.
#![no_main]
// fuzz-smoke: seeds *.h5
// fuzz-smoke: max-len 16384

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    tensorfile::internals::exercise(data, Some(tensorfile::Format::Hdf5));
});
