//! How long a safetensors file should be, read leniently for `diagnose`.

use crate::error::Need;
use crate::formats::extent::le;
use crate::source::Sample;

/// 8-byte header length, a JSON header whose entries' `data_offsets` end where the data does.
pub(super) fn measure(s: &Sample) -> Option<Need> {
    let h = s.head();
    if s.len() < 8 {
        return Some(Need::Header(8));
    }
    let n = le(h, 0, 8)?;
    if n > crate::limits::MAX_SAFETENSORS_HEADER || h.get(8).is_some_and(|&b| b != b'{') {
        return None;
    }
    let end = 8 + n;
    if end > s.len() {
        return Some(Need::Header(end));
    }
    let header: serde_json::Value = serde_json::from_slice(h.get(8..end as usize)?).ok()?;
    let data = header
        .as_object()?
        .iter()
        .filter(|(k, _)| *k != "__metadata__")
        .filter_map(|(_, v)| v.get("data_offsets")?.get(1)?.as_u64())
        .max()
        .unwrap_or(0);
    Some(Need::Data(end.checked_add(data)?))
}
