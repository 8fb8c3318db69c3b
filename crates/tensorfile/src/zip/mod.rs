//! Zip archives, as PyTorch writes and reads them (`.pt2` archives, `torch.save` files).
//!
//! Reading works by range over a [`Source`](crate::source::Source) (a mapped file or a remote
//! object): opening fetches the end of the archive, its central directory (zip64 included)
//! and the entries' local headers, and checks them (every entry inside the file, before the
//! directory, not overlapping another); an entry's bytes are fetched when it is read. Stored
//! entries of a local file are slices of the map, deflated ones (archives rewritten by
//! Python's `zipfile`) are inflated into a buffer of their declared size, never more. Writing
//! produces what PyTorch's own writer produces: every entry stored under one root folder,
//! its data at a multiple of 64 bytes, data descriptors and zip64 records.

mod central;
mod entry;
mod local;
mod read;
mod region;
mod write;

#[cfg(test)]
mod tests;

pub use entry::ZipEntry;
pub use read::{Archive, entry_names, entry_names_in, is_safe_name, leaves_archive};
pub use region::Region;
pub use write::ZipWriter;

use crate::error::Error;

/// Check the CRC-32 of every record of `archive` (inflating deflated ones): the problems
/// found, and how many CRCs were checked (a CRC of 0 means none was recorded).
pub fn verify_records(archive: &Archive) -> (Vec<Error>, usize) {
    let mut problems = Vec::new();
    let mut checked = 0;
    for e in archive.entries() {
        match archive.read(e, true) {
            Ok(_) => checked += usize::from(e.crc32 != 0),
            Err(err) => problems.push(err),
        }
    }
    (problems, checked)
}

/// Where PyTorch puts stored entries' data: at multiples of this.
pub const ALIGNMENT: u64 = 64;
