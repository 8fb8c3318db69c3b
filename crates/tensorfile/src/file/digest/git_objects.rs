//! Small objects of a Git repository, read as git stores them: loose (`objects/ab/cdef…`,
//! zlib of `blob <size>\0<bytes>`) or in a pack (`objects/pack/pack-*.idx` version 2 gives
//! each object's offset in the `.pack`; an entry there is a type-and-size header and zlib
//! data, either whole or a delta against another object, by offset or by id). Only objects of
//! at most a given size are read (LFS pointers), every size and offset checked, and delta
//! chains followed to a bounded depth.

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use flate2::read::ZlibDecoder;

/// Bytes of a sha1 object id.
pub const OID_LEN: usize = 20;

/// The most deltas followed to reach a whole object (git's default limit is 50).
const MAX_DELTA_CHAIN: usize = 64;

/// The most packs looked in.
const MAX_PACKS: usize = 4096;

/// Pack entry types.
const OBJ_BLOB: u8 = 3;
const OBJ_OFS_DELTA: u8 = 6;
const OBJ_REF_DELTA: u8 = 7;

/// A repository's `objects` folder.
pub struct ObjectStore {
    dir: PathBuf,
}

impl ObjectStore {
    pub fn new(dir: PathBuf) -> ObjectStore {
        ObjectStore { dir }
    }

    /// The bytes of blob `oid` when it is at most `limit` bytes.
    pub fn blob(&self, oid: &[u8; OID_LEN], limit: usize) -> Option<Vec<u8>> {
        self.loose(oid, limit).or_else(|| self.packed(oid, limit, 0))
    }

    fn loose(&self, oid: &[u8; OID_LEN], limit: usize) -> Option<Vec<u8>> {
        let hex = hex::encode(oid);
        let raw = read_small(&self.dir.join(&hex[..2]).join(&hex[2..]), 1 << 20)?;
        // `blob <decimal size>\0` then the bytes.
        let head_limit = 32;
        let whole = inflate(&raw, head_limit + limit)?;
        let nul = whole.iter().take(head_limit).position(|&b| b == 0)?;
        let size: usize = std::str::from_utf8(whole[..nul].strip_prefix(b"blob ")?).ok()?.parse().ok()?;
        let body = &whole[nul + 1..];
        (body.len() == size && size <= limit).then(|| body.to_vec())
    }

    fn packed(&self, oid: &[u8; OID_LEN], limit: usize, depth: usize) -> Option<Vec<u8>> {
        let listing = std::fs::read_dir(self.dir.join("pack")).ok()?;
        for item in listing.flatten().take(MAX_PACKS) {
            let idx_path = item.path();
            if idx_path.extension().is_none_or(|e| e != "idx") {
                continue;
            }
            let Some(offset) = PackIndex::find_in(&idx_path, oid) else { continue };
            let pack = Pack { file: std::fs::File::open(idx_path.with_extension("pack")).ok()?, store: self };
            return pack.object(offset, limit, depth).filter(|(kind, _)| *kind == OBJ_BLOB).map(|(_, b)| b);
        }
        None
    }
}

/// A pack index, version 2: `\377tOc`, version, 256 fan-out counts, the sorted ids, their
/// CRCs, their 31-bit offsets (the top bit set: an index into the 64-bit offsets that follow).
struct PackIndex;

impl PackIndex {
    fn find_in(path: &Path, oid: &[u8; OID_LEN]) -> Option<u64> {
        let mut file = std::fs::File::open(path).ok()?;
        let mut head = [0u8; 8 + 256 * 4];
        file.read_exact(&mut head).ok()?;
        if head[..8] != [0xff, b't', b'O', b'c', 0, 0, 0, 2] {
            return None;
        }
        let fan = |i: usize| -> u64 { u64::from(u32::from_be_bytes(head[8 + 4 * i..12 + 4 * i].try_into().unwrap())) };
        let count = fan(255);
        let first = oid[0] as usize;
        let (lo, hi) = (if first == 0 { 0 } else { fan(first - 1) }, fan(first));
        if lo > hi || hi > count {
            return None;
        }
        let len = file.metadata().ok()?.len();
        // Header, ids, CRCs and 32-bit offsets must fit (then the 64-bit ones, and the two
        // trailing checksums).
        let names_at = head.len() as u64;
        let offsets_at = names_at.checked_add(count.checked_mul(OID_LEN as u64 + 4)?)?;
        let large_at = offsets_at.checked_add(count.checked_mul(4)?)?;
        if large_at.checked_add(2 * OID_LEN as u64)? > len {
            return None;
        }
        // Binary search among the ids starting with the same byte.
        let (mut lo, mut hi) = (lo, hi);
        let mut id = [0u8; OID_LEN];
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            file.seek(SeekFrom::Start(names_at + mid * OID_LEN as u64)).ok()?;
            file.read_exact(&mut id).ok()?;
            match id.cmp(oid) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => {
                    let mut four = [0u8; 4];
                    file.seek(SeekFrom::Start(offsets_at + mid * 4)).ok()?;
                    file.read_exact(&mut four).ok()?;
                    let small = u32::from_be_bytes(four);
                    if small & 0x8000_0000 == 0 {
                        return Some(u64::from(small));
                    }
                    let at = large_at.checked_add(u64::from(small & 0x7fff_ffff).checked_mul(8)?)?;
                    let mut eight = [0u8; 8];
                    file.seek(SeekFrom::Start(at)).ok()?;
                    file.read_exact(&mut eight).ok()?;
                    return Some(u64::from_be_bytes(eight));
                }
            }
        }
        None
    }
}

