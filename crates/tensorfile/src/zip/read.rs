//! Reading zip archives from a mapped file.

use std::collections::HashMap;
use std::io::Read;

use crate::checked;
use crate::error::{Error, Result, Rule};
use crate::source::Bytes;

use crate::limits::{MAX_DEFLATE_RATIO, MAX_ZIP_ENTRIES as MAX_ENTRIES};

/// One entry of the central directory, checked against the file.
#[derive(Debug, Clone)]
pub struct ZipEntry {
    pub name: String,
    /// 0 stored, 8 deflated.
    pub method: u16,
    pub crc32: u32,
    pub compressed_size: u64,
    pub size: u64,
    /// Where the local header starts.
    pub header_offset: u64,
    /// Where the (compressed) data starts.
    pub data_offset: u64,
}

/// An opened zip archive.
pub struct Archive {
    bytes: Bytes,
    entries: Vec<ZipEntry>,
    by_name: HashMap<String, usize>,
    /// The folder every entry is under, as PyTorch finds it (the first entry's first path
    /// component), if the first entry has one.
    root: Option<String>,
}

fn bad(detail: impl Into<String>) -> Error {
    Error::invalid(Rule::BadField, detail)
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap_or_default())
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap_or_default())
}

/// The end-of-central-directory record: (entries, directory size, directory offset).
fn directory(b: &[u8]) -> Result<(u64, u64, u64)> {
    if b.len() < 22 {
        return Err(Error::invalid(Rule::Truncated, format!("{} bytes: too short for a zip archive", b.len())));
    }
    // The record is 22 bytes plus a comment of at most 65535 bytes, at the very end.
    let lowest = b.len().saturating_sub(22 + 65535);
    let eocd = (lowest..=b.len() - 22)
        .rev()
        .find(|&i| b[i..i + 4] == *b"PK\x05\x06" && i + 22 + usize::from(u16_at(b, i + 20)) == b.len())
        .ok_or_else(|| Error::invalid(Rule::BadMagic, "no end of central directory record: not a zip archive"))?;
    let mut entries = u64::from(u16_at(b, eocd + 10));
    let mut size = u64::from(u32_at(b, eocd + 12));
    let mut offset = u64::from(u32_at(b, eocd + 16));
    // A zip64 locator sits just before the record.
    if eocd >= 20 && b[eocd - 20..eocd - 16] == *b"PK\x06\x07" {
        let at = checked::to_usize(u64_at(b, eocd - 12), "zip64 record offset")?;
        let rec = b
            .get(at..at.saturating_add(56))
            .ok_or_else(|| Error::invalid(Rule::OutOfBounds, "zip64 record past the end"))?;
        if rec[0..4] != *b"PK\x06\x06" {
            return Err(bad("zip64 locator points at no zip64 record"));
        }
        entries = u64_at(rec, 32);
        size = u64_at(rec, 40);
        offset = u64_at(rec, 48);
    }
    if entries > MAX_ENTRIES {
        return Err(Error::invalid(Rule::TooManyEntries, format!("{entries} zip entries (limit {MAX_ENTRIES})")));
    }
    let end = checked::add(offset, size, "central directory")?;
    if end > eocd as u64 {
        return Err(Error::invalid(
            Rule::OutOfBounds,
            format!("central directory {offset}..{end} runs past its end record"),
        ));
    }
    Ok((entries, size, offset))
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

/// The entries of the archive in `b`, checked against it.
fn central_entries(b: &[u8]) -> Result<Vec<ZipEntry>> {
    let (count, size, offset) = directory(b)?;
    let dir_end = offset + size;
    let mut pos = checked::to_usize(offset, "central directory")?;
    let dir_end_us = checked::to_usize(dir_end, "central directory")?;
    let mut entries = Vec::new();
    for _ in 0..count {
        let head = b
            .get(pos..pos + 46)
            .filter(|_| pos + 46 <= dir_end_us)
            .ok_or_else(|| Error::invalid(Rule::Truncated, "central directory entry cut short"))?;
        if head[0..4] != *b"PK\x01\x02" {
            return Err(bad(format!("bad central directory entry at {pos}")));
        }
        let (name_len, extra_len, comment_len) =
            (usize::from(u16_at(head, 28)), usize::from(u16_at(head, 30)), usize::from(u16_at(head, 32)));
        let end = pos + 46 + name_len + extra_len + comment_len;
        if end > dir_end_us {
            return Err(Error::invalid(Rule::Truncated, "central directory entry runs past the directory"));
        }
        let name = String::from_utf8(b[pos + 46..pos + 46 + name_len].to_vec())
            .map_err(|_| Error::invalid(Rule::BadUtf8, "zip entry name is not UTF-8"))?;
        let extra = &b[pos + 46 + name_len..pos + 46 + name_len + extra_len];
        let mut compressed_size = u64::from(u32_at(head, 20));
        let mut usize_ = u64::from(u32_at(head, 24));
        let mut header_offset = u64::from(u32_at(head, 42));
        let wide = [usize_, compressed_size, header_offset].iter().filter(|&&v| v == 0xFFFF_FFFF).count();
        if wide > 0 {
            let mut values = zip64_extra(extra, wide)?.into_iter();
            if usize_ == 0xFFFF_FFFF {
                usize_ = values.next().unwrap_or(0);
            }
            if compressed_size == 0xFFFF_FFFF {
                compressed_size = values.next().unwrap_or(0);
            }
            if header_offset == 0xFFFF_FFFF {
                header_offset = values.next().unwrap_or(0);
            }
        }
        let method = u16_at(head, 10);
        let data_offset = local_data_offset(b, header_offset, &name)?;
        let data_end = checked::add(data_offset, compressed_size, "zip entry")?;
        if data_end > offset {
            return Err(Error::invalid(
                Rule::OutOfBounds,
                format!(
                    "zip entry {name:?}: data {data_offset}..{data_end} runs into the central directory at {offset}"
                ),
            ));
        }
        entries.push(ZipEntry {
            name,
            method,
            crc32: u32_at(head, 16),
            compressed_size,
            size: usize_,
            header_offset,
            data_offset,
        });
        pos = end;
    }
    check_no_overlap(&entries)?;
    Ok(entries)
}

/// The entry names of the zip archive in `b` (for recognising what kind of archive it is).
pub fn entry_names(b: &[u8]) -> Result<Vec<String>> {
    Ok(central_entries(b)?.into_iter().map(|e| e.name).collect())
}

/// The entry names of the zip archive in `src`. Remote: only the end of the archive (its
/// central directory) is fetched.
pub fn entry_names_in(src: &crate::source::Source) -> Result<Vec<String>> {
    entry_names(&src.whole()?)
}

impl Archive {
    pub fn open(bytes: Bytes) -> Result<Archive> {
        let entries = central_entries(&bytes)?;
        let mut by_name = HashMap::with_capacity(entries.len());
        for (i, e) in entries.iter().enumerate() {
            if leaves_archive(&e.name) {
                return Err(Error::invalid(
                    Rule::UnsafePath,
                    format!("zip entry {:?} leaves the archive (absolute path or `..`)", e.name),
                ));
            }
            if by_name.insert(e.name.clone(), i).is_some() {
                return Err(Error::invalid(Rule::DuplicateName, format!("zip entry {:?} appears twice", e.name)));
            }
        }
        let root = entries.first().and_then(|e| e.name.split_once('/')).map(|(r, _)| r.to_string());
        Ok(Archive { bytes, entries, by_name, root })
    }

    pub fn entries(&self) -> &[ZipEntry] {
        &self.entries
    }

    /// The root folder PyTorch would use (the first entry's first path component).
    pub fn root(&self) -> Option<&str> {
        self.root.as_deref()
    }

    pub fn entry(&self, name: &str) -> Option<&ZipEntry> {
        self.by_name.get(name).map(|&i| &self.entries[i])
    }

    /// A record by its name inside the archive: `<root>/<record>`, or `<record>` in archives
    /// without a root folder.
    pub fn record(&self, record: &str) -> Option<&ZipEntry> {
        self.root.as_ref().and_then(|r| self.entry(&format!("{r}/{record}"))).or_else(|| self.entry(record))
    }

    /// Names of records under `folder` (a path relative to the root, ending with `/`).
    pub fn records_under(&self, folder: &str) -> Vec<String> {
        let full = match &self.root {
            Some(r) => format!("{r}/{folder}"),
            None => folder.to_string(),
        };
        self.entries.iter().filter_map(|e| e.name.strip_prefix(&full).map(|rest| format!("{folder}{rest}"))).collect()
    }

    /// An entry's bytes: a slice of the map when stored, inflated when deflated. With
    /// `verify`, the CRC is checked (a CRC of 0 means "not recorded", as PyTorch allows).
    pub fn read(&self, e: &ZipEntry, verify: bool) -> Result<Bytes> {
        let raw = self.bytes.slice(e.data_offset, e.compressed_size)?;
        let data = match e.method {
            0 => {
                if e.size != e.compressed_size {
                    return Err(Error::invalid(
                        Rule::SizeMismatch,
                        format!("stored entry {:?} with two sizes", e.name),
                    ));
                }
                raw
            }
            8 => Bytes::from_vec(inflate(&raw, e)?),
            m => return Err(Error::unsupported(format!("zip entry {:?}: compression method {m}", e.name))),
        };
        if verify && e.crc32 != 0 && crc32fast::hash(&data) != e.crc32 {
            return Err(Error::invalid(
                Rule::ChecksumMismatch,
                format!("zip entry {:?}: CRC-32 does not match", e.name),
            ));
        }
        Ok(data)
    }

    /// Read a record as text.
    pub fn read_text(&self, record: &str) -> Result<Option<String>> {
        let Some(e) = self.record(record) else { return Ok(None) };
        let b = self.read(e, true)?;
        String::from_utf8(b.to_vec())
            .map(Some)
            .map_err(|_| Error::invalid(Rule::BadUtf8, format!("{record} is not UTF-8")))
    }

    pub fn bytes(&self) -> &Bytes {
        &self.bytes
    }
}

/// Where an entry's data starts: after its local header, name and extra field.
fn local_data_offset(b: &[u8], header_offset: u64, name: &str) -> Result<u64> {
    let at = checked::to_usize(header_offset, "local header")?;
    let head = b.get(at..at.saturating_add(30)).ok_or_else(|| {
        Error::invalid(Rule::OutOfBounds, format!("zip entry {name:?}: local header at {header_offset} past the end"))
    })?;
    if head[0..4] != *b"PK\x03\x04" {
        return Err(bad(format!("zip entry {name:?}: no local header at {header_offset}")));
    }
    let local_name = b.get(at + 30..at + 30 + usize::from(u16_at(head, 26)));
    if local_name != Some(name.as_bytes()) {
        return Err(bad(format!("zip entry {name:?}: local header names another entry")));
    }
    Ok(header_offset + 30 + u64::from(u16_at(head, 26)) + u64::from(u16_at(head, 28)))
}

/// Entries must not share bytes (overlapping entries are how some zip bombs multiply).
fn check_no_overlap(entries: &[ZipEntry]) -> Result<()> {
    let mut spans: Vec<(u64, u64, &str)> =
        entries.iter().map(|e| (e.header_offset, e.data_offset + e.compressed_size, e.name.as_str())).collect();
    spans.sort_unstable();
    for w in spans.windows(2) {
        if w[1].0 < w[0].1 {
            return Err(Error::invalid(Rule::Overlap, format!("zip entries {:?} and {:?} overlap", w[0].2, w[1].2)));
        }
    }
    Ok(())
}

/// Inflate an entry into exactly its declared size, refusing claims deflate cannot make and
/// output beyond the claim.
fn inflate(raw: &[u8], e: &ZipEntry) -> Result<Vec<u8>> {
    let bound = (raw.len() as u64).saturating_mul(MAX_DEFLATE_RATIO).saturating_add(1024);
    let mut out = checked::zeroed(e.size, bound, &format!("zip entry {:?}", e.name)).map_err(|_| {
        Error::invalid(
            Rule::DecompressedSizeMismatch,
            format!(
                "zip entry {:?} claims {} bytes from {} compressed: more than deflate can produce",
                e.name,
                e.size,
                raw.len()
            ),
        )
    })?;
    let mut d = flate2::read::DeflateDecoder::new(raw);
    let bad_data =
        |err: std::io::Error| Error::invalid(Rule::BadCompressedData, format!("zip entry {:?}: {err}", e.name));
    d.read_exact(&mut out).map_err(|err| match err.kind() {
        std::io::ErrorKind::UnexpectedEof => Error::invalid(
            Rule::DecompressedSizeMismatch,
            format!("zip entry {:?} inflates to fewer than its declared {} bytes", e.name, e.size),
        ),
        _ => bad_data(err),
    })?;
    let mut probe = [0u8; 1];
    if d.read(&mut probe).map_err(bad_data)? != 0 {
        return Err(Error::invalid(
            Rule::DecompressedSizeMismatch,
            format!("zip entry {:?} inflates past its declared size", e.name),
        ));
    }
    Ok(out)
}

/// Whether an entry name points outside the archive when extracted: an absolute path (`/x`,
/// `\\x`), a drive (`C:x`), or a `..` component. Archives holding one are refused: PyTorch
/// never writes them, and tools that extract them write outside their folder.
fn leaves_archive(name: &str) -> bool {
    let b = name.as_bytes();
    name.starts_with(['/', '\\'])
        || (b.len() >= 2 && b[0].is_ascii_alphabetic() && b[1] == b':')
        || name.split(['/', '\\']).any(|c| c == "..")
}

/// Whether an entry name is safe to use as a relative path: no absolute paths, no `..`.
pub fn is_safe_name(name: &str) -> bool {
    !name.starts_with('/')
        && !name.starts_with('\\')
        && !name.contains(':')
        && name.split(['/', '\\']).all(|c| c != "..")
}
