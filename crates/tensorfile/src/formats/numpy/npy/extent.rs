//! How long a `.npy` file should be, read leniently for `diagnose`.

use crate::error::Need;
use crate::formats::extent::le;
use crate::source::Sample;

/// Magic, version, header length, then a dict whose `descr` and `shape` size the data.
pub(super) fn measure(s: &Sample) -> Option<Need> {
    let h = s.head();
    let major = *h.get(6)?;
    let (dict_at, dict_len) = if major == 1 { (10, le(h, 8, 2)) } else { (12, le(h, 8, 4)) };
    let Some(dict_len) = dict_len else { return Some(Need::Header(dict_at)) };
    let end = dict_at + dict_len;
    if end > s.len() {
        return Some(Need::Header(end));
    }
    let dict = String::from_utf8_lossy(h.get(dict_at as usize..end as usize)?).into_owned();
    let value_of = |key: &str| dict.split_once(key).map(|(_, rest)| rest.trim_start_matches([':', ' ']).to_string());
    let shape = value_of("'shape'")?;
    let shape = shape.strip_prefix('(')?.split(')').next()?;
    let mut numel = 1u64;
    for d in shape.split(',').map(str::trim).filter(|d| !d.is_empty()) {
        numel = numel.checked_mul(d.parse().ok()?)?;
    }
    let descr = value_of("'descr'")?;
    let descr = descr.strip_prefix(['\'', '"'])?.split(['\'', '"']).next()?;
    let kind = descr.trim_start_matches(['<', '>', '|', '=']);
    // Counted in bytes for every kind but unicode (`U`: 4 bytes a character).
    let count: u64 = kind.get(1..)?.parse().ok()?;
    let item = if kind.starts_with('U') { count.checked_mul(4)? } else { count };
    Some(Need::Data(end.checked_add(numel.checked_mul(item)?)?))
}