struct Pack<'a> {
    file: std::fs::File,
    store: &'a ObjectStore,
}

impl Pack<'_> {
    /// The object at `offset`: its type (never a delta) and bytes, when at most `limit`.
    fn object(&self, offset: u64, limit: usize, depth: usize) -> Option<(u8, Vec<u8>)> {
        if depth > MAX_DELTA_CHAIN {
            return None;
        }
        let len = self.file.metadata().ok()?.len();
        // A pack starts with `PACK`, a version and a count (12 bytes) and ends in a checksum.
        if offset < 12 || offset >= len.checked_sub(OID_LEN as u64)? {
            return None;
        }
        // Enough for any header (size varint, a base offset or id) and a small object's data.
        let window = (len - offset).min((limit as u64).saturating_mul(2).saturating_add(4096));
        let mut buf = vec![0u8; usize::try_from(window).ok()?];
        let mut file = &self.file;
        file.seek(SeekFrom::Start(offset)).ok()?;
        file.read_exact(&mut buf).ok()?;
        // Type in bits 4-6 of the first byte, size in its low 4 bits and then 7 bits a byte.
        let kind = (buf[0] >> 4) & 0x7;
        let mut size = u64::from(buf[0] & 0x0f);
        let (mut at, mut shift) = (1usize, 4u32);
        let mut c = buf[0];
        while c & 0x80 != 0 {
            c = *buf.get(at)?;
            at += 1;
            if shift > 57 {
                return None;
            }
            size |= u64::from(c & 0x7f) << shift;
            shift += 7;
        }
        match kind {
            1..=4 => {
                if size > limit as u64 {
                    return None;
                }
                let data = inflate(&buf[at..], limit)?;
                (data.len() as u64 == size).then_some((kind, data))
            }
            OBJ_OFS_DELTA | OBJ_REF_DELTA => {
                // A delta is at most a few bytes more than what it makes; bound it likewise.
                if size > (limit as u64).saturating_mul(2).saturating_add(64) {
                    return None;
                }
                let (base_kind, base) = if kind == OBJ_OFS_DELTA {
                    let (back, used) = offset_varint(&buf[at..])?;
                    at += used;
                    self.object(offset.checked_sub(back).filter(|_| back > 0)?, limit, depth + 1)?
                } else {
                    let base_id: [u8; OID_LEN] = buf.get(at..at + OID_LEN)?.try_into().ok()?;
                    at += OID_LEN;
                    let base =
                        self.store.loose(&base_id, limit).or_else(|| self.store.packed(&base_id, limit, depth + 1))?;
                    (OBJ_BLOB, base)
                };
                let delta = inflate(&buf[at..], usize::try_from(size).ok()?)?;
                if delta.len() as u64 != size {
                    return None;
                }
                Some((base_kind, apply_delta(&base, &delta, limit)?))
            }
            _ => None,
        }
    }
}

/// At most `limit` bytes inflated from the zlib stream at the start of `raw`; `None` when it
/// is broken or gives more.
fn inflate(raw: &[u8], limit: usize) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    ZlibDecoder::new(raw).take(limit as u64 + 1).read_to_end(&mut out).ok()?;
    (out.len() <= limit).then_some(out)
}

/// A delta's sizes: 7 bits a byte, least significant first.
fn size_varint(b: &[u8], at: &mut usize) -> Option<u64> {
    let (mut value, mut shift) = (0u64, 0u32);
    loop {
        let c = *b.get(*at)?;
        *at += 1;
        if shift > 63 {
            return None;
        }
        value |= u64::from(c & 0x7f) << shift;
        shift += 7;
        if c & 0x80 == 0 {
            return Some(value);
        }
    }
}

