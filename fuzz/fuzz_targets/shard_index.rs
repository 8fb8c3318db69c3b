//! Any bytes parsed as the index of a sharded checkpoint (`*.index.json`): an error, or a
//! weight map whose every shard name stays inside the index's folder; never a panic.
#![no_main]
// fuzz-smoke: seeds *.json
// fuzz-smoke: max-len 16384

use std::path::{Component, Path};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Ok(index) = tensorfile::shards::ShardIndex::parse(data) {
        for (_, file) in &index.weight_map {
            let inside = Path::new(file).components().all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
            assert!(inside, "shard {file:?} accepted but leaves the folder");
        }
    }
});
