//! Where bytes come from.
//!
//! [`Bytes`] are bytes in memory (a slice of a mapped file or of an owned buffer). A
//! [`Source`] is a whole file that readers take bytes from by range: a local file, whose
//! ranges are slices of its map (zero-copy), or a remote object (`http(s)://`, `s3://`,
//! `gs://`, `az://`), whose ranges are fetched with ranged GETs when asked for. Readers ask
//! only for what they need: the index when a file is opened, a tensor's bytes when it is read.
//! A [`Sample`] is a bounded look at a file's two ends, for telling what a file that does not
//! open really is.

mod bytes;
pub(crate) mod direct;
mod fresh;
mod kept;
pub(crate) mod lfs_pointer;
// Mapping a file is `unsafe` (memmap2 cannot rule out the file changing under the map); the
// one call is in this module, with its reasoning.
#[allow(unsafe_code)]
mod mapped;
mod anonymous;
mod private;
#[cfg(feature = "remote")]
mod pool;
#[cfg(feature = "remote")]
pub mod cache;
#[cfg(feature = "remote")]
mod remote;
#[cfg(feature = "remote")]
mod retry_after;
pub(crate) mod sample;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

pub use bytes::{Bytes, PRIVATE_MAP_MIN};
pub(crate) use fresh::FreshBuffer;
pub use private::PrivateBytes;
pub use direct::{file_is_cached, is_cached};
/// Requests in flight at once for the tensor reads of one remote object.
#[cfg(all(feature = "remote", any(test, feature = "internals")))]
pub use remote::REQUESTS_IN_FLIGHT;
pub use sample::{SAMPLE_BYTES, Sample};

use crate::error::{Error, Result};

/// How many bytes a reader fetches at once from the start or the end of a remote file when it
/// does not yet know the length of the index there: one round trip usually covers the whole
/// index; a larger one costs a second.
pub const SPECULATIVE_READ: u64 = 64 * 1024;

/// A file to read by range: local and mapped, or remote.
#[derive(Clone)]
pub struct Source {
    inner: Inner,
    /// Where the file was opened from (a path or a URL), when known: what a format whose
    /// files name others beside them (zTensor 2 shards) finds them by.
    location: Option<Arc<PathBuf>>,
}

#[derive(Clone)]
enum Inner {
    Local(Bytes),
    /// Bytes in memory served as if remote: no [`Source::as_local`], and every range asked
    /// for is counted. What the library's tests use to check that a reader fetches only what
    /// it needs, without a server.
    Counted(Bytes, Arc<Counter>),
    #[cfg(feature = "remote")]
    Remote(Arc<remote::RemoteObject>),
    /// `len` bytes of another source that is not local, from `base` (a stored member of a
    /// remote archive read as a file of its own, by range).
    Window { outer: Arc<Source>, base: u64, len: u64 },
}

/// What a [`Source::counted`] has served: bytes counted, small ranges kept (as a remote
/// object keeps them).
#[derive(Default)]
struct Counter {
    fetched: AtomicU64,
    keep: bool,
    kept: kept::Kept,
}

/// Whether `location` names a remote object (a URL of a scheme this library reads) rather
/// than a local path.
pub fn is_url(location: &str) -> bool {
    let Some((scheme, rest)) = location.split_once("://") else { return false };
    !rest.is_empty() && REMOTE_SCHEMES.contains(&scheme.to_ascii_lowercase().as_str())
}

/// `path` as a URL, when it is one ([`is_url`]): how a path argument that may be either is
/// told apart.
pub fn url_of(path: &Path) -> Option<&str> {
    path.to_str().filter(|p| is_url(p))
}

/// The URL schemes of remote objects.
pub const REMOTE_SCHEMES: [&str; 9] = ["http", "https", "s3", "s3a", "gs", "az", "azure", "abfs", "abfss"];

impl Source {
    /// Bytes already in memory (or mapped) as a source.
    pub fn local(bytes: Bytes) -> Source {
        Source { inner: Inner::Local(bytes), location: None }
    }

