//! Opening a `.zt` file: footer, index, structural checks, then per-entry decoding.

use super::MAGIC;
use super::index::{self, IndexEntry};
use super::interpret::{self, BlobForm, Interpreted};
use super::sparse::{self, SparseShape};
use super::validate::{self, Placement};
use crate::error::{Error, Result, Rule};
use crate::formats::ztensor::zstd_frames;
use crate::formats::{Catalog, FileSummary, Format, FormatReader, checked_beside};
use crate::limits::MAX_ZT_INDEX;
use crate::model::{ByteOrder, Chunks, Encoding, Entry, Layout, MetaValue, TensorData, Unreadable};
use crate::source::{Bytes, SPECULATIVE_READ, Source};
use crate::swap;

/// An opened `.zt` file.
pub struct ZtReader {
    src: Source,
    index_len: u64,
    catalog: Catalog,
    /// Per entry: how its blob is laid out, and a checksum we cannot verify.
    forms: Vec<(BlobForm, Option<String>)>,
}

impl ZtReader {
    /// Open a `.zt` file. Only its footer and index are read (for a remote file: one
    /// speculative read of its end, and a second when the index is longer); tensors are read
    /// when asked for.
    pub fn open(src: impl Into<Source>) -> Result<Self> {
        let src = src.into();
        let len = src.len();
        let head = src.range(0, (MAGIC.len() as u64).min(len))?;
        if len < MAGIC.len() as u64 {
            return Err(Error::invalid(Rule::Truncated, format!("{len} bytes: too short for the magic number")));
        }
        if !head.starts_with(MAGIC) {
            return Err(Error::invalid(Rule::BadMagic, "does not start with ZTEN0001"));
        }
        if len < 16 {
            return Err(Error::invalid(Rule::Truncated, format!("{len} bytes: no room for the index and its length")));
        }
        let (_, tail) = src.tail(SPECULATIVE_READ)?;
        let index_len = crate::cursor::u64_le_at(&tail, tail.len().saturating_sub(8), "index length")?;
        let room = len - 16;
        if index_len > room || index_len > MAX_ZT_INDEX {
            return Err(Error::invalid(
                Rule::HeaderTooLarge,
                format!(
                    "index length {index_len} does not fit: {room} bytes lie between the magic and the length (limit {MAX_ZT_INDEX})"
                ),
            ));
        }
        let index_start = len - 8 - index_len;
        let index_bytes = src.range(index_start, index_len)?;
        let mut raw = index::parse(&index_bytes)?;
        let placements: Vec<Placement<'_>> =
            raw.iter().map(|e| Placement { name: &e.name, offset: e.offset, size: e.size }).collect();
        validate::check_placements(&placements, index_start)?;

        let mut entries = Vec::with_capacity(raw.len());
        let mut forms = Vec::with_capacity(raw.len());
        let mut unreadable = Vec::new();
        for e in &mut raw {
            // In bounds: checked by check_placements.
            let (offset, size) = (e.offset, e.size);
            match interpret::interpret(e, || src.range(offset, size)) {
                Ok(Interpreted { info, storage, nbytes, form, unknown_checksum }) => {
                    entries.push(Entry::checked(info, nbytes, storage));
                    forms.push((form, unknown_checksum));
                }
                Err(error) => unreadable.push(describe_unreadable(&e.plain(), error)),
            }
        }
        Ok(ZtReader { src, index_len, catalog: (entries, unreadable).into(), forms })
    }

    /// Bytes of the CBOR index.
    #[cfg(any(test, feature = "internals"))]
    pub fn index_len(&self) -> u64 {
        self.index_len
    }

    /// An entry's stored bytes (for zstd: compressed).
    fn stored(&self, entry: &Entry) -> Result<Bytes> {
        self.src.range(entry.storage().offset(), entry.storage().len())
    }

    fn decoded_blob(&self, entry: &Entry, form: BlobForm, stored: Bytes) -> Result<Bytes> {
        // zTensor blobs are raw or zstd (index.rs accepts no other encoding).
        match entry.storage().encoding() {
            Encoding::Raw | Encoding::Deflate => Ok(stored),
            Encoding::Zstd => {
                let expected = match (form, entry.info().layout()) {
                    (BlobForm::ReferenceSparse, Layout::Sparse { format, nnz }) => {
                        interpret::reference_len(*format, entry.info().dtype(), entry.info().shape(), *nnz)?
                    }
                    _ => entry.nbytes(),
                };
                Ok(Bytes::from_vec(zstd_frames::decompress(&stored, expected)?))
            }
        }
    }
}

impl ZtReader {
    /// Entry `index`, its blob's form and its stored bytes; with `verify`, those bytes
    /// checked against its checksum first.
    fn checked_entry(&self, index: usize, verify: bool) -> Result<(&Entry, BlobForm, Bytes)> {
        let (entry, (form, unknown_checksum)) = self
            .catalog
            .entries()
            .get(index)
            .zip(self.forms.get(index))
            .ok_or_else(|| Error::usage(format!("entry index {index} out of range")))?;
        let stored = self.stored(entry)?;
        if verify {
            check_sum(entry, unknown_checksum, &stored)?;
        }
        Ok((entry, *form, stored))
    }
}

