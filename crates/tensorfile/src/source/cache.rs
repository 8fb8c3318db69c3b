//! A local cache of the ranges fetched from remote objects: a second load of the same object
//! reads its ranges from a folder instead of the network. Each range is a file of its own,
//! `<folder>/<object>/<offset>-<length>`, where `<object>` is the sha256 of the URL, the
//! object's size and its ETag: an object changed since (another ETag or size) is another
//! folder, never a mix of two versions. A range is written under a temporary name and renamed
//! into place, so that two processes filling the cache at once each see whole ranges or none;
//! one read is checked for its length. When the cache passes its size limit, the ranges read
//! longest ago (by modification time, which a read renews) are removed, a file in use by
//! another process staying readable by it until it closes the file.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

use sha2::{Digest, Sha256};

use crate::error::{Error, Result};

/// The environment variable naming the cache folder, where [`set_remote_cache`] gave none.
pub const CACHE_DIR_ENV: &str = "TENSORFILE_CACHE_DIR";
/// The environment variable giving the cache's size limit in bytes (default
/// [`DEFAULT_CACHE_LIMIT`]).
pub const CACHE_LIMIT_ENV: &str = "TENSORFILE_CACHE_LIMIT";
/// The cache's size limit when none is given: 64 GiB.
pub const DEFAULT_CACHE_LIMIT: u64 = 64 << 30;

/// Where remote ranges are cached, and how many bytes the cache may hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteCache {
    /// The folder (created when missing).
    pub dir: PathBuf,
    /// The most bytes of ranges it keeps.
    pub limit: u64,
}

static GIVEN: Mutex<Option<Option<RemoteCache>>> = Mutex::new(None);

/// Cache the ranges of every remote object opened from now on in `cache` (`None`: no cache,
/// whatever [`CACHE_DIR_ENV`] says).
pub fn set_remote_cache(cache: Option<RemoteCache>) {
    *GIVEN.lock().unwrap_or_else(|e| e.into_inner()) = Some(cache);
}

/// The cache remote objects opened now use: the one set, else the one the environment names.
pub(crate) fn current() -> Result<Option<RemoteCache>> {
    if let Some(given) = GIVEN.lock().unwrap_or_else(|e| e.into_inner()).clone() {
        return Ok(given);
    }
    let Some(dir) = std::env::var_os(CACHE_DIR_ENV).filter(|d| !d.is_empty()) else { return Ok(None) };
    let limit = match std::env::var(CACHE_LIMIT_ENV) {
        Ok(text) => crate::sizes::parse_size(&text)
            .map_err(|e| Error::usage(format!("{CACHE_LIMIT_ENV}: {}", e.detail())))?,
        Err(_) => DEFAULT_CACHE_LIMIT,
    };
    Ok(Some(RemoteCache { dir: PathBuf::from(dir), limit }))
}

/// One object's ranges in the cache.
#[derive(Debug)]
pub(crate) struct ObjectCache {
    folder: PathBuf,
    root: PathBuf,
    limit: u64,
}

impl ObjectCache {
    /// The cache of the object at `url` of `len` bytes and ETag `etag`; `None` for an object
    /// with no ETag (a change could not be told).
    pub(crate) fn new(cache: &RemoteCache, url: &str, len: u64, etag: Option<&str>) -> Option<ObjectCache> {
        let etag = etag?;
        let mut h = Sha256::new();
        for part in [url.as_bytes(), &len.to_le_bytes(), etag.as_bytes()] {
            h.update((part.len() as u64).to_le_bytes());
            h.update(part);
        }
        let key = hex::encode(&h.finalize()[..16]);
        Some(ObjectCache { folder: cache.dir.join(key), root: cache.dir.clone(), limit: cache.limit })
    }

    fn path(&self, offset: u64, len: u64) -> PathBuf {
        self.folder.join(format!("{offset}-{len}"))
    }

