//! Any bytes read as the records a Git repository keeps of a file stored with Git LFS (the
//! index entry of its path, a delta of a packed pointer, the pointer): nothing, or records
//! within their bounds; never a panic, a hang or an allocation the input cannot justify.
#![no_main]
// fuzz-smoke: seeds *.gitindex
// fuzz-smoke: max-len 8192

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    tensorfile::internals::exercise_git_records(data);
});
