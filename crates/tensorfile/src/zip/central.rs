//! The end of an archive and its central directory (zip64 included).

use super::entry::ZipEntry;
use super::region::{Fetched, Reach};
use crate::checked;
use crate::cursor::{self, Cursor};
use crate::error::{Error, Result, Rule};
use crate::limits::MAX_ZIP_ENTRIES as MAX_ENTRIES;
use crate::source::{Bytes, SPECULATIVE_READ};

pub(super) fn bad(detail: impl Into<String>) -> Error {
    Error::invalid(Rule::BadField, detail)
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
    (lowest..=last).rev().find(|&i| {
        b.get(i..i + 4) == Some(b"PK\x05\x06")
            && cursor::u16_le_at(b, i + 20, "zip comment length").is_ok_and(|n| i + 22 + usize::from(n) == b.len())
    })
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
    let mut entries = u64::from(cursor::u16_le_at(b, at + 10, "zip entry count")?);
    let mut size = u64::from(cursor::u32_le_at(b, at + 12, "central directory size")?);
    let mut offset = u64::from(cursor::u32_le_at(b, at + 16, "central directory offset")?);
    // A zip64 locator sits just before the record.
    if eocd >= 20 {
        let locator = tail.fetch(r, eocd - 20, 20)?;
        if locator.get(..4) == Some(b"PK\x06\x07") {
            let rec_at = cursor::u64_le_at(&locator, 8, "zip64 record offset")?;
            if rec_at.checked_add(56).is_none_or(|end| end > len) {
                return Err(Error::invalid(Rule::OutOfBounds, "zip64 record past the end"));
            }
            let rec = tail.fetch(r, rec_at, 56)?;
            if rec.get(..4) != Some(b"PK\x06\x06") {
                return Err(bad("zip64 locator points at no zip64 record"));
            }
            entries = cursor::u64_le_at(&rec, 32, "zip64 entry count")?;
            size = cursor::u64_le_at(&rec, 40, "zip64 central directory size")?;
            offset = cursor::u64_le_at(&rec, 48, "zip64 central directory offset")?;
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
    // `dir` is no longer than the directory's declared size: reading past it is reading past
    // the directory.
    let dir = have.fetch(r, d.offset, want)?;
    let mut c = Cursor::with_base(&dir, d.offset);
    let mut entries = Vec::new();
    for _ in 0..d.entries {
        match central_entry(&mut c) {
            Ok(e) => entries.push(e),
            Err(err) => return Ok((entries, Some(err))),
        }
    }
    Ok((entries, None))
}

/// The central directory entry at the cursor, which is left where the next one starts.
fn central_entry(c: &mut Cursor<'_>) -> Result<ZipEntry> {
    let at = c.offset();
    let what = "central directory entry";
    let mut head = Cursor::with_base(c.take(46, what)?, at);
    if head.array::<4>(what)? != *b"PK\x01\x02" {
        return Err(bad(format!("bad central directory entry at {at}")));
    }
    head.skip(6, what)?; // versions made by and needed, flags
    let method = head.u16_le(what)?;
    head.skip(4, what)?; // modification time and date
    let crc32 = head.u32_le(what)?;
    let mut compressed_size = u64::from(head.u32_le(what)?);
    let mut size = u64::from(head.u32_le(what)?);
    let name_len = usize::from(head.u16_le(what)?);
    let extra_len = usize::from(head.u16_le(what)?);
    let comment_len = usize::from(head.u16_le(what)?);
    head.skip(8, what)?; // first disk, internal and external attributes
    let mut header_offset = u64::from(head.u32_le(what)?);
    let name = c.take(name_len, "zip entry name")?;
    let extra = c.take(extra_len, "zip extra field")?;
    c.skip(comment_len, "zip entry comment")?;
    let name =
        String::from_utf8(name.to_vec()).map_err(|_| Error::invalid(Rule::BadUtf8, "zip entry name is not UTF-8"))?;
    let wide = [size, compressed_size, header_offset].iter().filter(|&&v| v == 0xFFFF_FFFF).count();
    if wide > 0 {
        let mut values = zip64_extra(extra, wide)?.into_iter();
        let mut next = || values.next().ok_or_else(|| bad("zip64 extra field too short"));
        if size == 0xFFFF_FFFF {
            size = next()?;
        }
        if compressed_size == 0xFFFF_FFFF {
            compressed_size = next()?;
        }
        if header_offset == 0xFFFF_FFFF {
            header_offset = next()?;
        }
    }
    Ok(ZipEntry { name, method, crc32, compressed_size, size, header_offset, data_offset: 0 })
}

/// Values of a zip64 extra field (0x0001) for the fields stored as 0xFFFFFFFF.
fn zip64_extra(extra: &[u8], wanted: usize) -> Result<Vec<u64>> {
    let mut c = Cursor::new(extra);
    while c.remaining() >= 4 {
        let id = c.u16_le("extra field id")?;
        let len = usize::from(c.u16_le("extra field length")?);
        let body = c.take(len, "extra field").map_err(|_| bad("extra field runs past its entry"))?;
        if id == 1 {
            if len < 8 * wanted {
                return Err(bad("zip64 extra field too short"));
            }
            let mut b = Cursor::new(body);
            return (0..wanted).map(|_| b.u64_le("zip64 extra field")).collect();
        }
    }
    Err(bad("sizes marked zip64 without a zip64 extra field"))
}