/// `stored` against the entry's checksum; a checksum of an unknown algorithm cannot pass.
fn check_sum(entry: &Entry, unknown_checksum: &Option<String>, stored: &[u8]) -> Result<()> {
    if let Some(c) = &entry.storage().checksum() {
        if !c.matches(stored) {
            return Err(Error::invalid(Rule::ChecksumMismatch, format!("stored bytes do not match {c}")));
        }
    }
    if let Some(s) = unknown_checksum {
        return Err(Error::invalid(Rule::BadChecksum, format!("cannot verify checksum {s:?}: unknown algorithm")));
    }
    Ok(())
}

fn describe_unreadable(e: &IndexEntry, error: Error) -> Unreadable {
    let field = |k: &str| e.fields.iter().find(|(key, _)| key == k).map(|(_, v)| v);
    let dtype = match field("dtype") {
        Some(MetaValue::Text(s)) => s.clone(),
        Some(other) => other.to_json().to_string(),
        None => String::new(),
    };
    let shape = match field("shape") {
        Some(MetaValue::Array(d)) => {
            d.iter().filter_map(|v| if let MetaValue::Int(i) = v { u64::try_from(*i).ok() } else { None }).collect()
        }
        _ => Vec::new(),
    };
    Unreadable::new(e.name.clone(), dtype, shape, error)
}

impl FormatReader for ZtReader {
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    fn format(&self) -> Format {
        Format::Zt
    }

    fn summary(&self) -> FileSummary {
        FileSummary {
            version: "0.1".into(),
            metadata: Vec::new(),
            structure: None,
            details: vec![("index_bytes".into(), MetaValue::Int(i128::from(self.index_len)))],
        }
    }

    fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    fn read(&self, index: usize, verify: bool) -> Result<TensorData> {
        let (entry, form, stored) = self.checked_entry(index, verify)?;
        let blob = self.decoded_blob(entry, form, stored)?;
        let order = entry.storage().byte_order();
        match entry.info().layout() {
            Layout::Sparse { format, nnz } => {
                let shape = SparseShape {
                    format: *format,
                    dtype: entry.info().dtype(),
                    shape: entry.info().shape(),
                    nnz: *nnz,
                };
                Ok(TensorData::sparse(sparse::decode(&blob, form, order, &shape)?))
            }
            _ => {
                let unit = entry.info().dtype().swap_unit();
                if order == ByteOrder::Big && unit > 1 {
                    Ok(TensorData::dense(Bytes::from_vec(swap::swapped(&blob, unit))))
                } else {
                    Ok(TensorData::dense(blob))
                }
            }
        }
    }

    /// Every entry's checksum, over its stored (for zstd: compressed) bytes.
    fn verify_checksums(&self) -> (Vec<Error>, usize) {
        let mut problems = Vec::new();
        let mut checked = 0;
        for (entry, (_, unknown_checksum)) in self.catalog.entries().iter().zip(&self.forms) {
            if entry.storage().checksum().is_none() && unknown_checksum.is_none() {
                continue;
            }
            match self.stored(entry).and_then(|stored| check_sum(entry, unknown_checksum, &stored)) {
                Ok(()) => checked += 1,
                Err(e) => problems.push(e.for_tensor(entry.info().name())),
            }
        }
        (problems, checked)
    }

    /// Compressed tensors are decoded a piece at a time and big-endian ones swapped a piece
    /// at a time; raw little-endian ones come whole from the map.
    fn read_chunks(&self, index: usize, verify: bool) -> Result<Chunks<'_>> {
        let (entry, _, stored) = self.checked_entry(index, false)?;
        let unknown_checksum = &self.forms[index].1;
        let unit = entry.info().dtype().swap_unit();
        let zstd = entry.storage().encoding() == Encoding::Zstd;
        let swap = entry.storage().byte_order() == ByteOrder::Big && unit > 1;
        let sparse = entry.info().layout().is_sparse();
        // Stored bytes handed over as they are get their checksum checked beside the copy
        // (below); any other tensor is checked first.
        if verify && (zstd || swap || sparse) {
            check_sum(entry, unknown_checksum, &stored)?;
        }
        if sparse {
            return Err(Error::unsupported("a sparse tensor read as dense pieces"));
        }
        if zstd {
            return zstd_frames::decompress_pieces(stored, entry.nbytes());
        }
        if swap {
            let pieces = (0..stored.len()).step_by(zstd_frames::CHUNK).map(move |start| {
                let end = stored.len().min(start + zstd_frames::CHUNK);
                Ok(Bytes::from_vec(swap::swapped(&stored[start..end], unit)))
            });
            return Ok(Box::new(pieces));
        }
        if verify {
            let (entry, unknown) = (entry.clone(), unknown_checksum.clone());
            return checked_beside(stored, move |b| check_sum(&entry, &unknown, b));
        }
        Ok(Box::new(std::iter::once(Ok(stored))))
    }
}
