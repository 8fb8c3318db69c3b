//! The format-neutral model: what a tensor is, whatever file it came from.

pub mod cast;
mod data;
mod dtype;
pub mod elements;
mod entry;
mod layout;
mod meta;
pub mod quant;
mod typed;

pub use data::{Chunks, Part, SparseData, TensorData, gather};
pub use dtype::DType;
pub use entry::{
    ByteOrder, Checksum, ChecksumHasher, ChecksumKind, Encoding, Entry, Kind, Storage, TensorInfo, Unreadable,
};
pub use layout::{DATA, INDICES, INDPTR, Layout, LayoutKind, PartSpec, SparseFormat, VALUES};
pub use meta::MetaValue;
pub use typed::{Number, TypedArray};