    /// The same file, known to come from `location` (a path or a URL).
    pub fn at(self, location: &Path) -> Source {
        Source { location: Some(Arc::new(location.to_path_buf())), ..self }
    }

    /// Where the file was opened from, when known ([`Source::at`]).
    pub fn location(&self) -> Option<&Path> {
        self.location.as_deref().map(PathBuf::as_path)
    }

    /// `bytes` read as a remote object would be (see [`Source::bytes_fetched`]), for tests:
    /// small ranges are kept and served again without being counted, as a remote object
    /// keeps them.
    pub fn counted(bytes: Bytes) -> Source {
        Source { inner: Inner::Counted(bytes, Arc::new(Counter { keep: true, ..Counter::default() })), location: None }
    }

    /// Like [`Source::counted`], but keeping nothing: every range asked for is counted, for
    /// tests that a reader asks for exactly the bytes it needs.
    pub fn counted_exact(bytes: Bytes) -> Source {
        Source { inner: Inner::Counted(bytes, Arc::default()), location: None }
    }

    /// Map the local file at `path`.
    pub fn map_file(path: &Path) -> Result<Source> {
        Bytes::map_file(path).map(|b| Source::local(b).at(path))
    }

    /// Open a remote object by URL: its size is asked for (one HEAD request); nothing else is
    /// fetched until a reader asks for a range.
    pub fn open_url(url: &str) -> Result<Source> {
        #[cfg(feature = "remote")]
        {
            remote::RemoteObject::open(url)
                .map(|o| Source { inner: Inner::Remote(Arc::new(o)), location: Some(Arc::new(PathBuf::from(url))) })
        }
        #[cfg(not(feature = "remote"))]
        {
            Err(Error::unsupported(format!("{url}: this build of tensorfile reads no URLs (feature `remote`)")))
        }
    }

    /// A local path (mapped) or a URL ([`url_of`]), opened; errors name it.
    pub fn open(path: &Path) -> Result<Source> {
        match url_of(path) {
            Some(url) => Source::open_url(url).map_err(|e| e.in_file(url)),
            None => Source::map_file(path),
        }
    }

    /// The file's size in bytes.
    pub fn len(&self) -> u64 {
        match &self.inner {
            Inner::Local(b) | Inner::Counted(b, _) => b.len() as u64,
            #[cfg(feature = "remote")]
            Inner::Remote(o) => o.len(),
            Inner::Window { len, .. } => *len,
        }
    }

    /// `len` bytes of this source from `offset`, as a source of their own (offsets counted
    /// from `offset`): a slice of the map for a local file, else ranges of this source
    /// fetched as they are asked for.
    pub fn window(&self, offset: u64, len: u64) -> Result<Source> {
        let size = crate::checked::to_usize(self.len(), "file size")?;
        crate::checked::range_within(offset, len, size, "byte range")?;
        let inner = match &self.inner {
            Inner::Local(b) => Inner::Local(b.slice(offset, len)?),
            Inner::Window { outer, base, .. } => {
                Inner::Window { outer: outer.clone(), base: crate::checked::add(*base, offset, "byte range")?, len }
            }
            _ => Inner::Window { outer: Arc::new(self.clone()), base: offset, len },
        };
        Ok(Source { inner, location: self.location.clone() })
    }

    /// Whether the file has no bytes at all.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether ranges are fetched over the network.
    pub fn is_remote(&self) -> bool {
        !matches!(self.inner, Inner::Local(_))
    }

    /// The whole file, when it is local (mapped or in memory): what a reader that walks the
    /// whole file anyway (a legacy `torch.save` pickle stream) or a writer that rewrites it in
    /// place of the original uses.
    pub fn as_local(&self) -> Option<&Bytes> {
        match &self.inner {
            Inner::Local(b) => Some(b),
            _ => None,
        }
    }

