//! Bytes in memory: a memory-mapped file or an owned buffer, shared cheaply.

use std::fmt;
use std::fs::File;
use std::ops::{Deref, Range};
use std::path::Path;
use std::sync::Arc;

use crate::checked;
use crate::error::{Error, Result};

use super::anonymous::AnonymousMap;
use super::private::PrivateBytes;

/// What holds the memory: a vector of the library's own (which a sole holder can take back,
/// [`Bytes::into_private`]) or anything else that holds bytes (a map, a network buffer).
#[derive(Clone)]
enum Owner {
    Vec(Arc<Vec<u8>>),
    /// A read-only map of `file` ([`Bytes::map_file`]); the file is kept so that an output can
    /// copy these bytes in the kernel ([`Bytes::mapped_file`]) and a caller can map a range of
    /// it privately ([`Bytes::into_private`]).
    Map(Arc<memmap2::Mmap>, Arc<File>),
    /// Memory of this process alone made for an output ([`super::FreshBuffer`]) or a download
    /// (`super::pool::Buffer`): taken as it is by [`Bytes::into_private`] when no one else
    /// holds it.
    Anonymous(Arc<AnonymousMap>),
    Other(Arc<dyn AsRef<[u8]> + Send + Sync>),
}

impl Owner {
    fn bytes(&self) -> &[u8] {
        match self {
            Owner::Vec(v) => v,
            Owner::Map(m, _) => m,
            Owner::Anonymous(m) => m.bytes(),
            Owner::Other(o) => (**o).as_ref(),
        }
    }

