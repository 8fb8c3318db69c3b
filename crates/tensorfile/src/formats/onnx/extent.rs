//! How long an ONNX model should be, read leniently for `diagnose`.

use super::recognise::varint;
use crate::error::Need;
use crate::source::Sample;

/// The model's top-level protobuf fields: one whose length runs past the end says how far
/// the file reaches at least.
pub(super) fn measure(s: &Sample) -> Option<Need> {
    if !s.whole() {
        return None;
    }
    let b = s.head();
    let mut pos = 0usize;
    while pos < b.len() {
        let Some((tag, n)) = varint(&b[pos..]) else { return (b.len() - pos < 10).then_some(Need::InHeader) };
        if tag >> 3 == 0 {
            return None;
        }
        pos += n;
        let end = match tag & 7 {
            0 => match varint(&b[pos..]) {
                Some((_, n)) => pos as u64 + n as u64,
                None => return (b.len() - pos < 10).then_some(Need::InHeader),
            },
            1 => pos as u64 + 8,
            5 => pos as u64 + 4,
            2 => match varint(&b[pos..]) {
                Some((len, n)) => (pos as u64 + n as u64).checked_add(len)?,
                None => return (b.len() - pos < 10).then_some(Need::InHeader),
            },
            _ => return None,
        };
        if end > b.len() as u64 {
            return Some(Need::AtLeast(end));
        }
        pos = end as usize;
    }
    None
}
