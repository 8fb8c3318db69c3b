//! How long a `.pte` program should be, read leniently for `diagnose`.

use crate::error::Need;
use crate::formats::extent::le;
use crate::source::Sample;

/// `eh00` at byte 8: program size, segment base offset, segment data size.
pub(super) fn measure(s: &Sample) -> Option<Need> {
    let h = s.head();
    if s.len() < 8 {
        return Some(Need::Header(8));
    }
    if h.get(8..12)? != b"eh00" {
        return None;
    }
    let length = le(h, 12, 4)?;
    let end = 8 + length.max(24);
    if end > s.len() {
        return Some(Need::Header(end));
    }
    let program = le(h, 16, 8)?;
    let segments = le(h, 24, 8)?.checked_add(if length >= 32 { le(h, 32, 8)? } else { 0 })?;
    Some(Need::Data(program.max(segments)))
}
