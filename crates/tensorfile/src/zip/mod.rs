//! Zip archives, as PyTorch writes and reads them (`.pt2` archives, `torch.save` files).
//!
//! Reading works over the mapped file: the central directory (zip64 included) is parsed and
//! checked (every entry inside the file, before the directory, not overlapping another),
//! stored entries are served as slices of the map, deflated ones (archives rewritten by
//! Python's `zipfile`) are inflated into a buffer of their declared size, never more. Writing
//! produces what PyTorch's own writer produces: every entry stored under one root folder,
//! its data at a multiple of 64 bytes, data descriptors and zip64 records.

mod read;
mod write;

pub use read::{Archive, ZipEntry, entry_names, is_safe_name};
pub use write::ZipWriter;

/// Where PyTorch puts stored entries' data: at multiples of this.
pub const ALIGNMENT: u64 = 64;
