//! Reading zip archives by range.
//!
//! Opening an archive fetches only its end (a speculative read of the last
//! [`SPECULATIVE_READ`] bytes, which holds the end-of-central-directory record and usually the
//! whole directory), the central directory when it lies before that, and each entry's local
//! header (name and field lengths, to find where its data starts): all of them in one
//! `ranges` call. Entry data is fetched only when an entry is read, and then exactly its
//! compressed bytes. For a local (mapped) file every range is a slice of the map.

use std::collections::HashMap;
use std::io::Read;

use crate::checked;
use crate::error::{Error, Result, Rule};
use crate::source::{Bytes, SPECULATIVE_READ, Source};

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

/// The bytes an archive is read from: a whole [`Source`], or the bytes of a stored entry of
/// another archive (a `torch.save` file inside a `.pt2`), read in place by range. Offsets are
/// relative to the region's start.
#[derive(Clone, Debug)]
pub struct Region {
    src: Source,
    base: u64,
    len: u64,
}

impl Region {
    /// The whole of `src`.
    pub fn whole_of(src: impl Into<Source>) -> Region {
        let src = src.into();
        let len = src.len();
        Region { src, base: 0, len }
    }

    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The source the region lies in.
    pub fn source(&self) -> &Source {
        &self.src
    }

    /// Bytes `offset..offset + len` of the region, checked against it.
    pub fn range(&self, offset: u64, len: u64) -> Result<Bytes> {
        checked::range_within(offset, len, checked::to_usize(self.len, "archive size")?, "byte range")?;
        self.src.range(checked::add(self.base, offset, "byte range")?, len)
    }

    /// Several ranges at once (remote: fetched concurrently), in the order asked.
    pub fn ranges(&self, wanted: &[(u64, u64)]) -> Result<Vec<Bytes>> {
        let total = checked::to_usize(self.len, "archive size")?;
        let mut absolute = Vec::with_capacity(wanted.len());
        for &(offset, len) in wanted {
            checked::range_within(offset, len, total, "byte range")?;
            absolute.push((checked::add(self.base, offset, "byte range")?, len));
        }
        self.src.ranges(&absolute)
    }

    /// The first `min(max, len)` bytes.
    pub fn head(&self, max: u64) -> Result<Bytes> {
        self.range(0, max.min(self.len))
    }

    /// The whole region in memory (local: a slice of the map).
    pub fn whole(&self) -> Result<Bytes> {
        self.range(0, self.len)
    }

    /// The region as a slice of a local file's map, if the source is local.
    pub fn as_local(&self) -> Option<Bytes> {
        self.src.as_local().and_then(|b| b.slice(self.base, self.len).ok())
    }
}

/// What the directory is read from: a [`Region`] or bytes already in memory.
trait Reach {
    fn len(&self) -> u64;
    fn range(&self, offset: u64, len: u64) -> Result<Bytes>;
}

impl Reach for Region {
    fn len(&self) -> u64 {
        self.len
    }
    fn range(&self, offset: u64, len: u64) -> Result<Bytes> {
        Region::range(self, offset, len)
    }
}

/// Bytes in memory: only what the directory needs (the end and the directory) is copied.
struct InMemory<'a>(&'a [u8]);

impl Reach for InMemory<'_> {
    fn len(&self) -> u64 {
        self.0.len() as u64
    }
    fn range(&self, offset: u64, len: u64) -> Result<Bytes> {
        let r = checked::range_within(offset, len, self.0.len(), "byte range")?;
        Ok(Bytes::from_vec(self.0[r].to_vec()))
    }
}

/// Bytes already fetched: `bytes` start at offset `start` of the archive.
struct Fetched {
    start: u64,
    bytes: Bytes,
}

impl Fetched {
    /// `offset..offset + len` if it lies inside what was fetched.
    fn get(&self, offset: u64, len: u64) -> Option<Bytes> {
        let rel = offset.checked_sub(self.start)?;
        self.bytes.slice(rel, len).ok()
    }

    /// `offset..offset + len`, from what was fetched or else fetched now.
    fn fetch(&self, r: &impl Reach, offset: u64, len: u64) -> Result<Bytes> {
        match self.get(offset, len) {
            Some(b) => Ok(b),
            None => r.range(offset, len),
        }
    }
}

