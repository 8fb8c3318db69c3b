//! Sets of files opened as one: a sharded checkpoint (its index, a folder, or a list of files:
//! [`ShardSet`]) and files of any formats merged ([`MergedSet`]). Each is a
//! [`crate::formats::FormatReader`] over the opened files, so a set is a [`crate::TensorFile`]
//! like any other.
//!
//! A set is given in one of three ways: the index file that huggingface_hub and transformers
//! write beside the shards (`model.safetensors.index.json`: `{"metadata": {...},
//! "weight_map": {tensor: shard file}}`, the same layout for any of our formats), a folder
//! (every file in it whose content is a tensor file), or a list of files. A part of a split
//! GGUF model (`model-00001-of-00003.gguf`...) opens as the whole model (`split_gguf`).

mod index;
mod merge;
mod set;
mod split_gguf;

pub use index::{ShardIndex, looks_like_index};
pub use merge::MergedSet;
pub use set::ShardSet;
