//! Where an archive's bytes are read from: a [`Region`] of a [`Source`], bytes in memory, and
//! what was already fetched.

use crate::checked;
use crate::error::Result;
use crate::source::{Bytes, Source};

/// The bytes an archive is read from: a whole [`Source`], or the bytes of a stored entry of
/// another archive (a `torch.save` file inside a `.pt2`), read in place by range. Offsets are
/// relative to the region's start.
#[derive(Clone, Debug)]
pub struct Region {
    pub(super) src: Source,
    pub(super) base: u64,
    pub(super) len: u64,
}

impl Region {
    /// The whole of `src`.
    pub fn whole_of(src: impl Into<Source>) -> Region {
        let src = src.into();
        let len = src.len();
        Region { src, base: 0, len }
    }

    /// Where the region starts in its source.
    pub fn base(&self) -> u64 {
        self.base
    }

    pub fn len(&self) -> u64 {
        self.len
    }

    #[cfg(any(test, feature = "internals"))]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The source the region lies in.
    #[cfg(any(test, feature = "internals"))]
    pub fn source(&self) -> &Source {
        &self.src
    }

    /// Bytes `offset..offset + len` of the region, checked against it.
    pub fn range(&self, offset: u64, len: u64) -> Result<Bytes> {
        checked::range_within(offset, len, checked::to_usize(self.len, "archive size")?, "byte range")?;
        self.src.range(checked::add(self.base, offset, "byte range")?, len)
    }

    /// Several ranges at once (remote: fetched concurrently), in the order asked.
    pub fn ranges(&self, wanted: &[(u64, u64)]) -> Result<Vec<Bytes>> {
        let total = checked::to_usize(self.len, "archive size")?;
        let mut absolute = Vec::with_capacity(wanted.len());
        for &(offset, len) in wanted {
            checked::range_within(offset, len, total, "byte range")?;
            absolute.push((checked::add(self.base, offset, "byte range")?, len));
        }
        self.src.ranges(&absolute)
    }

    /// The first `min(max, len)` bytes.
    pub fn head(&self, max: u64) -> Result<Bytes> {
        self.range(0, max.min(self.len))
    }

    /// The whole region in memory (local: a slice of the map).
    pub fn whole(&self) -> Result<Bytes> {
        self.range(0, self.len)
    }

    /// The region as a source of its own: a slice of a local file's map, else ranges of the
    /// source read as they are asked for.
    pub fn to_source(&self) -> Result<Source> {
        self.src.window(self.base, self.len)
    }

    /// The region as a slice of a local file's map, if the source is local.
    #[cfg(any(test, feature = "internals"))]
    pub fn as_local(&self) -> Option<Bytes> {
        self.src.as_local().and_then(|b| b.slice(self.base, self.len).ok())
    }
}

/// What the directory is read from: a [`Region`] or bytes already in memory.
pub(super) trait Reach {
    fn len(&self) -> u64;
    fn range(&self, offset: u64, len: u64) -> Result<Bytes>;
}

impl Reach for Region {
    fn len(&self) -> u64 {
        self.len
    }
    fn range(&self, offset: u64, len: u64) -> Result<Bytes> {
        Region::range(self, offset, len)
    }
}

/// Bytes in memory: only what the directory needs (the end and the directory) is copied.
pub(super) struct InMemory<'a>(pub(super) &'a [u8]);

impl Reach for InMemory<'_> {
    fn len(&self) -> u64 {
        self.0.len() as u64
    }
    fn range(&self, offset: u64, len: u64) -> Result<Bytes> {
        let r = checked::range_within(offset, len, self.0.len(), "byte range")?;
        Ok(Bytes::from_vec(self.0[r].to_vec()))
    }
}

/// Bytes already fetched: `bytes` start at offset `start` of the archive.
pub(super) struct Fetched {
    pub(super) start: u64,
    pub(super) bytes: Bytes,
}

impl Fetched {
    /// `offset..offset + len` if it lies inside what was fetched.
    pub(super) fn get(&self, offset: u64, len: u64) -> Option<Bytes> {
        let rel = offset.checked_sub(self.start)?;
        self.bytes.slice(rel, len).ok()
    }

    /// `offset..offset + len`, from what was fetched or else fetched now.
    pub(super) fn fetch(&self, r: &impl Reach, offset: u64, len: u64) -> Result<Bytes> {
        match self.get(offset, len) {
            Some(b) => Ok(b),
            None => r.range(offset, len),
        }
    }
}
