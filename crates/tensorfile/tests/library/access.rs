//! Opening a local file mapped or read whole (direct I/O): the same tensors either way, the
//! whole-file read owning its bytes.

use std::path::PathBuf;

use tensorfile::{Access, TensorFile};

fn fixtures() -> Vec<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures");
    ["safetensors/dtypes.safetensors", "safetensors/empty.safetensors", "zt/python/dtypes.zt", "pytorch/dtypes.pt"]
        .iter()
        .map(|p| root.join(p))
        .filter(|p| p.exists())
        .collect()
}

#[test]
fn every_access_reads_the_same_tensors() {
    let files = fixtures();
    assert_eq!(files.len(), 4, "fixtures missing: {files:?}");
    for path in files {
        let mapped = TensorFile::open(&path).unwrap();
        for access in [Access::ReadWhole, Access::ReadWholeIfCold] {
            let f = tensorfile::OpenOptions::new().access(access).open(&path).unwrap();
            assert_eq!(f.entries().len(), mapped.entries().len(), "{}", path.display());
            for (i, e) in f.entries().iter().enumerate() {
                assert_eq!(e.info(), mapped.entries()[i].info());
                let (a, b) = (f.read_verified(i).unwrap(), mapped.read_verified(i).unwrap());
                assert_eq!(a.as_dense().ok(), b.as_dense().ok(), "{}: {}", path.display(), e.info().name());
                if access == Access::ReadWhole
                    && let Ok(d) = a.as_dense()
                {
                    assert!(!d.is_mapped(), "a whole-file read owns its bytes");
                }
            }
        }
    }
}

/// The probe that picks the whole-file read: a file just written is in the page cache, and
/// once dropped from it (where the filesystem has a page cache of its own to drop) it is not.
#[cfg(target_os = "linux")]
#[test]
fn the_cache_probe_tells_cached_from_dropped() {
    use rustix::fs::{Advice, fadvise};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f.bin");
    std::fs::write(&path, vec![7u8; 4 << 20]).unwrap();
    assert!(tensorfile::source::is_cached(&path));
    let file = std::fs::File::open(&path).unwrap();
    file.sync_all().unwrap();
    fadvise(&file, 0, None, Advice::DontNeed).unwrap();
    const TMPFS_MAGIC: i64 = 0x0102_1994;
    // f_type's width differs between architectures.
    #[allow(clippy::unnecessary_cast)]
    let in_memory = rustix::fs::fstatfs(&file).map(|s| s.f_type as i64 == TMPFS_MAGIC).unwrap_or(true);
    assert_eq!(tensorfile::source::is_cached(&path), in_memory);
}
