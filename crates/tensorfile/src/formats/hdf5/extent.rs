//! How long an HDF5 file should be, read leniently for `diagnose`, and where its superblock
//! is when a user block comes first.

use super::superblock::{MAX_USER_BLOCK, SIGNATURE};
use crate::error::Need;
use crate::formats::Probe;
use crate::formats::extent::le;
use crate::source::Sample;

/// Whether the file detection probes is HDF5: the signature at 0, or, once detection looks
/// past the head, after a user block of 512·2^k bytes (at most [`MAX_USER_BLOCK`]).
pub(super) fn recognise(probe: &Probe<'_>) -> bool {
    if probe.head().starts_with(SIGNATURE) {
        return true;
    }
    let Some(len) = probe.file_len() else { return false };
    let mut at = 512u64;
    while at <= MAX_USER_BLOCK && at.saturating_add(8) <= len {
        if probe.bytes_at(at, 8).is_some_and(|b| b[..] == SIGNATURE[..]) {
            return true;
        }
        at *= 2;
    }
    false
}

/// The superblock (at 0 or after a user block of 512·2^k bytes) records the end of the file,
/// user block included.
pub(super) fn measure(s: &Sample) -> Option<Need> {
    let h = s.head();
    let at = signature_at(h)?;
    let version = *h.get(at + 8)?;
    let (offset_size, base_at) = match version {
        0 => (*h.get(at + 13)?, at + 24),
        1 => (*h.get(at + 13)?, at + 28),
        2 | 3 => (*h.get(at + 9)?, at + 12),
        _ => return None,
    };
    let o = usize::from(offset_size);
    if !matches!(o, 2 | 4 | 8) {
        return None;
    }
    let eof_at = base_at + 2 * o;
    let Some(eof) = le(h, eof_at, o) else { return Some(Need::Header((eof_at + o) as u64)) };
    (eof != u64::MAX >> (64 - 8 * o as u32)).then_some(Need::Data(eof))
}

/// Where the HDF5 signature is in `h`: at 0, or after a user block of 512·2^k bytes.
pub(super) fn signature_at(h: &[u8]) -> Option<usize> {
    let mut at = 0usize;
    while !h.get(at..)?.starts_with(SIGNATURE) {
        at = if at == 0 { 512 } else { at.checked_mul(2)? };
    }
    Some(at)
}
