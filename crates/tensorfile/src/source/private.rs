//! Bytes that one holder alone may write: a tensor handed to a user who may change it in
//! place (numpy arrays and torch tensors are writable), without the change ever reaching the
//! file or any other reader of it.

use std::fmt;
use std::fs::File;
use std::ops::Deref;

use memmap2::MmapMut;

/// Memory of its holder's own, readable and writable at [`PrivateBytes::address`]: a private
/// copy-on-write map of a file's range (no copy until a page is written: the page cache is
/// shared with every other reader until then) or a buffer of its own.
pub struct PrivateBytes {
    buffer: Buffer,
    /// Where the bytes start, taken from a mutable borrow of the buffer when it was made:
    /// the address writes go to.
    address: usize,
}

enum Buffer {
    Owned(Vec<u8>),
    Map(MmapMut),
    /// An anonymous map made for an output (`FreshBuffer`) or a download: a buffer of its own,
    /// not the file, of which the first `len` bytes are held (a download buffer may be
    /// larger).
    Anonymous { map: MmapMut, len: usize },
}

impl PrivateBytes {
    /// A buffer the caller gives up.
    pub fn from_vec(mut bytes: Vec<u8>) -> Self {
        let address = bytes.as_mut_ptr() as usize;
        PrivateBytes { buffer: Buffer::Owned(bytes), address }
    }

    /// The first `len` bytes of an anonymous map the caller gives up.
    pub(super) fn from_anonymous_map(mut map: MmapMut, len: usize) -> Self {
        let address = map.as_mut_ptr() as usize;
        let len = len.min(map.len());
        PrivateBytes { buffer: Buffer::Anonymous { map, len }, address }
    }

    /// Bytes `offset..offset + len` of `file`, mapped privately (copy-on-write); the range
    /// is checked against the file by the caller.
    pub(super) fn map(file: &File, offset: u64, len: usize) -> std::io::Result<Self> {
        let mut map = super::mapped::map_private(file, offset, len)?;
        // The holder reads the whole range next (it asked for these bytes): have the kernel
        // read it ahead, for a file not in the page cache, rather than fault page by page.
        // Only advice: a refusal changes nothing.
        let _ = map.advise(memmap2::Advice::WillNeed);
        let address = map.as_mut_ptr() as usize;
        Ok(PrivateBytes { buffer: Buffer::Map(map), address })
    }

    /// The address of the first byte, where the holder may read and write `len()` bytes
    /// for as long as this value lives.
    pub fn address(&self) -> usize {
        self.address
    }

    /// Whether the bytes are a private map of the file (no copy made until written) rather
    /// than a buffer.
    pub fn is_mapped(&self) -> bool {
        matches!(self.buffer, Buffer::Map(_))
    }
}

impl Deref for PrivateBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match &self.buffer {
            Buffer::Owned(v) => v,
            Buffer::Map(m) => m,
            Buffer::Anonymous { map, len } => &map[..*len],
        }
    }
}

impl fmt::Debug for PrivateBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PrivateBytes({} bytes{})", self.len(), if self.is_mapped() { ", private map" } else { "" })
    }
}
