//! Writers for the pieces the cases are made of, written here (not taken from tensorfile) so
//! that a change to the library's writers cannot silently change what the corpus tests, and
//! so that hostile variants (a lying length, a bad UTF-8 key) are easy to make.

pub mod cbor;
pub mod deflate;
pub mod flatbuf;
pub mod pickle;
pub mod zip;
pub mod zstd;

/// Little-endian helpers for patching files.
pub fn put_u32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

pub fn put_u64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

pub fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// Where `needle` first occurs in `hay`.
pub fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}