/// An opened zip archive.
pub struct Archive {
    region: Region,
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

/// The end-of-central-directory record (zip64 included).
struct Directory {
    entries: u64,
    size: u64,
    offset: u64,
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
fn directory(r: &impl Reach) -> Result<(Directory, Fetched)> {
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
fn central(r: &impl Reach, d: &Directory, have: &Fetched) -> Result<(Vec<ZipEntry>, Option<Error>)> {
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

/// Check each entry's local header and set where its data starts (after the header, its name
/// and its extra field). The headers not inside what was already fetched are fetched in one
/// `ranges` call: 30 bytes and the entry's name each, all that is needed (the extra field's
/// length is in the 30 bytes; its content is not read). Entries are checked in order, each
/// against the central directory at `dir_offset` (its data must end before it).
fn locate(r: &Region, have: &Fetched, entries: &mut [ZipEntry], dir_offset: u64) -> Result<()> {
    let len = r.len();
    let mut headers: Vec<Option<Bytes>> = vec![None; entries.len()];
    let mut wanted = Vec::new();
    for (i, e) in entries.iter().enumerate() {
        if e.header_offset.checked_add(30).is_none_or(|end| end > len) {
            continue; // Refused below, in its turn.
        }
        let n = (30 + e.name.len() as u64).min(len - e.header_offset);
        match have.get(e.header_offset, n) {
            Some(b) => headers[i] = Some(b),
            None => wanted.push((i, e.header_offset, n)),
        }
    }
    let ranges: Vec<(u64, u64)> = wanted.iter().map(|&(_, offset, n)| (offset, n)).collect();
    for (&(i, ..), b) in wanted.iter().zip(r.ranges(&ranges)?) {
        headers[i] = Some(b);
    }
    for (e, head) in entries.iter_mut().zip(headers) {
        let name = &e.name;
        let head = head.ok_or_else(|| {
            Error::invalid(
                Rule::OutOfBounds,
                format!("zip entry {name:?}: local header at {} past the end", e.header_offset),
            )
        })?;
        if head[0..4] != *b"PK\x03\x04" {
            return Err(bad(format!("zip entry {name:?}: no local header at {}", e.header_offset)));
        }
        let (name_len, extra_len) = (usize::from(u16_at(&head, 26)), u64::from(u16_at(&head, 28)));
        if head.get(30..30 + name_len) != Some(name.as_bytes()) {
            return Err(bad(format!("zip entry {name:?}: local header names another entry")));
        }
        let data_offset = checked::add(e.header_offset, 30 + name_len as u64 + extra_len, "zip entry")?;
        let data_end = checked::add(data_offset, e.compressed_size, "zip entry")?;
        if data_end > dir_offset {
            return Err(Error::invalid(
                Rule::OutOfBounds,
                format!(
                    "zip entry {name:?}: data {data_offset}..{data_end} runs into the central directory at {dir_offset}"
                ),
            ));
        }
        e.data_offset = data_offset;
    }
    Ok(())
}

/// The entries of the archive in `r`, checked against it, in the order the checks were always
/// made: each entry's central record, local header and data span in turn, then overlaps.
fn checked_entries(r: &Region) -> Result<Vec<ZipEntry>> {
    let (d, have) = directory(r)?;
    let (mut entries, broken) = central(r, &d, &have)?;
    locate(r, &have, &mut entries, d.offset)?;
    if let Some(err) = broken {
        return Err(err);
    }
    check_no_overlap(&entries)?;
    Ok(entries)
}

/// The names of the central directory's entries (only the end of the archive and its
/// directory are read).
fn names(r: &impl Reach) -> Result<Vec<String>> {
    let (d, have) = directory(r)?;
    match central(r, &d, &have)? {
        (_, Some(err)) => Err(err),
        (entries, None) => Ok(entries.into_iter().map(|e| e.name).collect()),
    }
}

/// The entry names of the zip archive in `b` (for recognising what kind of archive it is).
/// Only the central directory is parsed; local headers are checked when the archive is
/// opened.
pub fn entry_names(b: &[u8]) -> Result<Vec<String>> {
    names(&InMemory(b))
}

/// The entry names of the zip archive in `src`: only the end of the archive and its central
/// directory are fetched.
pub fn entry_names_in(src: &Source) -> Result<Vec<String>> {
    names(&Region::whole_of(src.clone()))
}

impl Archive {
    /// Open the archive in `src`: its end, central directory and local headers are read (and
    /// checked), no entry's data.
    pub fn open(src: impl Into<Source>) -> Result<Archive> {
        Archive::open_region(Region::whole_of(src))
    }

    /// Open the archive in `region` (a whole source, or a stored entry of another archive).
    pub fn open_region(region: Region) -> Result<Archive> {
        let entries = checked_entries(&region)?;
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
        Ok(Archive { region, entries, by_name, root })
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

    /// An entry's bytes: exactly its compressed bytes are fetched (for a local file, a slice
    /// of the map), returned as they are when stored, inflated when deflated. With `verify`,
    /// the CRC is checked (a CRC of 0 means "not recorded", as PyTorch allows).
    pub fn read(&self, e: &ZipEntry, verify: bool) -> Result<Bytes> {
        if e.method == 0 && e.size != e.compressed_size {
            return Err(Error::invalid(Rule::SizeMismatch, format!("stored entry {:?} with two sizes", e.name)));
        }
        if e.method != 0 && e.method != 8 {
            return Err(Error::unsupported(format!("zip entry {:?}: compression method {}", e.name, e.method)));
        }
        let raw = self.region.range(e.data_offset, e.compressed_size)?;
        let data = if e.method == 0 { raw } else { Bytes::from_vec(inflate(&raw, e)?) };
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

    /// Where the archive's bytes are.
    pub fn region(&self) -> &Region {
        &self.region
    }

    /// The bytes of entry `e` as a region to open as an archive of its own (a `torch.save`
    /// file inside a `.pt2`): a stored entry is read in place, by range, nothing fetched now
    /// (its CRC is left to [`crate::zip::verify_records`]); a deflated one is inflated, its CRC
    /// checked, into memory.
    pub fn entry_region(&self, e: &ZipEntry) -> Result<Region> {
        if e.method == 0 && e.size == e.compressed_size {
            checked::range_within(
                e.data_offset,
                e.size,
                checked::to_usize(self.region.len, "archive size")?,
                "zip entry",
            )?;
            let base = checked::add(self.region.base, e.data_offset, "zip entry")?;
            return Ok(Region { src: self.region.src.clone(), base, len: e.size });
        }
        Ok(Region::whole_of(self.read(e, true)?))
    }

    /// The whole archive in memory, when it lies in a local file (a slice of its map), for
    /// writers that copy it; a remote archive is read entry by entry instead.
    pub fn bytes(&self) -> Result<Bytes> {
        self.region
            .as_local()
            .ok_or_else(|| Error::unsupported("the whole of a remote zip archive at once: read it entry by entry"))
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::zip::ZipWriter;

    /// An archive like PyTorch's: small records around one large stored entry, and `extra`
    /// more small entries (to grow the central directory).
    fn archive(big: usize, extra: usize) -> Vec<u8> {
        let mut w = ZipWriter::new(Vec::new(), "archive");
        w.add("data.pkl", b"a small record").unwrap();
        let data: Vec<u8> = (0..big).map(|i| (i % 251) as u8).collect();
        w.add("data/0", &data).unwrap();
        w.add("byteorder", b"little").unwrap();
        for i in 0..extra {
            w.add(&format!("data/a_fairly_long_record_name_to_grow_the_directory_{i}"), &[i as u8]).unwrap();
        }
        w.finish().unwrap()
    }

    /// The central directory's size, from the zip64 end record PyTorch's writer always
    /// writes (56 + 20 + 22 bytes at the end).
    fn directory_size(b: &[u8]) -> u64 {
        u64_at(b, b.len() - 98 + 40)
    }

    fn headers(a: &Archive) -> u64 {
        a.entries().iter().map(|e| 30 + e.name.len() as u64).sum()
    }

    #[test]
    fn opening_fetches_the_end_the_directory_and_local_headers_only() {
        let bytes = Bytes::from_vec(archive(4 << 20, 3));
        let src = Source::counted_exact(bytes.clone());
        let a = Archive::open(src.clone()).unwrap();
        let opened = src.bytes_fetched();
        // The directory is inside the tail read; only headers before it are fetched.
        assert!(opened <= SPECULATIVE_READ + headers(&a), "{opened}");
        assert!(opened < bytes.len() as u64 / 50);
        let local = Archive::open(bytes.clone()).unwrap();
        for (e, l) in a.entries().iter().zip(local.entries()) {
            assert_eq!((&e.name, e.data_offset, e.size), (&l.name, l.data_offset, l.size));
            let before = src.bytes_fetched();
            let got = a.read(e, true).unwrap();
            assert_eq!(src.bytes_fetched() - before, e.compressed_size, "{}", e.name);
            let want = local.read(l, true).unwrap();
            assert_eq!(got, want);
            // Local: a slice of the map, no copy.
            assert!(want.shares_owner(&bytes));
        }
        assert!(a.bytes().is_err());
        assert_eq!(&*local.bytes().unwrap(), &*bytes);
    }

    #[test]
    fn names_come_from_the_tail_and_the_directory_alone() {
        for extra in [0, 2000] {
            let bytes = Bytes::from_vec(archive(1 << 20, extra));
            let dir = directory_size(&bytes);
            let src = Source::counted_exact(bytes.clone());
            let names = entry_names_in(&src).unwrap();
            assert_eq!(names, entry_names(&bytes).unwrap());
            assert_eq!(names.len(), 3 + extra);
            // With a directory larger than the tail read, the directory is fetched whole
            // besides it.
            let want = if dir + 98 <= SPECULATIVE_READ { SPECULATIVE_READ } else { SPECULATIVE_READ + dir };
            assert_eq!(src.bytes_fetched(), want, "{extra} more entries, directory of {dir} bytes");
            // Opening adds the local headers not in the tail read.
            let src = Source::counted_exact(bytes.clone());
            let a = Archive::open(src.clone()).unwrap();
            assert!(src.bytes_fetched() <= want + headers(&a));
        }
    }

    #[test]
    fn an_end_record_behind_a_long_comment_is_found() {
        let mut b = archive(200_000, 0);
        let n = b.len();
        b[n - 2..].copy_from_slice(&60_000u16.to_le_bytes());
        b.extend(std::iter::repeat_n(b'#', 60_000));
        let src = Source::counted_exact(Bytes::from_vec(b.clone()));
        let a = Archive::open(src.clone()).unwrap();
        assert_eq!(a.entries().len(), 3);
        assert_eq!(&*a.read(a.record("byteorder").unwrap(), true).unwrap(), b"little");
        assert_eq!(entry_names(&b).unwrap().len(), 3);
    }

    #[test]
    fn a_stored_entry_is_an_archive_read_in_place() {
        let inner = archive(100_000, 0);
        let mut w = ZipWriter::new(Vec::new(), "outer");
        w.add("before", &[1; 1000]).unwrap();
        w.add("inner.pt", &inner).unwrap();
        let bytes = Bytes::from_vec(w.finish().unwrap());
        let src = Source::counted_exact(bytes.clone());
        let outer = Archive::open(src.clone()).unwrap();
        let region = outer.entry_region(outer.record("inner.pt").unwrap()).unwrap();
        assert_eq!(region.len(), inner.len() as u64);
        let before = src.bytes_fetched();
        let a = Archive::open_region(region).unwrap();
        assert!(src.bytes_fetched() - before <= SPECULATIVE_READ.min(inner.len() as u64) + headers(&a));
        let e = a.record("data/0").unwrap();
        let before = src.bytes_fetched();
        let got = a.read(e, true).unwrap();
        assert_eq!(src.bytes_fetched() - before, 100_000);
        let local = Archive::open(Bytes::from_vec(inner)).unwrap();
        assert_eq!(got, local.read(local.record("data/0").unwrap(), true).unwrap());
    }

    #[test]
    fn hostile_offsets_are_refused_not_fetched() {
        let good = archive(1000, 0);
        let n = good.len();
        // Every truncation is an error (no panic, no fetch past the end).
        for len in 0..n {
            assert!(Archive::open(Source::counted_exact(Bytes::from_vec(good[..len].to_vec()))).is_err());
        }
        // A zip64 directory claiming an enormous size is not fetched whole.
        let mut b = good.clone();
        let at = n - 98;
        b[at + 40..at + 48].copy_from_slice(&u64::MAX.to_le_bytes());
        assert_eq!(
            Archive::open(Source::counted_exact(Bytes::from_vec(b))).err().and_then(|e| e.rule()),
            Some(Rule::OutOfBounds)
        );
    }
}
