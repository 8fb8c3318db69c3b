//! How long a zTensor v0.1 file should be, read leniently for `diagnose`.

use crate::error::Need;
use crate::formats::extent::le;
use crate::source::Sample;

/// `ZTEN0001`, blobs, a CBOR array of entries, and its length as the last 8 bytes.
pub(super) fn measure(s: &Sample) -> Option<Need> {
    let t = s.tail();
    let len = le(t, t.len().checked_sub(8)?, 8)?;
    // The index must fit between the magic and its length, and start as a CBOR array.
    let Some(start) = s.len().checked_sub(16).filter(|room| len <= *room).map(|_| s.len() - 8 - len) else {
        return Some(Need::IndexMissing);
    };
    let in_tail = usize::try_from(start - (s.len() - t.len() as u64)).ok()?;
    let first = *t.get(in_tail)?;
    (!(0x80..=0x9f).contains(&first)).then_some(Need::IndexMissing)
}