    /// Bytes `offset..offset + len`, checked against the file's size. Local: a slice of the
    /// map. Remote: served from what was already fetched when it covers the range, else
    /// fetched (large ranges as several concurrent requests).
    pub fn range(&self, offset: u64, len: u64) -> Result<Bytes> {
        match &self.inner {
            // `slice` checks the range against the bytes.
            Inner::Local(b) => b.slice(offset, len),
            Inner::Counted(b, counter) => {
                if let Some(kept) = counter.kept.get(offset, len)? {
                    return Ok(kept);
                }
                counter.fetched.fetch_add(len, Ordering::Relaxed);
                let copy = Bytes::from_vec(b.slice(offset, len)?.to_vec());
                if counter.keep {
                    counter.kept.keep(offset, &copy);
                }
                Ok(copy)
            }
            #[cfg(feature = "remote")]
            Inner::Remote(o) => {
                self.check_range(offset, len)?;
                o.range(offset, len)
            }
            Inner::Window { outer, base, len: size } => {
                crate::checked::range_within(offset, len, crate::checked::to_usize(*size, "file size")?, "byte range")?;
                outer.range(crate::checked::add(*base, offset, "byte range")?, len)
            }
        }
    }

    /// Several ranges at once (remote: fetched concurrently), in the order asked.
    pub fn ranges(&self, wanted: &[(u64, u64)]) -> Result<Vec<Bytes>> {
        match &self.inner {
            Inner::Local(_) | Inner::Counted(..) => {
                wanted.iter().map(|&(offset, len)| self.range(offset, len)).collect()
            }
            #[cfg(feature = "remote")]
            Inner::Remote(o) => {
                // All checked before any request is made.
                for &(offset, len) in wanted {
                    self.check_range(offset, len)?;
                }
                o.ranges(wanted)
            }
            Inner::Window { outer, base, len: size } => {
                let size = crate::checked::to_usize(*size, "file size")?;
                let mut absolute = Vec::with_capacity(wanted.len());
                for &(offset, len) in wanted {
                    crate::checked::range_within(offset, len, size, "byte range")?;
                    absolute.push((crate::checked::add(*base, offset, "byte range")?, len));
                }
                outer.ranges(&absolute)
            }
        }
    }

    /// The first `min(max, len)` bytes: a speculative read of a header of unknown length.
    pub fn head(&self, max: u64) -> Result<Bytes> {
        self.range(0, max.min(self.len()))
    }

    /// The last `min(max, len)` bytes, and the offset where they start: a speculative read of
    /// a footer of unknown length.
    pub fn tail(&self, max: u64) -> Result<(u64, Bytes)> {
        let n = max.min(self.len());
        let start = self.len() - n;
        Ok((start, self.range(start, n)?))
    }

    /// The whole file in memory (local: the map itself; remote: downloaded in concurrent
    /// ranges).
    pub fn whole(&self) -> Result<Bytes> {
        self.range(0, self.len())
    }

    /// Bytes fetched over the network so far (0 for a local file): what tests and
    /// benchmarks count.
    pub fn bytes_fetched(&self) -> u64 {
        match &self.inner {
            Inner::Local(_) => 0,
            Inner::Counted(_, counter) => counter.fetched.load(Ordering::Relaxed),
            #[cfg(feature = "remote")]
            Inner::Remote(o) => o.bytes_fetched(),
            Inner::Window { outer, .. } => outer.bytes_fetched(),
        }
    }

    /// `offset..offset + len` against the file's size (a remote object's; bytes in memory are
    /// checked by [`Bytes::slice`]).
    #[cfg(feature = "remote")]
    fn check_range(&self, offset: u64, len: u64) -> Result<()> {
        let size = usize::try_from(self.len())
            .map_err(|_| Error::unsupported("a file larger than this machine's address space"))?;
        crate::checked::range_within(offset, len, size, "byte range").map(drop)
    }
}

impl From<Bytes> for Source {
    fn from(bytes: Bytes) -> Self {
        Source::local(bytes)
    }
}

