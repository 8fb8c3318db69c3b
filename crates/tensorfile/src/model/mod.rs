//! The format-neutral model: what a tensor is, whatever file it came from.

mod data;
mod dtype;
mod entry;
mod meta;

pub use data::{Chunks, SparseData, TensorData, gather};
pub use dtype::DType;
pub use entry::{
    ByteOrder, Checksum, ChecksumHasher, ChecksumKind, Encoding, Entry, Kind, Layout, LayoutKind, SparseFormat,
    Storage, TensorInfo, Unreadable,
};
pub use meta::MetaValue;
