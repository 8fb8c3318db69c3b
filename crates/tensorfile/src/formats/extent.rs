//! What the units' lenient measures ([`Extent`](super::unit::Extent)) share: little-endian
//! reads bounded by the bytes at hand, and the measure of a zip archive, which every zip-based
//! format's unit uses.

use crate::error::Need;
use crate::source::Sample;

/// The first bytes of a zip archive (a local file header): the magic every zip-based format
/// has.
pub(crate) const ZIP_MAGIC: &[u8] = b"PK\x03\x04";
/// The start of a zip archive's end record.
const ZIP_END: &[u8] = b"PK\x05\x06";

/// Little-endian unsigned integer of `n` bytes (at most 8) at `at`; `None` when `b` ends
/// first.
pub(crate) fn le(b: &[u8], at: usize, n: usize) -> Option<u64> {
    let bytes = b.get(at..at.checked_add(n)?)?;
    Some(bytes.iter().rev().fold(0u64, |v, &x| (v << 8) | u64::from(x)))
}

/// A zip archive whose end record is missing: its local entries, walked from the start, say
/// how far the archive reaches at least.
pub(crate) fn zip_archive(s: &Sample) -> Option<Need> {
    let t = s.tail();
    if let Some(at) = t.windows(ZIP_END.len()).rposition(|w| w == ZIP_END) {
        // The end record (22 bytes and its comment) whole: not cut short at the end.
        let comment = le(t, at + 20, 2).unwrap_or(u64::MAX);
        return ((at as u64).saturating_add(22).saturating_add(comment) > t.len() as u64).then_some(Need::IndexMissing);
    }
    if !s.whole() {
        return Some(Need::IndexMissing);
    }
    let h = s.head();
    let mut pos = 0usize;
    while h.get(pos..)?.starts_with(ZIP_MAGIC) {
        let Some(fixed) = h.get(pos..pos + 30) else { return Some(Need::AtLeast(pos as u64 + 30)) };
        let flags = le(fixed, 6, 2)?;
        let (names, extras) = (le(fixed, 26, 2)? as usize, le(fixed, 28, 2)? as usize);
        let data_at = pos + 30 + names + extras;
        if data_at > h.len() {
            return Some(Need::AtLeast(data_at as u64));
        }
        if flags & 8 != 0 {
            // Sizes follow the data: the walk cannot go on.
            return Some(Need::IndexMissing);
        }
        let mut size = le(fixed, 18, 4)?;
        if size == 0xFFFF_FFFF {
            size = zip64_size(&h[pos + 30 + names..data_at], le(fixed, 22, 4)? == 0xFFFF_FFFF)?;
        }
        let end = (data_at as u64).checked_add(size)?;
        if end > s.len() {
            return Some(Need::AtLeast(end));
        }
        pos = end as usize;
    }
    Some(Need::IndexMissing)
}

/// The compressed size in a local header's zip64 extra field (after the uncompressed size
/// when that is there too).
fn zip64_size(mut extra: &[u8], has_uncompressed: bool) -> Option<u64> {
    while extra.len() >= 4 {
        let (id, n) = (le(extra, 0, 2)?, le(extra, 2, 2)? as usize);
        let body = extra.get(4..4 + n)?;
        if id == 1 {
            return le(body, if has_uncompressed { 8 } else { 0 }, 8);
        }
        extra = &extra[4 + n..];
    }
    None
}