impl std::fmt::Debug for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.inner {
            Inner::Local(b) => write!(f, "Source::Local({b:?})"),
            Inner::Counted(b, _) => write!(f, "Source::Counted({b:?})"),
            #[cfg(feature = "remote")]
            Inner::Remote(o) => write!(f, "Source::Remote({}, {} bytes)", o.url(), o.len()),
            Inner::Window { outer, base, len } => write!(f, "Source::Window({outer:?}, {base}, {len} bytes)"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_read_their_range_of_the_source_and_no_more() {
        let bytes = Bytes::from_vec((0..=255u8).cycle().take(10_000).collect());
        let local = Source::local(bytes.clone()).window(100, 1000).unwrap();
        assert!(local.as_local().is_some());
        assert_eq!(&local.range(0, 3).unwrap()[..], &[100, 101, 102]);
        let counted = Source::counted_exact(bytes);
        let w = counted.window(1000, 5000).unwrap();
        assert_eq!((w.len(), w.is_remote()), (5000, true));
        assert_eq!(&w.range(10, 2).unwrap()[..], &[(1010 % 256) as u8, (1011 % 256) as u8]);
        let inner = w.window(4000, 1000).unwrap();
        assert_eq!(inner.range(999, 1).unwrap()[0], (5999 % 256) as u8);
        let both = inner.ranges(&[(0, 1), (500, 2)]).unwrap();
        assert_eq!((both[0][0], both[1][1]), ((5000 % 256) as u8, (5501 % 256) as u8));
        assert_eq!(counted.bytes_fetched(), 2 + 1 + 3);
        // Nothing outside the window, whatever the source holds beyond it.
        assert!(w.range(4999, 2).is_err() && inner.range(1000, 1).is_err());
        assert!(w.window(4000, 1001).is_err() && counted.window(u64::MAX, 2).is_err());
    }

    #[test]
    fn urls_are_told_from_paths() {
        for url in ["http://h/x.zt", "https://h/a/b", "s3://bucket/key", "gs://b/k", "az://c/k", "S3://B/K"] {
            assert!(is_url(url), "{url}");
        }
        for path in ["model.zt", "/tmp/x", "C:\\x", "ftp://h/x", "http://", "./s3://x"] {
            assert!(!is_url(path), "{path}");
        }
    }

    #[test]
    fn local_ranges_are_slices_of_the_map_and_checked() {
        let src = Source::local(Bytes::from_vec((0u8..100).collect()));
        let whole = src.whole().unwrap();
        let r = src.range(10, 5).unwrap();
        assert_eq!(&*r, &[10, 11, 12, 13, 14]);
        assert!(r.shares_owner(&whole));
        assert!(src.range(99, 2).is_err());
        assert!(src.range(u64::MAX, 2).is_err());
        let (start, tail) = src.tail(30).unwrap();
        assert_eq!((start, tail.len()), (70, 30));
        assert_eq!(src.head(1000).unwrap().len(), 100);
        let parts = src.ranges(&[(0, 1), (50, 2)]).unwrap();
        assert_eq!((&*parts[0], &*parts[1]), (&[0u8][..], &[50u8, 51][..]));
        assert!(src.ranges(&[(0, 1), (100, 1)]).is_err());
        assert_eq!(src.bytes_fetched(), 0);
    }

    #[test]
    fn counted_sources_count_and_copy() {
        let bytes = Bytes::from_vec((0u8..100).collect());
        let src = Source::counted(bytes.clone());
        assert!(src.as_local().is_none() && src.is_remote());
        let r = src.range(10, 5).unwrap();
        assert!(!r.shares_owner(&bytes));
        src.ranges(&[(0, 1), (50, 2)]).unwrap();
        assert_eq!(src.bytes_fetched(), 8);
        // Part of a range already fetched is served from it.
        assert_eq!(&*src.range(11, 3).unwrap(), &[11, 12, 13]);
        assert_eq!(src.bytes_fetched(), 8);
    }
}
