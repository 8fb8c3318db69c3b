//! Each format's own fields, read afresh from the sample: where its header says the file
//! ends. Bounded by the sample; no allocation is sized by the file.

use super::{HDF5, Need, ZIP, ZIP_END, le};
use crate::diagnose::Sample;
use crate::model::quant::GgmlType;

/// 8-byte header length, a JSON header whose entries' `data_offsets` end where the data does.
pub(super) fn safetensors(s: &Sample) -> Option<Need> {
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

/// Magic, version, header length, then a dict whose `descr` and `shape` size the data.
pub(super) fn npy(s: &Sample) -> Option<Need> {
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

/// A walk over the first bytes of a GGUF file; `None` from a read means the bytes ran out.
struct Walk<'a> {
    b: &'a [u8],
    pos: usize,
    big: bool,
}

impl Walk<'_> {
    fn take(&mut self, n: u64) -> Option<&[u8]> {
        let end = self.pos.checked_add(usize::try_from(n).ok()?)?;
        let out = self.b.get(self.pos..end)?;
        self.pos = end;
        Some(out)
    }

    fn uint(&mut self, n: usize) -> Option<u64> {
        let big = self.big;
        let bytes = self.take(n as u64)?;
        let order: Box<dyn Iterator<Item = &u8>> =
            if big { Box::new(bytes.iter()) } else { Box::new(bytes.iter().rev()) };
        Some(order.fold(0u64, |v, &x| (v << 8) | u64::from(x)))
    }

    fn string(&mut self) -> Option<&[u8]> {
        let n = self.uint(8)?;
        self.take(n)
    }

    /// Skip a value of GGUF type `t` (arrays nest at most `depth` deep); `Err` for a type
    /// GGUF does not define.
    fn value(&mut self, t: u64, depth: u32) -> Result<Option<()>, ()> {
        let fixed = match t {
            0 | 1 | 7 => 1,
            2 | 3 => 2,
            4..=6 => 4,
            10..=12 => 8,
            8 => return Ok(self.string().map(drop)),
            9 if depth > 0 => {
                let (Some(inner), Some(count)) = (self.uint(4), self.uint(8)) else { return Ok(None) };
                for _ in 0..count {
                    match self.value(inner, depth - 1)? {
                        Some(()) => {}
                        None => return Ok(None),
                    }
                }
                return Ok(Some(()));
            }
            _ => return Err(()),
        };
        Ok(self.take(fixed).map(drop))
    }
}

/// Magic, version, counts, key/values, tensor infos; then data aligned to
/// `general.alignment` (32 unless stated), each tensor at its offset with its blocks' bytes.
pub(super) fn gguf(s: &Sample) -> Option<Need> {
    let h = s.head();
    let version = le(h, 4, 4);
    let big = version.is_some_and(|v| v & 0xFFFF == 0 && v != 0);
    let mut w = Walk { b: h, pos: 4, big };
    let ran_out = || s.whole().then_some(Need::InHeader);
    let Some((_, tensors, kvs)) = w.uint(4).zip(w.uint(8)).zip(w.uint(8)).map(|((v, t), k)| (v, t, k)) else {
        return ran_out();
    };
    let mut alignment = 32u64;
    for _ in 0..kvs {
        let Some(key) = w.string().map(<[u8]>::to_vec) else { return ran_out() };
        let Some(t) = w.uint(4) else { return ran_out() };
        let at = w.pos;
        match w.value(t, 4) {
            Err(()) => return None,
            Ok(None) => return ran_out(),
            Ok(Some(())) if key == b"general.alignment" && t == 4 => {
                alignment = Walk { b: h, pos: at, big }.uint(4)?;
            }
            Ok(Some(())) => {}
        }
    }
    let mut ends = Vec::new();
    for _ in 0..tensors {
        let (Some(()), Some(rank)) = (w.string().map(drop), w.uint(4)) else { return ran_out() };
        if rank > crate::limits::MAX_RANK as u64 {
            return None;
        }
        let mut numel = 1u64;
        for _ in 0..rank {
            let Some(d) = w.uint(8) else { return ran_out() };
            numel = numel.checked_mul(d)?;
        }
        let (Some(t), Some(offset)) = (w.uint(4), w.uint(8)) else { return ran_out() };
        let t = GgmlType::from_id(u32::try_from(t).ok()?)?;
        let blocks = numel.checked_div(t.block_elements())?;
        ends.push(offset.checked_add(blocks.checked_mul(t.block_bytes())?)?);
    }
    let index_end = w.pos as u64;
    if alignment == 0 {
        return None;
    }
    let data = index_end.checked_next_multiple_of(alignment)?;
    let last = ends.into_iter().max().map_or(Some(index_end), |e| data.checked_add(e))?;
    Some(Need::Data(last))
}

/// `eh00` at byte 8: program size, segment base offset, segment data size.
pub(super) fn pte(s: &Sample) -> Option<Need> {
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

/// `FH01` at byte 8: flatbuffer offset and size, segment base offset and size.
pub(super) fn ptd(s: &Sample) -> Option<Need> {
    let h = s.head();
    if s.len() < 48 {
        return Some(Need::Header(48));
    }
    let flatbuffer = le(h, 16, 8)?.checked_add(le(h, 24, 8)?)?;
    let segments = le(h, 32, 8)?.checked_add(le(h, 40, 8)?)?;
    Some(Need::Data(flatbuffer.max(segments)))
}

/// The superblock (at 0 or after a user block of 512·2^k bytes) records the end of the file,
/// user block included.
pub(super) fn hdf5(s: &Sample) -> Option<Need> {
    let h = s.head();
    let at = hdf5_at(h)?;
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
pub(super) fn hdf5_at(h: &[u8]) -> Option<usize> {
    let mut at = 0usize;
    while !h.get(at..)?.starts_with(HDF5) {
        at = if at == 0 { 512 } else { at.checked_mul(2)? };
    }
    Some(at)
}

/// A protobuf varint at the start of `b`: its value and length; `None` when cut short or
/// longer than ten bytes.
fn varint(b: &[u8]) -> Option<(u64, usize)> {
    let mut v = 0u64;
    for (i, &byte) in b.iter().take(10).enumerate() {
        v |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Some((v, i + 1));
        }
    }
    None
}

/// The model's top-level protobuf fields: one whose length runs past the end says how far
/// the file reaches at least.
pub(super) fn onnx(s: &Sample) -> Option<Need> {
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

/// `ZTEN0001`, blobs, a CBOR array of entries, and its length as the last 8 bytes.
pub(super) fn zt01(s: &Sample) -> Option<Need> {
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

/// A zip archive whose end record is missing: its local entries, walked from the start, say
/// how far the archive reaches at least.
pub(super) fn zip(s: &Sample) -> Option<Need> {
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
    while h.get(pos..)?.starts_with(ZIP) {
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
