//! Sharded checkpoints: a set of tensor files opened as one (read by
//! [`crate::TensorFile::open`] from an index or a folder, [`crate::OpenOptions::open_set`]
//! from a list), and conversions that write one ([`convert_to_shards`]: shards of at most a
//! given size, `model-00001-of-00003.safetensors`..., and their index, all of them or
//! nothing).

#[cfg(any(test, feature = "internals"))]
pub use crate::convert::shards::{ShardNames, ShardedReport, convert_to_shards, split};
#[cfg(any(test, feature = "internals"))]
pub use crate::sizes::parse_size;
#[cfg(any(test, feature = "internals"))]
pub use crate::file::sets::{MergedSet, ShardIndex, ShardSet, looks_like_index};
