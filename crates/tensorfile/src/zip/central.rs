//! The end of an archive and its central directory (zip64 included).

use super::read::ZipEntry;
use super::region::{Fetched, Reach};
use crate::checked;
use crate::error::{Error, Result, Rule};
use crate::limits::MAX_ZIP_ENTRIES as MAX_ENTRIES;
use crate::source::{Bytes, SPECULATIVE_READ};

pub(super) fn bad(detail: impl Into<String>) -> Error {
    Error::invalid(Rule::BadField, detail)
}

pub(super) fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

pub(super) fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap_or_default())
}

pub(super) fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap_or_default())
}

/// The end-of-central-directory record (zip64 included).
pub(super) struct Directory {
    pub(super) entries: u64,
    pub(super) size: u64,
    pub(super) offset: u64,
}

/// The largest end-of-central-directory record: 22 bytes and a comment of at most 65535.
const EOCD_SPAN: u64 = 22 + 65535;

/// The record at position `i` of `b` (which ends at the end of the file), if it is one.
fn eocd_in(b: &[u8], lowest: usize) -> Option<usize> {
    let last = b.len().checked_sub(22)?;
    (lowest..=last).rev().find(|&i| b[i..i + 4] == *b"PK\x05\x06" && i + 22 + usize::from(u16_at(b, i + 20)) == b.len())
}

/// Find and read the end-of-central-directory record: a speculative read of the end of the
/// archive, and a second read further back only if the record (its comment can be 64 KiB) is
/// not inside it. Returns the record and what was fetched (ending at the end of the file).
pub(super) fn directory(r: &impl Reach) -> Result<(Directory, Fetched)> {
    let len = r.len();
    if len < 22 {
        return Err(Error::invalid(Rule::Truncated, format!("{len} bytes: too short for a zip archive")));
    }
    let lowest = len.saturating_sub(EOCD_SPAN);
    let n = SPECULATIVE_READ.min(len);
    let mut tail = Fetched { start: len - n, bytes: r.range(len - n, n)? };
    let rel_lowest = |f: &Fetched| checked::to_usize(lowest.saturating_sub(f.start), "zip end");
    let mut found = eocd_in(&tail.bytes, rel_lowest(&tail)?);
    if found.is_none() && tail.start > lowest {
        // The record may sit further back, behind a long comment.
        let before = r.range(lowest, tail.start - lowest)?;
        let mut joined = Vec::with_capacity(before.len() + tail.bytes.len());
        joined.extend_from_slice(&before);
        joined.extend_from_slice(&tail.bytes);
        tail = Fetched { start: lowest, bytes: Bytes::from_vec(joined) };
        found = eocd_in(&tail.bytes, 0);
    }
    let at =
        found.ok_or_else(|| Error::invalid(Rule::BadMagic, "no end of central directory record: not a zip archive"))?;
    let b = &tail.bytes;
    let eocd = tail.start + at as u64;
    let mut entries = u64::from(u16_at(b, at + 10));
    let mut size = u64::from(u32_at(b, at + 12));
    let mut offset = u64::from(u32_at(b, at + 16));
    // A zip64 locator sits just before the record.
    if eocd >= 20 {
        let locator = tail.fetch(r, eocd - 20, 20)?;
        if locator[0..4] == *b"PK\x06\x07" {
            let rec_at = u64_at(&locator, 8);
            if rec_at.checked_add(56).is_none_or(|end| end > len) {
                return Err(Error::invalid(Rule::OutOfBounds, "zip64 record past the end"));
            }
            let rec = tail.fetch(r, rec_at, 56)?;
            if rec[0..4] != *b"PK\x06\x06" {
                return Err(bad("zip64 locator points at no zip64 record"));
            }
            entries = u64_at(&rec, 32);
            size = u64_at(&rec, 40);
            offset = u64_at(&rec, 48);
        }
    }
    if entries > MAX_ENTRIES {
        return Err(Error::invalid(Rule::TooManyEntries, format!("{entries} zip entries (limit {MAX_ENTRIES})")));
    }
    let end = checked::add(offset, size, "central directory")?;
    if end > eocd {
        return Err(Error::invalid(
            Rule::OutOfBounds,
            format!("central directory {offset}..{end} runs past its end record"),
        ));
    }
    Ok((Directory { entries, size, offset }, tail))
}

