//! Reading zip archives by range: the entries of an opened archive and their bytes.
//!
//! Opening an archive fetches only its end (a speculative read of the last
//! [`SPECULATIVE_READ`](crate::source::SPECULATIVE_READ) bytes, which holds the
//! end-of-central-directory record and usually the whole directory), the central directory
//! when it lies before that, and each entry's local header (name and field lengths, to find
//! where its data starts): all of them in one `ranges` call. Entry data is fetched only when
//! an entry is read, and then exactly its compressed bytes. For a local (mapped) file every
//! range is a slice of the map.

use std::collections::HashMap;
use std::io::Read;

use super::central::{central, directory};
use super::entry::ZipEntry;
use super::local::checked_entries;
use super::region::{InMemory, Reach, Region};
use crate::checked;
use crate::error::{Error, Result, Rule};
use crate::limits::MAX_DEFLATE_RATIO;
use crate::source::{Bytes, Source};

/// An opened zip archive.
pub struct Archive {
    region: Region,
    entries: Vec<ZipEntry>,
    by_name: HashMap<String, usize>,
    /// The folder every entry is under, as PyTorch finds it (the first entry's first path
    /// component), if the first entry has one.
    root: Option<String>,
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
    #[cfg(any(test, feature = "internals"))]
    pub fn bytes(&self) -> Result<Bytes> {
        self.region
            .as_local()
            .ok_or_else(|| Error::unsupported("the whole of a remote zip archive at once: read it entry by entry"))
    }
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
pub fn leaves_archive(name: &str) -> bool {
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