    /// Range `offset..offset + dst.len()` read from the cache into `dst`; false when it is
    /// not there whole (any error reading it is a miss).
    pub(crate) fn read(&self, offset: u64, dst: &mut [u8]) -> bool {
        use std::io::Read;
        let path = self.path(offset, dst.len() as u64);
        let Ok(mut file) = std::fs::File::open(&path) else { return false };
        if file.metadata().map(|m| m.len()).ok() != Some(dst.len() as u64) || file.read_exact(dst).is_err() {
            return false;
        }
        // Read now: the last to be evicted.
        let _ = file.set_modified(SystemTime::now());
        true
    }

    /// Keep `bytes`, range `offset..`, in the cache, then hold the cache to its limit; a
    /// failure to write only leaves the range out (the load does not depend on the cache).
    pub(crate) fn write(&self, offset: u64, bytes: &[u8]) {
        if bytes.len() as u64 > self.limit || std::fs::create_dir_all(&self.folder).is_err() {
            return;
        }
        let path = self.path(offset, bytes.len() as u64);
        let written = tempfile::NamedTempFile::new_in(&self.folder).and_then(|mut tmp| {
            std::io::Write::write_all(&mut tmp, bytes)?;
            tmp.persist(&path).map_err(|e| e.error)?;
            Ok(())
        });
        if written.is_ok() {
            let _ = evict(&self.root, self.limit);
        }
    }
}

/// Remove the ranges read longest ago until the cache under `root` holds at most `limit`
/// bytes.
fn evict(root: &Path, limit: u64) -> std::io::Result<()> {
    let mut files = Vec::new();
    let mut total = 0u64;
    for object in std::fs::read_dir(root)?.flatten() {
        let Ok(ranges) = std::fs::read_dir(object.path()) else { continue };
        for range in ranges.flatten() {
            let Ok(meta) = range.metadata() else { continue };
            if meta.is_file() {
                total = total.saturating_add(meta.len());
                files.push((meta.modified().unwrap_or(SystemTime::UNIX_EPOCH), meta.len(), range.path()));
            }
        }
    }
    if total <= limit {
        return Ok(());
    }
    files.sort();
    for (_, len, path) in files {
        if total <= limit {
            break;
        }
        if std::fs::remove_file(&path).is_ok() {
            total -= len;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_come_back_whole_and_another_version_is_another_folder() {
        let tmp = tempfile::tempdir().unwrap();
        let cache = RemoteCache { dir: tmp.path().to_path_buf(), limit: 1000 };
        let v1 = ObjectCache::new(&cache, "http://h/o", 100, Some("\"v1\"")).unwrap();
        let v2 = ObjectCache::new(&cache, "http://h/o", 100, Some("\"v2\"")).unwrap();
        assert!(ObjectCache::new(&cache, "http://h/o", 100, None).is_none(), "no ETag, no cache");
        v1.write(10, b"abcdef");
        let mut buf = [0u8; 6];
        assert!(v1.read(10, &mut buf));
        assert_eq!(&buf, b"abcdef");
        assert!(!v2.read(10, &mut buf), "another ETag is another object");
        let mut short = [0u8; 5];
        assert!(!v1.read(10, &mut short), "only the range as cached");
    }

    #[test]
    fn the_limit_removes_what_was_read_longest_ago() {
        let tmp = tempfile::tempdir().unwrap();
        let cache = RemoteCache { dir: tmp.path().to_path_buf(), limit: 250 };
        let o = ObjectCache::new(&cache, "s3://b/k", 1000, Some("e")).unwrap();
        o.write(0, &[1; 100]);
        std::thread::sleep(std::time::Duration::from_millis(20));
        o.write(100, &[2; 100]);
        std::thread::sleep(std::time::Duration::from_millis(20));
        let mut buf = [0u8; 100];
        assert!(o.read(0, &mut buf), "read again: now the newest");
        std::thread::sleep(std::time::Duration::from_millis(20));
        o.write(200, &[3; 100]);
        assert!(o.read(0, &mut buf));
        assert!(o.read(200, &mut buf));
        assert!(!o.read(100, &mut buf), "the range read longest ago went");
        o.write(0, &[0; 300]);
        assert!(!o.read(0, &mut [0u8; 300]), "a range over the limit is not kept");
    }
}
