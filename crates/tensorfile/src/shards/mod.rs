//! Sharded checkpoints: a set of tensor files opened as one, and conversions that write one.
//!
//! A set is given in one of three ways: the index file that huggingface_hub and transformers
//! write beside the shards (`model.safetensors.index.json`: `{"metadata": {...},
//! "weight_map": {tensor: shard file}}`, the same layout for any of our formats), a folder
//! (every file in it whose content is a tensor file), or a list of files. [`ShardSet`] is a
//! [`crate::formats::FormatReader`] over the opened shards, so a set is a
//! [`crate::TensorFile`] like any other: `TensorFile::open` takes an index or a folder,
//! `TensorFile::open_many` a list.
//!
//! [`convert_to_shards`] writes shards of at most a given size (`model-00001-of-00003.safetensors`...)
//! and their index, all of them or nothing.

mod index;
mod merge;
mod set;
mod write;

pub use index::{ShardIndex, looks_like_index};
pub use merge::MergedSet;
pub use set::ShardSet;
pub use write::{ShardNames, ShardedReport, convert_to_shards, parse_size, split};
