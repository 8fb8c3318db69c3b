//! The body of the fuzz targets (`fuzz/`) and of the tests that replay their findings: what
//! only this workspace's tests and fuzz targets see (feature `internals`), free to call every
//! layer of the library.

use crate::formats::Format;
use crate::source::Bytes;

/// Open `data` (as `format`, or detected), gather what `info` shows, verify it, and decode
/// every entry with checksums verified, asserting that what decodes has exactly its declared
/// size. Errors are fine; panics are bugs. The body of the fuzz targets (`fuzz/`) and of the regression test that replays
/// their findings on stable Rust.
pub fn exercise(data: &[u8], format: Option<Format>) {
    let bytes = Bytes::from_vec(data.to_vec());
    let opened = match format {
        Some(f) => crate::TensorFile::from_bytes_as(bytes, f),
        None => crate::TensorFile::from_bytes(bytes),
    };
    let Ok(file) = opened else { return };
    // What `info` and `report` show (the report holds all of info's facts), without the
    // statistics: those read what the loop below reads.
    let no_stats = crate::report::ReportOptions { stats: false, ..Default::default() };
    let _ = crate::report::gather(&file, "fuzz", &no_stats, None, &|_| {});
    let _ = file.verify();
    for (i, entry) in file.entries().iter().enumerate() {
        let _ = entry.info().nbytes();
        if let Ok(d) = file.read_verified(i) {
            assert_eq!(d.len(), entry.nbytes(), "entry {:?} decoded to a different size", entry.info().name());
        }
    }
}