/// Apply a git delta to `base`: the base's size and the result's, then instructions: a byte
/// with the top bit set copies from the base (bits 0-3 say which offset bytes follow, 4-6
/// which size bytes; a size of 0 is 0x10000), a byte of 1 to 127 inserts that many bytes
/// that follow, 0 is reserved.
pub(crate) fn apply_delta(base: &[u8], delta: &[u8], limit: usize) -> Option<Vec<u8>> {
    let mut at = 0;
    if size_varint(delta, &mut at)? != base.len() as u64 {
        return None;
    }
    let size = size_varint(delta, &mut at)?;
    if size > limit as u64 {
        return None;
    }
    let mut out = Vec::with_capacity(size as usize);
    while at < delta.len() {
        let op = delta[at];
        at += 1;
        if op & 0x80 != 0 {
            let mut offset = 0usize;
            for i in 0..4 {
                if op & (1 << i) != 0 {
                    offset |= usize::from(*delta.get(at)?) << (8 * i);
                    at += 1;
                }
            }
            let mut len = 0usize;
            for i in 0..3 {
                if op & (0x10 << i) != 0 {
                    len |= usize::from(*delta.get(at)?) << (8 * i);
                    at += 1;
                }
            }
            if len == 0 {
                len = 0x10000;
            }
            out.extend_from_slice(base.get(offset..offset.checked_add(len)?)?);
        } else if op != 0 {
            let n = usize::from(op);
            out.extend_from_slice(delta.get(at..at + n)?);
            at += n;
        } else {
            return None;
        }
        if out.len() as u64 > size {
            return None;
        }
    }
    (out.len() as u64 == size).then_some(out)
}

/// At most `limit` bytes of a small file; `None` when it is absent, unreadable or longer.
pub(super) fn read_small(path: &Path, limit: u64) -> Option<Vec<u8>> {
    use std::io::Read;
    let file = std::fs::File::open(path).ok()?;
    let mut out = Vec::new();
    file.take(limit + 1).read_to_end(&mut out).ok()?;
    (out.len() as u64 <= limit).then_some(out)
}

/// Git's offset varint (index version 4, pack `OFS_DELTA`): 7 bits a byte, most significant
/// first, each continuation adding one. The value and the bytes used.
pub(crate) fn offset_varint(b: &[u8]) -> Option<(u64, usize)> {
    let mut c = *b.first()?;
    let mut value = u64::from(c & 0x7f);
    let mut used = 1;
    while c & 0x80 != 0 {
        c = *b.get(used)?;
        used += 1;
        value = value.checked_add(1)?.checked_mul(128)? | u64::from(c & 0x7f);
    }
    Some((value, used))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offset_varints_add_one_per_continuation() {
        assert_eq!(offset_varint(&[0x05]), Some((5, 1)));
        assert_eq!(offset_varint(&[0x80, 0x00]), Some((128, 2)));
        assert_eq!(offset_varint(&[0x81, 0x7f]), Some((2 * 128 + 127, 2)));
        assert_eq!(offset_varint(&[0x80]), None);
        assert_eq!(offset_varint(&[0xff; 12]), None);
    }

    #[test]
    fn deltas_copy_and_insert_within_bounds() {
        let base = b"version 1\noid sha256:aaaa\nsize 5\n";
        // base size 33, result size 20: copy 10 bytes from 0, insert "oid sha256:b\n" (13)...
        let mut delta = vec![base.len() as u8, 23];
        delta.extend_from_slice(&[0x90, 10]); // copy offset 0 (no offset bytes), size 10
        delta.push(13);
        delta.extend_from_slice(b"oid sha256:b\n");
        assert_eq!(apply_delta(base, &delta, 64).unwrap(), b"version 1\noid sha256:b\n");
        // The result larger than allowed, a copy past the base, a reserved op, a wrong base size.
        assert_eq!(apply_delta(base, &delta, 22), None);
        let mut past = vec![base.len() as u8, 40, 0x91, 30, 10];
        past.extend_from_slice(&[0; 0]);
        assert_eq!(apply_delta(base, &past, 64), None);
        assert_eq!(apply_delta(base, &[base.len() as u8, 1, 0], 64), None);
        assert_eq!(apply_delta(base, &[3, 1, 1, b'x'], 64), None);
        for cut in 0..delta.len() {
            assert_eq!(apply_delta(base, &delta[..cut], 64), None);
        }
    }
}