    fn same(&self, other: &Owner) -> bool {
        match (self, other) {
            (Owner::Vec(a), Owner::Vec(b)) => Arc::ptr_eq(a, b),
            (Owner::Map(a, _), Owner::Map(b, _)) => Arc::ptr_eq(a, b),
            (Owner::Anonymous(a), Owner::Anonymous(b)) => Arc::ptr_eq(a, b),
            (Owner::Other(a), Owner::Other(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

/// A cheaply cloned, immutable byte range: a slice of a mapped file or of an owned buffer.
/// Clones share the same memory.
#[derive(Clone)]
pub struct Bytes {
    owner: Owner,
    range: Range<usize>,
}

/// The smallest slice of a mapped file that [`Bytes::into_private`] maps privately rather than
/// copies: below it, copying costs less than making and unmapping a map and faulting its pages
/// in (measured: `docs/performance.md`, "Writable tensors").
pub const PRIVATE_MAP_MIN: usize = 64 * 1024;

impl Bytes {
    /// Bytes owned by this value.
    pub fn from_vec(v: Vec<u8>) -> Self {
        let len = v.len();
        Bytes { owner: Owner::Vec(Arc::new(v)), range: 0..len }
    }

    /// Bytes held by any owner of a byte buffer (a network buffer, say), without a copy.
    pub fn from_owner(owner: impl AsRef<[u8]> + Send + Sync + 'static) -> Self {
        let len = owner.as_ref().len();
        Bytes { owner: Owner::Other(Arc::new(owner)), range: 0..len }
    }

    /// Bytes held by an anonymous map of this process's own (a [`super::FreshBuffer`]).
    pub(super) fn from_anonymous_map(map: memmap2::MmapMut) -> Self {
        Self::from_anonymous(AnonymousMap::fresh(map))
    }

    /// Bytes held by an anonymous map, fresh or a download buffer of the pool.
    pub(super) fn from_anonymous(map: AnonymousMap) -> Self {
        let len = map.bytes().len();
        Bytes { owner: Owner::Anonymous(Arc::new(map)), range: 0..len }
    }

    /// Map a file read-only. Empty files are served from an empty buffer (an empty map is not
    /// portable).
    pub fn map_file(path: &Path) -> Result<Self> {
        let file = File::open(path).map_err(|e| Error::from(e).in_file(path))?;
        let len = file.metadata().map_err(|e| Error::from(e).in_file(path))?.len();
        if len == 0 {
            return Ok(Bytes::from_vec(Vec::new()));
        }
        let map = super::mapped::map_read_only(&file).map_err(|e| Error::from(e).in_file(path))?;
        let len = map.len();
        Ok(Bytes { owner: Owner::Map(Arc::new(map), Arc::new(file)), range: 0..len })
    }

    /// Read a whole file into memory around the page cache (`O_DIRECT`, several reads in
    /// flight; buffered where direct I/O is refused): for a file that is not cached, the disk's
    /// own rate. The bytes are owned (no view of the file).
    pub fn read_direct(path: &Path) -> Result<Self> {
        let (buffer, len) = super::direct::read_whole(path).map_err(|e| Error::from(e).in_file(path))?;
        let buffer = buffer.make_read_only().map_err(|e| Error::from(e).in_file(path))?;
        Bytes::from_owner(buffer).slice(0, len)
    }

    /// Read a whole file into memory (no map).
    pub fn read_file(path: &Path) -> Result<Self> {
        let v = std::fs::read(path).map_err(|e| Error::from(e).in_file(path))?;
        Ok(Bytes::from_vec(v))
    }

    /// A sub-range, checked against this slice's length.
    pub fn slice(&self, offset: u64, len: u64) -> Result<Bytes> {
        let r = checked::range_within(offset, len, self.len(), "byte range")?;
        Ok(Bytes { owner: self.owner.clone(), range: self.range.start + r.start..self.range.start + r.end })
    }

    /// Where these bytes start within the buffer or file they were sliced from (for a
    /// slice of a mapped file: the file offset).
    pub fn offset_in_owner(&self) -> u64 {
        self.range.start as u64
    }

    /// Tell the system that all of `slices` will be read soon: for each file map among their
    /// owners, `MADV_WILLNEED` once over the span from the first to the last byte of theirs in
    /// it. For a file not in the page cache, the kernel reads that span ahead while the caller
    /// goes through the slices, rather than one fault at a time. Nothing for slices that are
    /// not of a map; only advice (a refusal changes nothing).
    pub fn will_read(slices: &[Bytes]) {
        let mut spans: Vec<(&Arc<memmap2::Mmap>, Range<usize>)> = Vec::new();
        for b in slices {
            let Owner::Map(map, _) = &b.owner else { continue };
            match spans.iter_mut().find(|(m, _)| Arc::ptr_eq(m, map)) {
                Some((_, span)) => *span = span.start.min(b.range.start)..span.end.max(b.range.end),
                None => spans.push((map, b.range.clone())),
            }
        }
        for (map, span) in spans {
            let _ = map.advise_range(memmap2::Advice::WillNeed, span.start, span.len());
        }
    }

    /// Map every page of these bytes now, when they are a slice of a mapped file already
    /// in the page cache (`MADV_POPULATE_READ`, Linux 5.14 and later; elsewhere
    /// `MADV_WILLNEED`): one call instead of a fault per page when the bytes are about to be
    /// read whole. Only advice: a refusal changes nothing.
    pub(crate) fn populate(&self) {
        let Owner::Map(map, _) = &self.owner else { return };
        #[cfg(target_os = "linux")]
        if map.advise_range(memmap2::Advice::PopulateRead, self.range.start, self.range.len()).is_ok() {
            return;
        }
        let _ = map.advise_range(memmap2::Advice::WillNeed, self.range.start, self.range.len());
    }

    /// Whether these bytes live in a memory-mapped file (zero-copy) rather than a buffer.
    pub fn is_mapped(&self) -> bool {
        matches!(self.owner, Owner::Map(..))
    }

    /// For a slice of a mapped file: the file and where in it these bytes start, so that a
    /// writer can have the kernel copy them (`copy_file_range`) instead of copying the map.
    pub fn mapped_file(&self) -> Option<(&File, u64)> {
        match &self.owner {
            Owner::Map(_, file) => Some((file, self.range.start as u64)),
            _ => None,
        }
    }

    /// Whether `self` lies inside the same memory as `other` (same owner, overlapping or not).
    pub fn shares_owner(&self, other: &Bytes) -> bool {
        self.owner.same(&other.owner)
    }

    /// A copy of the bytes in a new vector, owned by the caller (no longer a view of the file).
    pub fn to_vec(&self) -> Vec<u8> {
        self.deref().to_vec()
    }

    /// These bytes as memory of the caller's own, to write to without changing the file or
    /// what anyone else reads: a slice of a mapped file of at least [`PRIVATE_MAP_MIN`] bytes
    /// becomes a private copy-on-write map of its range (no copy: pages are copied by the
    /// kernel only when written); a vector no one else holds is taken as it is; anything else
    /// (a smaller slice of the map, a slice of a buffer others share) is copied; a fresh
    /// output's anonymous map no one else holds is taken whole, likewise. A map the
    /// system refuses (too many maps) falls back to a copy.
    pub fn into_private(self) -> PrivateBytes {
        if let Some((file, offset)) = self.mapped_file()
            && self.len() >= PRIVATE_MAP_MIN
            && let Ok(map) = PrivateBytes::map(file, offset, self.len())
        {
            return map;
        }
        let Bytes { owner, range } = self;
        match owner {
            Owner::Vec(v) if range == (0..v.len()) => match Arc::try_unwrap(v) {
                Ok(v) => PrivateBytes::from_vec(v),
                Err(shared) => PrivateBytes::from_vec(shared.to_vec()),
            },
            Owner::Anonymous(m) if range.start == 0 => match Arc::try_unwrap(m) {
                Ok(m) => match m.take(range.end) {
                    Ok(map) => PrivateBytes::from_anonymous_map(map, range.end),
                    Err(m) => PrivateBytes::from_vec(m.bytes()[range].to_vec()),
                },
                Err(shared) => PrivateBytes::from_vec(shared.bytes()[range].to_vec()),
            },
            owner => PrivateBytes::from_vec(owner.bytes()[range].to_vec()),
        }
    }

    /// The addresses of the whole map or buffer these bytes were sliced from: with
    /// [`Bytes::is_mapped`], how a caller checks that its array is a view of the file.
    pub fn owner_addresses(&self) -> Range<usize> {
        let all: &[u8] = self.owner.bytes();
        let start = all.as_ptr() as usize;
        start..start + all.len()
    }
}

impl Deref for Bytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // The range was checked against the owner when this value was made.
        &self.owner.bytes()[self.range.clone()]
    }
}

impl AsRef<[u8]> for Bytes {
    fn as_ref(&self) -> &[u8] {
        self
    }
}

impl PartialEq for Bytes {
    fn eq(&self, other: &Bytes) -> bool {
        self.deref() == other.deref()
    }
}

impl fmt::Debug for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Bytes({} bytes{})", self.len(), if self.is_mapped() { ", mapped" } else { "" })
    }
}

impl From<Vec<u8>> for Bytes {
    fn from(v: Vec<u8>) -> Self {
        Bytes::from_vec(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_share_memory_and_are_checked() {
        let b = Bytes::from_vec((0u8..10).collect());
        let s = b.slice(2, 3).unwrap();
        assert_eq!(&*s, &[2, 3, 4]);
        assert!(s.shares_owner(&b));
        let s2 = s.slice(1, 2).unwrap();
        assert_eq!(&*s2, &[3, 4]);
        assert!(s.slice(2, 2).is_err());
        assert!(b.slice(u64::MAX, 1).is_err());
    }

    #[test]
    fn private_bytes_are_the_callers_own() {
        // A vector no one else holds is taken as it is; a shared one is copied.
        let v: Vec<u8> = (0u8..10).collect();
        let address = v.as_ptr() as usize;
        let private = Bytes::from_vec(v).into_private();
        assert_eq!((private.address(), &*private), (address, &(0u8..10).collect::<Vec<_>>()[..]));
        let shared = Bytes::from_vec((0u8..10).collect());
        let kept = shared.clone();
        let private = shared.slice(2, 3).unwrap().into_private();
        assert!(!private.is_mapped() && *private == [2, 3, 4]);
        assert_ne!(private.address(), kept.as_ptr() as usize + 2);
        // A slice of a mapped file becomes a private map of its range, at any offset.
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x");
        let min = PRIVATE_MAP_MIN as u64;
        let content: Vec<u8> = (0..3 * min + 100).map(|i| (i % 251) as u8).collect();
        std::fs::write(&p, &content).unwrap();
        let map = Bytes::map_file(&p).unwrap();
        for (offset, len) in [(0u64, min), (4095, min + 2), (min * 2 + 7, min + 90), (9, min - 1), (4096, 10)] {
            let private = map.slice(offset, len).unwrap().into_private();
            // Large slices are mapped (at any offset), smaller ones copied.
            assert_eq!(private.is_mapped(), len >= min, "{offset} {len}");
            assert_ne!(private.address(), map.as_ptr() as usize + offset as usize);
            assert_eq!(&*private, &content[offset as usize..(offset + len) as usize]);
        }
        assert!(!map.slice(5, 0).unwrap().into_private().is_mapped());
    }

    #[test]
    fn maps_files_and_empty_files() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x");
        std::fs::write(&p, b"hello").unwrap();
        let b = Bytes::map_file(&p).unwrap();
        assert!(b.is_mapped());
        assert_eq!(&*b, b"hello");
        std::fs::write(&p, b"").unwrap();
        assert_eq!(Bytes::map_file(&p).unwrap().len(), 0);
    }
}
