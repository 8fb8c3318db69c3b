//! How long a `.ptd` file should be, read leniently for `diagnose`.

use crate::error::Need;
use crate::formats::extent::le;
use crate::source::Sample;

/// `FH01` at byte 8: flatbuffer offset and size, segment base offset and size.
pub(super) fn measure(s: &Sample) -> Option<Need> {
    let h = s.head();
    if s.len() < 48 {
        return Some(Need::Header(48));
    }
    let flatbuffer = le(h, 16, 8)?.checked_add(le(h, 24, 8)?)?;
    let segments = le(h, 32, 8)?.checked_add(le(h, 40, 8)?)?;
    Some(Need::Data(flatbuffer.max(segments)))
}
