//! Opening an `.npz`: the archive's directory and each member's `.npy` header are read and
//! checked at open; a member's data when it is read.

use std::collections::HashSet;
use std::io::Read;

use super::super::array::to_row_major_le;
use super::super::header::{has_magic, header, preamble};
use super::super::{MAX_HEADER, array_info};
use super::member_name;
use crate::error::{Error, Result, Rule};
use crate::formats::{Catalog, FileSummary, Format, FormatReader};
use crate::model::{ByteOrder, Encoding, Entry, MetaValue, Storage, TensorData, TensorInfo};
use crate::source::{Bytes, Source};
use crate::zip::{Archive, ZipEntry};

/// The most bytes of a member's start that can hold its magic, version, length and header.
const HEAD: u64 = 12 + MAX_HEADER;
/// The compressed bytes fetched to inflate a deflated member's start: more than deflate needs
/// for [`HEAD`] bytes from any usual encoder; a member whose header needs more is inflated whole.
const COMPRESSED_HEAD: u64 = 32 * 1024;

/// An opened `.npz`.
pub struct NpzReader {
    archive: Archive,
    /// For each readable entry, in catalog order: how to read it.
    members: Vec<Member>,
    catalog: Catalog,
}

/// Where a readable entry's data is in its zip member.
#[derive(Debug, Clone)]
struct Member {
    /// The zip entry (index into the archive's entries).
    zip: usize,
    /// Where the array data starts in the member (0 for a blob).
    data_at: u64,
    fortran_order: bool,
}

/// What a member holds, or why it cannot be read: (name, descr, shape, error).
type Refused = (String, String, Vec<u64>, Error);

impl NpzReader {
    /// Open an `.npz`: the end of the archive, its central directory, the local headers, and
    /// the start of each member (its `.npy` header) are read.
    pub fn open(src: impl Into<Source>) -> Result<Self> {
        let archive = Archive::open(src)?;
        Catalog::check_count(archive.entries().len() as u64)?;
        let mut catalog = Catalog::default();
        let mut members = Vec::new();
        let mut seen = HashSet::with_capacity(archive.entries().len());
        for (i, e) in archive.entries().iter().enumerate() {
            let name = member_name(&e.name).to_string();
            if !seen.insert(name.clone()) {
                let why =
                    Error::invalid(Rule::DuplicateName, format!("two members named {name:?} once .npy is dropped"));
                catalog.push_unreadable(name.clone(), String::new(), Vec::new(), why.for_tensor(&name));
                continue;
            }
            match member(&archive, i, e, name) {
                Ok((entry, m)) => {
                    catalog.push(entry);
                    members.push(m);
                }
                Err(refused) => {
                    let (name, descr, shape, why) = *refused;
                    let why = crc_failure(&archive, e).unwrap_or(why).for_tensor(&name);
                    catalog.push_unreadable(name, descr, shape, why);
                }
            }
        }
        Ok(NpzReader { archive, members, catalog })
    }

    /// The zip archive.
    #[cfg(any(test, feature = "internals"))]
    pub fn archive(&self) -> &Archive {
        &self.archive
    }
}

/// Why member `e`, whose header cannot be read, is not as it was written, if its bytes say
/// so: the header is part of what the member's CRC-32 covers, so a header broken by a flipped
/// byte (its CRC fails, or its deflate stream breaks) is told from one written that way (an
/// object array, a dtype tensorfile lacks), and a file opened to verify its checksums is
/// refused rather than read without that member ([`crate::OpenOptions::verify`]).
fn crc_failure(archive: &Archive, e: &ZipEntry) -> Option<Error> {
    archive.read(e, true).err()
}

/// The first bytes of member `e` (up to [`HEAD`]), inflated when it is deflated.
fn member_head(archive: &Archive, e: &ZipEntry) -> Result<Bytes> {
    let want = e.size.min(HEAD);
    if e.method == 0 {
        return archive.region().range(e.data_offset, want.min(e.compressed_size));
    }
    let raw = archive.region().range(e.data_offset, e.compressed_size.min(COMPRESSED_HEAD))?;
    let mut out = Vec::with_capacity(want as usize);
    let got = flate2::read::DeflateDecoder::new(&raw[..]).take(want).read_to_end(&mut out);
    if got.is_ok() && out.len() as u64 == want {
        return Ok(Bytes::from_vec(out));
    }
    // A start deflate made unusually long, or broken data: inflate the whole member (bounded by
    // its declared size), which says what is wrong if anything is.
    let whole = archive.read(e, false)?;
    whole.slice(0, want)
}