/// The largest central directory entry: 46 bytes and a name, an extra field and a comment of
/// at most 65535 bytes each.
const CENTRAL_MAX: u64 = 46 + 3 * 65535;

/// The entries of the central directory as far as they parse, without their local headers
/// (`data_offset` not yet known): those before the first broken entry, and the error that
/// entry gives, if one does.
pub(super) fn central(r: &impl Reach, d: &Directory, have: &Fetched) -> Result<(Vec<ZipEntry>, Option<Error>)> {
    // No more bytes than `entries` entries can span: a directory claiming more is cut short
    // by its count anyway, and a hostile size makes no large fetch.
    let want = d.size.min(d.entries.saturating_mul(CENTRAL_MAX));
    let dir = have.fetch(r, d.offset, want)?;
    let dir_end = checked::to_usize(d.size, "central directory")?;
    let mut entries = Vec::new();
    let mut pos = 0usize;
    for _ in 0..d.entries {
        match central_entry(&dir, pos, dir_end, d.offset) {
            Ok((e, next)) => {
                entries.push(e);
                pos = next;
            }
            Err(err) => return Ok((entries, Some(err))),
        }
    }
    Ok((entries, None))
}

/// The central directory entry at `pos` of `dir` (the directory, `dir_end` bytes long, at
/// offset `base` of the archive), and where the next one starts.
fn central_entry(dir: &[u8], pos: usize, dir_end: usize, base: u64) -> Result<(ZipEntry, usize)> {
    let cut = || Error::invalid(Rule::Truncated, "central directory entry cut short");
    let head = dir.get(pos..pos.saturating_add(46)).filter(|_| pos.saturating_add(46) <= dir_end).ok_or_else(cut)?;
    if head[0..4] != *b"PK\x01\x02" {
        return Err(bad(format!("bad central directory entry at {}", base.saturating_add(pos as u64))));
    }
    let (name_len, extra_len, comment_len) =
        (usize::from(u16_at(head, 28)), usize::from(u16_at(head, 30)), usize::from(u16_at(head, 32)));
    let name_at = pos + 46;
    let extra_at = name_at + name_len;
    let end = extra_at + extra_len + comment_len;
    if end > dir_end {
        return Err(Error::invalid(Rule::Truncated, "central directory entry runs past the directory"));
    }
    let name = String::from_utf8(dir.get(name_at..extra_at).ok_or_else(cut)?.to_vec())
        .map_err(|_| Error::invalid(Rule::BadUtf8, "zip entry name is not UTF-8"))?;
    let extra = dir.get(extra_at..extra_at + extra_len).ok_or_else(cut)?;
    let mut compressed_size = u64::from(u32_at(head, 20));
    let mut size = u64::from(u32_at(head, 24));
    let mut header_offset = u64::from(u32_at(head, 42));
    let wide = [size, compressed_size, header_offset].iter().filter(|&&v| v == 0xFFFF_FFFF).count();
    if wide > 0 {
        let mut values = zip64_extra(extra, wide)?.into_iter();
        if size == 0xFFFF_FFFF {
            size = values.next().unwrap_or(0);
        }
        if compressed_size == 0xFFFF_FFFF {
            compressed_size = values.next().unwrap_or(0);
        }
        if header_offset == 0xFFFF_FFFF {
            header_offset = values.next().unwrap_or(0);
        }
    }
    let e = ZipEntry {
        name,
        method: u16_at(head, 10),
        crc32: u32_at(head, 16),
        compressed_size,
        size,
        header_offset,
        data_offset: 0,
    };
    Ok((e, end))
}

/// Values of a zip64 extra field (0x0001) for the fields stored as 0xFFFFFFFF.
fn zip64_extra(extra: &[u8], wanted: usize) -> Result<Vec<u64>> {
    let mut i = 0;
    while i + 4 <= extra.len() {
        let (id, len) = (u16_at(extra, i), usize::from(u16_at(extra, i + 2)));
        let body = extra.get(i + 4..i + 4 + len).ok_or_else(|| bad("extra field runs past its entry"))?;
        if id == 1 {
            if len < 8 * wanted {
                return Err(bad("zip64 extra field too short"));
            }
            return Ok((0..wanted).map(|k| u64_at(body, 8 * k)).collect());
        }
        i += 4 + len;
    }
    Err(bad("sizes marked zip64 without a zip64 extra field"))
}