/// The entry member `e` (the `zip`-th of the archive) holds, or why it cannot be read.
fn member(archive: &Archive, zip: usize, e: &ZipEntry, name: String) -> Result<(Entry, Member), Box<Refused>> {
    let refuse = |name: String, why: Error| Box::new((name, String::new(), Vec::new(), why));
    let storage_of = |offset: u64, len: u64| {
        if e.method == 0 {
            Storage::new(offset, len)
        } else {
            Storage::new(e.data_offset, e.compressed_size).with_encoding(Encoding::Deflate)
        }
    };
    let head = match member_head(archive, e) {
        Ok(h) => h,
        Err(why) => return Err(refuse(name, why)),
    };
    if !has_magic(&head) {
        // Not an array: NumPy hands back the member's bytes.
        let info = TensorInfo::blob(name, e.size);
        let entry = Entry::checked(info, e.size, storage_of(e.data_offset, e.size));
        return Ok((entry, Member { zip, data_at: 0, fortran_order: false }));
    }
    let parsed = preamble(&head).and_then(|p| {
        if p.data_at() > head.len() as u64 {
            return Err(Error::invalid(
                Rule::Truncated,
                format!("a header of {} bytes, but the member holds {}", p.dict_len, e.size),
            ));
        }
        header(p, &head[p.dict_at as usize..p.data_at() as usize])
    });
    let h = match parsed {
        Ok(h) => h,
        Err(why) => return Err(refuse(name, why)),
    };
    let (dtype, order) = match &h.dtype {
        Ok(d) => *d,
        Err(why) => return Err(Box::new((name, h.descr.clone(), h.shape.clone(), why.clone()))),
    };
    let (info, nbytes) = match array_info(&name, &h, dtype) {
        Ok(x) => x,
        Err(why) => return Err(Box::new((name, h.descr.clone(), h.shape.clone(), why))),
    };
    let data_at = h.preamble.data_at();
    let available = e.size - data_at;
    if available < nbytes {
        let why = Error::invalid(
            Rule::Truncated,
            format!("dtype {dtype} and shape {:?} need {nbytes} bytes, the member holds {available}", h.shape),
        );
        return Err(Box::new((name, h.descr.clone(), h.shape.clone(), why)));
    }
    // A stored member's array is at a known place of the file; a deflated one is inflated.
    let storage = storage_of(e.data_offset + data_at, nbytes).with_byte_order(order);
    let entry = Entry::checked(info, nbytes, storage);
    Ok((entry, Member { zip, data_at, fortran_order: h.fortran_order }))
}

impl FormatReader for NpzReader {
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    fn format(&self) -> Format {
        Format::Npz
    }

    fn summary(&self) -> FileSummary {
        let deflated = self.archive.entries().iter().filter(|e| e.method != 0).count();
        let int = |v: usize| MetaValue::Int(v as i128);
        FileSummary {
            version: String::new(),
            metadata: Vec::new(),
            details: vec![
                ("members".into(), int(self.archive.entries().len())),
                ("deflated_members".into(), int(deflated)),
            ],
            structure: None,
        }
    }

    fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    fn read(&self, index: usize, verify: bool) -> Result<TensorData> {
        let entry = self.catalog.get(index)?;
        let m = self.members.get(index).ok_or_else(|| Error::usage(format!("entry index {index} out of range")))?;
        let e = &self.archive.entries()[m.zip];
        let name = entry.info().name();
        // The whole member (a slice of the map when stored), its CRC checked with `verify`.
        let member = self.archive.read(e, verify).map_err(|err| err.for_tensor(name))?;
        let stored = member.slice(m.data_at, entry.nbytes()).map_err(|err| err.for_tensor(name))?;
        let info = entry.info();
        let order = entry.storage().byte_order();
        let order = if info.kind() == crate::model::Kind::Blob { ByteOrder::Little } else { order };
        Ok(TensorData::dense(to_row_major_le(stored, info.dtype(), order, m.fortran_order, info.shape())))
    }

    fn verify_checksums(&self) -> (Vec<Error>, usize) {
        crate::zip::verify_records(&self.archive)
    }
}
